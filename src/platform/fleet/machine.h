// The fleet's domain types: machines and their GPUs as their agents report them, the
// Online/Offline intervals, and workloads. Plain values; the API encodes them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/agent_protocol.h"
#include "common/enum_names.h"
#include "common/time.h"
#include "platform/listing/listing.h"

namespace gpunex::platform::fleet {

// A machine is Online while its agent keeps in touch, Offline otherwise; it goes back and
// forth, each time opening a new interval (machine_intervals) with the same state.
enum class MachineStatus { kOnline, kOffline };
inline constexpr EnumNames<MachineStatus, 2> kMachineStatusNames{{{
    {MachineStatus::kOnline, "online"},
    {MachineStatus::kOffline, "offline"},
}}};
inline std::string_view Name(MachineStatus s) { return kMachineStatusNames.Name(s); }

// Why a machine's interval ended (machine_intervals.end_reason): its agent connected (it
// goes online), its heartbeats resumed after a gap (online again), or stopped coming (it
// goes offline).
enum class IntervalEndReason { kAgentConnected, kHeartbeatResumed, kMissedHeartbeats };
inline constexpr EnumNames<IntervalEndReason, 3> kIntervalEndReasonNames{{{
    {IntervalEndReason::kAgentConnected, "agent_connected"},
    {IntervalEndReason::kHeartbeatResumed, "heartbeat_resumed"},
    {IntervalEndReason::kMissedHeartbeats, "missed_heartbeats"},
}}};
inline std::string_view Name(IntervalEndReason r) { return kIntervalEndReasonNames.Name(r); }

// What an entry of a machine's history (machine_events) records: its agent registered it,
// connected or disconnected; it went online or offline (a MachineStatus: EventOf); its
// GPUs changed; its network isolation was checked again; its benchmark scores jumped
// (benchmarks/).
enum class MachineEventKind {
  kRegistered,
  kConnected,
  kDisconnected,
  kOnline,
  kOffline,
  kInventoryChanged,
  kNetworkIsolation,
  kBenchmarkJump,
};
inline constexpr EnumNames<MachineEventKind, 8> kMachineEventKindNames{{{
    {MachineEventKind::kRegistered, "registered"},
    {MachineEventKind::kConnected, "connected"},
    {MachineEventKind::kDisconnected, "disconnected"},
    {MachineEventKind::kOnline, "online"},
    {MachineEventKind::kOffline, "offline"},
    {MachineEventKind::kInventoryChanged, "inventory_changed"},
    {MachineEventKind::kNetworkIsolation, "network_isolation"},
    {MachineEventKind::kBenchmarkJump, "benchmark_jump"},
}}};
inline std::string_view Name(MachineEventKind k) { return kMachineEventKindNames.Name(k); }
// The event of a machine's move to status `s`.
constexpr MachineEventKind EventOf(MachineStatus s) {
  return s == MachineStatus::kOnline ? MachineEventKind::kOnline : MachineEventKind::kOffline;
}

// What NVML says of a GPU beyond its identity.
struct GpuInfo {
  std::string driver_version;
  std::string cuda_driver_version;
  int64_t pcie_gen_max = 0, pcie_gen_current = 0, pcie_width_max = 0, pcie_width_current = 0;
  int64_t power_limit_w = 0;

  bool operator==(const GpuInfo&) const = default;
};

struct MachineGpu {
  std::string id;
  std::string machine_id;
  int64_t index = 0;
  std::string uuid;
  std::string name;        // as NVML reports it
  std::string catalog_id;  // "other" when not in the catalog
  int64_t vram_mb = 0;
  bool emulated = false;
  bool present = true;  // in the machine's last inventory
  bool enabled = true;  // designated by the provider
  GpuInfo info;
  std::optional<protocol::GpuSample> telemetry;  // the latest heartbeat's (uuid left empty)
  std::optional<Timestamp> telemetry_at;
  // What the benchmarks reported (benchmarks/), kept as a listing fact.
  listing::BenchmarkVerdict benchmark_verdict = listing::BenchmarkVerdict::kPassed;
  std::string benchmark_note;
  bool benchmarking = false;
  // What pricing/ reported: its model has a price for this machine (a listing fact).
  bool priced = false;
  // The listing decision (listing/listing.h) and since when it holds.
  listing::ListingDecision listing;
  Timestamp listing_since;
  Timestamp created_at;
};

// What availability/ says of a machine now (listing facts).
struct AvailabilityFacts {
  bool inside_schedule = true;
  std::optional<Timestamp> opens_at;  // when outside: when it is inside again
  bool in_maintenance = false;

  friend bool operator==(const AvailabilityFacts&, const AvailabilityFacts&) = default;
};

// A GPU sample at or above this utilization is taken under load.
inline constexpr int64_t kLoadedUtilizationPct = 50;

struct MachineInterval {
  MachineStatus state = MachineStatus::kOffline;
  Timestamp started_at;
  std::optional<Timestamp> ended_at;  // none: the open one
  std::optional<IntervalEndReason> end_reason;
};

// What one provider has: its machines, those online, and their GPUs.
struct MachineCounts {
  int64_t machines = 0;
  int64_t online = 0;
  int64_t gpus = 0;
};

// The longest machine name, in bytes (PATCH /machines/{id}).
inline constexpr size_t kMaxMachineName = 100;

struct Machine {
  std::string id;
  std::string provider_id;
  std::string name;
  MachineStatus status = MachineStatus::kOffline;
  bool emulated = false;
  std::string agent_version;
  protocol::Host host;
  Timestamp created_at;
  Timestamp last_seen;
  Timestamp status_since;
  std::vector<MachineGpu> gpus;  // by index
};

// One machine with what GET /machines/{id} shows beyond the list.
struct MachineDetail {
  Machine machine;
  std::vector<MachineInterval> recent_intervals;  // newest first, at most 50
  bool connected_here = false;                    // its agent's session is on this gpunexd instance
};

}  // namespace gpunex::platform::fleet
