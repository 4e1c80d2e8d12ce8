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

// [payouts] and GPUNEX_PAYOUT_FILES_DIR, as the options of Payouts.
StatusOr<std::any> Parse(ConfigTable& t, const EnvGetter& env) {
  constexpr int64_t kMaxMicro = 1'000'000'000'000;  // 1,000,000 USDC
  PayoutsOptions o;
  auto amount = [&](const char* key, Usdc* out, int64_t min) -> Status {
    int64_t micros = out->micros();
    GPUNEX_RETURN_IF_ERROR(t.Int(key, &micros, min, kMaxMicro));
    *out = Usdc::Micros(micros);
    return Status::Ok();
  };
  GPUNEX_RETURN_IF_ERROR(amount("threshold_micro", &o.default_threshold, 1));
  o.min_threshold = std::min(o.min_threshold, o.default_threshold);
  GPUNEX_RETURN_IF_ERROR(t.Int("hold_after_change_s", &o.hold_after_change_s, 0, 30ll * 24 * 3600));
  GPUNEX_RETURN_IF_ERROR(t.Bool("automatic_runs", &o.automatic_runs));
  GPUNEX_RETURN_IF_ERROR(t.Int("loop_ms", &o.loop_ms, 10, 3'600'000));
  GPUNEX_RETURN_IF_ERROR(t.Int("batch", &o.batch, 1, 1000));
  GPUNEX_RETURN_IF_ERROR(t.Int("parallel_sends", &o.parallel_sends, 1, 64));
  std::string eur_rate;
  GPUNEX_RETURN_IF_ERROR(t.Str("eur_rate", &eur_rate));
  if (!eur_rate.empty()) {
    auto rate = Usdc::Parse(eur_rate);
    if (!rate || !rate->is_positive()) {
      return FieldError("payouts.eur_rate", "must be a decimal EUR per USDC such as \"0.92\"");
    }
    o.default_eur_rate_ppm = rate->micros();
  }
  GPUNEX_RETURN_IF_ERROR(t.Str("files_dir", &o.files_dir));
  if (auto v = env("GPUNEX_PAYOUT_FILES_DIR")) o.files_dir = *v;
  for (MethodTerms* m : {&o.solana, &o.sepa, &o.ach}) {
    const std::string kind(Name(m->kind));
    GPUNEX_RETURN_IF_ERROR(amount((kind + "_min_micro").c_str(), &m->minimum, 1));
    GPUNEX_RETURN_IF_ERROR(amount((kind + "_fee_micro").c_str(), &m->fee, 0));
    if (m->fee >= m->minimum) {
      return FieldError("payouts." + kind + "_fee_micro", "must be less than the minimum");
    }
  }
  SepaOriginator& sepa = o.sepa_originator;
  AchOriginator& ach = o.ach_originator;
  for (auto [key, field] :
       {std::pair{"sepa_name", &sepa.name}, std::pair{"sepa_iban", &sepa.iban},
        std::pair{"sepa_bic", &sepa.bic},
        std::pair{"ach_destination_routing", &ach.destination_routing},
        std::pair{"ach_destination_name", &ach.destination_name},
        std::pair{"ach_origin", &ach.origin}, std::pair{"ach_origin_name", &ach.origin_name},
        std::pair{"ach_company_name", &ach.company_name},
        std::pair{"ach_company_id", &ach.company_id},
        std::pair{"ach_odfi_routing", &ach.odfi_routing}}) {
    GPUNEX_RETURN_IF_ERROR(t.Str(key, field));
  }
  return std::any(o);
}

constexpr std::string_view kExample =
    R"([payouts]                        # PAY-1..5; docs/payouts.md
threshold_micro = 50000000       # weekly: pay from 50 USDC available (providers may raise it)
hold_after_change_s = 172800     # no payout to new details for 48 h after a change
automatic_runs = true            # weekly runs on Mondays, monthly on first business days
loop_ms = 1000                   # how often runs are carried forward
batch = 100                      # Solana payouts signed per blockhash
parallel_sends = 8               # transactions sent at once
eur_rate = ""                    # EUR per USDC for scheduled SEPA runs; "" : set per run
files_dir = ""                   # bank files (GPUNEX_PAYOUT_FILES_DIR); "" : <data_dir>/payout-files
solana_min_micro = 1000000       # each method's minimum payout and fee, shown to providers
solana_fee_micro = 0
sepa_min_micro = 10000000
sepa_fee_micro = 0
ach_min_micro = 10000000
ach_fee_micro = 0
sepa_name = ""                   # the platform's account the SEPA payouts leave from;
sepa_iban = ""                   # empty: SEPA payouts are not offered
sepa_bic = ""
ach_destination_routing = ""     # the bank the NACHA files go to (9 digits);
ach_destination_name = ""        # empty: ACH payouts are not offered
ach_origin = ""                  # immediate origin as the bank assigned it (10 characters)
ach_origin_name = ""
ach_company_name = ""
ach_company_id = ""
ach_odfi_routing = ""            # the originating bank's routing number
)";

Status Build(ModuleEnv& env) {
  PayoutsOptions o = env.config.Section<PayoutsOptions>("payouts");
  if (o.files_dir.empty()) o.files_dir = env.config.data_dir + "/payout-files";
  o.fault = CrashPointsFromEnv();
  const solana::PlatformWallet& wallet = env.services.Get<solana::PlatformWallet>();
  o.solana_chain.mint = wallet.usdc_mint;
  o.solana_chain.commitment = wallet.commitment;
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
      .config = ConfigSection{.name = "payouts", .parse = Parse, .example = std::string(kExample)},
      .build = Build,
      .routes = api::RegisterPayoutRoutes,
      .schedule = ScheduleService<Payouts>,
  };
}

}  // namespace gpunex::platform::payouts
