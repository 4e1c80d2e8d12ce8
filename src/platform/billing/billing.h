// Billing (LED-1..4): customers' prepaid balances and what moves them, over the ledger
// (ledger.h) and the metering formulas (metering.h).
//
// A customer's balance is the balance of their ledger account. It is funded now by
// operator credits (a bank wire or an invoice paid elsewhere; USDC top-ups come with the
// payouts) and debited by usage (rentals/). It never goes below zero: the account is
// flagged so, and metering charges only what it holds.
//
// Authorization: admins credit and check the ledger; a user reads only their own
// statement.
//
// Thread-safety: Billing is safe to share.
#pragma once

#include <optional>
#include <string>

#include "common/money.h"
#include "common/paging.h"
#include "common/status.h"
#include "common/time.h"
#include "platform/accounts/accounts.h"
#include "platform/billing/ledger.h"
#include "platform/store/db.h"

namespace gpunex::platform::billing {

// The most one operator credit may add.
inline constexpr int64_t kMaxCreditMicro = 1'000'000'000'000;  // 1,000,000 USDC

struct CreditRequest {
  std::string user_id;
  Usdc amount;
  std::string reference;
  // The request's Idempotency-Key, when it had one: the transfer id derives from it, so
  // that the credit is made once even when the answer is lost after the commit.
  std::string idempotency_key;
};

struct CreditResult {
  Transfer transfer;
  Usdc balance;
};

class Billing {
 public:
  explicit Billing(store::Database& db, const Clock* clock = &SystemClock())
      : db_(db), clock_(clock) {}

  // Field errors name "user_id", "amount_micro", "reference". Admins only.
  StatusOr<CreditResult> Credit(const accounts::Principal& p, const CreditRequest& req);
  // The caller's balance transfers with from <= at < to, newest first.
  StatusOr<Page<Entry>> Statement(const accounts::Principal& p, Timestamp from, Timestamp to,
                                  const PageRequest& page);
  StatusOr<CheckResult> Check(const accounts::Principal& p);
  // Makes pending earnings from usage older than `hold` available (a periodic task).
  StatusOr<int64_t> ReleaseEarnings(Duration hold);

 private:
  store::Database& db_;
  const Clock* const clock_;
};

}  // namespace gpunex::platform::billing
