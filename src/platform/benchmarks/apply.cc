// Applying a run_benchmark result, exactly once, in the transaction that records it:
// parse (typed), evaluate (evaluate.h, pure), apply (this folder's tables and the
// verdicts reported to the fleet), notify (notices.h).
#include "common/log.h"
#include "platform/benchmarks/benchmarks.h"
#include "platform/benchmarks/benchmarks_store.h"
#include "platform/benchmarks/evaluate.h"
#include "platform/benchmarks/notices.h"
#include "platform/catalog/catalog.h"
#include "platform/notify/notify.h"

namespace gpunex::platform::benchmarks {
namespace {

GpuStatusRow StatusRowOf(std::map<std::string, GpuStatusRow>& status, const std::string& gpu_id,
                         const std::string& machine_id) {
  auto it = status.find(gpu_id);
  if (it != status.end()) return it->second;
  GpuStatusRow row;
  row.gpu_id = gpu_id;
  row.machine_id = machine_id;
  return row;
}

std::string GpuLabel(const std::string& name, int64_t index) {
  return name + " (GPU " + std::to_string(index) + ")";
}

}  // namespace

Status Benchmarks::FailRun(store::Tx& tx, Timestamp now, BenchmarkRun run,
                           const std::string& error) {
  BenchmarksStore s(tx);
  run.state = "error";
  run.error = Truncate(error);
  run.finished_at = now;
  GPUNEX_ASSIGN_OR_RETURN(auto status, s.StatusOf(run.machine_id));
  std::map<std::string, fleet::BenchmarkFacts> facts;
  for (auto& g : run.gpus) {
    g.state = "error";
    g.error = run.error;
    GpuStatusRow row = StatusRowOf(status, g.gpu_id, run.machine_id);
    row.due_at = now + Seconds(options_.retry_after_s);
    row.due_reason = "retry";
    GPUNEX_RETURN_IF_ERROR(s.UpsertStatus(row));
    facts[g.gpu_id] = {std::nullopt, "", false};
  }
  GPUNEX_RETURN_IF_ERROR(s.FinishRun(run));
  // A run that timed out still has its command waiting for a result: it must not go out
  // again (a GPU rented since would be benchmarked).
  GPUNEX_RETURN_IF_ERROR(
      fleet::Fleet::CancelCommand(tx, now, run.machine_id, run.command_id, run.error.value_or("")));
  LogWarn("benchmark.error",
          {{"benchmark_id", run.id}, {"machine_id", run.machine_id}, {"error", error}});
  return fleet::ReportBenchmarkFacts(tx, now, run.machine_id, facts);
}

Status Benchmarks::ApplyResult(store::Tx& tx, Timestamp now, const std::string& machine_id,
                               const protocol::Command& command, const protocol::Result& result) {
  // --- parse
  auto payload = protocol::ParseRunBenchmark(command.payload);
  if (!payload.ok())
    return Internal("stored run_benchmark command does not parse: " + payload.status().ToString());
  BenchmarksStore s(tx);
  GPUNEX_ASSIGN_OR_RETURN(std::optional<BenchmarkRun> found,
                          s.FindRun(payload->benchmark_id, true));
  if (!found || found->machine_id != machine_id || found->state != "running")
    return Status::Ok();  // timed out
  BenchmarkRun run = std::move(*found);
  if (!result.ok)
    return FailRun(tx, now, std::move(run),
                   "the agent could not run the benchmark: " + result.error);
  auto parsed = protocol::ParseBenchmarkResult(result.data);
  if (!parsed.ok())
    return FailRun(tx, now, std::move(run), "malformed result: " + parsed.status().ToString());
  GPUNEX_ASSIGN_OR_RETURN(std::optional<fleet::Machine> machine,
                          fleet::LoadMachine(tx, machine_id));
  if (!machine) return Internal("the benchmarked machine is missing");
  std::vector<GpuUnderTest> under_test;
  for (const GpuRunResult& r : run.gpus) {
    GpuUnderTest g;
    g.gpu_id = r.gpu_id;
    g.uuid = r.uuid;
    g.catalog_id = r.catalog_id;
    g.label = r.gpu_id;
    for (const fleet::MachineGpu& mg : machine->gpus) {
      if (mg.id != r.gpu_id) continue;
      g.label = GpuLabel(mg.name, mg.index);
      g.pcie_width_max = mg.info.pcie_width_max;
      g.previous = mg.benchmark_verdict;
    }
    GPUNEX_ASSIGN_OR_RETURN(g.model, catalog::FindModel(tx, r.catalog_id));
    g.thresholds = ThresholdsFor(r.catalog_id);
    under_test.push_back(std::move(g));
  }

  // --- evaluate
  const Evaluation e = Evaluate(*parsed, run.machine_phases, under_test, options_.thresholds);

  // --- apply
  run.state = e.run_state;
  run.error = e.run_error;
  run.emulated = run.emulated || e.emulated;
  run.network = e.network;
  run.storage = e.storage;
  run.machine_failures = e.machine_failures;
  run.finished_at = now;
  GPUNEX_ASSIGN_OR_RETURN(auto status, s.StatusOf(machine_id));
  std::map<std::string, fleet::BenchmarkFacts> facts;
  for (size_t i = 0; i < run.gpus.size(); ++i) {
    GpuRunResult& r = run.gpus[i];
    const GpuOutcome& o = e.gpus[i];
    r.state = o.state;
    r.figures = o.figures;
    r.score = o.score;
    r.failures = o.failures;
    r.error = o.error;
    GpuStatusRow row = StatusRowOf(status, r.gpu_id, machine_id);
    if (o.score) {
      row.performance_score = o.score;
      row.last_benchmark_at = now;
      row.due_at.reset();
      row.due_reason.clear();
    } else {
      row.due_at = now + Seconds(options_.retry_after_s);
      row.due_reason = "retry";
    }
    GPUNEX_RETURN_IF_ERROR(s.UpsertStatus(row));
    facts[r.gpu_id] = o.facts;
  }
  GPUNEX_RETURN_IF_ERROR(s.FinishRun(run));
  GPUNEX_RETURN_IF_ERROR(fleet::ReportBenchmarkFacts(tx, now, machine_id, facts));
  LogInfo("benchmark.finished", {{"benchmark_id", run.id},
                                 {"machine_id", machine_id},
                                 {"state", run.state},
                                 {"delisted", static_cast<int64_t>(e.delisted.size())},
                                 {"relisted", static_cast<int64_t>(e.relisted.size())}});

  // --- notify the provider of what changed for their listing
  const std::vector<Notice> notices = ListingNotices(e, machine->name);
  if (notices.empty()) return Status::Ok();
  auto owner = accounts::LoadUser(tx, machine->provider_id);
  if (!owner.ok())
    return owner.status().code() == StatusCode::kNotFound ? Status::Ok() : owner.status();
  const std::string link = "/#/provider/benchmark?machine=" + machine_id;
  bool emailed = false;
  for (const Notice& n : notices) {
    GPUNEX_RETURN_IF_ERROR(
        notify::AddNotification(tx, now, owner->id, n.kind, n.title, n.text, link));
    if (!n.email) continue;
    notify::Email mail{owner->email, NoticeEmailSubject(n),
                       NoticeEmailBody(n, owner->name, options_.public_url + link), n.kind};
    GPUNEX_RETURN_IF_ERROR(notify::EnqueueEmail(tx, now, mail, options_.mail_domain));
    emailed = true;
  }
  if (emailed && options_.wake_outbox) tx.AfterCommit(options_.wake_outbox);
  return Status::Ok();
}

}  // namespace gpunex::platform::benchmarks
