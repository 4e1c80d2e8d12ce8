// A weekly payout run of PAYOUTS Solana payouts, in process on SQLite, against a Solana
// JSON-RPC node (bench/payouts_bench.sh starts the LiteSVM test node of tests/solana and
// funds the platform's wallet; the goal of the issue: 10 000 payouts in under 60 s).
//
// A throw-away SQLite database in a temporary directory, migrated to the platform's
// schema, gets PAYOUTS provider users, each with a Solana payout method to a wallet of its
// own (solana::KeypairFromSeed of a seed made from its number: no token account exists
// yet, so every payout also creates one) and an available balance of AMOUNT_MICRO + i
// micro-USDC (usage credited two days ago through the ledger and released after the 24 h
// hold). Then payouts::Payouts over solana::HttpRpc(RPC_URL), with the platform's key from
// KEYPAIR, makes the weekly run of the latest Monday: StartRun, then Tick until the run is
// done, as gpunexd's loop does (without its pause between ticks).
//
// Printed: the seeding time; the run's total, payouts per second and each tick; the time
// by step, from the engine's named steps (PayoutsOptions::fault, used here only as a
// probe): planning, signing and recording the attempts, sending, reading statuses and
// recording confirmations; the time in each RPC method (calls, total, mean); the attempts
// signed (more than one for a payout whose blockhash expired before it was sent). Then
// every recipient's token account is read with getAccountInfo (CHECK=all, or CHECK=N for
// N of them spread over the range) and must hold exactly its payout, and the ledger must
// show every payout paid (exit 1 otherwise). Nothing here asserts a speed;
// docs/benchmarks.md records the figures.
//
// With FRONT_PID (the driver sets it) the node's CPU time during the run is printed beside
// the benchmark's own: on a busy machine the wall time grows, the CPU time hardly does.
//
// Environment: RPC_URL, KEYPAIR (required), MINT (mainnet USDC's address), PAYOUTS (10000),
// AMOUNT_MICRO (60000000), BATCH (200, as gpunexd), COMMITMENT (confirmed), CHECK (all),
// FRONT_PID, KEEP_DB (0).
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "common/ids.h"
#include "common/thread_annotations.h"
#include "common/time.h"
#include "platform/accounts/accounts.h"
#include "platform/billing/ledger.h"
#include "platform/payouts/calendar.h"
#include "platform/payouts/payouts.h"
#include "platform/payouts/payouts_store.h"
#include "platform/schema.h"
#include "platform/solana/address.h"
#include "platform/solana/keypair.h"
#include "platform/solana/rpc.h"
#include "platform/store/db.h"

namespace gpunex::bench {
namespace {

namespace payouts = platform::payouts;
namespace solana = platform::solana;
using platform::store::Tx;
using SteadyClock = std::chrono::steady_clock;

int64_t EnvInt(const char* name, int64_t fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::strtoll(v, nullptr, 10) : fallback;
}
std::string EnvStr(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v && *v ? v : fallback;
}
double Seconds(SteadyClock::duration d) { return std::chrono::duration<double>(d).count(); }

// User + system CPU seconds of this process.
double OwnCpu() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}
// User + system CPU seconds of process `pid` (/proc/PID/stat); -1 when unknown.
double CpuOf(const std::string& pid) {
  if (pid.empty()) return -1;
  std::ifstream in("/proc/" + pid + "/stat");
  std::string line;
  if (!std::getline(in, line)) return -1;
  const size_t close = line.rfind(')');  // the command may hold spaces
  if (close == std::string::npos) return -1;
  std::istringstream rest(line.substr(close + 2));
  std::string field;
  double utime = 0, stime = 0;
  for (int i = 3; rest >> field && i <= 15; ++i) {  // fields 14 and 15: utime, stime
    if (i == 14) utime = std::stod(field);
    if (i == 15) stime = std::stod(field);
  }
  return (utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

// The wallet of provider i: its seed is "gpunex-bench" and i, little-endian.
solana::Pubkey WalletOf(int64_t i) {
  std::array<uint8_t, 32> seed{};
  const std::string tag = "gpunex-bench";
  std::copy(tag.begin(), tag.end(), seed.begin());
  for (int b = 0; b < 8; ++b)
    seed[24 + b] = static_cast<uint8_t>(static_cast<uint64_t>(i) >> (8 * b));
  return solana::KeypairFromSeed(seed).public_key;
}
std::string ProviderId(int64_t i) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "usr_bench%06lld", static_cast<long long>(i));
  return buf;
}

// Times every call by method; forwards to `inner`.
class TimingRpc final : public solana::Rpc {
 public:
  explicit TimingRpc(std::unique_ptr<solana::Rpc> inner) : inner_(std::move(inner)) {}

  struct Figure {
    int64_t calls = 0, errors = 0;
    double seconds = 0, error_seconds = 0;
  };
  std::map<std::string, Figure> figures() {
    MutexLock l(&mu_);
    return figures_;
  }

  StatusOr<solana::BlockhashInfo> LatestBlockhash(std::string_view c) override {
    return Timed("getLatestBlockhash", [&] { return inner_->LatestBlockhash(c); });
  }
  StatusOr<uint64_t> BlockHeight(std::string_view c) override {
    return Timed("getBlockHeight", [&] { return inner_->BlockHeight(c); });
  }
  StatusOr<std::string> SendTransaction(const std::string& b64, bool skip,
                                        std::string_view c) override {
    return Timed("sendTransaction", [&] { return inner_->SendTransaction(b64, skip, c); });
  }
  StatusOr<std::vector<std::optional<solana::SignatureStatus>>> SignatureStatuses(
      const std::vector<std::string>& sigs, bool history) override {
    return Timed("getSignatureStatuses", [&] { return inner_->SignatureStatuses(sigs, history); });
  }
  StatusOr<std::optional<solana::AccountInfo>> GetAccountInfo(const solana::Pubkey& a,
                                                              std::string_view c) override {
    return Timed("getAccountInfo", [&] { return inner_->GetAccountInfo(a, c); });
  }
  StatusOr<std::vector<solana::SignatureInfo>> SignaturesForAddress(
      const solana::Pubkey& a, int limit, std::optional<std::string> before,
      std::string_view c) override {
    return Timed("getSignaturesForAddress",
                 [&] { return inner_->SignaturesForAddress(a, limit, before, c); });
  }
  StatusOr<std::optional<solana::TransactionInfo>> GetTransaction(const std::string& s,
                                                                  std::string_view c) override {
    return Timed("getTransaction", [&] { return inner_->GetTransaction(s, c); });
  }

 private:
  template <typename F>
  auto Timed(const char* method, F&& f) -> decltype(f()) {
    const auto t0 = SteadyClock::now();
    auto r = f();
    const double s = Seconds(SteadyClock::now() - t0);
    MutexLock l(&mu_);
    Figure& fig = figures_[method];
    ++fig.calls;
    fig.seconds += s;
    if (!r.ok()) {
      ++fig.errors;
      fig.error_seconds += s;
    }
    return r;
  }

  std::unique_ptr<solana::Rpc> inner_;
  Mutex mu_;
  std::map<std::string, Figure> figures_ GUARDED_BY(mu_);
};

// The engine's named steps as they are reached, with the time.
struct Probe {
  struct Event {
    std::string point;
    SteadyClock::time_point at;
  };
  Mutex mu;
  std::vector<Event> events GUARDED_BY(mu);
  void Mark(std::string_view point) {
    MutexLock l(&mu);
    events.push_back({std::string(point), SteadyClock::now()});
  }
};

Status Seed(platform::store::Database& db, int64_t n, int64_t amount, Timestamp now) {
  const int64_t us = ToUnixMicros(now);
  const Timestamp earned = now - 48 * kOneHour;
  const std::string customer = "usr_bench_customer";
  GPUNEX_RETURN_IF_ERROR(db.Transact([&](Tx& tx) -> Status {
    return tx
        .Exec(
            "INSERT INTO users (id, email, name, password_hash, created_at) VALUES (?, ?, "
            "'Customer', 'x', ?)",
            {customer, customer + "@bench.example", us})
        .status();
  }));
  constexpr int64_t kBatch = 1000;
  for (int64_t first = 0; first < n; first += kBatch) {
    GPUNEX_RETURN_IF_ERROR(db.Transact([&](Tx& tx) -> Status {
      platform::payouts::PayoutsStore s(tx);
      std::vector<platform::billing::Transfer> ts;
      int64_t batch_total = 0;
      for (int64_t i = first; i < std::min(n, first + kBatch); ++i) {
        const std::string p = ProviderId(i);
        GPUNEX_RETURN_IF_ERROR(
            tx.Exec("INSERT INTO users (id, email, name, password_hash, "
                    "created_at) VALUES (?, ?, ?, 'x', ?)",
                    {p, p + "@bench.example", "Provider " + std::to_string(i), us})
                .status());
        GPUNEX_RETURN_IF_ERROR(
            tx.Exec("INSERT INTO user_roles (user_id, role, granted_at) VALUES (?, 'provider', ?)",
                    {p, us})
                .status());
        payouts::Settings st;
        st.provider_id = p;
        st.schedule = payouts::Schedule::kWeekly;
        st.threshold = Usdc::Micros(50'000'000);
        payouts::Method m;
        m.kind = payouts::MethodKind::kSolana;
        m.wallet = solana::ToBase58(WalletOf(i));
        st.method = m;
        st.changed_at = now - 30 * 24 * kOneHour;  // set long ago: no hold
        st.updated_at = *st.changed_at;
        GPUNEX_RETURN_IF_ERROR(s.PutSettings(st));
        ts.push_back({"bench_u_" + p, "usage_provider",
                      platform::billing::CustomerAccount(customer),
                      platform::billing::ProviderPendingAccount(p), Usdc::Micros(amount + i),
                      std::nullopt, "bench", earned});
        batch_total += amount + i;
      }
      ts.insert(ts.begin(), {"bench_c_" + std::to_string(first), "operator_credit",
                             std::string(platform::billing::kWorldOperator),
                             platform::billing::CustomerAccount(customer),
                             Usdc::Micros(batch_total), std::nullopt, "bench", earned});
      return platform::billing::Post(tx, ts).status();
    }));
  }
  return db.Transact([&](Tx& tx) -> Status {
    return platform::billing::ReleaseEarnings(tx, now - 24 * kOneHour, now).status();
  });
}

int Run() {
  const std::string url = EnvStr("RPC_URL", "");
  const std::string key_file = EnvStr("KEYPAIR", "");
  if (url.empty() || key_file.empty()) {
    std::fprintf(stderr, "RPC_URL and KEYPAIR are needed (bench/payouts_bench.sh sets them)\n");
    return 2;
  }
  const int64_t n = EnvInt("PAYOUTS", 10'000);
  const int64_t amount = EnvInt("AMOUNT_MICRO", 60'000'000);
  const int64_t batch = EnvInt("BATCH", 200);
  const std::string check = EnvStr("CHECK", "all");
  auto fail = [](const Status& st, const char* what) {
    std::fprintf(stderr, "%s: %s\n", what, st.ToString().c_str());
    return 1;
  };
  auto key = solana::LoadKeypairFile(key_file);
  if (!key.ok()) return fail(key.status(), "key file");
  auto mint =
      solana::ParsePubkey(EnvStr("MINT", "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v"), "MINT");
  if (!mint.ok()) return fail(mint.status(), "mint");

  const std::string dir =
      (std::filesystem::temp_directory_path() / ("gpunex-payouts-bench-" + NewId("b"))).string();
  std::filesystem::create_directories(dir);
  auto db = platform::store::OpenSqliteDatabase(dir, {.pool_size = 8});
  if (!db.ok()) return fail(db.status(), "open");
  if (Status st = platform::schema::MigrateAll(**db); !st.ok()) return fail(st, "migrate");
  const Timestamp now = SystemClock().Now();
  auto t0 = SteadyClock::now();
  if (Status st = Seed(**db, n, amount, now); !st.ok()) return fail(st, "seed");
  std::printf("seeded %lld providers with %.6f to %.6f USDC available each in %.1f s\n",
              static_cast<long long>(n), static_cast<double>(amount) / 1e6,
              static_cast<double>(amount + n - 1) / 1e6, Seconds(SteadyClock::now() - t0));

  TimingRpc rpc(solana::HttpRpc(url, std::chrono::milliseconds(10'000)));
  Probe probe;
  platform::accounts::Accounts accounts(**db, {});
  payouts::PayoutsOptions o;
  o.solana_chain.mint = *mint;
  o.solana_chain.commitment = EnvStr("COMMITMENT", "confirmed");
  o.automatic_runs = false;
  o.batch = static_cast<int>(batch);
  o.fault = [&probe](std::string_view point) {
    probe.Mark(point);
    return Status::Ok();
  };
  payouts::Payouts engine(**db, accounts, &rpc, &*key, o);
  platform::accounts::Principal admin;
  admin.user.id = "usr_bench_admin";
  admin.user.roles.push_back(std::string(platform::accounts::kRoleAdmin));

  const std::string as_of =
      payouts::DateOf(payouts::LatestRunDate(payouts::Schedule::kWeekly, now, BusinessCalendar()));
  const std::string front_pid = EnvStr("FRONT_PID", "");
  const double cpu0 = OwnCpu(), front_cpu0 = CpuOf(front_pid);
  const auto start = SteadyClock::now();
  probe.Mark("start");
  auto run = engine.StartRun(admin, {as_of, "weekly", std::nullopt});
  if (!run.ok()) return fail(run.status(), "StartRun");
  struct TickFigure {
    double seconds;
    int64_t changed;
    std::string error;
  };
  std::vector<TickFigure> ticks;
  std::string state;
  while (true) {
    const auto t = SteadyClock::now();
    probe.Mark("tick");
    auto changed = engine.Tick();
    probe.Mark("tick_end");
    ticks.push_back({Seconds(SteadyClock::now() - t), changed.ok() ? *changed : -1,
                     changed.ok() ? "" : changed.status().ToString()});
    Status st = (*db)->Read([&](Tx& tx) -> Status {
      GPUNEX_ASSIGN_OR_RETURN(auto rows,
                              tx.Query("SELECT state FROM payout_runs WHERE id = ?", {run->id}));
      state = rows.empty() ? "" : rows[0]["state"].Str();
      return Status::Ok();
    });
    if (!st.ok()) return fail(st, "read run");
    if (state == Name(payouts::RunState::kDone) || state == Name(payouts::RunState::kWaiting))
      break;
    if (Seconds(SteadyClock::now() - start) > 900) {
      std::fprintf(stderr, "the run is not done after 900 s (state %s)\n", state.c_str());
      break;
    }
    // A pass that changed nothing waits for the chain (or for resend_after_ms).
    if (changed.ok() && *changed == 0) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  const double total = Seconds(SteadyClock::now() - start);
  const double cpu = OwnCpu() - cpu0, front_cpu = CpuOf(front_pid) - front_cpu0;

  // The time between the engine's named steps, by the step that ends each interval.
  std::map<std::string, double> by_step;
  {
    MutexLock l(&probe.mu);
    bool planned = false;
    for (size_t i = 1; i < probe.events.size(); ++i) {
      const auto& [point, at] = probe.events[i];
      const std::string& prev = probe.events[i - 1].point;
      const double s = Seconds(at - probe.events[i - 1].at);
      std::string step = "other (run lookups, bank files, finishing)";
      if (point == "payout.after_plan" && !planned) {
        step = "plan (one transaction)";
        planned = true;
      } else if (point == "payout.after_sign") {
        step = "sign + record attempts (incl. wallet and blockhash reads)";
      } else if (point == "payout.after_send") {
        step = "send (sendTransaction, one by one)";
      } else if (point == "payout.before_confirm") {
        step = "confirm: read attempts, height, statuses";
      } else if (point == "payout.after_confirm") {
        step = "confirm: record confirmations (ledger, notices)";
      } else if (point == "tick_end" && prev == "payout.after_send") {
        step = "record sent + finish";
      } else if (point == "tick" || point == "start") {
        step = "between ticks (run state read, pauses)";
      }
      by_step[step] += s;
    }
  }

  std::printf("\nweekly run %s as of %s: %s in %.2f s over %zu ticks\n", run->id.c_str(),
              as_of.c_str(), state.c_str(), total, ticks.size());
  for (size_t i = 0; i < ticks.size(); ++i) {
    if (i < 12 || i + 3 >= ticks.size()) {
      std::printf("  tick %2zu  %7.2f s  %6lld changed %s\n", i + 1, ticks[i].seconds,
                  static_cast<long long>(ticks[i].changed), ticks[i].error.c_str());
    } else if (i == 12) {
      std::printf("  ...\n");
    }
  }
  std::printf("\n%-60s %9s\n", "step", "s");
  for (const auto& [step, s] : by_step) std::printf("%-60s %9.2f\n", step.c_str(), s);
  std::printf("\n%-26s %7s %9s %9s %7s %13s\n", "RPC method", "calls", "total s", "mean ms",
              "errors", "error mean ms");
  double rpc_total = 0;
  for (const auto& [method, f] : rpc.figures()) {
    rpc_total += f.seconds;
    std::printf("%-26s %7lld %9.2f %9.3f %7lld %13.3f\n", method.c_str(),
                static_cast<long long>(f.calls), f.seconds,
                f.calls ? 1000 * f.seconds / static_cast<double>(f.calls) : 0.0,
                static_cast<long long>(f.errors),
                f.errors ? 1000 * f.error_seconds / static_cast<double>(f.errors) : 0.0);
  }
  std::printf("%-26s %7s %9.2f (%.0f %% of the run)\n", "all RPC", "", rpc_total,
              100 * rpc_total / total);

  // What the database says.
  int64_t confirmed = 0, payouts_n = 0, attempts = 0, expired = 0, paid_micro = 0;
  Status st = (*db)->Read([&](Tx& tx) -> Status {
    GPUNEX_ASSIGN_OR_RETURN(auto r, tx.Query("SELECT COUNT(*) AS n, COALESCE(SUM(CASE WHEN "
                                             "state = 'confirmed' THEN 1 ELSE 0 END), 0) AS done "
                                             "FROM payouts "
                                             "WHERE run_id = ?",
                                             {run->id}));
    payouts_n = r[0]["n"].Int();
    confirmed = r[0]["done"].Int();
    GPUNEX_ASSIGN_OR_RETURN(auto a,
                            tx.Query("SELECT COUNT(*) AS n, COALESCE(SUM(CASE WHEN "
                                     "state = 'expired' THEN 1 ELSE 0 END), 0) AS done FROM "
                                     "payout_attempts"));
    attempts = a[0]["n"].Int();
    expired = a[0]["done"].Int();
    GPUNEX_ASSIGN_OR_RETURN(auto p, tx.Query("SELECT COALESCE(SUM(balance), 0) AS paid FROM "
                                             "ledger_accounts WHERE kind = 'provider_paid'"));
    paid_micro = p[0]["paid"].Int();
    return Status::Ok();
  });
  if (!st.ok()) return fail(st, "read results");
  std::printf(
      "\npayouts %lld, confirmed %lld; attempts signed %lld (%lld expired unsent or "
      "unlanded, signed again)\n",
      static_cast<long long>(payouts_n), static_cast<long long>(confirmed),
      static_cast<long long>(attempts), static_cast<long long>(expired));
  std::printf("TOTAL %.2f s for %lld payouts: %.0f payouts/s\n", total,
              static_cast<long long>(confirmed), static_cast<double>(confirmed) / total);
  std::printf("CPU during the run: this process %.2f s", cpu);
  if (front_cpu >= 0)
    std::printf(", the node %.2f s (together %.2f s)", front_cpu, cpu + front_cpu);
  std::printf("\n");

  bool ok = confirmed == n && payouts_n == n;
  const int64_t want_paid = n * amount + n * (n - 1) / 2;
  if (paid_micro != want_paid) {
    std::fprintf(stderr, "the ledger shows %lld micro-USDC paid, not %lld\n",
                 static_cast<long long>(paid_micro), static_cast<long long>(want_paid));
    ok = false;
  }

  // Every recipient's token account, read from the node.
  const int64_t sample = check == "all" ? n : std::clamp<int64_t>(std::atoll(check.c_str()), 1, n);
  t0 = SteadyClock::now();
  int64_t checked = 0, wrong = 0;
  for (int64_t k = 0; k < sample; ++k) {
    const int64_t i = sample == n ? k : k * n / sample;
    const solana::Pubkey ata = solana::AssociatedTokenAddress(WalletOf(i), *mint);
    auto info = rpc.GetAccountInfo(ata, "confirmed");
    std::optional<solana::TokenAccount> t;
    if (info.ok() && *info) t = solana::ParseTokenAccount((*info)->data);
    ++checked;
    if (!t || t->amount != static_cast<uint64_t>(amount + i) || t->owner != WalletOf(i)) {
      if (wrong++ < 5) {
        std::fprintf(stderr, "provider %lld: token account %s holds %s, not %lld\n",
                     static_cast<long long>(i), solana::ToBase58(ata).c_str(),
                     !info.ok() ? info.status().ToString().c_str()
                     : t        ? std::to_string(t->amount).c_str()
                                : "nothing",
                     static_cast<long long>(amount + i));
      }
    }
  }
  std::printf("recipients checked on chain: %lld, wrong %lld (%.1f s)\n",
              static_cast<long long>(checked), static_cast<long long>(wrong),
              Seconds(SteadyClock::now() - t0));
  ok = ok && wrong == 0;

  if (EnvInt("KEEP_DB", 0)) {
    std::printf("database kept in %s\n", dir.c_str());
  } else {
    db->reset();
    std::filesystem::remove_all(dir);
  }
  if (!ok) std::fprintf(stderr, "FAILED: not every payout was paid exactly as planned\n");
  return ok ? 0 : 1;
}

}  // namespace
}  // namespace gpunex::bench

int main() { return gpunex::bench::Run(); }
