// Workloads (ISO-1..3, RNT-2..3): a container run on a provider machine with some of its
// GPUs. The platform validates every request (ISO-2), writes the workload and its
// start_workload command in one transaction, and follows the agent's reports through
// pending → starting → running → exited | failed | stopped, with the exit code, the end
// reason and who ended it (customer, provider, platform). Rentals will create workloads
// through this same path.
//
// Authorization: admins, and the provider that owns the machine, may start and stop
// workloads and read them and their logs. Nobody else learns that they exist.
#pragma once

#include <set>
#include <string>

#include "common/json.h"
#include "common/status.h"
#include "platform/accounts/accounts.h"
#include "platform/fleet/fleet.h"
#include "platform/store/db.h"

namespace gpunex::platform::fleet {

// Limits a request may ask for (the agent enforces the same again).
inline constexpr int64_t kMaxWorkloadMemoryMb = 1 << 20;
inline constexpr int64_t kMaxWorkloadScratchMb = 1 << 20;
inline constexpr int64_t kMaxWorkloadTimeoutS = 30LL * 24 * 3600;

// The GPU ids (machine_gpus.id) held by the machine's active workloads: rented or
// reserved GPUs, which nothing else may use.
StatusOr<std::set<std::string>> GpusInActiveWorkloads(store::Tx& tx, const std::string& machine_id);

class Workloads {
 public:
  Workloads(store::Database& db, Fleet& fleet) : db_(db), fleet_(fleet) {}

  // POST /workloads {machine_id, gpu_ids, image, command?, env?, memory_mb?, cpus?,
  // pids_limit?, scratch_mb?, timeout_s?}. Anything else (host mounts, privileges,
  // devices, host networking, ...) is refused by name.
  StatusOr<json::object> Create(const accounts::Principal& p, const json::value& body);
  StatusOr<json::object> Get(const accounts::Principal& p, const std::string& id);
  StatusOr<json::object> List(const accounts::Principal& p, const std::string& machine_id,
                              const std::string& limit, const std::string& cursor);
  // Asks the agent to stop the workload; its state follows the agent's report.
  StatusOr<json::object> Stop(const accounts::Principal& p, const std::string& id);
  // Log chunks after `after` (a cursor from a previous answer).
  StatusOr<json::object> Logs(const accounts::Principal& p, const std::string& id,
                              const std::string& after);

 private:
  store::Database& db_;
  Fleet& fleet_;
};

}  // namespace gpunex::platform::fleet
