#include "platform/billing/metering.h"

#include <limits>

#include "common/invariant.h"

namespace gpunex::platform::billing {
namespace {
__extension__ typedef __int128 Int128;
}  // namespace

StatusOr<Metered> Meter(Usdc rate, int64_t gpus, int64_t billed_seconds, int64_t fee_bps) {
  Metered m;
  m.billed_seconds = billed_seconds;
  GPUNEX_ASSIGN_OR_RETURN(m.owed, Usdc::ForUsage(rate, gpus, std::chrono::seconds(billed_seconds)));
  GPUNEX_ASSIGN_OR_RETURN(m.fee, m.owed.Share(fee_bps));
  GPUNEX_ASSIGN_OR_RETURN(m.provider, m.owed.Minus(m.fee));
  GPUNEX_INVARIANT(!m.fee.is_negative() && !m.provider.is_negative(),
                   "the fee and the provider's part are parts of what is owed");
  return m;
}

int64_t SecondsPaidFor(Usdc rate, int64_t gpus, Usdc limit) {
  const Int128 per_hour = static_cast<Int128>(rate.micros()) * gpus;
  if (per_hour <= 0) return std::numeric_limits<int64_t>::max();
  // floor(per_hour × s / 3600) <= limit  ⇔  per_hour × s < (limit + 1) × 3600
  //                                     ⇔  s <= ((limit + 1) × 3600 − 1) / per_hour
  const Int128 s = ((static_cast<Int128>(limit.micros()) + 1) * 3600 - 1) / per_hour;
  if (s > std::numeric_limits<int64_t>::max()) return std::numeric_limits<int64_t>::max();
  return static_cast<int64_t>(s);
}

StatusOr<Usdc> HourlyCost(Usdc rate, int64_t gpus) { return rate.Times(gpus); }

}  // namespace gpunex::platform::billing

namespace gpunex::platform::billing {

int64_t SecondsCovered(Usdc balance, Usdc per_hour) {
  if (!per_hour.is_positive()) return std::numeric_limits<int64_t>::max();
  if (!balance.is_positive()) return 0;
  const Int128 s = static_cast<Int128>(balance.micros()) * 3600 / per_hour.micros();
  return s > std::numeric_limits<int64_t>::max() ? std::numeric_limits<int64_t>::max()
                                                 : static_cast<int64_t>(s);
}

}  // namespace gpunex::platform::billing
