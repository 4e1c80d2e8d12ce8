#include "platform/fleet/fleet.h"

#include <algorithm>
#include <set>

#include "common/ids.h"
#include "common/log.h"
#include "common/paging.h"

namespace gpunex::platform::fleet {
namespace {

constexpr int kMaxLogChunksPerWorkload = 4096;

Status AddEvent(store::Tx& tx, const std::string& machine_id, std::string_view kind,
                json::object detail, UnixMicros now) {
  return tx
      .Exec("INSERT INTO machine_events (id, machine_id, at, kind, detail) VALUES (?, ?, ?, ?, ?)",
            {NewId("mev"), machine_id, now, std::string(kind), ToJsonText(detail)})
      .status();
}

// Moves a machine to `state` ("online"/"offline") when it is not there yet: closes the
// open interval and opens the next one.
Status Transition(store::Tx& tx, const std::string& machine_id, std::string_view state,
                  std::string_view reason, UnixMicros now) {
  GPUNEX_ASSIGN_OR_RETURN(store::Rows rows,
                          tx.Query("SELECT status FROM machines WHERE id = ?", {machine_id}));
  if (rows.empty()) return NotFound("no such machine");
  if (rows[0].Str(0) == state) return Status::Ok();
  GPUNEX_RETURN_IF_ERROR(tx.Exec("UPDATE machine_intervals SET ended_at = ?, end_reason = ? WHERE "
                                 "machine_id = ? AND ended_at IS NULL",
                                 {now, std::string(reason), machine_id})
                             .status());
  GPUNEX_RETURN_IF_ERROR(tx.Exec("INSERT INTO machine_intervals (id, machine_id, state, started_at) "
                                 "VALUES (?, ?, ?, ?)",
                                 {NewId("mit"), machine_id, std::string(state), now})
                             .status());
  GPUNEX_RETURN_IF_ERROR(tx.Exec("UPDATE machines SET status = ?, status_since = ? WHERE id = ?",
                                 {std::string(state), now, machine_id})
                             .status());
  return AddEvent(tx, machine_id, state, {{"reason", std::string(reason)}}, now);
}

std::string InventoryHash(const protocol::Hello& h) {
  std::vector<std::string> parts;
  for (const auto& g : h.gpus) {
    parts.push_back(g.uuid + "|" + g.name + "|" + std::to_string(g.vram_mb) + "|" + g.driver_version +
                    "|" + std::to_string(g.pcie_gen_max) + "x" + std::to_string(g.pcie_width_max));
  }
  std::sort(parts.begin(), parts.end());
  std::string all;
  for (const auto& p : parts) all += p + "\n";
  return Sha256Hex(all);
}

json::object HostJson(const protocol::Host& h) {
  return {{"hostname", h.hostname},         {"cpu_model", h.cpu_model},
          {"cpu_cores", h.cpu_cores},       {"ram_mb", h.ram_mb},
          {"disk_total_mb", h.disk_total_mb}, {"disk_free_mb", h.disk_free_mb},
          {"os", h.os},                     {"kernel", h.kernel},
          {"docker_version", h.docker_version}};
}

json::object GpuInfoJson(const protocol::Gpu& g) {
  return {{"driver_version", g.driver_version},
          {"cuda_driver_version", g.cuda_driver_version},
          {"pcie_gen_max", g.pcie_gen_max},
          {"pcie_gen_current", g.pcie_gen_current},
          {"pcie_width_max", g.pcie_width_max},
          {"pcie_width_current", g.pcie_width_current},
          {"power_limit_w", g.power_limit_w}};
}

json::value ParseOr(const std::optional<std::string>& s) {
  return s ? ParseJsonOr(*s, nullptr) : json::value(nullptr);
}

json::value OptTime(const std::optional<int64_t>& t) {
  return t ? json::value(FormatRfc3339(*t)) : json::value(nullptr);
}

}  // namespace

// ---------------------------------------------------------------- AgentSession

AgentSession::AgentSession(Fleet& fleet, std::string provider_id, std::string token_id,
                           std::shared_ptr<AgentChannel> channel, std::string remote_addr)
    : fleet_(fleet),
      provider_id_(std::move(provider_id)),
      token_id_(std::move(token_id)),
      channel_(std::move(channel)),
      remote_addr_(std::move(remote_addr)),
      opened_at_(fleet.options().clock->Now()) {}

std::string AgentSession::machine_id() const {
  std::lock_guard g(mu_);
  return machine_id_;
}

bool AgentSession::Send(const protocol::PlatformMessage& m) {
  return channel_->Send(protocol::Serialize(m));
}

void AgentSession::Refuse(std::string code, std::string message) {
  if (refused_.exchange(true)) return;
  LogWarn("agent.refused", {{"provider_id", provider_id_},
                            {"remote", remote_addr_},
                            {"code", code},
                            {"message", message}});
  channel_->Send(protocol::Serialize(protocol::PlatformMessage(protocol::Error{code, message})));
  channel_->Close(1008, code);
}

void AgentSession::OnMessage(const std::string& text) {
  // Messages that arrived before a refusal took effect are not acted on.
  if (closed_ || refused_) return;
  auto parsed = protocol::ParseAgentMessage(text);
  if (!parsed.ok()) {
    Refuse("invalid_message", parsed.status().ToString());
    return;
  }
  Status st;
  if (auto* hello = std::get_if<protocol::Hello>(&*parsed)) {
    if (hello_done_) {
      Refuse("protocol_error", "hello was already received on this connection");
      return;
    }
    st = HandleHello(*hello);
    if (!st.ok() && !closed_) {
      if (st.code() == StatusCode::kPermissionDenied || st.code() == StatusCode::kFailedPrecondition) {
        Refuse(st.code() == StatusCode::kPermissionDenied ? "forbidden" : "refused", st.message());
      } else {
        Refuse("internal", "the platform could not register the machine; retry later");
      }
    }
    return;
  }
  if (!hello_done_) {
    Refuse("protocol_error", "the first message must be hello");
    return;
  }
  const std::string mid = machine_id();
  std::visit(
      [&](const auto& m) {
        using T = std::decay_t<decltype(m)>;
        if constexpr (std::is_same_v<T, protocol::Heartbeat>) st = fleet_.HandleHeartbeat(mid, m);
        if constexpr (std::is_same_v<T, protocol::Ack>) st = fleet_.HandleAck(mid, m);
        if constexpr (std::is_same_v<T, protocol::Result>) st = fleet_.HandleResult(mid, m);
        if constexpr (std::is_same_v<T, protocol::WorkloadEvent>) st = fleet_.HandleWorkloadEvent(mid, m);
        if constexpr (std::is_same_v<T, protocol::Logs>) st = fleet_.HandleLogs(mid, m);
        if constexpr (std::is_same_v<T, protocol::Ping>) Send(protocol::Pong{m.id});
      },
      *parsed);
  if (!st.ok()) {
    if (st.code() == StatusCode::kPermissionDenied || st.code() == StatusCode::kValidationFailed) {
      Refuse("invalid_message", st.ToString());
    } else {
      LogError("agent.message_failed", {{"machine_id", mid}, {"error", st.ToString()}});
    }
  }
}

void AgentSession::OnClose() {
  if (closed_.exchange(true)) return;
  std::string mid = machine_id();
  if (!mid.empty()) {
    fleet_.Unregister(mid, this);
    Status st = fleet_.db().Transact([&](store::Tx& tx) {
      return AddEvent(tx, mid, "disconnected", {{"remote", remote_addr_}}, fleet_.options().clock->Now());
    });
    if (!st.ok()) LogWarn("agent.disconnect_event_failed", {{"error", st.ToString()}});
  }
  LogInfo("agent.disconnected", {{"machine_id", mid}, {"remote", remote_addr_}});
}

Status AgentSession::HandleHello(const protocol::Hello& h) {
  const bool emulated =
      h.emulated || std::any_of(h.gpus.begin(), h.gpus.end(), [](const auto& g) { return g.emulated; });
  if (emulated && !fleet_.options().allow_emulated_gpus) {
    return FailedPrecondition("this platform does not accept emulated GPUs (allow_emulated_gpus is off)");
  }
  std::set<std::string> uuids;
  for (const auto& g : h.gpus) {
    if (!uuids.insert(g.uuid).second) return FailedPrecondition("GPU " + g.uuid + " is reported twice");
  }
  const UnixMicros now = fleet_.options().clock->Now();
  const std::string key_hash = Sha256Hex(h.machine_key);
  std::string machine_id;
  std::vector<std::string> keep, suspects;
  GPUNEX_RETURN_IF_ERROR(fleet_.db().Transact([&](store::Tx& tx) -> Status {
    keep.clear();
    suspects.clear();
    GPUNEX_ASSIGN_OR_RETURN(store::Rows by_key,
                            tx.Query("SELECT id, provider_id FROM machines WHERE key_hash = ?", {key_hash}));
    if (!by_key.empty()) {
      if (by_key[0].Str(1) != provider_id_) {
        return PermissionDenied("this machine belongs to another provider");
      }
      if (!h.machine_id.empty() && h.machine_id != by_key[0].Str(0)) {
        return PermissionDenied("the machine id does not match the machine key");
      }
      machine_id = by_key[0].Str(0);
    } else {
      if (!h.machine_id.empty()) {
        GPUNEX_ASSIGN_OR_RETURN(store::Rows by_id,
                                tx.Query("SELECT provider_id FROM machines WHERE id = ?", {h.machine_id}));
        if (!by_id.empty()) {
          return PermissionDenied(by_id[0].Str(0) == provider_id_
                                      ? "the machine key does not match this machine id"
                                      : "this machine id belongs to another provider");
        }
      }
      machine_id = NewId("mch");
      GPUNEX_RETURN_IF_ERROR(
          tx.Exec("INSERT INTO machines (id, provider_id, key_hash, name, status, emulated, agent_version, "
                  "host, inventory_hash, created_at, last_seen_at, status_since) VALUES "
                  "(?, ?, ?, ?, 'offline', ?, ?, ?, '', ?, ?, ?)",
                  {machine_id, provider_id_, key_hash,
                   h.host.hostname.empty() ? std::string("machine") : h.host.hostname,
                   int64_t{emulated}, h.agent_version, ToJsonText(HostJson(h.host)), now, now, now})
              .status());
      GPUNEX_RETURN_IF_ERROR(AddEvent(tx, machine_id, "registered", {{"remote", remote_addr_}}, now));
    }
    GPUNEX_ASSIGN_OR_RETURN(store::Rows cur,
                            tx.Query("SELECT inventory_hash FROM machines WHERE id = ?", {machine_id}));
    const std::string inv = InventoryHash(h);
    if (cur[0].Str(0) != inv) {
      GPUNEX_RETURN_IF_ERROR(AddEvent(tx, machine_id, "inventory_changed",
                                      {{"gpus", static_cast<int64_t>(h.gpus.size())}}, now));
    }
    GPUNEX_RETURN_IF_ERROR(
        tx.Exec("UPDATE machines SET emulated = ?, agent_version = ?, host = ?, inventory_hash = ?, "
                "last_seen_at = ? WHERE id = ?",
                {int64_t{emulated}, h.agent_version, ToJsonText(HostJson(h.host)), inv, now, machine_id})
            .status());
    GPUNEX_RETURN_IF_ERROR(
        tx.Exec("UPDATE machine_gpus SET present = 0 WHERE machine_id = ?", {machine_id}).status());
    for (const auto& g : h.gpus) {
      GPUNEX_ASSIGN_OR_RETURN(
          int64_t updated,
          tx.Exec("UPDATE machine_gpus SET idx = ?, name = ?, catalog_id = ?, vram_mb = ?, emulated = ?, "
                  "present = 1, info = ? WHERE machine_id = ? AND uuid = ?",
                  {g.index, g.name, g.catalog_id.empty() ? std::string("other") : g.catalog_id, g.vram_mb,
                   int64_t{g.emulated}, ToJsonText(GpuInfoJson(g)), machine_id, g.uuid}));
      if (updated == 0) {
        GPUNEX_RETURN_IF_ERROR(
            tx.Exec("INSERT INTO machine_gpus (id, machine_id, idx, uuid, name, catalog_id, vram_mb, "
                    "emulated, present, enabled, listed, delisted_reason, info, created_at) VALUES "
                    "(?, ?, ?, ?, ?, ?, ?, ?, 1, 1, ?, ?, ?, ?)",
                    {NewId("gpu"), machine_id, g.index, g.uuid, g.name,
                     g.catalog_id.empty() ? std::string("other") : g.catalog_id, g.vram_mb,
                     int64_t{g.emulated}, int64_t{!fleet_.options().list_after_benchmark},
                     fleet_.options().list_after_benchmark ? store::Value(std::string("awaiting its first benchmark"))
                                                           : store::Value(nullptr),
                     ToJsonText(GpuInfoJson(g)), now})
                .status());
      }
    }
    GPUNEX_RETURN_IF_ERROR(Transition(tx, machine_id, "online", "agent_connected", now));
    GPUNEX_RETURN_IF_ERROR(AddEvent(tx, machine_id, "connected",
                                    {{"remote", remote_addr_}, {"agent_version", h.agent_version}}, now));
    // Reconcile: workloads the platform expects here are kept; a started workload whose
    // container the agent no longer has is lost on the provider's side unless the agent
    // reports its end right after the welcome (see suspected_lost_).
    std::set<std::string> reported;
    for (const auto& c : h.containers) {
      if (!c.workload_id.empty()) reported.insert(c.workload_id);
    }
    GPUNEX_ASSIGN_OR_RETURN(
        store::Rows active,
        tx.Query("SELECT id, state FROM workloads WHERE machine_id = ? AND state IN "
                 "('pending', 'starting', 'running') ORDER BY id",
                 {machine_id}));
    for (const auto& w : active) {
      const std::string wid = w.Str(0);
      if (w.Str(1) != "pending" && !reported.count(wid)) {
        suspects.push_back(wid);
        continue;
      }
      keep.push_back(wid);
    }
    return Status::Ok();
  }));
  {
    std::lock_guard g(mu_);
    machine_id_ = machine_id;
  }
  if (refused_) return Status::Ok();
  fleet_.SuspectLost(suspects);
  hello_done_ = true;
  // Welcome first, so no command can overtake it; then take over the machine and send
  // what is pending.
  Send(protocol::Welcome{machine_id, fleet_.options().heartbeat_interval_s, keep});
  registered_at_ = fleet_.options().clock->Now();
  fleet_.Register(machine_id, shared_from_this());
  LogInfo("agent.connected", {{"machine_id", machine_id},
                              {"provider_id", provider_id_},
                              {"gpus", static_cast<int64_t>(h.gpus.size())},
                              {"emulated", emulated},
                              {"remote", remote_addr_}});
  fleet_.DeliverPending(machine_id);
  return Status::Ok();
}

// ---------------------------------------------------------------- Fleet

Fleet::Fleet(store::Database& db, FleetOptions options) : db_(db), options_(options) {}

Fleet::~Fleet() { Stop(); }

void Fleet::OnResult(std::string kind, ResultHook hook) { result_hooks_[std::move(kind)] = std::move(hook); }

std::shared_ptr<AgentSession> Fleet::Open(std::string provider_id, std::string token_id,
                                          std::shared_ptr<AgentChannel> channel,
                                          std::string remote_addr) {
  auto s = std::make_shared<AgentSession>(*this, std::move(provider_id), std::move(token_id),
                                          std::move(channel), std::move(remote_addr));
  std::lock_guard g(mu_);
  pending_hello_.push_back(s);
  return s;
}

void Fleet::SuspectLost(const std::vector<std::string>& workload_ids) {
  const UnixMicros deadline =
      options_.clock->Now() +
      std::max<UnixMicros>(5, 2 * options_.heartbeat_interval_s) * kMicrosPerSecond;
  std::lock_guard g(mu_);
  for (const auto& id : workload_ids) suspected_lost_.emplace(id, deadline);
}

Status Fleet::FailLostWorkloads() {
  const UnixMicros now = options_.clock->Now();
  std::vector<std::string> due;
  {
    std::lock_guard g(mu_);
    for (auto it = suspected_lost_.begin(); it != suspected_lost_.end();) {
      if (it->second <= now) {
        due.push_back(it->first);
        it = suspected_lost_.erase(it);
      } else {
        ++it;
      }
    }
  }
  for (const auto& wid : due) {
    GPUNEX_RETURN_IF_ERROR(db_.Transact([&](store::Tx& tx) {
      return tx
          .Exec("UPDATE workloads SET state = 'failed', end_reason = 'container lost', "
                "end_party = 'provider', ended_at = ?, updated_at = ? WHERE id = ? AND state IN "
                "('starting', 'running')",
                {now, now, wid})
          .status();
    }));
  }
  return Status::Ok();
}

void Fleet::CloseSessionsForToken(const std::string& token_id) {
  std::vector<std::shared_ptr<AgentSession>> doomed;
  {
    std::lock_guard g(mu_);
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
    std::lock_guard g(mu_);
    auto it = sessions_.find(machine_id);
    if (it != sessions_.end() && it->second != s) old = it->second;
    sessions_[machine_id] = s;
  }
  // A second connection for the same machine replaces the first (e.g. after a network
  // change the old TCP connection may linger).
  if (old) old->Refuse("replaced", "another connection for this machine took over");
}

void Fleet::Unregister(const std::string& machine_id, const AgentSession* s) {
  std::lock_guard g(mu_);
  auto it = sessions_.find(machine_id);
  if (it != sessions_.end() && it->second.get() == s) sessions_.erase(it);
}

bool Fleet::Connected(const std::string& machine_id) const {
  std::lock_guard g(mu_);
  return sessions_.count(machine_id) > 0;
}

StatusOr<std::string> Fleet::EnqueueCommand(store::Tx& tx, const std::string& machine_id,
                                            std::string_view kind, const json::object& payload) {
  std::string id = NewId("cmd");
  GPUNEX_RETURN_IF_ERROR(
      tx.Exec("INSERT INTO agent_commands (id, machine_id, kind, payload, state, created_at) VALUES "
              "(?, ?, ?, ?, 'pending', ?)",
              {id, machine_id, std::string(kind), ToJsonText(payload), NowMicros()})
          .status());
  return id;
}

void Fleet::Kick(const std::string& machine_id) {
  if (Connected(machine_id)) DeliverPending(machine_id);
}

void Fleet::DeliverPending(const std::string& machine_id) {
  std::shared_ptr<AgentSession> s;
  {
    std::lock_guard g(mu_);
    auto it = sessions_.find(machine_id);
    if (it == sessions_.end()) return;
    s = it->second;
  }
  std::lock_guard order(delivery_mu_);
  // On every (re)connect everything unfinished is sent again; the agent answers repeats
  // from its record, so a command never runs twice.
  store::Rows rows;
  Status st = db_.Read([&](store::Tx& tx) -> Status {
    GPUNEX_ASSIGN_OR_RETURN(
        rows, tx.Query("SELECT id, kind, payload, state, sent_at FROM agent_commands WHERE machine_id = ? "
                       "AND state <> 'done' ORDER BY id",
                       {machine_id}));
    return Status::Ok();
  });
  if (!st.ok()) {
    LogError("agent.delivery_failed", {{"machine_id", machine_id}, {"error", st.ToString()}});
    return;
  }
  const UnixMicros session_start = s->registered_at();
  for (const auto& r : rows) {
    // Already sent on this connection: wait for its answer.
    if (!r.IsNull(4) && r.Int(4) >= session_start) continue;
    auto payload = ParseJson(r.Str(2));
    if (!payload.ok() || !payload->is_object()) continue;
    if (!s->Send(protocol::Command{r.Str(0), r.Str(1), payload->get_object()})) return;
    Status up = db_.Transact([&](store::Tx& tx) {
      return tx.Exec("UPDATE agent_commands SET sent_at = ?, state = CASE WHEN state = 'pending' THEN "
                     "'sent' ELSE state END WHERE id = ?",
                     {options_.clock->Now(), r.Str(0)})
          .status();
    });
    if (!up.ok()) LogWarn("agent.command_mark_failed", {{"error", up.ToString()}});
  }
}

Status Fleet::HandleHeartbeat(const std::string& machine_id, const protocol::Heartbeat& h) {
  const UnixMicros now = options_.clock->Now();
  const int64_t minute = now / (60 * kMicrosPerSecond);
  return db_.Transact([&](store::Tx& tx) -> Status {
    GPUNEX_RETURN_IF_ERROR(
        tx.Exec("UPDATE machines SET last_seen_at = ? WHERE id = ?", {now, machine_id}).status());
    GPUNEX_RETURN_IF_ERROR(Transition(tx, machine_id, "online", "heartbeat_resumed", now));
    for (const auto& g : h.gpus) {
      GPUNEX_ASSIGN_OR_RETURN(
          store::Rows gpu,
          tx.Query("SELECT id FROM machine_gpus WHERE machine_id = ? AND uuid = ?", {machine_id, g.uuid}));
      if (gpu.empty()) {
        return FieldError("gpus", "GPU " + g.uuid + " was not reported in hello");
      }
      const std::string gid = gpu[0].Str(0);
      json::array t;
      for (const auto& r : g.throttle_reasons) t.emplace_back(r);
      json::object tel{{"utilization_pct", g.utilization_pct}, {"memory_used_mb", g.memory_used_mb},
                       {"temperature_c", g.temperature_c},     {"power_w", g.power_w},
                       {"sm_clock_mhz", g.sm_clock_mhz},       {"throttle_reasons", std::move(t)}};
      GPUNEX_RETURN_IF_ERROR(tx.Exec("UPDATE machine_gpus SET telemetry = ?, telemetry_at = ? WHERE id = ?",
                                     {ToJsonText(tel), now, gid})
                                 .status());
      const int64_t throttled =
          std::any_of(g.throttle_reasons.begin(), g.throttle_reasons.end(), [](const std::string& r) {
            return r.find("thermal") != std::string::npos || r.find("power") != std::string::npos;
          });
      GPUNEX_RETURN_IF_ERROR(
          tx.Exec("INSERT INTO gpu_telemetry_minutes (gpu_id, minute, samples, utilization_sum, "
                  "temperature_max, power_sum, memory_used_max, throttled_samples) VALUES "
                  "(?, ?, 1, ?, ?, ?, ?, ?) ON CONFLICT (gpu_id, minute) DO UPDATE SET "
                  "samples = gpu_telemetry_minutes.samples + 1, "
                  "utilization_sum = gpu_telemetry_minutes.utilization_sum + excluded.utilization_sum, "
                  "temperature_max = CASE WHEN excluded.temperature_max > gpu_telemetry_minutes.temperature_max "
                  "THEN excluded.temperature_max ELSE gpu_telemetry_minutes.temperature_max END, "
                  "power_sum = gpu_telemetry_minutes.power_sum + excluded.power_sum, "
                  "memory_used_max = CASE WHEN excluded.memory_used_max > gpu_telemetry_minutes.memory_used_max "
                  "THEN excluded.memory_used_max ELSE gpu_telemetry_minutes.memory_used_max END, "
                  "throttled_samples = gpu_telemetry_minutes.throttled_samples + excluded.throttled_samples",
                  {gid, minute, std::max<int64_t>(g.utilization_pct, 0), g.temperature_c, g.power_w,
                   g.memory_used_mb, throttled})
              .status());
    }
    return Status::Ok();
  });
}

Status Fleet::HandleAck(const std::string& machine_id, const protocol::Ack& a) {
  return db_.Transact([&](store::Tx& tx) {
    return tx
        .Exec("UPDATE agent_commands SET state = 'acked', acked_at = ? WHERE id = ? AND machine_id = ? "
              "AND state IN ('pending', 'sent')",
              {options_.clock->Now(), a.command_id, machine_id})
        .status();
  });
}

Status Fleet::HandleResult(const std::string& machine_id, const protocol::Result& r) {
  const UnixMicros now = options_.clock->Now();
  return db_.Transact([&](store::Tx& tx) -> Status {
    GPUNEX_ASSIGN_OR_RETURN(
        store::Rows cmd,
        tx.Query("SELECT kind, payload, state FROM agent_commands WHERE id = ? AND machine_id = ?",
                 {r.command_id, machine_id}));
    if (cmd.empty() || cmd[0].Str(2) == "done") return Status::Ok();  // unknown or repeat
    GPUNEX_RETURN_IF_ERROR(
        tx.Exec("UPDATE agent_commands SET state = 'done', done_at = ?, ok = ?, result = ? WHERE id = ?",
                {now, int64_t{r.ok}, ToJsonText(json::object{{"error", r.error}, {"data", r.data}}),
                 r.command_id})
            .status());
    if (auto hook = result_hooks_.find(cmd[0].Str(0)); hook != result_hooks_.end()) {
      GPUNEX_ASSIGN_OR_RETURN(json::value payload, ParseJson(cmd[0].Str(1)));
      if (!payload.is_object()) return Internal("stored command payload is not an object");
      return hook->second(tx, machine_id, payload.get_object(), r);
    }
    if (cmd[0].Str(0) == "start_workload" && !r.ok) {
      auto payload = ParseJson(cmd[0].Str(1));
      if (payload.ok() && payload->is_object() && payload->get_object().contains("workload_id")) {
        std::string wid(payload->at("workload_id").as_string());
        GPUNEX_RETURN_IF_ERROR(
            tx.Exec("UPDATE workloads SET state = 'failed', end_reason = ?, end_party = 'customer', "
                    "ended_at = ?, updated_at = ? WHERE id = ? AND machine_id = ? AND state IN "
                    "('pending', 'starting', 'running')",
                    {"start refused by the agent: " + r.error, now, now, wid, machine_id})
                .status());
      }
    }
    return Status::Ok();
  });
}

Status Fleet::HandleWorkloadEvent(const std::string& machine_id, const protocol::WorkloadEvent& e) {
  const UnixMicros now = options_.clock->Now();
  return db_.Transact([&](store::Tx& tx) -> Status {
    GPUNEX_ASSIGN_OR_RETURN(
        store::Rows w, tx.Query("SELECT state FROM workloads WHERE id = ? AND machine_id = ?",
                                {e.workload_id, machine_id}));
    if (w.empty()) {
      LogWarn("agent.unknown_workload", {{"machine_id", machine_id}, {"workload_id", e.workload_id}});
      return Status::Ok();
    }
    const std::string cur = w[0].Str(0);
    if (!IsActiveWorkloadState(cur)) return Status::Ok();  // ended states are final
    static const std::vector<std::string> kOrder = {"pending", "starting", "running"};
    auto rank = [&](const std::string& s) {
      auto it = std::find(kOrder.begin(), kOrder.end(), s);
      return it == kOrder.end() ? 3 : static_cast<int>(it - kOrder.begin());
    };
    if (rank(e.state) <= rank(cur)) return Status::Ok();  // stale or repeated
    if (e.state == "starting" || e.state == "running") {
      return tx
          .Exec("UPDATE workloads SET state = ?, container_id = COALESCE(?, container_id), "
                "started_at = CASE WHEN ? = 'running' THEN ? ELSE started_at END, updated_at = ? WHERE id = ?",
                {e.state, e.container_id.empty() ? store::Value(nullptr) : store::Value(e.container_id),
                 e.state, now, now, e.workload_id})
          .status();
    }
    // RNT-3: who ended it. A workload that exits by itself or is stopped on request is the
    // customer's doing; a failure is the provider's unless it is the customer's image or
    // time limit.
    std::string party = "customer";
    if (e.state == "failed" && !e.reason.starts_with("timeout") && !e.reason.starts_with("image")) {
      party = "provider";
    }
    return tx
        .Exec("UPDATE workloads SET state = ?, exit_code = ?, end_reason = ?, end_party = ?, ended_at = ?, "
              "updated_at = ?, container_id = COALESCE(?, container_id) WHERE id = ?",
              {e.state, e.exit_code ? store::Value(*e.exit_code) : store::Value(nullptr),
               e.reason.empty() ? e.state : e.reason, party, now, now,
               e.container_id.empty() ? store::Value(nullptr) : store::Value(e.container_id),
               e.workload_id})
        .status();
  });
}

Status Fleet::HandleLogs(const std::string& machine_id, const protocol::Logs& l) {
  return db_.Transact([&](store::Tx& tx) -> Status {
    GPUNEX_ASSIGN_OR_RETURN(store::Rows w, tx.Query("SELECT 1 FROM workloads WHERE id = ? AND machine_id = ?",
                                                    {l.workload_id, machine_id}));
    if (w.empty()) return Status::Ok();
    GPUNEX_ASSIGN_OR_RETURN(store::Rows n, tx.Query("SELECT COUNT(*) FROM workload_logs WHERE workload_id = ?",
                                                    {l.workload_id}));
    if (n[0].Int(0) >= kMaxLogChunksPerWorkload) return Status::Ok();  // capped; see docs
    return tx
        .Exec("INSERT INTO workload_logs (workload_id, stream, seq, at, data) VALUES (?, ?, ?, ?, ?) "
              "ON CONFLICT (workload_id, stream, seq) DO NOTHING",
              {l.workload_id, l.stream, l.seq, options_.clock->Now(), l.data})
        .status();
  });
}

void Fleet::Start() {
  std::lock_guard g(stop_mu_);
  if (sweeper_.joinable()) return;
  stopping_ = false;
  sweeper_ = std::thread([this] {
    std::unique_lock lock(stop_mu_);
    while (!stopping_) {
      lock.unlock();
      Status st = SweepOnce();
      if (!st.ok()) LogWarn("fleet.sweep_failed", {{"error", st.ToString()}});
      lock.lock();
      stop_cv_.wait_for(lock, std::chrono::milliseconds(options_.sweep_interval_ms),
                        [this] { return stopping_; });
    }
  });
}

void Fleet::Stop() {
  {
    std::lock_guard g(stop_mu_);
    stopping_ = true;
  }
  stop_cv_.notify_all();
  if (sweeper_.joinable()) sweeper_.join();
}

Status Fleet::SweepOnce() {
  const UnixMicros now = options_.clock->Now();
  const UnixMicros cutoff = now - static_cast<UnixMicros>(options_.offline_after_s) * kMicrosPerSecond;
  store::Rows stale;
  GPUNEX_RETURN_IF_ERROR(db_.Read([&](store::Tx& tx) -> Status {
    GPUNEX_ASSIGN_OR_RETURN(
        stale, tx.Query("SELECT id FROM machines WHERE status = 'online' AND last_seen_at < ?", {cutoff}));
    return Status::Ok();
  }));
  for (const auto& r : stale) {
    const std::string mid = r.Str(0);
    GPUNEX_RETURN_IF_ERROR(db_.Transact([&](store::Tx& tx) -> Status {
      GPUNEX_ASSIGN_OR_RETURN(store::Rows again,
                              tx.Query("SELECT 1 FROM machines WHERE id = ? AND status = 'online' AND "
                                       "last_seen_at < ?",
                                       {mid, cutoff}));
      if (again.empty()) return Status::Ok();
      return Transition(tx, mid, "offline", "missed_heartbeats", now);
    }));
    LogInfo("machine.offline", {{"machine_id", mid}, {"reason", "missed_heartbeats"}});
  }
  // Connections that never said hello.
  std::vector<std::shared_ptr<AgentSession>> silent;
  std::vector<std::string> connected;
  {
    std::lock_guard g(mu_);
    const UnixMicros hello_cutoff =
        now - static_cast<UnixMicros>(options_.hello_timeout_s) * kMicrosPerSecond;
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
  store::Rows waiting;
  GPUNEX_RETURN_IF_ERROR(db_.Read([&](store::Tx& tx) -> Status {
    GPUNEX_ASSIGN_OR_RETURN(
        waiting, tx.Query("SELECT DISTINCT machine_id FROM agent_commands WHERE state = 'pending'"));
    return Status::Ok();
  }));
  for (const auto& r : waiting) {
    const std::string mid = r.Str(0);
    if (std::binary_search(connected.begin(), connected.end(), mid)) DeliverPending(mid);
  }
  return Status::Ok();
}

// ---------------------------------------------------------------- queries

namespace {

constexpr const char* kMachineColumns =
    "id, provider_id, name, status, emulated, agent_version, host, created_at, last_seen_at, status_since";

StatusOr<json::object> MachineJson(store::Tx& tx, const store::Row& m) {
  json::object o{{"id", m.Str(0)},
                 {"provider_id", m.Str(1)},
                 {"name", m.Str(2)},
                 {"status", m.Str(3)},
                 {"emulated", m.Bool(4)},
                 {"agent_version", m.Str(5)},
                 {"host", ParseOr(m.Str(6))},
                 {"created_at", FormatRfc3339(m.Int(7))},
                 {"last_seen", FormatRfc3339(m.Int(8))},
                 {"status_since", FormatRfc3339(m.Int(9))}};
  GPUNEX_ASSIGN_OR_RETURN(
      store::Rows gpus,
      tx.Query("SELECT id, idx, uuid, name, catalog_id, vram_mb, emulated, enabled, listed, delisted_reason, "
               "performance_score, last_benchmark_at, present, info, telemetry, telemetry_at FROM machine_gpus "
               "WHERE machine_id = ? ORDER BY idx, uuid",
               {m.Str(0)}));
  json::array arr;
  for (const auto& g : gpus) {
    json::object j{{"id", g.Str(0)},         {"index", g.Int(1)},        {"uuid", g.Str(2)},
                   {"name", g.Str(3)},       {"catalog_id", g.Str(4)},   {"vram_mb", g.Int(5)},
                   {"emulated", g.Bool(6)},  {"enabled", g.Bool(7)},     {"listed", g.Bool(8) && g.Bool(12)},
                   {"present", g.Bool(12)},  {"info", ParseOr(g.Str(13))}};
    j["delisted_reason"] = g.IsNull(9) ? json::value(nullptr) : json::value(g.Str(9));
    j["performance_score"] = g.IsNull(10) ? json::value(nullptr) : json::value(g.Real(10));
    j["last_benchmark_at"] = OptTime(g.OptInt(11));
    j["telemetry"] = ParseOr(g.OptStr(14));
    j["telemetry_at"] = OptTime(g.OptInt(15));
    arr.push_back(std::move(j));
  }
  o["gpus"] = std::move(arr);
  return o;
}

}  // namespace

StatusOr<json::object> Fleet::ListMachines(const accounts::Principal& p, const std::string& limit_s,
                                           const std::string& cursor) {
  GPUNEX_ASSIGN_OR_RETURN(int limit, ParsePageLimit(limit_s, 100, 500));
  std::string after;
  if (!cursor.empty() && !Base64UrlDecode(cursor, &after)) return FieldError("cursor", "is not a valid cursor");
  if (!p.IsAdmin() && !p.user.HasRole(accounts::kRoleProvider)) {
    return PermissionDenied("only providers and admins have machines");
  }
  std::string sql = std::string("SELECT ") + kMachineColumns + " FROM machines WHERE id > ?";
  std::vector<store::Value> params{after};
  if (!p.IsAdmin()) {
    sql += " AND provider_id = ?";
    params.emplace_back(p.user.id);
  }
  sql += " ORDER BY id LIMIT ?";
  params.emplace_back(int64_t{limit + 1});
  json::object out;
  GPUNEX_RETURN_IF_ERROR(db_.Read([&](store::Tx& tx) -> Status {
    GPUNEX_ASSIGN_OR_RETURN(store::Rows rows, tx.Query(sql, params));
    json::array items;
    for (size_t i = 0; i < rows.size() && static_cast<int>(i) < limit; ++i) {
      GPUNEX_ASSIGN_OR_RETURN(json::object m, MachineJson(tx, rows[i]));
      items.push_back(std::move(m));
    }
    out["items"] = std::move(items);
    out["next_cursor"] = static_cast<int>(rows.size()) > limit
                             ? json::value(Base64UrlEncode(rows[limit - 1].Str(0)))
                             : json::value(nullptr);
    return Status::Ok();
  }));
  return out;
}

StatusOr<json::object> Fleet::GetMachine(const accounts::Principal& p, const std::string& machine_id) {
  json::object out;
  GPUNEX_RETURN_IF_ERROR(db_.Read([&](store::Tx& tx) -> Status {
    GPUNEX_ASSIGN_OR_RETURN(store::Rows rows,
                            tx.Query(std::string("SELECT ") + kMachineColumns + " FROM machines WHERE id = ?",
                                     {machine_id}));
    if (rows.empty() || (!p.IsAdmin() && rows[0].Str(1) != p.user.id)) return NotFound("no such machine");
    GPUNEX_ASSIGN_OR_RETURN(out, MachineJson(tx, rows[0]));
    GPUNEX_ASSIGN_OR_RETURN(
        store::Rows intervals,
        tx.Query("SELECT state, started_at, ended_at, end_reason FROM machine_intervals WHERE machine_id = ? "
                 "ORDER BY started_at DESC, id DESC LIMIT 50",
                 {machine_id}));
    json::array iv;
    for (const auto& r : intervals) {
      json::object o{{"state", r.Str(0)}, {"started_at", FormatRfc3339(r.Int(1))}};
      o["ended_at"] = OptTime(r.OptInt(2));
      o["end_reason"] = r.IsNull(3) ? json::value(nullptr) : json::value(r.Str(3));
      iv.push_back(std::move(o));
    }
    out["recent_intervals"] = std::move(iv);
    return Status::Ok();
  }));
  out["connected_here"] = Connected(machine_id);
  return out;
}

StatusOr<json::object> Fleet::PatchGpu(const accounts::Principal& p, const std::string& machine_id,
                                       const std::string& gpu_id, const json::value& body) {
  if (!body.is_object()) return FieldError("body", "must be a JSON object");
  FieldErrors errors;
  JsonReader r(body.get_object(), "", &errors);
  r.RejectUnknown({"enabled"});
  auto enabled = r.Bool("enabled", true);
  if (!errors.empty()) return ValidationFailed(std::move(errors));
  GPUNEX_RETURN_IF_ERROR(db_.Transact([&](store::Tx& tx) -> Status {
    GPUNEX_ASSIGN_OR_RETURN(store::Rows m,
                            tx.Query("SELECT provider_id FROM machines WHERE id = ?", {machine_id}));
    if (m.empty() || (m[0].Str(0) != p.user.id && !p.IsAdmin())) return NotFound("no such machine");
    if (m[0].Str(0) != p.user.id) return PermissionDenied("only the machine's provider designates its GPUs");
    GPUNEX_ASSIGN_OR_RETURN(
        int64_t n, tx.Exec("UPDATE machine_gpus SET enabled = ?, listed = CASE WHEN ? = 1 AND "
                           "delisted_reason IS NULL THEN 1 ELSE 0 END WHERE id = ? AND machine_id = ?",
                           {int64_t{*enabled}, int64_t{*enabled}, gpu_id, machine_id}));
    if (n == 0) return NotFound("no such GPU on this machine");
    return accounts::Audit(tx, p.user.id, *enabled ? "gpu.enabled" : "gpu.disabled", gpu_id, p.ip);
  }));
  return GetMachine(p, machine_id);
}

}  // namespace gpunex::platform::fleet
