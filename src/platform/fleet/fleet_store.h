// The fleet folder's tables and the only SQL that touches them: machines, machine_gpus,
// machine_intervals, machine_events, gpu_telemetry_minutes, agent_commands, workloads and
// workload_logs. Other folders reach them through fleet.h and workloads.h.
//
// A FleetStore is a view of one transaction: every method runs in it and fails with the
// transaction's status.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "common/agent_protocol.h"
#include "common/enum_names.h"
#include "common/paging.h"
#include "common/status.h"
#include "common/time.h"
#include "platform/fleet/endings.h"
#include "platform/fleet/machine.h"
#include "platform/fleet/workload.h"
#include "platform/store/db.h"
#include "platform/store/migrations.h"
#include "platform/store/sql_literal.h"

namespace gpunex::platform::fleet {

using store::SqlLiteral;

// Which workloads a list holds: every one (`all`), or those on the machines of
// `provider_id` and those running the rentals of `customer_id` (an empty id: none of
// that side); of one machine when `machine_id` is not empty.
struct WorkloadFilter {
  bool all = false;
  std::string provider_id;
  std::string customer_id;
  std::string machine_id;
};

struct MachineRow {
  std::string id;
  std::string provider_id;
  std::string key_hash;
  std::string name;
  MachineStatus status = MachineStatus::kOffline;
  bool emulated = false;
  std::string agent_version;
  protocol::Host host;
  std::string inventory_hash;
  Timestamp created_at;
  Timestamp last_seen;
  Timestamp status_since;
};

// A command to an agent: pending (written) → sent (on a connection) → acked (the agent has
// it) → done (its result is recorded, or it was cancelled). Only forward: a command sent
// again after a reconnect stays acked, and nothing leaves done; an agent's ack may come
// before the platform marks the command sent.
enum class CommandState { kPending, kSent, kAcked, kDone };
inline constexpr EnumNames<CommandState, 4> kCommandStateNames{{{
    {CommandState::kPending, "pending"},
    {CommandState::kSent, "sent"},
    {CommandState::kAcked, "acked"},
    {CommandState::kDone, "done"},
}}};
inline std::string_view Name(CommandState s) { return kCommandStateNames.Name(s); }
constexpr bool CommandMayGo(CommandState from, CommandState to) {
  return static_cast<int>(to) > static_cast<int>(from);
}

struct CommandRow {
  std::string id;
  std::string machine_id;
  std::string kind;
  std::string payload_json;
  CommandState state = CommandState::kPending;
  Timestamp created_at;
  std::optional<Timestamp> sent_at;
};

using LogChunk = LogChunkView;

// The signal of a command written for a machine (its payload: the machine's id).
inline constexpr char kCommandsSignal[] = "gpunex_agent_commands";

class FleetStore {
 public:
  explicit FleetStore(store::Tx& tx) : tx_(tx) {}

  // --- machines
  StatusOr<std::optional<MachineRow>> FindMachine(const std::string& id);
  // (status, last_seen, status_since) of the machines that exist among `ids`.
  StatusOr<std::vector<std::tuple<std::string, MachineStatus, Timestamp, Timestamp>>> MachineStates(
      const std::vector<std::string>& ids);
  StatusOr<int64_t> CountMachinesOf(const std::string& provider_id);
  StatusOr<std::optional<MachineRow>> FindMachineByKey(const std::string& key_hash);
  Status InsertMachine(const MachineRow& m);
  Status UpdateMachineOnHello(const std::string& id, bool emulated,
                              const std::string& agent_version, const protocol::Host& host,
                              const std::string& inventory_hash, Timestamp seen);
  // Replaces the host facts (a network_isolation report between hellos).
  Status SetMachineHost(const std::string& id, const protocol::Host& host);
  Status TouchMachine(const std::string& id, Timestamp seen);
  // False when there is no such machine.
  StatusOr<bool> SetMachineName(const std::string& id, const std::string& name);
  Status SetMachineStatus(const std::string& id, MachineStatus status, Timestamp since);
  // The provider's machines (all with `provider_id` empty), by id.
  // The machines of `provider_id` ("": every provider's), of `status` when one is given.
  StatusOr<Page<MachineRow>> ListMachines(const std::string& provider_id,
                                          std::optional<MachineStatus> status,
                                          const PageRequest& page);
  // How many machines each of `provider_ids` has, online and in all, and their GPUs; a
  // provider without a machine is not in the answer.
  StatusOr<std::map<std::string, MachineCounts>> MachineCountsOf(
      const std::vector<std::string>& provider_ids);
  // Online machines whose last heartbeat is before `cutoff`.
  StatusOr<std::vector<std::string>> StaleOnlineMachines(Timestamp cutoff);
  StatusOr<bool> IsStaleOnline(const std::string& id, Timestamp cutoff);
  StatusOr<std::vector<std::string>> OnlineMachines();

  // --- GPUs
  StatusOr<std::vector<MachineGpu>> GpusOf(const std::string& machine_id);  // by index, uuid
  StatusOr<std::optional<MachineGpu>> FindGpu(const std::string& machine_id,
                                              const std::string& gpu_id);
  StatusOr<std::optional<std::string>> GpuIdByUuid(const std::string& machine_id,
                                                   const std::string& uuid);
  Status MarkGpusAbsent(const std::string& machine_id);
  // Updates the GPU with this uuid from a hello; false when there is none.
  StatusOr<bool> UpdateGpuFromHello(const std::string& machine_id, const MachineGpu& g);
  Status InsertGpu(const MachineGpu& g);
  StatusOr<bool> SetGpuEnabled(const std::string& machine_id, const std::string& gpu_id,
                               bool enabled);
  Status SetGpuTelemetry(const std::string& gpu_id, const protocol::GpuSample& sample,
                         Timestamp at);
  Status SetBenchmarkFacts(const std::string& gpu_id, listing::BenchmarkVerdict verdict,
                           const std::string& note, bool benchmarking);
  Status SetListing(const std::string& gpu_id, const listing::ListingDecision& d, Timestamp since);
  Status SetPriced(const std::string& gpu_id, bool priced);
  // Stamps machines.offers_changed_at (fleet.h TouchOffers).
  Status TouchOffers(const std::string& machine_id, Timestamp now);
  // (machine id, offers_changed_at) of the machines stamped after `since_us`.
  StatusOr<std::vector<std::pair<std::string, int64_t>>> OffersChangedSince(int64_t since_us);
  StatusOr<std::optional<int64_t>> OffersStamp(const std::string& machine_id);
  StatusOr<AvailabilityFacts> AvailabilityFactsOf(const std::string& machine_id);
  Status SetAvailabilityFacts(const std::string& machine_id, const AvailabilityFacts& f);

  // --- intervals, events, telemetry
  Status CloseOpenInterval(const std::string& machine_id, Timestamp at, IntervalEndReason reason);
  Status OpenInterval(const std::string& machine_id, MachineStatus state, Timestamp at);
  StatusOr<std::vector<MachineInterval>> RecentIntervals(const std::string& machine_id, int limit);
  Status InsertEvent(const std::string& machine_id, Timestamp at, MachineEventKind kind,
                     const std::string& detail_json);
  // `loaded`: taken under load (the reliability score's throttled fraction counts those).
  Status AddTelemetrySample(const std::string& gpu_id, int64_t minute, const protocol::GpuSample& s,
                            bool throttled, bool loaded);

  // --- agent commands
  // Also signals kCommandsSignal with the machine's id (store/signals.h), so that the
  // instance holding the machine's agent sends it at once.
  Status InsertCommand(const CommandRow& c);
  // Commands of the machine not done yet, oldest first.
  StatusOr<std::vector<CommandRow>> UnfinishedCommands(const std::string& machine_id);
  Status MarkCommandSent(const std::string& id, Timestamp at);
  Status MarkCommandAcked(const std::string& machine_id, const std::string& id, Timestamp at);
  StatusOr<std::optional<CommandRow>> FindCommand(const std::string& machine_id,
                                                  const std::string& id);
  Status MarkCommandDone(const std::string& id, Timestamp at, bool ok,
                         const std::string& result_json);
  StatusOr<std::vector<std::string>> MachinesWithPendingCommands();

  // --- workloads
  Status InsertWorkload(const Workload& w);
  StatusOr<std::optional<Workload>> FindWorkload(const std::string& id);
  // The workloads `filter` selects, by id.
  StatusOr<Page<Workload>> ListWorkloads(const WorkloadFilter& filter, const PageRequest& page);
  // pending, starting or running, by id.
  StatusOr<std::vector<Workload>> ActiveWorkloads(const std::string& machine_id);
  // The GPU ids held by the machine's active workloads.
  StatusOr<std::set<std::string>> GpusInActiveWorkloads(const std::string& machine_id);
  // REQUIRES: `state` is starting or running.
  Status SetWorkloadProgress(const std::string& id, WorkloadState state,
                             const std::optional<std::string>& container_id, Timestamp at);
  // Ends a workload that is still active, with its cause and party (endings.h) and
  // `reason`, the words for the provider; false when it had already ended.
  // REQUIRES: `state` is an ended one.
  StatusOr<bool> EndWorkload(const std::string& id, WorkloadState state,
                             std::optional<int64_t> exit_code, const std::string& reason,
                             const Ending& ending, const std::optional<std::string>& container_id,
                             Timestamp at);

  // --- workload logs
  StatusOr<int64_t> CountLogChunks(const std::string& workload_id);
  Status InsertLogChunk(const std::string& workload_id, const LogChunk& c);  // a repeat is ignored
  // Chunks in (at, stream, seq) order after `after`, at most `limit`.
  StatusOr<Page<LogChunk>> LogChunks(const std::string& workload_id, const PageRequest& page);

 private:
  store::Tx& tx_;
};

std::vector<store::Migration> FleetMigrations();

}  // namespace gpunex::platform::fleet
