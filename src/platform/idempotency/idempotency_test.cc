#include "platform/idempotency/idempotency.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "common/testing/enum_names.h"
#include "platform/idempotency/idempotency_store.h"
#include "platform/testing/platform_test.h"

namespace gpunex::platform::idempotency {
namespace {

class IdempotencyTest : public testing::PlatformTest {
 protected:
  void SetUp() override {
    PlatformTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    for (const char* id : {"usr_a", "usr_b"}) {
      ASSERT_TRUE(
          test_db()
              .Exec("INSERT INTO users (id, email, name, password_hash, created_at) VALUES (?, ?, "
                    "'U', 'x', 0)",
                    {std::string(id), std::string(id) + "@example.com"})
              .ok());
    }
    IdempotencyOptions o;
    o.clock = &clock_;
    o.poll = std::chrono::milliseconds(1);
    idem_ = std::make_unique<Idempotency>(db(), o);
  }

  int64_t Rows() { return Number("SELECT COUNT(*) FROM idempotency_keys"); }

  std::unique_ptr<Idempotency> idem_;
};

TEST_P(IdempotencyTest, TheFirstAnswerIsGivenBackToRepeats) {
  auto first = idem_->Begin("usr_a", "k-1", "hash-1");
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_FALSE(first->replay);
  ASSERT_TRUE(
      idem_->Complete("usr_a", "k-1", *first, {201, "application/json", R"({"id":"app_1"})"}).ok());
  for (int i = 0; i < 3; ++i) {
    auto again = idem_->Begin("usr_a", "k-1", "hash-1");
    ASSERT_TRUE(again.ok());
    EXPECT_TRUE(again->replay);
    EXPECT_EQ(again->response.status, 201);
    EXPECT_EQ(again->response.content_type, "application/json");
    EXPECT_EQ(again->response.body, R"({"id":"app_1"})");
  }
  // Keys belong to their user: the same key of another user is another request.
  auto other = idem_->Begin("usr_b", "k-1", "hash-9");
  ASSERT_TRUE(other.ok());
  EXPECT_FALSE(other->replay);
  EXPECT_EQ(Rows(), 2);
}

TEST_P(IdempotencyTest, TheSameKeyWithAnotherRequestIsRefused) {
  auto first = idem_->Begin("usr_a", "k-2", "hash-1");
  ASSERT_TRUE(first.ok());
  ASSERT_TRUE(idem_->Complete("usr_a", "k-2", *first, {200, "", "{}"}).ok());
  auto other = idem_->Begin("usr_a", "k-2", "hash-2");
  EXPECT_EQ(other.status().code(), StatusCode::kValidationFailed);
  EXPECT_EQ(other.status().fields().count("Idempotency-Key"), 1u);
  for (std::string_view bad :
       {std::string_view(""), std::string_view("has space"), std::string_view("tab\t")}) {
    EXPECT_EQ(
        idem_->Begin("usr_a", std::string(bad), "h").status().fields().count("Idempotency-Key"), 1u)
        << bad;
  }
  EXPECT_EQ(idem_->Begin("usr_a", std::string(256, 'k'), "h").status().code(),
            StatusCode::kValidationFailed);
  EXPECT_TRUE(idem_->Begin("usr_a", std::string(255, 'k'), "h").ok());
}

TEST_P(IdempotencyTest, AConcurrentRepeatWaitsForTheFirstAnswerOrGivesUp) {
  auto first = idem_->Begin("usr_a", "k-3", "hash");
  ASSERT_TRUE(first.ok());
  // The repeat waits while the first is running, and gets its answer when it comes.
  std::atomic<bool> done{false};
  StatusOr<Claim> repeat = Internal("not run");
  std::thread t([&] {
    repeat = idem_->Begin("usr_a", "k-3", "hash");
    done = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  EXPECT_FALSE(done.load());
  ASSERT_TRUE(idem_->Complete("usr_a", "k-3", *first, {202, "", "answer"}).ok());
  t.join();
  ASSERT_TRUE(repeat.ok()) << repeat.status().ToString();
  EXPECT_TRUE(repeat->replay);
  EXPECT_EQ(repeat->response.body, "answer");

  // A repeat that waits longer than `wait` gives up with 409.
  auto slow = idem_->Begin("usr_a", "k-4", "hash");
  ASSERT_TRUE(slow.ok());
  std::thread t2([&] { repeat = idem_->Begin("usr_a", "k-4", "hash"); });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  clock_.Advance(std::chrono::seconds(6));
  t2.join();
  EXPECT_EQ(repeat.status().code(), StatusCode::kFailedPrecondition);
}

TEST_P(IdempotencyTest, AnAttemptThatDiedIsTakenOverAndItsLateAnswerIgnored) {
  auto died = idem_->Begin("usr_a", "k-5", "hash");
  ASSERT_TRUE(died.ok());
  clock_.Advance(std::chrono::seconds(61));  // past the lease
  auto next = idem_->Begin("usr_a", "k-5", "hash");
  ASSERT_TRUE(next.ok());
  EXPECT_FALSE(next->replay) << "the repeat runs the request itself";
  // The first attempt answers late: its claim was taken over, so its answer is not kept.
  ASSERT_TRUE(idem_->Complete("usr_a", "k-5", *died, {200, "", "late"}).ok());
  ASSERT_TRUE(idem_->Complete("usr_a", "k-5", *next, {200, "", "current"}).ok());
  EXPECT_EQ(idem_->Begin("usr_a", "k-5", "hash")->response.body, "current");
}

TEST_P(IdempotencyTest, AbandonedAndExpiredKeysRunAgain) {
  auto failed = idem_->Begin("usr_a", "k-6", "hash");
  ASSERT_TRUE(failed.ok());
  ASSERT_TRUE(idem_->Abandon("usr_a", "k-6", *failed).ok());  // a 5xx answer
  auto retry = idem_->Begin("usr_a", "k-6", "hash");
  ASSERT_TRUE(retry.ok());
  EXPECT_FALSE(retry->replay);
  ASSERT_TRUE(idem_->Complete("usr_a", "k-6", *retry, {200, "", "ok"}).ok());

  clock_.Advance(std::chrono::hours(23));
  EXPECT_EQ(*idem_->Sweep(), 0);
  EXPECT_TRUE(idem_->Begin("usr_a", "k-6", "hash")->replay);
  clock_.Advance(std::chrono::hours(2));
  // After 24 hours the key is forgotten, swept or not.
  EXPECT_FALSE(idem_->Begin("usr_a", "k-6", "other-hash")->replay);
  clock_.Advance(std::chrono::hours(25));
  EXPECT_EQ(*idem_->Sweep(), 1);
  EXPECT_EQ(Rows(), 0);
}

GPUNEX_INSTANTIATE_BACKENDS(IdempotencyTest);

// The states are stored as they always were, and each reads back as itself.
TEST(KeyStateTest, EachStateHasOneNameThatReadsBack) {
  EXPECT_EQ(Name(KeyState::kInProgress), "in_progress");
  EXPECT_EQ(Name(KeyState::kDone), "done");
  gpunex::testing::ExpectEachNameReadsBack(kKeyStateNames, KeyState::kDone);
}

}  // namespace
}  // namespace gpunex::platform::idempotency
