// When GPUs are benchmarked: the due times kept per GPU, the scheduler thread, requested
// runs, and runs that never got a result.
#include <algorithm>
#include <set>

#include "common/ids.h"
#include "common/log.h"
#include "platform/benchmarks/benchmarks.h"
#include "platform/benchmarks/benchmarks_store.h"

namespace gpunex::platform::benchmarks {
namespace {

// The most telling reason names a run: a change beats a schedule (BenchmarkReason's order).
bool Outranks(BenchmarkReason why, const std::optional<BenchmarkReason>& than) {
  return !than || static_cast<int>(why) > static_cast<int>(*than);
}

}  // namespace

void Benchmarks::ScheduleOn(Background& background) {
  background.Add({.name = "benchmarks.tick",
                  .every = std::chrono::milliseconds(options_.tick_ms),
                  .pass = [this] { return TickOnce(); }});
}

Status Benchmarks::OnHello(store::Tx& tx, Timestamp now, const fleet::HelloFacts& hello) {
  BenchmarksStore s(tx);
  GPUNEX_ASSIGN_OR_RETURN(auto status, s.StatusOf(hello.machine_id));
  GPUNEX_ASSIGN_OR_RETURN(int64_t runs, s.CountRunsOn(hello.machine_id));
  const std::set<std::string> fresh(hello.new_gpu_ids.begin(), hello.new_gpu_ids.end());
  for (const std::string& gpu_id : hello.present_gpu_ids) {
    auto it = status.find(gpu_id);
    if (it == status.end() || fresh.count(gpu_id)) {
      // Never benchmarked: due now.
      GPUNEX_RETURN_IF_ERROR(
          s.UpsertStatus({gpu_id, hello.machine_id, std::nullopt, std::nullopt, now,
                          runs == 0 ? BenchmarkReason::kFirstConnect : BenchmarkReason::kNewGpu}));
    } else if (hello.inventory_changed && it->second.last_benchmark_at) {
      GpuStatusRow row = it->second;
      row.due_at = now;
      row.due_reason = BenchmarkReason::kHardwareChange;
      GPUNEX_RETURN_IF_ERROR(s.UpsertStatus(row));
    }
  }
  return Status::Ok();
}

StatusOr<std::string> Benchmarks::Schedule(store::Tx& tx, Timestamp now,
                                           const std::string& machine_id,
                                           const std::string& requested_by) {
  BenchmarksStore s(tx);
  GPUNEX_ASSIGN_OR_RETURN(std::optional<std::string> running, s.RunningRunOn(machine_id));
  if (running) return std::string();
  GPUNEX_ASSIGN_OR_RETURN(std::optional<fleet::Machine> machine,
                          fleet::LoadMachine(tx, machine_id));
  if (!machine) return std::string();
  GPUNEX_ASSIGN_OR_RETURN(std::set<std::string> busy, fleet::GpusInActiveWorkloads(tx, machine_id));
  GPUNEX_ASSIGN_OR_RETURN(auto status, s.StatusOf(machine_id));
  GPUNEX_ASSIGN_OR_RETURN(int64_t runs, s.CountRunsOn(machine_id));
  const Timestamp periodic_cutoff = now - Seconds(options_.interval_s);

  BenchmarkRun run;
  run.id = NewId("bmk");
  run.machine_id = machine_id;
  // Unset until a GPU is due: the most telling reason of the GPUs names the run.
  std::optional<BenchmarkReason> reason;
  if (!requested_by.empty()) {
    reason = BenchmarkReason::kRequested;
    run.requested_by = requested_by;
  }
  run.emulated = machine->emulated;
  run.created_at = now;
  protocol::RunBenchmark payload;
  payload.benchmark_id = run.id;
  std::map<std::string, fleet::BenchmarkFacts> measuring;
  for (const fleet::MachineGpu& g : machine->gpus) {
    if (!g.present || !g.enabled || busy.count(g.id)) continue;
    std::optional<BenchmarkReason> why;
    const BenchmarkReason fresh =
        runs == 0 ? BenchmarkReason::kFirstConnect : BenchmarkReason::kNewGpu;
    auto it = status.find(g.id);
    if (it == status.end()) {
      why = fresh;
    } else if (it->second.due_at && it->second.due_reason != BenchmarkReason::kSpotCheck) {
      // Due early (new GPU, hardware change, a run that could not measure it): at due_at.
      if (*it->second.due_at <= now) why = it->second.due_reason.value_or(BenchmarkReason::kRetry);
    } else if (it->second.due_at && *it->second.due_at <= now) {
      why = BenchmarkReason::kSpotCheck;  // a random check, unless the periodic run comes first
    } else if (!it->second.last_benchmark_at) {
      why = fresh;
    } else if (*it->second.last_benchmark_at < periodic_cutoff) {
      why = BenchmarkReason::kPeriodic;
    }
    if (!why && requested_by.empty()) continue;
    if (requested_by.empty() && Outranks(*why, reason)) reason = why;
    GpuRunResult r;
    r.gpu_id = g.id;
    r.uuid = g.uuid;
    r.catalog_id = g.catalog_id;
    r.created_at = now;
    run.gpus.push_back(std::move(r));
    payload.gpus.push_back({g.uuid, g.catalog_id});
    measuring[g.id] = {std::nullopt, "", true};
  }
  if (run.gpus.empty()) return std::string();
  run.reason = *reason;  // requested, or the reason of a GPU that is due
  run.machine_phases = busy.empty();
  payload.machine_phases = run.machine_phases;
  payload.sustain_s = options_.sustain_s;
  payload.storage_file_mb = options_.storage_file_mb;
  payload.storage_seconds = options_.storage_seconds;
  payload.network_mb = options_.network_mb;
  payload.pings = options_.pings;
  GPUNEX_ASSIGN_OR_RETURN(run.command_id, fleet_.EnqueueCommand(tx, now, machine_id, payload));
  GPUNEX_RETURN_IF_ERROR(s.InsertRun(run));
  GPUNEX_RETURN_IF_ERROR(fleet::ReportBenchmarkFacts(tx, now, machine_id, measuring));
  return run.id;
}

Status Benchmarks::EndOverdueRuns(Timestamp now) {
  std::vector<std::pair<std::string, std::string>> overdue;
  GPUNEX_RETURN_IF_ERROR(db_.Read([&](store::Tx& tx) -> Status {
    GPUNEX_ASSIGN_OR_RETURN(overdue,
                            BenchmarksStore(tx).OverdueRuns(now - Seconds(options_.run_timeout_s)));
    return Status::Ok();
  }));
  for (const auto& [run_id, machine_id] : overdue) {
    GPUNEX_RETURN_IF_ERROR(db_.Transact([&, &run_id = run_id](store::Tx& tx) -> Status {
      GPUNEX_ASSIGN_OR_RETURN(std::optional<BenchmarkRun> run,
                              BenchmarksStore(tx).FindRun(run_id, true));
      if (!run || run->state != BenchmarkState::kRunning) return Status::Ok();
      return FailRun(tx, now, std::move(*run),
                     "no result within " + std::to_string(options_.run_timeout_s) + " s");
    }));
    LogWarn("benchmark.timed_out", {{"benchmark_id", run_id}, {"machine_id", machine_id}});
  }
  return Status::Ok();
}

Status Benchmarks::TickOnce() {
  const Timestamp now = options_.clock->Now();
  GPUNEX_RETURN_IF_ERROR(EndOverdueRuns(now));
  // Machines with a GPU due, among those online: the exact decision is Schedule's.
  std::vector<std::string> candidates;
  GPUNEX_RETURN_IF_ERROR(db_.Read([&](store::Tx& tx) -> Status {
    GPUNEX_ASSIGN_OR_RETURN(
        std::vector<std::string> due,
        BenchmarksStore(tx).MachinesDue(now, now - Seconds(options_.interval_s)));
    GPUNEX_ASSIGN_OR_RETURN(std::vector<std::string> online, fleet::OnlineMachines(tx));
    std::set_intersection(due.begin(), due.end(), online.begin(), online.end(),
                          std::back_inserter(candidates));
    return Status::Ok();
  }));
  for (const auto& mid : candidates) {
    std::string run_id;
    Status st = db_.Transact([&](store::Tx& tx) -> Status {
      GPUNEX_ASSIGN_OR_RETURN(run_id, Schedule(tx, now, mid, ""));
      return Status::Ok();
    });
    // Another instance scheduled it first (the unique index on the active run).
    if (st.code() == StatusCode::kAlreadyExists) continue;
    GPUNEX_RETURN_IF_ERROR(st);
    if (!run_id.empty())
      LogInfo("benchmark.scheduled", {{"machine_id", mid}, {"benchmark_id", run_id}});
  }
  return Status::Ok();
}

StatusOr<BenchmarkRun> Benchmarks::Request(const accounts::Principal& p,
                                           const std::string& machine_id) {
  const Timestamp now = options_.clock->Now();
  std::string run_id;
  GPUNEX_RETURN_IF_ERROR(db_.Transact([&](store::Tx& tx) -> Status {
    GPUNEX_ASSIGN_OR_RETURN(std::optional<fleet::Machine> m, fleet::LoadMachine(tx, machine_id));
    if (!m || (!p.IsAdmin() && m->provider_id != p.user.id)) return NotFound("no such machine");
    if (!options_.enabled) return FailedPrecondition("benchmarks are turned off on this platform");
    if (m->status != fleet::MachineStatus::kOnline)
      return FailedPrecondition("the machine is offline; a benchmark needs its agent");
    GPUNEX_ASSIGN_OR_RETURN(std::optional<std::string> running,
                            BenchmarksStore(tx).RunningRunOn(machine_id));
    if (running)
      return FailedPrecondition("a benchmark is already running on this machine (" + *running +
                                ")");
    GPUNEX_ASSIGN_OR_RETURN(run_id, Schedule(tx, now, machine_id, p.user.id));
    if (run_id.empty()) {
      return FailedPrecondition(
          "no GPU of this machine can be benchmarked now: each is rented, disabled or absent");
    }
    return accounts::Audit(tx, now, p.user.id, "benchmark.requested", run_id, p.ip,
                           {{"machine_id", machine_id}});
  }));
  BenchmarkRun out;
  GPUNEX_RETURN_IF_ERROR(db_.Read([&](store::Tx& tx) -> Status {
    GPUNEX_ASSIGN_OR_RETURN(std::optional<BenchmarkRun> run,
                            BenchmarksStore(tx).FindRun(run_id, true));
    if (!run) return Internal("the new benchmark run is missing");
    out = std::move(*run);
    return Describe(tx, out);
  }));
  return out;
}

}  // namespace gpunex::platform::benchmarks
