#include "platform/applications/applications_module.h"

#include "common/business_days.h"
#include "platform/api/api.h"
#include "platform/applications/applications.h"
#include "platform/applications/applications_store.h"
#include "platform/http/metrics.h"
#include "platform/notify/notify.h"

namespace gpunex::platform::applications {

Module ApplicationsModule() {
  return Module{
      .name = "applications",
      .migrations = ApplicationsMigrations,
      .build = [](ModuleEnv& env) -> Status {
        const notify::NoticeSettings& notices = env.services.Get<notify::NoticeSettings>();
        ApplicationsOptions o;
        o.public_url = notices.public_url;
        o.mail_domain = notices.mail_domain;
        o.target_business_days = env.config.review_target_business_days;
        o.calendar = env.services.Get<BusinessCalendar>();
        o.wake_outbox = notices.wake_outbox;
        o.clock = &env.clock;
        env.services.Own(std::make_unique<Applications>(env.db, o));
        return Status::Ok();
      },
      .routes = api::RegisterApplicationRoutes,
      .metrics =
          [](const Services& s, http::Metrics& m) {
            m.SetGauge(
                "gpunex_unreadable_application_rows",
                "Stored provider applications skipped by lists because they could not be read.",
                static_cast<double>(s.Get<Applications>().unreadable_rows()));
          },
  };
}

}  // namespace gpunex::platform::applications
