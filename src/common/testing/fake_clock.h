// FakeClock: a Clock that moves only when a test says so, for testing what depends on
// time (offline after missed heartbeats, 24 h holds, weekly runs) without waiting.
//
// Thread-safety: Now, Set and Advance may be called from any thread.
#pragma once

#include <atomic>
#include <cstdint>

#include "common/time.h"

namespace gpunex::testing {

class FakeClock final : public Clock {
 public:
  // Starts at `start` (by default 2026-12-01T00:00:00Z, a Tuesday).
  explicit FakeClock(Timestamp start = FromUnixMicros(1'796'083'200'000'000))
      : now_(ToUnixMicros(start)) {}

  Timestamp Now() const override { return FromUnixMicros(now_.load()); }
  void Set(Timestamp t) { now_.store(ToUnixMicros(t)); }
  void Advance(Duration d) { now_.fetch_add(d.count()); }

 private:
  std::atomic<int64_t> now_;
};

}  // namespace gpunex::testing
