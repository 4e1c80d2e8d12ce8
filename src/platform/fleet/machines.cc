// Machines and their GPUs: status transitions with their intervals, heartbeats and
// telemetry, the listing of each GPU, and the queries the API and other folders make.
#include <algorithm>

#include "common/gpu_catalog.h"
#include "common/json.h"
#include "common/log.h"
#include "common/utf8.h"
#include "platform/fleet/agent_session.h"
#include "platform/fleet/fleet.h"
#include "platform/fleet/fleet_store.h"

namespace gpunex::platform::fleet {

Status AddMachineEvent(store::Tx& tx, const std::string& machine_id, MachineEventKind kind,
                       const std::vector<std::pair<std::string, EventValue>>& detail,
                       Timestamp now) {
  json::object o;
  for (const auto& [name, value] : detail) {
    if (const auto* text = std::get_if<std::string>(&value)) {
      o[name] = *text;
    } else if (const auto* n = std::get_if<int64_t>(&value)) {
      o[name] = *n;
    } else {
      json::array list;
      for (const std::string& item : std::get<std::vector<std::string>>(value)) {
        list.emplace_back(item);
      }
      o[name] = std::move(list);
    }
  }
  return FleetStore(tx).InsertEvent(machine_id, now, kind, ToJsonText(o));
}

// Moves a machine to `state` when it is not there yet: closes the
// open interval, opens the next one, and decides its GPUs' listing again.
Status Transition(store::Tx& tx, const std::string& machine_id, MachineStatus state,
                  IntervalEndReason reason, Timestamp now) {
  FleetStore s(tx);
  GPUNEX_ASSIGN_OR_RETURN(std::optional<MachineRow> m, s.FindMachine(machine_id));
  if (!m) return NotFound("no such machine");
  if (m->status == state) return Status::Ok();
  GPUNEX_RETURN_IF_ERROR(s.CloseOpenInterval(machine_id, now, reason));
  GPUNEX_RETURN_IF_ERROR(s.OpenInterval(machine_id, state, now));
  GPUNEX_RETURN_IF_ERROR(s.SetMachineStatus(machine_id, state, now));
  GPUNEX_RETURN_IF_ERROR(AddMachineEvent(tx, machine_id, EventOf(state),
                                         {{"reason", std::string(Name(reason))}}, now));
  return RefreshListing(tx, now, machine_id);
}

namespace {

Machine MachineFrom(MachineRow row, std::vector<MachineGpu> gpus) {
  return {std::move(row.id),   std::move(row.provider_id),
          std::move(row.name), row.status,
          row.emulated,        std::move(row.agent_version),
          std::move(row.host), row.created_at,
          row.last_seen,       row.status_since,
          std::move(gpus)};
}

bool Throttled(const protocol::GpuSample& g) {
  return std::any_of(
      g.throttle_reasons.begin(), g.throttle_reasons.end(), [](const std::string& r) {
        return r.find("thermal") != std::string::npos || r.find("power") != std::string::npos;
      });
}

// Under load, as the reliability score counts it (reliability/formula.h).
bool Loaded(const protocol::GpuSample& g) { return g.utilization_pct >= kLoadedUtilizationPct; }

}  // namespace

StatusOr<std::optional<Machine>> LoadMachine(store::Tx& tx, const std::string& machine_id) {
  FleetStore s(tx);
  GPUNEX_ASSIGN_OR_RETURN(std::optional<MachineRow> row, s.FindMachine(machine_id));
  if (!row) return std::optional<Machine>();
  GPUNEX_ASSIGN_OR_RETURN(std::vector<MachineGpu> gpus, s.GpusOf(machine_id));
  return std::optional<Machine>(MachineFrom(std::move(*row), std::move(gpus)));
}

StatusOr<std::map<std::string, MachineCounts>> MachineCountsOf(
    store::Tx& tx, const std::vector<std::string>& provider_ids) {
  return FleetStore(tx).MachineCountsOf(provider_ids);
}

StatusOr<std::optional<Workload>> LoadWorkload(store::Tx& tx, const std::string& workload_id) {
  return FleetStore(tx).FindWorkload(workload_id);
}

StatusOr<MachineOwner> AuthorizeMachine(store::Tx& tx, const accounts::Principal& p,
                                        const std::string& machine_id, MachineAccess access) {
  GPUNEX_ASSIGN_OR_RETURN(std::optional<MachineRow> m, FleetStore(tx).FindMachine(machine_id));
  if (!m || (m->provider_id != p.user.id && !p.IsAdmin())) return NotFound("no such machine");
  if (access == MachineAccess::kChange && m->provider_id != p.user.id)
    return PermissionDenied("only the machine's provider can change it");
  return MachineOwner{m->provider_id, m->name, m->created_at};
}

StatusOr<std::vector<std::string>> OnlineMachines(store::Tx& tx) {
  return FleetStore(tx).OnlineMachines();
}

StatusOr<std::set<std::string>> GpusInActiveWorkloads(store::Tx& tx,
                                                      const std::string& machine_id) {
  return FleetStore(tx).GpusInActiveWorkloads(machine_id);
}

Status RefreshListing(store::Tx& tx, Timestamp now, const std::string& machine_id) {
  FleetStore s(tx);
  GPUNEX_ASSIGN_OR_RETURN(std::optional<MachineRow> m, s.FindMachine(machine_id));
  if (!m) return NotFound("no such machine");
  GPUNEX_ASSIGN_OR_RETURN(std::vector<MachineGpu> gpus, s.GpusOf(machine_id));
  GPUNEX_ASSIGN_OR_RETURN(std::set<std::string> busy, GpusInActiveWorkloads(tx, machine_id));
  GPUNEX_ASSIGN_OR_RETURN(AvailabilityFacts avail, s.AvailabilityFactsOf(machine_id));
  std::vector<std::pair<std::string, listing::ListingDecision>> changes;
  for (const MachineGpu& g : gpus) {
    listing::ListingFacts f;
    f.present = g.present;
    f.enabled = g.enabled;
    f.machine_online = m->status == MachineStatus::kOnline;
    f.engine_running =
        listing::EngineRunning(m->host.network_isolation, m->emulated, m->host.docker_version);
    f.benchmark = g.benchmark_verdict;
    f.benchmark_note = g.benchmark_note;
    f.benchmarking = g.benchmarking;
    f.rented = busy.count(g.id) > 0;
    // The emulated GPU source names its GPUs "<NVML name> (emulated)".
    std::string_view name = g.name;
    if (g.emulated && name.ends_with(" (emulated)")) name.remove_suffix(11);
    if (const GpuModel* model = FindGpuModel(g.catalog_id);
        model && !ReportsModel(*model, name, g.vram_mb)) {
      f.model_verified = false;
      f.model_note = "it reports \"" + g.name + "\" with " + std::to_string(g.vram_mb) +
                     " MiB, which is not a " + model->nvml_name + " (" +
                     std::to_string(model->vram_gb) + " GB)";
    }
    const listing::NetworkFact network = listing::NetworkIsolationFact(m->host.network_isolation);
    f.network_isolated = network.isolated;
    f.network_note = network.note;
    f.inside_schedule = avail.inside_schedule;
    f.schedule_opens_at = avail.opens_at;
    f.in_maintenance = avail.in_maintenance;
    f.priced = g.priced;
    if (const GpuModel* model = FindGpuModel(g.catalog_id)) f.model_name = model->nvml_name;
    const listing::ListingDecision d = listing::DecideListing(f);
    if (d.state == g.listing.state && d.note == g.listing.note) continue;
    changes.emplace_back(g.id, d);
  }
  if (changes.empty()) return Status::Ok();
  // The machine's row before its GPUs' rows, as a heartbeat writes them: two transactions
  // that lock them in opposite orders deadlock on PostgreSQL.
  GPUNEX_RETURN_IF_ERROR(s.TouchOffers(machine_id, now));
  for (const auto& [gpu_id, d] : changes) GPUNEX_RETURN_IF_ERROR(s.SetListing(gpu_id, d, now));
  return Status::Ok();
}

Status ReportPriceFacts(store::Tx& tx, Timestamp now, const std::string& machine_id,
                        const std::set<std::string>& priced_catalog_ids) {
  FleetStore s(tx);
  GPUNEX_ASSIGN_OR_RETURN(std::vector<MachineGpu> gpus, s.GpusOf(machine_id));
  // The machine's row first (see RefreshListing).
  GPUNEX_RETURN_IF_ERROR(s.TouchOffers(machine_id, now));
  for (const MachineGpu& g : gpus) {
    const bool priced = priced_catalog_ids.count(g.catalog_id) > 0;
    if (priced != g.priced) GPUNEX_RETURN_IF_ERROR(s.SetPriced(g.id, priced));
  }
  return RefreshListing(tx, now, machine_id);
}

Status TouchOffers(store::Tx& tx, Timestamp now, const std::string& machine_id) {
  return FleetStore(tx).TouchOffers(machine_id, now);
}

StatusOr<std::vector<std::pair<std::string, int64_t>>> OffersChangedSince(store::Tx& tx,
                                                                          int64_t since_us) {
  return FleetStore(tx).OffersChangedSince(since_us);
}

StatusOr<std::optional<int64_t>> OffersStamp(store::Tx& tx, const std::string& machine_id) {
  return FleetStore(tx).OffersStamp(machine_id);
}

Status Fleet::RefreshAllListings() {
  PageRequest page{200, std::nullopt};
  while (true) {
    Page<MachineRow> batch;
    const Timestamp now = options_.clock->Now();
    GPUNEX_RETURN_IF_ERROR(db_.Transact([&](store::Tx& tx) -> Status {
      GPUNEX_ASSIGN_OR_RETURN(batch, FleetStore(tx).ListMachines("", std::nullopt, page));
      for (const auto& m : batch.items) GPUNEX_RETURN_IF_ERROR(RefreshListing(tx, now, m.id));
      return Status::Ok();
    }));
    if (!batch.next) return Status::Ok();
    page.after = batch.next;
  }
}

Status ReportAvailabilityFacts(store::Tx& tx, Timestamp now, const std::string& machine_id,
                               const AvailabilityFacts& facts) {
  FleetStore s(tx);
  GPUNEX_ASSIGN_OR_RETURN(AvailabilityFacts old, s.AvailabilityFactsOf(machine_id));
  if (old == facts) return Status::Ok();
  GPUNEX_RETURN_IF_ERROR(s.SetAvailabilityFacts(machine_id, facts));
  return RefreshListing(tx, now, machine_id);
}

Status ReportBenchmarkFacts(store::Tx& tx, Timestamp now, const std::string& machine_id,
                            const std::map<std::string, BenchmarkFacts>& by_gpu_id) {
  FleetStore s(tx);
  // The scores and figures a run measured show in the machine's offers. The machine's row
  // first (see RefreshListing).
  GPUNEX_RETURN_IF_ERROR(s.TouchOffers(machine_id, now));
  for (const auto& [gpu_id, f] : by_gpu_id) {
    GPUNEX_ASSIGN_OR_RETURN(std::optional<MachineGpu> g, s.FindGpu(machine_id, gpu_id));
    if (!g) return NotFound("no GPU " + gpu_id + " on machine " + machine_id);
    GPUNEX_RETURN_IF_ERROR(s.SetBenchmarkFacts(gpu_id, f.verdict.value_or(g->benchmark_verdict),
                                               f.verdict ? f.note : g->benchmark_note,
                                               f.benchmarking));
  }
  return RefreshListing(tx, now, machine_id);
}

Status Fleet::HandleNetworkIsolation(const std::string& machine_id,
                                     const protocol::NetworkIsolation& report) {
  const Timestamp now = options_.clock->Now();
  return db_.Transact([&](store::Tx& tx) -> Status {
    FleetStore s(tx);
    GPUNEX_ASSIGN_OR_RETURN(std::optional<MachineRow> m, s.FindMachine(machine_id));
    if (!m) return NotFound("no such machine");
    if (m->host.network_isolation == report) return Status::Ok();
    m->host.network_isolation = report;
    GPUNEX_RETURN_IF_ERROR(s.SetMachineHost(machine_id, m->host));
    std::vector<std::string> reached(report.reached.begin(), report.reached.end());
    GPUNEX_RETURN_IF_ERROR(AddMachineEvent(
        tx, machine_id, MachineEventKind::kNetworkIsolation,
        {{"state", report.state}, {"reached", std::move(reached)}, {"detail", report.detail}},
        now));
    return RefreshListing(tx, now, machine_id);
  });
}

Status Fleet::HandleHeartbeat(const std::string& machine_id, const protocol::Heartbeat& h) {
  const Timestamp now = options_.clock->Now();
  const int64_t minute = ToUnixMicros(now) / (60 * 1'000'000);
  return db_.Transact([&](store::Tx& tx) -> Status {
    FleetStore s(tx);
    GPUNEX_RETURN_IF_ERROR(s.TouchMachine(machine_id, now));
    GPUNEX_RETURN_IF_ERROR(Transition(tx, machine_id, MachineStatus::kOnline,
                                      IntervalEndReason::kHeartbeatResumed, now));
    for (const auto& g : h.gpus) {
      GPUNEX_ASSIGN_OR_RETURN(std::optional<std::string> gid, s.GpuIdByUuid(machine_id, g.uuid));
      if (!gid) return FieldError("gpus", "GPU " + g.uuid + " was not reported in hello");
      protocol::GpuSample sample = g;
      sample.uuid.clear();
      GPUNEX_RETURN_IF_ERROR(s.SetGpuTelemetry(*gid, sample, now));
      GPUNEX_RETURN_IF_ERROR(s.AddTelemetrySample(*gid, minute, g, Throttled(g), Loaded(g)));
    }
    return Status::Ok();
  });
}

StatusOr<Page<Machine>> Fleet::ListMachines(const accounts::Principal& p, const PageRequest& page,
                                            const std::string& provider_id,
                                            std::optional<MachineStatus> status) {
  if (!p.IsAdmin() && !p.user.HasRole(accounts::kRoleProvider)) {
    return PermissionDenied("only providers and admins have machines");
  }
  if (!p.IsAdmin() && !provider_id.empty() && provider_id != p.user.id) {
    return FieldError("provider_id", "names another provider: a provider lists its own machines");
  }
  Page<Machine> out;
  GPUNEX_RETURN_IF_ERROR(db_.Read([&](store::Tx& tx) -> Status {
    FleetStore s(tx);
    GPUNEX_ASSIGN_OR_RETURN(Page<MachineRow> rows,
                            s.ListMachines(p.IsAdmin() ? provider_id : p.user.id, status, page));
    out = {};
    for (auto& r : rows.items) {
      GPUNEX_ASSIGN_OR_RETURN(std::vector<MachineGpu> gpus, s.GpusOf(r.id));
      out.items.push_back(MachineFrom(std::move(r), std::move(gpus)));
    }
    out.next = std::move(rows.next);
    return Status::Ok();
  }));
  return out;
}

StatusOr<MachineDetail> Fleet::GetMachine(const accounts::Principal& p,
                                          const std::string& machine_id) {
  MachineDetail out;
  GPUNEX_RETURN_IF_ERROR(db_.Read([&](store::Tx& tx) -> Status {
    GPUNEX_ASSIGN_OR_RETURN(std::optional<Machine> m, LoadMachine(tx, machine_id));
    if (!m || (!p.IsAdmin() && m->provider_id != p.user.id)) return NotFound("no such machine");
    out.machine = std::move(*m);
    GPUNEX_ASSIGN_OR_RETURN(out.recent_intervals, FleetStore(tx).RecentIntervals(machine_id, 50));
    return Status::Ok();
  }));
  out.connected_here = Connected(machine_id);
  return out;
}

StatusOr<MachineDetail> Fleet::SetGpuEnabled(const accounts::Principal& p,
                                             const std::string& machine_id,
                                             const std::string& gpu_id, bool enabled) {
  const Timestamp now = options_.clock->Now();
  GPUNEX_RETURN_IF_ERROR(db_.Transact([&](store::Tx& tx) -> Status {
    FleetStore s(tx);
    GPUNEX_ASSIGN_OR_RETURN(std::optional<MachineRow> m, s.FindMachine(machine_id));
    if (!m || (m->provider_id != p.user.id && !p.IsAdmin())) return NotFound("no such machine");
    if (m->provider_id != p.user.id)
      return PermissionDenied("only the machine's provider designates its GPUs");
    // The machine's row before the GPU's (see RefreshListing).
    GPUNEX_RETURN_IF_ERROR(s.TouchOffers(machine_id, now));
    GPUNEX_ASSIGN_OR_RETURN(bool changed, s.SetGpuEnabled(machine_id, gpu_id, enabled));
    if (!changed) return NotFound("no such GPU on this machine");
    GPUNEX_RETURN_IF_ERROR(RefreshListing(tx, now, machine_id));
    return accounts::Audit(tx, now, p.user.id, enabled ? "gpu.enabled" : "gpu.disabled", gpu_id,
                           p.ip);
  }));
  return GetMachine(p, machine_id);
}

StatusOr<MachineDetail> Fleet::RenameMachine(const accounts::Principal& p,
                                             const std::string& machine_id, std::string_view raw) {
  // Without the invisible characters that make a name display other than it reads.
  const std::string visible = StripInvisible(raw);
  std::string_view name = visible;
  const size_t first = name.find_first_not_of(" \t");
  name = first == std::string_view::npos
             ? std::string_view()
             : name.substr(first, name.find_last_not_of(" \t") + 1 - first);
  if (name.empty()) return FieldError("name", "must not be empty");
  if (name.size() > kMaxMachineName) {
    return FieldError("name", "must be at most " + std::to_string(kMaxMachineName) + " characters");
  }
  if (!IsCleanText(name, false)) {
    return FieldError("name", "must be text without control characters");
  }
  const Timestamp now = options_.clock->Now();
  GPUNEX_RETURN_IF_ERROR(db_.Transact([&](store::Tx& tx) -> Status {
    FleetStore s(tx);
    GPUNEX_ASSIGN_OR_RETURN(std::optional<MachineRow> m, s.FindMachine(machine_id));
    if (!m || (m->provider_id != p.user.id && !p.IsAdmin())) return NotFound("no such machine");
    if (m->provider_id != p.user.id)
      return PermissionDenied("only the machine's provider names it");
    if (m->name == name) return Status::Ok();
    GPUNEX_ASSIGN_OR_RETURN(bool changed, s.SetMachineName(machine_id, std::string(name)));
    if (!changed) return NotFound("no such machine");
    return accounts::Audit(tx, now, p.user.id, "machine.renamed", machine_id, p.ip);
  }));
  return GetMachine(p, machine_id);
}

}  // namespace gpunex::platform::fleet
