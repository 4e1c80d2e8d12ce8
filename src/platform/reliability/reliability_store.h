// The reliability folder's tables and the only SQL that touches them:
//   reliability_machines   per machine: how far its time is accounted, the running sums
//                          of the score's parts, and the score as last computed;
//   reliability_gpus       per GPU: its benchmark baseline and latest score, and the
//                          running sums of its telemetry under load;
//   reliability_hours      per machine and UTC hour: what that hour added to the sums, so
//                          that it can be taken out again when it leaves a window;
//   reliability_gpu_hours  the same per GPU for telemetry;
//   reliability_jobs       every workload ending counted, once;
//   reliability_days       one snapshot of each machine's score per UTC day (history);
//   reliability_progress   one row: how far the fleet-wide inputs are read.
//
// The running sums are "epoch-weighted" (formula.h EpochWeightedSeconds, EpochWeight,
// relative to kEpoch): adding an hour or an event is a sum, taking it out a subtraction,
// and the score needs only their ratios (or one factor), whatever the time.
//
// A ReliabilityStore is a view of one transaction.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "common/time.h"
#include "platform/fleet/end_party.h"
#include "platform/store/db.h"
#include "platform/store/migrations.h"

namespace gpunex::platform::reliability {

// The origin of the epoch weights (2026-01-01T00:00:00Z). Weights grow by 2 a week, so a
// double holds them until about 2045; a later release moves the epoch (multiplying every
// stored sum by the same factor).
inline constexpr Timestamp kEpoch = FromUnixMicros(int64_t{1767225600} * 1'000'000);

// Sums over the windows the figures cover, unweighted, in microseconds.
struct WindowSums {
  int64_t scheduled_us = 0;
  int64_t up_us = 0;
};

struct MachineState {
  std::string machine_id;
  std::string provider_id;
  int64_t gpus = 0;
  Timestamp accrued_until;
  // Epoch-weighted, over the last 30 days.
  double scheduled_e = 0;
  double up_e = 0;
  double ok_e = 0;
  double ended_e = 0;
  int64_t scheduled_total_us = 0;  // since the machine came, unweighted
  WindowSums day, week, month;     // 24 h, 7 d, 30 d
  // The score as last computed.
  double uptime = 1;
  double completion = 1;
  double benchmark = 1;
  double score = 100;
  bool is_new = true;
  Timestamp computed_at;
  bool below_threshold = false;
  int64_t snapshot_day = 0;  // the UTC day (days since the epoch) of the last snapshot
};

struct GpuState {
  std::string gpu_id;
  std::string machine_id;
  std::optional<double> baseline;
  std::optional<double> latest;
  std::optional<Timestamp> latest_at;
  double loaded_e = 0;
  double throttled_e = 0;
};

// What one hour of one machine added.
struct HourRow {
  std::string machine_id;
  int64_t hour = 0;  // hours since the Unix epoch
  int64_t scheduled_us = 0;
  int64_t up_us = 0;
  double scheduled_e = 0;
  double up_e = 0;
  double ok_e = 0;
  double ended_e = 0;
};

struct GpuHourRow {
  std::string gpu_id;
  std::string machine_id;
  int64_t hour = 0;
  double loaded_e = 0;
  double throttled_e = 0;
};

struct JobRow {
  std::string workload_id;
  std::string machine_id;
  Timestamp at;
  fleet::EndParty party = fleet::EndParty::kProvider;
  std::string reason;
};

struct DayRow {
  std::string machine_id;
  int64_t day = 0;
  double score = 100;
  bool is_new = true;
  int64_t gpus = 0;
};

struct Progress {
  Timestamp jobs_until;
  int64_t telemetry_minute = 0;  // minutes before this one are read
  Timestamp benchmarks_until;
  int64_t expired_day_hour = 0;  // hours before these are out of each window
  int64_t expired_week_hour = 0;
  int64_t expired_month_hour = 0;
};

class ReliabilityStore {
 public:
  explicit ReliabilityStore(store::Tx& tx) : tx_(tx) {}

  StatusOr<std::optional<Progress>> LoadProgress();
  Status SaveProgress(const Progress& p);

  StatusOr<std::optional<MachineState>> FindMachine(const std::string& machine_id);
  // Up to `limit` states with machine_id > after, by machine id.
  StatusOr<std::vector<MachineState>> MachinesAfter(const std::string& after, int limit);
  StatusOr<std::vector<MachineState>> MachinesOf(const std::string& provider_id);
  Status InsertMachine(const MachineState& m);
  Status UpdateMachine(const MachineState& m);
  // Adds to the running sums of one machine (events read fleet-wide).
  Status AddToMachine(const std::string& machine_id, const HourRow& delta, const WindowSums& day,
                      const WindowSums& week, const WindowSums& month);

  StatusOr<std::vector<GpuState>> GpusOf(const std::string& machine_id);
  StatusOr<std::vector<GpuState>> AllGpus();
  Status UpsertGpu(const GpuState& g);

  // Adds `delta` to its hour's row (creating it).
  Status AddHour(const HourRow& delta);
  Status AddGpuHour(const GpuHourRow& delta);
  // The rows of hours in [from_hour, to_hour), every machine's.
  StatusOr<std::vector<HourRow>> HoursBetween(int64_t from_hour, int64_t to_hour);
  StatusOr<std::vector<GpuHourRow>> GpuHoursBetween(int64_t from_hour, int64_t to_hour);
  // The latest hour with throttled samples of the GPU.
  StatusOr<std::optional<int64_t>> LastThrottledHour(const std::string& gpu_id);
  Status DeleteHoursBefore(int64_t hour);

  // Inserts the ending unless it was counted; whether it was new.
  StatusOr<bool> InsertJob(const JobRow& j);
  StatusOr<std::vector<JobRow>> JobsOf(const std::string& machine_id, Timestamp since);

  Status UpsertDay(const DayRow& d);
  StatusOr<std::vector<DayRow>> DaysOf(const std::string& machine_id, int64_t from_day);

 private:
  store::Tx& tx_;
};

// The folder's migrations: its part of version 10.
std::vector<store::Migration> ReliabilityMigrations();

}  // namespace gpunex::platform::reliability
