// gpunexd: the platform server.
//   gpunexd serve [--config FILE]
//   gpunexd admin create --email E --password P [--name N] [--config FILE]
//   gpunexd migrate [--config FILE]
//   gpunexd routes
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/file.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <mutex>
#include <optional>
#include <system_error>
#include <thread>
#include <vector>

#include "common/allocator.h"
#include "common/background.h"
#include "common/business_days.h"
#include "common/data_channel.h"
#include "common/log.h"
#include "platform/access/access.h"
#include "platform/accounts/accounts.h"
#include "platform/accounts/accounts_module.h"
#include "platform/api/api.h"
#include "platform/config/config.h"
#include "platform/http/metrics.h"
#include "platform/http/router.h"
#include "platform/http/server.h"
#include "platform/modules.h"
#include "platform/notify/notify.h"
#include "platform/notify/outbox.h"
#include "platform/relay/peer.h"
#include "platform/relay/relay_module.h"
#include "platform/schema.h"
#include "platform/store/db.h"

namespace gpunex::platform {
namespace {

int Fail(const Status& st) {
  LogError("gpunexd.failed", {{"error", st.ToString()}});
  std::cerr << "gpunexd: " << st.ToString() << "\n";
  return 1;
}

// Host part of the public URL, for Message-IDs.
std::string MailDomain(const std::string& public_url) {
  std::string rest = public_url.substr(public_url.find("://") + 3);
  rest = rest.substr(0, rest.find('/'));
  if (!rest.empty() && rest.front() == '[') return rest.substr(1, rest.find(']') - 1);
  return rest.substr(0, rest.find(':'));
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

// One gpunexd serves a SQLite data directory at a time. Two would each take the database
// for their own: on SQLite the payout lock is the process's (store::Database::TryLock) and
// the outbox takes back every email claim at start, so a second process could carry a
// payout run forward beside the first and send emails twice (docs/operations.md). The lock
// is the kernel's (flock on <data_dir>/gpunexd.lock): it ends with the process, however
// the process ends. On PostgreSQL several instances are the design: nothing is taken.
class DataDirLock {
 public:
  static StatusOr<std::unique_ptr<DataDirLock>> Take(const Config& config) {
    if (!config.database_url.empty()) return std::unique_ptr<DataDirLock>();
    std::error_code ec;
    std::filesystem::create_directories(config.data_dir, ec);
    const std::string path = (std::filesystem::path(config.data_dir) / "gpunexd.lock").string();
    const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) {
      return Unavailable("cannot open " + path + ": " + std::generic_category().message(errno));
    }
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      ::close(fd);
      return FailedPrecondition("another gpunexd serves the data directory " + config.data_dir +
                                " (it holds " + path +
                                "): run one gpunexd per SQLite data directory, or several "
                                "on one PostgreSQL database");
    }
    return std::unique_ptr<DataDirLock>(new DataDirLock(fd));
  }
  ~DataDirLock() { ::close(fd_); }
  DataDirLock(const DataDirLock&) = delete;
  DataDirLock& operator=(const DataDirLock&) = delete;

 private:
  explicit DataDirLock(int fd) : fd_(fd) {}
  int fd_;
};

StatusOr<std::unique_ptr<store::Database>> OpenAndMigrate(const Config& config) {
  GPUNEX_ASSIGN_OR_RETURN(auto db, store::OpenDatabase(config.database_url, config.data_dir));
  GPUNEX_RETURN_IF_ERROR(schema::MigrateAll(*db));
  GPUNEX_RETURN_IF_ERROR(schema::SeedAll(*db));
  return db;
}

// The routes the HTTP server serves itself, before the router: WebSocket upgrades,
// proxied and streamed exchanges. Each checks its caller in its own acceptor or
// authorizer; this says with what, for `gpunexd routes` and the authorization matrix
// (tests/e2e/test_authz.py): "agent" is an agent token, "user" as for the router's
// routes (a WebSocket's API key needs the write scope: what flows can change things).
struct ServerRoute {
  std::string_view method;
  std::string_view pattern;
  std::string_view access;
};
constexpr ServerRoute kServerRoutes[] = {
    {"GET", api::kAgentConnectPath, "agent"},       {"GET", kDataChannelPath, "agent"},
    {"GET", api::kAgentBenchDownloadPath, "agent"}, {"POST", api::kAgentBenchUploadPath, "agent"},
    {"GET", relay::kPortConnectPattern, "user"},    {"GET", relay::kFilesPattern, "user"},
    {"PUT", relay::kFilesPattern, "user"},          {"GET", relay::kExecPattern, "user"},
    {"GET", relay::kPeerPath, "instance"},
};

// Prints `router`'s routes, each with the access it declares, in the order they were
// registered, then the server's own (kServerRoutes):
// {"routes": [{"method": "GET", "pattern": "/healthz", "access": "public"}, ...]}.
// Fails when the server serves a path kServerRoutes does not declare.
int PrintRoutes(const http::Router& router, const http::ServerOptions& so) {
  json::array items;
  for (const http::Router::RouteInfo& r : router.Routes()) {
    items.push_back(
        json::object{{"method", r.method}, {"pattern", r.pattern}, {"access", r.access}});
  }
  std::vector<std::string> served;
  for (const auto& [path, _] : so.websocket_routes) served.push_back(path);
  for (const auto& [path, _] : so.proxy_routes) served.push_back(path);
  for (const auto& [path, _] : so.stream_routes) served.push_back(path);
  for (const std::string& path : served) {
    const bool declared = std::any_of(std::begin(kServerRoutes), std::end(kServerRoutes),
                                      [&path](const ServerRoute& r) { return r.pattern == path; });
    if (!declared) {
      std::cerr << "gpunexd routes: " << path << " is served but not in kServerRoutes\n";
      return 1;
    }
  }
  for (const ServerRoute& r : kServerRoutes) {
    items.push_back(
        json::object{{"method", r.method}, {"pattern", r.pattern}, {"access", r.access}});
  }
  std::cout << ToJsonText(json::object{{"routes", std::move(items)}}) << "\n";
  return 0;
}

// Every service of gpunexd: the few every module shares (the business calendar, the
// notices' settings, the metrics) and each module's, built from the configuration in
// the order of the module list (and destroyed in the reverse order), with what the API
// and the background work need of them.
class Platform {
 public:
  // Builds every service over `db`, migrated, with `clock`. `config`, `db`, `clock` and
  // `modules` outlive it.
  static StatusOr<std::unique_ptr<Platform>> Create(const Config& config, store::Database& db,
                                                    const Clock& clock,
                                                    const std::vector<Module>& modules);

  // What the API's handlers reach; `ready` answers /readyz.
  api::ApiContext Context(std::function<bool()> ready);
  // Every module's background work, in the order of the list (it stops in the reverse).
  void ScheduleOn(Background& background);
  http::Metrics& metrics() { return metrics_; }

 private:
  Platform(const Config& config, store::Database& db, const Clock& clock,
           const std::vector<Module>& modules)
      : config_(config), db_(db), clock_(clock), modules_(modules) {}

  const Config& config_;
  store::Database& db_;
  const Clock& clock_;
  const std::vector<Module>& modules_;
  http::Metrics metrics_;
  std::optional<BusinessCalendar> calendar_;
  // Emails are sent at once after the commit that queued them, when the notify module
  // has a sender (an SMTP URL).
  notify::NoticeSettings notices_{MailDomain(config_.public_url), config_.public_url, [this] {
                                    if (auto* outbox = services_.Find<notify::OutboxSender>())
                                      outbox->Wake();
                                  }};
  Services services_;  // last: destroyed first
};

StatusOr<std::unique_ptr<Platform>> Platform::Create(const Config& config, store::Database& db,
                                                     const Clock& clock,
                                                     const std::vector<Module>& modules) {
  std::unique_ptr<Platform> p(new Platform(config, db, clock, modules));
  GPUNEX_ASSIGN_OR_RETURN(p->calendar_, BusinessCalendar::Create(config.holidays));
  p->services_.Provide(*p->calendar_);
  p->services_.Provide(p->notices_);
  ModuleEnv env{config, db, clock, p->services_};
  for (const Module& m : modules) {
    if (m.build) GPUNEX_RETURN_IF_ERROR(m.build(env));
  }
  for (const Module& m : modules) {
    if (m.start) GPUNEX_RETURN_IF_ERROR(m.start(p->services_));
  }
  return p;
}

api::ApiContext Platform::Context(std::function<bool()> ready) {
  const Services& s = services_;
  return api::ApiContext{.config = config_,
                         .db = db_,
                         .clock = clock_,
                         .accounts = s.Get<accounts::Accounts>(),
                         .providers = s.Get<providers::Providers>(),
                         .applications = s.Get<applications::Applications>(),
                         .metrics = metrics_,
                         .fleet = s.Get<fleet::Fleet>(),
                         .workloads = s.Get<fleet::Workloads>(),
                         .benchmarks = s.Get<benchmarks::Benchmarks>(),
                         .idempotency = s.Get<idempotency::Idempotency>(),
                         .availability = s.Get<availability::Availability>(),
                         .reliability = s.Get<reliability::Reliability>(),
                         .pricing = s.Get<pricing::Pricing>(),
                         .market = s.Get<market::Market>(),
                         .billing = s.Get<billing::Billing>(),
                         .rentals = s.Get<rentals::Rentals>(),
                         .jobs = s.Get<rentals::Jobs>(),
                         .payouts = s.Get<payouts::Payouts>(),
                         .topups = s.Get<topups::Topups>(),
                         .verifier = s.Get<notify::EmailVerifier>(),
                         .services = s,
                         .ready = std::move(ready),
                         .collect_metrics = [this](http::Metrics& m) {
                           for (const Module& module : modules_) {
                             if (module.metrics) module.metrics(services_, m);
                           }
                         }};
}

void Platform::ScheduleOn(Background& background) {
  for (const Module& m : modules_) {
    if (m.schedule) m.schedule(services_, config_, background);
  }
}

http::ServerOptions ServerOptionsOf(const Config& c) {
  http::ServerOptions so;
  so.listen = c.listen;
  so.max_body_bytes = c.max_body_bytes;
  so.io_threads = c.io_threads;
  so.worker_threads = c.worker_threads;
  so.message_threads = c.message_threads;
  so.max_connections_per_address = c.max_connections_per_address;
  so.tls_cert_file = c.tls_cert_file;
  so.tls_key_file = c.tls_key_file;
  return so;
}

// The routes the server serves itself (kServerRoutes), installed in its options before
// it binds; their handlers are filled in once the API exists (Fill), and until then
// nothing can reach them (the server has not started).
class ServerRouteHandlers {
 public:
  void Install(http::ServerOptions& so) {
    auto forward = [](http::WebSocketAcceptor& to) {
      return [&to](const http::Request& req, std::shared_ptr<http::WebSocketConnection> c) {
        return to(req, std::move(c));
      };
    };
    so.websocket_routes[std::string(api::kAgentConnectPath)] = forward(agent_);
    so.websocket_routes[std::string(kDataChannelPath)] = forward(data_);
    so.websocket_routes[std::string(relay::kPortConnectPattern)] = forward(port_);
    so.websocket_routes[std::string(relay::kExecPattern)] = forward(exec_);
    so.websocket_routes[std::string(relay::kPeerPath)] = forward(peer_);
    so.proxy_routes[std::string(relay::kFilesPattern)] = [this](const http::ProxyRequest& req) {
      return files_(req);
    };
    auto bench = [this](const http::Request& req) { return bench_(req); };
    so.stream_routes[std::string(api::kAgentBenchDownloadPath)] = {
        http::StreamRoute::Kind::kDownload, bench};
    so.stream_routes[std::string(api::kAgentBenchUploadPath)] = {http::StreamRoute::Kind::kUpload,
                                                                 bench};
  }

  void Fill(const api::ApiContext& ctx) {
    agent_ = api::AgentChannelAcceptor(ctx);
    data_ = relay::DataChannelAcceptor(ctx);
    port_ = relay::PortConnectAcceptor(ctx);
    exec_ = relay::ExecAcceptor(ctx);
    peer_ = relay::PeerAcceptor(ctx);
    files_ = relay::FilesAuthorizer(ctx);
    bench_ = api::AgentBenchAuthorizer(ctx);
  }

 private:
  http::WebSocketAcceptor agent_, data_, port_, exec_, peer_;
  http::ProxyAuthorizer files_;
  http::StreamAuthorizer bench_;
};

// The access listener: rentals' HTTP ports, on an origin of their own (docs/access.md),
// bound; nullptr when the configuration names none.
StatusOr<std::unique_ptr<http::Server>> BindAccessListener(const Config& config,
                                                           const api::ApiContext& ctx) {
  access::Access& access = ctx.services.Get<access::Access>();
  const access::AccessOptions& ao = access.options();
  if (ao.listen.empty()) return std::unique_ptr<http::Server>();
  http::ServerOptions aso = ServerOptionsOf(config);
  aso.listen = ao.listen;
  aso.tls_cert_file = ao.tls_cert_file;
  aso.tls_key_file = ao.tls_key_file;
  aso.idle_timeout = ao.idle_timeout;
  aso.proxy = access::Gate(access, ctx.accounts, ctx.services.Get<relay::Relay>(), ctx.db);
  GPUNEX_ASSIGN_OR_RETURN(std::unique_ptr<http::Server> server,
                          http::Server::Create(aso, [](http::Request&) {
                            return http::ErrorResponse(NotFound("not served here"));
                          }));
  std::string host = ao.listen.substr(0, ao.listen.rfind(':'));
  if (host.empty() || host == "0.0.0.0" || host == "[::]") host = "localhost";
  access.Bound(std::string(ao.tls_cert_file.empty() ? "http://" : "https://") + host + ":" +
               std::to_string(server->port()));
  LogInfo("access.started", {{"port", server->port()}, {"domain", ao.domain}});
  return server;
}

// SIGTERM and SIGINT, blocked in every thread started after this (a dedicated thread
// takes them with sigwait); SIGPIPE ignored.
sigset_t BlockStopSignals() {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  std::signal(SIGPIPE, SIG_IGN);
  return signals;
}

// Builds the platform and serves it; with `list_routes`, prints the routes it would serve
// instead (nothing listens then).
int Serve(Config config, bool list_routes) {
  sigset_t signals = BlockStopSignals();

  // Bind first, so that a derived public URL carries the real port (listen port 0). The
  // agent's channel and its throughput benchmark are routed before the API exists.
  http::ServerOptions so = ServerOptionsOf(config);
  ServerRouteHandlers server_routes;
  server_routes.Install(so);
  std::function<http::Response(http::Request&)> dispatch;
  std::unique_ptr<http::Server> server;
  if (!list_routes) {
    auto created =
        http::Server::Create(so, [&dispatch](http::Request& req) { return dispatch(req); });
    if (!created.ok()) return Fail(created.status());
    server = std::move(*created);
    // The real port in listen too (an instance's URL in a cluster comes from it).
    config.listen =
        config.listen.substr(0, config.listen.rfind(':')) + ":" + std::to_string(server->port());
    if (config.public_url_from_listen) {
      std::string host = config.listen.substr(0, config.listen.rfind(':'));
      config.public_url = config.public_url.substr(0, config.public_url.find("://") + 3) + host +
                          ":" + std::to_string(server->port());
    }
  }

  std::unique_ptr<DataDirLock> data_dir_lock;
  if (!list_routes) {
    auto taken = DataDirLock::Take(config);
    if (!taken.ok()) return Fail(taken.status());
    data_dir_lock = std::move(*taken);
  }
  auto db = OpenAndMigrate(config);
  if (!db.ok()) return Fail(db.status());
  LogInfo("store.opened", {{"backend", store::BackendName((*db)->Backend())}});
  std::unique_ptr<Clock> test_clock = TestClockFromEnv();
  auto platform =
      Platform::Create(config, **db, test_clock ? *test_clock : SystemClock(), Modules());
  if (!platform.ok()) return Fail(platform.status());
  std::atomic<bool> ready{false};
  const api::ApiContext ctx = (*platform)->Context([&ready] { return ready.load(); });
  http::Router router(&(*platform)->metrics());
  api::RegisterRoutes(router, ctx, Modules());
  if (list_routes) return PrintRoutes(router, so);
  server_routes.Fill(ctx);
  dispatch = [&ctx, &router](http::Request& req) {
    return api::WithCommonHeaders(req, api::Dispatch(ctx, router, req));
  };
  auto access_server = BindAccessListener(config, ctx);
  if (!access_server.ok()) return Fail(access_server.status());
  std::thread access_thread;
  if (*access_server) access_thread = std::thread([&] { (*access_server)->Run(); });

  Background background;
  (*platform)->ScheduleOn(background);
  background.Start();
  std::thread signal_thread([&] {
    int sig = 0;
    sigwait(&signals, &sig);
    LogInfo("gpunexd.stopping", {{"signal", sig}});
    ready = false;
    if (*access_server) (*access_server)->Shutdown();
    server->Shutdown();
  });
  ready = true;
  LogInfo("gpunexd.started", {{"port", server->port()},
                              {"tls", !config.tls_cert_file.empty()},
                              {"public_url", config.public_url}});
  server->Run();
  if (access_thread.joinable()) access_thread.join();
  background.Stop();
  // Run() returned because of a signal, so the signal thread has finished or is about to.
  signal_thread.join();
  LogInfo("gpunexd.stopped");
  return 0;
}

// `gpunexd routes`: the routes serve registers. They do not depend on the configuration,
// so the defaults serve, over a throw-away SQLite database in a temporary folder.
int ListRoutes() {
  auto config = LoadConfig(
      "", [](const std::string&) { return std::optional<std::string>(); },
      ConfigSectionsOf(Modules()));
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
  KeepFreedMemoryForReuse();  // the relay's frames (common/allocator.h)
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

  auto config = LoadConfig(config_path, ProcessEnv, ConfigSectionsOf(Modules()));
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
  accounts::Accounts accounts(**db, accounts::AccountsOptionsFrom(*config));
  auto user = accounts.CreateAdmin(email, password, name);
  if (!user.ok()) return Fail(user.status());
  std::cout << "admin " << user->email << " (" << user->id << ") ready\n";
  return 0;
}
