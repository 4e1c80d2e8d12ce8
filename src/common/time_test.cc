#include "common/time.h"

#include <gtest/gtest.h>

namespace gpunex {
namespace {

TEST(Time, Rfc3339RoundTrip) {
  EXPECT_EQ(FormatRfc3339(0), "1970-01-01T00:00:00.000Z");
  auto t = ParseRfc3339("2026-11-29T16:00:00.250Z");
  ASSERT_TRUE(t);
  EXPECT_EQ(FormatRfc3339(*t), "2026-11-29T16:00:00.250Z");
  EXPECT_EQ(ParseRfc3339("2026-11-29T18:00:00+02:00"), ParseRfc3339("2026-11-29T16:00:00Z"));
  EXPECT_FALSE(ParseRfc3339("yesterday"));
  EXPECT_FALSE(ParseRfc3339("2026-11-29T16:00:00Zjunk"));
}

}  // namespace
}  // namespace gpunex
