// Applying a run_benchmark result, exactly once, in the transaction that records it:
// parse (typed), evaluate (evaluate.h, pure), apply (this folder's tables and the
// verdicts reported to the fleet), notify (notices.h).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>

#include "common/invariant.h"
#include "common/log.h"
#include "platform/benchmarks/benchmarks.h"
#include "platform/benchmarks/benchmarks_store.h"
#include "platform/benchmarks/evaluate.h"
#include "platform/benchmarks/notices.h"
#include "platform/catalog/catalog.h"
#include "platform/notify/notify.h"

namespace gpunex::platform::benchmarks {
namespace {

// How far back, and over how many runs, a new score is compared with a GPU's history.
constexpr int kJumpHistoryDays = 90;
constexpr size_t kJumpHistoryRuns = 5;

// The median of `gpu_id`'s last kJumpHistoryRuns scores at or after `since` in `history`
// (oldest first); none without any.
std::optional<double> RecentMedian(const std::vector<ScoreSample>& history,
                                   const std::string& gpu_id, Timestamp since) {
  std::vector<double> recent;
  for (auto it = history.rbegin(); it != history.rend() && recent.size() < kJumpHistoryRuns; ++it) {
    if (it->gpu_id == gpu_id && it->at >= since) recent.push_back(it->score);
  }
  if (recent.empty()) return std::nullopt;
  std::sort(recent.begin(), recent.end());
  const size_t n = recent.size();
  return n % 2 == 1 ? recent[n / 2] : (recent[n / 2 - 1] + recent[n / 2]) / 2;
}

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

// When a spot check falls due: exponentially distributed with mean `mean_s`, between an
// hour and `interval_s` (the periodic run comes then anyway).
Duration SpotCheckDelay(int64_t mean_s, int64_t interval_s) {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  std::exponential_distribution<double> d(1.0 / static_cast<double>(mean_s));
  const double s = std::clamp(d(rng), 3600.0, std::max(3600.0, interval_s - 3600.0));
  return Seconds(static_cast<int64_t>(s));
}

std::string FormatScore(double score) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", score);
  return buf;
}

}  // namespace

Status Benchmarks::FailRun(store::Tx& tx, Timestamp now, BenchmarkRun run,
                           const std::string& error) {
  BenchmarksStore s(tx);
  GPUNEX_INVARIANT(BenchmarkMayGo(run.state, BenchmarkState::kError),
                   "a benchmark run ends once, from running");
  run.state = BenchmarkState::kError;
  run.error = Truncate(error);
  run.finished_at = now;
  GPUNEX_ASSIGN_OR_RETURN(auto status, s.StatusOf(run.machine_id));
  std::map<std::string, fleet::BenchmarkFacts> facts;
  for (auto& g : run.gpus) {
    GPUNEX_INVARIANT(BenchmarkMayGo(g.state, BenchmarkState::kError),
                     "a GPU's benchmark ends once, from running");
    g.state = BenchmarkState::kError;
    g.error = run.error;
    GpuStatusRow row = StatusRowOf(status, g.gpu_id, run.machine_id);
    row.due_at = now + Seconds(options_.retry_after_s);
    row.due_reason = BenchmarkReason::kRetry;
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
  if (!found || found->machine_id != machine_id || found->state != BenchmarkState::kRunning)
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
  GPUNEX_INVARIANT(BenchmarkMayGo(run.state, e.run_state),
                   "a benchmark run ends once, from running");
  run.state = e.run_state;
  run.error = e.run_error;
  run.emulated = run.emulated || e.emulated;
  run.network = e.network;
  run.storage = e.storage;
  run.machine_failures = e.machine_failures;
  run.finished_at = now;
  GPUNEX_ASSIGN_OR_RETURN(auto status, s.StatusOf(machine_id));
  // The machine's scores of the last kJumpHistoryDays, oldest first: each GPU's new score
  // is compared with its previous one and with the median of its last kJumpHistoryRuns.
  // (Scores reads every score of one machine; the window applies below.)
  const Timestamp history_since = now - std::chrono::hours(24 * kJumpHistoryDays);
  GPUNEX_ASSIGN_OR_RETURN(std::vector<ScoreSample> history, s.Scores(machine_id, history_since));
  std::map<std::string, fleet::BenchmarkFacts> facts;
  std::vector<std::string> jumps;  // GPUs whose score moved more than score_jump_fraction
  for (size_t i = 0; i < run.gpus.size(); ++i) {
    GpuRunResult& r = run.gpus[i];
    const GpuOutcome& o = e.gpus[i];
    GPUNEX_INVARIANT(BenchmarkMayGo(r.state, o.state), "a GPU's benchmark ends once, from running");
    r.state = o.state;
    r.figures = o.figures;
    r.score = o.score;
    r.failures = o.failures;
    r.error = o.error;
    GpuStatusRow row = StatusRowOf(status, r.gpu_id, machine_id);
    if (o.score) {
      const std::optional<double> previous = row.performance_score;
      row.performance_score = o.score;
      row.last_benchmark_at = now;
      row.due_at.reset();
      row.due_reason.reset();
      if (o.state == BenchmarkState::kPassed && options_.spot_check_mean_s > 0) {
        row.due_at = now + SpotCheckDelay(options_.spot_check_mean_s, options_.interval_s);
        row.due_reason = BenchmarkReason::kSpotCheck;
      }
      const std::optional<double> median = RecentMedian(history, r.gpu_id, history_since);
      const auto jumped = [&](const std::optional<double>& from) {
        return from && *from > 0 && std::abs(*o.score / *from - 1) > options_.score_jump_fraction;
      };
      if (jumped(previous) || jumped(median)) {
        // Against the median too: a score that creeps by less than the fraction a run
        // still leaves its history behind.
        jumps.push_back(under_test[i].label + ": " + FormatScore(*o.score) + " (previous " +
                        (previous ? FormatScore(*previous) : std::string("none")) +
                        ", median of its recent runs " +
                        (median ? FormatScore(*median) : std::string("none")) + ")");
      }
    } else {
      row.due_at = now + Seconds(options_.retry_after_s);
      row.due_reason = BenchmarkReason::kRetry;
    }
    GPUNEX_RETURN_IF_ERROR(s.UpsertStatus(row));
    facts[r.gpu_id] = o.facts;
  }
  GPUNEX_RETURN_IF_ERROR(s.FinishRun(run));
  GPUNEX_RETURN_IF_ERROR(fleet::ReportBenchmarkFacts(tx, now, machine_id, facts));
  LogInfo("benchmark.finished", {{"benchmark_id", run.id},
                                 {"machine_id", machine_id},
                                 {"state", Name(run.state)},
                                 {"delisted", static_cast<int64_t>(e.delisted.size())},
                                 {"relisted", static_cast<int64_t>(e.relisted.size())}});

  // --- flag scores that jump to the admins: the hardware or the agent changed
  if (!jumps.empty()) {
    std::string list;
    for (const auto& j : jumps) list += "\n  - " + j;
    GPUNEX_RETURN_IF_ERROR(fleet::AddMachineEvent(tx, machine_id,
                                                  fleet::MachineEventKind::kBenchmarkJump,
                                                  {{"run_id", run.id}, {"gpus", list}}, now));
    GPUNEX_ASSIGN_OR_RETURN(std::vector<std::string> admins,
                            accounts::UsersWithRole(tx, accounts::kRoleAdmin));
    for (const std::string& admin : admins) {
      GPUNEX_RETURN_IF_ERROR(notify::AddNotification(
          tx, now, admin, "benchmark.jump", "Benchmark scores jumped on " + machine->name,
          "Run " + run.id + " measured these GPUs far from their previous scores (more than " +
              std::to_string(static_cast<int>(100 * options_.score_jump_fraction)) + " %):" + list +
              "\nHealthy hardware does not change by itself: check the machine's hardware "
              "history and its agent.",
          "/#/provider/benchmark?machine=" + machine_id));
    }
  }

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
                       NoticeEmailBody(n, owner->name, options_.public_url + link), n.kind,
                       owner->id};
    GPUNEX_RETURN_IF_ERROR(notify::EnqueueEmail(tx, now, mail, options_.mail_domain));
    emailed = true;
  }
  if (emailed && options_.wake_outbox) tx.AfterCommit(options_.wake_outbox);
  return Status::Ok();
}

}  // namespace gpunex::platform::benchmarks
