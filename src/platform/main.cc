// gpunexd: the platform server.
//   gpunexd serve [--config FILE]
//   gpunexd admin create --email E --password P [--name N] [--config FILE]
//   gpunexd migrate [--config FILE]
#include <pthread.h>

#include <CLI/CLI.hpp>
#include <csignal>
#include <iostream>
#include <thread>

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
#include "platform/pricing/pricing.h"
#include "platform/providers/providers.h"
#include "platform/rentals/jobs.h"
#include "platform/rentals/rentals.h"
#include "platform/schema.h"
#include "platform/store/db.h"

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

StatusOr<std::unique_ptr<store::Database>> OpenAndMigrate(const Config& config) {
  GPUNEX_ASSIGN_OR_RETURN(auto db, store::OpenDatabase(config.database_url, config.data_dir));
  GPUNEX_RETURN_IF_ERROR(schema::MigrateAll(*db));
  GPUNEX_RETURN_IF_ERROR(catalog::SeedBuiltinModels(*db));
  return db;
}

int Serve(Config config) {
  // Signals are taken by a dedicated thread; block them everywhere else first.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  std::signal(SIGPIPE, SIG_IGN);

  // Bind first, so that a derived public URL carries the real port (listen port 0).
  http::ServerOptions so;
  so.listen = config.listen;
  so.max_body_bytes = config.max_body_bytes;
  so.io_threads = config.io_threads;
  so.worker_threads = config.worker_threads;
  so.max_connections_per_address = config.max_connections_per_address;
  so.tls_cert_file = config.tls_cert_file;
  so.tls_key_file = config.tls_key_file;
  std::function<http::Response(http::Request&)> dispatch;
  http::WebSocketAcceptor websocket_acceptor;
  so.websocket_routes[std::string(api::kAgentConnectPath)] =
      [&websocket_acceptor](const http::Request& req,
                            std::shared_ptr<http::WebSocketConnection> c) {
        return websocket_acceptor(req, std::move(c));
      };
  http::StreamAuthorizer bench_authorizer;  // the agent's throughput benchmark
  auto bench = [&bench_authorizer](const http::Request& req) { return bench_authorizer(req); };
  so.stream_routes[std::string(api::kAgentBenchDownloadPath)] = {http::StreamRoute::Kind::kDownload,
                                                                 bench};
  so.stream_routes[std::string(api::kAgentBenchUploadPath)] = {http::StreamRoute::Kind::kUpload,
                                                               bench};
  auto server = http::Server::Create(so, [&dispatch](http::Request& req) { return dispatch(req); });
  if (!server.ok()) return Fail(server.status());
  if (config.public_url_from_listen) {
    std::string host = config.listen.substr(0, config.listen.rfind(':'));
    config.public_url = config.public_url.substr(0, config.public_url.find("://") + 3) + host +
                        ":" + std::to_string((*server)->port());
  }

  auto db = OpenAndMigrate(config);
  if (!db.ok()) return Fail(db.status());
  LogInfo("store.opened", {{"backend", (*db)->Backend()}});

  const Clock& clock = SystemClock();
  std::unique_ptr<notify::OutboxSender> outbox;
  const std::function<void()> wake_outbox = [&outbox] {
    if (outbox) outbox->Wake();
  };
  accounts::Accounts accounts(**db, AccountOptions(config));
  providers::Providers providers(**db, {&clock});
  auto calendar = applications::BusinessCalendar::Create(config.holidays);
  if (!calendar.ok()) return Fail(calendar.status());
  applications::ApplicationsOptions app_options;
  app_options.public_url = config.public_url;
  app_options.mail_domain = MailDomain(config.public_url);
  app_options.target_business_days = config.review_target_business_days;
  app_options.calendar = *calendar;
  app_options.wake_outbox = wake_outbox;
  app_options.clock = &clock;
  applications::Applications applications(**db, app_options);

  http::Metrics metrics;
  fleet::FleetOptions fleet_options;
  fleet_options.allow_emulated_gpus = config.allow_emulated_gpus;
  fleet_options.heartbeat_interval_s = config.heartbeat_interval_s;
  fleet_options.offline_after_s = config.offline_after_s;
  fleet_options.hello_timeout_s = config.hello_timeout_s;
  fleet_options.max_machines_per_provider = config.max_machines_per_provider;
  fleet_options.list_after_benchmark = config.benchmarks_enabled;
  fleet_options.clock = &clock;
  fleet::Fleet fleet(**db, fleet_options);
  fleet::Workloads workloads(**db, fleet, &clock);
  auto bench_options = BenchmarkOptions(config);
  if (!bench_options.ok()) return Fail(bench_options.status());
  bench_options->wake_outbox = wake_outbox;
  bench_options->clock = &clock;
  benchmarks::Benchmarks benchmarks(**db, fleet, *bench_options);
  idempotency::Idempotency idempotency(**db, {.clock = &clock});
  const notify::NoticeSettings notices{MailDomain(config.public_url), config.public_url,
                                       wake_outbox};
  availability::Availability availability(**db, fleet, {.notices = notices, .clock = &clock});
  reliability::Reliability reliability(
      **db, availability,
      {.threshold = static_cast<double>(config.reliability_threshold),
       .refresh_ms = config.reliability_refresh_ms,
       .notices = notices,
       .clock = &clock});
  pricing::Pricing pricing(**db, fleet, {.clock = &clock});
  market::Market market(**db, {.poll_ms = config.market_poll_ms, .clock = &clock});
  market.SetRentalSamples(rentals::Rentals::Samples);
  billing::Billing billing(**db, &clock);
  rentals::Rentals rentals(**db, fleet, workloads, market,
                           {.meter_interval_s = config.rentals_meter_interval_s,
                            .agent_lost_grace_s = config.rentals_agent_lost_grace_s,
                            .earnings_hold_s = config.rentals_earnings_hold_s,
                            .commission_community_bps = config.rentals_commission_community_bps,
                            .commission_enterprise_bps = config.rentals_commission_enterprise_bps,
                            .early_fault_refund_s = config.rentals_early_fault_refund_s,
                            .low_balance_s = config.rentals_low_balance_s,
                            .sweep_ms = config.rentals_sweep_ms,
                            .notices = notices,
                            .clock = &clock});
  rentals::Jobs jobs(**db, rentals, market, &clock);
  // Listings follow the rules of the release that runs.
  if (Status st = fleet.RefreshAllListings(); !st.ok()) return Fail(st);
  if (!config.smtp_url.empty()) {
    if (Status st = notify::ValidateSmtpUrl(config.smtp_url); !st.ok()) return Fail(st);
    notify::OutboxOptions o;
    o.from = config.smtp_from;
    o.poll_interval = std::chrono::milliseconds(config.outbox_poll_ms);
    o.backoff_base = std::chrono::seconds(config.outbox_backoff_base_s);
    o.max_attempts = config.outbox_max_attempts;
    o.lease = std::chrono::seconds(config.outbox_lease_s);
    o.clock = &clock;
    if ((*db)->Backend() == "sqlite") {
      // One process owns a SQLite data directory: claims left by a crashed run are
      // released at once instead of waiting out their lease.
      if (Status st = notify::ReleaseAbandonedClaims(**db, clock.Now()); !st.ok()) return Fail(st);
    }
    outbox =
        std::make_unique<notify::OutboxSender>(**db, notify::CurlSmtpClient(config.smtp_url), o);
    outbox->Start();
  } else {
    LogWarn("smtp.unconfigured",
            {{"message", "no SMTP URL: emails wait in the outbox until one is configured"}});
  }

  std::atomic<bool> ready{false};
  api::ApiContext ctx{
      config,
      **db,
      clock,
      accounts,
      providers,
      applications,
      metrics,
      fleet,
      workloads,
      benchmarks,
      idempotency,
      availability,
      reliability,
      pricing,
      market,
      billing,
      rentals,
      jobs,
      api::RenderInstallScript(config.public_url, config.agent_image),
      [&ready] { return ready.load(); },
      [&outbox, &applications](http::Metrics& m) {
        m.SetGauge("gpunex_unreadable_application_rows",
                   "Stored provider applications skipped by lists because they could not be read.",
                   static_cast<double>(applications.unreadable_rows()));
        if (!outbox) return;
        notify::OutboxCounters c = outbox->counters();
        m.SetGauge("gpunex_emails_sent", "Emails accepted by the SMTP server since start.",
                   static_cast<double>(c.sent));
        m.SetGauge("gpunex_emails_failed", "Emails given up on since start.",
                   static_cast<double>(c.failed));
        m.SetGauge("gpunex_email_retries", "Email deliveries scheduled for retry since start.",
                   static_cast<double>(c.retries));
      }};
  http::Router router(&metrics);
  api::RegisterRoutes(router, ctx);
  websocket_acceptor = api::AgentChannelAcceptor(ctx);
  bench_authorizer = api::AgentBenchAuthorizer(ctx);
  fleet.Start();
  if (config.benchmarks_enabled) benchmarks.Start();
  idempotency.Start();
  availability.Start();
  reliability.Start();
  if (Status st = market.Start(); !st.ok()) return Fail(st);
  rentals.Start();
  jobs.Start();

  dispatch = [&ctx, &router](http::Request& req) {
    return api::WithCommonHeaders(req, api::Dispatch(ctx, router, req));
  };

  std::thread signal_thread([&] {
    int sig = 0;
    sigwait(&signals, &sig);
    LogInfo("gpunexd.stopping", {{"signal", sig}});
    ready = false;
    (*server)->Shutdown();
  });
  ready = true;
  LogInfo("gpunexd.started", {{"port", (*server)->port()},
                              {"tls", !config.tls_cert_file.empty()},
                              {"public_url", config.public_url}});
  (*server)->Run();
  jobs.Stop();
  rentals.Stop();
  market.Stop();
  reliability.Stop();
  availability.Stop();
  idempotency.Stop();
  benchmarks.Stop();
  fleet.Stop();
  if (outbox) outbox->Stop();
  // Run() returned because of a signal, so the signal thread has finished or is about to.
  signal_thread.join();
  LogInfo("gpunexd.stopped");
  return 0;
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

  CLI11_PARSE(app, argc, argv);

  auto config = LoadConfig(config_path);
  if (!config.ok()) {
    std::cerr << "gpunexd: " << config.status().ToString() << "\n";
    return 2;
  }
  LogLevel level = LogLevel::kInfo;
  ParseLogLevel(config->log_level, &level);
  SetLogLevel(level);

  if (*serve) return Serve(*config);
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
