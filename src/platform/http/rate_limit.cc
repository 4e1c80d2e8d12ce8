#include "platform/http/rate_limit.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace gpunex::platform::http {

RateLimiter::RateLimiter(double rate_per_s, double burst, size_t max_keys, const Clock* clock)
    : rate_(rate_per_s), burst_(std::max(burst, 1.0)), max_keys_(max_keys), clock_(clock) {}

bool RateLimiter::Allow(const std::string& key, int64_t* retry_after_s) {
  const Timestamp now = clock_->Now();
  MutexLock lock(&mu_);
  auto it = buckets_.find(key);
  if (it == buckets_.end()) {
    if (buckets_.size() >= max_keys_) Evict(now);
    it = buckets_.emplace(key, Bucket{burst_, now}).first;
  }
  Bucket& b = it->second;
  const double elapsed = std::chrono::duration<double>(now - b.at).count();
  b.tokens = std::min(burst_, b.tokens + std::max(elapsed, 0.0) * rate_);
  b.at = now;
  if (b.tokens >= 1) {
    b.tokens -= 1;
    return true;
  }
  if (retry_after_s) {
    *retry_after_s = std::max<int64_t>(1, static_cast<int64_t>(std::ceil((1 - b.tokens) / rate_)));
  }
  return false;
}

void RateLimiter::Evict(Timestamp now) {
  // Buckets full again are no different from new ones: drop those first.
  for (auto it = buckets_.begin(); it != buckets_.end();) {
    const double elapsed = std::chrono::duration<double>(now - it->second.at).count();
    if (it->second.tokens + elapsed * rate_ >= burst_) {
      it = buckets_.erase(it);
    } else {
      ++it;
    }
  }
  if (buckets_.size() < max_keys_) return;
  std::vector<std::pair<Timestamp, std::string>> by_age;
  by_age.reserve(buckets_.size());
  for (const auto& [k, b] : buckets_) by_age.emplace_back(b.at, k);
  const size_t drop = buckets_.size() / 2;
  std::nth_element(by_age.begin(), by_age.begin() + static_cast<std::ptrdiff_t>(drop),
                   by_age.end());
  for (size_t i = 0; i < drop; ++i) buckets_.erase(by_age[i].second);
}

}  // namespace gpunex::platform::http
