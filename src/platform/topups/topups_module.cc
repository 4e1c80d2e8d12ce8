#include "platform/topups/topups_module.h"

#include "platform/api/api.h"
#include "platform/notify/notify.h"
#include "platform/solana/solana_module.h"
#include "platform/topups/topups.h"
#include "platform/topups/topups_store.h"

namespace gpunex::platform::topups {

namespace {

ConfigSection Section() {
  return ConfigSection{
      .name = "topups",
      .parse = [](ConfigTable& t, const EnvGetter&) -> StatusOr<std::any> {
        constexpr int64_t kMaxMicro = 1'000'000'000'000;  // 1,000,000 USDC
        TopupsOptions o;
        GPUNEX_RETURN_IF_ERROR(t.Int("ttl_s", &o.ttl_s, 60, 7ll * 24 * 3600));
        GPUNEX_RETURN_IF_ERROR(t.Int("watch_s", &o.watch_s, 60, 90ll * 24 * 3600));
        GPUNEX_RETURN_IF_ERROR(t.Int("expired_check_s", &o.expired_check_s, 1, 86'400));
        GPUNEX_RETURN_IF_ERROR(t.Int("loop_ms", &o.loop_ms, 100, 3'600'000));
        int64_t min = o.min.micros(), max = o.max.micros();
        GPUNEX_RETURN_IF_ERROR(t.Int("min_micro", &min, 1, kMaxMicro));
        GPUNEX_RETURN_IF_ERROR(t.Int("max_micro", &max, 1, kMaxMicro));
        o.min = Usdc::Micros(min);
        o.max = Usdc::Micros(max);
        GPUNEX_RETURN_IF_ERROR(
            t.Int("max_pending_per_customer", &o.max_pending_per_customer, 1, 1000));
        GPUNEX_RETURN_IF_ERROR(t.Str("label", &o.label));
        if (min > max) return FieldError("topups.min_micro", "must not exceed max_micro");
        if (o.watch_s < o.ttl_s) return FieldError("topups.watch_s", "must be at least ttl_s");
        return std::any(o);
      },
      .example =
          R"([topups]                         # PAY-6: customers top up in USDC (Solana Pay); docs/payouts.md
ttl_s = 3600                     # a payment request is shown this long
watch_s = 604800                 # ... and a late payment still credited this long
expired_check_s = 300            # how often expired requests are looked at meanwhile
loop_ms = 2000                   # how often pending requests are looked for on chain
min_micro = 1000000              # 1 USDC
max_micro = 100000000000         # 100,000 USDC
max_pending_per_customer = 20
label = "gpunex"                 # the payee's name in the payer's wallet
)"};
}

}  // namespace

Module TopupsModule() {
  return Module{
      .name = "topups",
      .migrations = TopupsMigrations,
      .config = Section(),
      .build = [](ModuleEnv& env) -> Status {
        const solana::PlatformWallet& wallet = env.services.Get<solana::PlatformWallet>();
        TopupsOptions o = env.config.Section<TopupsOptions>("topups");
        // Paid to the platform's wallet.
        o.mint = wallet.usdc_mint;
        o.recipient = wallet.key ? wallet.key->public_key : solana::Pubkey{};
        o.commitment = wallet.commitment;
        o.clock = &env.clock;
        o.notices = env.services.Get<notify::NoticeSettings>();
        env.services.Own(std::make_unique<Topups>(env.db, wallet.rpc.get(), o));
        return Status::Ok();
      },
      .routes = api::RegisterTopupRoutes,
      .schedule = ScheduleService<Topups>,
  };
}

}  // namespace gpunex::platform::topups
