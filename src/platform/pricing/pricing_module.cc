#include "platform/pricing/pricing_module.h"

#include "platform/api/api.h"
#include "platform/pricing/pricing.h"
#include "platform/pricing/pricing_store.h"

namespace gpunex::platform::pricing {

Module PricingModule() {
  return Module{
      .name = "pricing",
      .migrations = PricingMigrations,
      .build = [](ModuleEnv& env) -> Status {
        env.services.Own(std::make_unique<Pricing>(env.db, env.services.Get<fleet::Fleet>(),
                                                   PricingOptions{.clock = &env.clock}));
        return Status::Ok();
      },
      .routes = api::RegisterPricingRoutes,
  };
}

}  // namespace gpunex::platform::pricing
