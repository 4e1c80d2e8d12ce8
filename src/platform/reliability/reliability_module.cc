#include "platform/reliability/reliability_module.h"

#include "platform/api/api.h"
#include "platform/notify/notify.h"
#include "platform/reliability/reliability.h"
#include "platform/reliability/reliability_store.h"

namespace gpunex::platform::reliability {

namespace {

ConfigSection Section() {
  return ConfigSection{
      .name = "reliability",
      .parse = [](ConfigTable& t, const EnvGetter&) -> StatusOr<std::any> {
        ReliabilityOptions o;
        int threshold = 80;
        GPUNEX_RETURN_IF_ERROR(t.Int("threshold", &threshold, 1, 100));
        o.threshold = threshold;
        GPUNEX_RETURN_IF_ERROR(t.Int("refresh_ms", &o.refresh_ms, 1000, 3600 * 1000));
        return std::any(o);
      },
      .example =
          R"([reliability]                    # REL-1..5; rules in docs/reliability-score.md
threshold = 80                   # providers are told when a machine's score falls below this
refresh_ms = 60000               # a full refresh at least this often (changes: within 1 s)
)"};
}

}  // namespace

Module ReliabilityModule() {
  return Module{
      .name = "reliability",
      .migrations = ReliabilityMigrations,
      .config = Section(),
      .build = [](ModuleEnv& env) -> Status {
        ReliabilityOptions o = env.config.Section<ReliabilityOptions>("reliability");
        o.notices = env.services.Get<notify::NoticeSettings>();
        o.clock = &env.clock;
        env.services.Own(std::make_unique<Reliability>(
            env.db, env.services.Get<availability::Availability>(), o));
        return Status::Ok();
      },
      .routes = api::RegisterReliabilityRoutes,
      .schedule = ScheduleService<Reliability>,
  };
}

}  // namespace gpunex::platform::reliability
