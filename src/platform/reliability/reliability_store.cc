#include "platform/reliability/reliability_store.h"

#include "platform/store/rows.h"

namespace gpunex::platform::reliability {
namespace {

const store::RowMapper<MachineState>& MachineRows() {
  using M = MachineState;
  static const auto* const m = new store::RowMapper<M>({
      {"machine_id", &M::machine_id},
      {"provider_id", &M::provider_id},
      {"gpus", &M::gpus},
      {"accrued_until", &M::accrued_until},
      {"scheduled_e", &M::scheduled_e},
      {"up_e", &M::up_e},
      {"ok_e", &M::ok_e},
      {"ended_e", &M::ended_e},
      {"scheduled_total_us", &M::scheduled_total_us},
      {"day_scheduled_us", [](M& m, const store::Cell& c) { m.day.scheduled_us = c.Int(); }},
      {"day_up_us", [](M& m, const store::Cell& c) { m.day.up_us = c.Int(); }},
      {"week_scheduled_us", [](M& m, const store::Cell& c) { m.week.scheduled_us = c.Int(); }},
      {"week_up_us", [](M& m, const store::Cell& c) { m.week.up_us = c.Int(); }},
      {"month_scheduled_us", [](M& m, const store::Cell& c) { m.month.scheduled_us = c.Int(); }},
      {"month_up_us", [](M& m, const store::Cell& c) { m.month.up_us = c.Int(); }},
      {"uptime", &M::uptime},
      {"completion", &M::completion},
      {"benchmark", &M::benchmark},
      {"score", &M::score},
      {"is_new", &M::is_new},
      {"computed_at", &M::computed_at},
      {"below_threshold", &M::below_threshold},
      {"snapshot_day", &M::snapshot_day},
  });
  return *m;
}

const store::RowMapper<Progress>& ProgressRows() {
  using P = Progress;
  static const auto* const m = new store::RowMapper<P>({
      {"jobs_until", &P::jobs_until},
      {"telemetry_minute", &P::telemetry_minute},
      {"benchmarks_until", &P::benchmarks_until},
      {"expired_day_hour", &P::expired_day_hour},
      {"expired_week_hour", &P::expired_week_hour},
      {"expired_month_hour", &P::expired_month_hour},
  });
  return *m;
}

const store::RowMapper<GpuState>& GpuRows() {
  using G = GpuState;
  static const auto* const m = new store::RowMapper<G>({
      {"gpu_id", &G::gpu_id},
      {"machine_id", &G::machine_id},
      {"baseline", &G::baseline},
      {"latest", &G::latest},
      {"latest_at", &G::latest_at},
      {"loaded_e", &G::loaded_e},
      {"throttled_e", &G::throttled_e},
  });
  return *m;
}

const store::RowMapper<HourRow>& HourRows() {
  using H = HourRow;
  static const auto* const m = new store::RowMapper<H>({
      {"machine_id", &H::machine_id},
      {"hour", &H::hour},
      {"scheduled_us", &H::scheduled_us},
      {"up_us", &H::up_us},
      {"scheduled_e", &H::scheduled_e},
      {"up_e", &H::up_e},
      {"ok_e", &H::ok_e},
      {"ended_e", &H::ended_e},
  });
  return *m;
}

const store::RowMapper<GpuHourRow>& GpuHourRows() {
  using H = GpuHourRow;
  static const auto* const m = new store::RowMapper<H>({
      {"gpu_id", &H::gpu_id},
      {"machine_id", &H::machine_id},
      {"hour", &H::hour},
      {"loaded_e", &H::loaded_e},
      {"throttled_e", &H::throttled_e},
  });
  return *m;
}

const store::RowMapper<JobRow>& JobRows() {
  static const auto* const m = new store::RowMapper<JobRow>({
      {"workload_id", &JobRow::workload_id},
      {"machine_id", &JobRow::machine_id},
      {"at", &JobRow::at},
      {"party", [](JobRow& j,
                   const store::Cell& c) { j.party = fleet::kEndPartyNames.ParseStored(c.Str()); }},
      {"reason", &JobRow::reason},
  });
  return *m;
}

const store::RowMapper<DayRow>& DayRows() {
  static const auto* const m = new store::RowMapper<DayRow>({
      {"machine_id", &DayRow::machine_id},
      {"day", &DayRow::day},
      {"score", &DayRow::score},
      {"is_new", &DayRow::is_new},
      {"gpus", &DayRow::gpus},
  });
  return *m;
}

std::vector<store::Value> MachineValues(const MachineState& m) {
  return {m.machine_id,
          m.provider_id,
          m.gpus,
          ToUnixMicros(m.accrued_until),
          m.scheduled_e,
          m.up_e,
          m.ok_e,
          m.ended_e,
          m.scheduled_total_us,
          m.day.scheduled_us,
          m.day.up_us,
          m.week.scheduled_us,
          m.week.up_us,
          m.month.scheduled_us,
          m.month.up_us,
          m.uptime,
          m.completion,
          m.benchmark,
          m.score,
          int64_t{m.is_new},
          ToUnixMicros(m.computed_at),
          int64_t{m.below_threshold},
          m.snapshot_day};
}

store::Value OptValue(const std::optional<double>& v) {
  return v ? store::Value(*v) : store::Value(nullptr);
}

}  // namespace

StatusOr<std::optional<Progress>> ReliabilityStore::LoadProgress() {
  GPUNEX_ASSIGN_OR_RETURN(store::Rows rows, tx_.Query("SELECT " + ProgressRows().Select() +
                                                      " FROM reliability_progress WHERE id = 1"));
  return ProgressRows().First(rows);
}

Status ReliabilityStore::SaveProgress(const Progress& p) {
  return tx_
      .Exec(
          "INSERT INTO reliability_progress (id, jobs_until, telemetry_minute, benchmarks_until, "
          "expired_day_hour, expired_week_hour, expired_month_hour) VALUES (1, ?, ?, ?, ?, ?, ?) "
          "ON CONFLICT (id) DO UPDATE SET jobs_until = excluded.jobs_until, telemetry_minute = "
          "excluded.telemetry_minute, benchmarks_until = excluded.benchmarks_until, "
          "expired_day_hour = excluded.expired_day_hour, expired_week_hour = "
          "excluded.expired_week_hour, expired_month_hour = excluded.expired_month_hour",
          {ToUnixMicros(p.jobs_until), p.telemetry_minute, ToUnixMicros(p.benchmarks_until),
           p.expired_day_hour, p.expired_week_hour, p.expired_month_hour})
      .status();
}

StatusOr<std::optional<MachineState>> ReliabilityStore::FindMachine(const std::string& machine_id) {
  GPUNEX_ASSIGN_OR_RETURN(store::Rows rows,
                          tx_.Query(std::string("SELECT ") + MachineRows().Select() +
                                        " FROM reliability_machines WHERE machine_id = ?",
                                    {machine_id}));
  return MachineRows().First(rows);
}

StatusOr<std::vector<MachineState>> ReliabilityStore::MachinesAfter(const std::string& after,
                                                                    int limit) {
  GPUNEX_ASSIGN_OR_RETURN(
      store::Rows rows,
      tx_.Query(std::string("SELECT ") + MachineRows().Select() +
                    " FROM reliability_machines WHERE machine_id > ? ORDER BY machine_id LIMIT ?",
                {after, int64_t{limit}}));
  return MachineRows().Decode(rows);
}

StatusOr<std::vector<MachineState>> ReliabilityStore::MachinesOf(const std::string& provider_id) {
  GPUNEX_ASSIGN_OR_RETURN(
      store::Rows rows,
      tx_.Query(std::string("SELECT ") + MachineRows().Select() +
                    " FROM reliability_machines WHERE provider_id = ? ORDER BY machine_id",
                {provider_id}));
  return MachineRows().Decode(rows);
}

Status ReliabilityStore::InsertMachine(const MachineState& m) {
  return tx_
      .Exec(std::string("INSERT INTO reliability_machines (") + MachineRows().Names() +
                ") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            MachineValues(m))
      .status();
}

Status ReliabilityStore::UpdateMachine(const MachineState& m) {
  std::vector<store::Value> v = MachineValues(m);
  v.push_back(m.machine_id);
  return tx_
      .Exec(
          "UPDATE reliability_machines SET machine_id = ?, provider_id = ?, gpus = ?, "
          "accrued_until = ?, scheduled_e = ?, up_e = ?, ok_e = ?, ended_e = ?, "
          "scheduled_total_us = ?, day_scheduled_us = ?, day_up_us = ?, week_scheduled_us = ?, "
          "week_up_us = ?, month_scheduled_us = ?, month_up_us = ?, uptime = ?, completion = ?, "
          "benchmark = ?, score = ?, is_new = ?, computed_at = ?, below_threshold = ?, "
          "snapshot_day = ? WHERE machine_id = ?",
          v)
      .status();
}

Status ReliabilityStore::AddToMachine(const std::string& machine_id, const HourRow& d,
                                      const WindowSums& day, const WindowSums& week,
                                      const WindowSums& month) {
  return tx_
      .Exec(
          "UPDATE reliability_machines SET scheduled_e = scheduled_e + ?, up_e = up_e + ?, "
          "ok_e = ok_e + ?, ended_e = ended_e + ?, day_scheduled_us = day_scheduled_us + ?, "
          "day_up_us = day_up_us + ?, week_scheduled_us = week_scheduled_us + ?, week_up_us = "
          "week_up_us + ?, month_scheduled_us = month_scheduled_us + ?, month_up_us = "
          "month_up_us + ? WHERE machine_id = ?",
          {d.scheduled_e, d.up_e, d.ok_e, d.ended_e, day.scheduled_us, day.up_us, week.scheduled_us,
           week.up_us, month.scheduled_us, month.up_us, machine_id})
      .status();
}

StatusOr<std::vector<GpuState>> ReliabilityStore::GpusOf(const std::string& machine_id) {
  GPUNEX_ASSIGN_OR_RETURN(
      store::Rows rows, tx_.Query("SELECT " + GpuRows().Select() +
                                      " FROM reliability_gpus WHERE machine_id = ? ORDER BY gpu_id",
                                  {machine_id}));
  return GpuRows().Decode(rows);
}

StatusOr<std::vector<GpuState>> ReliabilityStore::AllGpus() {
  GPUNEX_ASSIGN_OR_RETURN(store::Rows rows,
                          tx_.Query("SELECT " + GpuRows().Select() + " FROM reliability_gpus"));
  return GpuRows().Decode(rows);
}

Status ReliabilityStore::UpsertGpu(const GpuState& g) {
  return tx_
      .Exec(
          "INSERT INTO reliability_gpus (gpu_id, machine_id, baseline, latest, latest_at, "
          "loaded_e, throttled_e) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (gpu_id) DO UPDATE "
          "SET machine_id = excluded.machine_id, baseline = excluded.baseline, latest = "
          "excluded.latest, latest_at = excluded.latest_at, loaded_e = excluded.loaded_e, "
          "throttled_e = excluded.throttled_e",
          {g.gpu_id, g.machine_id, OptValue(g.baseline), OptValue(g.latest),
           g.latest_at ? store::Value(ToUnixMicros(*g.latest_at)) : store::Value(nullptr),
           g.loaded_e, g.throttled_e})
      .status();
}

Status ReliabilityStore::AddHour(const HourRow& d) {
  return tx_
      .Exec(
          "INSERT INTO reliability_hours (machine_id, hour, scheduled_us, up_us, scheduled_e, "
          "up_e, ok_e, ended_e) VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (machine_id, hour) "
          "DO UPDATE SET scheduled_us = reliability_hours.scheduled_us + excluded.scheduled_us, "
          "up_us = reliability_hours.up_us + excluded.up_us, scheduled_e = "
          "reliability_hours.scheduled_e + excluded.scheduled_e, up_e = reliability_hours.up_e + "
          "excluded.up_e, ok_e = reliability_hours.ok_e + excluded.ok_e, ended_e = "
          "reliability_hours.ended_e + excluded.ended_e",
          {d.machine_id, d.hour, d.scheduled_us, d.up_us, d.scheduled_e, d.up_e, d.ok_e, d.ended_e})
      .status();
}

Status ReliabilityStore::AddGpuHour(const GpuHourRow& d) {
  return tx_
      .Exec(
          "INSERT INTO reliability_gpu_hours (gpu_id, hour, machine_id, loaded_e, throttled_e) "
          "VALUES (?, ?, ?, ?, ?) ON CONFLICT (gpu_id, hour) DO UPDATE SET loaded_e = "
          "reliability_gpu_hours.loaded_e + excluded.loaded_e, throttled_e = "
          "reliability_gpu_hours.throttled_e + excluded.throttled_e",
          {d.gpu_id, d.hour, d.machine_id, d.loaded_e, d.throttled_e})
      .status();
}

StatusOr<std::vector<HourRow>> ReliabilityStore::HoursBetween(int64_t from_hour, int64_t to_hour) {
  GPUNEX_ASSIGN_OR_RETURN(
      store::Rows rows,
      tx_.Query("SELECT " + HourRows().Select() +
                    " FROM reliability_hours WHERE hour >= ? AND hour < ? ORDER BY machine_id, "
                    "hour",
                {from_hour, to_hour}));
  return HourRows().Decode(rows);
}

StatusOr<std::vector<GpuHourRow>> ReliabilityStore::GpuHoursBetween(int64_t from_hour,
                                                                    int64_t to_hour) {
  GPUNEX_ASSIGN_OR_RETURN(
      store::Rows rows,
      tx_.Query("SELECT " + GpuHourRows().Select() +
                    " FROM reliability_gpu_hours WHERE hour >= ? AND hour < ? ORDER BY gpu_id, "
                    "hour",
                {from_hour, to_hour}));
  return GpuHourRows().Decode(rows);
}

StatusOr<std::optional<int64_t>> ReliabilityStore::LastThrottledHour(const std::string& gpu_id) {
  GPUNEX_ASSIGN_OR_RETURN(store::Rows rows,
                          tx_.Query("SELECT MAX(hour) AS hour FROM reliability_gpu_hours WHERE "
                                    "gpu_id = ? AND throttled_e > 0",
                                    {gpu_id}));
  if (rows.empty()) return std::optional<int64_t>();
  return rows[0]["hour"].OptInt();
}

Status ReliabilityStore::DeleteHoursBefore(int64_t hour) {
  GPUNEX_RETURN_IF_ERROR(tx_.Exec("DELETE FROM reliability_hours WHERE hour < ?", {hour}).status());
  return tx_.Exec("DELETE FROM reliability_gpu_hours WHERE hour < ?", {hour}).status();
}

StatusOr<bool> ReliabilityStore::InsertJob(const JobRow& j) {
  GPUNEX_ASSIGN_OR_RETURN(
      int64_t n, tx_.Exec("INSERT INTO reliability_jobs (workload_id, machine_id, at, party, "
                          "reason) VALUES (?, ?, ?, ?, ?) ON CONFLICT (workload_id) DO NOTHING",
                          {j.workload_id, j.machine_id, ToUnixMicros(j.at),
                           std::string(Name(j.party)), j.reason}));
  return n > 0;
}

StatusOr<std::vector<JobRow>> ReliabilityStore::JobsOf(const std::string& machine_id,
                                                       Timestamp since) {
  GPUNEX_ASSIGN_OR_RETURN(
      store::Rows rows,
      tx_.Query("SELECT " + JobRows().Select() +
                    " FROM reliability_jobs WHERE machine_id = ? AND at >= ? ORDER BY at, "
                    "workload_id",
                {machine_id, ToUnixMicros(since)}));
  return JobRows().Decode(rows);
}

Status ReliabilityStore::UpsertDay(const DayRow& d) {
  return tx_
      .Exec(
          "INSERT INTO reliability_days (machine_id, day, score, is_new, gpus) VALUES (?, ?, ?, ?, "
          "?) ON CONFLICT (machine_id, day) DO UPDATE SET score = excluded.score, is_new = "
          "excluded.is_new, gpus = excluded.gpus",
          {d.machine_id, d.day, d.score, int64_t{d.is_new}, d.gpus})
      .status();
}

StatusOr<std::vector<DayRow>> ReliabilityStore::DaysOf(const std::string& machine_id,
                                                       int64_t from_day) {
  GPUNEX_ASSIGN_OR_RETURN(
      store::Rows rows,
      tx_.Query("SELECT " + DayRows().Select() +
                    " FROM reliability_days WHERE machine_id = ? AND day >= ? ORDER BY day",
                {machine_id, from_day}));
  return DayRows().Decode(rows);
}

std::vector<store::Migration> ReliabilityMigrations() {
  return {
      {10,
       "reliability",
       "reliability: the score's running sums per machine and GPU, hours, jobs, daily history",
       {
           R"(CREATE TABLE reliability_machines (
                machine_id TEXT PRIMARY KEY REFERENCES machines(id),
                provider_id TEXT NOT NULL,
                gpus BIGINT NOT NULL,
                accrued_until BIGINT NOT NULL,
                scheduled_e DOUBLE PRECISION NOT NULL,
                up_e DOUBLE PRECISION NOT NULL,
                ok_e DOUBLE PRECISION NOT NULL,
                ended_e DOUBLE PRECISION NOT NULL,
                scheduled_total_us BIGINT NOT NULL,
                day_scheduled_us BIGINT NOT NULL,
                day_up_us BIGINT NOT NULL,
                week_scheduled_us BIGINT NOT NULL,
                week_up_us BIGINT NOT NULL,
                month_scheduled_us BIGINT NOT NULL,
                month_up_us BIGINT NOT NULL,
                uptime DOUBLE PRECISION NOT NULL,
                completion DOUBLE PRECISION NOT NULL,
                benchmark DOUBLE PRECISION NOT NULL,
                score DOUBLE PRECISION NOT NULL,
                is_new BIGINT NOT NULL,
                computed_at BIGINT NOT NULL,
                below_threshold BIGINT NOT NULL,
                snapshot_day BIGINT NOT NULL))",
           "CREATE INDEX reliability_machines_provider ON reliability_machines (provider_id)",
           R"(CREATE TABLE reliability_gpus (
                gpu_id TEXT PRIMARY KEY REFERENCES machine_gpus(id),
                machine_id TEXT NOT NULL REFERENCES machines(id),
                baseline DOUBLE PRECISION,
                latest DOUBLE PRECISION,
                latest_at BIGINT,
                loaded_e DOUBLE PRECISION NOT NULL,
                throttled_e DOUBLE PRECISION NOT NULL))",
           "CREATE INDEX reliability_gpus_machine ON reliability_gpus (machine_id)",
           R"(CREATE TABLE reliability_hours (
                machine_id TEXT NOT NULL REFERENCES machines(id),
                hour BIGINT NOT NULL,
                scheduled_us BIGINT NOT NULL,
                up_us BIGINT NOT NULL,
                scheduled_e DOUBLE PRECISION NOT NULL,
                up_e DOUBLE PRECISION NOT NULL,
                ok_e DOUBLE PRECISION NOT NULL,
                ended_e DOUBLE PRECISION NOT NULL,
                PRIMARY KEY (machine_id, hour)))",
           "CREATE INDEX reliability_hours_hour ON reliability_hours (hour)",
           R"(CREATE TABLE reliability_gpu_hours (
                gpu_id TEXT NOT NULL REFERENCES machine_gpus(id),
                hour BIGINT NOT NULL,
                machine_id TEXT NOT NULL,
                loaded_e DOUBLE PRECISION NOT NULL,
                throttled_e DOUBLE PRECISION NOT NULL,
                PRIMARY KEY (gpu_id, hour)))",
           "CREATE INDEX reliability_gpu_hours_hour ON reliability_gpu_hours (hour)",
           R"(CREATE TABLE reliability_jobs (
                workload_id TEXT PRIMARY KEY,
                machine_id TEXT NOT NULL REFERENCES machines(id),
                at BIGINT NOT NULL,
                party TEXT NOT NULL,
                reason TEXT NOT NULL))",
           "CREATE INDEX reliability_jobs_machine ON reliability_jobs (machine_id, at)",
           R"(CREATE TABLE reliability_days (
                machine_id TEXT NOT NULL REFERENCES machines(id),
                day BIGINT NOT NULL,
                score DOUBLE PRECISION NOT NULL,
                is_new BIGINT NOT NULL,
                gpus BIGINT NOT NULL,
                PRIMARY KEY (machine_id, day)))",
           R"(CREATE TABLE reliability_progress (
                id BIGINT PRIMARY KEY,
                jobs_until BIGINT NOT NULL,
                telemetry_minute BIGINT NOT NULL,
                benchmarks_until BIGINT NOT NULL,
                expired_day_hour BIGINT NOT NULL,
                expired_week_hour BIGINT NOT NULL,
                expired_month_hour BIGINT NOT NULL))",
       },
       {}},
  };
}

}  // namespace gpunex::platform::reliability
