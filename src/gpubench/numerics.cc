#include "gpubench/numerics.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <limits>

#include "gpubench/shared.h"

namespace gpunex::gpubench {
namespace {

std::string Format(const char* fmt, double a, double b = 0, double c = 0) {
  char buf[160];
  std::snprintf(buf, sizeof buf, fmt, a, b, c);
  return buf;
}

}  // namespace

double HalfBitsToDouble(uint16_t bits) {
  const int sign = bits >> 15;
  const int exponent = (bits >> 10) & 0x1f;
  const int mantissa = bits & 0x3ff;
  double v;
  if (exponent == 0) {
    v = std::ldexp(mantissa, -24);  // subnormal: m * 2^-24
  } else if (exponent == 0x1f) {
    v = mantissa == 0 ? std::numeric_limits<double>::infinity()
                      : std::numeric_limits<double>::quiet_NaN();
  } else {
    v = std::ldexp(1024 + mantissa, exponent - 25);  // (1 + m/1024) * 2^(e-15)
  }
  return sign != 0 ? -v : v;
}

double Bf16BitsToDouble(uint16_t bits) {
  return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16);
}

double RoundToHalf(double v) {
  if (std::isnan(v) || v == 0) return v;
  // Beyond 65504 + half an ulp (2^4 at the top binade) everything rounds to infinity.
  if (std::fabs(v) >= 65520.0) return std::copysign(std::numeric_limits<double>::infinity(), v);
  int exp2 = 0;
  std::frexp(v, &exp2);  // |v| = m * 2^exp2, m in [0.5, 1): leading bit 2^(exp2-1)
  // The spacing of FP16 values around v: 10 fraction bits below the leading bit, and never
  // finer than the subnormal step 2^-24.
  const int quantum_exp = std::max(exp2 - 1, -14) - 10;
  // nearbyint rounds to nearest, ties to even (the default rounding mode); v / 2^q is exact.
  return std::ldexp(std::nearbyint(std::ldexp(v, -quantum_exp)), quantum_exp);
}

float FmaF32Expected(uint32_t thread, int iters) {
  const long steps = static_cast<long>(iters) * kFmaUnroll;
  float sum = 0;
  for (int c = 0; c < kFmaChains; ++c) {
    float x = FmaStart(thread, static_cast<uint32_t>(c));
    for (long s = 0; s < steps; ++s) x = std::fma(x, kFmaF32A, kFmaF32B);
    sum += x;
  }
  return sum;
}

float FmaF16Expected(uint32_t thread, int iters) {
  const long steps = static_cast<long>(iters) * kFmaUnroll;
  // x * a + b is exact in double: x and a have 11 significant bits, x in [0, 1] is a
  // multiple of 2^-24 and b = 2^-10, so the exact result spans fewer than 53 bits; one
  // rounding to FP16 then matches the GPU's fused half FMA.
  const double a = kFmaF16A;
  const double b = kFmaF16B;
  float sum = 0;
  for (int c = 0; c < kFmaChains; ++c) {
    double lo = FmaStart(thread, static_cast<uint32_t>(2 * c));
    double hi = FmaStart(thread, static_cast<uint32_t>(2 * c + 1));
    for (long s = 0; s < steps; ++s) {
      lo = RoundToHalf(lo * a + b);
      hi = RoundToHalf(hi * a + b);
    }
    sum += static_cast<float>(lo);
    sum += static_cast<float>(hi);
  }
  return sum;
}

std::optional<std::string> CheckFmaOutputs(std::string_view what, std::span<const uint32_t> threads,
                                           std::span<const float> got,
                                           std::span<const float> expected) {
  if (threads.empty() || threads.size() != got.size() || got.size() != expected.size()) {
    return std::string(what) + ": no outputs to check";
  }
  for (size_t k = 0; k < got.size(); ++k) {
    const double g = got[k];
    const double e = expected[k];
    if (!std::isfinite(g) || std::fabs(g - e) > 1e-6 * std::fabs(e)) {
      return std::string(what) + ": thread " + std::to_string(threads[k]) +
             Format(" computed %.9g instead of %.9g", g, e);
    }
  }
  return std::nullopt;
}

double Dot(std::span<const double> a, std::span<const double> b) {
  double sum = 0;
  for (size_t k = 0; k < a.size() && k < b.size(); ++k) sum += a[k] * b[k];
  return sum;
}

std::optional<std::string> CheckGemmSamples(std::string_view what, std::span<const double> got,
                                            std::span<const double> ref, double tolerance) {
  if (got.empty() || got.size() != ref.size()) {
    return std::string(what) + ": no outputs to check";
  }
  double err2 = 0;
  double ref2 = 0;
  size_t bad = 0;
  for (size_t k = 0; k < got.size(); ++k) {
    if (!std::isfinite(got[k])) {
      ++bad;
      continue;
    }
    err2 += (got[k] - ref[k]) * (got[k] - ref[k]);
    ref2 += ref[k] * ref[k];
  }
  if (bad > 0) {
    return std::string(what) + Format(": %.0f of %.0f sampled outputs are NaN or infinite",
                                      static_cast<double>(bad), static_cast<double>(got.size()));
  }
  if (ref2 == 0) return std::string(what) + ": the reference outputs are all zero";
  const double rel = std::sqrt(err2 / ref2);
  if (!(rel <= tolerance)) {
    return std::string(what) +
           Format(": relative error %.3g over %.0f sampled outputs exceeds %.3g", rel,
                  static_cast<double>(got.size()), tolerance);
  }
  return std::nullopt;
}

std::optional<std::string> CheckWrongCount(std::string_view what, uint64_t wrong, uint64_t total) {
  if (wrong == 0) return std::nullopt;
  return std::string(what) + ": " + std::to_string(wrong) + " of " + std::to_string(total) +
         " values wrong";
}

std::optional<std::string> CheckReadSums(std::span<const float> partials, uint64_t floats) {
  double sum = 0;
  for (float p : partials) sum += p;
  const double want = static_cast<double>(kWriteValue) * static_cast<double>(floats);
  if (sum != want) {
    return Format("read: the partial sums add up to %.17g instead of %.17g", sum, want);
  }
  return std::nullopt;
}

}  // namespace gpunex::gpubench
