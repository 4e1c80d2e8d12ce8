#include "platform/listing/listing.h"

#include <array>
#include <utility>

namespace gpunex::platform::listing {
namespace {

constexpr std::array<std::pair<ListingState, std::string_view>, 12> kStates = {{
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
