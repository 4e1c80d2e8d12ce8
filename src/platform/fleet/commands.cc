// Commands to agents, exactly once: written in the deciding transaction, (re)sent on
// every connect until their result arrives, results applied once in the transaction
// that records them (result hooks).
#include "common/ids.h"
#include "common/invariant.h"
#include "common/json.h"
#include "common/log.h"
#include "platform/fleet/agent_session.h"
#include "platform/fleet/fleet.h"
#include "platform/fleet/fleet_store.h"

namespace gpunex::platform::fleet {

StatusOr<std::string> Fleet::Enqueue(store::Tx& tx, Timestamp now, const std::string& machine_id,
                                     std::string_view kind, std::string payload_json) {
  const std::string id = NewId("cmd");
  GPUNEX_RETURN_IF_ERROR(FleetStore(tx).InsertCommand({id,
                                                       machine_id,
                                                       std::string(kind),
                                                       std::move(payload_json),
                                                       CommandState::kPending,
                                                       now,
                                                       {}}));
  tx.AfterCommit([this, machine_id] {
    if (Connected(machine_id)) DeliverPending(machine_id);
  });
  return id;
}

StatusOr<std::string> Fleet::EnqueueCommand(store::Tx& tx, Timestamp now,
                                            const std::string& machine_id,
                                            const protocol::StartWorkload& payload) {
  // ToJson leaves registry_auth out: the stored command never has it.
  GPUNEX_ASSIGN_OR_RETURN(std::string id, Enqueue(tx, now, machine_id, protocol::kStartWorkload,
                                                  ToJsonText(protocol::ToJson(payload))));
  // Held before the commit, so that the delivery after it finds them; a transaction that
  // rolls back leaves an id no command has, which expires.
  if (payload.registry_auth) HoldCredentials(id, *payload.registry_auth, now);
  return id;
}

void Fleet::HoldCredentials(const std::string& command_id, protocol::RegistryCredentials c,
                            Timestamp now) {
  MutexLock lock(&credentials_mu_);
  ForgetExpiredCredentials(now);
  held_credentials_[command_id] = {std::move(c), now + kRegistryCredentialsTtl};
}

std::optional<protocol::RegistryCredentials> Fleet::CredentialsFor(const std::string& command_id,
                                                                   Timestamp now) {
  MutexLock lock(&credentials_mu_);
  ForgetExpiredCredentials(now);
  auto it = held_credentials_.find(command_id);
  if (it == held_credentials_.end()) return std::nullopt;
  return it->second.credentials;
}

void Fleet::ForgetCredentials(const std::string& command_id) {
  MutexLock lock(&credentials_mu_);
  auto it = held_credentials_.find(command_id);
  if (it == held_credentials_.end()) return;
  protocol::Wipe(it->second.credentials);
  held_credentials_.erase(it);
}

void Fleet::ForgetExpiredCredentials(Timestamp now) {
  for (auto it = held_credentials_.begin(); it != held_credentials_.end();) {
    if (it->second.until > now) {
      ++it;
      continue;
    }
    protocol::Wipe(it->second.credentials);
    it = held_credentials_.erase(it);
  }
}

StatusOr<std::string> Fleet::EnqueueCommand(store::Tx& tx, Timestamp now,
                                            const std::string& machine_id,
                                            const protocol::StopWorkload& payload) {
  return Enqueue(tx, now, machine_id, protocol::kStopWorkload,
                 ToJsonText(protocol::ToJson(payload)));
}

StatusOr<std::string> Fleet::EnqueueCommand(store::Tx& tx, Timestamp now,
                                            const std::string& machine_id,
                                            const protocol::RunBenchmark& payload) {
  return Enqueue(tx, now, machine_id, protocol::kRunBenchmark,
                 ToJsonText(protocol::ToJson(payload)));
}

Status Fleet::CancelCommand(store::Tx& tx, Timestamp now, const std::string& machine_id,
                            const std::string& command_id, const std::string& reason) {
  FleetStore s(tx);
  GPUNEX_ASSIGN_OR_RETURN(std::optional<CommandRow> cmd, s.FindCommand(machine_id, command_id));
  if (!cmd || cmd->state == CommandState::kDone) return Status::Ok();
  GPUNEX_INVARIANT(CommandMayGo(cmd->state, CommandState::kDone),
                   "a command is done once, from an earlier state");
  return s.MarkCommandDone(
      command_id, now, false,
      ToJsonText(json::object{{"error", "cancelled: " + reason}, {"data", json::object{}}}));
}

void Fleet::OnResult(std::string kind, ResultHook hook) {
  result_hooks_[std::move(kind)] = std::move(hook);
}

void Fleet::DeliverPending(const std::string& machine_id) {
  std::shared_ptr<AgentSession> s;
  {
    MutexLock lock(&mu_);
    auto it = sessions_.find(machine_id);
    if (it == sessions_.end()) return;
    s = it->second;
  }
  MutexLock order(&delivery_mu_);
  // On every (re)connect everything unfinished is sent again; the agent answers repeats
  // from its record, so a command never runs twice.
  std::vector<CommandRow> rows;
  Status st = db_.Read([&](store::Tx& tx) -> Status {
    GPUNEX_ASSIGN_OR_RETURN(rows, FleetStore(tx).UnfinishedCommands(machine_id));
    return Status::Ok();
  });
  if (!st.ok()) {
    LogError("agent.delivery_failed", {{"machine_id", machine_id}, {"error", st.ToString()}});
    return;
  }
  for (const CommandRow& c : rows) {
    // Already sent on this connection: wait for its answer. (Not told by sent_at: the
    // instance that sent it may have a clock ahead of this one's.)
    if (!s->MarkSent(c.id)) continue;
    auto payload = ParseJson(c.payload_json);
    if (!payload.ok() || !payload->is_object()) continue;
    protocol::Command command{c.id, c.kind, payload->get_object()};
    if (c.kind == protocol::kStartWorkload) {
      if (auto auth = CredentialsFor(c.id, options_.clock->Now())) {
        command.payload["registry_auth"] = protocol::RegistryCredentialsJson(*auth);
        protocol::Wipe(*auth);
      }
    }
    if (!s->Send(command)) return;
    Status up = db_.Transact(
        [&](store::Tx& tx) { return FleetStore(tx).MarkCommandSent(c.id, options_.clock->Now()); });
    if (!up.ok()) LogWarn("agent.command_mark_failed", {{"error", up.ToString()}});
  }
}

Status Fleet::HandleAck(const std::string& machine_id, const protocol::Ack& a) {
  const Timestamp now = options_.clock->Now();
  return db_.Transact([&](store::Tx& tx) {
    return FleetStore(tx).MarkCommandAcked(machine_id, a.command_id, now);
  });
}

Status Fleet::HandleResult(const std::string& machine_id, const protocol::Result& r) {
  const Timestamp now = options_.clock->Now();
  return db_.Transact([&](store::Tx& tx) -> Status {
    FleetStore s(tx);
    GPUNEX_ASSIGN_OR_RETURN(std::optional<CommandRow> cmd, s.FindCommand(machine_id, r.command_id));
    if (!cmd) return Status::Ok();  // unknown, or another machine's
    // The agent has the command: what it carried for the pull is not needed here any more.
    ForgetCredentials(r.command_id);
    if (cmd->state == CommandState::kDone) return Status::Ok();  // a repeat
    GPUNEX_INVARIANT(CommandMayGo(cmd->state, CommandState::kDone),
                     "a command is done once, from an earlier state");
    GPUNEX_RETURN_IF_ERROR(s.MarkCommandDone(
        r.command_id, now, r.ok, ToJsonText(json::object{{"error", r.error}, {"data", r.data}})));
    auto hook = result_hooks_.find(cmd->kind);
    if (hook == result_hooks_.end()) return Status::Ok();
    GPUNEX_ASSIGN_OR_RETURN(json::value payload, ParseJson(cmd->payload_json));
    if (!payload.is_object()) return Internal("stored command payload is not an object");
    return hook->second(tx, now, machine_id,
                        protocol::Command{cmd->id, cmd->kind, payload.get_object()}, r);
  });
}

}  // namespace gpunex::platform::fleet
