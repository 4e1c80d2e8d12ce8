// The fleet (AGT-3, AGT-4): provider machines and their GPUs as their agents report
// them, the agent channel sessions (agent_session.h), Online/Offline status with every
// transition kept as an interval (the reliability score integrates them), latest and
// per-minute telemetry, the commands sent to agents with exactly-once results, and each
// GPU's listing (listing/listing.h decides it from the facts the fleet keeps and those
// the benchmarks report).
//
// Commands are rows in agent_commands, written in the transaction that decides them
// (Workloads::Create writes start_workload). A command is (re)sent on every connect
// until its result arrives; the agent answers each command id once and re-sends the
// stored result for a repeat, so nothing is lost or run twice across reconnects and
// restarts of either side. After the commit that wrote a command, it goes out at once
// when the machine is connected to this instance (Tx::AfterCommit).
//
// The tables are fleet_store.h's.
//
// Thread-safety: Fleet is thread-safe.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "common/agent_protocol.h"
#include "common/background.h"
#include "common/paging.h"
#include "common/status.h"
#include "common/thread_annotations.h"
#include "common/time.h"
#include "platform/accounts/accounts.h"
#include "platform/fleet/endings.h"
#include "platform/fleet/machine.h"
#include "platform/fleet/registries.h"
#include "platform/fleet/workload.h"
#include "platform/store/db.h"

namespace gpunex::platform::fleet {

class AgentSession;

// The transport of one agent connection (the WebSocket), as the fleet sees it.
class AgentChannel {
 public:
  virtual ~AgentChannel() = default;
  // Queues a text message; false when the channel is closed.
  virtual bool Send(std::string text) = 0;
  virtual void Close(int code, std::string reason) = 0;
};

struct FleetOptions {
  bool allow_emulated_gpus = false;
  // A GPU seen for the first time is not listed until its first benchmark passes
  // (benchmarks/benchmarks.h); false lists it at once (benchmarks turned off).
  bool list_after_benchmark = false;
  int heartbeat_interval_s = 10;
  int offline_after_s = 30;  // no heartbeat for this long → Offline
  int hello_timeout_s = 10;  // a connection must say hello within this
  // A provider's agents register at most this many machines; a hello beyond is refused.
  int64_t max_machines_per_provider = 100;
  // What workload images may name (registries.h): [fleet] allow_private_registries.
  ImagePolicy images{};
  int sweep_interval_ms = 1000;
  // The agent's container image that /agent/install.sh pulls.
  std::string agent_image = "gpunex/agent:0.1.0";
  const Clock* clock = &SystemClock();
};

// What a hello changed, for the folders that follow machines (benchmarks).
struct HelloFacts {
  std::string machine_id;
  bool registered = false;         // the machine was new
  bool inventory_changed = false;  // GPUs, driver or PCIe links differ from the last hello
  std::vector<std::string> new_gpu_ids;
  std::vector<std::string> present_gpu_ids;
};

// What the benchmarks say of one GPU (listing facts).
struct BenchmarkFacts {
  // The verdict of its last measured run; none: unchanged.
  std::optional<listing::BenchmarkVerdict> verdict;
  std::string note;           // with a failed verdict: "benchmark: <what failed>"
  bool benchmarking = false;  // a run is measuring it now
};

// --- functions over the caller's transaction, for other folders

// The machine with its GPUs; nullopt when there is none.
StatusOr<std::optional<Machine>> LoadMachine(store::Tx& tx, const std::string& machine_id);
// How many machines, online machines and GPUs each of `provider_ids` has (a provider with
// none is not in the answer).
StatusOr<std::map<std::string, MachineCounts>> MachineCountsOf(
    store::Tx& tx, const std::vector<std::string>& provider_ids);
// The workload; nullopt when there is none.
StatusOr<std::optional<Workload>> LoadWorkload(store::Tx& tx, const std::string& workload_id);
// Who may do what with a machine: its provider reads and changes it, admins read it.
struct MachineOwner {
  std::string provider_id;
  std::string name;
  Timestamp created_at;
};
enum class MachineAccess { kRead, kChange };
// The machine's owner when `p` has `access`; kNotFound when the machine does not exist or
// `p` may not read it; kPermissionDenied when `p` may read but not change it.
StatusOr<MachineOwner> AuthorizeMachine(store::Tx& tx, const accounts::Principal& p,
                                        const std::string& machine_id, MachineAccess access);
// A value in a machine event's detail: a text, a number, or a list of texts.
using EventValue = std::variant<std::string, int64_t, std::vector<std::string>>;
// Records an event in the machine's history (machine_events), its detail stored as a JSON
// object of the names and values given.
Status AddMachineEvent(store::Tx& tx, const std::string& machine_id, MachineEventKind kind,
                       const std::vector<std::pair<std::string, EventValue>>& detail,
                       Timestamp now);
// The ids of the machines that are online now.
StatusOr<std::vector<std::string>> OnlineMachines(store::Tx& tx);
// The GPU ids (machine_gpus.id) held by the machine's active workloads: rented or
// reserved GPUs, which nothing else may use.
StatusOr<std::set<std::string>> GpusInActiveWorkloads(store::Tx& tx, const std::string& machine_id);
// Records the benchmark facts of GPUs of one machine and decides their listing again.
Status ReportBenchmarkFacts(store::Tx& tx, Timestamp now, const std::string& machine_id,
                            const std::map<std::string, BenchmarkFacts>& by_gpu_id);
// Records what availability/ says of the machine (schedule, maintenance) and, when it
// changed, decides its GPUs' listing again.
Status ReportAvailabilityFacts(store::Tx& tx, Timestamp now, const std::string& machine_id,
                               const AvailabilityFacts& facts);
// Records which GPU models of the machine have a price (pricing/): its GPUs of the other
// models are not offered. Stamps the machine's offers as changed (a price itself may have
// changed) and decides its GPUs' listing again.
Status ReportPriceFacts(store::Tx& tx, Timestamp now, const std::string& machine_id,
                        const std::set<std::string>& priced_catalog_ids);
// Stamps the machine's offers as changed (machines.offers_changed_at, strictly increasing),
// for what the marketplace shows beyond the listing: prices, scores, network figures.
// Listing changes stamp it themselves.
Status TouchOffers(store::Tx& tx, Timestamp now, const std::string& machine_id);
// (machine id, stamp) of the machines whose offers changed after `since_us` (an index
// probe), for the marketplace's offer index.
StatusOr<std::vector<std::pair<std::string, int64_t>>> OffersChangedSince(store::Tx& tx,
                                                                          int64_t since_us);
// The offers stamp of one machine; nullopt when there is no such machine.
StatusOr<std::optional<int64_t>> OffersStamp(store::Tx& tx, const std::string& machine_id);

// Whether machines are online, and when each was last heard from (its last heartbeat).
struct Liveness {
  bool online = false;
  Timestamp last_seen;
  Timestamp status_since;
};
// Machines that do not exist are left out.
StatusOr<std::map<std::string, Liveness>> LivenessOf(store::Tx& tx,
                                                     const std::vector<std::string>& machine_ids);

// Ends an active workload in the caller's transaction (state "failed" for the provider's
// side, "stopped" otherwise) without waiting for its agent, frees its GPUs and decides
// their listing again: for a workload whose machine is gone (rentals' agent-lost grace).
// The container, if it still runs, is removed when the agent reconnects (it is no longer
// expected there). false when the workload had ended already. Runs no workload hooks.
StatusOr<bool> EndWorkloadNow(store::Tx& tx, Timestamp now, const std::string& workload_id,
                              const std::string& reason, const Ending& ending);

// Decides the listing of every GPU of the machine from the facts stored now, and stores
// the decisions that changed (stamping the machine's offers when any did). Every change of
// a fact calls it in its transaction.
Status RefreshListing(store::Tx& tx, Timestamp now, const std::string& machine_id);

// How long a start_workload's registry credentials wait in memory for its result.
inline constexpr std::chrono::hours kRegistryCredentialsTtl{1};

class Fleet {
 public:
  Fleet(store::Database& db, FleetOptions options);
  Fleet(const Fleet&) = delete;
  Fleet& operator=(const Fleet&) = delete;

  // A new session for a connection whose agent token was verified.
  std::shared_ptr<AgentSession> Open(std::string provider_id, std::string token_id,
                                     std::shared_ptr<AgentChannel> channel, std::string remote_addr)
      EXCLUDES(mu_);
  // Ends the live sessions opened with an agent token (after it is revoked or rotated).
  void CloseSessionsForToken(const std::string& token_id) EXCLUDES(mu_);
  // Whether the machine has a live session on this instance.
  bool Connected(const std::string& machine_id) const EXCLUDES(mu_);
  // Whether the machine has a live session here opened with that agent token (so that
  // its agent may open the data channel of that machine with the same token).
  bool ConnectedWithToken(const std::string& machine_id, const std::string& token_id) const
      EXCLUDES(mu_);

  // Schedules the sweeper (Offline after missed heartbeats; hello timeouts; lost
  // workloads; delivery of commands queued by other instances) every sweep_interval_ms.
  void ScheduleOn(Background& background);
  Status SweepOnce() EXCLUDES(mu_);
  // Decides every GPU's listing again from its stored facts: at start, so that listings
  // follow the rules of the release that runs.
  Status RefreshAllListings();

  // Writes a command for a machine in the caller's transaction and returns its id; after
  // the commit it is sent at once when the machine is connected here. A start_workload's
  // registry_auth is not written: it is held in this process's memory, added to the
  // command each time it is sent, and forgotten when the command's result arrives or
  // kRegistryCredentialsTtl after (a command sent after that, or by another instance,
  // goes without it, and the pull fails as unauthorized).
  StatusOr<std::string> EnqueueCommand(store::Tx& tx, Timestamp now, const std::string& machine_id,
                                       const protocol::StartWorkload& payload);
  StatusOr<std::string> EnqueueCommand(store::Tx& tx, Timestamp now, const std::string& machine_id,
                                       const protocol::StopWorkload& payload);
  StatusOr<std::string> EnqueueCommand(store::Tx& tx, Timestamp now, const std::string& machine_id,
                                       const protocol::RunBenchmark& payload);
  // Ends a command that has no result yet (its cause gave up on it, e.g. a benchmark run
  // that timed out), in the caller's transaction: it is not sent again, and a result that
  // still arrives is ignored. A command already done is left as it is.
  static Status CancelCommand(store::Tx& tx, Timestamp now, const std::string& machine_id,
                              const std::string& command_id, const std::string& reason);

  // Hands the first result of each command of `kind` to `hook`, inside the transaction
  // that records the result, so that what the hook writes and the command's end commit
  // together (exactly once). The hook should record bad result data as a failure of its
  // own and fail only when the store does.
  // REQUIRES: called before ScheduleOn() and before agents connect.
  using ResultHook =
      std::function<Status(store::Tx& tx, Timestamp now, const std::string& machine_id,
                           const protocol::Command& command, const protocol::Result& result)>;
  void OnResult(std::string kind, ResultHook hook);
  // Runs `hook` in the transaction of every accepted hello. REQUIRES: as for OnResult.
  using HelloHook = std::function<Status(store::Tx& tx, Timestamp now, const HelloFacts& hello)>;
  void OnHello(HelloHook hook);
  // Runs `hook` in the transaction of every change of a workload's state that an agent
  // reported or the fleet decided (starting, running, an end), with the workload as it is
  // after the change. REQUIRES: as for OnResult.
  using WorkloadHook = std::function<Status(store::Tx& tx, Timestamp now, const Workload& w)>;
  void OnWorkloadChange(WorkloadHook hook);
  // Runs the workload hooks for the workload `id` as stored now (for Workloads).
  Status RunWorkloadHooks(store::Tx& tx, Timestamp now, const std::string& id) const;

  // Providers see their own machines, admins all; others are refused.
  // `provider_id`: one provider's (a provider may name only itself); `status`: only those.
  StatusOr<Page<Machine>> ListMachines(const accounts::Principal& p, const PageRequest& page,
                                       const std::string& provider_id = "",
                                       std::optional<MachineStatus> status = std::nullopt);
  // The owner and admins; anyone else gets kNotFound.
  StatusOr<MachineDetail> GetMachine(const accounts::Principal& p, const std::string& machine_id);
  // Whether the GPU is offered (the owner only; admins are refused).
  StatusOr<MachineDetail> SetGpuEnabled(const accounts::Principal& p, const std::string& machine_id,
                                        const std::string& gpu_id, bool enabled);
  // Names the machine (the owner only; admins are refused, anyone else gets kNotFound).
  // `raw` loses its invisible characters (common/utf8.h StripInvisible) and outer spaces;
  // then empty, longer than kMaxMachineName bytes or with control
  // characters fails with kValidationFailed on "name" and changes nothing. The agent's
  // hello never sets the name again (the hostname names a machine only when it
  // registers), so the provider's name stays across reconnects and reinstalls.
  StatusOr<MachineDetail> RenameMachine(const accounts::Principal& p, const std::string& machine_id,
                                        std::string_view raw);

  // Since start, for /metrics: the agent messages refused alone after a hello (the session
  // stayed up), by reason ("invalid_message", "forbidden", "protocol_error"), and the
  // bytes of log data replaced before they were stored (protocol::SanitizeLogText).
  struct MessageCounts {
    std::map<std::string, int64_t> refused;
    int64_t log_bytes_replaced = 0;
  };
  MessageCounts message_counts() const EXCLUDES(counts_mu_);

  store::Database& db() { return db_; }
  const FleetOptions& options() const { return options_; }
  // Whether a new GPU waits for its first benchmark before it is listed: the benchmarks
  // module says so when it is built, before any agent connects.
  void set_list_after_benchmark(bool wait) { options_.list_after_benchmark = wait; }

 private:
  friend class AgentSession;
  StatusOr<std::string> Enqueue(store::Tx& tx, Timestamp now, const std::string& machine_id,
                                std::string_view kind, std::string payload_json);
  void Register(const std::string& machine_id, const std::shared_ptr<AgentSession>& s)
      EXCLUDES(mu_);
  void Unregister(const std::string& machine_id, const AgentSession* s) EXCLUDES(mu_);
  // Sends the machine's unfinished commands to its session here, if it has one.
  void DeliverPending(const std::string& machine_id) EXCLUDES(mu_, delivery_mu_);
  // Started workloads the agent did not report on connect: failed as lost (provider's
  // side) unless their end is reported within a grace period.
  void SuspectLost(const std::vector<std::string>& workload_ids) EXCLUDES(mu_);
  Status FailLostWorkloads() EXCLUDES(mu_);
  Status HandleHeartbeat(const std::string& machine_id, const protocol::Heartbeat& h);
  Status HandleAck(const std::string& machine_id, const protocol::Ack& a);
  Status HandleResult(const std::string& machine_id, const protocol::Result& r);
  Status HandleWorkloadEvent(const std::string& machine_id, const protocol::WorkloadEvent& e);
  Status HandleLogs(const std::string& machine_id, const protocol::Logs& l);
  // A network isolation report between hellos: kept with the host facts, recorded as a
  // machine event, and the listing decided again.
  Status HandleNetworkIsolation(const std::string& machine_id,
                                const protocol::NetworkIsolation& report);
  Status RunHelloHooks(store::Tx& tx, Timestamp now, const HelloFacts& hello) const;
  void CountRefused(std::string_view reason) EXCLUDES(counts_mu_);

  store::Database& db_;
  FleetOptions options_;  // set_list_after_benchmark only while the platform is built
  std::map<std::string, ResultHook> result_hooks_;  // set before ScheduleOn(), then read-only
  std::vector<HelloHook> hello_hooks_;              // likewise
  std::vector<WorkloadHook> workload_hooks_;        // likewise
  mutable Mutex mu_;
  std::map<std::string, std::shared_ptr<AgentSession>> sessions_ GUARDED_BY(mu_);  // by machine
  std::vector<std::weak_ptr<AgentSession>> pending_hello_ GUARDED_BY(mu_);
  // Started workloads whose container the agent did not report in its hello, with the
  // time after which they count as lost: events the agent queued while disconnected (an
  // exit, say) arrive just after the welcome and settle most of them first.
  std::map<std::string, Timestamp> suspected_lost_ GUARDED_BY(mu_);
  Mutex delivery_mu_ ACQUIRED_AFTER(mu_);  // serialises command delivery so order holds
  // start_workload commands' registry credentials, by command id (EnqueueCommand).
  struct HeldCredentials {
    protocol::RegistryCredentials credentials;
    Timestamp until;
  };
  void HoldCredentials(const std::string& command_id, protocol::RegistryCredentials c,
                       Timestamp now) EXCLUDES(credentials_mu_);
  std::optional<protocol::RegistryCredentials> CredentialsFor(const std::string& command_id,
                                                              Timestamp now)
      EXCLUDES(credentials_mu_);
  void ForgetCredentials(const std::string& command_id) EXCLUDES(credentials_mu_);
  void ForgetExpiredCredentials(Timestamp now) REQUIRES(credentials_mu_);
  Mutex credentials_mu_;
  std::map<std::string, HeldCredentials> held_credentials_ GUARDED_BY(credentials_mu_);
  mutable Mutex counts_mu_;
  MessageCounts counts_ GUARDED_BY(counts_mu_);
};

}  // namespace gpunex::platform::fleet
