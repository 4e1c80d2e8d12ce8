// The agent protocol (docs/agent-protocol.md): JSON text messages on the WebSocket
// between gpunex-agent and gpunexd at /api/v1/agent/connect. Both sides parse every
// message strictly with these functions: unknown types or fields, wrong types and
// out-of-range values are refused with the field at fault.
//
// Agent → platform: hello, heartbeat, ack, result, workload_event, logs, ping.
// Platform → agent: welcome, command, error, pong.
#pragma once

#include <cstdint>
#include <optional>
#include <variant>
#include <string>
#include <vector>

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

struct Host {
  std::string hostname, cpu_model, os, kernel, docker_version;
  int64_t cpu_cores = 0, ram_mb = 0, disk_total_mb = 0, disk_free_mb = 0;
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

struct WorkloadEvent {
  std::string workload_id;
  std::string state;  // starting | running | exited | failed | stopped
  std::optional<int64_t> exit_code;
  std::string reason;  // for failed/stopped: "timeout", "image pull failed: ...", ...
  std::string container_id;
};

struct Logs {
  std::string workload_id;
  std::string stream;  // stdout | stderr
  int64_t seq = 0;     // per workload, increasing
  std::string data;    // UTF-8 (invalid bytes replaced), at most kMaxLogChunk
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
  std::string kind;  // start_workload | stop_workload | run_benchmark
  json::object payload;
};

struct Error {
  std::string code;
  std::string message;
};

struct Pong {
  int64_t id = 0;
};

using AgentMessage = std::variant<Hello, Heartbeat, Ack, Result, WorkloadEvent, Logs, Ping>;
using PlatformMessage = std::variant<Welcome, Command, Error, Pong>;

// Parse a message received from the agent / the platform. Field errors name the path.
StatusOr<AgentMessage> ParseAgentMessage(std::string_view text);
StatusOr<PlatformMessage> ParsePlatformMessage(std::string_view text);

std::string Serialize(const AgentMessage& m);
std::string Serialize(const PlatformMessage& m);

// Replaces invalid UTF-8 and control characters (except \n, \t) so that a log chunk is
// safe to carry as a JSON string.
std::string SanitizeLogText(std::string_view raw);

}  // namespace gpunex::protocol
