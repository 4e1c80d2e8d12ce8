// Fleet: the sessions of connected agents, the sweeper, and what agents report about
// their workloads.
#include "platform/fleet/fleet.h"

#include <algorithm>

#include "common/log.h"
#include "platform/fleet/agent_session.h"
#include "platform/fleet/fleet_store.h"

namespace gpunex::platform::fleet {

Status Transition(store::Tx& tx, const std::string& machine_id, MachineStatus state,
                  IntervalEndReason reason,
                  Timestamp now);  // machines.cc

namespace {

constexpr int64_t kMaxLogChunksPerWorkload = 4096;

}  // namespace

Fleet::Fleet(store::Database& db, FleetOptions options) : db_(db), options_(options) {}

void Fleet::OnHello(HelloHook hook) { hello_hooks_.push_back(std::move(hook)); }

void Fleet::OnWorkloadChange(WorkloadHook hook) { workload_hooks_.push_back(std::move(hook)); }

Status Fleet::RunWorkloadHooks(store::Tx& tx, Timestamp now, const std::string& id) const {
  if (workload_hooks_.empty()) return Status::Ok();
  GPUNEX_ASSIGN_OR_RETURN(std::optional<Workload> w, FleetStore(tx).FindWorkload(id));
  if (!w) return Status::Ok();
  for (const auto& hook : workload_hooks_) GPUNEX_RETURN_IF_ERROR(hook(tx, now, *w));
  return Status::Ok();
}

StatusOr<std::map<std::string, Liveness>> LivenessOf(store::Tx& tx,
                                                     const std::vector<std::string>& machine_ids) {
  std::set<std::string> unique(machine_ids.begin(), machine_ids.end());
  GPUNEX_ASSIGN_OR_RETURN(auto states, FleetStore(tx).MachineStates(
                                           std::vector<std::string>(unique.begin(), unique.end())));
  std::map<std::string, Liveness> out;
  for (const auto& [id, status, last_seen, since] : states) {
    out[id] = {status == MachineStatus::kOnline, last_seen, since};
  }
  return out;
}

StatusOr<bool> EndWorkloadNow(store::Tx& tx, Timestamp now, const std::string& workload_id,
                              const std::string& reason, const Ending& ending) {
  FleetStore s(tx);
  GPUNEX_ASSIGN_OR_RETURN(std::optional<Workload> w, s.FindWorkload(workload_id));
  if (!w || !IsActiveWorkloadState(w->state)) return false;
  GPUNEX_ASSIGN_OR_RETURN(
      bool ended, s.EndWorkload(workload_id,
                                ending.party == EndParty::kProvider ? WorkloadState::kFailed
                                                                    : WorkloadState::kStopped,
                                std::nullopt, reason, ending, std::nullopt, now));
  if (!ended) return false;
  GPUNEX_RETURN_IF_ERROR(RefreshListing(tx, now, w->machine_id));
  return true;
}

Status Fleet::RunHelloHooks(store::Tx& tx, Timestamp now, const HelloFacts& hello) const {
  for (const auto& hook : hello_hooks_) GPUNEX_RETURN_IF_ERROR(hook(tx, now, hello));
  return Status::Ok();
}

std::shared_ptr<AgentSession> Fleet::Open(std::string provider_id, std::string token_id,
                                          std::shared_ptr<AgentChannel> channel,
                                          std::string remote_addr) {
  auto s = std::make_shared<AgentSession>(*this, std::move(provider_id), std::move(token_id),
                                          std::move(channel), std::move(remote_addr));
  MutexLock lock(&mu_);
  pending_hello_.push_back(s);
  return s;
}

void Fleet::SuspectLost(const std::vector<std::string>& workload_ids) {
  const Timestamp deadline =
      options_.clock->Now() + Seconds(std::max(5, 2 * options_.heartbeat_interval_s));
  MutexLock lock(&mu_);
  for (const auto& id : workload_ids) suspected_lost_.emplace(id, deadline);
}

Status Fleet::FailLostWorkloads() {
  const Timestamp now = options_.clock->Now();
  std::vector<std::pair<std::string, Timestamp>> due;
  {
    MutexLock lock(&mu_);
    for (auto it = suspected_lost_.begin(); it != suspected_lost_.end();) {
      if (it->second <= now) {
        due.emplace_back(*it);
        it = suspected_lost_.erase(it);
      } else {
        ++it;
      }
    }
  }
  for (size_t i = 0; i < due.size(); ++i) {
    const std::string& wid = due[i].first;
    Status st = db_.Transact([&](store::Tx& tx) -> Status {
      FleetStore s(tx);
      GPUNEX_ASSIGN_OR_RETURN(std::optional<Workload> w, s.FindWorkload(wid));
      if (!w || (w->state != WorkloadState::kStarting && w->state != WorkloadState::kRunning)) {
        return Status::Ok();
      }
      GPUNEX_RETURN_IF_ERROR(
          s.EndWorkload(wid, WorkloadState::kFailed, std::nullopt, "container lost",
                        {kCauseContainerLost, EndParty::kProvider}, std::nullopt, now)
              .status());
      GPUNEX_RETURN_IF_ERROR(RefreshListing(tx, now, w->machine_id));
      return RunWorkloadHooks(tx, now, wid);
    });
    if (!st.ok()) {
      // Suspected again, so that the next sweep retries: a store failure must not leave
      // a lost workload running for good (ending one twice is harmless: it checks).
      MutexLock lock(&mu_);
      for (size_t j = i; j < due.size(); ++j) suspected_lost_.emplace(due[j]);
      return st;
    }
  }
  return Status::Ok();
}

void Fleet::CloseSessionsForToken(const std::string& token_id) {
  std::vector<std::shared_ptr<AgentSession>> doomed;
  {
    MutexLock lock(&mu_);
    for (const auto& [mid, s] : sessions_) {
      if (s->token_id() == token_id) doomed.push_back(s);
    }
    for (const auto& w : pending_hello_) {
      if (auto s = w.lock(); s && s->token_id() == token_id) doomed.push_back(s);
    }
  }
  for (auto& s : doomed) s->Refuse("token_revoked", "the agent token was revoked");
}

void Fleet::Register(const std::string& machine_id, const std::shared_ptr<AgentSession>& s) {
  std::shared_ptr<AgentSession> old;
  {
    MutexLock lock(&mu_);
    auto it = sessions_.find(machine_id);
    if (it != sessions_.end() && it->second != s) old = it->second;
    sessions_[machine_id] = s;
  }
  // A second connection for the same machine replaces the first (e.g. after a network
  // change the old TCP connection may linger).
  if (old) old->Refuse("replaced", "another connection for this machine took over");
}

void Fleet::Unregister(const std::string& machine_id, const AgentSession* s) {
  MutexLock lock(&mu_);
  auto it = sessions_.find(machine_id);
  if (it != sessions_.end() && it->second.get() == s) sessions_.erase(it);
}

bool Fleet::Connected(const std::string& machine_id) const {
  MutexLock lock(&mu_);
  return sessions_.count(machine_id) > 0;
}

bool Fleet::ConnectedWithToken(const std::string& machine_id, const std::string& token_id) const {
  MutexLock lock(&mu_);
  auto it = sessions_.find(machine_id);
  return it != sessions_.end() && it->second->token_id() == token_id;
}

Status Fleet::HandleWorkloadEvent(const std::string& machine_id, const protocol::WorkloadEvent& e) {
  const Timestamp now = options_.clock->Now();
  return db_.Transact([&](store::Tx& tx) -> Status {
    FleetStore s(tx);
    GPUNEX_ASSIGN_OR_RETURN(std::optional<Workload> w, s.FindWorkload(e.workload_id));
    if (!w || w->machine_id != machine_id) {
      LogWarn("agent.unknown_workload",
              {{"machine_id", machine_id}, {"workload_id", e.workload_id}});
      return Status::Ok();
    }
    // The protocol admits only the states an agent reports (starting and on).
    const std::optional<WorkloadState> state = kWorkloadStateNames.Parse(e.state);
    if (!state) {
      LogWarn("agent.unknown_workload_state",
              {{"machine_id", machine_id}, {"workload_id", e.workload_id}, {"state", e.state}});
      return Status::Ok();
    }
    // Ended states are final; an event that is stale or repeated changes nothing.
    if (!WorkloadMayGo(w->state, *state)) return Status::Ok();
    const std::optional<std::string> container =
        e.container_id.empty() ? std::nullopt : std::optional<std::string>(e.container_id);
    if (IsActiveWorkloadState(*state)) {
      GPUNEX_RETURN_IF_ERROR(s.SetWorkloadProgress(e.workload_id, *state, container, now));
      return RunWorkloadHooks(tx, now, e.workload_id);
    }
    // RNT-3: who ended it, from what the engine said (endings.h), never from who reports it.
    const Ending ending = EndingOfEvent(e, w->spec.image);
    GPUNEX_RETURN_IF_ERROR(s.EndWorkload(e.workload_id, *state, e.exit_code,
                                         e.reason.empty() ? e.state : e.reason, ending, container,
                                         now)
                               .status());
    GPUNEX_RETURN_IF_ERROR(RefreshListing(tx, now, machine_id));
    return RunWorkloadHooks(tx, now, e.workload_id);
  });
}

Status Fleet::HandleLogs(const std::string& machine_id, const protocol::Logs& l) {
  const Timestamp now = options_.clock->Now();
  // Any text is a log chunk; what cannot be stored as TEXT (NUL, PostgreSQL refuses it) or
  // shown (other control characters) is replaced here too, whatever the agent did.
  size_t replaced = 0;
  const std::string data = protocol::SanitizeLogText(l.data, &replaced);
  if (replaced > 0) {
    MutexLock lock(&counts_mu_);
    counts_.log_bytes_replaced += static_cast<int64_t>(replaced);
  }
  return db_.Transact([&](store::Tx& tx) -> Status {
    FleetStore s(tx);
    GPUNEX_ASSIGN_OR_RETURN(std::optional<Workload> w, s.FindWorkload(l.workload_id));
    if (!w || w->machine_id != machine_id) return Status::Ok();
    GPUNEX_ASSIGN_OR_RETURN(int64_t n, s.CountLogChunks(l.workload_id));
    if (n >= kMaxLogChunksPerWorkload) return Status::Ok();  // capped; see docs
    return s.InsertLogChunk(l.workload_id, {l.stream, l.seq, now, data});
  });
}

void Fleet::CountRefused(std::string_view reason) {
  MutexLock lock(&counts_mu_);
  ++counts_.refused[std::string(reason)];
}

Fleet::MessageCounts Fleet::message_counts() const {
  MessageCounts out;
  {
    MutexLock lock(&counts_mu_);
    out = counts_;
  }
  // Every reason is shown, at 0 until it happens.
  for (const char* reason : {"forbidden", "invalid_message", "protocol_error"}) {
    out.refused.try_emplace(reason, 0);
  }
  return out;
}

void Fleet::ScheduleOn(Background& background) {
  background.Add({.name = "fleet.sweep",
                  .every = std::chrono::milliseconds(options_.sweep_interval_ms),
                  .pass = [this] { return SweepOnce(); }});
}

Status Fleet::SweepOnce() {
  const Timestamp now = options_.clock->Now();
  const Timestamp cutoff = now - Seconds(options_.offline_after_s);
  std::vector<std::string> stale;
  GPUNEX_RETURN_IF_ERROR(db_.Read([&](store::Tx& tx) -> Status {
    GPUNEX_ASSIGN_OR_RETURN(stale, FleetStore(tx).StaleOnlineMachines(cutoff));
    return Status::Ok();
  }));
  for (const auto& mid : stale) {
    GPUNEX_RETURN_IF_ERROR(db_.Transact([&](store::Tx& tx) -> Status {
      GPUNEX_ASSIGN_OR_RETURN(bool still, FleetStore(tx).IsStaleOnline(mid, cutoff));
      if (!still) return Status::Ok();
      return Transition(tx, mid, MachineStatus::kOffline, IntervalEndReason::kMissedHeartbeats,
                        now);
    }));
    LogInfo("machine.offline", {{"machine_id", mid}, {"reason", "missed_heartbeats"}});
  }
  // Connections that never said hello.
  std::vector<std::shared_ptr<AgentSession>> silent;
  std::vector<std::string> connected;
  {
    MutexLock lock(&mu_);
    const Timestamp hello_cutoff = now - Seconds(options_.hello_timeout_s);
    std::vector<std::weak_ptr<AgentSession>> still;
    for (auto& w : pending_hello_) {
      auto s = w.lock();
      if (!s || s->said_hello()) continue;
      if (s->opened_at() < hello_cutoff) {
        silent.push_back(s);
      } else {
        still.push_back(w);
      }
    }
    pending_hello_ = std::move(still);
    for (const auto& [mid, s] : sessions_) connected.push_back(mid);
  }
  for (auto& s : silent) s->Refuse("protocol_error", "no hello within the time limit");
  GPUNEX_RETURN_IF_ERROR(FailLostWorkloads());
  // Commands queued by other gpunexd instances for machines connected here: one query
  // for the machines that have any, not one per connected machine.
  if (connected.empty()) return Status::Ok();
  std::vector<std::string> waiting;
  GPUNEX_RETURN_IF_ERROR(db_.Read([&](store::Tx& tx) -> Status {
    GPUNEX_ASSIGN_OR_RETURN(waiting, FleetStore(tx).MachinesWithPendingCommands());
    return Status::Ok();
  }));
  for (const auto& mid : waiting) {
    if (std::binary_search(connected.begin(), connected.end(), mid)) DeliverPending(mid);
  }
  return Status::Ok();
}

}  // namespace gpunex::platform::fleet
