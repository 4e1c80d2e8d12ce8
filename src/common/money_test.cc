#include "common/money.h"

#include <gtest/gtest.h>

#include <limits>

namespace gpunex {
namespace {

using std::chrono::seconds;
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

TEST(Usdc, ParsesDecimalUsdcExactly) {
  EXPECT_EQ(Usdc::Parse("2.20"), Usdc::Micros(2'200'000));
  EXPECT_EQ(Usdc::Parse("0.000001"), Usdc::Micros(1));
  EXPECT_EQ(Usdc::Parse("15"), Usdc::Micros(15'000'000));
  EXPECT_EQ(Usdc::Parse("9223372036854.775807"), Usdc::Micros(kMax));
  EXPECT_FALSE(Usdc::Parse("9223372036854.775808"));
  EXPECT_FALSE(Usdc::Parse("1.0000001"));
  EXPECT_FALSE(Usdc::Parse("-1"));
  EXPECT_FALSE(Usdc::Parse("1."));
  EXPECT_FALSE(Usdc::Parse(".5"));
  EXPECT_FALSE(Usdc::Parse(""));
  EXPECT_FALSE(Usdc::Parse("99999999999999999999"));
}

TEST(Usdc, FormatsSixDecimals) {
  EXPECT_EQ(Usdc::Micros(2'200'000).ToString(), "2.200000");
  EXPECT_EQ(Usdc::Micros(-5).ToString(), "-0.000005");
  EXPECT_EQ(Usdc::Micros(std::numeric_limits<int64_t>::min()).ToString(), "-9223372036854.775808");
}

TEST(Usdc, ArithmeticRefusesToWrap) {
  EXPECT_EQ(*Usdc::Micros(2).Plus(Usdc::Micros(3)), Usdc::Micros(5));
  EXPECT_EQ(*Usdc::Micros(2).Minus(Usdc::Micros(3)), Usdc::Micros(-1));
  EXPECT_EQ(*Usdc::Micros(7).Times(6), Usdc::Micros(42));
  EXPECT_EQ(Usdc::Micros(kMax).Plus(Usdc::Micros(1)).status().code(), StatusCode::kOutOfRange);
  EXPECT_EQ(Usdc::Micros(-kMax - 1).Minus(Usdc::Micros(1)).status().code(),
            StatusCode::kOutOfRange);
  EXPECT_EQ(Usdc::Micros(kMax / 2 + 1).Times(2).status().code(), StatusCode::kOutOfRange);
  EXPECT_LT(Usdc::Micros(1), Usdc::Micros(2));
}

TEST(Usdc, UsageIsFlooredOnTheTotal) {
  // 2.20 USDC/h for 1 GPU: one second is 611.1 micro-USDC.
  const Usdc rate = *Usdc::Parse("2.20");
  EXPECT_EQ(*Usdc::ForUsage(rate, 1, seconds(1)), Usdc::Micros(611));
  EXPECT_EQ(*Usdc::ForUsage(rate, 1, seconds(3600)), Usdc::Micros(2'200'000));
  EXPECT_EQ(*Usdc::ForUsage(rate, 8, seconds(3601)), Usdc::Micros(17'604'888));
  // 1 micro-USDC per hour: nothing until a whole hour has passed.
  EXPECT_EQ(*Usdc::ForUsage(Usdc::Micros(1), 1, seconds(3599)), Usdc::Zero());
  EXPECT_EQ(*Usdc::ForUsage(Usdc::Micros(1), 1, seconds(3600)), Usdc::Micros(1));
  // Large factors are multiplied in 128 bits: 999,999,999 micro-USDC/h × 8 GPUs × a year.
  EXPECT_EQ(*Usdc::ForUsage(Usdc::Micros(999'999'999), 8, seconds(365LL * 86'400)),
            Usdc::Micros(70'079'999'929'920));
  EXPECT_EQ(Usdc::ForUsage(Usdc::Micros(kMax), kMax, seconds(kMax)).status().code(),
            StatusCode::kOutOfRange);
  EXPECT_EQ(Usdc::ForUsage(Usdc::Micros(kMax), 1, seconds(7200)).status().code(),
            StatusCode::kOutOfRange);
  EXPECT_EQ(Usdc::ForUsage(Usdc::Micros(-1), 1, seconds(1)).status().code(),
            StatusCode::kOutOfRange);
}

TEST(Usdc, ShareIsFlooredBasisPoints) {
  EXPECT_EQ(*Usdc::Micros(17'604'888).Share(2000), Usdc::Micros(3'520'977));
  EXPECT_EQ(*Usdc::Micros(611).Share(1500), Usdc::Micros(91));
  EXPECT_EQ(*Usdc::Micros(kMax).Share(10'000), Usdc::Micros(kMax));
  EXPECT_EQ(Usdc::Micros(1).Share(10'001).status().code(), StatusCode::kOutOfRange);
  EXPECT_EQ(Usdc::Micros(-1).Share(10).status().code(), StatusCode::kOutOfRange);
}

}  // namespace
}  // namespace gpunex
