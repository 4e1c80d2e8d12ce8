#include "agent/runtime/policy.h"

#include <cmath>
#include <optional>
#include <string_view>
#include <vector>

#include "common/ids.h"
#include "common/image_ref.h"

namespace gpunex::agent {
namespace {

constexpr int64_t kMiB = 1024 * 1024;
constexpr char kNvidiaVisibleDevices[] = "NVIDIA_VISIBLE_DEVICES";

using protocol::IsEnvName;
using protocol::IsGpuUuid;
using protocol::IsReservedEnvName;
using protocol::IsWorkloadId;

std::string Join(const std::vector<std::string>& v, char sep) {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) out += sep;
    out += v[i];
  }
  return out;
}

std::vector<std::string> Split(std::string_view s, char sep) {
  std::vector<std::string> out;
  if (s.empty()) return out;
  size_t start = 0;
  while (true) {
    size_t next = s.find(sep, start);
    out.emplace_back(s.substr(start, next == std::string_view::npos ? next : next - start));
    if (next == std::string_view::npos) break;
    start = next + 1;
  }
  return out;
}

}  // namespace

std::string PortsLabel(const std::vector<protocol::WorkloadPort>& ports) {
  std::vector<std::string> parts;
  for (const auto& p : ports) {
    parts.push_back(std::to_string(p.port) + "/" +
                    std::string(protocol::kPortProtocolNames.Name(p.protocol)));
  }
  return Join(parts, ',');
}

std::optional<std::vector<protocol::WorkloadPort>> ParsePortsLabel(std::string_view label) {
  std::vector<protocol::WorkloadPort> out;
  for (const std::string& part : Split(label, ',')) {
    const size_t slash = part.find('/');
    if (slash == std::string::npos || slash == 0 || slash > 5) return std::nullopt;
    int port = 0;
    for (char ch : part.substr(0, slash)) {
      if (ch < '0' || ch > '9') return std::nullopt;
      port = port * 10 + (ch - '0');
    }
    auto protocol = protocol::kPortProtocolNames.Parse(part.substr(slash + 1));
    if (port < 1 || port > 65535 || !protocol) return std::nullopt;
    for (const auto& seen : out) {
      if (seen.port == port) return std::nullopt;
    }
    out.push_back({static_cast<uint16_t>(port), *protocol, false});
  }
  if (out.empty() || out.size() > protocol::kMaxPorts) return std::nullopt;
  return out;
}

std::string WorkloadContainerName(const std::string& workload_id) {
  return "gpunex-wl-" + workload_id;
}
std::string WorkloadNetworkName(const std::string& workload_id) {
  return "gpunex-wl-" + workload_id;
}
std::string ScratchVolumeName(const std::string& workload_id) {
  return "gpunex-scratch-" + workload_id;
}

std::string WorkloadBridgeName(const std::string& network_name) {
  return kWorkloadBridgePrefix + Sha256Hex(network_name).substr(0, 10);
}

std::map<std::string, std::string> WorkloadNetworkOptions(const std::string& network_name) {
  return {{"com.docker.network.bridge.name", WorkloadBridgeName(network_name)}};
}

json::object BuildContainerConfig(const WorkloadSpec& spec, const ContainerPolicyOptions& opts) {
  const bool attach_gpus = !opts.emulated_gpus && !spec.gpu_uuids.empty();

  json::array cmd;
  for (const auto& a : spec.command) cmd.emplace_back(a);
  json::array env;
  for (const auto& [k, v] : spec.env) env.emplace_back(k + "=" + v);
  env.emplace_back(std::string(kNvidiaVisibleDevices) + "=" +
                   (attach_gpus ? Join(spec.gpu_uuids, ',') : std::string("void")));

  json::object labels{{kLabelManaged, "true"},
                      {kLabelWorkload, spec.workload_id},
                      {kLabelGpus, Join(spec.gpu_uuids, ',')},
                      {kLabelGpuMode, opts.emulated_gpus ? "emulated" : "nvidia"}};
  if (!spec.ports.empty()) labels[kLabelPorts] = PortsLabel(spec.ports);
  if (!opts.owner.empty()) labels[kLabelAgent] = opts.owner;

  json::object host;
  if (attach_gpus) {
    json::array ids;
    for (const auto& u : spec.gpu_uuids) ids.emplace_back(u);
    // [["gpu"]], built by hand: clang list-initialises json::array{json::array{"gpu"}} as a
    // copy of the inner array (CWG 2137), which would be ["gpu"].
    json::array caps;
    caps.emplace_back(json::array{"gpu"});
    host["DeviceRequests"] = json::array{json::object{
        {"Driver", "nvidia"},
        {"DeviceIDs", std::move(ids)},
        {"Capabilities", std::move(caps)},
    }};
  }
  host["Binds"] = json::array{};
  host["Mounts"] = json::array{json::object{
      {"Type", "volume"},
      {"Source", ScratchVolumeName(spec.workload_id)},
      {"Target", kScratchPath},
      {"ReadOnly", false},
      {"VolumeOptions", json::object{{"NoCopy", true}}},
  }};
  int64_t tmp_mb = std::max<int64_t>(1, std::min(opts.tmp_mb, spec.memory_mb));
  host["Tmpfs"] = json::object{{kTmpPath, "rw,nosuid,nodev,size=" + std::to_string(tmp_mb) + "m"}};
  host["Privileged"] = false;
  host["CapDrop"] = json::array{"ALL"};
  host["SecurityOpt"] = json::array{"no-new-privileges"};
  host["ReadonlyRootfs"] = true;
  host["PidsLimit"] = spec.pids_limit;
  host["Memory"] = spec.memory_mb * kMiB;
  host["MemorySwap"] = spec.memory_mb * kMiB;  // equal to Memory: no swap
  host["NanoCpus"] = static_cast<int64_t>(std::llround(spec.cpus * 1e9));
  host["NetworkMode"] = opts.network_none ? "none" : WorkloadNetworkName(spec.workload_id);
  host["PublishAllPorts"] = false;
  host["IpcMode"] = "private";
  host["Init"] = true;
  host["RestartPolicy"] = json::object{{"Name", "no"}, {"MaximumRetryCount", 0}};
  host["LogConfig"] =
      json::object{{"Type", "json-file"},
                   {"Config", json::object{{"max-size", opts.log_max_size},
                                           {"max-file", std::to_string(opts.log_max_files)}}}};

  json::object config;
  config["Image"] = spec.image;
  if (!cmd.empty()) config["Cmd"] = std::move(cmd);
  config["Env"] = std::move(env);
  config["Labels"] = std::move(labels);
  config["Tty"] = false;  // the log stream must stay multiplexed
  config["HostConfig"] = std::move(host);
  return config;
}

namespace {

// Collects violations under their paths.
class Checker {
 public:
  void Fail(const std::string& path, std::string message) {
    errors_.emplace(path, std::move(message));
  }
  const FieldErrors& errors() const { return errors_; }

  // Every member of `o` is in `allowed`.
  void OnlyKeys(const json::object& o, const std::string& prefix,
                std::initializer_list<std::string_view> allowed) {
    for (const auto& kv : o) {
      bool ok = false;
      for (auto k : allowed) ok = ok || kv.key() == k;
      if (!ok) Fail(prefix + std::string(kv.key()), "is not allowed by the container policy");
    }
  }

  const json::value* Get(const json::object& o, std::string_view key) {
    auto it = o.find(key);
    return it == o.end() ? nullptr : &it->value();
  }

  void RequireBool(const json::object& o, const std::string& prefix, std::string_view key,
                   bool want) {
    const json::value* v = Get(o, key);
    if (!v || !v->is_bool() || v->get_bool() != want) {
      Fail(prefix + std::string(key), want ? "must be true" : "must be false");
    }
  }

  void RequireString(const json::object& o, const std::string& prefix, std::string_view key,
                     std::string_view want) {
    const json::value* v = Get(o, key);
    if (!v || !v->is_string() || v->get_string() != want) {
      Fail(prefix + std::string(key), "must be \"" + std::string(want) + "\"");
    }
  }

  // An integer in [min, max]; nullopt (and a violation) otherwise.
  std::optional<int64_t> RequireInt(const json::object& o, const std::string& prefix,
                                    std::string_view key, int64_t min, int64_t max) {
    const json::value* v = Get(o, key);
    if (!v || !v->is_int64() || v->get_int64() < min || v->get_int64() > max) {
      Fail(prefix + std::string(key),
           "must be an integer in [" + std::to_string(min) + ", " + std::to_string(max) + "]");
      return std::nullopt;
    }
    return v->get_int64();
  }

  // An array of exactly the strings `want`.
  void RequireStrings(const json::object& o, const std::string& prefix, std::string_view key,
                      const std::vector<std::string>& want) {
    const json::value* v = Get(o, key);
    bool ok = v && v->is_array() && v->get_array().size() == want.size();
    for (size_t i = 0; ok && i < want.size(); ++i) {
      const json::value& e = v->get_array()[i];
      ok = e.is_string() && e.get_string() == want[i];
    }
    if (!ok) Fail(prefix + std::string(key), "must be [\"" + Join(want, ',') + "\"]");
  }

  // Absent, null or an empty array.
  void RequireEmpty(const json::object& o, const std::string& prefix, std::string_view key) {
    const json::value* v = Get(o, key);
    if (v && !v->is_null() && !(v->is_array() && v->get_array().empty())) {
      Fail(prefix + std::string(key), "must be empty");
    }
  }

 private:
  FieldErrors errors_;
};

void CheckMounts(Checker& c, const json::object& host, const std::string& workload) {
  const json::value* mounts = c.Get(host, "Mounts");
  if (!mounts || !mounts->is_array() || mounts->get_array().size() != 1 ||
      !mounts->get_array()[0].is_object()) {
    c.Fail("HostConfig.Mounts", "must be exactly the workload's scratch volume");
    return;
  }
  const json::object& m = mounts->get_array()[0].get_object();
  const std::string p = "HostConfig.Mounts[0].";
  c.OnlyKeys(m, p, {"Type", "Source", "Target", "ReadOnly", "VolumeOptions"});
  c.RequireString(m, p, "Type", "volume");
  c.RequireString(m, p, "Source", ScratchVolumeName(workload));
  c.RequireString(m, p, "Target", kScratchPath);
  if (const json::value* ro = c.Get(m, "ReadOnly"); ro && !ro->is_bool()) {
    c.Fail(p + "ReadOnly", "must be true or false");
  }
  // DriverConfig could make the volume a bind mount of any host path (local driver,
  // o=bind): only NoCopy is allowed.
  if (const json::value* vo = c.Get(m, "VolumeOptions")) {
    if (!vo->is_object()) {
      c.Fail(p + "VolumeOptions", "must be an object");
    } else {
      c.OnlyKeys(vo->get_object(), p + "VolumeOptions.", {"NoCopy"});
    }
  }
}

void CheckTmpfs(Checker& c, const json::object& host) {
  const json::value* t = c.Get(host, "Tmpfs");
  if (!t || !t->is_object() || t->get_object().size() != 1 || !t->get_object().contains(kTmpPath) ||
      !t->get_object().at(kTmpPath).is_string()) {
    c.Fail("HostConfig.Tmpfs", "must be exactly a size-limited tmpfs at /tmp");
    return;
  }
  bool sized = false;
  for (const auto& opt : Split(t->get_object().at(kTmpPath).get_string(), ',')) {
    if (opt.starts_with("size=") && opt.size() > 5) {
      sized = true;
    } else if (opt != "rw" && opt != "nosuid" && opt != "nodev" && opt != "noexec" &&
               !opt.starts_with("mode=")) {
      c.Fail("HostConfig.Tmpfs./tmp", "option \"" + opt + "\" is not allowed");
    }
  }
  if (!sized) c.Fail("HostConfig.Tmpfs./tmp", "must have a size= limit");
}

void CheckGpus(Checker& c, const json::object& host, const std::vector<std::string>& gpus,
               bool emulated) {
  const json::value* dr = c.Get(host, "DeviceRequests");
  if (emulated || gpus.empty()) {
    c.RequireEmpty(host, "HostConfig.", "DeviceRequests");
    return;
  }
  if (!dr || !dr->is_array() || dr->get_array().size() != 1 || !dr->get_array()[0].is_object()) {
    c.Fail("HostConfig.DeviceRequests", "must be one nvidia request for the allocated GPUs");
    return;
  }
  const json::object& r = dr->get_array()[0].get_object();
  const std::string p = "HostConfig.DeviceRequests[0].";
  // Count would ask for "any N GPUs" (-1: all of them); Options could change the driver's
  // selection: only explicit DeviceIDs are allowed.
  c.OnlyKeys(r, p, {"Driver", "DeviceIDs", "Capabilities"});
  c.RequireString(r, p, "Driver", "nvidia");
  c.RequireStrings(r, p, "DeviceIDs", gpus);
  const json::value* caps = c.Get(r, "Capabilities");
  bool caps_ok = caps && caps->is_array() && caps->get_array().size() == 1 &&
                 caps->get_array()[0].is_array() && caps->get_array()[0].get_array().size() == 1 &&
                 caps->get_array()[0].get_array()[0].is_string() &&
                 caps->get_array()[0].get_array()[0].get_string() == "gpu";
  if (!caps_ok) c.Fail(p + "Capabilities", "must be [[\"gpu\"]]");
}

}  // namespace

Status CheckContainerConfig(const json::object& config) {
  Checker c;
  c.OnlyKeys(config, "", {"Image", "Cmd", "Env", "Labels", "Tty", "HostConfig"});

  const json::value* image = c.Get(config, "Image");
  if (!image || !image->is_string() || !ParseImageRef(image->get_string())) {
    c.Fail("Image", "must be an image reference");
  }
  if (const json::value* cmd = c.Get(config, "Cmd")) {
    bool ok = cmd->is_array();
    for (size_t i = 0; ok && i < cmd->get_array().size(); ++i) {
      ok = cmd->get_array()[i].is_string();
    }
    if (!ok) c.Fail("Cmd", "must be an array of strings");
  }
  if (const json::value* tty = c.Get(config, "Tty"); tty && !(tty->is_bool() && !tty->get_bool())) {
    c.Fail("Tty", "must be false");
  }

  // Labels: the workload they name, and the GPUs allocated to it.
  std::string workload;
  std::vector<std::string> gpus;
  bool emulated = false;
  const json::value* labels = c.Get(config, "Labels");
  if (!labels || !labels->is_object()) {
    c.Fail("Labels", "must carry the gpunex labels");
  } else {
    const json::object& l = labels->get_object();
    const std::string p = "Labels.";
    c.OnlyKeys(
        l, p, {kLabelManaged, kLabelWorkload, kLabelGpus, kLabelGpuMode, kLabelPorts, kLabelAgent});
    if (const json::value* ports = l.if_contains(kLabelPorts);
        ports && (!ports->is_string() || !ParsePortsLabel(ports->get_string()))) {
      c.Fail(p + kLabelPorts, "must list ports as \"8080/http,22/tcp\"");
    }
    c.RequireString(l, p, kLabelManaged, "true");
    const json::value* w = c.Get(l, kLabelWorkload);
    if (!w || !w->is_string() || !IsWorkloadId(w->get_string())) {
      c.Fail(p + kLabelWorkload, "must be a workload id");
    } else {
      workload = std::string(w->get_string());
    }
    const json::value* g = c.Get(l, kLabelGpus);
    if (!g || !g->is_string()) {
      c.Fail(p + kLabelGpus, "must list the allocated GPUs");
    } else {
      gpus = Split(g->get_string(), ',');
      for (const auto& u : gpus) {
        if (!IsGpuUuid(u)) c.Fail(p + kLabelGpus, "\"" + u + "\" is not a GPU UUID");
      }
    }
    const json::value* mode = c.Get(l, kLabelGpuMode);
    if (!mode || !mode->is_string() ||
        (mode->get_string() != "nvidia" && mode->get_string() != "emulated")) {
      c.Fail(p + kLabelGpuMode, "must be \"nvidia\" or \"emulated\"");
    } else {
      emulated = mode->get_string() == "emulated";
    }
  }
  const bool attach_gpus = !emulated && !gpus.empty();

  // Env: well-formed, and the GPU selection pinned to the allocation.
  const json::value* env = c.Get(config, "Env");
  if (!env || !env->is_array()) {
    c.Fail("Env", "must pin NVIDIA_VISIBLE_DEVICES");
  } else {
    int pinned = 0;
    const std::string want = attach_gpus ? Join(gpus, ',') : "void";
    for (size_t i = 0; i < env->get_array().size(); ++i) {
      const json::value& e = env->get_array()[i];
      std::string path = "Env[" + std::to_string(i) + "]";
      size_t eq = e.is_string() ? e.get_string().find('=') : std::string::npos;
      if (eq == std::string::npos || !IsEnvName(std::string_view(e.get_string()).substr(0, eq))) {
        c.Fail(path, "must be NAME=value");
        continue;
      }
      std::string_view name = std::string_view(e.get_string()).substr(0, eq);
      std::string_view value = std::string_view(e.get_string()).substr(eq + 1);
      if (name == kNvidiaVisibleDevices) {
        ++pinned;
        if (value != want) c.Fail(path, "must be NVIDIA_VISIBLE_DEVICES=" + want);
      } else if (IsReservedEnvName(name)) {
        c.Fail(path, "sets a reserved NVIDIA_* variable");
      }
    }
    if (pinned != 1) c.Fail("Env", "must set NVIDIA_VISIBLE_DEVICES exactly once");
  }

  const json::value* hv = c.Get(config, "HostConfig");
  if (!hv || !hv->is_object()) {
    c.Fail("HostConfig", "is required");
  } else {
    const json::object& h = hv->get_object();
    const std::string p = "HostConfig.";
    c.OnlyKeys(h, p,
               {"DeviceRequests", "Binds", "Mounts", "Tmpfs", "Privileged", "CapDrop",
                "SecurityOpt", "ReadonlyRootfs", "PidsLimit", "Memory", "MemorySwap", "NanoCpus",
                "NetworkMode", "PublishAllPorts", "IpcMode", "Init", "RestartPolicy", "LogConfig"});
    CheckGpus(c, h, gpus, emulated);
    c.RequireEmpty(h, p, "Binds");
    CheckMounts(c, h, workload);
    CheckTmpfs(c, h);
    c.RequireBool(h, p, "Privileged", false);
    c.RequireStrings(h, p, "CapDrop", {"ALL"});
    c.RequireStrings(h, p, "SecurityOpt", {"no-new-privileges"});
    c.RequireBool(h, p, "ReadonlyRootfs", true);
    c.RequireInt(h, p, "PidsLimit", protocol::kMinPids, protocol::kMaxPids);
    auto mem =
        c.RequireInt(h, p, "Memory", protocol::kMinMemoryMb * kMiB, protocol::kMaxMemoryMb * kMiB);
    const json::value* swap = c.Get(h, "MemorySwap");
    if (mem && (!swap || !swap->is_int64() || swap->get_int64() != *mem)) {
      c.Fail(p + "MemorySwap", "must equal Memory (no swap)");
    }
    c.RequireInt(h, p, "NanoCpus", static_cast<int64_t>(protocol::kMinCpus * 1e9),
                 static_cast<int64_t>(protocol::kMaxCpus * 1e9));
    const json::value* net = c.Get(h, "NetworkMode");
    if (!net || !net->is_string() ||
        (net->get_string() != "none" &&
         (workload.empty() || net->get_string() != WorkloadNetworkName(workload)))) {
      c.Fail(p + "NetworkMode", "must be \"none\" or the workload's own network");
    }
    if (const json::value* pub = c.Get(h, "PublishAllPorts");
        pub && !(pub->is_bool() && !pub->get_bool())) {
      c.Fail(p + "PublishAllPorts", "must be false");
    }
    c.RequireString(h, p, "IpcMode", "private");
    c.RequireBool(h, p, "Init", true);
    const json::value* rp = c.Get(h, "RestartPolicy");
    if (!rp || !rp->is_object()) {
      c.Fail(p + "RestartPolicy", "must be {\"Name\": \"no\"}");
    } else {
      c.OnlyKeys(rp->get_object(), p + "RestartPolicy.", {"Name", "MaximumRetryCount"});
      c.RequireString(rp->get_object(), p + "RestartPolicy.", "Name", "no");
    }
    const json::value* lc = c.Get(h, "LogConfig");
    if (!lc || !lc->is_object()) {
      c.Fail(p + "LogConfig", "must be json-file with a max-size");
    } else {
      c.OnlyKeys(lc->get_object(), p + "LogConfig.", {"Type", "Config"});
      c.RequireString(lc->get_object(), p + "LogConfig.", "Type", "json-file");
      const json::value* cfg = c.Get(lc->get_object(), "Config");
      if (!cfg || !cfg->is_object() || !cfg->get_object().contains("max-size")) {
        c.Fail(p + "LogConfig.Config", "must have a max-size");
      }
    }
  }

  if (c.errors().empty()) return Status::Ok();
  return Status(StatusCode::kPermissionDenied, "the container config violates the isolation policy",
                c.errors());
}

}  // namespace gpunex::agent
