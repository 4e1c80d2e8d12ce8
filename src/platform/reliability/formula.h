// The reliability score (REL-1..4, SPEC §13a) as pure functions: what counts as scheduled
// and online time, the weights, the three components and the score. docs/reliability-score.md
// explains each rule with a worked example (formula_test.cc checks it digit for digit).
//
//   R = 100 · U^0.5 · C^0.3 · B^0.2 over the last 30 days, per machine; per provider the
//   mean of its machines' scores weighted by their GPUs.
//
// Weights: an instant of age a days weighs w = 2^(−a/7). Time is weighted second by second
// (a stretch [s, e) weighs ∫ w dt); a job ending or a telemetry sample weighs w at its time.
//
// Time (U): each second inside the machine's availability schedule is scheduled time,
// except seconds excused by planned maintenance. A maintenance window declared at least
// 24 h before its start is planned; planned windows excuse at most 8 h in 30 days: a
// window's allowance is min(its length, 8 h − the allowances of the planned windows that
// started in the 30 days before it), and its first `allowance` seconds of scheduled time are
// excused. Other maintenance (declared later, or beyond the allowance) hides the GPUs and
// its scheduled seconds count as down. A scheduled second is up when the machine is online
// and not in maintenance. U = Σ w·up / Σ w·scheduled (1 with no scheduled time yet).
//
// Jobs (C): workloads that ended with the provider at fault count against; those ended by
// the platform are left out; the rest (the customer's stop, the container's own exit)
// count as ok. C = (Σ w·ok + 5·0.95) / (Σ w·ended + 5).
//
// Benchmarks (B): per GPU min(1, latest / baseline) · (1 − 0.5 · throttled fraction), where
// baseline is the median of its first three passing runs (of those it has, while fewer)
// and latest its latest measured score; the throttled fraction is the weighted share of its
// telemetry samples taken under load (utilization ≥ 50 %, fleet::kLoadedUtilizationPct)
// that report thermal or power throttling. A GPU without a passing run or without samples
// under load counts 1 for that part. B is the mean over the machine's present GPUs (1
// without GPUs).
//
// A machine is "new" until it has had 24 h of scheduled time in all; its score is then
// provisional, computed the same way.
//
// Thread-safety: pure functions over values.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/time.h"
#include "platform/availability/schedule.h"
#include "platform/fleet/end_party.h"

namespace gpunex::platform::reliability {

using availability::Interval;

inline constexpr Duration kHalfLife = 7 * kOneDay;
inline constexpr Duration kWindow = 30 * kOneDay;
inline constexpr Duration kNewUntilScheduled = 24 * kOneHour;
inline constexpr Duration kPlannedNotice = 24 * kOneHour;
inline constexpr Duration kPlannedAllowance = 8 * kOneHour;
inline constexpr Duration kAllowancePeriod = 30 * kOneDay;
inline constexpr double kPriorJobs = 5;
inline constexpr double kPriorCompletion = 0.95;
inline constexpr double kDefaultThreshold = 80;

// 2^(−age/7 days) for an event at `at` seen at `now` (age below 0 counts as 0).
double Weight(Timestamp at, Timestamp now);
// ∫ over [a, b) of Weight(t, now) dt, in seconds.
double WeightedSeconds(Timestamp a, Timestamp b, Timestamp now);
// The same integral relative to a fixed epoch instead of `now`: ∫ 2^((t − epoch)/7 days) dt
// in seconds. Sums of these stay valid as time passes (only their ratio, or the factor
// Weight(epoch, now), is needed), which is what lets the score be kept incrementally.
double EpochWeightedSeconds(Timestamp a, Timestamp b, Timestamp epoch);
// 2^((at − epoch)/7 days).
double EpochWeight(Timestamp at, Timestamp epoch);

// A declared maintenance window that was not cancelled before it started.
struct Maintenance {
  std::string id;
  Timestamp start;
  Timestamp end;
  Timestamp declared_at;
};
bool IsPlanned(const Maintenance& m);
// The allowance of each planned window, by id (windows not planned are absent).
std::map<std::string, Duration> Allowances(const std::vector<Maintenance>& windows);

// What decides the class of each second.
struct TimeFacts {
  // The scheduled intervals, sorted and disjoint; they must cover the time classified and
  // reach back to the start of any planned window that overlaps it.
  std::vector<Interval> schedule;
  std::vector<Interval> online;  // when the machine was online, sorted and disjoint
  // Every window that overlaps the time classified, and the planned windows that started
  // in the 30 days before those (for the allowances).
  std::vector<Maintenance> maintenance;
};

// A stretch of uniform class.
struct Piece {
  Timestamp start;
  Timestamp end;
  bool scheduled = false;  // counts as scheduled time
  bool up = false;         // counts as online scheduled time (implies scheduled)
  bool excused = false;    // inside the schedule but excused by planned maintenance
  bool maintenance = false;
};
// [from, to) cut into pieces, in time order, covering it exactly.
std::vector<Piece> ClassifyTime(const TimeFacts& facts, Timestamp from, Timestamp to);

struct JobEnd {
  Timestamp at;
  fleet::EndParty party = fleet::EndParty::kProvider;
};
// Whether an ending counts (not the platform's), and whether it counts as ok.
bool JobCounts(const JobEnd& j);
bool JobOk(const JobEnd& j);

struct GpuFacts {
  std::string gpu_id;
  std::vector<double> passing_scores;  // its passing runs' scores, oldest first
  std::optional<double> latest;        // its latest measured score
  double loaded_samples = 0;           // weighted samples under load
  double throttled_samples = 0;        // of those, weighted samples reporting throttling
};
// The median of the first three passing scores (of those there are); none without any.
std::optional<double> Baseline(const std::vector<double>& passing_scores);
// min(1, latest / baseline) · (1 − 0.5 · throttled / loaded).
double GpuBenchmark(std::optional<double> latest, std::optional<double> baseline,
                    double loaded_samples, double throttled_samples);

struct Components {
  double uptime = 1;
  double completion = 1;
  double benchmark = 1;
};
// (Σ w·ok + 5·0.95) / (Σ w·ended + 5).
double Completion(double weighted_ok, double weighted_ended);
// 100 · U^0.5 · C^0.3 · B^0.2.
double Score(const Components& c);

// A machine's history over the window, for the reference computation.
struct History {
  Timestamp now;
  TimeFacts time;  // covering [now − 30 days, now)
  std::vector<JobEnd> jobs;
  std::vector<GpuFacts> gpus;           // present GPUs; samples already weighted at `now`
  Duration scheduled_before_window{0};  // for "new": scheduled time older than the window
};

struct Result {
  Components components;
  double score = 100;
  bool is_new = true;
  double scheduled_weighted_s = 0;
  double up_weighted_s = 0;
  Duration scheduled_total{0};  // unweighted, in the window plus before it
};
// The score from the whole history: the definition that the incremental computation
// (reliability.h) follows, used by tests and the docs' example.
Result Compute(const History& h);

// The provider's score: the GPU-weighted mean of its machines' scores (machines without
// GPUs weigh 1).
struct MachineScore {
  double score = 100;
  int gpus = 0;
};
double ProviderScore(const std::vector<MachineScore>& machines);

}  // namespace gpunex::platform::reliability
