// Workloads (ISO-1..3, RNT-2..3): a container run on a provider machine with some of its
// GPUs. The platform validates every request (ISO-2), writes the workload and its
// start_workload command in one transaction, and follows the agent's reports through
// pending → starting → running → exited | failed | stopped, with the exit code, the end
// reason and who ended it (customer, provider, platform). Rentals will create workloads
// through this same path.
//
// Authorization: admins, and the provider that owns the machine acting as one (an API key
// without the provider scope does not: accounts::Principal::IsProvider), may start and
// stop workloads and read them and their logs; the customer of a rental reads its
// workload and logs. Nobody else learns that they exist.
//
// Thread-safety: Workloads is safe to share.
#pragma once

#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/paging.h"
#include "common/status.h"
#include "platform/accounts/accounts.h"
#include "platform/fleet/container.h"
#include "platform/fleet/fleet.h"
#include "platform/fleet/registries.h"
#include "platform/fleet/workload.h"
#include "platform/store/db.h"

namespace gpunex::platform::fleet {

// A request to run a container. The limits left out are sized by the GPUs asked for.
struct CreateWorkloadRequest {
  std::string machine_id;
  std::vector<std::string> gpu_ids;
  ContainerSpec container;
  std::optional<int64_t> memory_mb;
  std::optional<double> cpus;
  std::optional<int64_t> pids_limit;
  std::optional<int64_t> scratch_mb;
  std::optional<int64_t> timeout_s;
};

// The container's own values, as every path that starts one checks them (workloads,
// rentals, jobs): the one place a container is validated. The image must be a reference
// (common/image_ref.h) whose registry `images` allows (registries.h: never the provider's
// link-local or unspecified addresses; loopback, private addresses and internal names
// only when the operator allows private registries); the command at most 64 clean
// strings; the environment valid names (not NVIDIA_*) with bounded values. Field errors
// name "image", "command", "env" and "env.NAME".
FieldErrors ValidateContainer(const ContainerSpec& container, const ImagePolicy& images);

// The request's own values, before anything is looked up; field errors name its fields.
FieldErrors ValidateWorkloadRequest(const CreateWorkloadRequest& req, const ImagePolicy& images);

// Log chunks in order, and where to follow on from: the position after the last chunk
// shown (or the one asked from when nothing is new). Logs grow while a workload runs, so
// unlike a list the position is given even when this page reached the end.
struct LogPage {
  std::vector<LogChunkView> items;
  std::optional<Cursor> position;
};

class Workloads {
 public:
  // Registers the start_workload result hook on `fleet`. REQUIRES: before the fleet is scheduled.
  Workloads(store::Database& db, Fleet& fleet, const Clock* clock = &SystemClock());

  // Field errors name the request's fields ("gpu_ids[1]", "memory_mb", "env.NAME").
  StatusOr<Workload> Create(const accounts::Principal& p, const CreateWorkloadRequest& req);
  StatusOr<Workload> Get(const accounts::Principal& p, const std::string& id);
  // The workloads `p` may see (Get's rule); `machine_id` not empty: those on that machine,
  // of the machine's provider (admins: any), so that a customer learns no machine.
  StatusOr<Page<Workload>> List(const accounts::Principal& p, const std::string& machine_id,
                                const PageRequest& page);
  // Asks the agent to stop the workload; its state follows the agent's report.
  // kFailedPrecondition when it has already ended.
  StatusOr<Workload> Stop(const accounts::Principal& p, const std::string& id);
  // At most kMaxLogPage chunks after `page.after` (a position from a previous answer).
  StatusOr<LogPage> Logs(const accounts::Principal& p, const std::string& id,
                         const PageRequest& page);

  // In the caller's transaction, without authorization (the caller decided it): a
  // workload made by `created_by` for `purpose` (a rental), with the same validation,
  // the same isolation policy and the same checks of the GPUs as Create. A caller that
  // loaded the machine and its busy GPUs in this transaction passes them (`loaded`,
  // `loaded_busy`) instead of their being read again.
  StatusOr<Workload> CreateInTx(store::Tx& tx, Timestamp now, const std::string& created_by,
                                WorkloadPurpose purpose, const CreateWorkloadRequest& req,
                                const Machine* loaded = nullptr,
                                const std::set<std::string>* loaded_busy = nullptr);
  // Asks the agent to stop the workload, in the caller's transaction; nothing when it has
  // ended.
  Status StopInTx(store::Tx& tx, Timestamp now, const std::string& id);

  static constexpr int kMaxLogPage = 1000;

 private:
  Status OnStartResult(store::Tx& tx, Timestamp now, const std::string& machine_id,
                       const protocol::Command& command, const protocol::Result& result);

  store::Database& db_;
  Fleet& fleet_;
  const Clock* const clock_;
};

}  // namespace gpunex::platform::fleet
