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

StatusOr<std::any> Parse(ConfigTable& t, const EnvGetter&) {
  RentalsSettings settings;
  RentalsOptions& o = settings.rentals;
  GPUNEX_RETURN_IF_ERROR(t.Int("meter_interval_s", &o.meter_interval_s, 1, 3600));
  GPUNEX_RETURN_IF_ERROR(t.Int("agent_lost_grace_s", &o.agent_lost_grace_s, 1, 86'400));
  GPUNEX_RETURN_IF_ERROR(t.Int("earnings_hold_s", &o.earnings_hold_s, 60, 30ll * 24 * 3600));
  GPUNEX_RETURN_IF_ERROR(t.Int("commission_community_bps", &o.commission_community_bps, 0, 10'000));
  GPUNEX_RETURN_IF_ERROR(
      t.Int("commission_enterprise_bps", &o.commission_enterprise_bps, 0, 10'000));
  GPUNEX_RETURN_IF_ERROR(t.Int("early_fault_refund_s", &o.early_fault_refund_s, 0, 86'400));
  GPUNEX_RETURN_IF_ERROR(t.Int("low_balance_s", &o.low_balance_s, 0, 7 * 86'400));
  GPUNEX_RETURN_IF_ERROR(t.Int("sweep_ms", &o.sweep_ms, 10, 60'000));
  GPUNEX_RETURN_IF_ERROR(t.Int("release_interval_s", &o.release_interval_s, 1, 24 * 3600));
  GPUNEX_RETURN_IF_ERROR(
      t.Int("max_queued_jobs_per_customer", &settings.jobs.max_queued_per_customer, 1, 10'000));
  // A refund takes back earnings that are still pending.
  if (o.early_fault_refund_s >= o.earnings_hold_s) {
    return FieldError("rentals.early_fault_refund_s", "must be less than earnings_hold_s");
  }
  return std::any(settings);
}

constexpr std::string_view kExample =
    R"([rentals]                        # RNT-1..6, LED-1..4; rules in docs/billing.md
meter_interval_s = 60            # running rentals are billed this often (and at the end)
agent_lost_grace_s = 300         # a machine offline this long ends its rentals as agent_lost
earnings_hold_s = 86400          # earnings stay pending this long after the usage
commission_community_bps = 2000  # the platform's commission: 20 %
commission_enterprise_bps = 1500 # ... 15 % for Enterprise providers
early_fault_refund_s = 600       # a provider-fault end this early is refunded in full
low_balance_s = 4200             # warn when the balance covers less than this
sweep_ms = 1000                  # how often the metering loop looks for due rentals
release_interval_s = 60          # how often pending earnings past the hold become available
max_queued_jobs_per_customer = 100  # jobs one customer may have waiting for an offer (1..10000)
)";

Status Build(ModuleEnv& env) {
  const RentalsSettings& settings = env.config.Section<RentalsSettings>("rentals");
  market::Market& market = env.services.Get<market::Market>();
  // The price recommendation learns from what rentals paid.
  market.SetRentalSamples(Rentals::Samples);
  RentalsOptions o = settings.rentals;
  o.notices = env.services.Get<notify::NoticeSettings>();
  o.clock = &env.clock;
  Rentals& rentals = env.services.Own(std::make_unique<Rentals>(
      env.db, env.services.Get<fleet::Fleet>(), env.services.Get<fleet::Workloads>(), market, o));
  JobsOptions jobs = settings.jobs;
  jobs.clock = &env.clock;
  env.services.Own(std::make_unique<Jobs>(env.db, rentals, market, jobs));
  return Status::Ok();
}

}  // namespace

Module RentalsModule() {
  return Module{
      .name = "rentals",
      .migrations = RentalsMigrations,
      .config = ConfigSection{.name = "rentals", .parse = Parse, .example = std::string(kExample)},
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
