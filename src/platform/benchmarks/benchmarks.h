// Automatic benchmarks (BEN-1..6): when a machine's GPUs are benchmarked, what a run
// sends to the agent, and what the platform does with the figures that come back.
//
// A run covers some GPUs of one machine, and the machine's network and storage when no
// workload is running there. It is scheduled by TickOnce() when an enabled, present GPU
// of an Online machine is due (scheduler.cc):
//   - it was never benchmarked (first connect, or a new GPU),
//   - the machine's inventory changed after its last benchmark (driver or hardware),
//   - its last benchmark is older than `interval_s` (periodic, weekly by default),
//   - its last run could not measure it and `retry_after_s` has passed,
// and the provider can ask for a run (Request). A GPU in an active workload (a rental)
// is never benchmarked: it is left for a later run. One run at a time per machine (a
// unique index on the active run holds it across instances). A run is written together
// with its run_benchmark command; the result comes back through Fleet::OnResult in the
// transaction that records it, so each result is applied exactly once.
//
// Applying a result (apply.cc) is four steps: parse (typed, common/agent_protocol.h),
// evaluate (pure: figures, score and thresholds per GPU, score.h), apply (this folder's
// tables, and the verdict reported to the fleet as a listing fact), notify (the
// provider's dashboard notification and email, notices.cc). A GPU that fails is delisted
// with the reason and the provider is told what failed and what to check; a delisted GPU
// whose re-run passes is listed again. A GPU never benchmarked is not listed ("awaiting
// its first benchmark").
//
// Authorization: the provider that owns the machine and admins read runs and request
// them; nobody else learns that they exist.
//
// The tables are benchmarks_store.h's. Thread-safety: thread-safe.
#pragma once

#include <functional>
#include <map>
#include <string>

#include "common/background.h"
#include "common/paging.h"
#include "common/status.h"
#include "common/thread_annotations.h"
#include "common/time.h"
#include "platform/accounts/accounts.h"
#include "platform/benchmarks/benchmark_run.h"
#include "platform/benchmarks/benchmarks_store.h"
#include "platform/benchmarks/score.h"
#include "platform/fleet/fleet.h"
#include "platform/store/db.h"

namespace gpunex::platform::benchmarks {

// Every measured score of the GPUs of `machine_id`, oldest first; with machine_id "", of
// every GPU benchmarked at or after `since` (the reliability score's benchmark part reads
// these).
StatusOr<std::vector<ScoreSample>> ScoreHistory(store::Tx& tx, const std::string& machine_id,
                                                Timestamp since = Timestamp{});

// What the marketplace shows of a machine's benchmarks: each GPU's latest performance
// score, and the network and storage figures of the newest run that measured them.
struct MachineFigures {
  std::map<std::string, double> scores;  // by GPU id (machine_gpus.id)
  std::optional<protocol::BenchmarkNetwork> network;
  std::optional<protocol::BenchmarkStorage> storage;
};
StatusOr<MachineFigures> LatestFigures(store::Tx& tx, const std::string& machine_id);

struct BenchmarksOptions {
  bool enabled = true;                 // false: nothing is scheduled and requests are refused
  int64_t interval_s = 7 * 24 * 3600;  // periodic re-run
  int64_t retry_after_s = 3600;        // after a run that could not measure a GPU
  // Spot checks: after a GPU passes, it is due again at a random time (exponential with
  // this mean, between an hour and interval_s) besides the periodic run, so that an agent
  // cannot tell a measured run from service; 0: none. docs/trust.md.
  int64_t spot_check_mean_s = 0;
  // A score that moves more than this share from the GPU's previous one is flagged to the
  // admins (dashboard notification): hardware does not change by itself.
  double score_jump_fraction = 0.25;
  int64_t run_timeout_s = 1800;  // a run without a result by then ends in error
  int64_t sustain_s = 60;        // the GPU sustained-load phase
  int64_t storage_file_mb = 1024;
  double storage_seconds = 8;  // per storage phase
  int64_t network_mb = 256;    // per direction
  int64_t pings = 20;          // round trips over the agent channel
  int tick_ms = 5000;
  Thresholds thresholds;                       // every model
  std::map<std::string, Thresholds> by_model;  // catalog id → overrides
  std::string mail_domain = "gpunex.local";
  std::string public_url;             // for links in emails
  std::function<void()> wake_outbox;  // after a commit that queued email; may be empty
  const Clock* clock = &SystemClock();
};

class Benchmarks {
 public:
  // Registers the run_benchmark result hook and the hello hook on `fleet`.
  // REQUIRES: before the fleet is scheduled.
  Benchmarks(store::Database& db, fleet::Fleet& fleet, BenchmarksOptions options);
  Benchmarks(const Benchmarks&) = delete;
  Benchmarks& operator=(const Benchmarks&) = delete;

  // Schedules the scheduler: TickOnce() every tick_ms.
  void ScheduleOn(Background& background);
  // Ends overdue runs in error and starts the runs that are due.
  Status TickOnce();

  // A run now, on every enabled GPU that is not rented. kFailedPrecondition when the
  // machine is offline, already benchmarking, or has no GPU that may be benchmarked now.
  StatusOr<BenchmarkRun> Request(const accounts::Principal& p, const std::string& machine_id);
  // Runs newest first, with each GPU's figures, score, reference figures and pass/fail.
  StatusOr<Page<BenchmarkRun>> List(const accounts::Principal& p, const std::string& machine_id,
                                    const PageRequest& page);
  // Each GPU's latest score, by GPU id (for the machine views; no authorization: the
  // caller has loaded the machine for the principal).
  StatusOr<std::map<std::string, GpuScore>> Scores(const std::string& machine_id);

  // The thresholds that apply to a model.
  const Thresholds& ThresholdsFor(const std::string& catalog_id) const;

 private:
  // scheduler.cc
  Status OnHello(store::Tx& tx, Timestamp now, const fleet::HelloFacts& hello);
  // Creates a run on `machine_id` in `tx` if GPUs are due (or, with `requested_by`, on
  // every GPU that may run now). Returns the run id, or "" when nothing is due.
  StatusOr<std::string> Schedule(store::Tx& tx, Timestamp now, const std::string& machine_id,
                                 const std::string& requested_by);
  Status EndOverdueRuns(Timestamp now);
  // apply.cc
  Status ApplyResult(store::Tx& tx, Timestamp now, const std::string& machine_id,
                     const protocol::Command& command, const protocol::Result& result);
  // Ends a run in error: no GPU measured, each due again after retry_after_s.
  Status FailRun(store::Tx& tx, Timestamp now, BenchmarkRun run, const std::string& error);
  // Fills each GPU's index, name, reference figures and thresholds for reading.
  Status Describe(store::Tx& tx, BenchmarkRun& run) const;

  store::Database& db_;
  fleet::Fleet& fleet_;
  const BenchmarksOptions options_;
};

}  // namespace gpunex::platform::benchmarks
