// A rental (RNT-1..6): GPUs of one offer rented by a customer, running one container, and
// what it was billed. Plain values.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/money.h"
#include "common/time.h"

namespace gpunex::platform::rentals {

// States: pending (the start command is on its way) → starting (pulling, creating) →
// running (billed) → ending (the end is decided and billed; the container is being
// removed) → ended.
inline constexpr std::string_view kPending = "pending";
inline constexpr std::string_view kStarting = "starting";
inline constexpr std::string_view kRunning = "running";
inline constexpr std::string_view kEnding = "ending";
inline constexpr std::string_view kEnded = "ended";
// Whether a rental may go from state `from` to state `to`: only forward along the states
// above, skipping some (a rental ends from any state before ended; one whose agent
// reports it running comes from pending or starting). Nothing comes back.
constexpr bool RentalMayGo(std::string_view from, std::string_view to) {
  constexpr std::string_view kOrder[] = {kPending, kStarting, kRunning, kEnding, kEnded};
  int f = -1, t = -1;
  for (int i = 0; i < 5; ++i) {
    if (kOrder[i] == from) f = i;
    if (kOrder[i] == to) t = i;
  }
  return f >= 0 && t > f;
}

// Who ended a rental (RNT-3) and why.
inline constexpr std::string_view kCustomer = "customer";
inline constexpr std::string_view kProvider = "provider";
inline constexpr std::string_view kPlatform = "platform";
// customer: stopped, exited, out_of_memory, start_failed, max_duration, max_cost
// provider: agent_lost, gpu_lost, hardware_failure, machine_shutdown, container_removed,
//           start_failed
// platform: balance_exhausted, operator
// A workload's end is put down to a party by its cause (fleet/endings.h).

struct Rental {
  std::string id;  // "rnt_..."
  std::string customer_id;
  std::string offer_id;
  std::string machine_id;
  std::string provider_id;
  std::string gpu_model;
  std::string gpu_name;              // the catalog's display name ("NVIDIA L4")
  std::vector<std::string> gpu_ids;  // machine_gpus ids
  int64_t gpus = 0;
  std::string workload_id;
  Usdc price;           // per GPU-hour, locked at start
  int64_t fee_bps = 0;  // the commission, locked at start
  std::string state;
  std::optional<std::string> end_reason;
  std::optional<std::string> end_party;
  std::optional<int64_t> exit_code;
  std::string detail;  // a sentence on the end, "" while it runs
  Timestamp created_at;
  std::optional<Timestamp> running_at;      // billing starts
  std::optional<Timestamp> billing_end_at;  // billing stopped (the end was decided)
  std::optional<Timestamp> ended_at;
  int64_t billed_seconds = 0;
  Usdc charged, fee, provider_part, refunded;
  std::optional<Usdc> max_cost;
  std::optional<int64_t> max_duration_s;
  Timestamp next_meter_at;
  std::string image;
  std::vector<std::string> command;
  std::string region, country;
  std::string idempotency_key;  // "" without one
  std::string job_id;           // "" when rented directly
  Timestamp updated_at;

  bool active() const { return state != kEnded; }
};

}  // namespace gpunex::platform::rentals
