#include "platform/listing/listing.h"

#include <array>
#include <utility>

namespace gpunex::platform::listing {
namespace {

constexpr std::array<std::pair<ListingState, std::string_view>, 14> kStates = {{
    {ListingState::kListed, "listed"},
    {ListingState::kRented, "rented"},
    {ListingState::kBenchmarking, "benchmarking"},
    {ListingState::kDisabledByProvider, "disabled_by_provider"},
    {ListingState::kMissingFromMachine, "missing_from_machine"},
    {ListingState::kMachineOffline, "machine_offline"},
    {ListingState::kAwaitingFirstBenchmark, "awaiting_first_benchmark"},
    {ListingState::kFailedBenchmark, "failed_benchmark"},
    {ListingState::kOutsideSchedule, "outside_schedule"},
    {ListingState::kInMaintenance, "in_maintenance"},
    {ListingState::kUnverifiedModel, "unverified_model"},
    {ListingState::kNoPriceSet, "no_price_set"},
    {ListingState::kNetworkNotIsolated, "network_not_isolated"},
    {ListingState::kEngineDown, "engine_down"},
}};

constexpr std::array<std::pair<BenchmarkVerdict, std::string_view>, 3> kVerdicts = {{
    {BenchmarkVerdict::kPassed, "passed"},
    {BenchmarkVerdict::kAwaitingFirst, "awaiting_first"},
    {BenchmarkVerdict::kFailed, "failed"},
}};

}  // namespace

bool ListingDecision::on_marketplace() const {
  return state == ListingState::kListed || state == ListingState::kRented ||
         state == ListingState::kBenchmarking;
}

ListingDecision DecideListing(const ListingFacts& f) {
  if (!f.present) return {ListingState::kMissingFromMachine, "the GPU is missing from the machine"};
  if (!f.enabled) return {ListingState::kDisabledByProvider, "not offered by the provider"};
  if (!f.machine_online) return {ListingState::kMachineOffline, "the machine is offline"};
  if (!f.engine_running) return {ListingState::kEngineDown, kEngineDownNote};
  if (!f.network_isolated) {
    return {ListingState::kNetworkNotIsolated,
            f.network_note.empty() ? "network isolation not verified" : f.network_note};
  }
  if (!f.model_verified) {
    return {ListingState::kUnverifiedModel,
            f.model_note.empty() ? "unverified model" : "unverified model: " + f.model_note};
  }
  if (f.benchmark == BenchmarkVerdict::kFailed) {
    return {ListingState::kFailedBenchmark,
            f.benchmark_note.empty() ? "benchmark: below the minimum figures" : f.benchmark_note};
  }
  if (f.benchmark == BenchmarkVerdict::kAwaitingFirst) {
    return {ListingState::kAwaitingFirstBenchmark, "awaiting its first benchmark"};
  }
  if (!f.priced) {
    return {ListingState::kNoPriceSet,
            f.model_name.empty() ? "no price set" : "no price set for " + f.model_name};
  }
  if (f.in_maintenance) return {ListingState::kInMaintenance, "in maintenance"};
  if (!f.inside_schedule) {
    std::string note = "outside availability schedule";
    if (f.schedule_opens_at) note += " until " + FormatRfc3339(*f.schedule_opens_at);
    return {ListingState::kOutsideSchedule, std::move(note)};
  }
  if (f.benchmarking) return {ListingState::kBenchmarking, "being benchmarked"};
  if (f.rented) return {ListingState::kRented, "rented by a customer"};
  return {ListingState::kListed, ""};
}

bool EngineRunning(const std::optional<protocol::NetworkIsolation>& report, bool emulated,
                   std::string_view docker_version) {
  if (!report || report->state != protocol::kIsolationNoEngine) return true;
  return emulated && docker_version.empty();
}

NetworkFact NetworkIsolationFact(const std::optional<protocol::NetworkIsolation>& report) {
  if (!report) {
    return {false,
            "network isolation not checked: this machine's gpunex-agent is older than the "
            "check; update it (run the installer again)"};
  }
  const protocol::NetworkIsolation& r = *report;
  if (r.state == protocol::kIsolated || r.state == protocol::kIsolationNoEngine) return {};
  if (r.state == protocol::kIsolationChecking) {
    return {false, "network isolation being checked by the agent"};
  }
  if (r.state == protocol::kNotIsolated) {
    bool workload = false, host = false;
    for (const auto& x : r.reached) {
      workload = workload || x == protocol::kReachedWorkload;
      host = host || x == protocol::kReachedHost;
    }
    std::string note = "network not isolated: a workload can reach ";
    note += workload && host ? "another workload and the host's services"
            : workload       ? "another workload"
                             : "the host's services";
    note += "; fix:";
    if (workload) note += " turn Docker's iptables rules on (\"iptables\": true, the default);";
    if (host) note += " run iptables -I INPUT -i gpxwl+ -j REJECT on the host;";
    note += " then restart gpunex-agent (docs/trust.md)";
    return {false, std::move(note)};
  }
  // Unverified, or a state this platform does not know.
  return {false, "network isolation could not be checked: " +
                     (r.detail.empty() ? std::string("no reason given") : r.detail)};
}

std::string_view ListingStateCode(ListingState state) {
  for (const auto& [s, code] : kStates) {
    if (s == state) return code;
  }
  return "listed";
}

std::optional<ListingState> ParseListingStateCode(std::string_view code) {
  for (const auto& [s, c] : kStates) {
    if (c == code) return s;
  }
  return std::nullopt;
}

std::string_view BenchmarkVerdictCode(BenchmarkVerdict v) {
  for (const auto& [verdict, code] : kVerdicts) {
    if (verdict == v) return code;
  }
  return "passed";
}

std::optional<BenchmarkVerdict> ParseBenchmarkVerdictCode(std::string_view code) {
  for (const auto& [v, c] : kVerdicts) {
    if (c == code) return v;
  }
  return std::nullopt;
}

}  // namespace gpunex::platform::listing
