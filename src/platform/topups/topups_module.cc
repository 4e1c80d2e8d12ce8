#include "platform/topups/topups_module.h"

#include "platform/api/api.h"
#include "platform/notify/notify.h"
#include "platform/solana/solana_module.h"
#include "platform/topups/topups.h"
#include "platform/topups/topups_store.h"

namespace gpunex::platform::topups {

Module TopupsModule() {
  return Module{
      .name = "topups",
      .migrations = TopupsMigrations,
      .build = [](ModuleEnv& env) -> Status {
        const Config& c = env.config;
        const solana::PlatformWallet& wallet = env.services.Get<solana::PlatformWallet>();
        // Paid to the platform's wallet.
        env.services.Own(std::make_unique<Topups>(
            env.db, wallet.rpc.get(),
            TopupsOptions{.mint = wallet.usdc_mint,
                          .recipient = wallet.key ? wallet.key->public_key : solana::Pubkey{},
                          .commitment = c.solana_commitment,
                          .ttl_s = c.topups_ttl_s,
                          .watch_s = c.topups_watch_s,
                          .expired_check_s = c.topups_expired_check_s,
                          .loop_ms = c.topups_loop_ms,
                          .min = Usdc::Micros(c.topups_min_micro),
                          .max = Usdc::Micros(c.topups_max_micro),
                          .max_pending_per_customer = c.topups_max_pending_per_customer,
                          .label = c.topups_label,
                          .clock = &env.clock,
                          .notices = env.services.Get<notify::NoticeSettings>()}));
        return Status::Ok();
      },
      .routes = api::RegisterTopupRoutes,
      .schedule = ScheduleService<Topups>,
  };
}

}  // namespace gpunex::platform::topups
