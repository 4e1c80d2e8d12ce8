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

#include "common/money.h"
#include "common/time.h"

namespace gpunex::platform::payouts {

inline constexpr std::string_view kWeekly = "weekly";
inline constexpr std::string_view kMonthly = "monthly";

inline constexpr std::string_view kSolana = "solana";
inline constexpr std::string_view kSepa = "sepa";
inline constexpr std::string_view kAch = "ach";

// Payout states.
inline constexpr std::string_view kPlanned = "planned";
inline constexpr std::string_view kWaitingFunds = "waiting_funds";
inline constexpr std::string_view kSubmitted = "submitted";
inline constexpr std::string_view kConfirmed = "confirmed";
inline constexpr std::string_view kFailed = "failed";
// Whether a payout may go from state `from` to state `to` (docs/payouts.md, the state
// machine): planned → waiting_funds | submitted; waiting_funds → submitted | planned;
// submitted → confirmed | failed | planned (signed again); failed → planned (a retry).
// Nothing leaves confirmed.
constexpr bool PayoutMayGo(std::string_view from, std::string_view to) {
  if (from == kPlanned) return to == kWaitingFunds || to == kSubmitted;
  if (from == kWaitingFunds) return to == kSubmitted || to == kPlanned;
  if (from == kSubmitted) return to == kConfirmed || to == kFailed || to == kPlanned;
  if (from == kFailed) return to == kPlanned;
  return false;
}

// Attempt states (Solana): signed (recorded before it is sent), sent, landed (confirmed
// at the configured commitment), failed (landed with an error: it can never land again),
// expired (its blockhash is past its last valid block height and it never landed).
inline constexpr std::string_view kAttemptSigned = "signed";
inline constexpr std::string_view kAttemptSent = "sent";
inline constexpr std::string_view kAttemptLanded = "landed";
inline constexpr std::string_view kAttemptFailed = "failed";
inline constexpr std::string_view kAttemptExpired = "expired";

// Where a provider is paid. Fields of the other kinds are empty.
struct Method {
  std::string kind;  // kSolana | kSepa | kAch
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
  std::string kind;
  std::string label;
  std::string currency;  // what the provider receives: USDC, EUR, USD
  Usdc minimum;          // a payout is made only from this amount up
  Usdc fee;              // taken from the payout
  std::string note;
  bool offered = true;  // false: this platform is not set up for it
};

struct Settings {
  std::string provider_id;
  std::string schedule{kWeekly};
  Usdc threshold;  // weekly: pay from this available balance up
  std::optional<Method> method;
  std::optional<Timestamp> changed_at;  // the method or its details last changed
  std::optional<Timestamp> hold_until;  // no payout to them before this
  Timestamp updated_at;
};

struct Attempt {
  int64_t n = 0;  // 1, 2, ...
  std::string state;
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
  std::string schedule;
  std::string as_of;  // the run's date, YYYY-MM-DD
  std::string state;
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

// A provider a run did not pay, and why.
struct Skip {
  std::string provider_id;
  std::string reason;  // "carried_over" | "held" | "no_method"
  Usdc available;
};

struct BankFile {
  std::string run_id;
  std::string name;
  std::string kind;      // "pain.001" | "nacha"
  std::string currency;  // EUR | USD
  int64_t lines = 0;
  int64_t total_minor = 0;
  std::string sha256;  // hex of the content
  std::string state;   // "written" | "sent"
  Timestamp created_at;
  std::optional<Timestamp> sent_at;
  std::string content;  // loaded on request
};

inline constexpr std::string_view kRunPlanning = "planning";  // made, not planned yet
inline constexpr std::string_view kRunRunning = "running";
inline constexpr std::string_view kRunWaiting = "waiting";  // on funds, the operator or a bank
inline constexpr std::string_view kRunDone = "done";

struct Run {
  std::string id;
  std::string schedule;
  std::string as_of;  // YYYY-MM-DD
  Timestamp cutoff;   // 00:00 UTC of as_of
  std::string state;
  std::optional<int64_t> eur_rate_ppm;
  Timestamp created_at;
  std::optional<Timestamp> finished_at;
  std::map<std::string, int64_t> counts;  // payouts by state, skips by reason
  Usdc total;
  std::vector<BankFile> files;
};

}  // namespace gpunex::platform::payouts
