#include "platform/idempotency/idempotency_module.h"

#include "platform/idempotency/idempotency.h"
#include "platform/idempotency/idempotency_store.h"

namespace gpunex::platform::idempotency {

Module IdempotencyModule() {
  return Module{
      .name = "idempotency",
      .migrations = IdempotencyMigrations,
      .build = [](ModuleEnv& env) -> Status {
        env.services.Own(
            std::make_unique<Idempotency>(env.db, IdempotencyOptions{.clock = &env.clock}));
        return Status::Ok();
      },
      .schedule = ScheduleService<Idempotency>,
  };
}

}  // namespace gpunex::platform::idempotency
