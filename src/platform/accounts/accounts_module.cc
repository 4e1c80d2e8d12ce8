#include "platform/accounts/accounts_module.h"

#include "platform/accounts/accounts.h"
#include "platform/accounts/accounts_store.h"
#include "platform/accounts/directory.h"
#include "platform/api/api.h"
#include "platform/notify/notify.h"
#include "platform/notify/verify.h"

namespace gpunex::platform::accounts {

namespace {

// The [auth] table: the accounts' options and how long a verification link works.
struct AuthSettings {
  AccountsOptions accounts;
  int email_link_hours = 48;
};

StatusOr<std::any> Parse(ConfigTable& t, const EnvGetter&) {
  AuthSettings settings;
  AccountsOptions& o = settings.accounts;
  GPUNEX_RETURN_IF_ERROR(t.Int("session_ttl_hours", &o.session_ttl_hours, 1, 24 * 90));
  GPUNEX_RETURN_IF_ERROR(t.Int("session_idle_minutes", &o.session_idle_minutes, 5, 24 * 90 * 60));
  GPUNEX_RETURN_IF_ERROR(t.Int("email_link_hours", &settings.email_link_hours, 1, 24 * 30));
  GPUNEX_RETURN_IF_ERROR(
      t.Int("signups_per_address_per_hour", &o.signups_per_address_per_hour, 1, 1'000'000));
  GPUNEX_RETURN_IF_ERROR(t.Int("password_hash_concurrency", &o.password_hash_concurrency, 1, 64));
  GPUNEX_RETURN_IF_ERROR(t.Int("password_hash_waiting", &o.password_hash_waiting, 0, 1024));
  GPUNEX_RETURN_IF_ERROR(t.Int("login_max_failures", &o.login_max_failures, 1, 1000));
  GPUNEX_RETURN_IF_ERROR(t.Int("login_max_failures_ip", &o.login_max_failures_ip, 1, 100000));
  GPUNEX_RETURN_IF_ERROR(t.Int("login_window_minutes", &o.login_window_minutes, 1, 1440));
  GPUNEX_RETURN_IF_ERROR(t.Int("login_max_delay_s", &o.login_max_delay_s, 1, 3600));
  GPUNEX_RETURN_IF_ERROR(t.Int("argon2_opslimit", &o.argon2_opslimit, 1, 20));
  GPUNEX_RETURN_IF_ERROR(t.Int("argon2_memlimit_bytes", &o.argon2_memlimit_bytes, 8192, 4ll << 30));
  // At most a second, so that a revocation reaches every instance within one.
  int64_t cache_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(o.credential_cache_ttl).count();
  GPUNEX_RETURN_IF_ERROR(t.Int("credential_cache_ms", &cache_ms, 0, 1000));
  o.credential_cache_ttl = std::chrono::milliseconds(cache_ms);
  return std::any(settings);
}

constexpr std::string_view kExample = R"([auth]
session_ttl_hours = 168
session_idle_minutes = 720       # a session unused this long has ended (docs/security.md)
email_link_hours = 48           # how long an email verification link works
signups_per_address_per_hour = 20  # sign-ups from one client address, then 429
password_hash_concurrency = 1    # Argon2id hashes at once (64 MiB each)
password_hash_waiting = 4        # requests that may wait for one, then 429 Retry-After: 1
login_max_failures = 5           # failed log-ins per email within the window, then 429
login_max_failures_ip = 50       # per client address within the window
login_max_delay_s = 60           # failures elsewhere make an account wait at most this long
login_window_minutes = 15
argon2_opslimit = 2              # Argon2id cost (libsodium "interactive")
argon2_memlimit_bytes = 67108864
credential_cache_ms = 1000       # a checked session or API key is taken this long without the
                                 # database; a revocation on another instance waits this long
)";

}  // namespace

AccountsOptions AccountsOptionsFrom(const Config& c) {
  return c.Section<AuthSettings>("auth").accounts;
}

Module AccountsModule() {
  return Module{
      .name = "accounts",
      .migrations = AccountsMigrations,
      .config = ConfigSection{.name = "auth", .parse = Parse, .example = std::string(kExample)},
      .build = [](ModuleEnv& env) -> Status {
        const notify::NoticeSettings& notices = env.services.Get<notify::NoticeSettings>();
        notify::VerifierOptions verifier_options;
        verifier_options.public_url = notices.public_url;
        verifier_options.mail_domain = notices.mail_domain;
        verifier_options.link_lifetime =
            std::chrono::hours(env.config.Section<AuthSettings>("auth").email_link_hours);
        verifier_options.clock = &env.clock;
        verifier_options.wake_outbox = notices.wake_outbox;
        verifier_options.account_email = AccountEmail;
        GPUNEX_ASSIGN_OR_RETURN(auto verifier,
                                notify::EmailVerifier::Open(env.db, verifier_options));
        AccountsOptions options = AccountsOptionsFrom(env.config);
        options.verifier = &env.services.Own(std::move(verifier));
        env.services.Own(std::make_unique<Accounts>(env.db, options));
        return Status::Ok();
      },
      .routes = api::RegisterAuthRoutes,
  };
}

}  // namespace gpunex::platform::accounts
