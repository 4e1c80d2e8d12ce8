#include "platform/market/market_module.h"

#include "platform/api/api.h"
#include "platform/market/market.h"
#include "platform/market/market_store.h"

namespace gpunex::platform::market {

namespace {

ConfigSection Section() {
  return ConfigSection{
      .name = "market",
      .parse = [](ConfigTable& t, const EnvGetter&) -> StatusOr<std::any> {
        MarketOptions o;
        GPUNEX_RETURN_IF_ERROR(t.Int("poll_ms", &o.poll_ms, 10, 10'000));
        GPUNEX_RETURN_IF_ERROR(
            t.Int("anonymous_searches_per_s", &o.anonymous_searches_per_s, 1, 100'000));
        GPUNEX_RETURN_IF_ERROR(t.Int("anonymous_burst", &o.anonymous_burst, 1, 1'000'000));
        return std::any(o);
      },
      .example = R"([market]                         # MKT-1..4; ranking in docs/ranking.md
poll_ms = 200                    # how often the offer index looks for changed machines
anonymous_searches_per_s = 10    # GET /offers per second per address without logging in
anonymous_burst = 40             # ... with this burst
)"};
}

}  // namespace

Module MarketModule() {
  return Module{
      .name = "market",
      .migrations = MarketMigrations,
      .config = Section(),
      .build = [](ModuleEnv& env) -> Status {
        MarketOptions o = env.config.Section<MarketOptions>("market");
        o.clock = &env.clock;
        env.services.Own(std::make_unique<Market>(env.db, o));
        return Status::Ok();
      },
      // The offer index starts from the listings (after the fleet module refreshed them).
      .start = [](Services& s) { return s.Get<Market>().ReloadAll(); },
      .routes = api::RegisterMarketRoutes,
      .schedule = ScheduleService<Market>,
  };
}

}  // namespace gpunex::platform::market
