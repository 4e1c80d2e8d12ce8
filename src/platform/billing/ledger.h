// The ledger (LED-3): double-entry and append-only, after TigerBeetle's accounts and
// transfers.
//
// An account holds money for one party: a customer's prepaid balance, a provider's
// earnings (pending, available, in payment, paid out), the platform's commission, and the
// outside world (operator credits; USDC and bank money in the payouts issue). Its balance
// is what it holds: a transfer of `amount` from A to B takes amount from A's balance and
// adds it to B's, so the balances of all accounts always sum to zero. Accounts of the
// outside world go below zero (that is the money that came in); every other account is
// flagged "must not go negative" and a transfer that would take it below zero fails.
//
// A transfer moves a positive amount from one account to another, has a caller-chosen id
// that is unique for all time, a kind, its rental or its cause (a reference), and a time;
// it is never changed or removed, and a correction is a new transfer. Posting a transfer
// whose id exists already is a no-op (a retried write after a crash or a lost answer does
// not move the money twice); posting a different transfer under an existing id fails.
// Balances are updated in the transaction that writes the transfers.
//
// Thread-safety: functions over the caller's transaction.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/money.h"
#include "common/paging.h"
#include "common/status.h"
#include "common/time.h"
#include "platform/store/db.h"

namespace gpunex::platform::billing {

// --- accounts: "<kind>:<owner>", or "<kind>" for the platform's and the world's.
std::string CustomerAccount(std::string_view user_id);
std::string ProviderPendingAccount(std::string_view provider_id);
std::string ProviderAvailableAccount(std::string_view provider_id);
std::string ProviderInPaymentAccount(std::string_view provider_id);
std::string ProviderPaidAccount(std::string_view provider_id);
inline constexpr std::string_view kPlatformCommission = "platform_commission";
inline constexpr std::string_view kWorldOperator = "world_operator";  // operator credits

// Whether an account of this id may go below zero (the outside world's).
bool MayGoNegative(std::string_view account);

// --- transfer kinds
inline constexpr std::string_view kOperatorCredit = "operator_credit";  // world → customer
// (billing_store.cc's partial indexes name usage_provider and refund_provider.)
inline constexpr std::string_view kUsageProvider = "usage_provider";    // customer → pending
inline constexpr std::string_view kUsageFee = "usage_fee";              // customer → platform
inline constexpr std::string_view kRefundProvider = "refund_provider";  // pending → customer
inline constexpr std::string_view kRefundFee = "refund_fee";            // platform → customer
inline constexpr std::string_view kEarningsAvailable = "earnings_available";  // pending → available

struct Transfer {
  std::string id;  // unique for all time; the caller chooses it
  std::string kind;
  std::string debit_account;   // money leaves
  std::string credit_account;  // money arrives
  Usdc amount;                 // > 0
  std::optional<std::string> rental_id;
  std::string reference;  // the cause in words ("wire 2026-11-30 #4411"), may be ""
  Timestamp at;
};

inline constexpr size_t kMaxReference = 200;

// Writes `transfers` in the caller's transaction and updates the balances of their
// accounts (created on first use). A transfer whose id exists with the same fields is
// skipped. Returns how many were new.
// Fails with kInvalidArgument for an amount <= 0 or a transfer from an account to itself;
// with kAlreadyExists when an id exists with other fields; with kFailedPrecondition
// naming the account when a balance that must not go negative would (the caller's
// transaction must then roll back: nothing it wrote may commit).
StatusOr<int64_t> Post(store::Tx& tx, const std::vector<Transfer>& transfers);

// The transfer with this id; nullopt when there is none.
StatusOr<std::optional<Transfer>> FindTransfer(store::Tx& tx, const std::string& id);

// The account's balance; zero for an account never used.
StatusOr<Usdc> Balance(store::Tx& tx, std::string_view account);

// The balances of `accounts` (zero for an account never used), by account.
StatusOr<std::map<std::string, Usdc>> Balances(store::Tx& tx,
                                               const std::vector<std::string>& accounts);

// The transfers into or out of `account` with from <= at < to, newest first.
struct Entry {
  Transfer transfer;
  Usdc signed_amount;  // + into the account, − out of it
  Usdc balance_after;  // the account's balance once this and every older transfer moved
};
StatusOr<Page<Entry>> Statement(store::Tx& tx, std::string_view account, Timestamp from,
                                Timestamp to, const PageRequest& page);

// What the usage kinds (kUsageProvider, kUsageFee, kRefundProvider, kRefundFee) moved
// for each of `rental_ids` with from <= at < to: one sum per rental, kind and, when
// `by_day`, UTC day; in no particular order. For the providers' earnings (payouts/),
// which ask the rentals folder which rentals are a provider's.
struct RentalUsageSum {
  std::string rental_id;
  std::string kind;
  int64_t day = 0;  // days since the epoch when by day; else 0
  Usdc amount;
};
StatusOr<std::vector<RentalUsageSum>> UsageOfRentals(store::Tx& tx,
                                                     const std::vector<std::string>& rental_ids,
                                                     Timestamp from, Timestamp to, bool by_day);

// The balances of the providers' available accounts (ProviderAvailableAccount), by
// provider id: at most `limit` of the providers after `after` ("" from the first) that
// have one. For the payout runs, which page through every provider this way.
struct ProviderBalance {
  std::string provider_id;
  Usdc balance;
};
StatusOr<std::vector<ProviderBalance>> AvailableBalances(store::Tx& tx, const std::string& after,
                                                         int64_t limit);

// Recomputes every balance from the transfers (LED-3).
struct Mismatch {
  std::string account;
  Usdc stored, computed;
};
struct CheckResult {
  bool ok = false;
  int64_t accounts = 0, transfers = 0;
  int64_t sum_micro = 0;  // of the stored balances; 0 when consistent
  std::vector<Mismatch> mismatches;
};
StatusOr<CheckResult> Check(store::Tx& tx);

// Makes the provider's pending earnings from usage up to `until` available (PAY-1: 24 h
// after the usage settles): one kEarningsAvailable transfer per provider for its usage in
// (the previous release, until], less the usage of rentals refunded in full for an early
// provider fault, and at most what the pending account holds beyond the usage after
// `until` (an operator's refund takes from it before the usage is released). Returns the
// number of providers released. Idempotent per (provider, until).
StatusOr<int64_t> ReleaseEarnings(store::Tx& tx, Timestamp until, Timestamp now);

// How far ReleaseEarnings has made usage available (the epoch before the first release):
// an available balance holds the usage credited up to this time.
StatusOr<Timestamp> ReleasedUntil(store::Tx& tx);

}  // namespace gpunex::platform::billing
