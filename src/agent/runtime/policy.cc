#include "agent/runtime/policy.h"

#include <cmath>
#include <set>
#include <string_view>

#include "agent/runtime/image_ref.h"

namespace gpunex::agent {
namespace {

constexpr int64_t kMiB = 1024 * 1024;
constexpr char kNvidiaVisibleDevices[] = "NVIDIA_VISIBLE_DEVICES";

// Request fields that would widen the policy, refused with a message saying so (any other
// unknown field is refused too, as unknown).
// clang-format off
constexpr std::string_view kForbiddenFields[] = {
    "binds", "mounts", "volumes", "volumes_from", "tmpfs", "read_only", "readonly_rootfs",
    "privileged", "cap_add", "cap_drop", "capabilities", "security_opt", "user", "group_add",
    "devices", "device_requests", "runtime", "network", "network_mode", "networks", "ports",
    "port_bindings", "publish_all_ports", "extra_hosts", "dns", "hostname", "ipc_mode",
    "pid_mode", "uts_mode", "userns_mode", "cgroup_parent", "cgroupns_mode", "sysctls",
    "ulimits", "shm_size", "oom_kill_disable", "memory_swap", "init", "restart_policy",
    "log_config", "labels", "entrypoint", "working_dir", "tty", "host_config"};
// clang-format on

bool IsWorkloadId(std::string_view s) {
  if (s.empty() || s.size() > kMaxWorkloadIdLength) return false;
  auto alnum = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
  };
  if (!alnum(s[0])) return false;
  for (char c : s) {
    if (!alnum(c) && c != '_' && c != '.' && c != '-') return false;
  }
  return true;
}

bool IsEnvName(std::string_view s) {
  if (s.empty() || s.size() > kMaxEnvNameLength) return false;
  auto head = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; };
  if (!head(s[0])) return false;
  for (char c : s) {
    if (!head(c) && !(c >= '0' && c <= '9')) return false;
  }
  return true;
}

// Names the agent sets itself: GPU selection belongs to the policy.
bool IsReservedEnvName(std::string_view s) { return s.starts_with("NVIDIA_"); }

// "GPU-" and a UUID: 8-4-4-4-12 hex digits. Emulated GPUs (labelled so everywhere) use
// "GPU-emu-" and a UUID.
bool IsGpuUuid(std::string_view s) {
  std::string plain;
  if (s.starts_with("GPU-emu-")) {
    plain = "GPU-" + std::string(s.substr(8));
    s = plain;
  }
  if (s.size() != 40 || !s.starts_with("GPU-")) return false;
  for (size_t i = 4; i < s.size(); ++i) {
    char c = s[i];
    size_t k = i - 4;
    if (k == 8 || k == 13 || k == 18 || k == 23) {
      if (c != '-') return false;
    } else if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'))) {
      return false;
    }
  }
  return true;
}

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

std::string WorkloadContainerName(const std::string& workload_id) {
  return "gpunex-wl-" + workload_id;
}
std::string WorkloadNetworkName(const std::string& workload_id) {
  return "gpunex-wl-" + workload_id;
}
std::string ScratchVolumeName(const std::string& workload_id) {
  return "gpunex-scratch-" + workload_id;
}

StatusOr<WorkloadSpec> ParseWorkloadSpec(const json::value& v) {
  if (!v.is_object()) {
    return Status(StatusCode::kInvalidArgument, "a workload spec must be a JSON object",
                  FieldErrors{{"body", "must be an object"}});
  }
  const json::object& obj = v.get_object();
  FieldErrors errors;
  JsonReader r(obj, "", &errors);
  static constexpr std::string_view kKnown[] = {"workload_id", "image",     "command", "env",
                                                "gpu_uuids",   "memory_mb", "cpus",    "pids_limit",
                                                "scratch_mb",  "timeout_s"};
  for (const auto& kv : obj) {
    std::string_view key = kv.key();
    bool known = false;
    for (auto k : kKnown) known = known || key == k;
    if (known) continue;
    bool forbidden = false;
    for (auto k : kForbiddenFields) forbidden = forbidden || key == k;
    r.Fail(key, forbidden ? "is not allowed: the agent's isolation policy is fixed"
                          : "is not a known field");
  }

  WorkloadSpec spec;
  if (auto id = r.String("workload_id", true, kMaxWorkloadIdLength)) {
    if (IsWorkloadId(*id)) {
      spec.workload_id = *id;
    } else {
      r.Fail("workload_id", "must match [A-Za-z0-9][A-Za-z0-9_.-]*");
    }
  }
  if (auto image = r.String("image", true, kMaxImageRefLength)) {
    std::string error;
    if (ParseImageRef(*image, &error)) {
      spec.image = *image;
    } else {
      r.Fail("image", "is not an image reference: " + error);
    }
  }
  if (const json::array* cmd = r.Array("command", false, 0, kMaxCommandArgs)) {
    for (size_t i = 0; i < cmd->size(); ++i) {
      std::string path = "command[" + std::to_string(i) + "]";
      const json::value& a = (*cmd)[i];
      if (!a.is_string()) {
        r.Fail(path, "must be a string");
      } else if (a.get_string().size() > kMaxCommandArgLength) {
        r.Fail(path, "must be at most " + std::to_string(kMaxCommandArgLength) + " characters");
      } else if (!IsCleanText(a.get_string(), true)) {
        r.Fail(path, "must be text without control characters");
      } else {
        spec.command.emplace_back(a.get_string());
      }
    }
  }
  if (const json::object* env = r.Object("env", false)) {
    if (env->size() > kMaxEnvEntries) {
      r.Fail("env", "must have at most " + std::to_string(kMaxEnvEntries) + " entries");
    } else {
      JsonReader er(*env, r.PathOf("env"), &errors);
      for (const auto& kv : *env) {
        std::string name(kv.key());
        if (!IsEnvName(name)) {
          er.Fail(name, "is not a valid name ([A-Za-z_][A-Za-z0-9_]*, at most " +
                            std::to_string(kMaxEnvNameLength) + " characters)");
        } else if (IsReservedEnvName(name)) {
          er.Fail(name, "is reserved: the agent sets NVIDIA_* itself");
        } else if (!kv.value().is_string()) {
          er.Fail(name, "must be a string");
        } else if (auto value = er.String(name, false, kMaxEnvValueLength, true)) {
          spec.env.emplace_back(name, *value);
        }
      }
    }
  }
  if (const json::array* gpus = r.Array("gpu_uuids", false, 0, kMaxGpus)) {
    std::set<std::string> seen;
    for (size_t i = 0; i < gpus->size(); ++i) {
      std::string path = "gpu_uuids[" + std::to_string(i) + "]";
      const json::value& g = (*gpus)[i];
      if (!g.is_string() || !IsGpuUuid(g.get_string())) {
        r.Fail(path, "must be a GPU UUID (GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx)");
      } else if (!seen.insert(std::string(g.get_string())).second) {
        r.Fail(path, "is listed twice");
      } else {
        spec.gpu_uuids.emplace_back(g.get_string());
      }
    }
  }
  if (auto m = r.Int("memory_mb", true, kMinMemoryMb, kMaxMemoryMb)) spec.memory_mb = *m;
  if (auto c = r.Number("cpus", true, 0, kMaxCpus)) {
    if (*c < kMinCpus) {
      r.Fail("cpus", "must be at least 0.1");
    } else {
      spec.cpus = *c;
    }
  }
  if (auto p = r.Int("pids_limit", true, kMinPids, kMaxPids)) spec.pids_limit = *p;
  if (auto s = r.Int("scratch_mb", true, kMinScratchMb, kMaxScratchMb)) spec.scratch_mb = *s;
  if (auto t = r.Int("timeout_s", false, 0, kMaxTimeoutS)) spec.timeout_s = *t;

  if (!errors.empty()) return ValidationFailed(std::move(errors));
  return spec;
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

  json::object host;
  if (attach_gpus) {
    json::array ids;
    for (const auto& u : spec.gpu_uuids) ids.emplace_back(u);
    host["DeviceRequests"] = json::array{json::object{
        {"Driver", "nvidia"},
        {"DeviceIDs", std::move(ids)},
        {"Capabilities", json::array{json::array{"gpu"}}},
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
    c.OnlyKeys(l, p, {kLabelManaged, kLabelWorkload, kLabelGpus, kLabelGpuMode});
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
    c.RequireInt(h, p, "PidsLimit", kMinPids, kMaxPids);
    auto mem = c.RequireInt(h, p, "Memory", kMinMemoryMb * kMiB, kMaxMemoryMb * kMiB);
    const json::value* swap = c.Get(h, "MemorySwap");
    if (mem && (!swap || !swap->is_int64() || swap->get_int64() != *mem)) {
      c.Fail(p + "MemorySwap", "must equal Memory (no swap)");
    }
    c.RequireInt(h, p, "NanoCpus", static_cast<int64_t>(kMinCpus * 1e9),
                 static_cast<int64_t>(kMaxCpus * 1e9));
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
