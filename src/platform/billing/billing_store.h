// The billing folder's tables and the only SQL that touches them:
//   ledger_accounts          one row per account with its balance (ledger.h);
//   ledger_transfers         every transfer, append-only;
//   ledger_release_progress  how far pending earnings have been made available.
//
// A BillingStore is a view of one transaction.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/paging.h"
#include "common/status.h"
#include "platform/billing/ledger.h"
#include "platform/store/db.h"
#include "platform/store/migrations.h"

namespace gpunex::platform::billing {

class BillingStore {
 public:
  explicit BillingStore(store::Tx& tx) : tx_(tx) {}

  // Inserts the transfers whose id is new; returns the ids inserted.
  StatusOr<std::vector<std::string>> InsertTransfers(const std::vector<const Transfer*>& ts);
  StatusOr<std::vector<Transfer>> FindTransfers(const std::vector<std::string>& ids);
  // Creates the accounts that do not exist yet, with balance 0.
  Status EnsureAccounts(const std::vector<std::string>& ids, Timestamp now);
  // balance += delta, unless the account must not go negative and would: false then.
  StatusOr<bool> AddToBalance(const std::string& account, int64_t delta);
  StatusOr<std::optional<int64_t>> Balance(std::string_view account);
  // The balances of the accounts that exist among `accounts`.
  StatusOr<std::map<std::string, int64_t>> Balances(const std::vector<std::string>& accounts);
  StatusOr<Page<Transfer>> TransfersOf(std::string_view account, Timestamp from, Timestamp to,
                                       const PageRequest& page);
  // Σ of what the transfers into (+) and out of (−) `account` after (at, id), in the
  // order TransfersOf pages (for the balance after each entry of a statement).
  StatusOr<int64_t> SignedSumAfter(std::string_view account, Timestamp at, const std::string& id);
  StatusOr<std::map<std::string, int64_t>> StoredBalances();
  // Σ credits − Σ debits per account, from the transfers.
  StatusOr<std::map<std::string, int64_t>> ComputedBalances();
  StatusOr<int64_t> CountTransfers();
  // Usage credited to pending accounts in (from, until], less the rentals refunded in full
  // for an early provider fault (their "<rental>_rp" transfer): by account.
  StatusOr<std::map<std::string, int64_t>> ReleasableUsage(Timestamp from, Timestamp until);
  // UsageOfRentals (ledger.h), in chunks of rentals.
  StatusOr<std::vector<RentalUsageSum>> UsageSums(const std::vector<std::string>& rental_ids,
                                                  Timestamp from, Timestamp to, bool by_day);
  // The owner and balance of the accounts of `kind` whose owner sorts after `after`, by
  // owner, at most `limit`.
  StatusOr<std::vector<ProviderBalance>> OwnerBalances(std::string_view kind,
                                                       const std::string& after, int64_t limit);
  StatusOr<Timestamp> ReleasedUntil();
  Status SetReleasedUntil(Timestamp until);

 private:
  store::Tx& tx_;
};

std::vector<store::Migration> BillingMigrations();

}  // namespace gpunex::platform::billing
