#include "platform/market/search.h"

#include <algorithm>
#include <utility>

namespace gpunex::platform::market {
namespace {

bool ByMachine(const std::shared_ptr<const MachineOffers>& a,
               const std::shared_ptr<const MachineOffers>& b) {
  return a->machine_id < b->machine_id;
}

struct Ranked {
  const Offer* offer;
  RankInputs in;
  Explanation explain;
};

// The matches with their ranks, and the median value.
std::pair<std::vector<Ranked>, double> Rank(const Snapshot& snap, const OfferQuery& q) {
  std::vector<Ranked> out;
  std::vector<double> values;
  for (const Offer* o : snap.offers()) {
    if (!Matches(q, *o)) continue;
    out.push_back({o, o->rank_inputs(), {}});
    values.push_back(Value(o->performance_score, o->price));
  }
  const double median = Median(std::move(values));
  for (Ranked& r : out) r.explain = market::Rank(r.in, median);
  return {std::move(out), median};
}

auto Order(Sort sort) {
  return [sort](const Ranked& a, const Ranked& b) {
    return Before(sort, a.in, a.explain.rank, b.in, b.explain.rank);
  };
}

}  // namespace

Snapshot::Snapshot(std::vector<std::shared_ptr<const MachineOffers>> machines)
    : machines_(std::move(machines)) {
  // With() hands over a merge that is in order already.
  if (!std::is_sorted(machines_.begin(), machines_.end(), ByMachine)) {
    std::sort(machines_.begin(), machines_.end(), ByMachine);
  }
  for (const auto& m : machines_) {
    for (const Offer& o : m->offers) offers_.push_back(&o);
  }
}

std::shared_ptr<const Snapshot> Snapshot::With(
    std::vector<std::shared_ptr<const MachineOffers>> changed) const {
  std::sort(changed.begin(), changed.end(), ByMachine);
  std::vector<std::shared_ptr<const MachineOffers>> merged;
  merged.reserve(machines_.size() + changed.size());
  auto a = machines_.begin();
  auto b = changed.begin();
  while (a != machines_.end() || b != changed.end()) {
    if (b == changed.end() || (a != machines_.end() && (*a)->machine_id < (*b)->machine_id)) {
      merged.push_back(*a++);
      continue;
    }
    if (a != machines_.end() && (*a)->machine_id == (*b)->machine_id) ++a;
    // Several loads of one machine in one batch: the last (highest stamp) wins.
    auto last = b;
    while (std::next(last) != changed.end() && (*std::next(last))->machine_id == (*b)->machine_id) {
      ++last;
    }
    auto best = std::max_element(b, std::next(last),
                                 [](const auto& x, const auto& y) { return x->stamp < y->stamp; });
    merged.push_back(*best);
    b = std::next(last);
  }
  return std::make_shared<const Snapshot>(std::move(merged));
}

const Offer* Snapshot::Find(std::string_view offer_id) const {
  for (const Offer* o : offers_) {
    if (o->id == offer_id) return o;
  }
  return nullptr;
}

const MachineOffers* Snapshot::Machine(std::string_view machine_id) const {
  auto it = std::lower_bound(machines_.begin(), machines_.end(), machine_id,
                             [](const std::shared_ptr<const MachineOffers>& m,
                                std::string_view id) { return m->machine_id < id; });
  if (it == machines_.end() || (*it)->machine_id != machine_id) return nullptr;
  return it->get();
}

bool IsRegionName(std::string_view s) {
  if (s.empty() || s.size() > 64) return false;
  for (char c : s) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_')) return false;
  }
  return true;
}

bool Matches(const OfferQuery& q, const Offer& o) {
  if ((q.include_busy ? o.gpus_total : o.gpus_available) < q.min_gpus) return false;
  if (!q.gpu_models.empty() && !q.gpu_models.count(o.gpu_model)) return false;
  if (q.min_vram_gb && o.vram_gb < *q.min_vram_gb) return false;
  if (q.max_price && o.price > *q.max_price) return false;
  if (!q.country.empty() && o.country != q.country) return false;
  if (!q.region.empty() && o.region != q.region) return false;
  if (q.tier && o.tier != *q.tier) return false;
  if (q.min_reliability && o.reliability_score < *q.min_reliability) return false;
  if (q.min_performance && o.performance_score < *q.min_performance) return false;
  if (q.min_down_mbps && o.down_mbps.value_or(0) < *q.min_down_mbps) return false;
  if (q.min_up_mbps && o.up_mbps.value_or(0) < *q.min_up_mbps) return false;
  if (q.min_cuda && ParseCudaVersion(o.cuda_version).value_or(0) < *q.min_cuda) return false;
  if (q.verified_only && o.emulated) return false;
  return true;
}

StatusOr<SearchResult> Search(const Snapshot& snap, const OfferQuery& q) {
  int64_t after_position = 0;
  std::string after_id;
  if (q.page.after) {
    const auto& parts = q.page.after->parts();
    if (parts.size() != 2 || !std::holds_alternative<int64_t>(parts[0]) ||
        !std::holds_alternative<std::string>(parts[1]) || std::get<int64_t>(parts[0]) < 1) {
      return FieldError("cursor", "is not a cursor of this list");
    }
    after_position = std::get<int64_t>(parts[0]);
    after_id = std::get<std::string>(parts[1]);
  }
  auto [ranked, median] = Rank(snap, q);
  SearchResult out;
  out.matched = static_cast<int64_t>(ranked.size());
  out.median_value = median;
  const int64_t limit = std::max(q.page.limit, 1);
  // Enough of the order to find the cursor's offer near its old position and the page
  // after it; the rest stays unsorted.
  const int64_t window = std::min<int64_t>(out.matched, after_position + 2 * limit + 1);
  std::partial_sort(ranked.begin(), ranked.begin() + window, ranked.end(), Order(q.sort));
  int64_t start = 0;
  if (q.page.after) {
    // When the cursor's offer has left, the offers after it moved up one place.
    start = std::min(after_position - 1, out.matched);
    for (int64_t i = 0; i < window; ++i) {
      if (ranked[static_cast<size_t>(i)].offer->id == after_id) {
        start = i + 1;
        break;
      }
    }
  }
  if (start + limit + 1 > window) {
    // The cursor's offer moved down the order: sort the rest too.
    std::sort(ranked.begin() + window, ranked.end(), Order(q.sort));
    std::inplace_merge(ranked.begin(), ranked.begin() + window, ranked.end(), Order(q.sort));
  }
  const int64_t end = std::min(out.matched, start + limit);
  for (int64_t i = start; i < end; ++i) {
    const Ranked& r = ranked[static_cast<size_t>(i)];
    out.items.push_back({r.offer, r.explain, i + 1});
  }
  if (end < out.matched && !out.items.empty()) {
    out.next = Cursor({Cursor::Part(end), Cursor::Part(out.items.back().offer->id)});
  }
  return out;
}

std::vector<SearchHit> RankAll(const Snapshot& snap, const OfferQuery& q) {
  auto [ranked, median] = Rank(snap, q);
  std::sort(ranked.begin(), ranked.end(), Order(q.sort));
  std::vector<SearchHit> out;
  out.reserve(ranked.size());
  for (size_t i = 0; i < ranked.size(); ++i) {
    out.push_back({ranked[i].offer, ranked[i].explain, static_cast<int64_t>(i) + 1});
  }
  return out;
}

}  // namespace gpunex::platform::market
