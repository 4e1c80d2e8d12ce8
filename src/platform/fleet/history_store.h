// What the fleet recorded over time, read by time range for the reliability score
// (reliability/) and the other folders that judge machines: machines with their present
// GPUs, online intervals, workload endings and telemetry samples under load. Free
// functions over the caller's transaction, reading the fleet's own tables (fleet_store.h
// describes them): the read side of the fleet's store.
//
// Thread-safety: a Tx belongs to the thread running its callback.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "common/time.h"
#include "platform/fleet/end_party.h"
#include "platform/fleet/machine.h"
#include "platform/store/db.h"

namespace gpunex::platform::fleet {

struct MachineSummary {
  std::string id;
  std::string provider_id;
  std::string name;
  MachineStatus status = MachineStatus::kOffline;
  Timestamp created_at;
  std::vector<std::string> gpu_ids;  // present GPUs (machine_gpus.id), by index
};
// Every machine (or the provider's, when `provider_id` is set), by id.
StatusOr<std::vector<MachineSummary>> MachineSummaries(store::Tx& tx,
                                                       const std::string& provider_id = "");

struct OnlineSpan {
  std::string machine_id;
  Timestamp start;
  std::optional<Timestamp> end;  // none: still online
};
// The online intervals that overlap [from, ∞), of every machine or of one, by machine and
// start.
StatusOr<std::vector<OnlineSpan>> OnlineSpansSince(store::Tx& tx, Timestamp from,
                                                   const std::string& machine_id = "");

struct WorkloadEnding {
  std::string workload_id;
  std::string machine_id;
  Timestamp at;
  EndParty party = EndParty::kProvider;
  std::string reason;  // end_reason
  std::optional<int64_t> exit_code;
};
// Workloads that ended in [from, to), of every machine or of one, by end time.
StatusOr<std::vector<WorkloadEnding>> WorkloadEndings(store::Tx& tx, Timestamp from, Timestamp to,
                                                      const std::string& machine_id = "");

struct LoadedSamples {
  std::string gpu_id;
  int64_t minute = 0;  // minutes since the epoch
  int64_t loaded = 0;
  int64_t throttled = 0;  // of the loaded samples
};
// Per GPU and minute in [from_minute, to_minute), the samples under load (minutes without
// any are left out).
StatusOr<std::vector<LoadedSamples>> LoadedSamplesBetween(store::Tx& tx, int64_t from_minute,
                                                          int64_t to_minute,
                                                          const std::string& gpu_id = "");

// A text that changes whenever a machine comes or goes, comes online, or a workload
// ends: what a reader of this history compares to know whether it has anything new.
StatusOr<std::string> HistoryMark(store::Tx& tx);

}  // namespace gpunex::platform::fleet
