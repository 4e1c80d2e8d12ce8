// Prices (PRC-1): a provider's hourly rate per GPU model, in micro-USDC per GPU, with
// optional per-machine overrides, every change kept with its time and author. A GPU model
// without a price (neither the provider's nor its machine's) is not offered: pricing
// reports, per machine, which of its models have a price as a listing fact
// (fleet::ReportPriceFacts; listing state "no_price_set"), after every change and on
// every hello. A rental keeps the price it started with: it copies the effective price
// (EffectivePrices) when it starts.
//
// A PUT replaces the whole set: a model left out has no price afterwards (for a machine:
// no override, so the provider's price applies).
//
// Authorization: a provider reads and changes its own prices and its machines'
// overrides; admins read them.
//
// The tables are pricing_store.h's. Thread-safety: Pricing is thread-safe.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/money.h"
#include "common/paging.h"
#include "common/status.h"
#include "common/time.h"
#include "platform/accounts/accounts.h"
#include "platform/fleet/fleet.h"
#include "platform/store/db.h"

namespace gpunex::platform::pricing {

// More than 0 and at most 1,000 USDC per GPU-hour.
inline constexpr Usdc kMaxPrice = Usdc::Micros(1'000 * Usdc::kMicrosPerUsdc);
// At most this many items in one PUT (the catalog is far smaller).
inline constexpr size_t kMaxItems = 64;

struct PriceItem {
  std::string gpu_model;  // a catalog id
  Usdc price;             // per GPU per hour
};

struct Price {
  std::string gpu_model;
  Usdc price;
  Timestamp updated_at;
};

struct PriceChange {
  std::string id;
  std::optional<std::string> machine_id;  // an override's machine; none: the provider's price
  std::string gpu_model;
  std::optional<Usdc> old_price;  // none: there was none
  std::optional<Usdc> new_price;  // none: removed
  std::string changed_by;
  Timestamp at;
};

struct MachinePrices {
  std::string machine_id;
  std::vector<Price> overrides;  // by model
  // Per model of the machine's GPUs: the override, else the provider's price; a model
  // without either is left out.
  std::map<std::string, Usdc> effective;
};

// Every problem with `items` under its field path ("items[2].price_micro",
// "items[0].gpu_model"): a model not in the catalog, a model twice, a price outside
// (0, kMaxPrice]. `model_exists` answers for catalog ids.
FieldErrors ValidatePriceItems(const std::vector<PriceItem>& items,
                               const std::function<bool(std::string_view)>& model_exists);

// --- functions over the caller's transaction, for other folders

// The price per GPU-hour of each model on the machine: its override, else its provider's
// price (models without either are left out).
StatusOr<std::map<std::string, Usdc>> EffectivePrices(store::Tx& tx, const std::string& machine_id);
// The same when the caller knows the machine's provider (no machine lookup).
StatusOr<std::map<std::string, Usdc>> EffectivePrices(store::Tx& tx, const std::string& machine_id,
                                                      const std::string& provider_id);
// Reports the machine's priced models to the fleet (the listing fact) from the prices
// stored now.
Status ReportMachine(store::Tx& tx, Timestamp now, const std::string& machine_id);

struct PricingOptions {
  const Clock* clock = &SystemClock();
};

class Pricing {
 public:
  // Registers a hello hook on `fleet` (the priced models of every machine that says
  // hello). REQUIRES: before the fleet is scheduled.
  Pricing(store::Database& db, fleet::Fleet& fleet, PricingOptions options = {});

  // The caller's prices, by model (providers only).
  StatusOr<std::vector<Price>> ProviderPrices(const accounts::Principal& p);
  // Replaces the caller's prices; field errors as ValidatePriceItems, nothing changed.
  StatusOr<std::vector<Price>> SetProviderPrices(const accounts::Principal& p,
                                                 const std::vector<PriceItem>& items);
  // A machine's overrides and effective prices (its provider and admins).
  StatusOr<MachinePrices> GetMachinePrices(const accounts::Principal& p,
                                           const std::string& machine_id);
  // Replaces a machine's overrides (its provider only).
  StatusOr<MachinePrices> SetMachinePrices(const accounts::Principal& p,
                                           const std::string& machine_id,
                                           const std::vector<PriceItem>& items);
  // The caller's price changes, newest first.
  StatusOr<Page<PriceChange>> History(const accounts::Principal& p, const PageRequest& page);

 private:
  store::Database& db_;
  const PricingOptions options_;
};

}  // namespace gpunex::platform::pricing
