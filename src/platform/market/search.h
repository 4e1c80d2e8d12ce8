// The offer index's snapshots and the search over one (MKT-1, MKT-2).
//
// A Snapshot is immutable: every machine's offers as loaded at one stamp, and a flat list
// of all offers. With() makes the next snapshot from changed machines, sharing the
// others, so readers (searches, the scheduler of the rentals issue) hold a consistent
// view without locks while the index moves on.
//
// Search filters the snapshot's offers, computes the median value of those that match,
// ranks each (ranking.h), orders them by the sort and returns one page. The cursor holds
// the position and id of the last offer shown: the next page starts after that offer in
// the current order, or, when it has left the results, at the place it held (the offers
// after it moved up one).
//
// Thread-safety: a Snapshot is safe to share; Search is a pure function of its arguments.
#pragma once

#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/money.h"
#include "common/paging.h"
#include "common/status.h"
#include "platform/market/offer.h"
#include "platform/market/ranking.h"

namespace gpunex::platform::market {

class Snapshot {
 public:
  Snapshot() = default;
  // A snapshot holding `machines` (any order; machines without offers are kept so that
  // their stamps are known).
  explicit Snapshot(std::vector<std::shared_ptr<const MachineOffers>> machines);

  // The next snapshot: `changed` machines replace theirs (or are added).
  std::shared_ptr<const Snapshot> With(
      std::vector<std::shared_ptr<const MachineOffers>> changed) const;

  const std::vector<const Offer*>& offers() const { return offers_; }
  // The offer with this id; nullptr when there is none.
  const Offer* Find(std::string_view offer_id) const;
  // The machine's offers as loaded; nullptr when the machine is not in the snapshot.
  const MachineOffers* Machine(std::string_view machine_id) const;
  size_t machine_count() const { return machines_.size(); }

 private:
  std::vector<std::shared_ptr<const MachineOffers>> machines_;  // by machine id
  std::vector<const Offer*> offers_;                            // by machine id, then model
};

struct OfferQuery {
  std::set<std::string> gpu_models;  // empty: any
  int64_t min_gpus = 1;              // available now (with include_busy: in the offer)
  // Offers whose GPUs are all busy (rented or being benchmarked) match too; min_gpus then
  // counts the offer's GPUs rather than its free ones.
  bool include_busy = false;
  std::optional<double> min_vram_gb;
  std::optional<Usdc> max_price;
  std::string country;  // "" : any (ISO 3166-1 alpha-2, upper case)
  std::string region;
  std::optional<providers::Tier> tier;  // nullopt: any
  std::optional<double> min_reliability, min_performance;
  std::optional<double> min_down_mbps, min_up_mbps;
  std::optional<int64_t> min_cuda;  // ParseCudaVersion's form
  bool verified_only = false;       // non-emulated GPUs only
  Sort sort = Sort::kRank;
  PageRequest page;
};

// A region name as offers carry it and searches take it: 1 to 64 of a-z, 0-9, '-', '_'.
bool IsRegionName(std::string_view s);

// Whether `o` passes the query's filters.
bool Matches(const OfferQuery& q, const Offer& o);

struct SearchHit {
  const Offer* offer = nullptr;
  Explanation explain;
  int64_t position = 0;  // 1-based, in the whole ordered result
};

struct SearchResult {
  std::vector<SearchHit> items;
  std::optional<Cursor> next;
  int64_t matched = 0;
  double median_value = 0;
};

// One page of the offers matching `q`, in its order. Fails with a field error on
// "cursor" for a cursor of another shape. The hits point into `snap`.
StatusOr<SearchResult> Search(const Snapshot& snap, const OfferQuery& q);
// Every match in order (the provider's rank view, the scheduler).
std::vector<SearchHit> RankAll(const Snapshot& snap, const OfferQuery& q);

}  // namespace gpunex::platform::market
