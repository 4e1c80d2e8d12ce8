// Whether a GPU is offered to customers, and why not: the one place that decides it.
//
// Each part of the platform reports facts about a GPU: the fleet whether it is present,
// designated by its provider, on a machine that is online and whose agent found its
// workloads network-isolated, and in an active workload (rented); the benchmarks whether
// it passed, is waiting for its first run, failed, or is being measured now; pricing/
// whether its provider set a price for its model; availability whether the machine is
// inside its schedule or in maintenance. DecideListing turns those facts into a state and
// a human note. It is pure: the fleet stores its answer (machine_gpus.listing_state /
// listing_note), the dashboard shows the note and switches on the state's code.
//
// States, in the order they win when several apply (the first that holds is the answer):
//   missing_from_machine, disabled_by_provider, machine_offline, engine_down,
//   network_not_isolated,
//   unverified_model, failed_benchmark, awaiting_first_benchmark, no_price_set,
//   in_maintenance, outside_schedule, benchmarking, rented, listed.
// The last three are on the marketplace: a GPU being benchmarked or rented still belongs
// to its offer (counted in the offer's total), but only a "listed" GPU can be rented now.
//
// Thread-safety: pure functions over values.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "common/agent_protocol.h"
#include "common/time.h"

namespace gpunex::platform::listing {

enum class ListingState {
  kListed,
  kRented,
  kBenchmarking,
  kDisabledByProvider,
  kMissingFromMachine,
  kMachineOffline,
  kAwaitingFirstBenchmark,
  kFailedBenchmark,
  kOutsideSchedule,
  kInMaintenance,
  kUnverifiedModel,
  kNoPriceSet,
  kNetworkNotIsolated,
  kEngineDown,
};

// What the benchmarks say of a GPU.
enum class BenchmarkVerdict {
  kPassed,         // its last run passed, or benchmarks are not required
  kAwaitingFirst,  // never benchmarked yet
  kFailed,         // its last measured run failed the thresholds (the note says how)
};

struct ListingFacts {
  bool present = true;         // in the machine's last inventory
  bool enabled = true;         // designated by the provider
  bool machine_online = true;  // the machine's agent is connected and heartbeating
  // Its container engine answers its agent (EngineFact).
  bool engine_running = true;
  // Its agent found workloads kept from each other and from the host's services
  // (NetworkIsolationFact); the note says what it found and the fix when not.
  bool network_isolated = true;
  std::string network_note;
  // Its NVML name and VRAM are those of the catalog model it is counted as
  // (gpunex::ReportsModel); the note says what it reported when not.
  bool model_verified = true;
  std::string model_note;
  BenchmarkVerdict benchmark = BenchmarkVerdict::kPassed;
  std::string benchmark_note;  // for kFailed: "benchmark: <what failed>"
  bool benchmarking = false;   // a benchmark run is measuring it now
  bool rented = false;         // in an active workload
  // From the availability schedule and maintenance windows (all in by default).
  bool inside_schedule = true;
  std::optional<Timestamp> schedule_opens_at;  // when outside: the next time it is inside
  bool in_maintenance = false;
  // From pricing/: the provider (or a machine override) set an hourly price for the GPU's
  // model. A model without a price is not offered.
  bool priced = true;
  std::string model_name;  // for the note: "no price set for NVIDIA L4"
};

struct ListingDecision {
  ListingState state = ListingState::kListed;
  // A sentence for the provider ("awaiting its first benchmark"); "" for kListed.
  std::string note;

  // Belongs to the marketplace (listed, rented or being benchmarked).
  bool on_marketplace() const;
  // Can be rented now.
  bool available() const { return state == ListingState::kListed; }
};

ListingDecision DecideListing(const ListingFacts& facts);

// The listing fact of a machine's network isolation report (Host::network_isolation;
// nullopt from an agent older than the check). Isolated: the check passed, or no Docker
// engine answers (nothing can run there; the agent checks before it starts a workload).
// Otherwise the note says why not and what the provider should do.
struct NetworkFact {
  bool isolated = true;
  std::string note;  // "" when isolated
};
NetworkFact NetworkIsolationFact(const std::optional<protocol::NetworkIsolation>& report);

// Whether a machine's container engine answers, from its agent's report (no_engine says it
// does not; the agent pings the engine every few seconds between checks). A machine of
// emulated GPUs whose agent never reached an engine (`docker_version` empty: tests and
// demos run without Docker) counts as running, as it always has: its workloads fail to
// start with a clear reason. Any other machine without an engine is delisted until its
// agent's check passes again.
bool EngineRunning(const std::optional<protocol::NetworkIsolation>& report, bool emulated,
                   std::string_view docker_version);
inline constexpr char kEngineDownNote[] =
    "Docker is not running on this machine, so no container can start there: start the "
    "Docker Engine (sudo systemctl start docker). The GPUs are offered again as soon as "
    "gpunex-agent's check passes";

// The stable code of a state ("listed", "machine_offline", ...), as stored and sent.
std::string_view ListingStateCode(ListingState state);
// The state of a code; nullopt for an unknown code.
std::optional<ListingState> ParseListingStateCode(std::string_view code);

// The stable code of a verdict ("passed", "awaiting_first", "failed"), as stored.
std::string_view BenchmarkVerdictCode(BenchmarkVerdict v);
std::optional<BenchmarkVerdict> ParseBenchmarkVerdictCode(std::string_view code);

}  // namespace gpunex::platform::listing
