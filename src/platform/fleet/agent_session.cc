#include "platform/fleet/agent_session.h"

#include <algorithm>
#include <bit>
#include <map>
#include <set>

#include "common/ids.h"
#include "common/json.h"
#include "common/log.h"
#include "platform/fleet/fleet_store.h"

namespace gpunex::platform::fleet {
namespace {

std::string InventoryHash(const protocol::Hello& h) {
  std::vector<std::string> parts;
  for (const auto& g : h.gpus) {
    parts.push_back(g.uuid + "|" + g.name + "|" + std::to_string(g.vram_mb) + "|" +
                    g.driver_version + "|" + std::to_string(g.pcie_gen_max) + "x" +
                    std::to_string(g.pcie_width_max));
  }
  std::sort(parts.begin(), parts.end());
  std::string all;
  for (const auto& p : parts) all += p + "\n";
  return Sha256Hex(all);
}

MachineGpu GpuFromHello(const protocol::Gpu& g, const std::string& machine_id) {
  MachineGpu out;
  out.machine_id = machine_id;
  out.index = g.index;
  out.uuid = g.uuid;
  out.name = g.name;
  out.catalog_id = g.catalog_id.empty() ? "other" : g.catalog_id;
  out.vram_mb = g.vram_mb;
  out.emulated = g.emulated;
  out.info = {g.driver_version, g.cuda_driver_version, g.pcie_gen_max, g.pcie_gen_current,
              g.pcie_width_max, g.pcie_width_current,  g.power_limit_w};
  return out;
}

}  // namespace

// Defined in machines.cc: moves a machine to `state` when it is not
// there yet, with its interval, event and listing.
Status Transition(store::Tx& tx, const std::string& machine_id, MachineStatus state,
                  IntervalEndReason reason, Timestamp now);

AgentSession::AgentSession(Fleet& fleet, std::string provider_id, std::string token_id,
                           std::shared_ptr<AgentChannel> channel, std::string remote_addr)
    : fleet_(fleet),
      provider_id_(std::move(provider_id)),
      token_id_(std::move(token_id)),
      channel_(std::move(channel)),
      remote_addr_(std::move(remote_addr)),
      opened_at_(fleet.options().clock->Now()) {}

std::string AgentSession::machine_id() const {
  MutexLock lock(&mu_);
  return machine_id_;
}

bool AgentSession::MarkSent(const std::string& command_id) {
  MutexLock lock(&mu_);
  return sent_commands_.insert(command_id).second;
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

void AgentSession::RefuseMessage(std::string_view code, const std::string& message) {
  fleet_.CountRefused(code);
  const int64_t n = ++refused_messages_;
  // Logged, but not without bound: the first ten of a connection, then the 16th, 32nd, ...
  if (n <= 10 || std::has_single_bit(static_cast<uint64_t>(n))) {
    LogWarn("agent.message_refused", {{"machine_id", machine_id()},
                                      {"remote", remote_addr_},
                                      {"code", code},
                                      {"message", message},
                                      {"refused_on_connection", n}});
  }
}

void AgentSession::OnMessage(const std::string& text) {
  // Messages that arrived before a refusal took effect are not acted on.
  if (closed_ || refused_) return;
  auto parsed = protocol::ParseAgentMessage(text);
  if (!parsed.ok()) {
    // Before the hello there is no session to keep. After it, the connection carries every
    // rental of the machine: one bad message is refused alone, and nothing is changed.
    if (!hello_done_) {
      Refuse("invalid_message", parsed.status().ToString());
    } else {
      RefuseMessage("invalid_message", parsed.status().ToString());
    }
    return;
  }
  Status st;
  if (auto* hello = std::get_if<protocol::Hello>(&*parsed)) {
    if (hello_done_) {
      RefuseMessage("protocol_error", "hello was already received on this connection");
      return;
    }
    st = HandleHello(*hello);
    if (!st.ok() && !closed_) {
      if (st.code() == StatusCode::kPermissionDenied ||
          st.code() == StatusCode::kFailedPrecondition) {
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
        if constexpr (std::is_same_v<T, protocol::WorkloadEvent>)
          st = fleet_.HandleWorkloadEvent(mid, m);
        if constexpr (std::is_same_v<T, protocol::Logs>) st = fleet_.HandleLogs(mid, m);
        if constexpr (std::is_same_v<T, protocol::Ping>) Send(protocol::Pong{m.id});
        if constexpr (std::is_same_v<T, protocol::NetworkIsolation>)
          st = fleet_.HandleNetworkIsolation(mid, m);
      },
      *parsed);
  if (!st.ok()) {
    if (st.code() == StatusCode::kPermissionDenied) {
      RefuseMessage("forbidden", st.ToString());
    } else if (st.code() == StatusCode::kValidationFailed) {
      RefuseMessage("invalid_message", st.ToString());
    } else {
      LogError("agent.message_failed", {{"machine_id", mid}, {"error", st.ToString()}});
    }
  }
}

void AgentSession::OnClose() {
  if (closed_.exchange(true)) return;
  const std::string mid = machine_id();
  if (!mid.empty()) {
    fleet_.Unregister(mid, this);
    const Timestamp now = fleet_.options().clock->Now();
    Status st = fleet_.db().Transact([&](store::Tx& tx) {
      return AddMachineEvent(tx, mid, MachineEventKind::kDisconnected, {{"remote", remote_addr_}},
                             now);
    });
    if (!st.ok()) LogWarn("agent.disconnect_event_failed", {{"error", st.ToString()}});
  }
  LogInfo("agent.disconnected", {{"machine_id", mid}, {"remote", remote_addr_}});
}

Status AgentSession::HandleHello(const protocol::Hello& h) {
  const bool emulated = h.emulated || std::any_of(h.gpus.begin(), h.gpus.end(),
                                                  [](const auto& g) { return g.emulated; });
  if (emulated && !fleet_.options().allow_emulated_gpus) {
    return FailedPrecondition(
        "this platform does not accept emulated GPUs (allow_emulated_gpus is off)");
  }
  std::set<std::string> uuids;
  for (const auto& g : h.gpus) {
    if (!uuids.insert(g.uuid).second)
      return FailedPrecondition("GPU " + g.uuid + " is reported twice");
  }
  const Timestamp now = fleet_.options().clock->Now();
  const std::string key_hash = Sha256Hex(h.machine_key);
  std::string machine_id;
  std::vector<std::string> keep, suspects;
  GPUNEX_RETURN_IF_ERROR(fleet_.db().Transact([&](store::Tx& tx) -> Status {
    FleetStore s(tx);
    keep.clear();
    suspects.clear();
    HelloFacts facts;
    GPUNEX_ASSIGN_OR_RETURN(std::optional<MachineRow> by_key, s.FindMachineByKey(key_hash));
    std::string old_inventory;
    if (by_key) {
      if (by_key->provider_id != provider_id_)
        return PermissionDenied("this machine belongs to another provider");
      if (!h.machine_id.empty() && h.machine_id != by_key->id) {
        return PermissionDenied("the machine id does not match the machine key");
      }
      machine_id = by_key->id;
      old_inventory = by_key->inventory_hash;
    } else {
      if (!h.machine_id.empty()) {
        GPUNEX_ASSIGN_OR_RETURN(std::optional<MachineRow> by_id, s.FindMachine(h.machine_id));
        if (by_id) {
          return PermissionDenied(by_id->provider_id == provider_id_
                                      ? "the machine key does not match this machine id"
                                      : "this machine id belongs to another provider");
        }
      }
      GPUNEX_ASSIGN_OR_RETURN(int64_t machines, s.CountMachinesOf(provider_id_));
      const int64_t cap = fleet_.options().max_machines_per_provider;
      if (machines >= cap) {
        return FailedPrecondition("this provider already has " + std::to_string(machines) +
                                  " machines, the most this platform allows one provider (" +
                                  std::to_string(cap) +
                                  "); ask the operator to raise "
                                  "fleet.max_machines_per_provider");
      }
      machine_id = NewId("mch");
      facts.registered = true;
      GPUNEX_RETURN_IF_ERROR(s.InsertMachine(
          {machine_id, provider_id_, key_hash,
           h.host.hostname.empty() ? std::string("machine") : h.host.hostname,
           MachineStatus::kOffline, emulated, h.agent_version, h.host, "", now, now, now}));
      GPUNEX_RETURN_IF_ERROR(AddMachineEvent(tx, machine_id, MachineEventKind::kRegistered,
                                             {{"remote", remote_addr_}}, now));
    }
    facts.machine_id = machine_id;
    const std::string inventory = InventoryHash(h);
    if (old_inventory != inventory) {
      facts.inventory_changed = true;
      GPUNEX_RETURN_IF_ERROR(AddMachineEvent(tx, machine_id, MachineEventKind::kInventoryChanged,
                                             {{"gpus", static_cast<int64_t>(h.gpus.size())}}, now));
    }
    GPUNEX_RETURN_IF_ERROR(
        s.UpdateMachineOnHello(machine_id, emulated, h.agent_version, h.host, inventory, now));
    GPUNEX_RETURN_IF_ERROR(s.MarkGpusAbsent(machine_id));
    for (const auto& g : h.gpus) {
      MachineGpu gpu = GpuFromHello(g, machine_id);
      GPUNEX_ASSIGN_OR_RETURN(bool updated, s.UpdateGpuFromHello(machine_id, gpu));
      if (!updated) {
        gpu.id = NewId("gpu");
        gpu.present = true;
        gpu.enabled = true;
        gpu.benchmark_verdict = fleet_.options().list_after_benchmark
                                    ? listing::BenchmarkVerdict::kAwaitingFirst
                                    : listing::BenchmarkVerdict::kPassed;
        gpu.listing = {listing::ListingState::kMachineOffline, "the machine is offline"};
        gpu.listing_since = now;
        gpu.created_at = now;
        GPUNEX_RETURN_IF_ERROR(s.InsertGpu(gpu));
        facts.new_gpu_ids.push_back(gpu.id);
      }
      GPUNEX_ASSIGN_OR_RETURN(std::optional<std::string> gid, s.GpuIdByUuid(machine_id, g.uuid));
      if (gid) facts.present_gpu_ids.push_back(*gid);
    }
    // Transition refreshes the listing when the machine comes online; a machine that was
    // online already (a reconnect before the sweeper noticed) refreshes it here.
    GPUNEX_RETURN_IF_ERROR(Transition(tx, machine_id, MachineStatus::kOnline,
                                      IntervalEndReason::kAgentConnected, now));
    GPUNEX_RETURN_IF_ERROR(RefreshListing(tx, now, machine_id));
    GPUNEX_RETURN_IF_ERROR(
        AddMachineEvent(tx, machine_id, MachineEventKind::kConnected,
                        {{"remote", remote_addr_}, {"agent_version", h.agent_version}}, now));
    // Reconcile: workloads the platform expects here are kept; a started workload whose
    // container the agent no longer has is lost on the provider's side unless the agent
    // reports its end right after the welcome (see Fleet::suspected_lost_).
    // A workload the agent is still starting is listed without a container. A container
    // reported running for a workload the platform has as pending or starting is running:
    // its event was lost (written just before a restart of either side), and it is
    // advanced as the event would have (RNT-5: billing starts now, never before).
    std::map<std::string, std::string> reported;  // workload id → Docker state
    std::map<std::string, std::string> container_of;
    for (const auto& c : h.containers) {
      if (c.workload_id.empty()) continue;
      reported[c.workload_id] = c.state;
      if (!c.container_id.empty()) container_of[c.workload_id] = c.container_id;
    }
    GPUNEX_ASSIGN_OR_RETURN(std::vector<Workload> active, s.ActiveWorkloads(machine_id));
    for (const auto& w : active) {
      auto r = reported.find(w.id);
      if (w.state != WorkloadState::kPending && r == reported.end()) {
        suspects.push_back(w.id);
        continue;
      }
      keep.push_back(w.id);
      if (r != reported.end() && r->second == "running" && w.state != WorkloadState::kRunning) {
        auto ctr = container_of.find(w.id);
        GPUNEX_RETURN_IF_ERROR(s.SetWorkloadProgress(
            w.id, WorkloadState::kRunning,
            ctr == container_of.end() ? std::nullopt : std::optional<std::string>(ctr->second),
            now));
        GPUNEX_RETURN_IF_ERROR(fleet_.RunWorkloadHooks(tx, now, w.id));
      }
    }
    return fleet_.RunHelloHooks(tx, now, facts);
  }));
  {
    MutexLock lock(&mu_);
    machine_id_ = machine_id;
  }
  if (refused_) return Status::Ok();
  fleet_.SuspectLost(suspects);
  hello_done_ = true;
  // Welcome first, so no command can overtake it; then take over the machine and send
  // what is pending.
  Send(protocol::Welcome{machine_id, fleet_.options().heartbeat_interval_s, keep});
  fleet_.Register(machine_id, shared_from_this());
  LogInfo("agent.connected", {{"machine_id", machine_id},
                              {"provider_id", provider_id_},
                              {"gpus", static_cast<int64_t>(h.gpus.size())},
                              {"emulated", emulated},
                              {"remote", remote_addr_}});
  fleet_.DeliverPending(machine_id);
  return Status::Ok();
}

}  // namespace gpunex::platform::fleet
