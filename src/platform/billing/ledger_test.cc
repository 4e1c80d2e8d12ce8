// The ledger on both backends (LED-3): transfers move positive amounts between accounts,
// balances sum to zero and match the transfers, a retried id is a no-op, a different
// transfer under an id is refused, a balance that must not go negative does not, and the
// operator credits, statements, the check and the release of pending earnings.
#include "platform/billing/ledger.h"

#include <gtest/gtest.h>

#include "platform/billing/billing.h"
#include "platform/fleet/test_util.h"

namespace gpunex::platform::billing {
namespace {

class LedgerTest : public fleet::testing::FleetTestBase {
 protected:
  void SetUp() override {
    FleetTestBase::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    billing_ = std::make_unique<Billing>(faults(), &clock_);
  }

  Transfer T(std::string id, std::string_view kind, std::string from, std::string to,
             int64_t micros, std::optional<std::string> rental = std::nullopt) {
    return {std::move(id),
            std::string(kind),
            std::move(from),
            std::move(to),
            Usdc::Micros(micros),
            std::move(rental),
            "",
            clock_.Now()};
  }
  StatusOr<int64_t> PostAll(const std::vector<Transfer>& ts) {
    int64_t n = 0;
    Status st = faults().Transact([&](store::Tx& tx) -> Status {
      GPUNEX_ASSIGN_OR_RETURN(n, Post(tx, ts));
      return Status::Ok();
    });
    if (!st.ok()) return st;
    return n;
  }
  int64_t BalanceOf(const std::string& account) {
    int64_t out = -1;
    EXPECT_TRUE(db().Read([&](store::Tx& tx) -> Status {
                      GPUNEX_ASSIGN_OR_RETURN(Usdc b, Balance(tx, account));
                      out = b.micros();
                      return Status::Ok();
                    })
                    .ok());
    return out;
  }
  CheckResult CheckNow() {
    auto c = billing_->Check(As(admin_));
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    return c.ok() ? *c : CheckResult{};
  }

  std::unique_ptr<Billing> billing_;
};

TEST_P(LedgerTest, TransfersMoveMoneyAndBalancesSumToZero) {
  const std::string c = CustomerAccount(customer_);
  ASSERT_TRUE(PostAll({T("t1", kOperatorCredit, std::string(kWorldOperator), c, 5'000'000)}).ok());
  ASSERT_TRUE(PostAll({T("t2", kUsageProvider, c, ProviderPendingAccount(pia_), 800),
                       T("t3", kUsageFee, c, std::string(kPlatformCommission), 200)})
                  .ok());
  EXPECT_EQ(BalanceOf(c), 5'000'000 - 1000);
  EXPECT_EQ(BalanceOf(ProviderPendingAccount(pia_)), 800);
  EXPECT_EQ(BalanceOf(std::string(kPlatformCommission)), 200);
  EXPECT_EQ(BalanceOf(std::string(kWorldOperator)), -5'000'000);
  CheckResult check = CheckNow();
  EXPECT_TRUE(check.ok);
  EXPECT_EQ(check.sum_micro, 0);
  EXPECT_EQ(check.transfers, 3);
  EXPECT_EQ(check.accounts, 4);
}

TEST_P(LedgerTest, ARetriedIdIsANoOpAndAnotherTransferUnderItIsRefused) {
  const std::string c = CustomerAccount(customer_);
  Transfer credit = T("t1", kOperatorCredit, std::string(kWorldOperator), c, 1000);
  ASSERT_EQ(*PostAll({credit}), 1);
  EXPECT_EQ(*PostAll({credit}), 0);
  EXPECT_EQ(BalanceOf(c), 1000);
  Transfer other = credit;
  other.amount = Usdc::Micros(2000);
  EXPECT_EQ(PostAll({other}).status().code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(BalanceOf(c), 1000);
  EXPECT_EQ(Number("SELECT COUNT(*) FROM ledger_transfers"), 1);
}

TEST_P(LedgerTest, ACommitWhoseAnswerWasLostIsNotRepeatedByTheRetry) {
  const std::string c = CustomerAccount(customer_);
  faults().FailCommit("INSERT INTO ledger_transfers", /*committed=*/true);
  Transfer credit = T("t1", kOperatorCredit, std::string(kWorldOperator), c, 1000);
  EXPECT_EQ(PostAll({credit}).status().code(), StatusCode::kOutcomeUnknown);
  EXPECT_EQ(*PostAll({credit}), 0);  // the caller retries with the same id
  EXPECT_EQ(BalanceOf(c), 1000);
  EXPECT_TRUE(CheckNow().ok);
}

TEST_P(LedgerTest, ABalanceThatMustNotGoNegativeDoesNotAndNothingOfTheBatchStays) {
  const std::string c = CustomerAccount(customer_);
  ASSERT_TRUE(PostAll({T("t1", kOperatorCredit, std::string(kWorldOperator), c, 1000)}).ok());
  auto st = PostAll({T("t2", kUsageFee, c, std::string(kPlatformCommission), 600),
                     T("t3", kUsageProvider, c, ProviderPendingAccount(pia_), 600)});
  EXPECT_EQ(st.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(st.status().message().find(c), std::string::npos);
  EXPECT_EQ(BalanceOf(c), 1000);
  EXPECT_EQ(Number("SELECT COUNT(*) FROM ledger_transfers"), 1);
  // The database refuses it too, whatever the code above it does.
  EXPECT_FALSE(
      db().Transact([&](store::Tx& tx) -> Status {
            return tx.Exec("UPDATE ledger_accounts SET balance = -1 WHERE id = ?", {c}).status();
          })
          .ok());
}

TEST_P(LedgerTest, RefusesAmountsThatAreNotPositiveAndTransfersToItself) {
  const std::string c = CustomerAccount(customer_);
  EXPECT_EQ(PostAll({T("t1", kOperatorCredit, std::string(kWorldOperator), c, 0)}).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(PostAll({T("t1", kOperatorCredit, std::string(kWorldOperator), c, -5)}).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(PostAll({T("t1", kOperatorCredit, c, c, 5)}).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(Number("SELECT COUNT(*) FROM ledger_transfers"), 0);
}

TEST_P(LedgerTest, OperatorCreditsAreForAdminsNameTheirFieldsAndHappenOnce) {
  CreditRequest req{customer_, Usdc::Micros(2'500'000), "wire 2026-11-30 #4411", ""};
  EXPECT_EQ(billing_->Credit(As(customer_), req).status().code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(billing_->Credit(As(pia_), req).status().code(), StatusCode::kPermissionDenied);
  for (auto [bad, field] : std::vector<std::pair<CreditRequest, std::string>>{
           {{"", Usdc::Micros(1), "x", ""}, "user_id"},
           {{"usr_nobody", Usdc::Micros(1), "x", ""}, "user_id"},
           {{customer_, Usdc::Micros(0), "x", ""}, "amount_micro"},
           {{customer_, Usdc::Micros(-1), "x", ""}, "amount_micro"},
           {{customer_, Usdc::Micros(kMaxCreditMicro + 1), "x", ""}, "amount_micro"},
           {{customer_, Usdc::Micros(1), "", ""}, "reference"},
           {{customer_, Usdc::Micros(1), std::string(201, 'x'), ""}, "reference"},
           {{customer_, Usdc::Micros(1), "two\nlines", ""}, "reference"}}) {
    auto r = billing_->Credit(As(admin_), bad);
    ASSERT_EQ(r.status().code(), StatusCode::kValidationFailed) << field;
    EXPECT_TRUE(r.status().fields().count(field)) << r.status().ToString();
  }
  EXPECT_EQ(Number("SELECT COUNT(*) FROM ledger_transfers"), 0);
  req.idempotency_key = "credit-1";
  auto first = billing_->Credit(As(admin_), req);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ(first->balance.micros(), 2'500'000);
  clock_.Advance(Seconds(30));
  auto again = billing_->Credit(As(admin_), req);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->transfer.id, first->transfer.id);
  EXPECT_EQ(again->balance.micros(), 2'500'000);
  CreditRequest other = req;
  other.amount = Usdc::Micros(1);
  EXPECT_EQ(billing_->Credit(As(admin_), other).status().fields().count("Idempotency-Key"), 1u);
  EXPECT_EQ(BalanceOf(CustomerAccount(customer_)), 2'500'000);
}

TEST_P(LedgerTest, AStatementListsTheCustomersTransfersNewestFirstWithinTheDates) {
  const std::string c = CustomerAccount(customer_);
  const Timestamp t0 = clock_.Now();
  ASSERT_TRUE(PostAll({T("t1", kOperatorCredit, std::string(kWorldOperator), c, 1000)}).ok());
  clock_.Advance(Seconds(3600));
  ASSERT_TRUE(
      PostAll({T("t2", kUsageFee, c, std::string(kPlatformCommission), 100, "rnt_1")}).ok());
  ASSERT_TRUE(
      PostAll({T("t3", kOperatorCredit, std::string(kWorldOperator), CustomerAccount(oscar_), 50)})
          .ok());
  auto all = billing_->Statement(As(customer_), t0, t0 + Seconds(7200), {});
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->items.size(), 2u);
  EXPECT_EQ(all->items[0].transfer.id, "t2");
  EXPECT_EQ(all->items[0].signed_amount.micros(), -100);
  EXPECT_EQ(all->items[1].signed_amount.micros(), 1000);
  auto first_hour = billing_->Statement(As(customer_), t0, t0 + Seconds(3600), {});
  ASSERT_EQ(first_hour->items.size(), 1u);
  EXPECT_EQ(first_hour->items[0].transfer.id, "t1");
  PageRequest one;
  one.limit = 1;
  auto page = billing_->Statement(As(customer_), t0, t0 + Seconds(7200), one);
  ASSERT_TRUE(page->next.has_value());
  one.after = page->next;
  auto rest = billing_->Statement(As(customer_), t0, t0 + Seconds(7200), one);
  ASSERT_EQ(rest->items.size(), 1u);
  EXPECT_EQ(rest->items[0].transfer.id, "t1");
  // The balance after each entry runs back from today's, on every page and within any
  // dates: a transfer after the dates counts in it (t4 here).
  clock_.Advance(Seconds(3600));
  ASSERT_TRUE(PostAll({T("t4", kUsageFee, c, std::string(kPlatformCommission), 7, "rnt_1")}).ok());
  all = billing_->Statement(As(customer_), t0, t0 + Seconds(7200), {});
  ASSERT_EQ(all->items.size(), 2u);
  EXPECT_EQ(all->items[0].balance_after.micros(), 900);
  EXPECT_EQ(all->items[1].balance_after.micros(), 1000);
  one.after = std::nullopt;
  auto newest = billing_->Statement(As(customer_), t0, t0 + Seconds(3 * 3600), one);
  EXPECT_EQ(newest->items[0].balance_after.micros(), 893) << "today's balance";
  page = billing_->Statement(As(customer_), t0, t0 + Seconds(7200), one);
  one.after = page->next;
  rest = billing_->Statement(As(customer_), t0, t0 + Seconds(7200), one);
  EXPECT_EQ(page->items[0].balance_after.micros(), 900);
  EXPECT_EQ(rest->items[0].balance_after.micros(), 1000);
}

TEST_P(LedgerTest, TheCheckFindsABalanceThatDoesNotMatchItsTransfers) {
  const std::string c = CustomerAccount(customer_);
  ASSERT_TRUE(PostAll({T("t1", kOperatorCredit, std::string(kWorldOperator), c, 1000)}).ok());
  ASSERT_TRUE(
      db().Transact([&](store::Tx& tx) -> Status {
            return tx.Exec("UPDATE ledger_accounts SET balance = 1001 WHERE id = ?", {c}).status();
          })
          .ok());
  CheckResult check = CheckNow();
  EXPECT_FALSE(check.ok);
  EXPECT_EQ(check.sum_micro, 1);
  ASSERT_EQ(check.mismatches.size(), 1u);
  EXPECT_EQ(check.mismatches[0].account, c);
  EXPECT_EQ(check.mismatches[0].computed.micros(), 1000);
  EXPECT_EQ(CheckNow().transfers, 1);
  EXPECT_EQ(billing_->Check(As(customer_)).status().code(), StatusCode::kPermissionDenied);
}

TEST_P(LedgerTest, PendingEarningsBecomeAvailableAfterTheHoldExceptRefundedRentals) {
  const std::string c = CustomerAccount(customer_);
  const std::string pending = ProviderPendingAccount(pia_);
  ASSERT_TRUE(PostAll({T("t0", kOperatorCredit, std::string(kWorldOperator), c, 10'000)}).ok());
  ASSERT_TRUE(PostAll({T("u1", kUsageProvider, c, pending, 800, "rnt_a"),
                       T("u2", kUsageProvider, c, pending, 300, "rnt_b")})
                  .ok());
  ASSERT_TRUE(PostAll({T("r2", kRefundProvider, pending, c, 300, "rnt_b")}).ok());
  clock_.Advance(Seconds(3600));
  ASSERT_TRUE(PostAll({T("u3", kUsageProvider, c, pending, 50, "rnt_a")}).ok());
  clock_.Advance(std::chrono::hours(23));
  // 24 h after u1 and u2 (u3 is an hour younger).
  auto n = billing_->ReleaseEarnings(std::chrono::hours(24));
  ASSERT_TRUE(n.ok()) << n.status().ToString();
  EXPECT_EQ(*n, 1);
  EXPECT_EQ(BalanceOf(ProviderAvailableAccount(pia_)), 800);
  EXPECT_EQ(BalanceOf(pending), 50);
  EXPECT_EQ(*billing_->ReleaseEarnings(std::chrono::hours(24)), 0);  // nothing new
  clock_.Advance(std::chrono::hours(1));
  EXPECT_EQ(*billing_->ReleaseEarnings(std::chrono::hours(24)), 1);
  EXPECT_EQ(BalanceOf(ProviderAvailableAccount(pia_)), 850);
  EXPECT_EQ(BalanceOf(pending), 0);
  EXPECT_TRUE(CheckNow().ok);
}

// An operator's refund (rentals/: Rentals::Refund) takes from pending before the usage is
// released: the release withholds it, and releases no usage younger than the hold; a rental
// refunded in full for an early fault (its "<rental>_rp") is left out as before.
TEST_P(LedgerTest, AnOperatorsRefundFromPendingIsWithheldFromTheReleaseNotYoungerUsage) {
  const std::string c = CustomerAccount(customer_);
  const std::string pending = ProviderPendingAccount(pia_);
  const std::string available = ProviderAvailableAccount(pia_);
  ASSERT_TRUE(PostAll({T("t0", kOperatorCredit, std::string(kWorldOperator), c, 10'000)}).ok());
  ASSERT_TRUE(PostAll({T("u1", kUsageProvider, c, pending, 800, "rnt_a"),
                       T("u2", kUsageProvider, c, pending, 300, "rnt_b")})
                  .ok());
  ASSERT_TRUE(PostAll({T("rnt_b_rp", kRefundProvider, pending, c, 300, "rnt_b"),
                       T("rf_x_p", kRefundProvider, pending, c, 500, "rnt_a")})
                  .ok());
  clock_.Advance(Seconds(3600));
  ASSERT_TRUE(PostAll({T("u3", kUsageProvider, c, pending, 50, "rnt_c")}).ok());
  clock_.Advance(std::chrono::hours(23));
  ASSERT_EQ(*billing_->ReleaseEarnings(std::chrono::hours(24)), 1);
  EXPECT_EQ(BalanceOf(available), 300);  // rnt_a's 800 less the 500 refunded
  EXPECT_EQ(BalanceOf(pending), 50);     // u3, still held
  clock_.Advance(std::chrono::hours(1));
  ASSERT_EQ(*billing_->ReleaseEarnings(std::chrono::hours(24)), 1);
  EXPECT_EQ(BalanceOf(available), 350);
  EXPECT_EQ(BalanceOf(pending), 0);
  EXPECT_TRUE(CheckNow().ok);
}

GPUNEX_INSTANTIATE_BACKENDS(LedgerTest);

}  // namespace
}  // namespace gpunex::platform::billing
