#include "agent/bench/internal/latency_histogram.h"

#include <algorithm>
#include <bit>
#include <cmath>

namespace gpunex::agent::bench::internal {
namespace {

// Values below 2 * kSub have a bucket each; above, each power of two [2^k, 2^(k+1)) is
// split into kSub buckets of width 2^(k-6).
constexpr int kSubBits = 6;
constexpr uint64_t kSub = uint64_t{1} << kSubBits;
constexpr int kMaxBits = 47;  // 2^47 ns = 39 hours
constexpr size_t kBuckets = 2 * kSub + (kMaxBits - kSubBits - 1) * kSub;

size_t BucketOf(uint64_t v) {
  if (v < 2 * kSub) return static_cast<size_t>(v);
  const int shift = std::bit_width(v) - (kSubBits + 1);  // >= 1
  const uint64_t mantissa = v >> shift;                  // in [kSub, 2 * kSub)
  return std::min(kBuckets - 1,
                  static_cast<size_t>(2 * kSub + (shift - 1) * kSub + (mantissa - kSub)));
}

double MiddleOf(size_t bucket) {
  if (bucket < 2 * kSub) return static_cast<double>(bucket);
  const size_t shift = (bucket - 2 * kSub) / kSub + 1;
  const uint64_t mantissa = kSub + (bucket - 2 * kSub) % kSub;
  const double low = std::ldexp(static_cast<double>(mantissa), static_cast<int>(shift));
  return low + std::ldexp(0.5, static_cast<int>(shift));
}

}  // namespace

LatencyHistogram::LatencyHistogram() : buckets_(kBuckets, 0) {}

void LatencyHistogram::Add(int64_t ns) {
  ++buckets_[BucketOf(ns < 0 ? 0 : static_cast<uint64_t>(ns))];
  ++count_;
}

void LatencyHistogram::Merge(const LatencyHistogram& other) {
  for (size_t i = 0; i < kBuckets; ++i) buckets_[i] += other.buckets_[i];
  count_ += other.count_;
}

double LatencyHistogram::Quantile(double q) const {
  if (count_ == 0) return 0;
  const uint64_t rank = std::max<uint64_t>(
      1, std::min<uint64_t>(count_,
                            static_cast<uint64_t>(std::ceil(q * static_cast<double>(count_)))));
  uint64_t seen = 0;
  for (size_t i = 0; i < kBuckets; ++i) {
    seen += buckets_[i];
    if (seen >= rank) return MiddleOf(i);
  }
  return MiddleOf(kBuckets - 1);
}

}  // namespace gpunex::agent::bench::internal
