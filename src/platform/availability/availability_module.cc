#include "platform/availability/availability_module.h"

#include "platform/api/api.h"
#include "platform/availability/availability.h"
#include "platform/availability/availability_store.h"
#include "platform/notify/notify.h"

namespace gpunex::platform::availability {

Module AvailabilityModule() {
  return Module{
      .name = "availability",
      .migrations = AvailabilityMigrations,
      .build = [](ModuleEnv& env) -> Status {
        env.services.Own(std::make_unique<Availability>(
            env.db, env.services.Get<fleet::Fleet>(),
            AvailabilityOptions{.notices = env.services.Get<notify::NoticeSettings>(),
                                .clock = &env.clock}));
        return Status::Ok();
      },
      .routes = api::RegisterAvailabilityRoutes,
      .schedule = ScheduleService<Availability>,
  };
}

}  // namespace gpunex::platform::availability
