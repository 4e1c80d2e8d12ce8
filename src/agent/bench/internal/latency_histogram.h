// LatencyHistogram: a fixed-size log-linear histogram of durations in nanoseconds, from
// which percentiles are read with a relative error below 1% (64 buckets per power of
// two; exact below 128 ns). Memory does not grow with the number of samples, so a
// benchmark at a million I/Os a second can record every one.
//
// Thread-safety: none; give each thread its own and Merge them.
#pragma once

#include <cstdint>
#include <vector>

namespace gpunex::agent::bench::internal {

class LatencyHistogram {
 public:
  LatencyHistogram();

  // Records one duration; negative ones count as 0, very long ones (over 39 hours) as
  // the largest bucket.
  void Add(int64_t ns);
  void Merge(const LatencyHistogram& other);
  uint64_t count() const { return count_; }

  // The q-quantile (0 < q <= 1) in nanoseconds: the middle of the bucket holding the
  // ceil(q * count)-th smallest sample. 0 when empty.
  double Quantile(double q) const;

 private:
  std::vector<uint64_t> buckets_;
  uint64_t count_ = 0;
};

}  // namespace gpunex::agent::bench::internal
