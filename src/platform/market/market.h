// The marketplace (MKT-1..4, PRC-3): an in-memory index of every offer kept in step with
// the store, searched without touching the database; the ranking a provider's own offers
// have; the price recommendation and the public market summary.
//
// Keeping in step: every change that can alter a machine's offers stamps the machine
// (fleet::TouchOffers; listing changes, prices, benchmark results, hellos, scores that
// moved). The index polls the stamps of the last `lookback_s` through an index every
// `poll_ms` and reloads only the machines whose stamp differs from the one it loaded
// (so a change shows in search within poll_ms plus one load), on every gpunexd instance
// alike; a full reload every `full_reload_s` catches what no stamp marks (a provider's
// tier or application changing). Readers get an immutable Snapshot (search.h).
//
// Supply for the recommendation: every `supply_tick_s` the GPUs on the marketplace and
// the rented ones, per model and region, are added as GPU-time to hourly rows (one
// instance does each tick: a compare-and-set on the progress row). Rented GPU-hours and
// the prices of rentals come from the rentals folder through RentalSamples.
//
// Authorization: search, the recommendation and the summary are public (aggregates and
// pseudonyms only); an offer's machine id is shown to its provider and admins.
//
// The tables are market_store.h's. Thread-safety: Market is thread-safe.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/background.h"
#include "common/money.h"
#include "common/status.h"
#include "common/thread_annotations.h"
#include "common/time.h"
#include "platform/accounts/accounts.h"
#include "platform/market/offer.h"
#include "platform/market/recommendation.h"
#include "platform/market/search.h"
#include "platform/store/db.h"

namespace gpunex::platform::market {

struct MarketOptions {
  int poll_ms = 200;
  // Offer searches without logging in, per second and client address, and their burst
  // (GET /api/v1/offers).
  int anonymous_searches_per_s = 10;
  int anonymous_burst = 40;
  int64_t lookback_s = 30;      // stamps older than this are not polled again
  int64_t full_reload_s = 300;  // a full reload at least this often
  int64_t supply_tick_s = 60;
  const Clock* clock = &SystemClock();
};

// The rentals of one model (and region, "" for every region) that overlap [from, to),
// each with its GPU-hours inside the window and its price. Set by the rentals folder.
using RentalSamplesFn = std::function<StatusOr<std::vector<RentalSample>>(
    store::Tx& tx, const std::string& gpu_model, const std::string& region, Timestamp from,
    Timestamp to)>;

struct RecommendationView {
  std::string gpu_model;
  std::string region;
  Recommendation recommendation;
  MarketWindow region_window, global_window;  // the data behind it (rentals left out)
  Usdc catalog_price;
  std::string note;  // a sentence: what the figure is based on
  // Why the figure is below, at or above the median rented price (the utilization
  // factor); "" for the catalog's default.
  std::string reason;
};

struct MarketStats {
  std::string gpu_model, region;  // "" : every
  int64_t offers = 0;
  int64_t listed_gpus = 0;  // on the marketplace
  int64_t available_gpus = 0;
  int64_t rented_gpus = 0;
  // Over the GPUs on the marketplace (each GPU at its offer's price); none without any.
  std::optional<Usdc> price_p25, price_median, price_p75;
};

// One of a provider's offers with where it ranks among the offers of its model and region.
struct OwnOfferRank {
  const Offer* offer = nullptr;
  int64_t position = 0;  // 0: not among them now (no GPU free)
  int64_t of = 0;
  Explanation explain;
  // The highest price in whole cents (or, below a cent, in micro-USDC) at which it would
  // rank one place higher; none when first or when no price would do.
  std::optional<Usdc> price_for_next_place;
  std::vector<std::string> advice;
};

struct OwnOffers {
  std::shared_ptr<const Snapshot> snapshot;  // keeps the offers alive
  std::vector<OwnOfferRank> offers;
};

// "3rd of 41 NVIDIA L4 offers in eu-south".
std::string PlaceSummary(int64_t position, int64_t of, std::string_view gpu_name,
                         std::string_view region);

class Market {
 public:
  Market(store::Database& db, MarketOptions options);
  Market(const Market&) = delete;
  Market& operator=(const Market&) = delete;

  // Schedules the poller: PollOnce() every poll_ms, and SupplyTick() every supply_tick_s
  // of the clock. REQUIRES: ReloadAll() first (the first snapshot).
  void ScheduleOn(Background& background);
  // One round of the poller: reloads the machines whose stamps changed; a full reload
  // when due. Tests call it directly.
  Status PollOnce() EXCLUDES(mu_);
  Status ReloadAll() EXCLUDES(mu_);
  // Accounts the supply since the last tick (the tick's instance only).
  Status SupplyTick() EXCLUDES(mu_);

  std::shared_ptr<const Snapshot> snapshot() const EXCLUDES(mu_);
  const MarketOptions& options() const { return options_; }

  // Whether `p` may see the offer's machine id: its provider acting as one (not through an
  // API key without the provider scope), admins.
  static bool SeesMachine(const std::optional<accounts::Principal>& p, const Offer& o);

  StatusOr<OwnOffers> ProviderOffers(const accounts::Principal& p) EXCLUDES(mu_);
  StatusOr<RecommendationView> Recommend(const std::string& gpu_model, const std::string& region);
  StatusOr<MarketStats> Stats(const std::string& gpu_model, const std::string& region)
      EXCLUDES(mu_);

  // Whether `id` is a GPU model of the catalog (cached; a miss asks the store).
  bool KnownModel(const std::string& id) EXCLUDES(mu_);

  // REQUIRES: before ScheduleOn().
  void SetRentalSamples(RentalSamplesFn fn) { rental_samples_ = std::move(fn); }

 private:
  Status PollAndSupply() EXCLUDES(mu_);
  void Publish(std::vector<std::shared_ptr<const MachineOffers>> changed) EXCLUDES(mu_);

  store::Database& db_;
  const MarketOptions options_;
  RentalSamplesFn rental_samples_;
  mutable Mutex mu_;
  std::shared_ptr<const Snapshot> snapshot_ GUARDED_BY(mu_);
  Timestamp last_full_ GUARDED_BY(mu_);
  std::set<std::string> models_ GUARDED_BY(mu_);
  Mutex poll_mu_ ACQUIRED_BEFORE(mu_);            // one poll or reload at a time
  Timestamp next_supply_ GUARDED_BY(poll_mu_){};  // of the scheduled poller
};

}  // namespace gpunex::platform::market
