// The benchmarks folder's tables and the only SQL that touches them: benchmark_runs (one
// per run: reason, state, machine figures), benchmark_gpus (per GPU of a run: figures,
// score, failures) and gpu_benchmark_status (per GPU: its latest score and when it is due
// again). Other folders reach them through benchmarks.h.
//
// A BenchmarksStore is a view of one transaction.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/agent_protocol.h"
#include "common/paging.h"
#include "common/status.h"
#include "common/time.h"
#include "platform/benchmarks/benchmark_run.h"
#include "platform/store/db.h"
#include "platform/store/migrations.h"

namespace gpunex::platform::benchmarks {

struct GpuStatusRow {
  std::string gpu_id;
  std::string machine_id;
  std::optional<double> performance_score;
  std::optional<Timestamp> last_benchmark_at;
  std::optional<Timestamp>
      due_at;  // due before the periodic time (new GPU, hardware change, retry)
  // With due_at: why (spot_check, retry, new_gpu, hardware_change, first_connect); a due_at
  // without one is a retry.
  std::optional<BenchmarkReason> due_reason;
};

// One GPU's score in one run.
struct ScoreSample {
  std::string gpu_id;
  std::string run_id;
  Timestamp at;
  double score = 0;
  bool passed = false;
};

class BenchmarksStore {
 public:
  explicit BenchmarksStore(store::Tx& tx) : tx_(tx) {}

  // --- runs
  Status InsertRun(const BenchmarkRun& run);  // with its GPUs (state running)
  // The run without its GPUs' figures unless `with_gpus`.
  StatusOr<std::optional<BenchmarkRun>> FindRun(const std::string& run_id, bool with_gpus);
  StatusOr<std::optional<std::string>> RunningRunOn(const std::string& machine_id);
  StatusOr<int64_t> CountRunsOn(const std::string& machine_id);
  // A text that changes whenever a GPU's benchmark finishes (store/coordination.h).
  StatusOr<std::string> ChangeMark();
  // The newest finished run of the machine that measured its network (nullopt: none),
  // without its GPUs.
  StatusOr<std::optional<BenchmarkRun>> LatestMachineRun(const std::string& machine_id);
  // Running runs created before `cutoff`, with the machine they are on.
  StatusOr<std::vector<std::pair<std::string, std::string>>> OverdueRuns(Timestamp cutoff);
  // Newest first, with their GPUs.
  StatusOr<Page<BenchmarkRun>> ListRuns(const std::string& machine_id, const PageRequest& page);
  // Ends the run: its state, figures, failures and error, and each GPU's outcome.
  Status FinishRun(const BenchmarkRun& run);

  // --- per-GPU status
  StatusOr<std::map<std::string, GpuStatusRow>> StatusOf(
      const std::string& machine_id);  // by gpu id
  Status UpsertStatus(const GpuStatusRow& s);
  // Every measured score (passed or failed runs) of the machine's GPUs, or of every GPU
  // whose last benchmark is at or after `since` when machine_id is "", oldest first.
  StatusOr<std::vector<ScoreSample>> Scores(const std::string& machine_id, Timestamp since);
  // Machines with a GPU due now: explicitly (due_at) or periodically (benchmarked before
  // `periodic_cutoff`).
  StatusOr<std::vector<std::string>> MachinesDue(Timestamp now, Timestamp periodic_cutoff);

 private:
  store::Tx& tx_;
};

std::vector<store::Migration> BenchmarksMigrations();

}  // namespace gpunex::platform::benchmarks
