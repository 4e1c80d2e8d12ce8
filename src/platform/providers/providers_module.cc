#include "platform/providers/providers_module.h"

#include "platform/api/api.h"
#include "platform/providers/providers.h"
#include "platform/providers/providers_store.h"

namespace gpunex::platform::providers {

Module ProvidersModule() {
  return Module{
      .name = "providers",
      .migrations = ProvidersMigrations,
      .build = [](ModuleEnv& env) -> Status {
        env.services.Own(std::make_unique<Providers>(env.db, ProvidersOptions{&env.clock}));
        return Status::Ok();
      },
      .routes = api::RegisterProviderRoutes,
  };
}

}  // namespace gpunex::platform::providers
