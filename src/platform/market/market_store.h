// The market folder's tables and the only SQL that touches them:
//   market_supply    per UTC hour, GPU model and region: GPU-time on the marketplace and
//                    GPU-time rented (microseconds), for the price recommendation;
//   market_progress  one row: until when the supply was accounted.
//
// A MarketStore is a view of one transaction.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "common/time.h"
#include "platform/store/db.h"
#include "platform/store/migrations.h"

namespace gpunex::platform::market {

struct SupplySums {
  int64_t listed_gpu_us = 0;
  int64_t rented_gpu_us = 0;
};

class MarketStore {
 public:
  explicit MarketStore(store::Tx& tx) : tx_(tx) {}

  StatusOr<std::optional<Timestamp>> AccruedUntil();
  // Moves the progress from `from` (none: no row yet) to `to`; false when another
  // instance moved it first.
  StatusOr<bool> AdvanceAccrued(std::optional<Timestamp> from, Timestamp to);
  Status AddSupply(int64_t hour, const std::string& gpu_model, const std::string& region,
                   const SupplySums& add);
  // The sums of the model since `from_hour` (hours since the Unix epoch), in `region` or
  // in every region when it is "".
  StatusOr<SupplySums> Supply(const std::string& gpu_model, const std::string& region,
                              int64_t from_hour);

 private:
  store::Tx& tx_;
};

std::vector<store::Migration> MarketMigrations();

}  // namespace gpunex::platform::market
