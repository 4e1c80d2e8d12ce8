// Business days, for the review target (REV-1) and the monthly payouts (PAY-1). A business
// day is Monday to Friday (UTC) that is not a configured holiday.
//
// Thread-safety: immutable after Create; safe to share.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "common/status.h"
#include "common/time.h"

namespace gpunex {

class BusinessCalendar {
 public:
  // `holidays` are "YYYY-MM-DD"; kInvalidArgument names a malformed one.
  static StatusOr<BusinessCalendar> Create(const std::vector<std::string>& holidays);

  bool IsBusinessDay(int64_t days_since_epoch) const;

  // The application's age: the number of business days d with day(from) < d <= day(to).
  // Submitted on a Friday and read on the next Monday: 1. Same day: 0.
  int BusinessDaysBetween(Timestamp from, Timestamp to) const;

 private:
  std::set<int64_t> holidays_;  // days since the epoch
};

}  // namespace gpunex
