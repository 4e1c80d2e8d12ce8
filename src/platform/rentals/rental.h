// A rental (RNT-1..6): GPUs of one offer rented by a customer, running one container, and
// what it was billed. Plain values.
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
#include "platform/fleet/end_party.h"

namespace gpunex::platform::rentals {

// States: pending (the start command is on its way) → starting (pulling, creating) →
// running (billed) → ending (the end is decided and billed; the container is being
// removed) → ended.
// In that order.
enum class RentalState { kPending, kStarting, kRunning, kEnding, kEnded };
inline constexpr EnumNames<RentalState, 5> kRentalStateNames{{{
    {RentalState::kPending, "pending"},
    {RentalState::kStarting, "starting"},
    {RentalState::kRunning, "running"},
    {RentalState::kEnding, "ending"},
    {RentalState::kEnded, "ended"},
}}};
inline constexpr RentalState kPending = RentalState::kPending;
inline constexpr RentalState kStarting = RentalState::kStarting;
inline constexpr RentalState kRunning = RentalState::kRunning;
inline constexpr RentalState kEnding = RentalState::kEnding;
inline constexpr RentalState kEnded = RentalState::kEnded;
inline std::string_view Name(RentalState s) { return kRentalStateNames.Name(s); }

// Whether a rental may go from state `from` to state `to`: only forward along the states
// above, skipping some (a rental ends from any state before ended; one whose agent
// reports it running comes from pending or starting). Nothing comes back.
constexpr bool RentalMayGo(RentalState from, RentalState to) {
  return static_cast<int>(to) > static_cast<int>(from);
}

// Who ended a rental (RNT-3) and why. The parties are its workload's (fleet/end_party.h);
// the reasons, by the party each is put down to (a start that failed is either's):
// customer: stopped, exited, out_of_memory, start_failed, max_duration, max_cost
// provider: agent_lost, gpu_lost, hardware_failure, machine_shutdown, container_removed,
//           start_failed
// platform: balance_exhausted, operator
// A workload's end is put down to a party by its cause (fleet/endings.h).
using fleet::EndParty;
enum class EndReason {
  kStopped,
  kExited,
  kOutOfMemory,
  kStartFailed,
  kMaxDuration,
  kMaxCost,
  kAgentLost,
  kGpuLost,
  kHardwareFailure,
  kMachineShutdown,
  kContainerRemoved,
  kBalanceExhausted,
  kOperator,
};
inline constexpr EnumNames<EndReason, 13> kEndReasonNames{{{
    {EndReason::kStopped, "stopped"},
    {EndReason::kExited, "exited"},
    {EndReason::kOutOfMemory, "out_of_memory"},
    {EndReason::kStartFailed, "start_failed"},
    {EndReason::kMaxDuration, "max_duration"},
    {EndReason::kMaxCost, "max_cost"},
    {EndReason::kAgentLost, "agent_lost"},
    {EndReason::kGpuLost, "gpu_lost"},
    {EndReason::kHardwareFailure, "hardware_failure"},
    {EndReason::kMachineShutdown, "machine_shutdown"},
    {EndReason::kContainerRemoved, "container_removed"},
    {EndReason::kBalanceExhausted, "balance_exhausted"},
    {EndReason::kOperator, "operator"},
}}};
inline std::string_view Name(EndReason r) { return kEndReasonNames.Name(r); }

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
  RentalState state = kPending;
  std::optional<EndReason> end_reason;
  std::optional<EndParty> end_party;
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
  std::vector<protocol::WorkloadPort> ports;  // declared ports (issue 25), public flags too
  std::string region, country;
  std::string idempotency_key;  // "" without one
  std::string job_id;           // "" when rented directly
  Timestamp updated_at;

  bool active() const { return state != kEnded; }
};

}  // namespace gpunex::platform::rentals
