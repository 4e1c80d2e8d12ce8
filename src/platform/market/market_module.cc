#include "platform/market/market_module.h"

#include "platform/api/api.h"
#include "platform/market/market.h"
#include "platform/market/market_store.h"

namespace gpunex::platform::market {

Module MarketModule() {
  return Module{
      .name = "market",
      .migrations = MarketMigrations,
      .build = [](ModuleEnv& env) -> Status {
        env.services.Own(std::make_unique<Market>(
            env.db, MarketOptions{.poll_ms = env.config.market_poll_ms, .clock = &env.clock}));
        return Status::Ok();
      },
      // The offer index starts from the listings (after the fleet module refreshed them).
      .start = [](Services& s) { return s.Get<Market>().ReloadAll(); },
      .routes = api::RegisterMarketRoutes,
      .schedule = ScheduleService<Market>,
  };
}

}  // namespace gpunex::platform::market
