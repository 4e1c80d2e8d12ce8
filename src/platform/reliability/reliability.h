// The reliability score (REL-1..5), kept incrementally: each machine's score and its
// parts as formula.h defines them, per provider the GPU-weighted mean, the figures beside
// it (uptime over 24 h, 7 d and 30 d, outages), the events that moved it, and a daily
// history.
//
// How it is kept (RefreshOnce, at least every refresh_ms and within a second of any
// change): every machine's time since it was last accounted is classified (formula.h
// ClassifyTime, from its schedule, maintenance windows and online intervals) and added to
// running sums per machine and to a row per machine and hour; workload endings, benchmark
// scores and telemetry under load are read from where they were last read and added the
// same way; hours that leave the 24 h, 7 d and 30 d windows are subtracted from the sums.
// The sums are epoch-weighted (reliability_store.h), so the score is a few divisions per
// machine and nothing is rescanned. Change detection polls three indexed maxima (machine
// intervals, workload endings, benchmark times), so it works with several gpunexd
// instances on one PostgreSQL, where an advisory lock keeps one refresh at a time.
//
// A machine's score crossing the threshold (default 80) tells its provider, once each way
// (recovered at threshold + 2, so that it does not flap).
//
// Differences from formula.h's reference Compute: the 30-day window moves by whole UTC
// hours (an hour leaves it when its end is 30 days old), and time is accounted when a
// refresh runs, from the intervals stored by then.
//
// Authorization: a machine's provider and admins read its score; a provider reads its own.
//
// The tables are reliability_store.h's. Thread-safety: thread-safe.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/background.h"
#include "common/enum_names.h"
#include "common/paging.h"
#include "common/status.h"
#include "common/thread_annotations.h"
#include "common/time.h"
#include "platform/accounts/accounts.h"
#include "platform/availability/availability.h"
#include "platform/notify/notify.h"
#include "platform/reliability/formula.h"
#include "platform/reliability/reliability_store.h"
#include "platform/store/db.h"

namespace gpunex::platform::reliability {

// On PostgreSQL every change to the scores (a refresh, a machine's accrual) first takes
// this transaction-scoped advisory lock, so that the instances of a cluster change them one
// at a time (docs/reliability-score.md, "How it is kept").
inline constexpr int64_t kScoresLockKey = 7403010;

struct ReliabilityOptions {
  double threshold = kDefaultThreshold;
  double recover_margin = 2;
  int refresh_ms = 60'000;  // a full refresh at least this often
  int poll_ms = 1000;       // how often changes are looked for
  // Machines more than 6 h behind (a first refresh over an existing fleet, a long stop) are
  // accounted about this many machine-days per transaction, so that none holds the writer
  // long.
  int64_t catch_up_days = 2000;
  notify::NoticeSettings notices;
  const Clock* clock = &SystemClock();
};

// What kind of thing moved a score: downtime in scheduled time, a job ended on the
// provider's side, a GPU benchmarked below its baseline, a GPU throttling under load.
enum class ReliabilityEventKind { kOutage, kJobEnded, kBenchmarkDegraded, kThrottling };
inline constexpr EnumNames<ReliabilityEventKind, 4> kReliabilityEventKindNames{{{
    {ReliabilityEventKind::kOutage, "outage"},
    {ReliabilityEventKind::kJobEnded, "job_ended"},
    {ReliabilityEventKind::kBenchmarkDegraded, "benchmark_degraded"},
    {ReliabilityEventKind::kThrottling, "throttling"},
}}};
inline std::string_view Name(ReliabilityEventKind k) { return kReliabilityEventKindNames.Name(k); }

// What moved a score.
struct ReliabilityEvent {
  Timestamp at;
  ReliabilityEventKind kind = ReliabilityEventKind::kOutage;
  std::string description;
  std::optional<int64_t> duration_s;
  double weight = 1;
  double impact = 0;  // the score now minus the score had it not happened (≤ 0)
  std::string machine_id;
  std::optional<std::string> gpu_id;
  std::string key;  // unique with `at`, for paging
};

struct DayScore {
  int64_t day = 0;  // days since the Unix epoch (UTC)
  double score = 100;
  bool is_new = true;
};

struct MachineLine {
  std::string machine_id;
  std::string name;
  int64_t gpus = 0;
  double score = 100;
  bool is_new = true;
  Components components;
  std::optional<double> uptime_30d;
};

struct ReliabilityView {
  std::string machine_id;  // "" for a provider's
  double score = 100;
  bool is_new = true;
  Components components;
  std::optional<double> uptime_24h, uptime_7d, uptime_30d;
  double scheduled_hours = 0;  // since the machine came (the "new" status counts these)
  int64_t outages = 0;         // unplanned, inside scheduled time, last 30 days
  int64_t outage_s = 0;
  double threshold = kDefaultThreshold;
  Timestamp computed_at;
  Page<ReliabilityEvent> events;  // newest first
  std::vector<DayScore> history;  // oldest first; the last is today's, live
  std::vector<std::string> advice;
  std::vector<MachineLine> machines;  // a provider's
};

// What the marketplace shows of a machine's score; nullopt before its first refresh
// (the machine is "new" with the provisional 100 then).
struct OfferScore {
  double score = 100;
  bool is_new = true;
  std::optional<double> uptime_30d;
};
StatusOr<std::optional<OfferScore>> OfferScoreOf(store::Tx& tx, const std::string& machine_id);

class Reliability {
 public:
  // Registers a schedule hook on `availability`. REQUIRES: before availability is scheduled.
  Reliability(store::Database& db, availability::Availability& availability,
              ReliabilityOptions options);
  Reliability(const Reliability&) = delete;
  Reliability& operator=(const Reliability&) = delete;

  // Schedules RefreshIfDue() every poll_ms.
  void ScheduleOn(Background& background);
  // Refreshes every score when something they depend on changed, or refresh_ms after the
  // last refresh.
  Status RefreshIfDue() EXCLUDES(due_mu_);
  // Accounts everything up to now and recomputes every score.
  Status RefreshOnce() EXCLUDES(cache_mu_);

  StatusOr<ReliabilityView> ForMachine(const accounts::Principal& p, const std::string& machine_id,
                                       const PageRequest& events_page);
  StatusOr<ReliabilityView> ForProvider(const accounts::Principal& p,
                                        const PageRequest& events_page);

  // Accounts one machine's time up to `now` in `tx` (before its schedule changes), and
  // nothing else: a request that changes a schedule does not refresh the fleet.
  Status AccrueMachine(store::Tx& tx, Timestamp now, const std::string& machine_id)
      EXCLUDES(cache_mu_);

 private:
  struct CachedSchedule {
    Timestamp updated_at;
    Timestamp from, to;
    std::vector<Interval> intervals;
  };
  struct Inputs;
  // Accounts up to `now` every machine (but `must`) that is not far behind, and a share of
  // those that are; *behind_out: how many were left for another transaction.
  Status Refresh(store::Tx& tx, Timestamp now, const std::string& must, int64_t* behind_out)
      EXCLUDES(cache_mu_);
  Status Accrue(store::Tx& tx, Timestamp now, MachineState& m, const Inputs& in,
                const Progress& progress) EXCLUDES(cache_mu_);
  std::vector<Interval> Scheduled(const std::string& machine_id, Timestamp updated_at,
                                  const availability::Schedule& s, Timestamp from, Timestamp to)
      EXCLUDES(cache_mu_);
  Status Rescore(store::Tx& tx, Timestamp now, MachineState& m,
                 const std::vector<std::string>& present_gpus,
                 const std::vector<const GpuState*>& gpus, const std::string& name);
  // The events of the machine's last 30 days (or since it came, `created_at`).
  StatusOr<std::vector<ReliabilityEvent>> Events(store::Tx& tx, Timestamp now,
                                                 const MachineState& m, Timestamp created_at)
      EXCLUDES(cache_mu_);
  StatusOr<std::string> ChangeMark(store::Tx& tx);

  store::Database& db_;
  const ReliabilityOptions options_;
  Mutex cache_mu_;
  std::map<std::string, CachedSchedule> schedules_ GUARDED_BY(cache_mu_);
  Mutex due_mu_;  // one RefreshIfDue at a time
  std::string last_mark_ GUARDED_BY(due_mu_);
  Timestamp last_full_ GUARDED_BY(due_mu_){};
};

// The advice shown beside a score: what would raise it.
std::vector<std::string> Advice(const Components& c, bool is_new);

}  // namespace gpunex::platform::reliability
