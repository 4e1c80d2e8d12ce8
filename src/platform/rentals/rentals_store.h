// The rentals folder's tables and the only SQL that touches them:
//   rentals          one row per rental, with its billing totals (rental.h);
//   balance_alerts   customers warned that their balance is running low;
//   jobs             submitted jobs and their placement (jobs.h).
//
// A RentalsStore is a view of one transaction.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/paging.h"
#include "common/status.h"
#include "platform/rentals/job.h"
#include "platform/rentals/rental.h"
#include "platform/store/db.h"
#include "platform/store/migrations.h"

namespace gpunex::platform::rentals {

class RentalsStore {
 public:
  explicit RentalsStore(store::Tx& tx) : tx_(tx) {}

  Status Insert(const Rental& r);
  // Writes every mutable field of `r` (state, times, totals, next_meter_at).
  Status Update(const Rental& r);
  // Writes what a metering tick changes (billed_seconds, the totals, next_meter_at,
  // updated_at) of many rentals at once.
  Status UpdateMetered(const std::vector<Rental>& rs);
  StatusOr<std::optional<Rental>> Find(const std::string& id);
  StatusOr<std::optional<Rental>> FindByKey(const std::string& customer_id, const std::string& key);
  StatusOr<std::optional<Rental>> FindByWorkload(const std::string& workload_id);
  // `customer_id` / `provider_id` empty: any. `state`: "" any, "active" (not ended), or a
  // state's name.
  StatusOr<Page<Rental>> List(const std::string& customer_id, const std::string& provider_id,
                              const std::string& state, const PageRequest& page);
  // The ids of the provider's rentals, in every state.
  StatusOr<std::vector<std::string>> IdsOfProvider(const std::string& provider_id);
  // The rentals among `ids` that exist, without their image and command, in no particular
  // order.
  StatusOr<std::vector<Rental>> FindMany(const std::vector<std::string>& ids);
  // The customers with a running rental due for metering at `now`.
  StatusOr<std::vector<std::string>> CustomersDue(Timestamp now, int64_t limit);
  // The running rentals of these customers, without their GPU ids, image and command.
  StatusOr<std::vector<Rental>> RunningOf(const std::vector<std::string>& customer_ids);
  // What the first-hour rule needs of each of the customer's rentals not yet billed to
  // their end (pending, starting, running).
  struct OpenTerms {
    Usdc price;
    int64_t gpus = 0;
    std::optional<int64_t> max_duration_s;
    std::optional<Usdc> max_cost;
    Usdc charged;
  };
  StatusOr<std::vector<OpenTerms>> OpenOf(const std::string& customer_id);
  // The machines of active rentals (pending .. ending).
  StatusOr<std::vector<std::string>> ActiveMachines();
  StatusOr<std::vector<Rental>> ActiveOnMachine(const std::string& machine_id);
  // Rentals of a model (and region, "" every) that ran within [from, to).
  StatusOr<std::vector<Rental>> RanBetween(const std::string& gpu_model, const std::string& region,
                                           Timestamp from, Timestamp to);

  StatusOr<std::optional<Timestamp>> AlertedAt(const std::string& customer_id);
  Status SetAlerted(const std::string& customer_id, std::optional<Timestamp> at);

  // --- jobs
  Status InsertJob(const Job& j);
  Status UpdateJob(const Job& j);
  StatusOr<std::optional<Job>> FindJob(const std::string& id);
  StatusOr<std::optional<Job>> FindJobByKey(const std::string& customer_id, const std::string& key);
  StatusOr<Page<Job>> ListJobs(const std::string& customer_id, const PageRequest& page);
  // The queued jobs by what they wait for: one group per customer and constraints.
  struct QueuedGroup {
    std::string customer_id;
    std::string key;  // the constraints as stored, for QueuedJobsOf
    JobConstraints constraints;
    int64_t jobs = 0;
  };
  StatusOr<std::vector<QueuedGroup>> QueuedGroups();
  // The oldest `limit` queued jobs of one group.
  StatusOr<std::vector<Job>> QueuedJobsOf(const std::string& customer_id, const std::string& key,
                                          int64_t limit);
  StatusOr<int64_t> CountQueuedJobs(const std::string& customer_id);
  // Ends the queued jobs whose deadline is at or before `now` as unplaceable; returns how
  // many.
  StatusOr<int64_t> EndJobsPastDeadline(Timestamp now);

 private:
  store::Tx& tx_;
};

std::vector<store::Migration> RentalsMigrations();

}  // namespace gpunex::platform::rentals
