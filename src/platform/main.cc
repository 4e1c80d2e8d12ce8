// gpunexd: the platform server.
//   gpunexd serve [--config FILE]
//   gpunexd admin create --email E --password P [--name N] [--config FILE]
//   gpunexd migrate [--config FILE]
//   gpunexd routes
#include <pthread.h>
#include <stdlib.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include "common/background.h"
#include "common/log.h"
#include "platform/accounts/accounts.h"
#include "platform/api/api.h"
#include "platform/applications/applications.h"
#include "platform/benchmarks/benchmarks.h"
#include "platform/billing/billing.h"
#include "platform/catalog/catalog.h"
#include "platform/config/config.h"
#include "platform/fleet/fleet.h"
#include "platform/fleet/workloads.h"
#include "platform/http/metrics.h"
#include "platform/http/router.h"
#include "platform/http/server.h"
#include "platform/idempotency/idempotency.h"
#include "platform/market/market.h"
#include "platform/notify/outbox.h"
#include "platform/notify/smtp.h"
#include "platform/notify/verify.h"
#include "platform/payouts/payouts.h"
#include "platform/pricing/pricing.h"
#include "platform/providers/providers.h"
#include "platform/rentals/jobs.h"
#include "platform/rentals/rentals.h"
#include "platform/schema.h"
#include "platform/solana/address.h"
#include "platform/solana/keypair.h"
#include "platform/solana/rpc.h"
#include "platform/store/db.h"
#include "platform/topups/topups.h"

namespace gpunex::platform {
namespace {

int Fail(const Status& st) {
  LogError("gpunexd.failed", {{"error", st.ToString()}});
  std::cerr << "gpunexd: " << st.ToString() << "\n";
  return 1;
}

accounts::AccountsOptions AccountOptions(const Config& c) {
  accounts::AccountsOptions o;
  o.session_ttl_hours = c.session_ttl_hours;
  o.session_idle_minutes = c.session_idle_minutes;
  o.password_hash_concurrency = c.password_hash_concurrency;
  o.password_hash_waiting = c.password_hash_waiting;
  o.login_max_failures = c.login_max_failures;
  o.login_max_failures_ip = c.login_max_failures_ip;
  o.login_max_delay_s = c.login_max_delay_s;
  o.login_window_minutes = c.login_window_minutes;
  o.argon2_opslimit = c.argon2_opslimit;
  o.argon2_memlimit_bytes = c.argon2_memlimit_bytes;
  return o;
}

// Host part of the public URL, for Message-IDs.
std::string MailDomain(const std::string& public_url) {
  std::string rest = public_url.substr(public_url.find("://") + 3);
  rest = rest.substr(0, rest.find('/'));
  if (!rest.empty() && rest.front() == '[') return rest.substr(1, rest.find(']') - 1);
  return rest.substr(0, rest.find(':'));
}

StatusOr<benchmarks::BenchmarksOptions> BenchmarkOptions(const Config& c) {
  benchmarks::BenchmarksOptions o;
  o.enabled = c.benchmarks_enabled;
  o.interval_s = c.benchmark_interval_s;
  o.retry_after_s = c.benchmark_retry_after_s;
  o.spot_check_mean_s = c.benchmark_spot_check_mean_s;
  o.run_timeout_s = c.benchmark_run_timeout_s;
  o.sustain_s = c.benchmark_sustain_s;
  o.storage_file_mb = c.benchmark_storage_file_mb;
  o.storage_seconds = static_cast<double>(c.benchmark_storage_seconds);
  o.network_mb = c.benchmark_network_mb;
  o.pings = c.benchmark_pings;
  o.tick_ms = c.benchmark_tick_ms;
  o.mail_domain = MailDomain(c.public_url);
  o.public_url = c.public_url;
  GPUNEX_RETURN_IF_ERROR(benchmarks::ApplyThresholdOverrides(
      c.benchmark_thresholds, "benchmarks.thresholds", &o.thresholds));
  for (const auto& [model, overrides] : c.benchmark_model_thresholds) {
    benchmarks::Thresholds t = o.thresholds;
    GPUNEX_RETURN_IF_ERROR(
        benchmarks::ApplyThresholdOverrides(overrides, "benchmarks.models." + model, &t));
    o.by_model[model] = t;
  }
  return o;
}

// A clock for end-to-end tests only, named by GPUNEX_TEST_CLOCK_FILE: the system clock
// plus the whole seconds the file holds (re-read at most every 50 ms), so that a test
// moves time forward across 24 h holds and 48 h payout holds without waiting. Never set
// in production; gpunexd says so loudly when it is.
class FileOffsetClock final : public Clock {
 public:
  explicit FileOffsetClock(std::string path) : path_(std::move(path)) {}
  Timestamp Now() const override {
    const auto mono = std::chrono::steady_clock::now();
    std::lock_guard<std::mutex> l(mu_);
    if (mono - read_at_ > std::chrono::milliseconds(50)) {
      read_at_ = mono;
      std::ifstream in(path_);
      long long s = 0;
      if (in >> s) offset_ = std::chrono::seconds(s);
    }
    return SystemClock().Now() + offset_;
  }

 private:
  std::string path_;
  mutable std::mutex mu_;
  mutable std::chrono::steady_clock::time_point read_at_{};
  mutable Duration offset_{0};
};

std::unique_ptr<Clock> TestClockFromEnv() {
  const char* path = std::getenv("GPUNEX_TEST_CLOCK_FILE");
  if (!path || !*path) return nullptr;
  LogWarn("clock.test",
          {{"message", "the clock is moved by a test file: never in production"}, {"file", path}});
  return std::make_unique<FileOffsetClock>(path);
}

// Fault injection for the crash tests of payouts, named by GPUNEX_TEST_CRASH_AT
// ("payout.after_sign" or "payout.after_sign:3" for its third pass): gpunexd kills
// itself with SIGKILL there, as a crash at that step would.
std::function<Status(std::string_view)> CrashPointsFromEnv() {
  const char* spec = std::getenv("GPUNEX_TEST_CRASH_AT");
  if (!spec || !*spec) return nullptr;
  std::string point = spec;
  int nth = 1;
  if (auto colon = point.find(':'); colon != std::string::npos) {
    nth = std::max(1, std::atoi(point.c_str() + colon + 1));
    point.resize(colon);
  }
  LogWarn("faults.test", {{"message", "gpunexd kills itself at a named step: never in production"},
                          {"point", point}});
  auto seen = std::make_shared<std::atomic<int>>(0);
  return [point, nth, seen](std::string_view at) -> Status {
    if (at == point && ++*seen >= nth) {
      LogWarn("faults.crash", {{"point", point}});
      std::raise(SIGKILL);
    }
    return Status::Ok();
  };
}

StatusOr<payouts::PayoutsOptions> PayoutOptions(const Config& c, const BusinessCalendar& calendar,
                                                const notify::NoticeSettings& notices,
                                                const Clock* clock) {
  payouts::PayoutsOptions o;
  o.default_threshold = Usdc::Micros(c.payouts_threshold_micro);
  o.min_threshold = std::min(o.min_threshold, o.default_threshold);
  o.hold_after_change_s = c.payouts_hold_after_change_s;
  o.automatic_runs = c.payouts_automatic_runs;
  o.loop_ms = c.payouts_loop_ms;
  o.batch = c.payouts_batch;
  o.parallel_sends = c.payouts_parallel_sends;
  o.files_dir = c.payout_files_dir;
  if (!c.payouts_eur_rate.empty()) {
    auto rate = Usdc::Parse(c.payouts_eur_rate);
    if (!rate || !rate->is_positive()) {
      return FieldError("payouts.eur_rate", "must be a decimal EUR per USDC such as \"0.92\"");
    }
    o.default_eur_rate_ppm = rate->micros();
  }
  o.solana.minimum = Usdc::Micros(c.payouts_solana_min_micro);
  o.solana.fee = Usdc::Micros(c.payouts_solana_fee_micro);
  o.sepa.minimum = Usdc::Micros(c.payouts_sepa_min_micro);
  o.sepa.fee = Usdc::Micros(c.payouts_sepa_fee_micro);
  o.ach.minimum = Usdc::Micros(c.payouts_ach_min_micro);
  o.ach.fee = Usdc::Micros(c.payouts_ach_fee_micro);
  GPUNEX_ASSIGN_OR_RETURN(o.solana_chain.mint,
                          solana::ParsePubkey(c.solana_usdc_mint, "solana.usdc_mint"));
  o.solana_chain.commitment = c.solana_commitment;
  o.sepa_originator = {c.payouts_sepa_name, c.payouts_sepa_iban, c.payouts_sepa_bic};
  o.ach_originator = {
      c.payouts_ach_destination_routing, c.payouts_ach_destination_name, c.payouts_ach_origin,
      c.payouts_ach_origin_name,         c.payouts_ach_company_name,     c.payouts_ach_company_id,
      c.payouts_ach_odfi_routing};
  o.calendar = calendar;
  o.notices = notices;
  o.clock = clock;
  o.fault = CrashPointsFromEnv();
  return o;
}

StatusOr<std::unique_ptr<store::Database>> OpenAndMigrate(const Config& config) {
  GPUNEX_ASSIGN_OR_RETURN(auto db, store::OpenDatabase(config.database_url, config.data_dir));
  GPUNEX_RETURN_IF_ERROR(schema::MigrateAll(*db));
  GPUNEX_RETURN_IF_ERROR(catalog::SeedBuiltinModels(*db));
  return db;
}

// Prints `router`'s routes, each with the access it declares, in the order they were
// registered: {"routes": [{"method": "GET", "pattern": "/healthz", "access": "public"}, ...]}.
void PrintRoutes(const http::Router& router) {
  json::array items;
  for (const http::Router::RouteInfo& r : router.Routes()) {
    items.push_back(
        json::object{{"method", r.method}, {"pattern", r.pattern}, {"access", r.access}});
  }
  std::cout << ToJsonText(json::object{{"routes", std::move(items)}}) << "\n";
}

// Every service of gpunexd, built from the configuration in the order they depend on
// one another (and destroyed in the reverse order), with what the API and the background
// work need of them.
class Platform {
 public:
  // Builds every service over `db`, migrated, with `clock`. `config` and `db` outlive it.
  static StatusOr<std::unique_ptr<Platform>> Create(const Config& config, store::Database& db,
                                                    const Clock& clock);

  // What the API's handlers reach; `ready` answers /readyz.
  api::ApiContext Context(std::function<bool()> ready);
  // Every service's background work, in the order it starts (it stops in the reverse).
  void ScheduleOn(Background& background);
  http::Metrics& metrics() { return metrics_; }

 private:
  Platform(const Config& config, store::Database& db, const Clock& clock)
      : config_(config), db_(db), clock_(clock) {}
  Status Build();
  Status BuildMoney();
  Status BuildOutbox();
  void CollectMetrics(http::Metrics& m) const;

  const Config& config_;
  store::Database& db_;
  const Clock& clock_;
  http::Metrics metrics_;
  std::unique_ptr<notify::OutboxSender> outbox_;  // with an SMTP URL only
  const std::function<void()> wake_outbox_ = [this] {
    if (outbox_) outbox_->Wake();
  };
  const notify::NoticeSettings notices_{MailDomain(config_.public_url), config_.public_url,
                                        wake_outbox_};
  std::unique_ptr<notify::EmailVerifier> verifier_;
  std::unique_ptr<accounts::Accounts> accounts_;
  std::unique_ptr<providers::Providers> providers_;
  std::optional<BusinessCalendar> calendar_;
  std::unique_ptr<applications::Applications> applications_;
  std::unique_ptr<fleet::Fleet> fleet_;
  std::unique_ptr<fleet::Workloads> workloads_;
  std::unique_ptr<benchmarks::Benchmarks> benchmarks_;
  std::unique_ptr<idempotency::Idempotency> idempotency_;
  std::unique_ptr<availability::Availability> availability_;
  std::unique_ptr<reliability::Reliability> reliability_;
  std::unique_ptr<pricing::Pricing> pricing_;
  std::unique_ptr<market::Market> market_;
  std::unique_ptr<billing::Billing> billing_;
  std::unique_ptr<rentals::Rentals> rentals_;
  std::unique_ptr<rentals::Jobs> jobs_;
  std::optional<solana::Keypair> solana_key_;  // the platform's, with an RPC URL only
  std::unique_ptr<solana::Rpc> solana_rpc_;
  std::unique_ptr<payouts::Payouts> payouts_;
  std::unique_ptr<topups::Topups> topups_;
};

StatusOr<std::unique_ptr<Platform>> Platform::Create(const Config& config, store::Database& db,
                                                     const Clock& clock) {
  std::unique_ptr<Platform> p(new Platform(config, db, clock));
  GPUNEX_RETURN_IF_ERROR(p->Build());
  GPUNEX_RETURN_IF_ERROR(p->BuildMoney());
  // Listings follow the rules of the release that runs; the offer index starts from them.
  GPUNEX_RETURN_IF_ERROR(p->fleet_->RefreshAllListings());
  GPUNEX_RETURN_IF_ERROR(p->market_->ReloadAll());
  GPUNEX_RETURN_IF_ERROR(p->BuildOutbox());
  return p;
}

Status Platform::Build() {
  const Config& c = config_;
  notify::VerifierOptions verifier_options;
  verifier_options.public_url = c.public_url;
  verifier_options.mail_domain = MailDomain(c.public_url);
  verifier_options.link_lifetime = std::chrono::hours(c.email_link_hours);
  verifier_options.clock = &clock_;
  verifier_options.wake_outbox = wake_outbox_;
  GPUNEX_ASSIGN_OR_RETURN(verifier_, notify::EmailVerifier::Open(db_, verifier_options));
  accounts::AccountsOptions account_options = AccountOptions(c);
  account_options.verifier = verifier_.get();
  accounts_ = std::make_unique<accounts::Accounts>(db_, account_options);
  providers_ = std::make_unique<providers::Providers>(db_, providers::ProvidersOptions{&clock_});
  GPUNEX_ASSIGN_OR_RETURN(calendar_, BusinessCalendar::Create(c.holidays));
  applications::ApplicationsOptions app_options;
  app_options.public_url = c.public_url;
  app_options.mail_domain = MailDomain(c.public_url);
  app_options.target_business_days = c.review_target_business_days;
  app_options.calendar = *calendar_;
  app_options.wake_outbox = wake_outbox_;
  app_options.clock = &clock_;
  applications_ = std::make_unique<applications::Applications>(db_, app_options);

  fleet::FleetOptions fleet_options;
  fleet_options.allow_emulated_gpus = c.allow_emulated_gpus;
  fleet_options.heartbeat_interval_s = c.heartbeat_interval_s;
  fleet_options.offline_after_s = c.offline_after_s;
  fleet_options.hello_timeout_s = c.hello_timeout_s;
  fleet_options.max_machines_per_provider = c.max_machines_per_provider;
  fleet_options.images.allow_private_registries = c.allow_private_registries;
  fleet_options.list_after_benchmark = c.benchmarks_enabled;
  fleet_options.clock = &clock_;
  fleet_ = std::make_unique<fleet::Fleet>(db_, fleet_options);
  workloads_ = std::make_unique<fleet::Workloads>(db_, *fleet_, &clock_);
  GPUNEX_ASSIGN_OR_RETURN(benchmarks::BenchmarksOptions bench_options, BenchmarkOptions(c));
  bench_options.wake_outbox = wake_outbox_;
  bench_options.clock = &clock_;
  benchmarks_ = std::make_unique<benchmarks::Benchmarks>(db_, *fleet_, bench_options);
  idempotency_ = std::make_unique<idempotency::Idempotency>(
      db_, idempotency::IdempotencyOptions{.clock = &clock_});
  availability_ = std::make_unique<availability::Availability>(
      db_, *fleet_, availability::AvailabilityOptions{.notices = notices_, .clock = &clock_});
  reliability_ = std::make_unique<reliability::Reliability>(
      db_, *availability_,
      reliability::ReliabilityOptions{.threshold = static_cast<double>(c.reliability_threshold),
                                      .refresh_ms = c.reliability_refresh_ms,
                                      .notices = notices_,
                                      .clock = &clock_});
  pricing_ =
      std::make_unique<pricing::Pricing>(db_, *fleet_, pricing::PricingOptions{.clock = &clock_});
  market_ = std::make_unique<market::Market>(
      db_, market::MarketOptions{.poll_ms = c.market_poll_ms, .clock = &clock_});
  market_->SetRentalSamples(rentals::Rentals::Samples);
  billing_ = std::make_unique<billing::Billing>(db_, &clock_);
  rentals_ = std::make_unique<rentals::Rentals>(
      db_, *fleet_, *workloads_, *market_,
      rentals::RentalsOptions{.meter_interval_s = c.rentals_meter_interval_s,
                              .agent_lost_grace_s = c.rentals_agent_lost_grace_s,
                              .earnings_hold_s = c.rentals_earnings_hold_s,
                              .commission_community_bps = c.rentals_commission_community_bps,
                              .commission_enterprise_bps = c.rentals_commission_enterprise_bps,
                              .early_fault_refund_s = c.rentals_early_fault_refund_s,
                              .low_balance_s = c.rentals_low_balance_s,
                              .release_interval_s = c.rentals_release_interval_s,
                              .sweep_ms = c.rentals_sweep_ms,
                              .notices = notices_,
                              .clock = &clock_});
  jobs_ = std::make_unique<rentals::Jobs>(
      db_, *rentals_, *market_,
      rentals::JobsOptions{.max_queued_per_customer = c.rentals_max_queued_jobs_per_customer,
                           .clock = &clock_});
  return Status::Ok();
}

// Payouts (PAY-1..5) and top-ups (PAY-6), with the platform's Solana key and RPC
// endpoint when configured (PAY-4).
Status Platform::BuildMoney() {
  const Config& c = config_;
  if (!c.solana_rpc_url.empty()) {
    if (Status st = solana::ValidateRpcUrl(c.solana_rpc_url); !st.ok()) {
      return InvalidArgument("solana.rpc_url: " + st.message());
    }
    GPUNEX_ASSIGN_OR_RETURN(solana_key_, solana::LoadKeypairFile(c.solana_keypair));
    solana_rpc_ =
        solana::HttpRpc(c.solana_rpc_url, std::chrono::milliseconds(c.solana_rpc_timeout_ms));
  }
  GPUNEX_ASSIGN_OR_RETURN(payouts::PayoutsOptions payout_options,
                          PayoutOptions(c, *calendar_, notices_, &clock_));
  payouts_ = std::make_unique<payouts::Payouts>(
      db_, *accounts_, solana_rpc_.get(), solana_key_ ? &*solana_key_ : nullptr, payout_options);
  if (solana_key_) {
    const solana::Pubkey token_account =
        solana::AssociatedTokenAddress(solana_key_->public_key, payout_options.solana_chain.mint);
    LogInfo("solana.wallet", {{"public_key", solana::ToBase58(solana_key_->public_key)},
                              {"usdc_token_account", solana::ToBase58(token_account)}});
    // Payers' wallets refuse to pay a token account that does not exist (docs/payouts.md).
    auto account = solana_rpc_->GetAccountInfo(token_account, c.solana_commitment);
    if (account.ok() && !*account) {
      LogWarn("solana.no_token_account",
              {{"message",
                "the platform's USDC token account does not exist yet: fund it "
                "before offering top-ups and payouts"},
               {"usdc_token_account", solana::ToBase58(token_account)}});
    }
  }
  // Customers' top-ups in USDC, paid to the platform's wallet.
  topups_ = std::make_unique<topups::Topups>(
      db_, solana_rpc_.get(),
      topups::TopupsOptions{.mint = payout_options.solana_chain.mint,
                            .recipient = solana_key_ ? solana_key_->public_key : solana::Pubkey{},
                            .commitment = c.solana_commitment,
                            .ttl_s = c.topups_ttl_s,
                            .watch_s = c.topups_watch_s,
                            .expired_check_s = c.topups_expired_check_s,
                            .loop_ms = c.topups_loop_ms,
                            .min = Usdc::Micros(c.topups_min_micro),
                            .max = Usdc::Micros(c.topups_max_micro),
                            .max_pending_per_customer = c.topups_max_pending_per_customer,
                            .label = c.topups_label,
                            .clock = &clock_,
                            .notices = notices_});
  return Status::Ok();
}

Status Platform::BuildOutbox() {
  const Config& c = config_;
  if (c.smtp_url.empty()) {
    LogWarn("smtp.unconfigured",
            {{"message", "no SMTP URL: emails wait in the outbox until one is configured"}});
    return Status::Ok();
  }
  GPUNEX_RETURN_IF_ERROR(notify::ValidateSmtpUrl(c.smtp_url));
  notify::OutboxOptions o;
  o.from = c.smtp_from;
  o.poll_interval = std::chrono::milliseconds(c.outbox_poll_ms);
  o.backoff_base = std::chrono::seconds(c.outbox_backoff_base_s);
  o.max_attempts = c.outbox_max_attempts;
  o.lease = std::chrono::seconds(c.outbox_lease_s);
  o.clock = &clock_;
  o.verifier = verifier_.get();
  if (db_.Backend() == store::BackendKind::kSqlite) {
    // One process owns a SQLite data directory: claims left by a crashed run are
    // released at once instead of waiting out their lease.
    GPUNEX_RETURN_IF_ERROR(notify::ReleaseAbandonedClaims(db_, clock_.Now()));
  }
  outbox_ = std::make_unique<notify::OutboxSender>(db_, notify::CurlSmtpClient(c.smtp_url), o);
  return Status::Ok();
}

api::ApiContext Platform::Context(std::function<bool()> ready) {
  return api::ApiContext{
      .config = config_,
      .db = db_,
      .clock = clock_,
      .accounts = *accounts_,
      .providers = *providers_,
      .applications = *applications_,
      .metrics = metrics_,
      .fleet = *fleet_,
      .workloads = *workloads_,
      .benchmarks = *benchmarks_,
      .idempotency = *idempotency_,
      .availability = *availability_,
      .reliability = *reliability_,
      .pricing = *pricing_,
      .market = *market_,
      .billing = *billing_,
      .rentals = *rentals_,
      .jobs = *jobs_,
      .payouts = *payouts_,
      .topups = *topups_,
      .verifier = *verifier_,
      .install_script = api::RenderInstallScript(config_.public_url, config_.agent_image),
      .ready = std::move(ready),
      .collect_metrics = [this](http::Metrics& m) { CollectMetrics(m); }};
}

void Platform::ScheduleOn(Background& background) {
  if (outbox_) outbox_->ScheduleOn(background);
  fleet_->ScheduleOn(background);
  if (config_.benchmarks_enabled) benchmarks_->ScheduleOn(background);
  idempotency_->ScheduleOn(background);
  availability_->ScheduleOn(background);
  reliability_->ScheduleOn(background);
  market_->ScheduleOn(background);
  rentals_->ScheduleOn(background);
  jobs_->ScheduleOn(background);
  payouts_->ScheduleOn(background);
  topups_->ScheduleOn(background);
}

void Platform::CollectMetrics(http::Metrics& m) const {
  m.SetGauge("gpunex_unreadable_application_rows",
             "Stored provider applications skipped by lists because they could not be read.",
             static_cast<double>(applications_->unreadable_rows()));
  const fleet::Fleet::MessageCounts agent = fleet_->message_counts();
  for (const auto& [reason, n] : agent.refused) {
    m.SetGauge("gpunex_agent_messages_refused",
               "Agent messages refused alone since start (the session stayed up).",
               static_cast<double>(n), {{"reason", reason}});
  }
  m.SetGauge("gpunex_agent_log_bytes_replaced",
             "Bytes of workload log data the platform replaced (NUL, control characters) "
             "since start.",
             static_cast<double>(agent.log_bytes_replaced));
  if (!outbox_) return;
  notify::OutboxCounters c = outbox_->counters();
  m.SetGauge("gpunex_emails_sent", "Emails accepted by the SMTP server since start.",
             static_cast<double>(c.sent));
  m.SetGauge("gpunex_emails_failed", "Emails given up on since start.",
             static_cast<double>(c.failed));
  m.SetGauge("gpunex_email_retries", "Email deliveries scheduled for retry since start.",
             static_cast<double>(c.retries));
}

http::ServerOptions ServerOptionsOf(const Config& c) {
  http::ServerOptions so;
  so.listen = c.listen;
  so.max_body_bytes = c.max_body_bytes;
  so.io_threads = c.io_threads;
  so.worker_threads = c.worker_threads;
  so.max_connections_per_address = c.max_connections_per_address;
  so.tls_cert_file = c.tls_cert_file;
  so.tls_key_file = c.tls_key_file;
  return so;
}

// Builds the platform and serves it; with `list_routes`, prints the routes it would serve
// instead (nothing listens then).
int Serve(Config config, bool list_routes) {
  // Signals are taken by a dedicated thread; block them everywhere else first.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  std::signal(SIGPIPE, SIG_IGN);

  // Bind first, so that a derived public URL carries the real port (listen port 0). The
  // agent's channel and its throughput benchmark are routed before the API exists.
  http::ServerOptions so = ServerOptionsOf(config);
  std::function<http::Response(http::Request&)> dispatch;
  http::WebSocketAcceptor websocket_acceptor;
  http::StreamAuthorizer bench_authorizer;
  so.websocket_routes[std::string(api::kAgentConnectPath)] =
      [&websocket_acceptor](const http::Request& req,
                            std::shared_ptr<http::WebSocketConnection> c) {
        return websocket_acceptor(req, std::move(c));
      };
  auto bench = [&bench_authorizer](const http::Request& req) { return bench_authorizer(req); };
  so.stream_routes[std::string(api::kAgentBenchDownloadPath)] = {http::StreamRoute::Kind::kDownload,
                                                                 bench};
  so.stream_routes[std::string(api::kAgentBenchUploadPath)] = {http::StreamRoute::Kind::kUpload,
                                                               bench};
  std::unique_ptr<http::Server> server;
  if (!list_routes) {
    auto created =
        http::Server::Create(so, [&dispatch](http::Request& req) { return dispatch(req); });
    if (!created.ok()) return Fail(created.status());
    server = std::move(*created);
    if (config.public_url_from_listen) {
      std::string host = config.listen.substr(0, config.listen.rfind(':'));
      config.public_url = config.public_url.substr(0, config.public_url.find("://") + 3) + host +
                          ":" + std::to_string(server->port());
    }
  }

  auto db = OpenAndMigrate(config);
  if (!db.ok()) return Fail(db.status());
  LogInfo("store.opened", {{"backend", store::BackendName((*db)->Backend())}});
  std::unique_ptr<Clock> test_clock = TestClockFromEnv();
  auto platform = Platform::Create(config, **db, test_clock ? *test_clock : SystemClock());
  if (!platform.ok()) return Fail(platform.status());
  std::atomic<bool> ready{false};
  const api::ApiContext ctx = (*platform)->Context([&ready] { return ready.load(); });
  http::Router router(&(*platform)->metrics());
  api::RegisterRoutes(router, ctx);
  if (list_routes) {
    PrintRoutes(router);
    return 0;
  }
  websocket_acceptor = api::AgentChannelAcceptor(ctx);
  bench_authorizer = api::AgentBenchAuthorizer(ctx);
  dispatch = [&ctx, &router](http::Request& req) {
    return api::WithCommonHeaders(req, api::Dispatch(ctx, router, req));
  };

  Background background;
  (*platform)->ScheduleOn(background);
  background.Start();
  std::thread signal_thread([&] {
    int sig = 0;
    sigwait(&signals, &sig);
    LogInfo("gpunexd.stopping", {{"signal", sig}});
    ready = false;
    server->Shutdown();
  });
  ready = true;
  LogInfo("gpunexd.started", {{"port", server->port()},
                              {"tls", !config.tls_cert_file.empty()},
                              {"public_url", config.public_url}});
  server->Run();
  background.Stop();
  // Run() returned because of a signal, so the signal thread has finished or is about to.
  signal_thread.join();
  LogInfo("gpunexd.stopped");
  return 0;
}

// `gpunexd routes`: the routes serve registers. They do not depend on the configuration,
// so the defaults serve, over a throw-away SQLite database in a temporary folder.
int ListRoutes() {
  auto config = LoadConfig("", [](const std::string&) { return std::optional<std::string>(); });
  if (!config.ok()) return Fail(config.status());
  std::string dir = (std::filesystem::temp_directory_path() / "gpunexd-routes-XXXXXX").string();
  if (mkdtemp(dir.data()) == nullptr) return Fail(Internal("cannot make a temporary folder"));
  config->data_dir = dir;
  SetLogLevel(LogLevel::kError);
  const int rc = Serve(*config, /*list_routes=*/true);
  std::error_code ignored;
  std::filesystem::remove_all(dir, ignored);
  return rc;
}

}  // namespace
}  // namespace gpunex::platform

int main(int argc, char** argv) {
  using namespace gpunex;
  using namespace gpunex::platform;
  CLI::App app{"gpunexd: the gpunex platform server"};
  app.require_subcommand(1);
  std::string config_path;

  auto* serve = app.add_subcommand("serve", "serve the API and dashboard");
  serve->add_option("--config", config_path, "TOML configuration file");

  auto* migrate = app.add_subcommand("migrate", "apply database migrations and exit");
  migrate->add_option("--config", config_path, "TOML configuration file");

  auto* admin = app.add_subcommand("admin", "administration");
  admin->require_subcommand(1);
  auto* create = admin->add_subcommand("create", "create an admin (or make a user admin)");
  std::string email, password, name;
  create->add_option("--email", email, "email")->required();
  create->add_option("--password", password, "password (at least 10 characters)")->required();
  create->add_option("--name", name, "display name");
  create->add_option("--config", config_path, "TOML configuration file");

  auto* routes =
      app.add_subcommand("routes", "print every route with the access it declares (JSON) and exit");

  CLI11_PARSE(app, argc, argv);
  if (*routes) return ListRoutes();

  auto config = LoadConfig(config_path);
  if (!config.ok()) {
    std::cerr << "gpunexd: " << config.status().ToString() << "\n";
    return 2;
  }
  LogLevel level = LogLevel::kInfo;
  ParseLogLevel(config->log_level, &level);
  SetLogLevel(level);

  if (*serve) return Serve(*config, /*list_routes=*/false);
  auto db = OpenAndMigrate(*config);
  if (!db.ok()) return Fail(db.status());
  if (*migrate) {
    std::cout << "schema at version " << schema::LatestVersion() << "\n";
    return 0;
  }
  accounts::Accounts accounts(**db, AccountOptions(*config));
  auto user = accounts.CreateAdmin(email, password, name);
  if (!user.ok()) return Fail(user.status());
  std::cout << "admin " << user->email << " (" << user->id << ") ready\n";
  return 0;
}
