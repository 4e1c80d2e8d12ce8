#include "common/invariant.h"

#include <gtest/gtest.h>

#include <string>

namespace gpunex {
namespace {

Status Positive(int v) {
  GPUNEX_INVARIANT(v > 0, "v " + std::to_string(v) + " is positive");
  return Status::Ok();
}

StatusOr<int> Twice(int v) {
  GPUNEX_INVARIANT(v > 0, "v is positive");
  return 2 * v;
}

TEST(InvariantTest, AnInvariantThatHoldsChangesNothing) {
  EXPECT_TRUE(Positive(1).ok());
  ASSERT_TRUE(Twice(2).ok());
  EXPECT_EQ(*Twice(2), 4);
}

#ifdef NDEBUG
TEST(InvariantTest, ReleaseBuildsRefuseWithAnInternalError) {
  Status st = Positive(-3);
  EXPECT_EQ(st.code(), StatusCode::kInternal);
  EXPECT_EQ(st.message(), "an internal check failed (v -3 is positive)");
  EXPECT_EQ(Twice(0).status().code(), StatusCode::kInternal);
}
#else
TEST(InvariantDeathTest, DebugBuildsStopWithTheConditionAndThePlace) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH((void)Positive(-3),
               "invariant broken at .*invariant_test.cc:[0-9]+: v > 0 \\(v -3 is positive\\)");
}
#endif

}  // namespace
}  // namespace gpunex
