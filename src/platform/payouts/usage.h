// A provider's usage, for its earnings and its payouts' lines: the ledger's usage
// transfers (billing/ledger.h) of the provider's rentals (rentals/rentals.h), joined here
// with what each rental was. Both folders are asked through their public headers, in the
// caller's transaction.
//
// Thread-safety: functions over the caller's transaction.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "common/time.h"
#include "platform/store/db.h"

namespace gpunex::platform::payouts {

// The usage of one rental within a time range, from its ledger transfers.
struct RentalUsage {
  std::string rental_id;
  std::string machine_id;
  std::string gpu_model;
  std::vector<std::string> gpu_ids;
  int64_t gpus = 0;
  int64_t price_micro = 0;
  int64_t day = 0;  // days since the epoch, when grouped by day; else 0
  int64_t provider_micro = 0, fee_micro = 0, refund_provider_micro = 0, refund_fee_micro = 0;
};

// The provider's usage in [from, to) per rental (and per UTC day when `by_day`), by day,
// then rental id. A rental without usage in the range is not listed.
StatusOr<std::vector<RentalUsage>> Usage(store::Tx& tx, const std::string& provider_id,
                                         Timestamp from, Timestamp to, bool by_day);

// The provider's usage credited in (from, until], per rental by rental id (a payout's
// lines).
StatusOr<std::vector<RentalUsage>> UsageCovered(store::Tx& tx, const std::string& provider_id,
                                                Timestamp from, Timestamp until);

}  // namespace gpunex::platform::payouts
