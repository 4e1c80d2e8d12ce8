// Rentals at scale, in process on SQLite: how many placements per second the scheduler
// commits, and how long one metering tick over every running rental takes.
//
// A throw-away SQLite database in a temporary directory, migrated to the platform's
// schema, is filled with SQL directly: OFFERS machines (one offer each, GPUS_PER_MACHINE
// listed and priced L4s, ten machines per provider) and SUBMITTERS customers with a
// balance credited through the ledger. The offer index (market::Market) loads them all.
// Then:
//   1. Scheduler: SUBMITTERS threads each submit JOBS_PER_SUBMITTER jobs (one L4, at most
//      1 USDC per GPU-hour), one after the other, through Jobs::Submit, which answers once
//      the job's placement is committed (durable: the rental, its workload and the start
//      command are stored). Prints placements per second and the latency percentiles.
//   2. Metering: every rental placed is marked running an hour ago, due now, and one
//      Rentals::MeterDue() charges them all (the difference from what was charged, two
//      ledger transfers each). Prints its time; then checks every rental's charge against
//      the formula and the ledger (exit 1 when one is off).
// Nothing here asserts a speed; docs/benchmarks.md records the figures.
//
// Environment: OFFERS (100000), GPUS_PER_MACHINE (2), SUBMITTERS (1000),
// JOBS_PER_SUBMITTER (100), KEEP_DB (0).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "common/background.h"
#include "common/ids.h"
#include "common/time.h"
#include "platform/billing/billing.h"
#include "platform/billing/ledger.h"
#include "platform/billing/metering.h"
#include "platform/catalog/catalog.h"
#include "platform/fleet/fleet.h"
#include "platform/fleet/workloads.h"
#include "platform/market/market.h"
#include "platform/rentals/jobs.h"
#include "platform/rentals/rentals.h"
#include "platform/schema.h"
#include "platform/store/db.h"

namespace gpunex::bench {
namespace {

using platform::store::Tx;
using platform::store::Value;
using Clock = std::chrono::steady_clock;

int64_t EnvInt(const char* name, int64_t fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::strtoll(v, nullptr, 10) : fallback;
}

// An emulated GPU's UUID, unique per n.
std::string Uuid(int64_t n) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "GPU-emu-%08llx-0000-0000-0000-%012llx",
                static_cast<unsigned long long>(n >> 16), static_cast<unsigned long long>(n));
  return buf;
}

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

Status Seed(platform::store::Database& db, int64_t offers, int64_t gpus, int64_t customers,
            Timestamp now) {
  const int64_t us = ToUnixMicros(now);
  GPUNEX_RETURN_IF_ERROR(platform::catalog::SeedBuiltinModels(db));
  constexpr int64_t kBatch = 5000;
  for (int64_t first = 0; first < offers; first += kBatch) {
    GPUNEX_RETURN_IF_ERROR(db.Transact([&](Tx& tx) -> Status {
      for (int64_t i = first; i < std::min(offers, first + kBatch); ++i) {
        const std::string m = "mch_bench" + std::to_string(i);
        const std::string p = "usr_prov" + std::to_string(i / 10);
        if (i % 10 == 0) {
          GPUNEX_RETURN_IF_ERROR(tx.Exec("INSERT INTO users (id, email, name, password_hash, "
                                         "created_at) VALUES (?, ?, 'P', 'x', ?)",
                                         {p, p + "@bench.example", us})
                                     .status());
          GPUNEX_RETURN_IF_ERROR(tx.Exec("INSERT INTO user_roles (user_id, role, granted_at) "
                                         "VALUES (?, 'provider', ?)",
                                         {p, us})
                                     .status());
          GPUNEX_RETURN_IF_ERROR(tx.Exec("INSERT INTO providers (user_id, tier, status, "
                                         "application_id, approved_at, approved_by) VALUES "
                                         "(?, 'community', 'active', 'app_x', ?, 'usr_admin')",
                                         {p, us})
                                     .status());
          GPUNEX_RETURN_IF_ERROR(tx.Exec("INSERT INTO provider_prices (provider_id, catalog_id, "
                                         "price_micro, updated_at, updated_by) VALUES "
                                         "(?, 'l4-24gb', ?, ?, ?)",
                                         {p, int64_t{400'000} + (i / 10) % 500, us, p})
                                     .status());
        }
        GPUNEX_RETURN_IF_ERROR(
            tx.Exec("INSERT INTO machines (id, provider_id, key_hash, name, status, emulated, "
                    "agent_version, host, inventory_hash, created_at, last_seen_at, "
                    "status_since) VALUES (?, ?, ?, ?, 'online', 1, '0.1.0', "
                    "'{\"cpu_cores\":32,\"ram_mb\":131072,\"network_isolation\":{\"state\":"
                    "\"isolated\",\"reached\":[],\"detail\":\"bench\"}}', 'inv', ?, ?, ?)",
                    {m, p, "key_" + m, "bench-" + std::to_string(i), us, us, us})
                .status());
        for (int64_t g = 0; g < gpus; ++g) {
          const std::string gid = "gpu_" + std::to_string(i) + "_" + std::to_string(g);
          GPUNEX_RETURN_IF_ERROR(
              tx.Exec("INSERT INTO machine_gpus (id, machine_id, idx, uuid, name, catalog_id, "
                      "vram_mb, emulated, present, enabled, info, created_at, "
                      "benchmark_verdict, listing_state, listing_since, priced) VALUES "
                      "(?, ?, ?, ?, 'NVIDIA L4', 'l4-24gb', 23034, 1, 1, 1, '{}', ?, 'passed', "
                      "'listed', ?, 1)",
                      {gid, m, g, Uuid(i * 10 + g), us, us})
                  .status());
        }
      }
      return Status::Ok();
    }));
  }
  return db.Transact([&](Tx& tx) -> Status {
    std::vector<platform::billing::Transfer> credits;
    for (int64_t c = 0; c < customers; ++c) {
      const std::string id = "usr_cust" + std::to_string(c);
      GPUNEX_RETURN_IF_ERROR(tx.Exec("INSERT INTO users (id, email, name, password_hash, "
                                     "created_at) VALUES (?, ?, 'C', 'x', ?)",
                                     {id, id + "@bench.example", us})
                                 .status());
      credits.push_back({"cr_" + id, std::string(platform::billing::kOperatorCredit),
                         std::string(platform::billing::kWorldOperator),
                         platform::billing::CustomerAccount(id), Usdc::Micros(1'000'000'000),
                         std::nullopt, "bench", now});
    }
    return platform::billing::Post(tx, credits).status();
  });
}

int Run() {
  const int64_t offers = EnvInt("OFFERS", 100'000);
  const int64_t gpus = EnvInt("GPUS_PER_MACHINE", 2);
  const int64_t submitters = EnvInt("SUBMITTERS", 1000);
  const int64_t per_submitter = EnvInt("JOBS_PER_SUBMITTER", 100);
  const std::string dir =
      (std::filesystem::temp_directory_path() / ("gpunex-rentals-bench-" + NewId("b"))).string();
  std::filesystem::create_directories(dir);
  auto db = platform::store::OpenSqliteDatabase(dir, {.pool_size = 8});
  if (!db.ok()) {
    std::fprintf(stderr, "open: %s\n", db.status().ToString().c_str());
    return 1;
  }
  auto fail = [&](const Status& st, const char* what) {
    std::fprintf(stderr, "%s: %s\n", what, st.ToString().c_str());
    return 1;
  };
  if (Status st = platform::schema::MigrateAll(**db); !st.ok()) return fail(st, "migrate");
  const Timestamp now = SystemClock().Now();
  auto t0 = Clock::now();
  if (Status st = Seed(**db, offers, gpus, submitters, now); !st.ok()) return fail(st, "seed");
  std::printf("seeded %lld offers (%lld GPUs each) and %lld customers in %.1f s\n",
              static_cast<long long>(offers), static_cast<long long>(gpus),
              static_cast<long long>(submitters), Seconds(Clock::now() - t0));

  platform::store::Database& tdb = **db;
  platform::fleet::Fleet fleet(tdb, {.allow_emulated_gpus = true});
  platform::fleet::Workloads workloads(tdb, fleet);
  platform::market::Market market(**db, {});
  t0 = Clock::now();
  if (Status st = market.ReloadAll(); !st.ok()) return fail(st, "offer index");
  std::printf("offer index: %zu offers loaded in %.1f s\n", market.snapshot()->offers().size(),
              Seconds(Clock::now() - t0));
  platform::rentals::Rentals rentals(tdb, fleet, workloads, market, {});
  platform::rentals::Jobs jobs(tdb, rentals, market, {.clock = &SystemClock()});
  Background background;
  market.ScheduleOn(background);
  jobs.ScheduleOn(background);
  background.Start();

  // 1. The scheduler.
  std::atomic<int64_t> placed{0}, failed{0};
  std::vector<std::vector<double>> latencies(static_cast<size_t>(submitters));
  std::vector<std::thread> threads;
  t0 = Clock::now();
  for (int64_t s = 0; s < submitters; ++s) {
    threads.emplace_back([&, s] {
      platform::accounts::Principal p;
      p.user.id = "usr_cust" + std::to_string(s);
      for (int64_t k = 0; k < per_submitter; ++k) {
        platform::rentals::SubmitJobRequest req;
        req.constraints.gpu_models = {"l4-24gb"};
        req.constraints.gpus = 1;
        req.constraints.max_price = Usdc::Micros(1'000'000);
        req.container.image = "registry.example/bench:1";
        const auto start = Clock::now();
        auto j = jobs.Submit(p, req);
        latencies[static_cast<size_t>(s)].push_back(Seconds(Clock::now() - start) * 1000);
        if (j.ok() && j->state == platform::rentals::JobState::kPlaced) {
          ++placed;
        } else {
          if (failed++ < 3) {
            std::fprintf(stderr, "not placed: %s\n",
                         j.ok() ? j->detail.c_str() : j.status().ToString().c_str());
          }
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  const double elapsed = Seconds(Clock::now() - t0);
  background.Stop();
  std::vector<double> all;
  for (auto& l : latencies) all.insert(all.end(), l.begin(), l.end());
  std::sort(all.begin(), all.end());
  auto pct = [&](double q) {
    return all.empty() ? 0.0 : all[std::min(all.size() - 1, static_cast<size_t>(q * all.size()))];
  };
  std::printf(
      "scheduler: %lld placements by %lld submitters in %.2f s: %.0f placements/s "
      "(durable), latency p50 %.1f ms p99 %.1f ms; %lld not placed\n",
      static_cast<long long>(placed.load()), static_cast<long long>(submitters), elapsed,
      static_cast<double>(placed.load()) / elapsed, pct(0.5), pct(0.99),
      static_cast<long long>(failed.load()));

  // 2. One metering tick over every rental, all running for an hour.
  Status st = (*db)->Transact([&](Tx& tx) -> Status {
    return tx
        .Exec("UPDATE rentals SET state = 'running', running_at = ?, next_meter_at = ?",
              {ToUnixMicros(now - std::chrono::hours(1)), ToUnixMicros(now)})
        .status();
  });
  if (!st.ok()) return fail(st, "mark running");
  t0 = Clock::now();
  auto metered = rentals.MeterDue();
  const double tick = Seconds(Clock::now() - t0);
  if (!metered.ok()) return fail(metered.status(), "meter");
  std::printf("metering: one tick over %lld running rentals in %.3f s\n",
              static_cast<long long>(*metered), tick);

  // Every charge is the formula's, and the ledger holds.
  int bad = 0;
  st = (*db)->Read([&](Tx& tx) -> Status {
    GPUNEX_ASSIGN_OR_RETURN(auto rows, tx.Query("SELECT price_micro, gpus, billed_seconds, "
                                                "fee_bps, charged_micro, fee_micro FROM rentals"));
    for (const auto& r : rows) {
      const int64_t billed = r["billed_seconds"].Int();
      auto m = platform::billing::Meter(Usdc::Micros(r["price_micro"].Int()), r["gpus"].Int(),
                                        billed, r["fee_bps"].Int());
      if (!m.ok() || m->owed.micros() != r["charged_micro"].Int() ||
          m->fee.micros() != r["fee_micro"].Int() || billed == 0)
        ++bad;
    }
    GPUNEX_ASSIGN_OR_RETURN(auto check, platform::billing::Check(tx));
    if (!check.ok) ++bad;
    return Status::Ok();
  });
  if (!st.ok()) return fail(st, "check");
  std::printf("check: %s\n",
              bad == 0 ? "every charge equals the formula; the ledger holds" : "MISMATCH");
  if (EnvInt("KEEP_DB", 0) == 0) std::filesystem::remove_all(dir);
  return bad == 0 && failed.load() == 0 ? 0 : 1;
}

}  // namespace
}  // namespace gpunex::bench

int main() { return gpunex::bench::Run(); }
