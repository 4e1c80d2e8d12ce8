// The pricing folder's tables and the only SQL that touches them:
//   provider_prices  one row per provider and GPU model with a price;
//   machine_prices   one row per machine and GPU model with an override;
//   price_changes    every change of either, with the old and new price (kept).
//
// A PricingStore is a view of one transaction.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/money.h"
#include "common/paging.h"
#include "common/status.h"
#include "common/time.h"
#include "platform/pricing/pricing.h"
#include "platform/store/db.h"
#include "platform/store/migrations.h"

namespace gpunex::platform::pricing {

class PricingStore {
 public:
  explicit PricingStore(store::Tx& tx) : tx_(tx) {}

  StatusOr<std::vector<Price>> ProviderPrices(const std::string& provider_id);
  StatusOr<std::vector<Price>> MachinePrices(const std::string& machine_id);
  Status PutProviderPrice(const std::string& provider_id, const Price& p, const std::string& by);
  Status DeleteProviderPrice(const std::string& provider_id, const std::string& gpu_model);
  Status PutMachinePrice(const std::string& machine_id, const Price& p, const std::string& by);
  Status DeleteMachinePrice(const std::string& machine_id, const std::string& gpu_model);
  Status InsertChange(const std::string& provider_id, const PriceChange& c);
  // The provider's changes, newest first.
  StatusOr<Page<PriceChange>> Changes(const std::string& provider_id, const PageRequest& page);

 private:
  store::Tx& tx_;
};

std::vector<store::Migration> PricingMigrations();

}  // namespace gpunex::platform::pricing
