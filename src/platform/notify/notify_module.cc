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

// The [smtp] table, GPUNEX_SMTP_URL and GPUNEX_SMTP_FROM: where emails go.
struct SmtpSettings {
  std::string url;  // "": emails wait in the outbox until one is configured
  OutboxOptions outbox{.from = "gpunex <no-reply@gpunex.local>", .lease = std::chrono::seconds(90)};
};

StatusOr<std::any> Parse(ConfigTable& t, const EnvGetter& env) {
  SmtpSettings o;
  OutboxOptions& outbox = o.outbox;
  int poll_ms = 1000, backoff_base_s = 5, lease_s = 90;
  GPUNEX_RETURN_IF_ERROR(t.Str("url", &o.url));
  GPUNEX_RETURN_IF_ERROR(t.Str("from", &outbox.from));
  GPUNEX_RETURN_IF_ERROR(t.Int("poll_ms", &poll_ms, 10, 60000));
  GPUNEX_RETURN_IF_ERROR(t.Int("backoff_base_seconds", &backoff_base_s, 1, 3600));
  GPUNEX_RETURN_IF_ERROR(t.Int("max_attempts", &outbox.max_attempts, 1, 100));
  GPUNEX_RETURN_IF_ERROR(t.Int("lease_seconds", &lease_s, 2, 3600));
  outbox.poll_interval = std::chrono::milliseconds(poll_ms);
  outbox.backoff_base = std::chrono::seconds(backoff_base_s);
  outbox.lease = std::chrono::seconds(lease_s);
  if (auto v = env("GPUNEX_SMTP_URL")) o.url = *v;
  if (auto v = env("GPUNEX_SMTP_FROM")) outbox.from = *v;
  return std::any(o);
}

constexpr std::string_view kExample = R"([smtp]
url = ""                         # smtp://user:pass@host:587 or smtps://...; empty: emails wait
from = "gpunex <no-reply@gpunex.local>"
poll_ms = 1000
backoff_base_seconds = 5         # retry n waits up to base * 2^(n-1), capped at 1 h
max_attempts = 12
lease_seconds = 90               # a claim on an email in flight; see docs/architecture.md
)";

// The outbox's sender, with an SMTP URL only.
Status BuildOutbox(ModuleEnv& env) {
  const SmtpSettings& c = env.config.Section<SmtpSettings>("smtp");
  if (c.url.empty()) {
    LogWarn("smtp.unconfigured",
            {{"message", "no SMTP URL: emails wait in the outbox until one is configured"}});
    return Status::Ok();
  }
  GPUNEX_RETURN_IF_ERROR(ValidateSmtpUrl(c.url));
  OutboxOptions o = c.outbox;
  o.clock = &env.clock;
  o.verifier = &env.services.Get<EmailVerifier>();
  if (env.db.Backend() == store::BackendKind::kSqlite) {
    // One process owns a SQLite data directory: claims left by a crashed run are
    // released at once instead of waiting out their lease.
    GPUNEX_RETURN_IF_ERROR(ReleaseAbandonedClaims(env.db, env.clock.Now()));
  }
  env.services.Own(std::make_unique<OutboxSender>(env.db, CurlSmtpClient(c.url), o));
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
      .config = ConfigSection{.name = "smtp", .parse = Parse, .example = std::string(kExample)},
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
