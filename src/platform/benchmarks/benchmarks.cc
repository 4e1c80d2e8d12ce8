#include "platform/benchmarks/benchmarks.h"

#include <algorithm>

#include "platform/benchmarks/benchmarks_store.h"
#include "platform/catalog/catalog.h"

namespace gpunex::platform::benchmarks {

Benchmarks::Benchmarks(store::Database& db, fleet::Fleet& fleet, BenchmarksOptions options)
    : db_(db), fleet_(fleet), options_(std::move(options)) {
  fleet_.OnResult(protocol::kRunBenchmark,
                  [this](store::Tx& tx, Timestamp now, const std::string& machine_id,
                         const protocol::Command& command, const protocol::Result& result) {
                    return ApplyResult(tx, now, machine_id, command, result);
                  });
  fleet_.OnHello([this](store::Tx& tx, Timestamp now, const fleet::HelloFacts& hello) {
    return OnHello(tx, now, hello);
  });
}

const Thresholds& Benchmarks::ThresholdsFor(const std::string& catalog_id) const {
  auto it = options_.by_model.find(catalog_id);
  return it == options_.by_model.end() ? options_.thresholds : it->second;
}

Status Benchmarks::Describe(store::Tx& tx, BenchmarkRun& run) const {
  GPUNEX_ASSIGN_OR_RETURN(std::optional<fleet::Machine> machine,
                          fleet::LoadMachine(tx, run.machine_id));
  for (GpuRunResult& g : run.gpus) {
    if (machine) {
      for (const fleet::MachineGpu& mg : machine->gpus) {
        if (mg.id == g.gpu_id) {
          g.index = mg.index;
          g.name = mg.name;
        }
      }
    }
    GPUNEX_ASSIGN_OR_RETURN(g.reference, catalog::FindModel(tx, g.catalog_id));
    g.thresholds = ThresholdsFor(g.catalog_id);
  }
  std::stable_sort(run.gpus.begin(), run.gpus.end(),
                   [](const GpuRunResult& a, const GpuRunResult& b) { return a.index < b.index; });
  return Status::Ok();
}

StatusOr<Page<BenchmarkRun>> Benchmarks::List(const accounts::Principal& p,
                                              const std::string& machine_id,
                                              const PageRequest& page) {
  Page<BenchmarkRun> out;
  GPUNEX_RETURN_IF_ERROR(db_.Read([&](store::Tx& tx) -> Status {
    GPUNEX_ASSIGN_OR_RETURN(std::optional<fleet::Machine> m, fleet::LoadMachine(tx, machine_id));
    if (!m || (!p.IsAdmin() && m->provider_id != p.user.id)) return NotFound("no such machine");
    GPUNEX_ASSIGN_OR_RETURN(out, BenchmarksStore(tx).ListRuns(machine_id, page));
    for (BenchmarkRun& run : out.items) GPUNEX_RETURN_IF_ERROR(Describe(tx, run));
    return Status::Ok();
  }));
  return out;
}

StatusOr<std::map<std::string, GpuScore>> Benchmarks::Scores(const std::string& machine_id) {
  std::map<std::string, GpuScore> out;
  GPUNEX_RETURN_IF_ERROR(db_.Read([&](store::Tx& tx) -> Status {
    GPUNEX_ASSIGN_OR_RETURN(auto status, BenchmarksStore(tx).StatusOf(machine_id));
    out.clear();
    for (const auto& [gpu_id, s] : status) out[gpu_id] = {s.performance_score, s.last_benchmark_at};
    return Status::Ok();
  }));
  return out;
}

StatusOr<std::vector<ScoreSample>> ScoreHistory(store::Tx& tx, const std::string& machine_id,
                                                Timestamp since) {
  return BenchmarksStore(tx).Scores(machine_id, since);
}

StatusOr<MachineFigures> LatestFigures(store::Tx& tx, const std::string& machine_id) {
  BenchmarksStore s(tx);
  MachineFigures out;
  GPUNEX_ASSIGN_OR_RETURN(auto status, s.StatusOf(machine_id));
  for (const auto& [gpu_id, row] : status) {
    if (row.performance_score) out.scores[gpu_id] = *row.performance_score;
  }
  GPUNEX_ASSIGN_OR_RETURN(std::optional<BenchmarkRun> run, s.LatestMachineRun(machine_id));
  if (run) {
    out.network = run->network;
    out.storage = run->storage;
  }
  return out;
}

}  // namespace gpunex::platform::benchmarks
