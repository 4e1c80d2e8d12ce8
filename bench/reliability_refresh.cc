// How long Reliability::RefreshOnce takes for a large fleet with 30 days of history, on
// SQLite (the issue's target: the score of 10 000 machines refreshed in under 1 s).
//
// A throw-away SQLite database in a temporary directory, migrated to the platform's
// schema, is filled with SQL directly (a few large transactions): providers (users and
// providers rows, MACHINES_PER_PROVIDER machines each), MACHINES machines with two GPUs,
// each online since it came except for OUTAGES unplanned outages, a few machines with a
// long recent outage, some with a weekly schedule and some with a planned maintenance
// window, and ENDINGS_PER_MACHINE workload endings by various parties. Then, with a
// FakeClock:
//   - a first RefreshOnce, which accounts the whole history (the cold start);
//   - REFRESHES further ones, the clock advanced by 60 s before each and a minute of new
//     data added (telemetry of every GPU, LOADED_PCT % of them under load, and a few
//     workload endings), as heartbeats would leave it (the steady state). The ninth of
//     them crosses midnight UTC, so hours leave the 24 h, 7 d and 30 d windows and the
//     daily snapshot is written: it is reported as the rollover.
// Each refresh prints its wall and CPU time, the statements it ran and the rows they
// changed; the cold start, the first minute and the rollover are broken down by statement
// kind. It fails (exit 1) when a refresh fails or leaves a machine unaccounted; it asserts
// no speed.
//
// Environment: MACHINES (10000), MACHINES_PER_PROVIDER (10), OUTAGES (4), REFRESHES (10),
// SCHEDULED_PCT (20), MAINTENANCE_PCT (5), LOADED_PCT (50), ENDINGS_PER_MACHINE (3),
// ENDINGS_PER_MINUTE (MACHINES / 500), SEED (1), KEEP_DB (0: the directory is removed).
#include <stdlib.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/testing/fake_clock.h"
#include "common/thread_annotations.h"
#include "common/time.h"
#include "platform/availability/availability.h"
#include "platform/fleet/fleet.h"
#include "platform/reliability/reliability.h"
#include "platform/schema.h"
#include "platform/store/db.h"

namespace gpunex::bench {
namespace {

using platform::store::Database;
using platform::store::Rows;
using platform::store::Tx;
using platform::store::Value;

int64_t EnvInt(const char* name, int64_t fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::strtoll(v, nullptr, 10) : fallback;
}

double CpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

double Ms(std::chrono::steady_clock::duration d) {
  return std::chrono::duration<double, std::milli>(d).count();
}

// "VERB table WHERE first_column": the kind of a statement, for the breakdown.
std::string KindOf(std::string_view sql) {
  auto word_after = [&](std::string_view marker) -> std::string {
    const size_t at = sql.find(marker);
    if (at == std::string_view::npos) return "";
    size_t a = at + marker.size();
    size_t b = a;
    while (b < sql.size() && sql[b] != ' ' && sql[b] != '(' && sql[b] != ',') ++b;
    return std::string(sql.substr(a, b - a));
  };
  std::string kind;
  if (sql.starts_with("SELECT")) {
    kind = "SELECT " + word_after(" FROM ");
  } else if (sql.starts_with("INSERT INTO ")) {
    kind = "INSERT " + word_after("INSERT INTO ");
  } else if (sql.starts_with("UPDATE ")) {
    kind = "UPDATE " + word_after("UPDATE ");
  } else if (sql.starts_with("DELETE FROM ")) {
    kind = "DELETE " + word_after("DELETE FROM ");
  } else {
    kind = std::string(sql.substr(0, std::min<size_t>(sql.size(), 24)));
  }
  if (std::string where = word_after(" WHERE "); !where.empty()) kind += " WHERE " + where;
  return kind;
}

struct KindStats {
  int64_t statements = 0;
  int64_t rows = 0;  // returned by a query, changed by an Exec
  std::chrono::steady_clock::duration time{};
};

// A Database that forwards to another and counts, per kind of statement, the statements,
// their rows and the time spent in them, and the time of each transaction's commit.
class CountingDatabase final : public Database {
 public:
  explicit CountingDatabase(Database& base) : base_(base) {}

  platform::store::BackendKind Backend() const override { return base_.Backend(); }
  Status Transact(const std::function<Status(Tx&)>& fn) override {
    std::chrono::steady_clock::time_point fn_done;
    Status st = base_.Transact([&](Tx& base_tx) -> Status {
      CountingTx tx(*this, base_tx);
      Status inner = fn(tx);
      for (auto& cb : tx.TakeAfterCommit()) base_tx.AfterCommit(std::move(cb));
      fn_done = std::chrono::steady_clock::now();
      return inner;
    });
    MutexLock lock(&mu_);
    commit_ += std::chrono::steady_clock::now() - fn_done;
    return st;
  }
  StatusOr<std::unique_ptr<platform::store::Lock>> TryLock(std::string_view name) override {
    return base_.TryLock(name);
  }
  Status Read(const std::function<Status(Tx&)>& fn) override {
    return base_.Read([&](Tx& base_tx) -> Status {
      CountingTx tx(*this, base_tx);
      return fn(tx);
    });
  }
  Status Ping() override { return base_.Ping(); }

  // What was counted since the last call, and the commit time; resets.
  std::map<std::string, KindStats> Take(std::chrono::steady_clock::duration* commit) {
    MutexLock lock(&mu_);
    *commit = commit_;
    commit_ = {};
    return std::exchange(kinds_, {});
  }

 private:
  class CountingTx final : public Tx {
   public:
    CountingTx(CountingDatabase& db, Tx& base) : db_(db), base_(base) {}
    platform::store::BackendKind Backend() const override { return base_.Backend(); }
    StatusOr<Rows> Query(std::string_view sql, const std::vector<Value>& params) override {
      const auto start = std::chrono::steady_clock::now();
      StatusOr<Rows> rows = base_.Query(sql, params);
      db_.Note(sql, rows.ok() ? static_cast<int64_t>(rows->size()) : 0,
               std::chrono::steady_clock::now() - start);
      return rows;
    }
    StatusOr<int64_t> Exec(std::string_view sql, const std::vector<Value>& params) override {
      const auto start = std::chrono::steady_clock::now();
      StatusOr<int64_t> n = base_.Exec(sql, params);
      db_.Note(sql, n.ok() ? *n : 0, std::chrono::steady_clock::now() - start);
      return n;
    }

   private:
    CountingDatabase& db_;
    Tx& base_;
  };

  void Note(std::string_view sql, int64_t rows, std::chrono::steady_clock::duration d) {
    std::string kind = KindOf(sql);
    MutexLock lock(&mu_);
    KindStats& k = kinds_[std::move(kind)];
    ++k.statements;
    k.rows += rows;
    k.time += d;
  }

  Database& base_;
  Mutex mu_;
  std::map<std::string, KindStats> kinds_ GUARDED_BY(mu_);
  std::chrono::steady_clock::duration commit_ GUARDED_BY(mu_){};
};

struct Config {
  int64_t machines, per_provider, outages, refreshes, scheduled_pct, maintenance_pct, loaded_pct,
      endings_per_machine, endings_per_minute, seed;
  bool keep_db;
};

// The cold start's "now", 2026-12-01T23:51:10Z: shortly before midnight UTC, so that the
// ninth steady refresh crosses an hour and a day.
const Timestamp kStart = FromUnixMicros(int64_t{1'796'169'070} * 1'000'000);

std::string MachineId(int64_t i) {
  char s[32];
  std::snprintf(s, sizeof s, "mch_bench%06lld", static_cast<long long>(i));
  return s;
}
std::string GpuId(int64_t machine, int idx) {
  char s[40];
  std::snprintf(s, sizeof s, "gpu_bench%06lld_%d", static_cast<long long>(machine), idx);
  return s;
}
std::string ProviderId(int64_t p) {
  char s[32];
  std::snprintf(s, sizeof s, "usr_bench%06lld", static_cast<long long>(p));
  return s;
}

class Exec {
 public:
  explicit Exec(Tx& tx) : tx_(tx) {}
  Status operator()(std::string_view sql, const std::vector<Value>& params) {
    return tx_.Exec(sql, params).status();
  }

 private:
  Tx& tx_;
};

// The fleet and its history, up to `now`.
Status Populate(Database& db, const Config& c, Timestamp now, int64_t* workload_seq) {
  std::mt19937_64 rng(static_cast<uint64_t>(c.seed));
  auto uniform = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  const int64_t now_us = ToUnixMicros(now);
  const int64_t created_us = ToUnixMicros(now - 30 * kOneDay - 2 * kOneHour);
  const int64_t providers = (c.machines + c.per_provider - 1) / c.per_provider;
  // Weekdays 08:00–20:00 and Saturday night 22:00–06:00 (across midnight), Rome time.
  const std::string kSchedule =
      R"({"kind":"schedule","timezone":"Europe/Rome","windows":[)"
      R"({"days":["mon","tue","wed","thu","fri"],"start":"08:00","end":"20:00"},)"
      R"({"days":["sat"],"start":"22:00","end":"06:00"}]})";
  const char* kParties[] = {"customer", "customer", "customer", "provider", "platform"};

  GPUNEX_RETURN_IF_ERROR(db.Transact([&](Tx& tx) -> Status {
    Exec exec(tx);
    for (int64_t p = 0; p < providers; ++p) {
      const std::string id = ProviderId(p);
      GPUNEX_RETURN_IF_ERROR(exec(
          "INSERT INTO users (id, email, name, password_hash, created_at) VALUES (?, ?, ?, ?, ?)",
          {id, "provider" + std::to_string(p) + "@bench.example", "Provider " + std::to_string(p),
           std::string("x"), created_us}));
      GPUNEX_RETURN_IF_ERROR(
          exec("INSERT INTO user_roles (user_id, role, granted_at) VALUES (?, 'provider', ?)",
               {id, created_us}));
      GPUNEX_RETURN_IF_ERROR(
          exec("INSERT INTO providers (user_id, tier, status, application_id, approved_at, "
               "approved_by) VALUES (?, 'community', 'active', ?, ?, 'usr_bench_admin')",
               {id, "app_bench" + std::to_string(p), created_us}));
    }
    return Status::Ok();
  }));

  constexpr int64_t kBatch = 2000;
  for (int64_t first = 0; first < c.machines; first += kBatch) {
    GPUNEX_RETURN_IF_ERROR(db.Transact([&](Tx& tx) -> Status {
      Exec exec(tx);
      for (int64_t i = first; i < std::min(c.machines, first + kBatch); ++i) {
        const std::string id = MachineId(i);
        // Outages: OUTAGES of 2 min to 3 h, at random; 1 % of machines also lost 4 days,
        // ending a day ago (they fall below the threshold, and their provider is told).
        std::vector<std::pair<int64_t, int64_t>> down;
        for (int64_t k = 0; k < c.outages; ++k) {
          const int64_t start = uniform(created_us + kOneHour.count(), now_us - kOneHour.count());
          down.emplace_back(start, start + uniform(2, 180) * kOneMinute.count());
        }
        if (i % 100 == 7) {
          const int64_t end = now_us - kOneDay.count();
          down.emplace_back(end - 4 * kOneDay.count(), end);
        }
        std::sort(down.begin(), down.end());
        std::vector<std::pair<int64_t, int64_t>> merged;
        for (const auto& d : down) {
          if (!merged.empty() && d.first <= merged.back().second) {
            merged.back().second = std::max(merged.back().second, d.second);
          } else {
            merged.push_back(d);
          }
        }
        const int64_t since = merged.empty() ? created_us : merged.back().second;
        GPUNEX_RETURN_IF_ERROR(
            exec("INSERT INTO machines (id, provider_id, key_hash, name, status, emulated, "
                 "agent_version, host, inventory_hash, created_at, last_seen_at, status_since) "
                 "VALUES (?, ?, ?, ?, 'online', 1, '0.1.0', '{}', 'inv', ?, ?, ?)",
                 {id, ProviderId(i / c.per_provider), "key_" + id, "bench-" + std::to_string(i),
                  created_us, now_us, since}));
        for (int g = 0; g < 2; ++g) {
          GPUNEX_RETURN_IF_ERROR(exec(
              "INSERT INTO machine_gpus (id, machine_id, idx, uuid, name, catalog_id, vram_mb, "
              "emulated, present, enabled, info, created_at, benchmark_verdict, listing_state, "
              "listing_since) VALUES (?, ?, ?, ?, 'NVIDIA H100 80GB HBM3', 'h100-sxm', 81559, 1, "
              "1, 1, '{}', ?, 'passed', 'listed', ?)",
              {GpuId(i, g), id, int64_t{g}, "GPU-emu-" + GpuId(i, g), created_us, created_us}));
        }
        // Alternating online and offline intervals; the last one, online, is open.
        int64_t at = created_us;
        int n = 0;
        auto interval = [&](const char* state, int64_t a, std::optional<int64_t> b) {
          return exec(
              "INSERT INTO machine_intervals (id, machine_id, state, started_at, ended_at) "
              "VALUES (?, ?, ?, ?, ?)",
              {"mit_" + id + "_" + std::to_string(n++), id, std::string(state), a,
               b ? Value(*b) : Value(nullptr)});
        };
        for (const auto& [a, b] : merged) {
          GPUNEX_RETURN_IF_ERROR(interval("online", at, a));
          GPUNEX_RETURN_IF_ERROR(interval("offline", a, b));
          at = b;
        }
        GPUNEX_RETURN_IF_ERROR(interval("online", at, std::nullopt));
        if (uniform(0, 99) < c.scheduled_pct) {
          GPUNEX_RETURN_IF_ERROR(
              exec("INSERT INTO machine_schedules (machine_id, schedule, source, updated_at, "
                   "updated_by, next_check_at) VALUES (?, ?, 'provider', ?, NULL, ?)",
                   {id, kSchedule, created_us, now_us + kOneHour.count()}));
        }
        if (uniform(0, 99) < c.maintenance_pct) {
          const int64_t start = uniform(created_us + kOneDay.count(), now_us - kOneDay.count());
          GPUNEX_RETURN_IF_ERROR(exec(
              "INSERT INTO maintenance_windows (id, machine_id, start_at, end_at, category, "
              "reason, declared_at, declared_by, cancelled_at, soon_notified) VALUES (?, ?, ?, "
              "?, 'power', 'Planned work on the power supply of the rack', ?, ?, NULL, 1)",
              {"mnt_" + id, id, start, start + 2 * kOneHour.count(), start - 48 * kOneHour.count(),
               ProviderId(i / c.per_provider)}));
        }
        for (int64_t k = 0; k < c.endings_per_machine; ++k) {
          const int64_t end = uniform(created_us + kOneHour.count(), now_us - kOneMinute.count());
          const std::string party = kParties[uniform(0, 4)];
          GPUNEX_RETURN_IF_ERROR(exec(
              "INSERT INTO workloads (id, machine_id, provider_id, created_by, purpose, spec, "
              "gpu_ids, state, exit_code, end_reason, end_party, created_at, started_at, "
              "ended_at, updated_at) VALUES (?, ?, ?, ?, 'rental', '{}', '[]', 'exited', 0, ?, "
              "?, ?, ?, ?, ?)",
              {"wl_bench" + std::to_string((*workload_seq)++), id, ProviderId(i / c.per_provider),
               ProviderId(i / c.per_provider),
               std::string(party == "provider" ? "agent lost" : "exited"), party,
               end - kOneHour.count(), end - kOneHour.count(), end, end}));
        }
      }
      return Status::Ok();
    }));
  }
  return Status::Ok();
}

// A minute of what heartbeats and workloads leave: one telemetry row per GPU for the
// minute the next refresh reads (two before `now`'s), LOADED_PCT % of GPUs under load,
// 1 in 20 of those throttled; ENDINGS_PER_MINUTE workload endings within the last minute.
Status AddMinute(Database& db, const Config& c, Timestamp now, std::mt19937_64& rng,
                 int64_t* workload_seq) {
  auto uniform = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  const int64_t minute = ToUnixMicros(now) / kOneMinute.count() - 2;
  const int64_t now_us = ToUnixMicros(now);
  return db.Transact([&](Tx& tx) -> Status {
    Exec exec(tx);
    for (int64_t i = 0; i < c.machines; ++i) {
      for (int g = 0; g < 2; ++g) {
        const bool loaded = uniform(0, 99) < c.loaded_pct;
        const int64_t throttled = loaded && uniform(0, 19) == 0 ? 2 : 0;
        GPUNEX_RETURN_IF_ERROR(
            exec("INSERT INTO gpu_telemetry_minutes (gpu_id, minute, samples, utilization_sum, "
                 "temperature_max, power_sum, memory_used_max, throttled_samples, loaded_samples, "
                 "loaded_throttled_samples) VALUES (?, ?, 6, ?, 61, 1800.0, 40000, ?, ?, ?)",
                 {GpuId(i, g), minute, int64_t{loaded ? 540 : 0}, throttled,
                  int64_t{loaded ? 6 : 0}, throttled}));
      }
    }
    for (int64_t k = 0; k < c.endings_per_minute; ++k) {
      const int64_t i = uniform(0, c.machines - 1);
      const int64_t end = now_us - uniform(1, 59) * kOneSecond.count();
      const std::string party = k % 5 == 3 ? "provider" : "customer";
      GPUNEX_RETURN_IF_ERROR(
          exec("INSERT INTO workloads (id, machine_id, provider_id, created_by, purpose, spec, "
               "gpu_ids, state, exit_code, end_reason, end_party, created_at, started_at, "
               "ended_at, updated_at) VALUES (?, ?, ?, ?, 'rental', '{}', '[]', 'exited', 0, "
               "'exited', ?, ?, ?, ?, ?)",
               {"wl_bench" + std::to_string((*workload_seq)++), MachineId(i),
                ProviderId(i / c.per_provider), ProviderId(i / c.per_provider), party,
                end - kOneHour.count(), end - kOneHour.count(), end, end}));
    }
    return Status::Ok();
  });
}

struct RefreshFigures {
  double wall_ms = 0, cpu_ms = 0, sql_ms = 0, commit_ms = 0;
  int64_t statements = 0, rows_read = 0, rows_written = 0;
  std::map<std::string, KindStats> kinds;
};

bool IsWrite(const std::string& kind) {
  return kind.starts_with("INSERT") || kind.starts_with("UPDATE") || kind.starts_with("DELETE");
}

StatusOr<RefreshFigures> TimedRefresh(platform::reliability::Reliability& r,
                                      CountingDatabase& counting) {
  std::chrono::steady_clock::duration commit{};
  counting.Take(&commit);
  RefreshFigures f;
  const double cpu0 = CpuSeconds();
  const auto t0 = std::chrono::steady_clock::now();
  Status st = r.RefreshOnce();
  f.wall_ms = Ms(std::chrono::steady_clock::now() - t0);
  f.cpu_ms = (CpuSeconds() - cpu0) * 1000;
  if (!st.ok()) return st;
  f.kinds = counting.Take(&commit);
  f.commit_ms = Ms(commit);
  for (const auto& [kind, k] : f.kinds) {
    f.statements += k.statements;
    f.sql_ms += Ms(k.time);
    (IsWrite(kind) ? f.rows_written : f.rows_read) += k.rows;
  }
  return f;
}

void PrintLine(const char* label, const RefreshFigures& f) {
  std::printf(
      "%-22s wall %9.1f ms  cpu %9.1f ms  in statements %9.1f ms  commit %6.1f ms  "
      "statements %7lld  rows read %8lld  rows written %7lld\n",
      label, f.wall_ms, f.cpu_ms, f.sql_ms, f.commit_ms, static_cast<long long>(f.statements),
      static_cast<long long>(f.rows_read), static_cast<long long>(f.rows_written));
}

void PrintBreakdown(const char* title, const RefreshFigures& f) {
  std::vector<std::pair<std::string, KindStats>> kinds(f.kinds.begin(), f.kinds.end());
  std::sort(kinds.begin(), kinds.end(),
            [](const auto& a, const auto& b) { return a.second.time > b.second.time; });
  std::printf("\n%s, by statement kind (time in the statement, its count and rows):\n", title);
  for (const auto& [kind, k] : kinds) {
    std::printf("  %9.1f ms %8lld x %9lld rows  %s\n", Ms(k.time),
                static_cast<long long>(k.statements), static_cast<long long>(k.rows), kind.c_str());
  }
  std::printf("  %9.1f ms outside statements and commit (C++: classifying time, maps, rows)\n",
              f.wall_ms - f.sql_ms - f.commit_ms);
}

int Run() {
  Config c;
  c.machines = std::max<int64_t>(1, EnvInt("MACHINES", 10'000));
  c.per_provider = std::max<int64_t>(1, EnvInt("MACHINES_PER_PROVIDER", 10));
  c.outages = EnvInt("OUTAGES", 4);
  c.refreshes = std::max<int64_t>(1, EnvInt("REFRESHES", 10));
  c.scheduled_pct = EnvInt("SCHEDULED_PCT", 20);
  c.maintenance_pct = EnvInt("MAINTENANCE_PCT", 5);
  c.loaded_pct = EnvInt("LOADED_PCT", 50);
  c.endings_per_machine = EnvInt("ENDINGS_PER_MACHINE", 3);
  c.endings_per_minute = EnvInt("ENDINGS_PER_MINUTE", std::max<int64_t>(1, c.machines / 500));
  c.seed = EnvInt("SEED", 1);
  c.keep_db = EnvInt("KEEP_DB", 0) != 0;

  std::string templ = (std::filesystem::temp_directory_path() / "gpunex_bench_XXXXXX").string();
  if (!mkdtemp(templ.data())) {
    std::perror("mkdtemp");
    return 1;
  }
  const std::filesystem::path dir = templ;
  struct Cleanup {
    std::filesystem::path dir;
    bool keep;
    ~Cleanup() {
      if (keep) {
        std::printf("database kept in %s\n", dir.c_str());
      } else {
        std::error_code ec;
        std::filesystem::remove_all(dir, ec);
      }
    }
  } cleanup{dir, c.keep_db};

  auto fail = [](const char* what, const Status& st) {
    std::fprintf(stderr, "%s: %s\n", what, st.ToString().c_str());
    return 1;
  };
  auto opened = platform::store::OpenSqliteDatabase(dir.string());
  if (!opened.ok()) return fail("open", opened.status());
  std::unique_ptr<Database> sqlite = std::move(*opened);
  if (Status st = platform::schema::MigrateAll(*sqlite); !st.ok()) return fail("migrate", st);

  std::printf(
      "reliability refresh: %lld machines (2 GPUs each, %lld per provider), 30 days of history: "
      "%lld outages each (1 %% of machines also 4 days down), %lld %% on a weekly schedule, "
      "%lld %% with a maintenance window, %lld workload endings each; SQLite in %s\n",
      static_cast<long long>(c.machines), static_cast<long long>(c.per_provider),
      static_cast<long long>(c.outages), static_cast<long long>(c.scheduled_pct),
      static_cast<long long>(c.maintenance_pct), static_cast<long long>(c.endings_per_machine),
      dir.c_str());

  gpunex::testing::FakeClock clock(kStart);
  int64_t workload_seq = 0;
  const auto p0 = std::chrono::steady_clock::now();
  if (Status st = Populate(*sqlite, c, clock.Now(), &workload_seq); !st.ok()) {
    return fail("populate", st);
  }
  std::printf("populated in %.1f s (not timed below)\n\n",
              Ms(std::chrono::steady_clock::now() - p0) / 1000);

  CountingDatabase db(*sqlite);
  platform::fleet::FleetOptions fo;
  fo.clock = &clock;
  platform::fleet::Fleet fleet(db, fo);
  platform::availability::AvailabilityOptions ao;
  ao.clock = &clock;
  platform::availability::Availability availability(db, fleet, ao);
  platform::reliability::ReliabilityOptions ro;
  ro.clock = &clock;
  platform::reliability::Reliability reliability(db, availability, ro);

  auto cold = TimedRefresh(reliability, db);
  if (!cold.ok()) return fail("cold refresh", cold.status());
  PrintLine("cold start (30 days)", *cold);

  std::mt19937_64 rng(static_cast<uint64_t>(c.seed) + 1);
  std::vector<RefreshFigures> steady;
  int64_t rollover = -1;
  RefreshFigures rollover_figures;
  for (int64_t i = 0; i < c.refreshes; ++i) {
    const int64_t day_before = ToUnixMicros(clock.Now()) / kOneDay.count();
    clock.Advance(kOneMinute);
    if (Status st = AddMinute(*sqlite, c, clock.Now(), rng, &workload_seq); !st.ok()) {
      return fail("telemetry", st);
    }
    auto f = TimedRefresh(reliability, db);
    if (!f.ok()) return fail("steady refresh", f.status());
    const bool crosses = ToUnixMicros(clock.Now()) / kOneDay.count() != day_before;
    char label[48];
    std::snprintf(label, sizeof label, "+%lld min%s", static_cast<long long>(i + 1),
                  crosses ? " (midnight)" : "");
    PrintLine(label, *f);
    if (crosses) {
      rollover = i;
      rollover_figures = *f;
    }
    steady.push_back(std::move(*f));
  }

  std::vector<double> walls;
  for (const auto& f : steady) walls.push_back(f.wall_ms);
  std::sort(walls.begin(), walls.end());
  const double median = walls.size() % 2
                            ? walls[walls.size() / 2]
                            : (walls[walls.size() / 2 - 1] + walls[walls.size() / 2]) / 2;
  std::printf("\ncold start: %.1f ms\n", cold->wall_ms);
  std::printf("steady refresh (%zu, every 60 s): min %.1f ms, median %.1f ms, max %.1f ms\n",
              walls.size(), walls.front(), median, walls.back());
  if (rollover >= 0) {
    std::printf(
        "  of which the one crossing midnight (hours leave the windows, daily snapshot): "
        "%.1f ms\n",
        rollover_figures.wall_ms);
  }
  PrintBreakdown("cold start", *cold);
  // The breakdown of a plain minute: the first steady refresh.
  PrintBreakdown("steady refresh (+1 min)", steady.front());
  if (rollover >= 0) PrintBreakdown("steady refresh crossing midnight", rollover_figures);

  // Every machine accounted up to now, its 30 days' scheduled time there.
  int64_t accounted = 0, below = 0, is_new = 0;
  double score_sum = 0, min_score = 100;
  Status st = sqlite->Read([&](Tx& tx) -> Status {
    GPUNEX_ASSIGN_OR_RETURN(Rows rows,
                            tx.Query("SELECT COUNT(*) AS n, COALESCE(SUM(below_threshold), 0) AS "
                                     "below, COALESCE(SUM(is_new), 0) AS is_new, "
                                     "COALESCE(SUM(score), 0) AS score_sum, COALESCE(MIN(score), "
                                     "100) AS min_score FROM reliability_machines WHERE "
                                     "accrued_until = ?",
                                     {ToUnixMicros(clock.Now())}));
    accounted = rows[0]["n"].Int();
    below = rows[0]["below"].Int();
    is_new = rows[0]["is_new"].Int();
    score_sum = rows[0]["score_sum"].Real();
    min_score = rows[0]["min_score"].Real();
    return Status::Ok();
  });
  if (!st.ok()) return fail("check", st);
  std::printf(
      "\nmachines accounted to now: %lld of %lld; mean score %.2f, lowest %.2f, %lld below "
      "the threshold, %lld new\n",
      static_cast<long long>(accounted), static_cast<long long>(c.machines),
      accounted ? score_sum / static_cast<double>(accounted) : 0, min_score,
      static_cast<long long>(below), static_cast<long long>(is_new));
  std::error_code ec;
  std::printf("database file: %.1f MiB\n",
              static_cast<double>(std::filesystem::file_size(dir / "gpunex.db", ec)) / 1048576);
  if (accounted != c.machines || is_new != 0) {
    std::fprintf(stderr, "not every machine was accounted to now and scored\n");
    return 1;
  }
  return 0;
}

}  // namespace
}  // namespace gpunex::bench

int main() { return gpunex::bench::Run(); }
