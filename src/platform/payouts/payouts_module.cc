#include "platform/payouts/payouts_module.h"

#include <atomic>
#include <csignal>

#include "common/business_days.h"
#include "common/log.h"
#include "platform/accounts/accounts.h"
#include "platform/api/api.h"
#include "platform/notify/notify.h"
#include "platform/payouts/payouts.h"
#include "platform/payouts/payouts_store.h"
#include "platform/solana/solana_module.h"

namespace gpunex::platform::payouts {

namespace {

// Fault injection for the crash tests of payouts, named by GPUNEX_TEST_CRASH_AT
// ("payout.after_sign" or "payout.after_sign:3" for its third pass): gpunexd kills
// itself with SIGKILL there, as a crash at that step would.
std::function<Status(std::string_view)> CrashPointsFromEnv() {
  const char* spec = std::getenv("GPUNEX_TEST_CRASH_AT");
  if (!spec || !*spec) return nullptr;
  std::string point = spec;
  int nth = 1;
  if (auto colon = point.find(':'); colon != std::string::npos) {
    nth = std::max(1, std::atoi(point.c_str() + colon + 1));
    point.resize(colon);
  }
  LogWarn("faults.test", {{"message", "gpunexd kills itself at a named step: never in production"},
                          {"point", point}});
  auto seen = std::make_shared<std::atomic<int>>(0);
  return [point, nth, seen](std::string_view at) -> Status {
    if (at == point && ++*seen >= nth) {
      LogWarn("faults.crash", {{"point", point}});
      std::raise(SIGKILL);
    }
    return Status::Ok();
  };
}

StatusOr<PayoutsOptions> OptionsFrom(const Config& c) {
  PayoutsOptions o;
  o.default_threshold = Usdc::Micros(c.payouts_threshold_micro);
  o.min_threshold = std::min(o.min_threshold, o.default_threshold);
  o.hold_after_change_s = c.payouts_hold_after_change_s;
  o.automatic_runs = c.payouts_automatic_runs;
  o.loop_ms = c.payouts_loop_ms;
  o.batch = c.payouts_batch;
  o.parallel_sends = c.payouts_parallel_sends;
  o.files_dir = c.payout_files_dir;
  if (!c.payouts_eur_rate.empty()) {
    auto rate = Usdc::Parse(c.payouts_eur_rate);
    if (!rate || !rate->is_positive()) {
      return FieldError("payouts.eur_rate", "must be a decimal EUR per USDC such as \"0.92\"");
    }
    o.default_eur_rate_ppm = rate->micros();
  }
  o.solana.minimum = Usdc::Micros(c.payouts_solana_min_micro);
  o.solana.fee = Usdc::Micros(c.payouts_solana_fee_micro);
  o.sepa.minimum = Usdc::Micros(c.payouts_sepa_min_micro);
  o.sepa.fee = Usdc::Micros(c.payouts_sepa_fee_micro);
  o.ach.minimum = Usdc::Micros(c.payouts_ach_min_micro);
  o.ach.fee = Usdc::Micros(c.payouts_ach_fee_micro);
  o.solana_chain.commitment = c.solana_commitment;
  o.sepa_originator = {c.payouts_sepa_name, c.payouts_sepa_iban, c.payouts_sepa_bic};
  o.ach_originator = {
      c.payouts_ach_destination_routing, c.payouts_ach_destination_name, c.payouts_ach_origin,
      c.payouts_ach_origin_name,         c.payouts_ach_company_name,     c.payouts_ach_company_id,
      c.payouts_ach_odfi_routing};
  o.fault = CrashPointsFromEnv();
  return o;
}

Status Build(ModuleEnv& env) {
  GPUNEX_ASSIGN_OR_RETURN(PayoutsOptions o, OptionsFrom(env.config));
  const solana::PlatformWallet& wallet = env.services.Get<solana::PlatformWallet>();
  o.solana_chain.mint = wallet.usdc_mint;
  o.calendar = env.services.Get<BusinessCalendar>();
  o.notices = env.services.Get<notify::NoticeSettings>();
  o.clock = &env.clock;
  env.services.Own(std::make_unique<Payouts>(env.db, env.services.Get<accounts::Accounts>(),
                                             wallet.rpc.get(), wallet.key ? &*wallet.key : nullptr,
                                             o));
  return Status::Ok();
}

}  // namespace

Module PayoutsModule() {
  return Module{
      .name = "payouts",
      .migrations = PayoutsMigrations,
      .build = Build,
      .routes = api::RegisterPayoutRoutes,
      .schedule = ScheduleService<Payouts>,
  };
}

}  // namespace gpunex::platform::payouts
