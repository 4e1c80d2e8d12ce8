#include "gpubench/numerics.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "gpubench/shared.h"

namespace gpunex::gpubench {
namespace {

TEST(HalfBits, DecodesNormalsSubnormalsAndSpecials) {
  EXPECT_EQ(HalfBitsToDouble(0x3c00), 1.0);
  EXPECT_EQ(HalfBitsToDouble(0xc000), -2.0);
  EXPECT_EQ(HalfBitsToDouble(0x3555), 0.333251953125);
  EXPECT_EQ(HalfBitsToDouble(0x7bff), 65504.0);
  EXPECT_EQ(HalfBitsToDouble(0x0001), std::ldexp(1.0, -24));
  EXPECT_EQ(HalfBitsToDouble(0x0400), std::ldexp(1.0, -14));
  EXPECT_EQ(HalfBitsToDouble(0x7c00), std::numeric_limits<double>::infinity());
  EXPECT_TRUE(std::isnan(HalfBitsToDouble(0x7e00)));
  EXPECT_TRUE(std::isnan(HalfBitsToDouble(0xffff)));  // the poison pattern
}

TEST(Bf16Bits, DecodesTheUpperHalfOfAFloat) {
  EXPECT_EQ(Bf16BitsToDouble(0x3f80), 1.0);
  EXPECT_EQ(Bf16BitsToDouble(0x4049), 3.140625);
  EXPECT_EQ(Bf16BitsToDouble(0xbf00), -0.5);
  EXPECT_TRUE(std::isnan(Bf16BitsToDouble(0xffff)));
}

TEST(RoundToHalf, KeepsEveryFiniteHalfValue) {
  for (uint32_t bits = 0; bits < 0x10000; ++bits) {
    const double v = HalfBitsToDouble(static_cast<uint16_t>(bits));
    if (std::isfinite(v)) {
      ASSERT_EQ(RoundToHalf(v), v) << std::hex << bits;
    }
  }
}

TEST(RoundToHalf, RoundsToNearestTiesToEven) {
  const double ulp1 = std::ldexp(1.0, -10);                // spacing above 1
  EXPECT_EQ(RoundToHalf(1 + ulp1 / 2), 1.0);               // tie: to even (1)
  EXPECT_EQ(RoundToHalf(1 + 3 * ulp1 / 2), 1 + 2 * ulp1);  // tie: to even (1 + 2 ulp)
  EXPECT_EQ(RoundToHalf(1 + ulp1 * 0.51), 1 + ulp1);
  EXPECT_EQ(RoundToHalf(-(1 + ulp1 * 0.49)), -1.0);
  EXPECT_EQ(RoundToHalf(std::ldexp(1.0, -25)), 0.0);                   // tie with 0
  EXPECT_EQ(RoundToHalf(std::ldexp(3.0, -26)), std::ldexp(1.0, -24));  // subnormal
  EXPECT_EQ(RoundToHalf(65519.0), 65504.0);
  EXPECT_TRUE(std::isinf(RoundToHalf(65520.0)));
  EXPECT_TRUE(std::isinf(RoundToHalf(-1e6)));
  EXPECT_TRUE(std::isnan(RoundToHalf(std::nan(""))));
}

TEST(FmaExpected, WithoutIterationsIsTheSumOfTheStartingValues) {
  for (uint32_t t : {0u, 1u, 977u, 1u << 20}) {
    float f32 = 0, f16 = 0;
    for (int c = 0; c < kFmaChains; ++c) {
      f32 += FmaStart(t, static_cast<uint32_t>(c));
      f16 += FmaStart(t, static_cast<uint32_t>(2 * c));
      f16 += FmaStart(t, static_cast<uint32_t>(2 * c + 1));
    }
    EXPECT_EQ(FmaF32Expected(t, 0), f32);
    EXPECT_EQ(FmaF16Expected(t, 0), f16);
  }
}

TEST(FmaExpected, ChainsMoveTowardsOneAndStayInRange) {
  // x <- x * (1 - e) + e converges to 1 from below; every chain starts in [0, 1).
  for (uint32_t t : {0u, 5u, 4095u}) {
    const float a = FmaF32Expected(t, 4);
    const float b = FmaF32Expected(t, 64);
    EXPECT_GT(b, a);
    EXPECT_LE(b, static_cast<float>(kFmaChains));
    const float h = FmaF16Expected(t, 64);
    EXPECT_GT(h, FmaF16Expected(t, 0));
    EXPECT_LE(h, static_cast<float>(2 * kFmaChains));
  }
}

TEST(CheckFmaOutputs, PassesExactOutputsAndNamesTheFirstWrongThread) {
  const std::vector<uint32_t> threads = {0, 10, 20};
  const std::vector<float> want = {1.5f, 2.5f, 3.5f};
  EXPECT_EQ(CheckFmaOutputs("fp32", threads, want, want), std::nullopt);
  std::vector<float> got = want;
  got[1] = 2.5001f;
  auto failure = CheckFmaOutputs("fp32", threads, got, want);
  ASSERT_TRUE(failure.has_value());
  EXPECT_NE(failure->find("fp32: thread 10"), std::string::npos) << *failure;
  got[1] = std::nanf("");
  EXPECT_TRUE(CheckFmaOutputs("fp32", threads, got, want).has_value());
  EXPECT_TRUE(CheckFmaOutputs("fp32", {}, {}, {}).has_value());
}

// Rows of A and columns of B with values uniform in [-1, 1), as the GEMM inputs.
struct Samples {
  std::vector<double> ref, got;
};

Samples Gemm(int n, int samples, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-1, 1);
  Samples s;
  for (int k = 0; k < samples; ++k) {
    std::vector<double> a(static_cast<size_t>(n)), b(static_cast<size_t>(n));
    for (auto& x : a) x = u(rng);
    for (auto& x : b) x = u(rng);
    s.ref.push_back(Dot(a, b));
  }
  s.got = s.ref;
  return s;
}

TEST(CheckGemmSamples, AcceptsOutputsRoundedToTheOutputType) {
  Samples s = Gemm(4096, 256, 1);
  EXPECT_EQ(CheckGemmSamples("bf16_tensor", s.got, s.ref, kBf16GemmTolerance), std::nullopt);
  // Rounded to BF16 (8 significant bits) and to FP16 (11): what a healthy GPU returns.
  for (size_t k = 0; k < s.got.size(); ++k) {
    int e = 0;
    std::frexp(s.ref[k], &e);
    s.got[k] = std::ldexp(std::nearbyint(std::ldexp(s.ref[k], 8 - e)), e - 8);
  }
  EXPECT_EQ(CheckGemmSamples("bf16_tensor", s.got, s.ref, kBf16GemmTolerance), std::nullopt);
  for (size_t k = 0; k < s.got.size(); ++k) s.got[k] = RoundToHalf(s.ref[k]);
  EXPECT_EQ(CheckGemmSamples("fp16_tensor", s.got, s.ref, kFp16GemmTolerance), std::nullopt);
}

TEST(CheckGemmSamples, RejectsGarbageFastResults) {
  Samples s = Gemm(1024, 256, 2);
  // The product of other matrices (a transposed operand, a wrong offset, stale data).
  Samples other = Gemm(1024, 256, 3);
  auto failure = CheckGemmSamples("bf16_tensor", other.ref, s.ref, kBf16GemmTolerance);
  ASSERT_TRUE(failure.has_value());
  EXPECT_NE(failure->find("bf16_tensor: relative error"), std::string::npos) << *failure;
  // Zeros (nothing written after a memset), a constant, a scaled result.
  std::vector<double> zeros(s.ref.size(), 0.0);
  EXPECT_TRUE(CheckGemmSamples("x", zeros, s.ref, kBf16GemmTolerance).has_value());
  std::vector<double> scaled = s.ref;
  for (auto& v : scaled) v *= 1.1;
  EXPECT_TRUE(CheckGemmSamples("x", scaled, s.ref, kTf32GemmTolerance).has_value());
  // One NaN among correct values (the poisoned output left unwritten).
  std::vector<double> one_nan = s.ref;
  one_nan[17] = std::nan("");
  failure = CheckGemmSamples("fp16_tensor", one_nan, s.ref, kFp16GemmTolerance);
  ASSERT_TRUE(failure.has_value());
  EXPECT_NE(failure->find("1 of 256 sampled outputs are NaN"), std::string::npos) << *failure;
  // Nothing to compare.
  EXPECT_TRUE(CheckGemmSamples("x", {}, {}, 1).has_value());
  EXPECT_TRUE(CheckGemmSamples("x", zeros, zeros, 1).has_value());
}

TEST(CheckWrongCount, NamesTheKernelAndTheCount) {
  EXPECT_EQ(CheckWrongCount("copy", 0, 100), std::nullopt);
  EXPECT_EQ(CheckWrongCount("copy", 12, 268435456), "copy: 12 of 268435456 values wrong");
}

TEST(CheckReadSums, NeedsTheExactTotal) {
  std::vector<float> partials(1000, 4096.0f * kWriteValue);
  EXPECT_EQ(CheckReadSums(partials, 4096000), std::nullopt);
  partials[3] -= 1;
  EXPECT_TRUE(CheckReadSums(partials, 4096000).has_value());
  EXPECT_TRUE(CheckReadSums({}, 16).has_value());
}

TEST(PatternValue, IsExactAndVaries) {
  for (uint32_t i : {0u, 1u, 2u, 123456789u}) {
    const float v = PatternValue(i);
    EXPECT_GE(v, 1.0f);
    EXPECT_LT(v, 2.0f);
  }
  EXPECT_NE(PatternValue(0), PatternValue(1));
}

}  // namespace
}  // namespace gpunex::gpubench
