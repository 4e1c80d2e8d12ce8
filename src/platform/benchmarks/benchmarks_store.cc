#include "platform/benchmarks/benchmarks_store.h"

#include "common/json.h"
#include "common/log.h"
#include "platform/store/coordination.h"
#include "platform/store/paging.h"
#include "platform/store/rows.h"
#include "platform/store/sql_literal.h"

namespace gpunex::platform::benchmarks {
namespace {

// States are written into the statements as literals (store::SqlLiteral), so that the
// planner sees the constant: benchmark_runs_active is a partial index on the running state.
using store::SqlLiteral;

store::Value OptText(const std::optional<std::string>& s) {
  return s ? store::Value(*s) : store::Value(nullptr);
}

// Failures as stored: [{"metric", "measured", "required", "guidance"}].
std::string FailuresText(const std::vector<Failure>& fs) {
  json::array a;
  for (const auto& f : fs) {
    a.push_back(json::object{{"metric", f.metric},
                             {"measured", f.measured},
                             {"required", f.required},
                             {"guidance", f.guidance}});
  }
  return ToJsonText(a);
}

// Read leniently: what the platform wrote once is not re-validated.
std::vector<Failure> FailuresFrom(const std::string& text) {
  std::vector<Failure> out;
  const json::value v = ParseJsonOr(text, json::array{});
  if (!v.is_array()) return out;
  for (const auto& x : v.get_array()) {
    if (!x.is_object()) continue;
    const auto& o = x.get_object();
    out.push_back({StoredText(o, "metric"), StoredNumber(o, "measured"),
                   StoredNumber(o, "required"), StoredText(o, "guidance")});
  }
  return out;
}

std::optional<protocol::BenchmarkNetwork> NetworkFrom(const std::optional<std::string>& text) {
  if (!text) return std::nullopt;
  const json::value v = ParseJsonOr(*text, nullptr);
  if (!v.is_object()) return std::nullopt;
  const auto& o = v.get_object();
  return protocol::BenchmarkNetwork{StoredNumber(o, "rtt_p50_ms"), StoredNumber(o, "rtt_p99_ms"),
                                    StoredNumber(o, "download_mbit_s"),
                                    StoredNumber(o, "upload_mbit_s")};
}

std::optional<protocol::BenchmarkStorage> StorageFrom(const std::optional<std::string>& text) {
  if (!text) return std::nullopt;
  const json::value v = ParseJsonOr(*text, nullptr);
  if (!v.is_object()) return std::nullopt;
  const auto& o = v.get_object();
  protocol::BenchmarkStorage s{
      StoredNumber(o, "seq_read_mb_s"),    StoredNumber(o, "seq_write_mb_s"),
      StoredNumber(o, "rand_read_iops"),   StoredNumber(o, "rand_read_p50_us"),
      StoredNumber(o, "rand_read_p99_us"), true};
  if (auto it = o.find("direct_io"); it != o.end() && it->value().is_bool())
    s.direct_io = it->value().get_bool();
  return s;
}

std::optional<protocol::GpubenchFigures> FiguresFrom(const std::string& run_id,
                                                     const std::optional<std::string>& text) {
  if (!text) return std::nullopt;
  const json::value v = ParseJsonOr(*text, nullptr);
  if (!v.is_object()) return std::nullopt;
  auto f = protocol::ParseGpubenchFigures(v.get_object(), "figures");
  if (!f.ok()) {
    LogWarn("benchmark.stored_figures_unreadable",
            {{"benchmark_id", run_id}, {"error", f.status().ToString()}});
    return std::nullopt;
  }
  return std::move(*f);
}

const store::RowMapper<BenchmarkRun>& RunRows() {
  using R = BenchmarkRun;
  static const auto* const m = new store::RowMapper<R>({
      {"id", &R::id},
      {"machine_id", &R::machine_id},
      {"reason",
       [](R& r, const store::Cell& c) { r.reason = kBenchmarkReasonNames.ParseStored(c.Str()); }},
      {"state",
       [](R& r, const store::Cell& c) { r.state = kBenchmarkStateNames.ParseStored(c.Str()); }},
      {"requested_by", &R::requested_by},
      {"command_id", &R::command_id},
      {"machine_phases", &R::machine_phases},
      {"emulated", &R::emulated},
      {"network", [](R& r, const store::Cell& c) { r.network = NetworkFrom(c.OptStr()); }},
      {"storage", [](R& r, const store::Cell& c) { r.storage = StorageFrom(c.OptStr()); }},
      {"failures", [](R& r, const store::Cell& c) { r.machine_failures = FailuresFrom(c.Str()); }},
      {"error", &R::error},
      {"created_at", &R::created_at},
      {"finished_at", &R::finished_at},
  });
  return *m;
}

// A GPU's result with its figures still as text: reading them logs the run's id.
struct GpuRow {
  GpuRunResult result;
  std::optional<std::string> figures;
};

StatusOr<std::vector<GpuRunResult>> GpusOfRun(store::Tx& tx, const std::string& run_id) {
  static const auto* const m = new store::RowMapper<GpuRow>({
      {"gpu_id", [](GpuRow& g, const store::Cell& c) { g.result.gpu_id = c.Str(); }},
      {"uuid", [](GpuRow& g, const store::Cell& c) { g.result.uuid = c.Str(); }},
      {"catalog_id", [](GpuRow& g, const store::Cell& c) { g.result.catalog_id = c.Str(); }},
      {"state",
       [](GpuRow& g, const store::Cell& c) {
         g.result.state = kBenchmarkStateNames.ParseStored(c.Str());
       }},
      {"figures", &GpuRow::figures},
      {"score",
       [](GpuRow& g, const store::Cell& c) {
         if (!c.IsNull()) g.result.score = c.Real();
       }},
      {"failures",
       [](GpuRow& g, const store::Cell& c) { g.result.failures = FailuresFrom(c.Str()); }},
      {"error", [](GpuRow& g, const store::Cell& c) { g.result.error = c.OptStr(); }},
      {"created_at", [](GpuRow& g, const store::Cell& c) { g.result.created_at = c.Time(); }},
  });
  GPUNEX_ASSIGN_OR_RETURN(
      store::Rows rows,
      tx.Query("SELECT " + m->Select() + " FROM benchmark_gpus WHERE run_id = ? ORDER BY gpu_id",
               {run_id}));
  GPUNEX_ASSIGN_OR_RETURN(std::vector<GpuRow> gpus, m->Decode(rows));
  std::vector<GpuRunResult> out;
  out.reserve(gpus.size());
  for (GpuRow& g : gpus) {
    g.result.figures = FiguresFrom(run_id, g.figures);
    out.push_back(std::move(g.result));
  }
  return out;
}

const store::RowMapper<GpuStatusRow>& StatusRows() {
  using S = GpuStatusRow;
  static const auto* const m = new store::RowMapper<S>({
      {"gpu_id", &S::gpu_id},
      {"machine_id", &S::machine_id},
      {"performance_score", &S::performance_score},
      {"last_benchmark_at", &S::last_benchmark_at},
      {"due_at", &S::due_at},
      {"due_reason",
       [](S& s, const store::Cell& c) {
         if (!c.IsNull()) s.due_reason = kBenchmarkReasonNames.ParseStored(c.Str());
       }},
  });
  return *m;
}

const store::RowMapper<ScoreSample>& ScoreRows() {
  using S = ScoreSample;
  static const auto* const m = new store::RowMapper<S>({
      {"gpu_id", &S::gpu_id},
      {"run_id", &S::run_id},
      {"created_at", &S::at},
      {"score", &S::score},
      {"state",
       [](S& s, const store::Cell& c) {
         s.passed = kBenchmarkStateNames.ParseStored(c.Str()) == BenchmarkState::kPassed;
       }},
  });
  return *m;
}

}  // namespace

Status BenchmarksStore::InsertRun(const BenchmarkRun& run) {
  GPUNEX_RETURN_IF_ERROR(
      tx_.Exec("INSERT INTO benchmark_runs (id, machine_id, reason, state, requested_by, "
               "command_id, machine_phases, emulated, failures, created_at) VALUES (?, ?, ?, ?, "
               "?, ?, ?, ?, '[]', ?)",
               {run.id, run.machine_id, std::string(Name(run.reason)), std::string(Name(run.state)),
                OptText(run.requested_by), run.command_id, int64_t{run.machine_phases},
                int64_t{run.emulated}, ToUnixMicros(run.created_at)})
          .status());
  for (const auto& g : run.gpus) {
    GPUNEX_RETURN_IF_ERROR(
        tx_.Exec("INSERT INTO benchmark_gpus (run_id, gpu_id, uuid, catalog_id, state, failures, "
                 "created_at) VALUES (?, ?, ?, ?, ?, '[]', ?)",
                 {run.id, g.gpu_id, g.uuid, g.catalog_id, std::string(Name(g.state)),
                  ToUnixMicros(g.created_at)})
            .status());
  }
  return Status::Ok();
}

StatusOr<std::optional<BenchmarkRun>> BenchmarksStore::FindRun(const std::string& run_id,
                                                               bool with_gpus) {
  GPUNEX_ASSIGN_OR_RETURN(store::Rows rows, tx_.Query(std::string("SELECT ") + RunRows().Select() +
                                                          " FROM benchmark_runs WHERE id = ?",
                                                      {run_id}));
  GPUNEX_ASSIGN_OR_RETURN(std::optional<BenchmarkRun> run, RunRows().First(rows));
  if (run && with_gpus) {
    GPUNEX_ASSIGN_OR_RETURN(run->gpus, GpusOfRun(tx_, run_id));
  }
  return run;
}

StatusOr<std::optional<BenchmarkRun>> BenchmarksStore::LatestMachineRun(
    const std::string& machine_id) {
  GPUNEX_ASSIGN_OR_RETURN(
      store::Rows rows,
      tx_.Query(std::string("SELECT ") + RunRows().Select() +
                    " FROM benchmark_runs WHERE machine_id = ? AND network IS NOT NULL AND "
                    "state <> " +
                    SqlLiteral(BenchmarkState::kRunning) + " ORDER BY id DESC LIMIT 1",
                {machine_id}));
  return RunRows().First(rows);
}

StatusOr<std::optional<std::string>> BenchmarksStore::RunningRunOn(const std::string& machine_id) {
  GPUNEX_ASSIGN_OR_RETURN(
      store::Rows rows,
      tx_.Query("SELECT id FROM benchmark_runs WHERE machine_id = ? AND state = " +
                    SqlLiteral(BenchmarkState::kRunning),
                {machine_id}));
  if (rows.empty()) return std::optional<std::string>();
  return std::optional<std::string>(rows[0]["id"].Str());
}

StatusOr<int64_t> BenchmarksStore::CountRunsOn(const std::string& machine_id) {
  GPUNEX_ASSIGN_OR_RETURN(
      store::Rows rows,
      tx_.Query("SELECT COUNT(*) AS n FROM benchmark_runs WHERE machine_id = ?", {machine_id}));
  return rows.at(0)["n"].Int();
}

StatusOr<std::string> BenchmarksStore::ChangeMark() {
  GPUNEX_ASSIGN_OR_RETURN(store::Rows rows,
                          tx_.Query("SELECT MAX(last_benchmark_at) FROM gpu_benchmark_status"));
  return store::MarkOf(rows.at(0));
}

StatusOr<std::vector<std::pair<std::string, std::string>>> BenchmarksStore::OverdueRuns(
    Timestamp cutoff) {
  GPUNEX_ASSIGN_OR_RETURN(
      store::Rows rows,
      tx_.Query("SELECT id, machine_id FROM benchmark_runs WHERE state = " +
                    SqlLiteral(BenchmarkState::kRunning) + " AND created_at < ? ORDER BY id",
                {ToUnixMicros(cutoff)}));
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& r : rows) out.emplace_back(r["id"].Str(), r["machine_id"].Str());
  return out;
}

StatusOr<Page<BenchmarkRun>> BenchmarksStore::ListRuns(const std::string& machine_id,
                                                       const PageRequest& page) {
  store::PageQuery q{RunRows().Select(),
                     "FROM benchmark_runs",
                     "machine_id = ?",
                     {machine_id},
                     {{"id", store::KeyColumn::Type::kText}},
                     /*descending=*/true};
  GPUNEX_ASSIGN_OR_RETURN(Page<store::Row> rows, store::QueryPage(tx_, q, page));
  GPUNEX_ASSIGN_OR_RETURN(Page<BenchmarkRun> out, RunRows().DecodePage(rows));
  for (BenchmarkRun& run : out.items) {
    GPUNEX_ASSIGN_OR_RETURN(run.gpus, GpusOfRun(tx_, run.id));
  }
  return out;
}

Status BenchmarksStore::FinishRun(const BenchmarkRun& run) {
  GPUNEX_RETURN_IF_ERROR(
      tx_.Exec("UPDATE benchmark_runs SET state = ?, network = ?, storage = ?, failures = ?, "
               "error = ?, emulated = ?, finished_at = ? WHERE id = ?",
               {std::string(Name(run.state)),
                run.network ? store::Value(ToJsonText(protocol::ToJson(*run.network)))
                            : store::Value(nullptr),
                run.storage ? store::Value(ToJsonText(protocol::ToJson(*run.storage)))
                            : store::Value(nullptr),
                FailuresText(run.machine_failures), OptText(run.error), int64_t{run.emulated},
                run.finished_at ? store::Value(ToUnixMicros(*run.finished_at))
                                : store::Value(nullptr),
                run.id})
          .status());
  for (const auto& g : run.gpus) {
    GPUNEX_RETURN_IF_ERROR(
        tx_.Exec("UPDATE benchmark_gpus SET state = ?, figures = ?, score = ?, failures = ?, "
                 "error = ? WHERE run_id = ? AND gpu_id = ?",
                 {std::string(Name(g.state)),
                  g.figures ? store::Value(ToJsonText(protocol::ToJson(*g.figures)))
                            : store::Value(nullptr),
                  g.score ? store::Value(*g.score) : store::Value(nullptr),
                  FailuresText(g.failures), OptText(g.error), run.id, g.gpu_id})
            .status());
  }
  return Status::Ok();
}

StatusOr<std::map<std::string, GpuStatusRow>> BenchmarksStore::StatusOf(
    const std::string& machine_id) {
  GPUNEX_ASSIGN_OR_RETURN(store::Rows rows,
                          tx_.Query("SELECT " + StatusRows().Select() +
                                        " FROM gpu_benchmark_status WHERE machine_id = ?",
                                    {machine_id}));
  GPUNEX_ASSIGN_OR_RETURN(std::vector<GpuStatusRow> statuses, StatusRows().Decode(rows));
  std::map<std::string, GpuStatusRow> out;
  for (GpuStatusRow& s : statuses) out.emplace(s.gpu_id, std::move(s));
  return out;
}

Status BenchmarksStore::UpsertStatus(const GpuStatusRow& s) {
  return tx_
      .Exec(
          "INSERT INTO gpu_benchmark_status (gpu_id, machine_id, performance_score, "
          "last_benchmark_at, due_at, due_reason) VALUES (?, ?, ?, ?, ?, ?) "
          "ON CONFLICT (gpu_id) DO UPDATE SET performance_score = excluded.performance_score, "
          "last_benchmark_at = excluded.last_benchmark_at, due_at = excluded.due_at, "
          "due_reason = excluded.due_reason",
          {s.gpu_id, s.machine_id,
           s.performance_score ? store::Value(*s.performance_score) : store::Value(nullptr),
           s.last_benchmark_at ? store::Value(ToUnixMicros(*s.last_benchmark_at))
                               : store::Value(nullptr),
           s.due_at ? store::Value(ToUnixMicros(*s.due_at)) : store::Value(nullptr),
           s.due_reason ? store::Value(std::string(Name(*s.due_reason))) : store::Value(nullptr)})
      .status();
}

StatusOr<std::vector<std::string>> BenchmarksStore::MachinesDue(Timestamp now,
                                                                Timestamp periodic_cutoff) {
  GPUNEX_ASSIGN_OR_RETURN(store::Rows rows,
                          tx_.Query("SELECT DISTINCT machine_id FROM gpu_benchmark_status "
                                    "WHERE due_at <= ? OR last_benchmark_at < ? "
                                    "ORDER BY machine_id",
                                    {ToUnixMicros(now), ToUnixMicros(periodic_cutoff)}));
  std::vector<std::string> out;
  for (const auto& r : rows) out.push_back(r["machine_id"].Str());
  return out;
}

StatusOr<std::vector<ScoreSample>> BenchmarksStore::Scores(const std::string& machine_id,
                                                           Timestamp since) {
  std::string sql =
      "SELECT " + ScoreRows().Select("bg") +
      " FROM benchmark_gpus bg JOIN benchmark_runs r ON r.id = bg.run_id WHERE bg.score IS NOT NULL "
      "AND bg.state IN (" +
      SqlLiteral(BenchmarkState::kPassed) + ", " + SqlLiteral(BenchmarkState::kFailed) + ")";
  std::vector<store::Value> params;
  if (!machine_id.empty()) {
    sql += " AND r.machine_id = ?";
    params.emplace_back(machine_id);
  } else {
    sql +=
        " AND bg.gpu_id IN (SELECT gpu_id FROM gpu_benchmark_status WHERE last_benchmark_at >= "
        "?)";
    params.emplace_back(ToUnixMicros(since));
  }
  GPUNEX_ASSIGN_OR_RETURN(store::Rows rows,
                          tx_.Query(sql + " ORDER BY bg.gpu_id, bg.created_at, bg.run_id", params));
  return ScoreRows().Decode(rows);
}

std::vector<store::Migration> BenchmarksMigrations() {
  return {
      {5,
       "benchmarks",
       "benchmarks: runs with their machine figures, per-GPU results",
       {
           // reason: first_connect | hardware_change | periodic | retry | requested.
           // state: running | passed | failed | error.
           R"(CREATE TABLE benchmark_runs (
                id TEXT PRIMARY KEY,
                machine_id TEXT NOT NULL REFERENCES machines(id),
                reason TEXT NOT NULL,
                state TEXT NOT NULL,
                requested_by TEXT,
                command_id TEXT NOT NULL,
                machine_phases BIGINT NOT NULL,
                emulated BIGINT NOT NULL,
                network TEXT,
                storage TEXT,
                failures TEXT NOT NULL,
                error TEXT,
                created_at BIGINT NOT NULL,
                finished_at BIGINT))",
           "CREATE INDEX benchmark_runs_machine ON benchmark_runs (machine_id, id)",
           "CREATE INDEX benchmark_runs_state ON benchmark_runs (state, created_at)",
           // One active run per machine, whichever instance schedules it.
           "CREATE UNIQUE INDEX benchmark_runs_active ON benchmark_runs (machine_id) "
           "WHERE state = 'running'",
           // state: running | passed | failed | error. figures: as gpunex-gpubench reported them.
           R"(CREATE TABLE benchmark_gpus (
                run_id TEXT NOT NULL REFERENCES benchmark_runs(id),
                gpu_id TEXT NOT NULL REFERENCES machine_gpus(id),
                uuid TEXT NOT NULL,
                catalog_id TEXT NOT NULL,
                state TEXT NOT NULL,
                figures TEXT,
                score DOUBLE PRECISION,
                failures TEXT NOT NULL,
                error TEXT,
                created_at BIGINT NOT NULL,
                PRIMARY KEY (run_id, gpu_id)))",
           "CREATE INDEX benchmark_gpus_gpu ON benchmark_gpus (gpu_id, created_at)",
       },
       {}},
      // Each GPU's latest score and due time move out of machine_gpus (the fleet's table)
      // into this folder's own; migration 8 (fleet) then drops the old columns. Reading
      // machine_gpus and machine_events here is the one-off move of that data.
      {7,
       "benchmarks",
       "per-GPU benchmark status: latest score, due time",
       {
           R"(CREATE TABLE gpu_benchmark_status (
                gpu_id TEXT PRIMARY KEY REFERENCES machine_gpus(id),
                machine_id TEXT NOT NULL REFERENCES machines(id),
                performance_score DOUBLE PRECISION,
                last_benchmark_at BIGINT,
                due_at BIGINT,
                due_reason TEXT))",
           "CREATE INDEX gpu_benchmark_status_due ON gpu_benchmark_status (due_at)",
           "CREATE INDEX gpu_benchmark_status_last ON gpu_benchmark_status (last_benchmark_at)",
           "CREATE INDEX gpu_benchmark_status_machine ON gpu_benchmark_status (machine_id)",
           R"(INSERT INTO gpu_benchmark_status (gpu_id, machine_id, performance_score,
                last_benchmark_at, due_at, due_reason)
              SELECT g.id, g.machine_id, g.performance_score, g.last_benchmark_at,
                CASE WHEN g.benchmark_due_at IS NOT NULL THEN g.benchmark_due_at
                     WHEN g.last_benchmark_at IS NULL THEN 0
                     WHEN g.last_benchmark_at < (SELECT MAX(e.at) FROM machine_events e
                       WHERE e.machine_id = g.machine_id AND e.kind = 'inventory_changed')
                       THEN 0
                     ELSE NULL END,
                CASE WHEN g.benchmark_due_at IS NOT NULL THEN 'retry'
                     WHEN g.last_benchmark_at IS NULL THEN
                       CASE WHEN EXISTS (SELECT 1 FROM benchmark_runs r
                                         WHERE r.machine_id = g.machine_id)
                            THEN 'new_gpu' ELSE 'first_connect' END
                     WHEN g.last_benchmark_at < (SELECT MAX(e.at) FROM machine_events e
                       WHERE e.machine_id = g.machine_id AND e.kind = 'inventory_changed')
                       THEN 'hardware_change'
                     ELSE NULL END
              FROM machine_gpus g)",
       },
       {}},
  };
}

}  // namespace gpunex::platform::benchmarks
