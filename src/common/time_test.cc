#include "common/time.h"

#include <gtest/gtest.h>

#include "common/testing/fake_clock.h"

namespace gpunex {
namespace {

TEST(Time, Rfc3339RoundTrip) {
  EXPECT_EQ(FormatRfc3339(FromUnixMicros(0)), "1970-01-01T00:00:00.000Z");
  auto t = ParseRfc3339("2026-11-29T16:00:00.250Z");
  ASSERT_TRUE(t);
  EXPECT_EQ(FormatRfc3339(*t), "2026-11-29T16:00:00.250Z");
  EXPECT_EQ(ParseRfc3339("2026-11-29T18:00:00+02:00"), ParseRfc3339("2026-11-29T16:00:00Z"));
  EXPECT_FALSE(ParseRfc3339("yesterday"));
  EXPECT_FALSE(ParseRfc3339("2026-11-29T16:00:00Zjunk"));
}

TEST(Time, StoreFormIsMicrosecondsSinceTheEpoch) {
  Timestamp t = *ParseRfc3339("2026-11-29T16:00:00.000001Z");
  EXPECT_EQ(ToUnixMicros(t), 1'795'968'000'000'001);
  EXPECT_EQ(FromUnixMicros(ToUnixMicros(t)), t);
  EXPECT_EQ(ToUnixMicros(t + kOneSecond) - ToUnixMicros(t), 1'000'000);
}

TEST(FakeClock, MovesOnlyWhenTold) {
  testing::FakeClock clock(*ParseRfc3339("2026-12-01T00:00:00Z"));
  const Timestamp start = clock.Now();
  EXPECT_EQ(clock.Now(), start);
  clock.Advance(kOneDay);
  EXPECT_EQ(FormatRfc3339(clock.Now()), "2026-12-02T00:00:00.000Z");
  clock.Set(start);
  EXPECT_EQ(clock.Now(), start);
}

}  // namespace
}  // namespace gpunex
