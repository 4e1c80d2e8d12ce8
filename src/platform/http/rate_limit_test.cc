#include "platform/http/rate_limit.h"

#include <gtest/gtest.h>

#include "common/testing/fake_clock.h"

namespace gpunex::platform::http {
namespace {

TEST(RateLimiter, AllowsTheBurstThenTheRateAndSaysWhenToRetry) {
  testing::FakeClock clock;
  RateLimiter limit(2, 5, 100, &clock);
  for (int i = 0; i < 5; ++i) EXPECT_TRUE(limit.Allow("192.0.2.1")) << i;
  int64_t retry = 0;
  EXPECT_FALSE(limit.Allow("192.0.2.1", &retry));
  EXPECT_EQ(retry, 1);
  EXPECT_TRUE(limit.Allow("192.0.2.2")) << "another address has its own bucket";
  clock.Advance(std::chrono::milliseconds(500));
  EXPECT_TRUE(limit.Allow("192.0.2.1")) << "one token back after half a second at 2/s";
  EXPECT_FALSE(limit.Allow("192.0.2.1"));
  clock.Advance(std::chrono::seconds(60));
  for (int i = 0; i < 5; ++i) EXPECT_TRUE(limit.Allow("192.0.2.1")) << i;
  EXPECT_FALSE(limit.Allow("192.0.2.1")) << "never more than the burst";
}

TEST(RateLimiter, AFloodOfAddressesKeepsTheTableBounded) {
  testing::FakeClock clock;
  RateLimiter limit(1, 2, 8, &clock);
  EXPECT_TRUE(limit.Allow("victim"));
  EXPECT_TRUE(limit.Allow("victim"));
  EXPECT_FALSE(limit.Allow("victim"));
  for (int i = 0; i < 1000; ++i) EXPECT_TRUE(limit.Allow("flood-" + std::to_string(i)));
  // The table stayed small; whether "victim" survived, its bucket never grants more than
  // the burst.
  int granted = 0;
  for (int i = 0; i < 5; ++i) granted += limit.Allow("victim") ? 1 : 0;
  EXPECT_LE(granted, 2);
}

}  // namespace
}  // namespace gpunex::platform::http
