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
  std::optional<std::string> end_reason;
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
