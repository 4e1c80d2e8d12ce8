// A token-bucket rate limit per key (a client address): `rate` requests per second on
// average, up to `burst` at once. Buckets of keys not seen for a while are dropped when
// the table is full, so a flood of addresses costs bounded memory (then the oldest
// buckets go first, which at worst lets a returning client start full again).
//
// Thread-safety: thread-safe.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>
#include <unordered_map>

#include "common/thread_annotations.h"
#include "common/time.h"

namespace gpunex::platform::http {

class RateLimiter {
 public:
  RateLimiter(double rate_per_s, double burst, size_t max_keys = 100'000,
              const Clock* clock = &SystemClock());

  // Takes one token for `key`: true when there was one; otherwise false and
  // `*retry_after_s` (when given) the whole seconds until there is.
  bool Allow(const std::string& key, int64_t* retry_after_s = nullptr) EXCLUDES(mu_);

 private:
  struct Bucket {
    double tokens = 0;
    Timestamp at;
  };
  void Evict(Timestamp now) REQUIRES(mu_);

  const double rate_;
  const double burst_;
  const size_t max_keys_;
  const Clock* clock_;
  Mutex mu_;
  std::unordered_map<std::string, Bucket> buckets_ GUARDED_BY(mu_);
};

}  // namespace gpunex::platform::http
