#include "platform/rentals/rentals_module.h"

#include "platform/api/api.h"
#include "platform/fleet/fleet.h"
#include "platform/fleet/workloads.h"
#include "platform/market/market.h"
#include "platform/notify/notify.h"
#include "platform/rentals/jobs.h"
#include "platform/rentals/rentals.h"
#include "platform/rentals/rentals_store.h"

namespace gpunex::platform::rentals {

namespace {

Status Build(ModuleEnv& env) {
  const Config& c = env.config;
  market::Market& market = env.services.Get<market::Market>();
  // The price recommendation learns from what rentals paid.
  market.SetRentalSamples(Rentals::Samples);
  Rentals& rentals = env.services.Own(std::make_unique<Rentals>(
      env.db, env.services.Get<fleet::Fleet>(), env.services.Get<fleet::Workloads>(), market,
      RentalsOptions{.meter_interval_s = c.rentals_meter_interval_s,
                     .agent_lost_grace_s = c.rentals_agent_lost_grace_s,
                     .earnings_hold_s = c.rentals_earnings_hold_s,
                     .commission_community_bps = c.rentals_commission_community_bps,
                     .commission_enterprise_bps = c.rentals_commission_enterprise_bps,
                     .early_fault_refund_s = c.rentals_early_fault_refund_s,
                     .low_balance_s = c.rentals_low_balance_s,
                     .release_interval_s = c.rentals_release_interval_s,
                     .sweep_ms = c.rentals_sweep_ms,
                     .notices = env.services.Get<notify::NoticeSettings>(),
                     .clock = &env.clock}));
  env.services.Own(std::make_unique<Jobs>(
      env.db, rentals, market,
      JobsOptions{.max_queued_per_customer = c.rentals_max_queued_jobs_per_customer,
                  .clock = &env.clock}));
  return Status::Ok();
}

}  // namespace

Module RentalsModule() {
  return Module{
      .name = "rentals",
      .migrations = RentalsMigrations,
      .build = Build,
      .routes = api::RegisterRentalRoutes,
      .schedule =
          [](Services& s, const Config&, Background& background) {
            s.Get<Rentals>().ScheduleOn(background);
            s.Get<Jobs>().ScheduleOn(background);
          },
  };
}

}  // namespace gpunex::platform::rentals
