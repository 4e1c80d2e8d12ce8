#include "platform/fleet/workloads.h"

#include <set>

#include "common/ids.h"
#include "common/image_ref.h"
#include "common/json.h"
#include "platform/fleet/fleet_store.h"

namespace gpunex::platform::fleet {
namespace {

// Visible: admins, the machine's provider acting as one (an API key without the provider
// scope does not), and the customer whose rental it runs.
bool Visible(const accounts::Principal& p, const Workload& w) {
  return p.IsAdmin() || p.IsProvider(w.provider_id) ||
         (w.purpose == WorkloadPurpose::kRental && w.created_by == p.user.id);
}

StatusOr<Workload> LoadVisible(store::Tx& tx, const accounts::Principal& p, const std::string& id) {
  GPUNEX_ASSIGN_OR_RETURN(std::optional<Workload> w, FleetStore(tx).FindWorkload(id));
  if (!w || !Visible(p, *w)) return NotFound("no such workload");
  return std::move(*w);
}

template <typename T>
void CheckRange(FieldErrors& errors, const char* field, const std::optional<T>& v, T min, T max) {
  if (v && (*v < min || *v > max)) {
    errors.emplace(field, "must be from " + std::to_string(min) + " to " + std::to_string(max));
  }
}

}  // namespace

FieldErrors ValidateContainer(const ContainerSpec& container, const ImagePolicy& images) {
  const std::string& image = container.image;
  const std::vector<std::string>& command = container.command;
  const auto& env = container.env;
  const std::vector<protocol::WorkloadPort>& ports = container.ports;
  FieldErrors errors;
  std::string why;
  if (auto ref = ParseImageRef(image, &why); !ref) {
    errors.emplace("image", "must be an image reference such as \"registry/name:tag\"");
  } else if (RegistryHost host = ClassifyRegistryHost(ref->domain);
             host == RegistryHost::kForbidden) {
    errors.emplace("image",
                   "must not name a registry on a link-local, unspecified, multicast or reserved "
                   "address");
  } else if (host == RegistryHost::kPrivate && !images.allow_private_registries) {
    errors.emplace("image",
                   "must name a public registry, not one on a loopback or private address or an "
                   "internal host name (such as localhost, 127.0.0.1, 10.x.x.x or registry:5000)");
  }
  if (command.size() > protocol::kMaxCommandArgs) {
    errors.emplace("command", std::string(kCommandRule));
  }
  for (const auto& arg : command) {
    if (arg.size() > protocol::kMaxCommandArgLength || !IsCleanText(arg, true)) {
      errors.emplace("command", std::string(kCommandRule));
    }
  }
  if (env.size() > protocol::kMaxEnvEntries)
    errors.emplace("env", "must have at most 128 variables");
  for (const auto& [name, value] : env) {
    const std::string field = "env." + name;
    if (!protocol::IsEnvName(name)) {
      errors.emplace(field, "is not a valid variable name");
    } else if (protocol::IsReservedEnvName(name)) {
      errors.emplace(field, "is set by the platform (NVIDIA_* variables select the GPUs)");
    } else if (value.size() > protocol::kMaxEnvValueLength || !IsCleanText(value, true)) {
      errors.emplace(field, std::string(kEnvValueRule));
    }
  }
  // What the API's reader (protocol::ReadPorts) already refuses, for every other path.
  if (ports.size() > protocol::kMaxPorts) errors.emplace("ports", "must have at most 16 items");
  std::set<uint16_t> seen;
  for (size_t i = 0; i < ports.size(); ++i) {
    if (ports[i].port == 0 || !seen.insert(ports[i].port).second) {
      errors.emplace("ports[" + std::to_string(i) + "].port",
                     "must be a port from 1 to 65535 declared once");
    }
  }
  return errors;
}

FieldErrors ValidateWorkloadRequest(const CreateWorkloadRequest& req, const ImagePolicy& images) {
  FieldErrors errors = ValidateContainer(req.container, images);
  if (req.machine_id.empty()) errors.emplace("machine_id", "is required");
  if (req.gpu_ids.size() > protocol::kMaxWorkloadGpus) {
    errors.emplace("gpu_ids",
                   "must have at most " + std::to_string(protocol::kMaxWorkloadGpus) + " GPUs");
  }
  if (std::set<std::string>(req.gpu_ids.begin(), req.gpu_ids.end()).size() != req.gpu_ids.size()) {
    errors.emplace("gpu_ids", "must not repeat a GPU");
  }
  CheckRange(errors, "memory_mb", req.memory_mb, protocol::kMinMemoryMb, protocol::kMaxMemoryMb);
  if (req.cpus && !(*req.cpus >= protocol::kMinCpus && *req.cpus <= protocol::kMaxCpus)) {
    errors.emplace("cpus", "must be from 0.1 to 256");
  }
  CheckRange(errors, "pids_limit", req.pids_limit, protocol::kMinPids, protocol::kMaxPids);
  CheckRange(errors, "scratch_mb", req.scratch_mb, protocol::kMinScratchMb,
             protocol::kMaxScratchMb);
  CheckRange(errors, "timeout_s", req.timeout_s, int64_t{0}, protocol::kMaxTimeoutS);
  return errors;
}

Workloads::Workloads(store::Database& db, Fleet& fleet, const Clock* clock)
    : db_(db), fleet_(fleet), clock_(clock) {
  fleet_.OnResult(protocol::kStartWorkload,
                  [this](store::Tx& tx, Timestamp now, const std::string& machine_id,
                         const protocol::Command& command, const protocol::Result& result) {
                    return OnStartResult(tx, now, machine_id, command, result);
                  });
}

// A start the agent refused (no engine there, a GPU it does not offer or holds busy, a
// command it could not parse): the workload fails, on the machine's side. (Failures after
// the agent took the start, a bad image among them, come as workload events.)
Status Workloads::OnStartResult(store::Tx& tx, Timestamp now, const std::string& machine_id,
                                const protocol::Command& command, const protocol::Result& result) {
  if (result.ok) return Status::Ok();
  auto it = command.payload.find("workload_id");
  if (it == command.payload.end() || !it->value().is_string()) return Status::Ok();
  const std::string wid(it->value().get_string());
  GPUNEX_ASSIGN_OR_RETURN(
      bool ended,
      FleetStore(tx).EndWorkload(wid, WorkloadState::kFailed, std::nullopt,
                                 "start refused by the agent: " + result.error,
                                 {kCauseStartRefused, EndParty::kProvider}, std::nullopt, now));
  if (!ended) return Status::Ok();
  GPUNEX_RETURN_IF_ERROR(RefreshListing(tx, now, machine_id));
  return fleet_.RunWorkloadHooks(tx, now, wid);
}

StatusOr<Workload> Workloads::Create(const accounts::Principal& p,
                                     const CreateWorkloadRequest& req) {
  const Timestamp now = clock_->Now();
  Workload w;
  GPUNEX_RETURN_IF_ERROR(db_.Transact([&](store::Tx& tx) -> Status {
    if (!req.machine_id.empty()) {
      GPUNEX_ASSIGN_OR_RETURN(std::optional<MachineRow> m,
                              FleetStore(tx).FindMachine(req.machine_id));
      if (!m || (!p.IsAdmin() && m->provider_id != p.user.id)) {
        FieldErrors errors = ValidateWorkloadRequest(req, fleet_.options().images);
        errors["machine_id"] = "is not a machine you may run workloads on";
        return ValidationFailed(std::move(errors));
      }
    }
    GPUNEX_ASSIGN_OR_RETURN(w, CreateInTx(tx, now, p.user.id, WorkloadPurpose::kCustom, req));
    return accounts::Audit(tx, now, p.user.id, "workload.created", w.id, p.ip,
                           {{"machine_id", req.machine_id}});
  }));
  return w;
}

StatusOr<Workload> Workloads::CreateInTx(store::Tx& tx, Timestamp now,
                                         const std::string& created_by, WorkloadPurpose purpose,
                                         const CreateWorkloadRequest& req, const Machine* loaded,
                                         const std::set<std::string>* loaded_busy) {
  FieldErrors errors = ValidateWorkloadRequest(req, fleet_.options().images);
  if (!errors.empty()) return ValidationFailed(std::move(errors));
  const int64_t n = std::max<int64_t>(1, static_cast<int64_t>(req.gpu_ids.size()));
  Workload w;
  w.id = NewId("wl");
  w.created_by = created_by;
  w.purpose = purpose;
  w.machine_id = req.machine_id;
  w.gpu_ids = req.gpu_ids;
  w.state = WorkloadState::kPending;
  w.created_at = w.updated_at = now;
  protocol::StartWorkload& spec = w.spec;
  spec.workload_id = w.id;
  spec.image = req.container.image;
  spec.command = req.container.command;
  spec.env = req.container.env;
  spec.ports = req.container.ports;
  spec.memory_mb = req.memory_mb.value_or(4096 * n);
  spec.cpus = req.cpus.value_or(2.0 * static_cast<double>(n));
  spec.pids_limit = req.pids_limit.value_or(1024);
  spec.scratch_mb = req.scratch_mb.value_or(4096);
  spec.timeout_s = req.timeout_s.value_or(0);

  FleetStore s(tx);
  std::string provider_id;
  protocol::Host host;
  bool emulated = false;
  if (loaded) {
    provider_id = loaded->provider_id;
    host = loaded->host;
    emulated = loaded->emulated;
  } else {
    GPUNEX_ASSIGN_OR_RETURN(std::optional<MachineRow> m, s.FindMachine(req.machine_id));
    if (!m) return FieldError("machine_id", "is not a machine you may run workloads on");
    provider_id = m->provider_id;
    host = m->host;
    emulated = m->emulated;
  }
  w.provider_id = provider_id;
  if (host.ram_mb > 0 && spec.memory_mb > host.ram_mb) {
    return FieldError("memory_mb",
                      "is more than the machine has (" + std::to_string(host.ram_mb) + " MiB)");
  }
  if (host.cpu_cores > 0 && spec.cpus > static_cast<double>(host.cpu_cores)) {
    return FieldError("cpus", "is more than the machine has");
  }
  // No engine answers its agent there: nothing could start (the listing says so too).
  if (!listing::EngineRunning(host.network_isolation, emulated, host.docker_version)) {
    return FieldError("machine_id", "cannot run workloads now: Docker is not running there");
  }
  // Its agent found workloads there not kept from each other or from the host's services,
  // or could not tell: nothing is placed there (docs/trust.md).
  if (const listing::NetworkFact net = listing::NetworkIsolationFact(host.network_isolation);
      !net.isolated) {
    return FieldError("machine_id", "cannot run workloads now: " + net.note);
  }
  // The GPUs must be this machine's, present, designated by the provider, and free.
  std::set<std::string> busy;
  if (loaded_busy) {
    busy = *loaded_busy;
  } else {
    GPUNEX_ASSIGN_OR_RETURN(busy, GpusInActiveWorkloads(tx, req.machine_id));
  }
  spec.gpu_uuids.clear();
  for (size_t i = 0; i < req.gpu_ids.size(); ++i) {
    const std::string field = "gpu_ids[" + std::to_string(i) + "]";
    std::optional<MachineGpu> g;
    if (loaded) {
      for (const MachineGpu& x : loaded->gpus) {
        if (x.id == req.gpu_ids[i]) g = x;
      }
    } else {
      GPUNEX_ASSIGN_OR_RETURN(g, s.FindGpu(req.machine_id, req.gpu_ids[i]));
    }
    if (!g) return FieldError(field, "is not a GPU of this machine");
    if (!g->present) return FieldError(field, "is not present on the machine now");
    if (!g->enabled) return FieldError(field, "is not offered by the provider");
    if (busy.count(g->id)) return FieldError(field, "is in use by another workload");
    if (g->benchmarking)
      return FieldError(field, "is being benchmarked; try again in a few minutes");
    // hello accepts any GPU-… identifier; the agent runs workloads only on real UUIDs.
    if (!protocol::IsGpuUuid(g->uuid))
      return FieldError(field, "has an identifier workloads cannot be given");
    spec.gpu_uuids.push_back(g->uuid);
  }
  GPUNEX_RETURN_IF_ERROR(s.InsertWorkload(w));
  // Only the command carries the registry's credentials (and holds them in memory only):
  // the workload as stored and returned has none.
  spec.registry_auth = req.container.registry_auth;
  const Status queued = fleet_.EnqueueCommand(tx, now, req.machine_id, spec).status();
  if (spec.registry_auth) protocol::Wipe(*spec.registry_auth);
  spec.registry_auth.reset();
  GPUNEX_RETURN_IF_ERROR(queued);
  GPUNEX_RETURN_IF_ERROR(RefreshListing(tx, now, req.machine_id));
  return w;
}

Status Workloads::StopInTx(store::Tx& tx, Timestamp now, const std::string& id) {
  GPUNEX_ASSIGN_OR_RETURN(std::optional<Workload> w, FleetStore(tx).FindWorkload(id));
  if (!w || !IsActiveWorkloadState(w->state)) return Status::Ok();
  return fleet_.EnqueueCommand(tx, now, w->machine_id, protocol::StopWorkload{id}).status();
}

StatusOr<Workload> Workloads::Get(const accounts::Principal& p, const std::string& id) {
  Workload out;
  GPUNEX_RETURN_IF_ERROR(db_.Read([&](store::Tx& tx) -> Status {
    GPUNEX_ASSIGN_OR_RETURN(out, LoadVisible(tx, p, id));
    return Status::Ok();
  }));
  return out;
}

StatusOr<Page<Workload>> Workloads::List(const accounts::Principal& p,
                                         const std::string& machine_id, const PageRequest& page) {
  Page<Workload> out;
  GPUNEX_RETURN_IF_ERROR(db_.Read([&](store::Tx& tx) -> Status {
    WorkloadFilter filter;
    filter.all = p.IsAdmin();
    if (p.user.HasRole(accounts::kRoleProvider)) filter.provider_id = p.user.id;
    // A customer does not see machines: asking for one lists a provider's workloads only.
    if (machine_id.empty()) filter.customer_id = p.user.id;
    filter.machine_id = machine_id;
    GPUNEX_ASSIGN_OR_RETURN(out, FleetStore(tx).ListWorkloads(filter, page));
    return Status::Ok();
  }));
  return out;
}

StatusOr<Workload> Workloads::Stop(const accounts::Principal& p, const std::string& id) {
  const Timestamp now = clock_->Now();
  Workload out;
  GPUNEX_RETURN_IF_ERROR(db_.Transact([&](store::Tx& tx) -> Status {
    GPUNEX_ASSIGN_OR_RETURN(out, LoadVisible(tx, p, id));
    if (!IsActiveWorkloadState(out.state)) {
      return FailedPrecondition("the workload has already ended (" + std::string(Name(out.state)) +
                                ")");
    }
    // A customer's rental ends through the rental (rentals/), which says who ended it.
    if (out.purpose == WorkloadPurpose::kRental) {
      return FailedPrecondition("the workload is a customer's rental; it ends through the rental");
    }
    GPUNEX_RETURN_IF_ERROR(
        fleet_.EnqueueCommand(tx, now, out.machine_id, protocol::StopWorkload{id}).status());
    return accounts::Audit(tx, now, p.user.id, "workload.stop_requested", id, p.ip);
  }));
  return out;
}

StatusOr<LogPage> Workloads::Logs(const accounts::Principal& p, const std::string& id,
                                  const PageRequest& page) {
  LogPage out;
  GPUNEX_RETURN_IF_ERROR(db_.Read([&](store::Tx& tx) -> Status {
    GPUNEX_RETURN_IF_ERROR(LoadVisible(tx, p, id).status());
    PageRequest req = page;
    req.limit = std::clamp(page.limit, 1, kMaxLogPage);
    GPUNEX_ASSIGN_OR_RETURN(Page<LogChunk> chunks, FleetStore(tx).LogChunks(id, req));
    out.items = std::move(chunks.items);
    if (!out.items.empty()) {
      const LogChunk& last = out.items.back();
      out.position = Cursor({ToUnixMicros(last.at), last.stream, last.seq});
    } else {
      out.position = page.after;
    }
    return Status::Ok();
  }));
  return out;
}

}  // namespace gpunex::platform::fleet
