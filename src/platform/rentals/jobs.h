// Jobs and the scheduler (RNT-1, REL-5): a customer submits constraints instead of an
// offer; the scheduler places each job on the best offer that meets them, by the
// marketplace's ranking (reliability weighs most), as a rental. A job that fits no offer
// waits and is placed when one appears, or ends "unplaceable" at its deadline.
//
// The scheduler has Nomad's shape: it reads an immutable snapshot of the offers
// (market::Snapshot) and plans the placement of every queued job against it, counting the
// GPUs its own plan takes; then each placement commits in its own transaction, which
// re-checks the offer's GPUs, price and the customer's balance (Rentals::CreateInTx). A
// placement that lost a race keeps its job queued for the next plan; the others stand.
//
// The queue is indexed by what its jobs wait for, as Nomad's blocked evaluations are by
// node class: each second a round groups the queued jobs by customer and constraints and
// takes, of each group, as many of its oldest jobs as the snapshot has room for now (the
// offers that meet the constraints, by the placement rule, with their free GPUs), so a
// round plans every job that could be placed now, however many wait for what no offer
// has; past kBatch in all, the groups take turns. A customer may have at most
// max_queued_per_customer jobs queued; a job that would wait beyond is refused.
//
// Authorization: a customer submits, reads and cancels their own jobs; admins read all.
//
// Thread-safety: Jobs is safe to share.
#pragma once

#include <atomic>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "common/background.h"
#include "common/paging.h"
#include "common/status.h"
#include "common/thread_annotations.h"
#include "platform/accounts/accounts.h"
#include "platform/market/market.h"
#include "platform/rentals/job.h"
#include "platform/rentals/rentals.h"
#include "platform/store/db.h"

namespace gpunex::platform::rentals {

inline constexpr int64_t kMinDeadlineS = 60;
inline constexpr int64_t kMaxDeadlineS = 7 * 24 * 3600;
inline constexpr int64_t kDefaultDeadlineS = 3600;
inline constexpr int64_t kMaxJobPriceMicro = 1'000'000'000;  // 1,000 USDC per GPU-hour

struct SubmitJobRequest {
  JobConstraints constraints;
  ContainerSpec container;
  std::optional<int64_t> deadline_s;
  std::optional<int64_t> max_duration_s;
  std::optional<Usdc> max_cost;
  std::string idempotency_key;
  // How the request named its models, for the errors: "gpu_models" (a list) or
  // "gpu_model" (one).
  std::string models_field = "gpu_models";
};

struct JobsOptions {
  // Jobs one customer may have queued, waiting for an offer ([rentals]
  // max_queued_jobs_per_customer); a new job that would wait beyond is refused with
  // kFailedPrecondition. A job placed at once does not count.
  int64_t max_queued_per_customer = 100;
  const Clock* clock = &SystemClock();
};

// One placement of a plan.
struct Placement {
  std::string job_id;
  const market::Offer* offer = nullptr;
};

// Plans `jobs` (in order) against `snap`: each gets the best-ranked offer that meets its
// constraints and the placement rule (CheckPlacement) and still has its GPUs free after
// the placements planned before it (and the `taken_before(offer)` GPUs that commits since
// the snapshot took), other than the offers `excluded` names for it; jobs that fit
// nothing are left out. Pure.
std::vector<Placement> Plan(const market::Snapshot& snap, const std::vector<Job>& jobs,
                            const std::function<int64_t(const market::Offer&)>& taken_before = {},
                            const std::map<std::string, std::set<std::string>>* excluded = nullptr);

class Jobs {
 public:
  Jobs(store::Database& db, Rentals& rentals, market::Market& market, JobsOptions options);
  Jobs(const Jobs&) = delete;
  Jobs& operator=(const Jobs&) = delete;

  // Field errors name the request's fields (gpu_models, gpus, max_price_micro,
  // min_reliability, min_performance, min_vram_gb, region, country, image, env.NAME,
  // deadline_s, max_duration_s, max_cost_micro) and "balance" when it does not cover the
  // first hour at max_price_micro (for a job that would wait: less what the customer's
  // active rentals hold for their first hour). The job is placed at once when an offer
  // fits now (its rental under Rentals::Create's balance rule); kFailedPrecondition when
  // it would wait and the customer has max_queued_per_customer jobs queued already.
  StatusOr<Job> Submit(const accounts::Principal& p, const SubmitJobRequest& req);
  // Submit without waiting: `answer` gets what Submit would return, once, on the thread
  // of the round that decides it (or on this one, for a bad request or while the rounds
  // are not scheduled). It must be quick: the round's other submitters wait behind it.
  void SubmitThen(const accounts::Principal& p, const SubmitJobRequest& req,
                  std::function<void(StatusOr<Job>)> answer);
  StatusOr<Job> Get(const accounts::Principal& p, const std::string& id);
  StatusOr<Page<Job>> List(const accounts::Principal& p, const PageRequest& page);
  // kFailedPrecondition unless it is queued.
  StatusOr<Job> Cancel(const accounts::Principal& p, const std::string& id);

  // One round: stores the jobs submitted since the last (up to kBatch), and at least once
  // a second ends the jobs past their deadline and takes again the queued ones the
  // snapshot has room for (see above); plans them, oldest first, against the offers'
  // snapshot and commits the placements, all in one transaction (group commit), then
  // answers the submitters. Returns how many were placed.
  StatusOr<int64_t> ScheduleOnce() EXCLUDES(schedule_mu_, mu_);

  static constexpr size_t kBatch = 512;

  // Schedules the rounds: one each second, and one at once when a job is submitted. While
  // they are not scheduled (tests, a stopping server) a submitter runs the round itself.
  void ScheduleOn(Background& background);

 private:
  struct Submission {
    Job job;
    int64_t deadline_s = 0;
    std::function<void(StatusOr<Job>)> answer;
    std::atomic<bool> answered{false};
    void Answer(StatusOr<Job> j);  // the first answer counts
  };
  StatusOr<int64_t> Round(const std::vector<std::shared_ptr<Submission>>& batch, bool sweep,
                          Timestamp now) REQUIRES(schedule_mu_);
  // The queued jobs a sweep plans again (see above); `*next` is where the next sweep's
  // turn starts when these are not all the groups the snapshot has room for.
  using GroupKey = std::pair<std::string, std::string>;  // customer, constraints
  StatusOr<std::vector<Job>> Waiting(store::Tx& tx, const market::Snapshot& snap,
                                     const std::function<int64_t(const market::Offer&)>& taken,
                                     GroupKey* next) const;
  // The background pass (jobs.schedule): a round, and the next one at once when more
  // submissions wait than one round takes.
  Status ScheduledPass() EXCLUDES(schedule_mu_, mu_);
  void Drain() EXCLUDES(schedule_mu_, mu_);

  store::Database& db_;
  Rentals& rentals_;
  market::Market& market_;
  const JobsOptions options_;
  const Clock* const clock_;
  Mutex schedule_mu_;  // one round at a time in this process
  // GPUs of offers that this process's commits took, by offer id, with the machine's
  // offers stamp they were planned against: while the snapshot still has that stamp it
  // does not show them taken.
  struct Taken {
    std::string machine_id;
    int64_t stamp = 0;
    int64_t gpus = 0;
  };
  std::map<std::string, Taken> overlay_ GUARDED_BY(schedule_mu_);
  Timestamp last_sweep_ GUARDED_BY(schedule_mu_);
  GroupKey turn_ GUARDED_BY(schedule_mu_);  // the first group of the next sweep's turn
  TaskHandle rounds_;                       // set by ScheduleOn, before the background work starts
  Mutex mu_;
  std::vector<std::shared_ptr<Submission>> inbox_ GUARDED_BY(mu_);
};

}  // namespace gpunex::platform::rentals
