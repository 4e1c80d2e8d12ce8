// The records of payouts (PAY-1..5; docs/payouts.md): a provider's payout settings, the
// payout runs, one payout per provider and run with its attempts, and the bank files a
// run writes.
//
// A payout moves through
//   planned ──► submitted ──► confirmed
//      │  ▲          │
//      ▼  │          ▼
//   waiting_funds   failed ──(an admin's retry)──► planned
// "submitted" means the money may be on its way: a Solana transaction was signed and
// recorded (it may or may not have been sent), or a bank file holding the line was
// marked sent. Its ledger money moves available → in payment when it is planned, in
// payment → paid out when it is confirmed, and back to available when it fails.
//
// Thread-safety: value types.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/enum_names.h"
#include "common/money.h"
#include "common/time.h"

namespace gpunex::platform::payouts {

// How often a provider is paid (calendar.h has the dates).
enum class Schedule { kWeekly, kMonthly };
inline constexpr EnumNames<Schedule, 2> kScheduleNames{{{
    {Schedule::kWeekly, "weekly"},
    {Schedule::kMonthly, "monthly"},
}}};
inline std::string_view Name(Schedule s) { return kScheduleNames.Name(s); }

// Where a provider is paid: USDC on Solana, a SEPA transfer or a US ACH transfer.
enum class MethodKind { kSolana, kSepa, kAch };
inline constexpr EnumNames<MethodKind, 3> kMethodKindNames{{{
    {MethodKind::kSolana, "solana"},
    {MethodKind::kSepa, "sepa"},
    {MethodKind::kAch, "ach"},
}}};
inline std::string_view Name(MethodKind k) { return kMethodKindNames.Name(k); }

// A payout's state (the machine above).
enum class PayoutState { kPlanned, kWaitingFunds, kSubmitted, kConfirmed, kFailed };
inline constexpr EnumNames<PayoutState, 5> kPayoutStateNames{{{
    {PayoutState::kPlanned, "planned"},
    {PayoutState::kWaitingFunds, "waiting_funds"},
    {PayoutState::kSubmitted, "submitted"},
    {PayoutState::kConfirmed, "confirmed"},
    {PayoutState::kFailed, "failed"},
}}};
inline std::string_view Name(PayoutState s) { return kPayoutStateNames.Name(s); }

// Whether a payout may go from state `from` to state `to` (docs/payouts.md, the state
// machine): planned → waiting_funds | submitted; waiting_funds → submitted | planned;
// submitted → confirmed | failed | planned (signed again); failed → planned (a retry).
// Nothing leaves confirmed.
constexpr bool PayoutMayGo(PayoutState from, PayoutState to) {
  switch (from) {
    case PayoutState::kPlanned:
      return to == PayoutState::kWaitingFunds || to == PayoutState::kSubmitted;
    case PayoutState::kWaitingFunds:
      return to == PayoutState::kSubmitted || to == PayoutState::kPlanned;
    case PayoutState::kSubmitted:
      return to == PayoutState::kConfirmed || to == PayoutState::kFailed ||
             to == PayoutState::kPlanned;
    case PayoutState::kFailed:
      return to == PayoutState::kPlanned;
    case PayoutState::kConfirmed:
      return false;
  }
  return false;
}

// Attempt states (Solana): signed (recorded before it is sent), sent, landed (confirmed
// at the configured commitment), failed (landed with an error: it can never land again),
// expired (its blockhash is past its last valid block height and it never landed).
enum class AttemptState { kSigned, kSent, kLanded, kFailed, kExpired };
inline constexpr EnumNames<AttemptState, 5> kAttemptStateNames{{{
    {AttemptState::kSigned, "signed"},
    {AttemptState::kSent, "sent"},
    {AttemptState::kLanded, "landed"},
    {AttemptState::kFailed, "failed"},
    {AttemptState::kExpired, "expired"},
}}};
inline std::string_view Name(AttemptState s) { return kAttemptStateNames.Name(s); }
// Whether an attempt in state `s` can never land any more: a new one may be signed.
constexpr bool IsSpentAttemptState(AttemptState s) {
  return s == AttemptState::kFailed || s == AttemptState::kExpired;
}

// Where a provider is paid. Fields of the other kinds are empty.
struct Method {
  MethodKind kind = MethodKind::kSolana;
  // solana: the owner's wallet (base58); the token account is derived from it.
  std::string wallet;
  // sepa and ach: the account holder.
  std::string holder;
  // sepa: electronic IBAN, BIC ("" when not given).
  std::string iban, bic;
  // ach: ABA routing number, account number, "checking" | "savings".
  std::string routing_number, account_number, account_type;

  friend bool operator==(const Method&, const Method&) = default;
};

// What each method costs and needs (PAY-1: shown before the provider chooses).
struct MethodTerms {
  MethodKind kind = MethodKind::kSolana;
  std::string label;
  std::string currency;  // what the provider receives: USDC, EUR, USD
  Usdc minimum;          // a payout is made only from this amount up
  Usdc fee;              // taken from the payout
  std::string note;
  bool offered = true;  // false: this platform is not set up for it
};

struct Settings {
  std::string provider_id;
  Schedule schedule = Schedule::kWeekly;
  Usdc threshold;  // weekly: pay from this available balance up
  std::optional<Method> method;
  std::optional<Timestamp> changed_at;  // the method or its details last changed
  std::optional<Timestamp> hold_until;  // no payout to them before this
  Timestamp updated_at;
};

struct Attempt {
  int64_t n = 0;  // 1, 2, ...
  AttemptState state = AttemptState::kSigned;
  std::string signature;  // base58; "" for a bank payout
  std::string wire_base64;
  int64_t last_valid_block_height = 0;
  std::string error;
  Timestamp created_at, updated_at;
};

struct Payout {
  std::string id;
  std::string run_id;
  std::string provider_id;
  Schedule schedule = Schedule::kWeekly;
  std::string as_of;  // the run's date, YYYY-MM-DD
  PayoutState state = PayoutState::kPlanned;
  Usdc amount;  // taken from the available balance
  Usdc fee;     // of the method, part of amount
  Method method;
  std::string currency;                 // USDC | EUR | USD
  std::optional<int64_t> amount_minor;  // EUR or USD cents sent; nullopt for USDC
  std::optional<int64_t> fx_rate_ppm;   // EUR per USDC × 10^6
  std::optional<std::string> signature, bank_reference, failure, file_name;
  Timestamp created_at;
  std::optional<Timestamp> submitted_at, confirmed_at, failed_at;
  // The usage it pays is that credited in (covers_from, covers_until].
  Timestamp covers_from, covers_until;
  std::vector<Attempt> attempts;  // loaded on request, oldest first
  std::string provider_name;      // loaded on request (a run's detail, for admins)
};

// What reaches the provider: the amount less the method's fee (the schema keeps the fee
// below the amount).
inline Usdc NetOf(const Payout& p) { return Usdc::Micros(p.amount.micros() - p.fee.micros()); }

// Why a run did not pay a provider: the amount is below the threshold or the method's
// minimum (paid by a later run), the details changed lately (Settings::hold_until), or
// there is no method.
enum class SkipReason { kCarriedOver, kHeld, kNoMethod };
inline constexpr EnumNames<SkipReason, 3> kSkipReasonNames{{{
    {SkipReason::kCarriedOver, "carried_over"},
    {SkipReason::kHeld, "held"},
    {SkipReason::kNoMethod, "no_method"},
}}};
inline std::string_view Name(SkipReason r) { return kSkipReasonNames.Name(r); }

// A provider a run did not pay, and why.
struct Skip {
  std::string provider_id;
  SkipReason reason = SkipReason::kCarriedOver;
  Usdc available;
};

// A bank file's format: pain.001.001.09 (SEPA) or NACHA (ACH).
enum class FileKind { kPain001, kNacha };
inline constexpr EnumNames<FileKind, 2> kFileKindNames{{{
    {FileKind::kPain001, "pain.001"},
    {FileKind::kNacha, "nacha"},
}}};
inline std::string_view Name(FileKind k) { return kFileKindNames.Name(k); }

// A bank file is written (stored, and in files_dir), then marked sent by the operator.
enum class FileState { kWritten, kSent };
inline constexpr EnumNames<FileState, 2> kFileStateNames{{{
    {FileState::kWritten, "written"},
    {FileState::kSent, "sent"},
}}};
inline std::string_view Name(FileState s) { return kFileStateNames.Name(s); }

struct BankFile {
  std::string run_id;
  std::string name;
  FileKind kind = FileKind::kPain001;
  std::string currency;  // EUR | USD
  int64_t lines = 0;
  int64_t total_minor = 0;
  std::string sha256;  // hex of the content
  FileState state = FileState::kWritten;
  Timestamp created_at;
  std::optional<Timestamp> sent_at;
  std::string content;  // loaded on request
};

// A run's state: planning (made, not planned yet) → running (a payout of it is being
// made on Solana) | waiting (on funds, the operator or a bank) → done (every payout
// confirmed or failed). An admin's retry of a failed payout runs a done run again.
enum class RunState { kPlanning, kRunning, kWaiting, kDone };
inline constexpr EnumNames<RunState, 4> kRunStateNames{{{
    {RunState::kPlanning, "planning"},
    {RunState::kRunning, "running"},
    {RunState::kWaiting, "waiting"},
    {RunState::kDone, "done"},
}}};
inline std::string_view Name(RunState s) { return kRunStateNames.Name(s); }
// Whether a run may go from state `from` to state `to`: planning only to running (it is
// planned once); running and waiting to one another or to done; done back to running (a
// retry). Nothing goes back to planning.
constexpr bool RunMayGo(RunState from, RunState to) {
  switch (from) {
    case RunState::kPlanning:
      return to == RunState::kRunning;
    case RunState::kRunning:
      return to == RunState::kWaiting || to == RunState::kDone;
    case RunState::kWaiting:
      return to == RunState::kRunning || to == RunState::kDone;
    case RunState::kDone:
      return to == RunState::kRunning;
  }
  return false;
}

struct Run {
  std::string id;
  Schedule schedule = Schedule::kWeekly;
  std::string as_of;  // YYYY-MM-DD
  Timestamp cutoff;   // 00:00 UTC of as_of
  RunState state = RunState::kPlanning;
  std::optional<int64_t> eur_rate_ppm;
  Timestamp created_at;
  std::optional<Timestamp> finished_at;
  // Payouts by state and skips by reason, by their names (every one, 0 when none).
  std::map<std::string, int64_t> counts;
  Usdc total;
  std::vector<BankFile> files;
};

}  // namespace gpunex::platform::payouts
