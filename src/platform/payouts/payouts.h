// Earnings and payouts (ERN-1, PAY-1..5; docs/payouts.md).
//
// Earnings are read from the ledger in real time: a provider's usage per GPU, model or
// day, what is pending (inside the 24 h hold), available, in payment and paid out.
//
// Payout settings: a schedule (weekly or monthly), a weekly threshold, and a method:
// USDC on Solana to a wallet (its associated token account for the configured mint is
// derived; the platform's own wallet, the mint and program ids are refused), a SEPA
// transfer to an IBAN, or a US ACH transfer. Changing the method or its details needs the
// password (whether a request changes it is decided in its write transaction), is
// announced by email, and holds payouts to the new details for hold_after_change_s (48 h:
// account-takeover protection).
//
// A payout run is made for a schedule and a date (SPEC §13a). It plans once, in one
// transaction: for every provider of the schedule whose available balance reaches the
// threshold (weekly) or 1 USDC (monthly) and the method's minimum, a payout row and a
// ledger transfer available → in payment; the others are recorded as skipped (carried
// over, held after a change, no method). Then each payout is carried out:
//   - Solana: a TransferChecked of USDC from the platform's token account to the
//     recipient's associated token account (created when missing with CreateIdempotent),
//     with a Memo of the payout id, signed by the platform's key. The signed transaction
//     is recorded (an attempt) before it is sent; it is resent as it is until it lands or
//     its blockhash can no longer land (the block height is past its last valid block
//     height, read before its status, and its status is still unknown). Only then is a new
//     attempt signed, so a payout never lands twice. Confirmed at the configured
//     commitment, it moves in payment → paid out.
//   - Bank: one pain.001.001.09 file (SEPA, EUR at the run's rate) and one NACHA file
//     (ACH, USD) per run, validated before release, stored and written to files_dir; the
//     operator marks a file sent (its lines are submitted) and each line paid or failed
//     from the bank's answer.
// A failed payout returns its money to the available balance; an admin may retry it.
// Every step is a transaction of its own, and a run resumes where it stopped: after a
// crash at any point the next Advance carries on without paying anyone twice.
//
// One run is carried out at a time across gpunexd instances (store::Database::TryLock).
//
// Authorization: a provider reads and sets only their own earnings, settings and
// payouts; only admins start runs, read files and mark bank results.
//
// Thread-safety: Payouts is safe to share.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/background.h"
#include "common/business_days.h"
#include "common/money.h"
#include "common/paging.h"
#include "common/status.h"
#include "common/thread_annotations.h"
#include "common/time.h"
#include "platform/accounts/accounts.h"
#include "platform/notify/notify.h"
#include "platform/payouts/payout.h"
#include "platform/solana/keypair.h"
#include "platform/solana/rpc.h"
#include "platform/store/db.h"

namespace gpunex::platform::payouts {

// The platform's side of a SEPA file: the account the money leaves from.
struct SepaOriginator {
  std::string name, iban, bic;
  bool configured() const { return !name.empty() && !iban.empty(); }
};

// The platform's side of a NACHA file.
struct AchOriginator {
  std::string destination_routing;  // the bank the file goes to (9 digits)
  std::string destination_name;
  std::string origin;  // 10 characters: " " + 9-digit routing, or "1" + tax id
  std::string origin_name;
  std::string company_name;
  std::string company_id;    // 10 characters
  std::string odfi_routing;  // the originating bank's routing number (9 digits)
  bool configured() const { return !destination_routing.empty() && !company_id.empty(); }
};

struct SolanaOptions {
  solana::Pubkey mint{};  // USDC
  uint8_t decimals = 6;
  std::string commitment = "confirmed";
  int64_t ata_rent_lamports = 2'039'280;  // rent of a new token account (165 bytes)
  int64_t fee_lamports = 5'000;           // one signature
};

struct PayoutsOptions {
  Usdc default_threshold = Usdc::Micros(50'000'000);   // weekly (§13a)
  Usdc min_threshold = Usdc::Micros(10'000'000);       // what a provider may set
  Usdc max_threshold = Usdc::Micros(100'000'000'000);  // 100,000 USDC
  Usdc monthly_minimum = Usdc::Micros(1'000'000);      // monthly (§13a)
  int64_t hold_after_change_s = 48 * 3600;
  MethodTerms solana{MethodKind::kSolana,
                     "USDC on Solana",
                     "USDC",
                     Usdc::Micros(1'000'000),
                     Usdc::Zero(),
                     "Sent to your wallet's USDC token account; the platform pays the network fee.",
                     true};
  MethodTerms sepa{MethodKind::kSepa,
                   "SEPA bank transfer",
                   "EUR",
                   Usdc::Micros(10'000'000),
                   Usdc::Zero(),
                   "Converted to EUR at the run's rate; arrives in 1–2 business days.",
                   true};
  MethodTerms ach{MethodKind::kAch,
                  "US ACH transfer",
                  "USD",
                  Usdc::Micros(10'000'000),
                  Usdc::Zero(),
                  "Paid in USD 1:1; arrives in 1–3 business days.",
                  true};
  SolanaOptions solana_chain;
  SepaOriginator sepa_originator;
  AchOriginator ach_originator;
  std::string files_dir;  // where bank files are written; "" keeps them in the database only
  std::optional<int64_t> default_eur_rate_ppm;  // for scheduled runs
  bool automatic_runs = true;                   // start the scheduled runs by themselves
  int max_attempts = 5;                         // Solana attempts that landed with an error
  int parallel_sends = 8;                       // sendTransaction calls at once
  int64_t resend_after_ms = 2000;               // a sent transaction still unknown is resent
  int batch = 100;                              // payouts signed per blockhash and transaction
  int loop_ms = 1000;
  BusinessCalendar calendar;
  notify::NoticeSettings notices;
  const Clock* clock = &SystemClock();
  // Fault injection (tests): called at each named step of a run ("payout.after_plan",
  // "payout.after_sign", "payout.after_send", "payout.before_confirm",
  // "payout.after_confirm", "payout.file_written"); a non-OK status stops the step there,
  // as a crash would. Empty: no faults.
  std::function<Status(std::string_view point)> fault;
};

// --- settings

struct SettingsView {
  Settings settings;
  std::string token_account;  // Solana: the derived associated token account
  std::vector<MethodTerms> methods;
  struct Next {
    std::string date;
    Schedule schedule = Schedule::kWeekly;
    Usdc estimate;
    bool eligible = false;
    std::string reason;
  } next;
};

struct SettingsUpdate {
  // As the client gave it: a name of kScheduleNames, or the field error says what it must be.
  std::optional<std::string> schedule;
  std::optional<int64_t> threshold_micro;
  std::optional<Method> method;  // account_number in full for ACH
  std::string password;
  // Only the field errors of what is given (kValidationFailed, maybe with none), nothing
  // written: for a request whose other fields did not decode, so that every bad field is
  // named at once.
  bool validate_only = false;
};

// --- earnings

struct EarningsRow {
  std::string key, label;
  std::string machine_id, gpu_id, gpu_model, day;  // as the grouping has them
  int64_t rentals = 0;
  int64_t gpu_seconds = 0;
  Usdc gross, commission, refunds, net;
};

struct EarningsTotals {
  Usdc pending, available, in_payment, paid, period;
};

// How an earnings report groups its rows: per GPU, per GPU model or per UTC day.
enum class EarningsGroup { kGpu, kModel, kDay };
inline constexpr EnumNames<EarningsGroup, 3> kEarningsGroupNames{{{
    {EarningsGroup::kGpu, "gpu"},
    {EarningsGroup::kModel, "model"},
    {EarningsGroup::kDay, "day"},
}}};
inline std::string_view Name(EarningsGroup g) { return kEarningsGroupNames.Name(g); }

struct EarningsReport {
  EarningsTotals totals;
  Schedule schedule = Schedule::kWeekly;
  Timestamp period_from, period_to;
  Timestamp from, to;
  EarningsGroup group = EarningsGroup::kModel;
  std::vector<EarningsRow> rows;
};

struct StatementLine {
  std::string rental_id, gpu_model;
  int64_t gpus = 0, gpu_seconds = 0;
  Usdc gross, commission, refunds, net;
};

struct MonthlyStatement {
  std::string month;  // YYYY-MM
  int64_t rentals = 0, gpu_seconds = 0;
  Usdc gross, commission, refunds, net, paid;
  std::vector<StatementLine> lines;
  std::vector<Payout> payouts;
};

// A payout's lines: the rentals whose earnings it pays.
struct PayoutLine {
  std::string rental_id, gpu_model;
  Usdc net;
};

// --- admin

struct RunRequest {
  std::string as_of;     // YYYY-MM-DD
  std::string schedule;  // as the client gave it, as SettingsUpdate's
  std::optional<int64_t> eur_rate_ppm;
  bool validate_only = false;  // as SettingsUpdate's
};

struct RunDetail {
  Run run;
  std::vector<Payout> payouts;
  std::vector<Skip> skips;
};

// What the bank answered for a line of a file marked sent: it paid it, or returned it.
enum class BankOutcome { kPaid, kFailed };
inline constexpr EnumNames<BankOutcome, 2> kBankOutcomeNames{{{
    {BankOutcome::kPaid, "paid"},
    {BankOutcome::kFailed, "failed"},
}}};
inline std::string_view Name(BankOutcome o) { return kBankOutcomeNames.Name(o); }

struct BankResult {
  BankOutcome state = BankOutcome::kPaid;
  std::string bank_reference;
  std::string reason;
};

struct WalletStatus {
  bool configured = false;
  std::string public_key, token_account, mint;
  int64_t usdc_micro = 0, sol_lamports = 0;
  int64_t needed_micro = 0, needed_lamports = 0;  // for the payouts waiting
  bool short_of_funds = false;
  std::string error;  // the RPC's, when it could not be read
};

class Payouts {
 public:
  // `rpc` and `key` may be null: Solana payouts are then not offered. They must outlive
  // this.
  Payouts(store::Database& db, accounts::Accounts& accounts, solana::Rpc* rpc,
          const solana::Keypair* key, PayoutsOptions options);
  Payouts(const Payouts&) = delete;
  Payouts& operator=(const Payouts&) = delete;

  // Settings (providers). Field errors name "schedule", "threshold_micro", "method.kind",
  // "method.wallet", "method.iban", ..., and "password".
  StatusOr<SettingsView> GetSettings(const accounts::Principal& p);
  StatusOr<SettingsView> PutSettings(const accounts::Principal& p, const SettingsUpdate& u);
  const PayoutsOptions& options() const { return options_; }

  // Earnings in [from, to) grouped by `group`, a name of kEarningsGroupNames (a field
  // error on "group" otherwise).
  StatusOr<EarningsReport> Earnings(const accounts::Principal& p, Timestamp from, Timestamp to,
                                    const std::string& group);
  StatusOr<MonthlyStatement> Statement(const accounts::Principal& p, const std::string& month);
  StatusOr<Page<Payout>> ProviderPayouts(const accounts::Principal& p, const PageRequest& page);
  StatusOr<std::pair<Payout, std::vector<PayoutLine>>> ProviderPayout(const accounts::Principal& p,
                                                                      const std::string& id);

  // Admins. StartRun plans the run (or returns the one made for that schedule and date;
  // a rate given for a run without one is kept) and leaves the rest to Advance.
  StatusOr<Run> StartRun(const accounts::Principal& p, const RunRequest& req);
  StatusOr<std::vector<Run>> Runs(const accounts::Principal& p);
  StatusOr<RunDetail> GetRun(const accounts::Principal& p, const std::string& id);
  StatusOr<BankFile> File(const accounts::Principal& p, const std::string& run_id,
                          const std::string& name);
  StatusOr<Run> MarkFileSent(const accounts::Principal& p, const std::string& run_id,
                             const std::string& name);
  StatusOr<Payout> SetBankResult(const accounts::Principal& p, const std::string& payout_id,
                                 const BankResult& result);
  StatusOr<Payout> Retry(const accounts::Principal& p, const std::string& payout_id);
  StatusOr<WalletStatus> Wallet(const accounts::Principal& p);

  // The engine, also driven by tests. Creates and plans the scheduled runs that are due
  // (with automatic_runs) and carries every unfinished run forward as far as it can
  // now. Returns the number of payouts that changed state.
  StatusOr<int64_t> Tick();
  // Carries one run forward (the run lock must be held by the caller: Tick takes it).
  StatusOr<int64_t> Advance(const std::string& run_id);

  // Schedules Tick() every loop_ms.
  void ScheduleOn(Background& background);

 private:
  struct Plan;
  StatusOr<Run> CreateAndPlan(const RunRequest& req);
  StatusOr<int64_t> AdvanceSolana(const Run& run);
  StatusOr<int64_t> ConfirmSolana(const Run& run);
  StatusOr<int64_t> SignAndSendSolana(const Run& run);
  StatusOr<int64_t> WriteBankFiles(const Run& run);
  Status RewriteMissingFiles(const Run& run);
  Status FinishIfDone(const Run& run);
  Status Fault(std::string_view point) const;
  Status Confirm(store::Tx& tx, Timestamp now, Payout& po, const std::string& reference);
  Status Fail(store::Tx& tx, Timestamp now, Payout& po, const std::string& why);
  StatusOr<Method> ValidateMethod(const Method& m) const;
  Status RefuseNonRecipient(const solana::Pubkey& wallet, const std::string& field) const;
  // PutSettings' write transaction. Sets *undecided, and writes nothing, when `method`
  // changes the stored one and `password_checked` is false.
  Status WriteSettings(const accounts::Principal& p, const SettingsUpdate& u,
                       std::optional<Schedule> schedule, const std::optional<Method>& method,
                       bool password_checked, bool* undecided);
  std::vector<MethodTerms> Terms() const;
  const MethodTerms& TermsOf(MethodKind kind) const;

  store::Database& db_;
  accounts::Accounts& accounts_;
  solana::Rpc* const rpc_;
  const solana::Keypair* const key_;
  const PayoutsOptions options_;
  solana::Pubkey platform_token_account_{};

  // The run lock, kept from one Tick to the next while it holds (a PostgreSQL lock costs a
  // connection of its own); taken again when lost.
  Mutex tick_mu_;
  std::unique_ptr<store::Lock> run_lock_ GUARDED_BY(tick_mu_);
  TaskHandle ticks_;  // set by ScheduleOn, before the background work starts
};

}  // namespace gpunex::platform::payouts
