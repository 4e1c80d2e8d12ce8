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
      {ListingState::kEngineDown, [](const ListingFacts& f) { return !f.engine_running; }},
      {ListingState::kNetworkNotIsolated,
       [](const ListingFacts& f) { return !f.network_isolated; }},
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
  for (int bits = 0; bits < (1 << 11); ++bits) {
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
      f.network_isolated = bits & 512;
      f.engine_running = bits & 1024;
      f.network_note = "network not isolated: a workload can reach another workload";
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
  EXPECT_EQ(combinations, 6144);
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

TEST(NetworkIsolationFact, OnlyACheckThatPassedLists) {
  using protocol::NetworkIsolation;
  EXPECT_TRUE(NetworkIsolationFact(NetworkIsolation{protocol::kIsolated, {}, "ok"}).isolated);
  EXPECT_EQ(NetworkIsolationFact(NetworkIsolation{protocol::kIsolated, {}, "ok"}).note, "");
  // No engine: no workload can run, and the agent checks before it starts one.
  EXPECT_TRUE(NetworkIsolationFact(NetworkIsolation{protocol::kIsolationNoEngine, {}, "no socket"})
                  .isolated);

  NetworkFact f = NetworkIsolationFact(std::nullopt);
  EXPECT_FALSE(f.isolated);
  EXPECT_EQ(f.note,
            "network isolation not checked: this machine's gpunex-agent is older than the "
            "check; update it (run the installer again)");
  f = NetworkIsolationFact(NetworkIsolation{protocol::kIsolationChecking, {}, ""});
  EXPECT_FALSE(f.isolated);
  EXPECT_EQ(f.note, "network isolation being checked by the agent");
  f = NetworkIsolationFact(NetworkIsolation{protocol::kIsolationUnverified, {}, "engine error"});
  EXPECT_FALSE(f.isolated);
  EXPECT_EQ(f.note, "network isolation could not be checked: engine error");
  f = NetworkIsolationFact(NetworkIsolation{"martian", {}, ""});
  EXPECT_FALSE(f.isolated) << "a state this platform does not know is not a pass";

  f = NetworkIsolationFact(
      NetworkIsolation{protocol::kNotIsolated, {protocol::kReachedWorkload}, "details"});
  EXPECT_FALSE(f.isolated);
  EXPECT_EQ(f.note,
            "network not isolated: a workload can reach another workload; fix: turn Docker's "
            "iptables rules on (\"iptables\": true, the default); then restart gpunex-agent "
            "(docs/trust.md)");
  f = NetworkIsolationFact(
      NetworkIsolation{protocol::kNotIsolated, {protocol::kReachedHost}, "details"});
  EXPECT_EQ(f.note,
            "network not isolated: a workload can reach the host's services; fix: run iptables "
            "-I INPUT -i gpxwl+ -j REJECT on the host; then restart gpunex-agent (docs/trust.md)");
  f = NetworkIsolationFact(NetworkIsolation{
      protocol::kNotIsolated, {protocol::kReachedWorkload, protocol::kReachedHost}, ""});
  EXPECT_TRUE(f.note.starts_with(
      "network not isolated: a workload can reach another workload and the host's services; "
      "fix: turn Docker's iptables rules on"))
      << f.note;

  // The note is the decision's.
  ListingFacts facts;
  facts.network_isolated = f.isolated;
  facts.network_note = f.note;
  EXPECT_EQ(DecideListing(facts).state, ListingState::kNetworkNotIsolated);
  EXPECT_EQ(DecideListing(facts).note, f.note);
  EXPECT_EQ(ListingStateCode(ListingState::kNetworkNotIsolated), "network_not_isolated");
}

TEST(EngineRunning, OnlyAnEngineThatDoesNotAnswerDelists) {
  using protocol::NetworkIsolation;
  const NetworkIsolation none{protocol::kIsolationNoEngine, {}, "no socket"};
  EXPECT_FALSE(EngineRunning(none, false, "")) << "real GPUs without an engine";
  EXPECT_FALSE(EngineRunning(none, false, "27.5.1"));
  EXPECT_FALSE(EngineRunning(none, true, "27.5.1")) << "emulated GPUs whose engine went away";
  EXPECT_TRUE(EngineRunning(none, true, "")) << "emulated GPUs that never had an engine";
  EXPECT_TRUE(EngineRunning(NetworkIsolation{protocol::kIsolated, {}, ""}, false, "27.5.1"));
  EXPECT_TRUE(EngineRunning(NetworkIsolation{protocol::kIsolationUnverified, {}, "x"}, false, ""));
  EXPECT_TRUE(EngineRunning(std::nullopt, false, ""));

  ListingFacts f;
  f.engine_running = false;
  f.network_isolated = false;  // the engine wins: it is what the provider fixes first
  const ListingDecision d = DecideListing(f);
  EXPECT_EQ(d.state, ListingState::kEngineDown);
  EXPECT_EQ(d.note, kEngineDownNote);
  EXPECT_FALSE(d.on_marketplace());
  EXPECT_EQ(ListingStateCode(ListingState::kEngineDown), "engine_down");
  EXPECT_EQ(ParseListingStateCode("engine_down"), ListingState::kEngineDown);
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
