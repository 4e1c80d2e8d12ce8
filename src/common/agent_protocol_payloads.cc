// The agent protocol's command payloads and benchmark results (agent_protocol.h).
#include <string.h>  // explicit_bzero

#include <algorithm>
#include <iterator>
#include <set>

#include "common/agent_protocol.h"
#include "common/image_ref.h"
#include "common/internal/protocol_json.h"

namespace gpunex::protocol {

using internal::List;
using internal::Str;

// ---------------------------------------------------------------------------------------
// Command payloads.

bool IsCommandKind(std::string_view kind) {
  return kind == kStartWorkload || kind == kStopWorkload || kind == kRunBenchmark;
}

namespace {

bool IsAsciiAlnum(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

bool IsHexDigit(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

// start_workload fields that would widen the isolation policy: refused with a message
// saying so (any other unknown field is refused too, as unknown).
// clang-format off
constexpr std::string_view kForbiddenWorkloadFields[] = {
    "binds", "mounts", "volumes", "volumes_from", "tmpfs", "read_only", "readonly_rootfs",
    "privileged", "cap_add", "cap_drop", "capabilities", "security_opt", "user", "group_add",
    "devices", "device_requests", "runtime", "network", "network_mode", "networks",
    "exposed_ports", "port_bindings", "publish_all_ports", "extra_hosts", "dns", "hostname",
    "ipc_mode", "pid_mode", "uts_mode", "userns_mode", "cgroup_parent", "cgroupns_mode", "sysctls",
    "ulimits", "shm_size", "oom_kill_disable", "memory_swap", "init", "restart_policy",
    "log_config", "labels", "entrypoint", "working_dir", "tty", "host_config"};
// clang-format on

constexpr std::string_view kStartWorkloadFields[] = {
    "workload_id", "image",      "command",    "env",       "gpu_uuids", "memory_mb",
    "cpus",        "pids_limit", "scratch_mb", "timeout_s", "ports",     "registry_auth"};

bool Contains(const auto& list, std::string_view key) {
  return std::find(std::begin(list), std::end(list), key) != std::end(list);
}

std::string IndexPath(std::string_view key, size_t i) {
  return std::string(key) + "[" + std::to_string(i) + "]";
}

// A workload id at `key`, or "" (and an error) when it is missing or malformed.
std::string WorkloadId(const JsonReader& r, std::string_view key) {
  auto id = r.String(key, true, kMaxWorkloadIdLength);
  if (!id) return "";
  if (!IsWorkloadId(*id)) {
    r.Fail(key, "must match [A-Za-z0-9][A-Za-z0-9_.-]*");
    return "";
  }
  return *id;
}

Status PayloadStatus(FieldErrors& errors) {
  if (errors.empty()) return Status::Ok();
  return ValidationFailed(std::move(errors));
}

}  // namespace

bool IsWorkloadId(std::string_view s) {
  if (s.empty() || s.size() > kMaxWorkloadIdLength || !IsAsciiAlnum(s[0])) return false;
  for (char c : s) {
    if (!IsAsciiAlnum(c) && c != '_' && c != '.' && c != '-') return false;
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

bool IsReservedEnvName(std::string_view s) { return s.starts_with("NVIDIA_"); }

bool IsGpuUuid(std::string_view s) {
  std::string plain;
  if (s.starts_with("GPU-emu-")) {
    plain = "GPU-" + std::string(s.substr(8));
    s = plain;
  }
  if (s.size() != 40 || !s.starts_with("GPU-")) return false;
  for (size_t i = 4; i < s.size(); ++i) {
    const size_t k = i - 4;
    const bool dash = k == 8 || k == 13 || k == 18 || k == 23;
    if (dash ? s[i] != '-' : !IsHexDigit(s[i])) return false;
  }
  return true;
}

StatusOr<StartWorkload> ParseStartWorkload(const json::object& payload) {
  FieldErrors errors;
  JsonReader r(payload, "", &errors);
  for (const auto& kv : payload) {
    std::string_view key = kv.key();
    if (Contains(kStartWorkloadFields, key)) continue;
    r.Fail(key, Contains(kForbiddenWorkloadFields, key)
                    ? "is not allowed: the agent's isolation policy is fixed"
                    : "is not a known field");
  }

  StartWorkload s;
  s.workload_id = WorkloadId(r, "workload_id");
  if (auto image = r.String("image", true, kMaxImageRefLength)) {
    std::string error;
    if (ParseImageRef(*image, &error)) {
      s.image = *image;
    } else {
      r.Fail("image", "is not an image reference: " + error);
    }
  }
  if (const json::array* cmd = r.Array("command", false, 0, kMaxCommandArgs)) {
    for (size_t i = 0; i < cmd->size(); ++i) {
      const std::string path = IndexPath("command", i);
      const json::value& a = (*cmd)[i];
      if (!a.is_string()) {
        r.Fail(path, "must be a string");
      } else if (a.get_string().size() > kMaxCommandArgLength) {
        r.Fail(path, "must be at most " + std::to_string(kMaxCommandArgLength) + " characters");
      } else if (!IsCleanText(a.get_string(), true)) {
        r.Fail(path, "must be text without control characters");
      } else {
        s.command.emplace_back(a.get_string());
      }
    }
  }
  if (const json::object* env = r.Object("env", false)) {
    if (env->size() > kMaxEnvEntries) {
      r.Fail("env", "must have at most " + std::to_string(kMaxEnvEntries) + " entries");
    } else {
      JsonReader er(*env, r.PathOf("env"), &errors);
      for (const auto& kv : *env) {
        const std::string name(kv.key());
        if (!IsEnvName(name)) {
          er.Fail(name, "is not a valid name ([A-Za-z_][A-Za-z0-9_]*, at most " +
                            std::to_string(kMaxEnvNameLength) + " characters)");
        } else if (IsReservedEnvName(name)) {
          er.Fail(name, "is reserved: the agent sets NVIDIA_* itself");
        } else if (!kv.value().is_string()) {
          er.Fail(name, "must be a string");
        } else if (auto value = er.String(name, false, kMaxEnvValueLength, true)) {
          s.env.emplace_back(name, *value);
        }
      }
    }
  }
  if (const json::array* gpus = r.Array("gpu_uuids", false, 0, kMaxWorkloadGpus)) {
    std::set<std::string, std::less<>> seen;
    for (size_t i = 0; i < gpus->size(); ++i) {
      const std::string path = IndexPath("gpu_uuids", i);
      const json::value& g = (*gpus)[i];
      if (!g.is_string() || !IsGpuUuid(g.get_string())) {
        r.Fail(path, "must be a GPU UUID (GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx)");
      } else if (!seen.emplace(g.get_string()).second) {
        r.Fail(path, "is listed twice");
      } else {
        s.gpu_uuids.emplace_back(g.get_string());
      }
    }
  }
  s.ports = ReadPorts(r, "ports", /*with_public=*/false);
  s.registry_auth = ReadRegistryCredentials(r, "registry_auth");
  if (auto m = r.Int("memory_mb", true, kMinMemoryMb, kMaxMemoryMb)) s.memory_mb = *m;
  if (auto c = r.Number("cpus", true, 0, kMaxCpus)) {
    if (*c < kMinCpus) {
      r.Fail("cpus", "must be at least 0.1");
    } else {
      s.cpus = *c;
    }
  }
  if (auto p = r.Int("pids_limit", true, kMinPids, kMaxPids)) s.pids_limit = *p;
  if (auto m = r.Int("scratch_mb", true, kMinScratchMb, kMaxScratchMb)) s.scratch_mb = *m;
  if (auto t = r.Int("timeout_s", false, 0, kMaxTimeoutS)) s.timeout_s = *t;
  GPUNEX_RETURN_IF_ERROR(PayloadStatus(errors));
  return s;
}

json::object ToJson(const StartWorkload& s) {
  json::array command, gpus;
  for (const auto& a : s.command) command.emplace_back(a);
  for (const auto& g : s.gpu_uuids) gpus.emplace_back(g);
  json::object env;
  for (const auto& [name, value] : s.env) env[name] = value;
  json::object out{{"workload_id", s.workload_id},
                   {"image", s.image},
                   {"command", std::move(command)},
                   {"env", std::move(env)},
                   {"gpu_uuids", std::move(gpus)},
                   {"memory_mb", s.memory_mb},
                   {"cpus", s.cpus},
                   {"pids_limit", s.pids_limit},
                   {"scratch_mb", s.scratch_mb},
                   {"timeout_s", s.timeout_s}};
  if (!s.ports.empty()) out["ports"] = PortsJson(s.ports, /*with_public=*/false);
  return out;
}

std::optional<RegistryCredentials> ReadRegistryCredentials(const JsonReader& r,
                                                           std::string_view key) {
  const json::object* o = r.Object(key, false);
  if (o == nullptr) return std::nullopt;
  JsonReader cr(*o, r.PathOf(key), r.errors());
  cr.RejectUnknown({"username", "password"});
  auto username = cr.String("username", true, kMaxRegistryUsernameLength);
  auto password = cr.String("password", true, kMaxRegistryPasswordLength);
  if (!username || !password) return std::nullopt;
  return RegistryCredentials{std::move(*username), std::move(*password)};
}

json::object RegistryCredentialsJson(const RegistryCredentials& c) {
  return {{"username", c.username}, {"password", c.password}};
}

void Wipe(RegistryCredentials& c) {
  for (std::string* s : {&c.username, &c.password}) {
    explicit_bzero(s->data(), s->size());
    s->clear();
  }
}

std::vector<WorkloadPort> ReadPorts(const JsonReader& r, std::string_view key, bool with_public) {
  std::vector<WorkloadPort> out;
  const json::array* a = r.Array(key, false, 0, kMaxPorts);
  if (!a) return out;
  std::set<int64_t> seen;
  for (size_t i = 0; i < a->size(); ++i) {
    const std::string path = IndexPath(key, i);
    if (!(*a)[i].is_object()) {
      r.Fail(path, "must be an object such as {\"port\": 8080, \"protocol\": \"http\"}");
      continue;
    }
    JsonReader pr((*a)[i].get_object(), r.PathOf(path), r.errors());
    if (with_public) {
      pr.RejectUnknown({"port", "protocol", "public"});
    } else {
      pr.RejectUnknown({"port", "protocol"});
    }
    WorkloadPort p;
    bool ok = true;
    if (auto n = pr.Int("port", true, 1, 65535)) {
      if (!seen.insert(*n).second) {
        pr.Fail("port", "is declared twice");
        ok = false;
      }
      p.port = static_cast<uint16_t>(*n);
    } else {
      ok = false;
    }
    if (auto proto = pr.String("protocol", false, 16)) {
      if (auto parsed = kPortProtocolNames.Parse(*proto)) {
        p.protocol = *parsed;
      } else {
        pr.Fail("protocol", "must be \"http\" or \"tcp\"");
        ok = false;
      }
    }
    if (with_public) {
      if (auto pub = pr.Bool("public", false)) p.is_public = *pub;
    }
    if (ok) out.push_back(p);
  }
  return out;
}

json::array PortsJson(const std::vector<WorkloadPort>& ports, bool with_public) {
  json::array out;
  for (const auto& p : ports) {
    json::object o{{"port", p.port}, {"protocol", kPortProtocolNames.Name(p.protocol)}};
    if (with_public) o["public"] = p.is_public;
    out.emplace_back(std::move(o));
  }
  return out;
}

StatusOr<StopWorkload> ParseStopWorkload(const json::object& payload) {
  FieldErrors errors;
  JsonReader r(payload, "", &errors);
  r.RejectUnknown({"workload_id"});
  StopWorkload s{WorkloadId(r, "workload_id")};
  GPUNEX_RETURN_IF_ERROR(PayloadStatus(errors));
  return s;
}

json::object ToJson(const StopWorkload& s) { return {{"workload_id", s.workload_id}}; }

StatusOr<RunBenchmark> ParseRunBenchmark(const json::object& payload) {
  FieldErrors errors;
  JsonReader r(payload, "", &errors);
  r.RejectUnknown({"benchmark_id", "gpus", "machine_phases", "sustain_s", "storage", "network"});
  RunBenchmark b;
  b.benchmark_id = Str(r, "benchmark_id", true, 64);
  b.gpus = List<RunBenchmark::Gpu>(r, "gpus", kMaxGpus, [](const JsonReader& g) {
    g.RejectUnknown({"uuid", "catalog_id"});
    return RunBenchmark::Gpu{Str(g, "uuid", true, 96), Str(g, "catalog_id", false, 64)};
  });
  b.machine_phases = r.Bool("machine_phases", false).value_or(b.machine_phases);
  b.sustain_s = r.Int("sustain_s", false, 0, kMaxBenchmarkSustainS).value_or(b.sustain_s);
  if (const json::object* st = r.Object("storage", false)) {
    JsonReader sr(*st, r.PathOf("storage"), &errors);
    sr.RejectUnknown({"file_mb", "seconds_per_phase"});
    b.storage_file_mb =
        sr.Int("file_mb", false, 1, kMaxBenchmarkFileMb).value_or(b.storage_file_mb);
    b.storage_seconds = sr.Number("seconds_per_phase", false, 0, kMaxBenchmarkSecondsPerPhase)
                            .value_or(b.storage_seconds);
  }
  if (const json::object* n = r.Object("network", false)) {
    JsonReader nr(*n, r.PathOf("network"), &errors);
    nr.RejectUnknown({"mb", "pings"});
    b.network_mb = nr.Int("mb", false, 1, kMaxBenchmarkNetworkMb).value_or(b.network_mb);
    b.pings = nr.Int("pings", false, 1, kMaxBenchmarkPings).value_or(b.pings);
  }
  GPUNEX_RETURN_IF_ERROR(PayloadStatus(errors));
  return b;
}

json::object ToJson(const RunBenchmark& b) {
  json::array gpus;
  for (const auto& g : b.gpus) {
    gpus.push_back(json::object{{"uuid", g.uuid}, {"catalog_id", g.catalog_id}});
  }
  return {{"benchmark_id", b.benchmark_id},
          {"gpus", std::move(gpus)},
          {"machine_phases", b.machine_phases},
          {"sustain_s", b.sustain_s},
          {"storage", {{"file_mb", b.storage_file_mb}, {"seconds_per_phase", b.storage_seconds}}},
          {"network", {{"mb", b.network_mb}, {"pings", b.pings}}}};
}

namespace {

// One figure of a benchmark result: its key and its member. Parse and ToJson read the
// same tables.
template <typename Figures>
struct Figure {
  const char* key;
  double Figures::*member;
};

using NetworkFigures = BenchmarkNetwork;
using StorageFigures = BenchmarkStorage;
constexpr Figure<NetworkFigures> kNetworkFigures[] = {
    {"rtt_p50_ms", &NetworkFigures::rtt_p50_ms},
    {"rtt_p99_ms", &NetworkFigures::rtt_p99_ms},
    {"download_mbit_s", &NetworkFigures::download_mbit_s},
    {"upload_mbit_s", &NetworkFigures::upload_mbit_s}};
constexpr Figure<StorageFigures> kStorageFigures[] = {
    {"seq_read_mb_s", &StorageFigures::seq_read_mb_s},
    {"seq_write_mb_s", &StorageFigures::seq_write_mb_s},
    {"rand_read_iops", &StorageFigures::rand_read_iops},
    {"rand_read_p50_us", &StorageFigures::rand_read_p50_us},
    {"rand_read_p99_us", &StorageFigures::rand_read_p99_us}};

template <typename Figures, size_t N>
void ReadFigures(const JsonReader& r, const Figure<Figures> (&table)[N], Figures* f) {
  for (const auto& fig : table) {
    auto v = r.Number(fig.key, true, -kMaxBenchmarkFigure, kMaxBenchmarkFigure);
    if (v && *v < 0) {
      r.Fail(fig.key, "must not be negative");
    } else if (v) {
      f->*fig.member = *v;
    }
  }
}

template <typename Figures, size_t N>
json::object WriteFigures(const Figure<Figures> (&table)[N], const Figures& f) {
  json::object o;
  for (const auto& fig : table) o[fig.key] = f.*fig.member;
  return o;
}

std::string ErrorText(const JsonReader& r, std::string_view key) {
  return r.String(key, false, kMaxBenchmarkErrorLength, true).value_or("");
}

}  // namespace

StatusOr<BenchmarkResult> ParseBenchmarkResult(const json::object& data) {
  FieldErrors errors;
  JsonReader r(data, "", &errors);
  r.RejectUnknown(
      {"benchmark_id", "emulated", "gpus", "network", "network_error", "storage", "storage_error"});
  BenchmarkResult b;
  b.benchmark_id = Str(r, "benchmark_id", true, 64);
  b.emulated = r.Bool("emulated", true).value_or(false);
  b.gpus = List<BenchmarkResult::Gpu>(r, "gpus", kMaxGpus, [](const JsonReader& g) {
    g.RejectUnknown({"uuid", "ok", "error", "result"});
    BenchmarkResult::Gpu out;
    out.uuid = Str(g, "uuid", true, 96);
    out.ok = g.Bool("ok", true).value_or(false);
    out.error = ErrorText(g, "error");
    if (const json::object* res = g.Object("result", false)) out.result = *res;
    return out;
  });
  if (const json::object* n = r.Object("network", false)) {
    JsonReader nr(*n, r.PathOf("network"), &errors);
    nr.RejectUnknown({"rtt_p50_ms", "rtt_p99_ms", "download_mbit_s", "upload_mbit_s"});
    ReadFigures(nr, kNetworkFigures, &b.network.emplace());
  }
  b.network_error = ErrorText(r, "network_error");
  if (const json::object* st = r.Object("storage", false)) {
    JsonReader sr(*st, r.PathOf("storage"), &errors);
    sr.RejectUnknown({"seq_read_mb_s", "seq_write_mb_s", "rand_read_iops", "rand_read_p50_us",
                      "rand_read_p99_us", "direct_io"});
    ReadFigures(sr, kStorageFigures, &b.storage.emplace());
    b.storage->direct_io = sr.Bool("direct_io", false).value_or(true);
  }
  b.storage_error = ErrorText(r, "storage_error");
  GPUNEX_RETURN_IF_ERROR(PayloadStatus(errors));
  return b;
}

json::object ToJson(const BenchmarkResult& b) {
  json::array gpus;
  for (const auto& g : b.gpus) {
    json::object o{{"uuid", g.uuid}, {"ok", g.ok}};
    if (!g.error.empty()) o["error"] = g.error;
    if (g.result) o["result"] = *g.result;
    gpus.push_back(std::move(o));
  }
  json::object o{
      {"benchmark_id", b.benchmark_id}, {"emulated", b.emulated}, {"gpus", std::move(gpus)}};
  if (b.network) o["network"] = WriteFigures(kNetworkFigures, *b.network);
  if (!b.network_error.empty()) o["network_error"] = b.network_error;
  if (b.storage) {
    json::object s = WriteFigures(kStorageFigures, *b.storage);
    s["direct_io"] = b.storage->direct_io;
    o["storage"] = std::move(s);
  }
  if (!b.storage_error.empty()) o["storage_error"] = b.storage_error;
  return o;
}

json::object ToJson(const BenchmarkNetwork& n) { return WriteFigures(kNetworkFigures, n); }

json::object ToJson(const BenchmarkStorage& st) {
  json::object o = WriteFigures(kStorageFigures, st);
  o["direct_io"] = st.direct_io;
  return o;
}

namespace {

constexpr double kMaxGpubenchFigure = 1e7;  // far above any GPU today

// One number of GpubenchFigures as it stands in JSON: its key, its member, whether it must
// be there, and its largest value. Parse and ToJson read the same tables.
struct FigureField {
  const char* key;
  double GpubenchFigures::*member;
  bool required = true;
  double max = kMaxGpubenchFigure;
};

using G = GpubenchFigures;
constexpr FigureField kComputeFields[] = {{"fp32_tflops", &G::fp32_tflops},
                                          {"fp16_tflops", &G::fp16_tflops},
                                          {"fp16_tensor_tflops", &G::fp16_tensor_tflops},
                                          {"bf16_tensor_tflops", &G::bf16_tensor_tflops},
                                          {"tf32_tensor_tflops", &G::tf32_tensor_tflops}};
constexpr FigureField kMemoryFields[] = {{"read_gbps", &G::mem_read_gbps},
                                         {"write_gbps", &G::mem_write_gbps},
                                         {"copy_gbps", &G::mem_copy_gbps},
                                         {"triad_gbps", &G::mem_triad_gbps}};
constexpr FigureField kSustainedFields[] = {
    {"seconds", &G::sustained_seconds},
    {"mean_tflops", &G::sustained_mean_tflops},
    {"min_over_median", &G::sustained_min_over_median, true, 1.0 + 1e-9},
    {"cv", &G::sustained_cv},
    {"thermal_throttle_fraction", &G::thermal_throttle_fraction, true, 1},
    {"power_throttle_fraction", &G::power_throttle_fraction, true, 1},
    {"max_temperature_c", &G::max_temperature_c, false, 200},
    {"mean_power_w", &G::mean_power_w, false}};

template <size_t N>
void ReadGpubench(const JsonReader& r, const FigureField (&fields)[N], G* f) {
  for (const auto& field : fields) {
    f->*field.member = r.Number(field.key, field.required, -1e-12, field.max).value_or(0);
  }
}

template <size_t N>
json::object WriteGpubench(const FigureField (&fields)[N], const G& f) {
  json::object o;
  for (const auto& field : fields) o[field.key] = f.*field.member;
  return o;
}

}  // namespace

StatusOr<GpubenchFigures> ParseGpubenchFigures(const json::object& o, const std::string& path) {
  FieldErrors errors;
  JsonReader r(o, path, &errors);
  GpubenchFigures f;
  f.emulated = r.Bool("emulated", false).value_or(false);
  if (const json::object* c = r.Object("compute", true))
    ReadGpubench(JsonReader(*c, r.PathOf("compute"), &errors), kComputeFields, &f);
  if (const json::object* m = r.Object("memory", true))
    ReadGpubench(JsonReader(*m, r.PathOf("memory"), &errors), kMemoryFields, &f);
  if (const json::object* s = r.Object("sustained", true)) {
    ReadGpubench(JsonReader(*s, r.PathOf("sustained"), &errors), kSustainedFields, &f);
  }
  if (const json::object* d = r.Object("device", false)) {
    JsonReader dr(*d, r.PathOf("device"), &errors);
    f.pcie_width = dr.Int("pcie_width", false, 0, 64).value_or(0);
    f.pcie_gen = dr.Int("pcie_gen", false, 0, 16).value_or(0);
  }
  if (const json::object* s = r.Object("sanity", true)) {
    JsonReader sr(*s, r.PathOf("sanity"), &errors);
    f.sanity_ok = sr.Bool("ok", true).value_or(false);
    if (const json::array* fails = sr.Array("failures", false, 0, 32)) {
      for (const auto& v : *fails) {
        if (v.is_string() && v.get_string().size() <= 500 && IsCleanText(v.get_string(), false)) {
          f.sanity_failures.emplace_back(v.get_string());
        } else {
          sr.Fail("failures", "must be short strings");
          break;
        }
      }
    }
  }
  if (!errors.empty()) return ValidationFailed(std::move(errors));
  return f;
}

json::object ToJson(const GpubenchFigures& f) {
  json::array fails;
  for (const auto& s : f.sanity_failures) fails.emplace_back(s);
  return {{"emulated", f.emulated},
          {"compute", WriteGpubench(kComputeFields, f)},
          {"memory", WriteGpubench(kMemoryFields, f)},
          {"sustained", WriteGpubench(kSustainedFields, f)},
          {"device", {{"pcie_width", f.pcie_width}, {"pcie_gen", f.pcie_gen}}},
          {"sanity", {{"ok", f.sanity_ok}, {"failures", std::move(fails)}}}};
}

}  // namespace gpunex::protocol
