#include "platform/listing/listing.h"

#include <gtest/gtest.h>

#include <functional>
#include <vector>

namespace gpunex::platform::listing {
namespace {

// The documented order (listing.h): each state with the fact that brings it.
struct Rule {
  ListingState state;
  std::function<bool(const ListingFacts&)> holds;
};
const std::vector<Rule>& Rules() {
  static const std::vector<Rule> rules = {
      {ListingState::kMissingFromMachine, [](const ListingFacts& f) { return !f.present; }},
      {ListingState::kDisabledByProvider, [](const ListingFacts& f) { return !f.enabled; }},
      {ListingState::kMachineOffline, [](const ListingFacts& f) { return !f.machine_online; }},
      {ListingState::kUnverifiedModel, [](const ListingFacts& f) { return !f.model_verified; }},
      {ListingState::kFailedBenchmark,
       [](const ListingFacts& f) { return f.benchmark == BenchmarkVerdict::kFailed; }},
      {ListingState::kAwaitingFirstBenchmark,
       [](const ListingFacts& f) { return f.benchmark == BenchmarkVerdict::kAwaitingFirst; }},
      {ListingState::kNoPriceSet, [](const ListingFacts& f) { return !f.priced; }},
      {ListingState::kInMaintenance, [](const ListingFacts& f) { return f.in_maintenance; }},
      {ListingState::kOutsideSchedule, [](const ListingFacts& f) { return !f.inside_schedule; }},
      {ListingState::kBenchmarking, [](const ListingFacts& f) { return f.benchmarking; }},
      {ListingState::kRented, [](const ListingFacts& f) { return f.rented; }},
  };
  return rules;
}

TEST(DecideListing, EveryCombinationOfFactsGetsTheFirstStateThatHolds) {
  int combinations = 0;
  for (int bits = 0; bits < (1 << 9); ++bits) {
    for (BenchmarkVerdict verdict :
         {BenchmarkVerdict::kPassed, BenchmarkVerdict::kAwaitingFirst, BenchmarkVerdict::kFailed}) {
      ListingFacts f;
      f.present = bits & 1;
      f.enabled = bits & 2;
      f.machine_online = bits & 4;
      f.benchmarking = bits & 8;
      f.rented = bits & 16;
      f.inside_schedule = bits & 32;
      f.in_maintenance = bits & 64;
      f.model_verified = bits & 128;
      f.priced = bits & 256;
      f.benchmark = verdict;
      f.benchmark_note = "benchmark: memory_triad_gbps 150 < 210 required";
      ListingState want = ListingState::kListed;
      for (const Rule& r : Rules()) {
        if (r.holds(f)) {
          want = r.state;
          break;
        }
      }
      const ListingDecision d = DecideListing(f);
      EXPECT_EQ(d.state, want) << "facts " << bits << " verdict " << BenchmarkVerdictCode(verdict);
      EXPECT_EQ(d.available(), want == ListingState::kListed);
      EXPECT_EQ(d.note.empty(), want == ListingState::kListed);
      ++combinations;
    }
  }
  EXPECT_EQ(combinations, 1536);
}

TEST(DecideListing, NotesSayWhy) {
  ListingFacts f;
  EXPECT_EQ(DecideListing(f).note, "");
  f.benchmark = BenchmarkVerdict::kAwaitingFirst;
  EXPECT_EQ(DecideListing(f).note, "awaiting its first benchmark");
  f.benchmark = BenchmarkVerdict::kFailed;
  f.benchmark_note = "benchmark: bf16_tensor_tflops 60.5 < 72.6 required";
  EXPECT_EQ(DecideListing(f).note, f.benchmark_note);
  f = {};
  f.inside_schedule = false;
  f.schedule_opens_at = ParseRfc3339("2026-12-01T08:00:00Z");
  EXPECT_EQ(DecideListing(f).note, "outside availability schedule until 2026-12-01T08:00:00.000Z");
  f = {};
  f.enabled = false;
  EXPECT_EQ(DecideListing(f).note, "not offered by the provider");
  f = {};
  f.model_verified = false;
  f.model_note = "it reports \"NVIDIA L4\" with 23034 MiB, which is not a NVIDIA H100 80GB HBM3";
  EXPECT_EQ(DecideListing(f).note, "unverified model: " + f.model_note);
  f = {};
  f.priced = false;
  EXPECT_EQ(DecideListing(f).note, "no price set");
  f.model_name = "NVIDIA L4";
  EXPECT_EQ(DecideListing(f).note, "no price set for NVIDIA L4");
}

TEST(DecideListing, RentedAndBenchmarkingStayOnTheMarketplace) {
  ListingFacts f;
  f.rented = true;
  ListingDecision d = DecideListing(f);
  EXPECT_TRUE(d.on_marketplace());
  EXPECT_FALSE(d.available());
  f.benchmarking = true;
  EXPECT_EQ(DecideListing(f).state, ListingState::kBenchmarking);
  EXPECT_TRUE(DecideListing(f).on_marketplace());
  f.machine_online = false;
  EXPECT_FALSE(DecideListing(f).on_marketplace());
}

TEST(ListingCodes, RoundTrip) {
  for (const Rule& r : Rules()) {
    EXPECT_EQ(ParseListingStateCode(ListingStateCode(r.state)), r.state);
  }
  EXPECT_EQ(ParseListingStateCode("listed"), ListingState::kListed);
  EXPECT_FALSE(ParseListingStateCode("Listed"));
  for (auto v :
       {BenchmarkVerdict::kPassed, BenchmarkVerdict::kAwaitingFirst, BenchmarkVerdict::kFailed}) {
    EXPECT_EQ(ParseBenchmarkVerdictCode(BenchmarkVerdictCode(v)), v);
  }
}

}  // namespace
}  // namespace gpunex::platform::listing
