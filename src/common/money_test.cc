#include "common/money.h"

#include <gtest/gtest.h>

namespace gpunex {
namespace {

TEST(Money, ParsesDecimalUsdcExactly) {
  EXPECT_EQ(ParseUsdc("2.20"), 2'200'000);
  EXPECT_EQ(ParseUsdc("0.000001"), 1);
  EXPECT_EQ(ParseUsdc("15"), 15'000'000);
  EXPECT_FALSE(ParseUsdc("1.0000001"));
  EXPECT_FALSE(ParseUsdc("-1"));
  EXPECT_FALSE(ParseUsdc("1."));
  EXPECT_FALSE(ParseUsdc(""));
  EXPECT_FALSE(ParseUsdc("99999999999999999999"));
}

TEST(Money, FormatsSixDecimals) {
  EXPECT_EQ(FormatUsdc(2'200'000), "2.200000");
  EXPECT_EQ(FormatUsdc(-5), "-0.000005");
}

}  // namespace
}  // namespace gpunex
