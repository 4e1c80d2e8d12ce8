#include "platform/fleet/fleet_module.h"

#include <memory>
#include <utility>

#include "common/log.h"
#include "platform/api/api.h"
#include "platform/fleet/fleet.h"
#include "platform/fleet/fleet_store.h"
#include "platform/fleet/workloads.h"
#include "platform/http/metrics.h"
#include "platform/store/signals.h"

namespace gpunex::platform::fleet {

namespace {

ConfigSection Section() {
  return ConfigSection{
      .name = "fleet",
      .parse = [](ConfigTable& t, const EnvGetter&) -> StatusOr<std::any> {
        FleetOptions o;
        GPUNEX_RETURN_IF_ERROR(t.Int("heartbeat_interval_s", &o.heartbeat_interval_s, 1, 300));
        GPUNEX_RETURN_IF_ERROR(t.Int("offline_after_s", &o.offline_after_s, 2, 3600));
        GPUNEX_RETURN_IF_ERROR(t.Int("hello_timeout_s", &o.hello_timeout_s, 1, 300));
        GPUNEX_RETURN_IF_ERROR(
            t.Int("max_machines_per_provider", &o.max_machines_per_provider, 1, 1'000'000));
        GPUNEX_RETURN_IF_ERROR(t.Str("agent_image", &o.agent_image));
        GPUNEX_RETURN_IF_ERROR(
            t.Bool("allow_private_registries", &o.images.allow_private_registries));
        if (o.offline_after_s <= o.heartbeat_interval_s) {
          return FieldError("fleet.offline_after_s", "must be longer than heartbeat_interval_s");
        }
        return std::any(o);
      },
      .example = R"([fleet]
heartbeat_interval_s = 10        # agents send telemetry this often
offline_after_s = 30             # no heartbeat for this long: the machine is Offline
hello_timeout_s = 10             # a new agent connection must say hello within this
max_machines_per_provider = 100  # a hello registering one more machine is refused
agent_image = "gpunex/agent:0.1.0"   # what /agent/install.sh pulls
allow_private_registries = false # workload images may name a registry on a loopback or private
                                 # address or an internal name (localhost:5000/..., 10.0.0.5/...);
                                 # link-local addresses (169.254.x.x) are refused always
)"};
}

// The listener of kCommandsSignal on PostgreSQL; none on SQLite.
struct CommandSignals {
  explicit CommandSignals(std::unique_ptr<store::SignalListener> l) : listener(std::move(l)) {}
  std::shared_ptr<store::SignalListener> listener;
};

Status Build(ModuleEnv& env) {
  FleetOptions o = env.config.Section<FleetOptions>("fleet");
  o.allow_emulated_gpus = env.config.allow_emulated_gpus;
  o.clock = &env.clock;
  Fleet& fleet = env.services.Own(std::make_unique<Fleet>(env.db, o));
  env.services.Own(std::make_unique<Workloads>(env.db, fleet, &env.clock));
  env.services.Own(std::make_unique<CommandSignals>(
      store::SignalListener::For(env.db, env.config.database_url, kCommandsSignal)));
  return Status::Ok();
}

// Commands written by other instances for the machines whose agents this one holds are
// sent as soon as their transaction commits: each instance listens for kCommandsSignal
// (on PostgreSQL; store/signals.h) and, when it names a machine connected here, runs the
// sweep's delivery at once. The sweep still delivers, within sweep_interval_ms, what a
// signal lost while the listening connection was down.
void Schedule(Services& services, const Config&, Background& background) {
  Fleet& fleet = services.Get<Fleet>();
  fleet.ScheduleOn(background);
  std::shared_ptr<store::SignalListener> listener = services.Get<CommandSignals>().listener;
  if (!listener) return;
  // A database away is said once, not at every pass (Wait waits out its timeout then).
  auto lost = std::make_shared<bool>(false);
  background.Add({.name = "fleet.signals",
                  .every = std::chrono::milliseconds(0),
                  .pass = [&fleet, listener, lost]() -> Status {
                    auto machines = listener->Wait(std::chrono::milliseconds(500));
                    if (!machines.ok()) {
                      if (!std::exchange(*lost, true)) {
                        LogWarn("fleet.signals_lost", {{"error", machines.status().ToString()}});
                      }
                      return Status::Ok();
                    }
                    if (std::exchange(*lost, false)) LogInfo("fleet.signals_back");
                    for (const std::string& mid : *machines) {
                      if (fleet.Connected(mid)) return fleet.SweepOnce();
                    }
                    return Status::Ok();
                  }});
}

void Routes(http::Router& router, const api::ApiContext& ctx) {
  api::RegisterMachineRoutes(router, ctx);
  api::RegisterWorkloadRoutes(router, ctx);
  api::RegisterAgentRoutes(router, ctx);
}

void CollectMetrics(const Services& s, http::Metrics& m) {
  const Fleet::MessageCounts agent = s.Get<Fleet>().message_counts();
  for (const auto& [reason, n] : agent.refused) {
    m.SetGauge("gpunex_agent_messages_refused",
               "Agent messages refused alone since start (the session stayed up).",
               static_cast<double>(n), {{"reason", reason}});
  }
  m.SetGauge("gpunex_agent_log_bytes_replaced",
             "Bytes of workload log data the platform replaced (NUL, control characters) "
             "since start.",
             static_cast<double>(agent.log_bytes_replaced));
}

}  // namespace

Module FleetModule() {
  return Module{
      .name = "fleet",
      .migrations = FleetMigrations,
      .config = Section(),
      .build = Build,
      // Listings follow the rules of the release that runs.
      .start = [](Services& s) { return s.Get<Fleet>().RefreshAllListings(); },
      .routes = Routes,
      .schedule = Schedule,
      .metrics = CollectMetrics,
  };
}

}  // namespace gpunex::platform::fleet
