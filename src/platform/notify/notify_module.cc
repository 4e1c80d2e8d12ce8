#include "platform/notify/notify_module.h"

#include "common/log.h"
#include "platform/api/api.h"
#include "platform/http/metrics.h"
#include "platform/notify/notify_store.h"
#include "platform/notify/outbox.h"
#include "platform/notify/smtp.h"
#include "platform/notify/verify.h"

namespace gpunex::platform::notify {

namespace {

// The outbox's sender, with an SMTP URL only.
Status BuildOutbox(ModuleEnv& env) {
  const Config& c = env.config;
  if (c.smtp_url.empty()) {
    LogWarn("smtp.unconfigured",
            {{"message", "no SMTP URL: emails wait in the outbox until one is configured"}});
    return Status::Ok();
  }
  GPUNEX_RETURN_IF_ERROR(ValidateSmtpUrl(c.smtp_url));
  OutboxOptions o;
  o.from = c.smtp_from;
  o.poll_interval = std::chrono::milliseconds(c.outbox_poll_ms);
  o.backoff_base = std::chrono::seconds(c.outbox_backoff_base_s);
  o.max_attempts = c.outbox_max_attempts;
  o.lease = std::chrono::seconds(c.outbox_lease_s);
  o.clock = &env.clock;
  o.verifier = &env.services.Get<EmailVerifier>();
  if (env.db.Backend() == store::BackendKind::kSqlite) {
    // One process owns a SQLite data directory: claims left by a crashed run are
    // released at once instead of waiting out their lease.
    GPUNEX_RETURN_IF_ERROR(ReleaseAbandonedClaims(env.db, env.clock.Now()));
  }
  env.services.Own(std::make_unique<OutboxSender>(env.db, CurlSmtpClient(c.smtp_url), o));
  return Status::Ok();
}

void CollectMetrics(const Services& s, http::Metrics& m) {
  OutboxSender* outbox = s.Find<OutboxSender>();
  if (!outbox) return;
  OutboxCounters c = outbox->counters();
  m.SetGauge("gpunex_emails_sent", "Emails accepted by the SMTP server since start.",
             static_cast<double>(c.sent));
  m.SetGauge("gpunex_emails_failed", "Emails given up on since start.",
             static_cast<double>(c.failed));
  m.SetGauge("gpunex_email_retries", "Email deliveries scheduled for retry since start.",
             static_cast<double>(c.retries));
}

}  // namespace

Module NotifyModule() {
  return Module{
      .name = "notify",
      .migrations = NotifyMigrations,
      .build = BuildOutbox,
      .routes = api::RegisterNotificationRoutes,
      .schedule =
          [](Services& s, const Config&, Background& background) {
            if (OutboxSender* outbox = s.Find<OutboxSender>()) outbox->ScheduleOn(background);
          },
      .metrics = CollectMetrics,
  };
}

}  // namespace gpunex::platform::notify
