#include "platform/reliability/reliability_module.h"

#include "platform/api/api.h"
#include "platform/notify/notify.h"
#include "platform/reliability/reliability.h"
#include "platform/reliability/reliability_store.h"

namespace gpunex::platform::reliability {

Module ReliabilityModule() {
  return Module{
      .name = "reliability",
      .migrations = ReliabilityMigrations,
      .build = [](ModuleEnv& env) -> Status {
        env.services.Own(std::make_unique<Reliability>(
            env.db, env.services.Get<availability::Availability>(),
            ReliabilityOptions{.threshold = static_cast<double>(env.config.reliability_threshold),
                               .refresh_ms = env.config.reliability_refresh_ms,
                               .notices = env.services.Get<notify::NoticeSettings>(),
                               .clock = &env.clock}));
        return Status::Ok();
      },
      .routes = api::RegisterReliabilityRoutes,
      .schedule = ScheduleService<Reliability>,
  };
}

}  // namespace gpunex::platform::reliability
