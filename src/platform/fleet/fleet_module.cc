#include "platform/fleet/fleet_module.h"

#include "platform/api/api.h"
#include "platform/fleet/fleet.h"
#include "platform/fleet/fleet_store.h"
#include "platform/fleet/workloads.h"
#include "platform/http/metrics.h"

namespace gpunex::platform::fleet {

namespace {

Status Build(ModuleEnv& env) {
  const Config& c = env.config;
  FleetOptions o;
  o.allow_emulated_gpus = c.allow_emulated_gpus;
  o.heartbeat_interval_s = c.heartbeat_interval_s;
  o.offline_after_s = c.offline_after_s;
  o.hello_timeout_s = c.hello_timeout_s;
  o.max_machines_per_provider = c.max_machines_per_provider;
  o.images.allow_private_registries = c.allow_private_registries;
  o.list_after_benchmark = c.benchmarks_enabled;
  o.clock = &env.clock;
  Fleet& fleet = env.services.Own(std::make_unique<Fleet>(env.db, o));
  env.services.Own(std::make_unique<Workloads>(env.db, fleet, &env.clock));
  return Status::Ok();
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
      .build = Build,
      // Listings follow the rules of the release that runs.
      .start = [](Services& s) { return s.Get<Fleet>().RefreshAllListings(); },
      .routes = Routes,
      .schedule = ScheduleService<Fleet>,
      .metrics = CollectMetrics,
  };
}

}  // namespace gpunex::platform::fleet
