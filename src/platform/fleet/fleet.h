// The fleet (AGT-3, AGT-4): provider machines and their GPUs as their agents report
// them, the agent channel sessions, Online/Offline status with every transition kept as
// an interval (machine_intervals; the reliability score integrates them), latest and
// per-minute telemetry, and the commands sent to agents with exactly-once results.
//
// Commands are rows in agent_commands, written in the transaction that decides them
// (Workloads::Create writes start_workload). A command is (re)sent on every connect
// until its result arrives; the agent answers each command id once and re-sends the
// stored result for a repeat, so nothing is lost or run twice across reconnects and
// restarts of either side.
//
// Thread-safety: Fleet and AgentSession are thread-safe.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "common/agent_protocol.h"
#include "common/json.h"
#include "common/status.h"
#include "common/time.h"
#include "platform/accounts/accounts.h"
#include "platform/store/db.h"

namespace gpunex::platform::fleet {

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
  int offline_after_s = 30;   // no heartbeat for this long → Offline
  int hello_timeout_s = 10;   // a connection must say hello within this
  int sweep_interval_ms = 1000;
  const Clock* clock = &SystemClock();
};

class Fleet;

// One agent connection. Created by Fleet::Open after the agent token was verified.
class AgentSession : public std::enable_shared_from_this<AgentSession> {
 public:
  AgentSession(Fleet& fleet, std::string provider_id, std::string token_id,
               std::shared_ptr<AgentChannel> channel, std::string remote_addr);
  // Handles one received text message. Invalid messages are answered with an error
  // message and the connection is closed; nothing is changed.
  void OnMessage(const std::string& text);
  void OnClose();

  std::string machine_id() const;
  bool Send(const protocol::PlatformMessage& m);
  void Refuse(std::string code, std::string message);
  UnixMicros opened_at() const { return opened_at_; }
  // When this session took over its machine (after hello); 0 before.
  UnixMicros registered_at() const { return registered_at_.load(); }
  const std::string& token_id() const { return token_id_; }
  bool said_hello() const { return hello_done_.load(); }
  const std::string& provider_id() const { return provider_id_; }

 private:
  Status HandleHello(const protocol::Hello& h);

  Fleet& fleet_;
  const std::string provider_id_;
  const std::string token_id_;
  const std::shared_ptr<AgentChannel> channel_;
  const std::string remote_addr_;
  const UnixMicros opened_at_;
  std::atomic<bool> hello_done_{false};
  std::atomic<bool> closed_{false};
  // Set when the platform refuses the connection: messages still queued are ignored.
  std::atomic<bool> refused_{false};
  std::atomic<UnixMicros> registered_at_{0};
  mutable std::mutex mu_;
  std::string machine_id_;  // GUARDED_BY(mu_)
};

class Fleet {
 public:
  Fleet(store::Database& db, FleetOptions options);
  ~Fleet();

  std::shared_ptr<AgentSession> Open(std::string provider_id, std::string token_id,
                                     std::shared_ptr<AgentChannel> channel, std::string remote_addr);
  // Started workloads the agent did not report on connect: failed as lost (provider's
  // side) unless their end is reported within a grace period.
  void SuspectLost(const std::vector<std::string>& workload_ids);
  Status FailLostWorkloads();

  // Ends the live sessions opened with an agent token (after it is revoked or rotated).
  void CloseSessionsForToken(const std::string& token_id);

  // Starts/stops the sweeper thread (Offline after missed heartbeats; hello timeouts;
  // delivery of commands queued by other instances).
  void Start();
  void Stop();
  Status SweepOnce();

  // Writes a command for a machine in the caller's transaction.
  static StatusOr<std::string> EnqueueCommand(store::Tx& tx, const std::string& machine_id,
                                              std::string_view kind, const json::object& payload);
  // After the commit of EnqueueCommand: sends pending commands if the machine is
  // connected to this instance.
  void Kick(const std::string& machine_id);

  // Hands the first result of each command of `kind` to `hook`, inside the transaction
  // that records the result, so that what the hook writes and the command's end commit
  // together (exactly once). The hook gets the command's payload; it should record bad
  // result data as a failure of its own and fail only when the store does.
  // REQUIRES: called before Start() and before agents connect.
  using ResultHook = std::function<Status(store::Tx& tx, const std::string& machine_id,
                                          const json::object& payload, const protocol::Result& r)>;
  void OnResult(std::string kind, ResultHook hook);

  // GET /machines: providers see their own, admins all.
  StatusOr<json::object> ListMachines(const accounts::Principal& p, const std::string& limit,
                                      const std::string& cursor);
  StatusOr<json::object> GetMachine(const accounts::Principal& p, const std::string& machine_id);
  // PATCH /machines/{id}/gpus/{gpu_id} {enabled}: owner only.
  StatusOr<json::object> PatchGpu(const accounts::Principal& p, const std::string& machine_id,
                                  const std::string& gpu_id, const json::value& body);

  // Whether the machine has a live session on this instance.
  bool Connected(const std::string& machine_id) const;

  store::Database& db() { return db_; }
  const FleetOptions& options() const { return options_; }

 private:
  friend class AgentSession;
  void Register(const std::string& machine_id, const std::shared_ptr<AgentSession>& s);
  void Unregister(const std::string& machine_id, const AgentSession* s);
  void DeliverPending(const std::string& machine_id);
  Status HandleHeartbeat(const std::string& machine_id, const protocol::Heartbeat& h);
  Status HandleAck(const std::string& machine_id, const protocol::Ack& a);
  Status HandleResult(const std::string& machine_id, const protocol::Result& r);
  Status HandleWorkloadEvent(const std::string& machine_id, const protocol::WorkloadEvent& e);
  Status HandleLogs(const std::string& machine_id, const protocol::Logs& l);

  store::Database& db_;
  const FleetOptions options_;
  std::map<std::string, ResultHook> result_hooks_;  // set before Start(), then read-only
  mutable std::mutex mu_;
  std::map<std::string, std::shared_ptr<AgentSession>> sessions_;  // GUARDED_BY(mu_) by machine
  std::vector<std::weak_ptr<AgentSession>> pending_hello_;         // GUARDED_BY(mu_)
  // Started workloads whose container the agent did not report in its hello, with the
  // time after which they count as lost: events the agent queued while disconnected (an
  // exit, say) arrive just after the welcome and settle most of them first.
  std::map<std::string, UnixMicros> suspected_lost_;  // GUARDED_BY(mu_)
  std::mutex delivery_mu_;  // serialises command delivery so order holds
  std::thread sweeper_;
  std::mutex stop_mu_;
  std::condition_variable stop_cv_;
  bool stopping_ = false;  // GUARDED_BY(stop_mu_)
};

// Workload states (RNT-2) and who ended a workload (RNT-3).
inline bool IsActiveWorkloadState(std::string_view s) {
  return s == "pending" || s == "starting" || s == "running";
}

}  // namespace gpunex::platform::fleet
