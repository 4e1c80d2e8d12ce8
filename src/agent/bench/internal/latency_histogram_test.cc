#include "agent/bench/internal/latency_histogram.h"

#include <gtest/gtest.h>

namespace gpunex::agent::bench::internal {
namespace {

TEST(LatencyHistogram, EmptyIsZero) {
  LatencyHistogram h;
  EXPECT_EQ(h.count(), 0u);
  EXPECT_EQ(h.Quantile(0.5), 0);
}

TEST(LatencyHistogram, SmallValuesAreExact) {
  LatencyHistogram h;
  for (int v = 1; v <= 100; ++v) h.Add(v);
  EXPECT_EQ(h.Quantile(0.5), 50);
  EXPECT_EQ(h.Quantile(0.99), 99);
  EXPECT_EQ(h.Quantile(1.0), 100);
  h.Add(-5);  // counts as 0
  EXPECT_EQ(h.count(), 101u);
}

TEST(LatencyHistogram, QuantilesWithinOnePercent) {
  LatencyHistogram h;
  for (int64_t v = 1; v <= 1'000'000; ++v) h.Add(v * 37);  // up to 37 ms
  EXPECT_NEAR(h.Quantile(0.50), 500'000.0 * 37, 500'000.0 * 37 * 0.01);
  EXPECT_NEAR(h.Quantile(0.99), 990'000.0 * 37, 990'000.0 * 37 * 0.01);
  h.Add(int64_t{1} << 60);  // beyond the range: the last bucket
  EXPECT_GT(h.Quantile(1.0), 1e14);
}

TEST(LatencyHistogram, MergeAddsCounts) {
  LatencyHistogram a, b;
  for (int i = 0; i < 90; ++i) a.Add(1000);
  for (int i = 0; i < 10; ++i) b.Add(100'000);
  a.Merge(b);
  EXPECT_EQ(a.count(), 100u);
  EXPECT_NEAR(a.Quantile(0.5), 1000, 10);
  EXPECT_NEAR(a.Quantile(0.95), 100'000, 1000);
}

}  // namespace
}  // namespace gpunex::agent::bench::internal
