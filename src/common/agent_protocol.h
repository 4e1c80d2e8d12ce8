// The agent protocol (docs/agent-protocol.md): JSON text messages on the WebSocket
// between gpunex-agent and gpunexd at /api/v1/agent/connect. Both sides parse every
// message strictly with these functions: unknown types or fields, wrong types and
// out-of-range values are refused with the field at fault.
//
// Agent → platform: hello, heartbeat, ack, result, workload_event, logs, ping,
// network_isolation.
// Platform → agent: welcome, command, error, pong.
//
// A command's payload and a run_benchmark result's data travel as JSON objects inside
// those messages (Command::payload, Result::data); each has a typed form below with one
// strict parser and one serializer, so that both sides read and write them with the same
// code.
//
// Thread-safety: pure functions over values.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "common/enum_names.h"
#include "common/json.h"
#include "common/status.h"

namespace gpunex::protocol {

inline constexpr int kProtocolVersion = 1;
inline constexpr size_t kMaxMessageBytes = 1 << 20;
inline constexpr size_t kMaxGpus = 64;
inline constexpr size_t kMaxContainers = 256;
inline constexpr size_t kMaxLogChunk = 64 * 1024;

struct Gpu {
  int64_t index = 0;
  std::string uuid;
  std::string name;
  std::string catalog_id;  // "" when the model is not in the catalog
  int64_t vram_mb = 0;
  std::string driver_version;
  std::string cuda_driver_version;
  int64_t pcie_gen_max = 0, pcie_gen_current = 0, pcie_width_max = 0, pcie_width_current = 0;
  int64_t power_limit_w = 0;
  bool emulated = false;
};

// What the agent's network isolation check found (docs/trust.md): whether a container on
// a workload network reaches another workload's container, or a service of the host.
// The agent reports it in hello (Host::network_isolation) and, each time a later check
// answers differently, in a network_isolation message.
inline constexpr char kIsolated[] = "isolated";         // neither was reached
inline constexpr char kNotIsolated[] = "not_isolated";  // `reached` says what was
// The engine answers but the check could not finish (`detail` says why).
inline constexpr char kIsolationUnverified[] = "unverified";
inline constexpr char kIsolationChecking[] = "checking";  // the first check has not ended
// No Docker engine answers: no workload can run, so there is nothing to isolate yet (the
// agent checks before it starts one).
inline constexpr char kIsolationNoEngine[] = "no_engine";
// What a workload reached (NetworkIsolation::reached): a container on another workload
// network, a listener in the host's network namespace.
inline constexpr char kReachedWorkload[] = "workload";
inline constexpr char kReachedHost[] = "host";
inline constexpr size_t kMaxIsolationDetail = 1000;  // bytes

struct NetworkIsolation {
  std::string state;                 // one of the k* states above
  std::vector<std::string> reached;  // kNotIsolated: kReachedWorkload and/or kReachedHost
  std::string detail;  // the check's own words: the addresses reached, or why it could not run

  bool operator==(const NetworkIsolation&) const = default;
};

struct Host {
  std::string hostname, cpu_model, os, kernel, docker_version;
  int64_t cpu_cores = 0, ram_mb = 0, disk_total_mb = 0, disk_free_mb = 0;
  // Left out by agents older than the check (the platform then lists nothing of it).
  std::optional<NetworkIsolation> network_isolation;
};

struct RunningContainer {
  std::string container_id;
  std::string workload_id;  // from the io.gpunex.workload label; "" when absent
  std::string state;        // Docker's state: "running", "exited", ...
};

struct Hello {
  int64_t protocol = kProtocolVersion;
  std::string agent_version;
  std::string machine_id;   // "" on the very first connection
  std::string machine_key;  // random secret kept in the agent's state volume
  bool emulated = false;
  Host host;
  std::vector<Gpu> gpus;
  std::vector<RunningContainer> containers;
};

struct GpuSample {
  std::string uuid;
  int64_t utilization_pct = 0;
  int64_t memory_used_mb = 0;
  int64_t temperature_c = 0;
  double power_w = 0;
  int64_t sm_clock_mhz = 0;
  std::vector<std::string> throttle_reasons;
};

struct Heartbeat {
  int64_t seq = 0;
  std::vector<GpuSample> gpus;
};

struct Ack {
  std::string command_id;
};

struct Result {
  std::string command_id;
  bool ok = true;
  std::string error;  // when !ok
  json::object data;
};

// What ended a workload, as the agent tells it from what the engine said (a
// workload_event's `cause`). The platform puts each cause down to the party that caused
// it (docs/billing.md, "Who ended it"); `reason` carries the engine's own words, for the
// provider.
inline constexpr char kCauseExited[] = "exited";                 // the process ended by itself
inline constexpr char kCauseOomKilled[] = "oom_killed";          // State.OOMKilled: past its limit
inline constexpr char kCauseTimeout[] = "timeout";               // its own timeout_s passed
inline constexpr char kCauseStopped[] = "stopped";               // stopped as the platform asked
inline constexpr char kCauseAgentShutdown[] = "agent_shutdown";  // the agent stopped it
inline constexpr char kCauseContainerGone[] = "container_gone";  // removed from outside
inline constexpr char kCauseEngineError[] = "engine_error";      // the engine or the host failed
inline constexpr char kCausePolicyRefused[] = "policy_refused";  // the agent's policy check
inline constexpr char kCauseBadCommand[] = "bad_command";        // not in the image, not executable
inline constexpr char kCauseImageNotFound[] = "image_not_found";  // the registry has no such
inline constexpr char kCauseImageRefused[] = "image_refused";     // unauthorized, rate-limited
inline constexpr char kCauseRegistryUnreachable[] = "registry_unreachable";
// Whether `s` is one of the causes above.
bool IsWorkloadCause(std::string_view s);

struct WorkloadEvent {
  std::string workload_id;
  std::string state;  // starting | running | exited | failed | stopped
  std::optional<int64_t> exit_code;
  std::string reason;  // for failed/stopped: "timeout", "image: ...", ... (the engine's words)
  std::string container_id;
  // For exited/failed/stopped: a kCause* above. Empty from agents that came before it (the
  // platform then reads `reason` as they wrote it).
  std::string cause;
};

struct Logs {
  std::string workload_id;
  std::string stream;  // stdout | stderr
  int64_t seq = 0;     // per workload and stream, increasing
  // The output as it came, at most kMaxLogChunk bytes: any text, including blank lines,
  // whitespace only and control characters (SanitizeLogText makes it storable).
  std::string data;
};

// Round-trip probe for the network benchmark (BEN-4): the platform answers each ping
// with a pong carrying the same id, at once.
struct Ping {
  int64_t id = 0;
};

struct Welcome {
  std::string machine_id;
  int64_t heartbeat_interval_s = 10;
  // Containers the platform expects on this machine; the agent removes every other
  // managed container.
  std::vector<std::string> keep_workload_ids;
};

struct Command {
  std::string command_id;
  std::string kind;      // kStartWorkload | kStopWorkload | kRunBenchmark
  json::object payload;  // ToJson of the kind's payload below; parse it with ParseX
};

struct Error {
  std::string code;
  std::string message;
};

struct Pong {
  int64_t id = 0;
};

using AgentMessage =
    std::variant<Hello, Heartbeat, Ack, Result, WorkloadEvent, Logs, Ping, NetworkIsolation>;
using PlatformMessage = std::variant<Welcome, Command, Error, Pong>;

// Parse a message received from the agent / the platform. Field errors name the path.
StatusOr<AgentMessage> ParseAgentMessage(std::string_view text);
StatusOr<PlatformMessage> ParsePlatformMessage(std::string_view text);

std::string Serialize(const AgentMessage& m);
std::string Serialize(const PlatformMessage& m);

// The host facts as hello carries them; the platform keeps and shows them in this form.
json::object ToJson(const Host& h);
// A network isolation report as Host::network_isolation carries it (without "type").
json::object ToJson(const NetworkIsolation& n);

// ---------------------------------------------------------------------------------------
// Command payloads (docs/agent-protocol.md). Each ParseX takes the payload object and
// fails with kValidationFailed and a field error for every wrong field, named by its path
// inside the payload ("memory_mb", "env.EPOCHS", "gpus[1].uuid"): unknown fields, missing
// ones, wrong types, values out of bounds. ToJson(x) writes x back (every field; optional
// ones of BenchmarkResult when present), so that ParseX(ToJson(x)) == x for any x that
// ParseX accepts. The platform builds payloads with ToJson, the agent reads them with
// ParseX, and the other way round for BenchmarkResult.

inline constexpr char kStartWorkload[] = "start_workload";
inline constexpr char kStopWorkload[] = "stop_workload";
inline constexpr char kRunBenchmark[] = "run_benchmark";

// Whether `kind` is one of the command kinds above.
bool IsCommandKind(std::string_view kind);

// Bounds of start_workload, inclusive.
inline constexpr size_t kMaxWorkloadIdLength = 64;
inline constexpr size_t kMaxCommandArgs = 64;
inline constexpr size_t kMaxCommandArgLength = 4096;
inline constexpr size_t kMaxEnvEntries = 128;
inline constexpr size_t kMaxEnvNameLength = 128;
inline constexpr size_t kMaxEnvValueLength = 32 * 1024;
inline constexpr size_t kMaxWorkloadGpus = 16;
inline constexpr int64_t kMinMemoryMb = 64;
inline constexpr int64_t kMaxMemoryMb = 1'048'576;
inline constexpr double kMinCpus = 0.1;
inline constexpr double kMaxCpus = 256;
inline constexpr int64_t kMinPids = 16;
inline constexpr int64_t kMaxPids = 32'768;
inline constexpr int64_t kMinScratchMb = 16;
inline constexpr int64_t kMaxScratchMb = 1'048'576;
inline constexpr int64_t kMaxTimeoutS = 30 * 86'400;

// The syntax of start_workload's fields, shared with the agent's container policy.
// [A-Za-z0-9][A-Za-z0-9_.-]*, at most kMaxWorkloadIdLength characters.
bool IsWorkloadId(std::string_view s);
// [A-Za-z_][A-Za-z0-9_]*, at most kMaxEnvNameLength characters.
bool IsEnvName(std::string_view s);
// NVIDIA_*: the agent sets the GPU selection itself, a workload may not.
bool IsReservedEnvName(std::string_view s);
// "GPU-" and a UUID (8-4-4-4-12 hex digits); emulated GPUs: "GPU-emu-" and a UUID.
bool IsGpuUuid(std::string_view s);

// A port of a workload's container that its owner may reach through the platform (issue
// 25, docs/access.md): HTTP ports through the access listener, TCP ports through a
// WebSocket; the agent reaches only these, on that workload's own container.
enum class PortProtocol { kHttp, kTcp };
inline constexpr EnumNames<PortProtocol, 2> kPortProtocolNames{{{
    {PortProtocol::kHttp, "http"},
    {PortProtocol::kTcp, "tcp"},
}}};
inline constexpr size_t kMaxPorts = 16;
struct WorkloadPort {
  uint16_t port = 0;  // 1 to 65535, each at most once a workload
  PortProtocol protocol = PortProtocol::kHttp;
  // Reachable without a token or session: the platform's rule; the agent never sees it.
  bool is_public = false;

  bool operator==(const WorkloadPort&) const = default;
};
// The array `key` of `r` as ports, {"port", "protocol" ("http" when left out), and with
// `with_public` "public" (false when left out)}: each fault recorded at its element's path
// ("ports[1].port"). The one reader of ports, for the API and the agent alike.
std::vector<WorkloadPort> ReadPorts(const JsonReader& r, std::string_view key, bool with_public);
json::array PortsJson(const std::vector<WorkloadPort>& ports, bool with_public);

// Credentials for a workload's image on a private registry (issue 25, docs/access.md):
// {"username", "password"}, for that one pull. The platform keeps them in memory only,
// until the agent has answered the command that carries them; the agent until the pull
// has ended. Neither side writes them anywhere, logs them or sends them back.
inline constexpr size_t kMaxRegistryUsernameLength = 256;
inline constexpr size_t kMaxRegistryPasswordLength = 4096;
struct RegistryCredentials {
  std::string username;  // text, 1 to kMaxRegistryUsernameLength bytes
  std::string password;  // text, 1 to kMaxRegistryPasswordLength bytes

  bool operator==(const RegistryCredentials&) const = default;
};
// The object `key` of `r` as credentials, each fault recorded at its field's path
// ("registry_auth.password"), never with the value; nullopt when it is absent or wrong.
// The one reader, for the API and the agent alike.
std::optional<RegistryCredentials> ReadRegistryCredentials(const JsonReader& r,
                                                           std::string_view key);
json::object RegistryCredentialsJson(const RegistryCredentials& c);
// Overwrites the credentials' bytes before they are freed.
void Wipe(RegistryCredentials& c);

// start_workload: the workload to run (SPEC ISO-1, ISO-2).
//   {"workload_id": "wl_01J...", "image": "pytorch/pytorch:2.3.0",
//    "command": ["python", "train.py"], "env": {"EPOCHS": "3"},
//    "gpu_uuids": ["GPU-..."], "memory_mb": 16384, "cpus": 8, "pids_limit": 4096,
//    "scratch_mb": 102400, "timeout_s": 3600, "ports": [{"port": 8888, "protocol": "http"}]}
// command, env, gpu_uuids, timeout_s and ports may be left out (the platform leaves ports
// out when there are none, so that agents older than ports take every other workload). Fields that
// would widen the isolation policy ("privileged", "binds", "cap_add", "network_mode", "user", ...)
// are refused like any unknown field, with a message saying so.
struct StartWorkload {
  std::string workload_id;           // IsWorkloadId
  std::string image;                 // a Docker image reference (common/image_ref.h)
  std::vector<std::string> command;  // empty: the image's default command; text, \n allowed
  // In the order of the JSON object; names IsEnvName and not reserved; values text.
  std::vector<std::pair<std::string, std::string>> env;
  std::vector<std::string> gpu_uuids;  // IsGpuUuid, each at most once
  int64_t memory_mb = 0;               // [kMinMemoryMb, kMaxMemoryMb]
  double cpus = 0;                     // [kMinCpus, kMaxCpus]
  int64_t pids_limit = 0;              // [kMinPids, kMaxPids]
  int64_t scratch_mb = 0;              // [kMinScratchMb, kMaxScratchMb]
  int64_t timeout_s = 0;               // [0, kMaxTimeoutS]; 0 = none
  std::vector<WorkloadPort> ports;     // at most kMaxPorts; is_public not carried
  // For the image's pull, when its registry wants them. ToJson never writes them: the
  // platform stores the command without them and adds them when it sends it.
  std::optional<RegistryCredentials> registry_auth = std::nullopt;

  bool operator==(const StartWorkload&) const = default;
};
StatusOr<StartWorkload> ParseStartWorkload(const json::object& payload);
json::object ToJson(const StartWorkload& s);

// stop_workload: {"workload_id"}.
struct StopWorkload {
  std::string workload_id;  // IsWorkloadId

  bool operator==(const StopWorkload&) const = default;
};
StatusOr<StopWorkload> ParseStopWorkload(const json::object& payload);
json::object ToJson(const StopWorkload& s);

// Bounds of run_benchmark, inclusive.
inline constexpr int64_t kMaxBenchmarkSustainS = 600;
inline constexpr int64_t kMaxBenchmarkFileMb = 64 * 1024;
inline constexpr double kMaxBenchmarkSecondsPerPhase = 120;  // and more than 0
inline constexpr int64_t kMaxBenchmarkNetworkMb = 1024;
inline constexpr int64_t kMaxBenchmarkPings = 1000;

// run_benchmark (BEN-1..5, docs/performance-score.md):
//   {"benchmark_id", "gpus": [{"uuid", "catalog_id"}], "machine_phases": bool,
//    "sustain_s", "storage": {"file_mb", "seconds_per_phase"}, "network": {"mb", "pings"}}
// Everything but benchmark_id and gpus may be left out and then takes the defaults below.
struct RunBenchmark {
  struct Gpu {
    std::string uuid;
    std::string catalog_id;  // "" when the model is not in the catalog

    bool operator==(const Gpu&) const = default;
  };
  std::string benchmark_id;
  std::vector<Gpu> gpus;           // at most kMaxGpus
  bool machine_phases = false;     // also the network and storage benchmarks
  int64_t sustain_s = 60;          // [0, kMaxBenchmarkSustainS]
  int64_t storage_file_mb = 1024;  // storage.file_mb: [1, kMaxBenchmarkFileMb]
  double storage_seconds = 8;      // storage.seconds_per_phase: (0, kMaxBenchmarkSecondsPerPhase]
  int64_t network_mb = 256;        // network.mb: [1, kMaxBenchmarkNetworkMb]
  int64_t pings = 20;              // network.pings: [1, kMaxBenchmarkPings]

  bool operator==(const RunBenchmark&) const = default;
};
StatusOr<RunBenchmark> ParseRunBenchmark(const json::object& payload);
json::object ToJson(const RunBenchmark& b);

// The longest error text of a benchmark result, in bytes.
inline constexpr size_t kMaxBenchmarkErrorLength = 1000;
// The largest figure a benchmark result may carry; far above any link or disk (the
// platform's thresholds judge the figures, docs/benchmarks-network-storage.md).
inline constexpr double kMaxBenchmarkFigure = 1e9;

// Network figures of a benchmark result: round trips over the channel (milliseconds) and
// HTTP throughput against the platform (1e6 bit/s).
struct BenchmarkNetwork {
  double rtt_p50_ms = 0, rtt_p99_ms = 0;
  double download_mbit_s = 0, upload_mbit_s = 0;

  bool operator==(const BenchmarkNetwork&) const = default;
};

// Storage figures of a benchmark result, measured in the agent's state directory
// (agent/bench/storage.h): MB/s are 1e6 bytes per second, latencies microseconds.
struct BenchmarkStorage {
  double seq_read_mb_s = 0, seq_write_mb_s = 0;
  double rand_read_iops = 0, rand_read_p50_us = 0, rand_read_p99_us = 0;
  // false: the file system refused O_DIRECT and buffered I/O was measured. Optional on
  // the wire, true when left out.
  bool direct_io = true;

  bool operator==(const BenchmarkStorage&) const = default;
};

// The data of a successful run_benchmark's result:
//   {"benchmark_id", "emulated", "gpus": [{"uuid", "ok", "error"?, "result"?}],
//    "network"?: {"rtt_p50_ms", "rtt_p99_ms", "download_mbit_s", "upload_mbit_s"},
//    "network_error"?, "storage"?: {"seq_read_mb_s", "seq_write_mb_s", "rand_read_iops",
//    "rand_read_p50_us", "rand_read_p99_us", "direct_io"}, "storage_error"?}
// Figures are non-negative numbers up to kMaxBenchmarkFigure; error texts may span lines,
// at most kMaxBenchmarkErrorLength bytes. Optional members are left out of the JSON when
// absent (an empty error text counts as absent). The parser checks the form only: which
// members go together (ok with result, network or network_error) is the platform's call.
// A result that is not ok carries no data: parse Result::data only when Result::ok.
struct BenchmarkResult {
  struct Gpu {
    std::string uuid;
    bool ok = false;
    std::string error;  // why it was not measured; "" = absent
    // The JSON gpunex-gpubench printed (docs/gpubench.md), passed on as it is: the
    // platform parses it (benchmarks/score.h).
    std::optional<json::object> result;

    bool operator==(const Gpu&) const = default;
  };

  std::string benchmark_id;
  bool emulated = false;  // the machine's GPUs are emulated
  std::vector<Gpu> gpus;  // at most kMaxGpus
  // Machine phases only: the figures, or why there are none ("" = absent).
  std::optional<BenchmarkNetwork> network;
  std::string network_error;
  std::optional<BenchmarkStorage> storage;
  std::string storage_error;

  bool operator==(const BenchmarkResult&) const = default;
};
StatusOr<BenchmarkResult> ParseBenchmarkResult(const json::object& data);
json::object ToJson(const BenchmarkResult& r);
// The "network" and "storage" members of a result.
json::object ToJson(const BenchmarkNetwork& n);
json::object ToJson(const BenchmarkStorage& s);

// What gpunex-gpubench measured on one GPU (docs/gpubench.md), or an emulated GPU's
// figures: the `result` of a BenchmarkResult::Gpu, typed. TFLOPS and GB/s (1 GB = 1e9
// bytes). The platform scores and checks them (platform/benchmarks/score.h) and keeps
// them in this JSON form.
struct GpubenchFigures {
  double fp32_tflops = 0, fp16_tflops = 0;
  double fp16_tensor_tflops = 0, bf16_tensor_tflops = 0, tf32_tensor_tflops = 0;
  double mem_read_gbps = 0, mem_write_gbps = 0, mem_copy_gbps = 0, mem_triad_gbps = 0;
  // Sustained-load phase.
  double sustained_seconds = 0;
  double sustained_mean_tflops = 0;
  double sustained_min_over_median = 1;  // 1 = perfectly steady
  double sustained_cv = 0;
  double thermal_throttle_fraction = 0, power_throttle_fraction = 0;
  double max_temperature_c = 0, mean_power_w = 0;
  // PCIe link as seen under load; 0 = not reported.
  int64_t pcie_width = 0, pcie_gen = 0;
  bool sanity_ok = true;
  std::vector<std::string> sanity_failures;
  bool emulated = false;

  bool operator==(const GpubenchFigures&) const = default;
};
// Parses the JSON object gpunex-gpubench prints (the members this struct holds; others are
// ignored, as the tool adds detail over time). Field errors name the path under `path`.
StatusOr<GpubenchFigures> ParseGpubenchFigures(const json::object& o, const std::string& path);
json::object ToJson(const GpubenchFigures& f);

// A workload's output as text that a log chunk carries: valid UTF-8 with every kind of
// whitespace kept as it is (blank lines, spaces, \t \n \v \f \r), and each byte of an
// invalid UTF-8 sequence, NUL and the other control characters replaced by U+FFFD.
// `replaced`, when given, is increased by the number of replacements.
std::string SanitizeLogText(std::string_view raw, size_t* replaced = nullptr);

// `text` (valid UTF-8) cut into pieces of at most `max_bytes` (>= 4), never inside a
// UTF-8 sequence, so that each piece is valid UTF-8 too (a WebSocket text frame that is
// not is a protocol error). Empty for empty text.
std::vector<std::string> SplitLogText(std::string_view text, size_t max_bytes);

}  // namespace gpunex::protocol
