#include "common/agent_protocol.h"

#include <algorithm>
#include <iterator>
#include <regex>
#include <set>

#include "common/internal/protocol_json.h"
#include "common/utf8.h"

namespace gpunex::protocol {
namespace {

using internal::Finish;
using internal::Int;
using internal::List;
using internal::Str;

constexpr int64_t kBig = int64_t{1} << 50;

bool IsUuid(const std::string& s) {
  static const std::regex re("GPU-[0-9A-Za-z-]{8,64}");
  return std::regex_match(s, re);
}

Gpu ParseGpu(const JsonReader& r) {
  r.RejectUnknown({"index", "uuid", "name", "catalog_id", "vram_mb", "driver_version",
                   "cuda_driver_version", "pcie_gen_max", "pcie_gen_current", "pcie_width_max",
                   "pcie_width_current", "power_limit_w", "emulated"});
  Gpu g;
  g.index = Int(r, "index", 0, 1023);
  g.uuid = Str(r, "uuid", true, 96);
  if (!g.uuid.empty() && !IsUuid(g.uuid)) r.Fail("uuid", "must look like GPU-xxxxxxxx-...");
  g.name = Str(r, "name", true, 128);
  g.catalog_id = Str(r, "catalog_id", false, 64);
  g.vram_mb = Int(r, "vram_mb", 0, 16 << 20);
  g.driver_version = Str(r, "driver_version", false, 64);
  g.cuda_driver_version = Str(r, "cuda_driver_version", false, 32);
  g.pcie_gen_max = Int(r, "pcie_gen_max", -1, 16, false);
  g.pcie_gen_current = Int(r, "pcie_gen_current", -1, 16, false);
  g.pcie_width_max = Int(r, "pcie_width_max", -1, 64, false);
  g.pcie_width_current = Int(r, "pcie_width_current", -1, 64, false);
  g.power_limit_w = Int(r, "power_limit_w", -1, 10000, false);
  g.emulated = r.Bool("emulated", true).value_or(false);
  return g;
}

json::object ToJson(const Gpu& g) {
  return {{"index", g.index},
          {"uuid", g.uuid},
          {"name", g.name},
          {"catalog_id", g.catalog_id},
          {"vram_mb", g.vram_mb},
          {"driver_version", g.driver_version},
          {"cuda_driver_version", g.cuda_driver_version},
          {"pcie_gen_max", g.pcie_gen_max},
          {"pcie_gen_current", g.pcie_gen_current},
          {"pcie_width_max", g.pcie_width_max},
          {"pcie_width_current", g.pcie_width_current},
          {"power_limit_w", g.power_limit_w},
          {"emulated", g.emulated}};
}

const std::vector<std::string_view> kIsolationStates = {
    kIsolated, kNotIsolated, kIsolationUnverified, kIsolationChecking, kIsolationNoEngine};

// The members of a network isolation report (hello's host.network_isolation, or the
// network_isolation message without its "type").
NetworkIsolation ParseNetworkIsolation(const JsonReader& r) {
  NetworkIsolation n;
  n.state = Str(r, "state", true, 16);
  if (!n.state.empty() && std::find(kIsolationStates.begin(), kIsolationStates.end(), n.state) ==
                              kIsolationStates.end()) {
    r.Fail("state", "must be isolated, not_isolated, unverified, checking or no_engine");
  }
  if (const json::array* a = r.Array("reached", false, 0, 2)) {
    for (const auto& v : *a) {
      if (!v.is_string() ||
          (v.get_string() != kReachedWorkload && v.get_string() != kReachedHost) ||
          std::find(n.reached.begin(), n.reached.end(), v.get_string()) != n.reached.end()) {
        r.Fail("reached", "must list \"workload\" and \"host\" at most once each");
        break;
      }
      n.reached.emplace_back(v.get_string());
    }
  }
  if (n.state == kNotIsolated && n.reached.empty()) {
    r.Fail("reached", "must say what a workload reached when the state is not_isolated");
  } else if (!n.state.empty() && n.state != kNotIsolated && !n.reached.empty()) {
    r.Fail("reached", "must be empty unless the state is not_isolated");
  }
  n.detail = Str(r, "detail", false, kMaxIsolationDetail);
  return n;
}

StatusOr<Hello> ParseHello(const JsonReader& r, FieldErrors& errors) {
  r.RejectUnknown({"type", "protocol", "agent_version", "machine_id", "machine_key", "emulated",
                   "host", "gpus", "containers"});
  Hello h;
  h.protocol = Int(r, "protocol", 1, 1000);
  if (h.protocol != 0 && h.protocol != kProtocolVersion) {
    r.Fail("protocol", "version " + std::to_string(h.protocol) +
                           " is not supported (this side speaks " +
                           std::to_string(kProtocolVersion) + ")");
  }
  h.agent_version = Str(r, "agent_version", true, 64);
  h.machine_id = Str(r, "machine_id", false, 64);
  h.machine_key = Str(r, "machine_key", true, 128);
  if (!h.machine_key.empty() && h.machine_key.size() < 32)
    r.Fail("machine_key", "must be at least 32 characters");
  h.emulated = r.Bool("emulated", true).value_or(false);
  if (const json::object* host = r.Object("host", true)) {
    JsonReader hr(*host, "host", &errors);
    hr.RejectUnknown({"hostname", "cpu_model", "os", "kernel", "docker_version", "cpu_cores",
                      "ram_mb", "disk_total_mb", "disk_free_mb", "network_isolation"});
    h.host.hostname = Str(hr, "hostname", false);
    h.host.cpu_model = Str(hr, "cpu_model", false);
    h.host.os = Str(hr, "os", false);
    h.host.kernel = Str(hr, "kernel", false);
    h.host.docker_version = Str(hr, "docker_version", false, 64);
    h.host.cpu_cores = Int(hr, "cpu_cores", 0, 100000);
    h.host.ram_mb = Int(hr, "ram_mb", 0, kBig);
    h.host.disk_total_mb = Int(hr, "disk_total_mb", 0, kBig);
    h.host.disk_free_mb = Int(hr, "disk_free_mb", 0, kBig);
    if (const json::object* ni = hr.Object("network_isolation", false)) {
      JsonReader nr(*ni, hr.PathOf("network_isolation"), &errors);
      nr.RejectUnknown({"state", "reached", "detail"});
      h.host.network_isolation = ParseNetworkIsolation(nr);
    }
  }
  h.gpus = List<Gpu>(r, "gpus", kMaxGpus, ParseGpu);
  h.containers = List<RunningContainer>(r, "containers", kMaxContainers, [](const JsonReader& c) {
    c.RejectUnknown({"container_id", "workload_id", "state"});
    return RunningContainer{Str(c, "container_id", false, 128), Str(c, "workload_id", false, 64),
                            Str(c, "state", false, 32)};
  });
  GPUNEX_RETURN_IF_ERROR(Finish(errors));
  return h;
}

GpuSample ParseSample(const JsonReader& r) {
  r.RejectUnknown({"uuid", "utilization_pct", "memory_used_mb", "temperature_c", "power_w",
                   "sm_clock_mhz", "throttle_reasons"});
  GpuSample s;
  s.uuid = Str(r, "uuid", true, 96);
  s.utilization_pct = Int(r, "utilization_pct", -1, 100);
  s.memory_used_mb = Int(r, "memory_used_mb", -1, 16 << 20);
  s.temperature_c = Int(r, "temperature_c", -1, 200);
  if (r.HasValue("power_w")) {
    auto p = r.Number("power_w", true, -2, 100000);
    s.power_w = p.value_or(0);
  }
  s.sm_clock_mhz = Int(r, "sm_clock_mhz", -1, 100000);
  if (const json::array* t = r.Array("throttle_reasons", false, 0, 16)) {
    for (const auto& v : *t) {
      if (!v.is_string() || v.get_string().size() > 32) {
        r.Fail("throttle_reasons", "must be short strings");
        break;
      }
      s.throttle_reasons.emplace_back(v.get_string());
    }
  }
  return s;
}

const std::vector<std::string_view> kWorkloadStates = {"starting", "running", "exited", "failed",
                                                       "stopped"};

// A log chunk's data: output is bytes, so any string passes (empty, blank lines,
// whitespace only, control characters: the JSON parser already refused invalid UTF-8);
// only its size is bounded.
std::string LogData(const json::object& o, const JsonReader& r) {
  auto it = o.find("data");
  if (it == o.end() || it->value().is_null()) {
    r.Fail("data", "is required");
    return "";
  }
  if (!it->value().is_string()) {
    r.Fail("data", "must be a string");
    return "";
  }
  const json::string& d = it->value().get_string();
  if (d.size() > kMaxLogChunk) {
    r.Fail("data", "must be at most " + std::to_string(kMaxLogChunk) + " bytes");
    return "";
  }
  return std::string(d);
}

const std::vector<std::string_view> kWorkloadCauses = {
    kCauseExited,        kCauseOomKilled,     kCauseTimeout,      kCauseStopped,
    kCauseAgentShutdown, kCauseContainerGone, kCauseEngineError,  kCausePolicyRefused,
    kCauseBadCommand,    kCauseImageNotFound, kCauseImageRefused, kCauseRegistryUnreachable};

}  // namespace

bool IsWorkloadCause(std::string_view s) {
  return std::find(kWorkloadCauses.begin(), kWorkloadCauses.end(), s) != kWorkloadCauses.end();
}

namespace {

// The JSON object of one message, within the size limit.
StatusOr<json::value> ParseEnvelope(std::string_view text) {
  if (text.size() > kMaxMessageBytes) return FieldError("message", "is larger than 1 MiB");
  GPUNEX_ASSIGN_OR_RETURN(json::value v, ParseJson(text));
  if (!v.is_object()) return FieldError("message", "must be a JSON object");
  return v;
}

}  // namespace

StatusOr<AgentMessage> ParseAgentMessage(std::string_view text) {
  GPUNEX_ASSIGN_OR_RETURN(json::value v, ParseEnvelope(text));
  FieldErrors errors;
  JsonReader r(v.get_object(), "", &errors);
  auto type = r.String("type", true, 32);
  if (!type) return Finish(errors);
  if (*type == "hello") {
    GPUNEX_ASSIGN_OR_RETURN(Hello h, ParseHello(r, errors));
    return AgentMessage(std::move(h));
  }
  if (*type == "heartbeat") {
    r.RejectUnknown({"type", "seq", "gpus"});
    Heartbeat h;
    h.seq = Int(r, "seq", 0, kBig);
    h.gpus = List<GpuSample>(r, "gpus", kMaxGpus, ParseSample);
    GPUNEX_RETURN_IF_ERROR(Finish(errors));
    return AgentMessage(std::move(h));
  }
  if (*type == "ack") {
    r.RejectUnknown({"type", "command_id"});
    Ack a{Str(r, "command_id", true, 64)};
    GPUNEX_RETURN_IF_ERROR(Finish(errors));
    return AgentMessage(std::move(a));
  }
  if (*type == "result") {
    r.RejectUnknown({"type", "command_id", "ok", "error", "data"});
    Result res;
    res.command_id = Str(r, "command_id", true, 64);
    res.ok = r.Bool("ok", true).value_or(false);
    res.error = Str(r, "error", false, 2000);
    if (const json::object* d = r.Object("data", false)) res.data = *d;
    GPUNEX_RETURN_IF_ERROR(Finish(errors));
    return AgentMessage(std::move(res));
  }
  if (*type == "workload_event") {
    r.RejectUnknown(
        {"type", "workload_id", "state", "exit_code", "reason", "container_id", "cause"});
    WorkloadEvent e;
    e.workload_id = Str(r, "workload_id", true, 64);
    e.state = Str(r, "state", true, 16);
    if (!e.state.empty() && std::find(kWorkloadStates.begin(), kWorkloadStates.end(), e.state) ==
                                kWorkloadStates.end()) {
      r.Fail("state", "must be starting, running, exited, failed or stopped");
    }
    e.exit_code = r.Int("exit_code", false, -1, 255);
    e.reason = Str(r, "reason", false, 2000);
    e.container_id = Str(r, "container_id", false, 128);
    e.cause = Str(r, "cause", false, 32);
    if (!e.cause.empty() && !IsWorkloadCause(e.cause)) {
      r.Fail("cause", "must be a cause of docs/agent-protocol.md (exited, oom_killed, ...)");
    }
    GPUNEX_RETURN_IF_ERROR(Finish(errors));
    return AgentMessage(std::move(e));
  }
  if (*type == "logs") {
    r.RejectUnknown({"type", "workload_id", "stream", "seq", "data"});
    Logs l;
    l.workload_id = Str(r, "workload_id", true, 64);
    l.stream = Str(r, "stream", true, 8);
    if (!l.stream.empty() && l.stream != "stdout" && l.stream != "stderr") {
      r.Fail("stream", "must be stdout or stderr");
    }
    l.seq = Int(r, "seq", 0, kBig);
    l.data = LogData(v.get_object(), r);
    GPUNEX_RETURN_IF_ERROR(Finish(errors));
    return AgentMessage(std::move(l));
  }
  if (*type == "ping") {
    r.RejectUnknown({"type", "id"});
    Ping p{Int(r, "id", 0, kBig)};
    GPUNEX_RETURN_IF_ERROR(Finish(errors));
    return AgentMessage(p);
  }
  if (*type == "network_isolation") {
    r.RejectUnknown({"type", "state", "reached", "detail"});
    NetworkIsolation n = ParseNetworkIsolation(r);
    GPUNEX_RETURN_IF_ERROR(Finish(errors));
    return AgentMessage(std::move(n));
  }
  r.Fail("type", "is not a known message type");
  return Finish(errors);
}

StatusOr<PlatformMessage> ParsePlatformMessage(std::string_view text) {
  GPUNEX_ASSIGN_OR_RETURN(json::value v, ParseEnvelope(text));
  FieldErrors errors;
  JsonReader r(v.get_object(), "", &errors);
  auto type = r.String("type", true, 32);
  if (!type) return Finish(errors);
  if (*type == "welcome") {
    r.RejectUnknown({"type", "machine_id", "heartbeat_interval_s", "keep_workload_ids"});
    Welcome w;
    w.machine_id = Str(r, "machine_id", true, 64);
    w.heartbeat_interval_s = Int(r, "heartbeat_interval_s", 1, 3600);
    if (const json::array* k = r.Array("keep_workload_ids", true, 0, kMaxContainers)) {
      for (const auto& id : *k) {
        if (!id.is_string()) {
          r.Fail("keep_workload_ids", "must be strings");
          break;
        }
        w.keep_workload_ids.emplace_back(id.get_string());
      }
    }
    GPUNEX_RETURN_IF_ERROR(Finish(errors));
    return PlatformMessage(std::move(w));
  }
  if (*type == "command") {
    r.RejectUnknown({"type", "command_id", "kind", "payload"});
    Command c;
    c.command_id = Str(r, "command_id", true, 64);
    c.kind = Str(r, "kind", true, 32);
    if (!c.kind.empty() && !IsCommandKind(c.kind)) r.Fail("kind", "is not a known command");
    if (const json::object* p = r.Object("payload", true)) c.payload = *p;
    GPUNEX_RETURN_IF_ERROR(Finish(errors));
    return PlatformMessage(std::move(c));
  }
  if (*type == "error") {
    r.RejectUnknown({"type", "code", "message"});
    Error e{Str(r, "code", true, 64), Str(r, "message", true, 2000)};
    GPUNEX_RETURN_IF_ERROR(Finish(errors));
    return PlatformMessage(std::move(e));
  }
  if (*type == "pong") {
    r.RejectUnknown({"type", "id"});
    Pong p{Int(r, "id", 0, kBig)};
    GPUNEX_RETURN_IF_ERROR(Finish(errors));
    return PlatformMessage(p);
  }
  r.Fail("type", "is not a known message type");
  return Finish(errors);
}

namespace {

struct AgentWriter {
  json::object operator()(const Hello& h) const {
    json::array gpus, containers;
    for (const auto& g : h.gpus) gpus.push_back(ToJson(g));
    for (const auto& c : h.containers) {
      containers.push_back(json::object{
          {"container_id", c.container_id}, {"workload_id", c.workload_id}, {"state", c.state}});
    }
    return {{"type", "hello"},
            {"protocol", h.protocol},
            {"agent_version", h.agent_version},
            {"machine_id", h.machine_id},
            {"machine_key", h.machine_key},
            {"emulated", h.emulated},
            {"host", ToJson(h.host)},
            {"gpus", std::move(gpus)},
            {"containers", std::move(containers)}};
  }
  json::object operator()(const Heartbeat& h) const {
    json::array gpus;
    for (const auto& s : h.gpus) {
      json::array t;
      for (const auto& r : s.throttle_reasons) t.emplace_back(r);
      gpus.push_back(json::object{{"uuid", s.uuid},
                                  {"utilization_pct", s.utilization_pct},
                                  {"memory_used_mb", s.memory_used_mb},
                                  {"temperature_c", s.temperature_c},
                                  {"power_w", s.power_w},
                                  {"sm_clock_mhz", s.sm_clock_mhz},
                                  {"throttle_reasons", std::move(t)}});
    }
    return {{"type", "heartbeat"}, {"seq", h.seq}, {"gpus", std::move(gpus)}};
  }
  json::object operator()(const Ack& a) const {
    return {{"type", "ack"}, {"command_id", a.command_id}};
  }
  json::object operator()(const Result& r) const {
    json::object o{
        {"type", "result"}, {"command_id", r.command_id}, {"ok", r.ok}, {"data", r.data}};
    if (!r.ok) o["error"] = r.error;
    return o;
  }
  json::object operator()(const WorkloadEvent& e) const {
    json::object o{{"type", "workload_event"},
                   {"workload_id", e.workload_id},
                   {"state", e.state},
                   {"reason", e.reason},
                   {"container_id", e.container_id}};
    o["exit_code"] = e.exit_code ? json::value(*e.exit_code) : json::value(nullptr);
    if (!e.cause.empty()) o["cause"] = e.cause;
    return o;
  }
  json::object operator()(const Logs& l) const {
    return {{"type", "logs"},
            {"workload_id", l.workload_id},
            {"stream", l.stream},
            {"seq", l.seq},
            {"data", l.data}};
  }
  json::object operator()(const Ping& p) const { return {{"type", "ping"}, {"id", p.id}}; }
  json::object operator()(const NetworkIsolation& n) const {
    json::object o = ToJson(n);
    o["type"] = "network_isolation";
    return o;
  }
};

struct PlatformWriter {
  json::object operator()(const Welcome& w) const {
    json::array keep;
    for (const auto& id : w.keep_workload_ids) keep.emplace_back(id);
    return {{"type", "welcome"},
            {"machine_id", w.machine_id},
            {"heartbeat_interval_s", w.heartbeat_interval_s},
            {"keep_workload_ids", std::move(keep)}};
  }
  json::object operator()(const Command& c) const {
    return {{"type", "command"},
            {"command_id", c.command_id},
            {"kind", c.kind},
            {"payload", c.payload}};
  }
  json::object operator()(const Error& e) const {
    return {{"type", "error"}, {"code", e.code}, {"message", e.message}};
  }
  json::object operator()(const Pong& p) const { return {{"type", "pong"}, {"id", p.id}}; }
};

}  // namespace

std::string Serialize(const AgentMessage& m) { return ToJsonText(std::visit(AgentWriter{}, m)); }
std::string Serialize(const PlatformMessage& m) {
  return ToJsonText(std::visit(PlatformWriter{}, m));
}

json::object ToJson(const Host& h) {
  json::object o{{"hostname", h.hostname},
                 {"cpu_model", h.cpu_model},
                 {"os", h.os},
                 {"kernel", h.kernel},
                 {"docker_version", h.docker_version},
                 {"cpu_cores", h.cpu_cores},
                 {"ram_mb", h.ram_mb},
                 {"disk_total_mb", h.disk_total_mb},
                 {"disk_free_mb", h.disk_free_mb}};
  if (h.network_isolation) o["network_isolation"] = ToJson(*h.network_isolation);
  return o;
}

json::object ToJson(const NetworkIsolation& n) {
  json::array reached;
  for (const auto& r : n.reached) reached.emplace_back(r);
  return {{"state", n.state}, {"reached", std::move(reached)}, {"detail", n.detail}};
}

std::string SanitizeLogText(std::string_view raw, size_t* replaced) {
  std::string out;
  out.reserve(raw.size());
  size_t i = 0;
  while (i < raw.size()) {
    const size_t start = i;
    const char32_t cp = NextCodePoint(raw, &i);  // advances one byte past a bad sequence
    const bool whitespace = cp == ' ' || (cp >= '\t' && cp <= '\r');  // \t \n \v \f \r
    if (cp == kInvalidUtf8 || ((cp < 0x20 || cp == 0x7f) && !whitespace)) {
      out += "\xEF\xBF\xBD";  // U+FFFD
      if (replaced) ++*replaced;
      continue;
    }
    out.append(raw.substr(start, i - start));
  }
  return out;
}

std::vector<std::string> SplitLogText(std::string_view text, size_t max_bytes) {
  std::vector<std::string> out;
  size_t off = 0;
  while (off < text.size()) {
    size_t end = std::min(text.size(), off + max_bytes);
    // Back off to the start of a UTF-8 sequence (a byte that is no continuation byte).
    if (end < text.size()) {
      size_t e = end;
      while (e > off && (static_cast<unsigned char>(text[e]) & 0xC0) == 0x80) --e;
      if (e > off) end = e;
    }
    out.emplace_back(text.substr(off, end - off));
    off = end;
  }
  return out;
}

}  // namespace gpunex::protocol
