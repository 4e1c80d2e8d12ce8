#include "platform/accounts/accounts_module.h"

#include "platform/accounts/accounts.h"
#include "platform/accounts/accounts_store.h"
#include "platform/accounts/directory.h"
#include "platform/api/api.h"
#include "platform/notify/notify.h"
#include "platform/notify/verify.h"

namespace gpunex::platform::accounts {

AccountsOptions AccountsOptionsFrom(const Config& c) {
  AccountsOptions o;
  o.session_ttl_hours = c.session_ttl_hours;
  o.session_idle_minutes = c.session_idle_minutes;
  o.password_hash_concurrency = c.password_hash_concurrency;
  o.password_hash_waiting = c.password_hash_waiting;
  o.login_max_failures = c.login_max_failures;
  o.login_max_failures_ip = c.login_max_failures_ip;
  o.login_max_delay_s = c.login_max_delay_s;
  o.login_window_minutes = c.login_window_minutes;
  o.argon2_opslimit = c.argon2_opslimit;
  o.argon2_memlimit_bytes = c.argon2_memlimit_bytes;
  return o;
}

Module AccountsModule() {
  return Module{
      .name = "accounts",
      .migrations = AccountsMigrations,
      .build = [](ModuleEnv& env) -> Status {
        const notify::NoticeSettings& notices = env.services.Get<notify::NoticeSettings>();
        notify::VerifierOptions verifier_options;
        verifier_options.public_url = notices.public_url;
        verifier_options.mail_domain = notices.mail_domain;
        verifier_options.link_lifetime = std::chrono::hours(env.config.email_link_hours);
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
