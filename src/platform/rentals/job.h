// A job (RNT-1): constraints a customer submits for the scheduler (scheduler.h) to place on
// the best offer that meets them, as a rental. Plain values.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/enum_names.h"
#include "common/money.h"
#include "common/time.h"
#include "platform/fleet/container.h"
#include "platform/rentals/rental.h"

namespace gpunex::platform::rentals {

// What a rental runs, for a rental and for a job: a container as the fleet runs any.
using fleet::ContainerSpec;

struct JobConstraints {
  std::vector<std::string> gpu_models;  // catalog ids, at least one
  int64_t gpus = 1;
  Usdc max_price;  // per GPU-hour
  std::optional<double> min_reliability, min_performance, min_vram_gb;
  std::string region, country;  // "" : any
};

// queued → placed | unplaceable | cancelled: a queued job ends one of three ways, and
// nothing leaves an end.
enum class JobState { kQueued, kPlaced, kUnplaceable, kCancelled };
inline constexpr EnumNames<JobState, 4> kJobStateNames{{{
    {JobState::kQueued, "queued"},
    {JobState::kPlaced, "placed"},
    {JobState::kUnplaceable, "unplaceable"},
    {JobState::kCancelled, "cancelled"},
}}};
inline std::string_view Name(JobState s) { return kJobStateNames.Name(s); }
constexpr bool JobMayGo(JobState from, JobState to) {
  return from == JobState::kQueued && to != JobState::kQueued;
}

struct Job {
  std::string id;  // "job_..."
  std::string customer_id;
  JobConstraints constraints;
  ContainerSpec container;
  std::optional<int64_t> max_duration_s;
  std::optional<Usdc> max_cost;
  JobState state = JobState::kQueued;
  std::string rental_id;  // when placed
  std::string offer_id;   // when placed
  std::string detail;     // why it waits or ended
  std::string idempotency_key;
  Timestamp created_at;
  Timestamp deadline_at;
  std::optional<Timestamp> placed_at;
  std::optional<Timestamp> ended_at;
  Timestamp updated_at;

  // Where the rental it placed stands (read with the job, not stored with it): a placed
  // job's own state stays "placed" while its rental runs and after it ends.
  struct PlacedRental {
    RentalState state = RentalState::kPending;
    std::optional<EndReason> end_reason;
    std::optional<int64_t> exit_code;
    std::string detail;
  };
  std::optional<PlacedRental> rental;
};

}  // namespace gpunex::platform::rentals
