// A workload (ISO-1..3, RNT-2..3): a container run on a provider machine with some of its
// GPUs, as the fleet records it. Plain values.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/agent_protocol.h"
#include "common/enum_names.h"
#include "common/time.h"
#include "platform/fleet/end_party.h"

namespace gpunex::platform::fleet {

// States: pending (the start command is on its way) → starting → running → exited |
// failed | stopped (ended, for good). In that order.
enum class WorkloadState { kPending, kStarting, kRunning, kExited, kFailed, kStopped };
inline constexpr EnumNames<WorkloadState, 6> kWorkloadStateNames{{{
    {WorkloadState::kPending, "pending"},
    {WorkloadState::kStarting, "starting"},
    {WorkloadState::kRunning, "running"},
    {WorkloadState::kExited, "exited"},
    {WorkloadState::kFailed, "failed"},
    {WorkloadState::kStopped, "stopped"},
}}};
inline std::string_view Name(WorkloadState s) { return kWorkloadStateNames.Name(s); }

// Whether a workload in state `s` may still change: pending, starting or running.
constexpr bool IsActiveWorkloadState(WorkloadState s) { return s <= WorkloadState::kRunning; }

// Whether a workload may go from state `from` to state `to`: only while it is active, and
// only forward (an agent's event that is stale or repeated changes nothing); it may end
// from any active state, in any of the three ended ones.
constexpr bool WorkloadMayGo(WorkloadState from, WorkloadState to) {
  return IsActiveWorkloadState(from) && static_cast<int>(to) > static_cast<int>(from);
}

// Whom a workload is for: its provider's or an admin's own (custom), or a customer's
// rental (rentals/ runs those).
enum class WorkloadPurpose { kCustom, kRental };
inline constexpr EnumNames<WorkloadPurpose, 2> kWorkloadPurposeNames{{{
    {WorkloadPurpose::kCustom, "custom"},
    {WorkloadPurpose::kRental, "rental"},
}}};
inline std::string_view Name(WorkloadPurpose p) { return kWorkloadPurposeNames.Name(p); }

struct Workload {
  std::string id;
  std::string machine_id;
  std::string provider_id;
  std::string created_by;
  WorkloadPurpose purpose = WorkloadPurpose::kCustom;
  protocol::StartWorkload spec;
  std::vector<std::string> gpu_ids;  // machine_gpus ids
  WorkloadState state = WorkloadState::kPending;
  std::optional<int64_t> exit_code;
  // The agent's (or the platform's) own words on the end: for the provider and admins.
  std::optional<std::string> end_reason;
  std::optional<EndParty> end_party;  // RNT-3
  // What ended it (endings.h), which decides end_party; unset for workloads that ended
  // before causes were recorded.
  std::optional<std::string> end_cause;
  std::optional<std::string> container_id;
  Timestamp created_at;
  std::optional<Timestamp> started_at;
  std::optional<Timestamp> ended_at;
  Timestamp updated_at;
};

// One chunk of a workload's output, as the agent sent it.
struct LogChunkView {
  std::string stream;  // stdout | stderr
  int64_t seq = 0;     // per stream, increasing
  Timestamp at;        // when the platform received it
  std::string data;
};

}  // namespace gpunex::platform::fleet
