#include "platform/billing/billing_module.h"

#include "platform/billing/billing.h"
#include "platform/billing/billing_store.h"

namespace gpunex::platform::billing {

Module BillingModule() {
  return Module{
      .name = "billing",
      .migrations = BillingMigrations,
      .build = [](ModuleEnv& env) -> Status {
        env.services.Own(std::make_unique<Billing>(env.db, &env.clock));
        return Status::Ok();
      },
  };
}

}  // namespace gpunex::platform::billing
