// Metering (LED-1, LED-2, LED-4): what a rental owes for the seconds it was billed, and
// how that splits between the platform's commission and the provider.
//
// Every figure is a total up to a point in time, computed on the total, never summed
// from rounded parts:
//   owed(s)     = floor(rate × gpus × s / 3600)          rate: micro-USDC per GPU-hour
//   fee(s)      = floor(owed(s) × fee_bps / 10000)       the platform's commission
//   provider(s) = owed(s) − fee(s)
// A metering tick charges the difference between the totals at its end and those already
// charged, so no rounding drift accumulates over any number of ticks. owed, fee and
// provider are non-decreasing in s (fee grows by at most the growth of owed, since
// fee_bps <= 10000), so every difference is >= 0.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>

#include "common/money.h"
#include "common/status.h"

namespace gpunex::platform::billing {

struct Metered {
  int64_t billed_seconds = 0;
  Usdc owed;
  Usdc fee;
  Usdc provider;
};

// The totals for `billed_seconds`. kOutOfRange for a negative argument, fee_bps outside
// 0..10000, or an amount that does not fit.
StatusOr<Metered> Meter(Usdc rate, int64_t gpus, int64_t billed_seconds, int64_t fee_bps);

// The largest s >= 0 with owed(s) <= limit: how many seconds `limit` pays for. A rate of
// zero pays for any time: INT64_MAX. REQUIRES: rate, gpus, limit >= 0.
int64_t SecondsPaidFor(Usdc rate, int64_t gpus, Usdc limit);

// floor(balance × 3600 / per_hour): how many seconds a balance lasts at an hourly cost;
// INT64_MAX for a cost of zero, 0 for a balance of zero or less.
int64_t SecondsCovered(Usdc balance, Usdc per_hour);

// owed for one hour: rate × gpus.
StatusOr<Usdc> HourlyCost(Usdc rate, int64_t gpus);

}  // namespace gpunex::platform::billing
