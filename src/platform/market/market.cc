#include "platform/market/market.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <utility>

#include "common/log.h"
#include "platform/catalog/catalog.h"
#include "platform/fleet/fleet.h"
#include "platform/fleet/history_store.h"
#include "platform/market/market_store.h"

namespace gpunex::platform::market {
namespace {

// "45.0%"
std::string PercentText(double fraction) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f%%", fraction * 100);
  return buf;
}

// Why the recommendation is below, at or above the median rented price, in a sentence
// (docs/price-recommendation.md, "The formula").
std::string RecommendationReason(const Recommendation& r) {
  if (!r.factor || !r.median_price) return "";
  char factor[32];
  std::snprintf(factor, sizeof factor, "%.3f", *r.factor);
  const std::string target = PercentText(kTargetUtilization);
  if (!r.utilization) {
    return std::string(
               "Below the median rented price: no listed GPU-hours were accounted in the "
               "window, so the lowest utilization factor applies (× ") +
           factor + ").";
  }
  const std::string u = PercentText(*r.utilization);
  if (*r.factor < 1) {
    return "Below the median rented price: " + u +
           " of the listed GPU-hours were rented over the last 7 days, under the " + target +
           " target, so the median is multiplied by " + factor +
           " (half the distance to the target, at least 0.85) to fill idle GPUs.";
  }
  if (*r.factor > 1) {
    return "Above the median rented price: " + u +
           " of the listed GPU-hours were rented over the last 7 days, over the " + target +
           " target, so the median is multiplied by " + factor + ".";
  }
  return "At the median rented price: " + u + " of the listed GPU-hours were rented, the " +
         target + " target.";
}

constexpr int64_t kHourUs = int64_t{3600} * 1'000'000;
constexpr int64_t kWeekUs = 7 * 24 * kHourUs;
// Supply is accounted for at most this much time per tick: after a stop, nobody knows
// what was listed meanwhile.
constexpr int64_t kMaxSupplyGapUs = int64_t{5} * 60 * 1'000'000;
constexpr size_t kLoadBatch = 500;
constexpr int64_t kCentMicros = 10'000;

std::string Usd(Usdc u) {
  std::string s = u.ToString();  // 6 decimals
  while (s.size() > 4 && s.back() == '0' && s[s.size() - 3] != '.') s.pop_back();
  return s;
}

std::string Ordinal(int64_t n) {
  const int64_t tens = n % 100;
  const char* suffix = "th";
  if (tens < 11 || tens > 13) {
    if (n % 10 == 1) suffix = "st";
    if (n % 10 == 2) suffix = "nd";
    if (n % 10 == 3) suffix = "rd";
  }
  return std::to_string(n) + suffix;
}

// The 1-based place `own` would take among `group` (which holds it) at `price`.
int64_t PlaceAt(const std::vector<SearchHit>& group, const Offer& own, Usdc price) {
  std::vector<double> values;
  values.reserve(group.size());
  for (const SearchHit& h : group) {
    values.push_back(Value(h.offer->performance_score, h.offer == &own ? price : h.offer->price));
  }
  const double median = Median(values);
  RankInputs mine = own.rank_inputs();
  mine.price = price;
  const double my_rank = Rank(mine, median).rank;
  int64_t place = 1;
  for (const SearchHit& h : group) {
    if (h.offer == &own) continue;
    const RankInputs other = h.offer->rank_inputs();
    if (Before(Sort::kRank, other, Rank(other, median).rank, mine, my_rank)) ++place;
  }
  return place;
}

// The highest price at which `own` (now at `place`) takes a better place among `group`: in
// whole cents when one does (a price a provider would set), else in micro-USDC; none when
// no price would. A lower price never ranks lower, so this is a search over the price. It
// starts from where the formula puts it with the median held (rank ∝ price^-0.5), so a few
// places are evaluated rather than a whole binary search.
std::optional<Usdc> PriceForNextPlace(const std::vector<SearchHit>& group, const Offer& own,
                                      int64_t place, double rank, double rank_above) {
  const int64_t price = own.price.micros();
  auto gains = [&](int64_t micros) {
    return micros >= 1 && PlaceAt(group, own, Usdc::Micros(micros)) < place;
  };
  // The highest n in [lo, hi] with gains(n * unit), given gains(lo * unit) and not
  // gains((hi + 1) * unit).
  auto highest = [&](int64_t lo, int64_t hi, int64_t unit) {
    while (lo < hi) {
      const int64_t mid = lo + (hi - lo + 1) / 2;
      if (gains(mid * unit)) {
        lo = mid;
      } else {
        hi = mid - 1;
      }
    }
    return lo;
  };
  const int64_t max_cents = (price - 1) / kCentMicros;
  if (max_cents >= 1 && gains(kCentMicros)) {
    int64_t lo = 1, hi = max_cents;
    if (rank > 0 && rank_above > 0) {
      const double ratio = rank / rank_above;
      const auto est =
          static_cast<int64_t>(static_cast<double>(price) * ratio * ratio) / kCentMicros;
      const int64_t a = std::clamp<int64_t>(est - 2, 1, max_cents);
      const int64_t b = std::clamp<int64_t>(est + 2, 1, max_cents);
      if (gains(a * kCentMicros)) lo = a;
      if (b < max_cents && !gains((b + 1) * kCentMicros)) hi = b;
      if (lo > hi) lo = hi;
    }
    return Usdc::Micros(highest(lo, hi, kCentMicros) * kCentMicros);
  }
  // Below a cent, in micro-USDC.
  const int64_t top = std::min<int64_t>(price - 1, kCentMicros - 1);
  if (top < 1 || !gains(1)) return std::nullopt;
  return Usdc::Micros(highest(1, top, 1));
}

std::optional<Usdc> PercentileOf(const std::vector<Usdc>& sorted, double q) {
  if (sorted.empty()) return std::nullopt;
  // Nearest rank: the smallest value with at least q of the values at or below it.
  const auto rank = static_cast<size_t>(std::ceil(q * static_cast<double>(sorted.size())));
  return sorted[std::clamp<size_t>(rank, 1, sorted.size()) - 1];
}

}  // namespace

std::string PlaceSummary(int64_t position, int64_t of, std::string_view gpu_name,
                         std::string_view region) {
  std::string s = Ordinal(position) + " of " + std::to_string(of) + " " + std::string(gpu_name) +
                  (of == 1 ? " offer" : " offers");
  if (!region.empty()) s += " in " + std::string(region);
  return s;
}

bool Market::KnownModel(const std::string& id) {
  {
    MutexLock lock(&mu_);
    if (models_.count(id)) return true;
  }
  bool exists = false;
  Status st = db_.Read([&](store::Tx& tx) -> Status {
    GPUNEX_ASSIGN_OR_RETURN(exists, catalog::ModelExists(tx, id));
    return Status::Ok();
  });
  if (!st.ok() || !exists) return false;
  MutexLock lock(&mu_);
  models_.insert(id);
  return true;
}

Market::Market(store::Database& db, MarketOptions options) : db_(db), options_(options) {
  snapshot_ = std::make_shared<const Snapshot>();
}

void Market::ScheduleOn(Background& background) {
  background.Add({.name = "market.poll",
                  .every = std::chrono::milliseconds(options_.poll_ms),
                  .pass = [this] { return PollAndSupply(); }});
}

Status Market::PollAndSupply() {
  Status polled = PollOnce();
  Timestamp next_supply;
  {
    MutexLock lock(&poll_mu_);
    next_supply = next_supply_;
  }
  if (options_.clock->Now() >= next_supply) {
    if (Status st = SupplyTick(); !st.ok()) {
      LogWarn("market.supply_failed", {{"error", st.ToString()}});
    }
    MutexLock lock(&poll_mu_);
    next_supply_ = options_.clock->Now() + std::chrono::seconds(options_.supply_tick_s);
  }
  return polled;
}

std::shared_ptr<const Snapshot> Market::snapshot() const {
  MutexLock lock(&mu_);
  return snapshot_;
}

void Market::Publish(std::vector<std::shared_ptr<const MachineOffers>> changed) {
  if (changed.empty()) return;
  std::shared_ptr<const Snapshot> base = snapshot();
  std::shared_ptr<const Snapshot> next = base->With(std::move(changed));
  MutexLock lock(&mu_);
  snapshot_ = std::move(next);
}

Status Market::ReloadAll() {
  MutexLock poll(&poll_mu_);
  const Timestamp started = options_.clock->Now();
  std::vector<std::string> ids;
  GPUNEX_RETURN_IF_ERROR(db_.Read([&](store::Tx& tx) -> Status {
    GPUNEX_ASSIGN_OR_RETURN(std::vector<fleet::MachineSummary> all, fleet::MachineSummaries(tx));
    ids.clear();
    for (auto& m : all) ids.push_back(std::move(m.id));
    return Status::Ok();
  }));
  std::vector<std::shared_ptr<const MachineOffers>> loaded;
  loaded.reserve(ids.size());
  for (size_t i = 0; i < ids.size(); i += kLoadBatch) {
    GPUNEX_RETURN_IF_ERROR(db_.Read([&](store::Tx& tx) -> Status {
      for (size_t j = i; j < std::min(ids.size(), i + kLoadBatch); ++j) {
        GPUNEX_ASSIGN_OR_RETURN(MachineOffers m, LoadMachineOffers(tx, ids[j]));
        loaded.push_back(std::make_shared<const MachineOffers>(std::move(m)));
      }
      return Status::Ok();
    }));
  }
  auto next = std::make_shared<const Snapshot>(std::move(loaded));
  GPUNEX_ASSIGN_OR_RETURN(std::vector<catalog::CatalogModel> models, catalog::ListModels(db_));
  MutexLock lock(&mu_);
  snapshot_ = std::move(next);
  for (const auto& m : models) models_.insert(m.model.id);
  last_full_ = started;
  return Status::Ok();
}

Status Market::PollOnce() {
  bool full_due = false;
  {
    MutexLock lock(&mu_);
    full_due = options_.clock->Now() - last_full_ >= std::chrono::seconds(options_.full_reload_s);
  }
  if (full_due) return ReloadAll();
  MutexLock poll(&poll_mu_);
  const int64_t since =
      ToUnixMicros(options_.clock->Now()) - options_.lookback_s * int64_t{1'000'000};
  std::shared_ptr<const Snapshot> snap = snapshot();
  std::vector<std::shared_ptr<const MachineOffers>> changed;
  GPUNEX_RETURN_IF_ERROR(db_.Read([&](store::Tx& tx) -> Status {
    changed.clear();
    GPUNEX_ASSIGN_OR_RETURN(auto stamps, fleet::OffersChangedSince(tx, since));
    for (const auto& [id, stamp] : stamps) {
      const MachineOffers* have = snap->Machine(id);
      if (have && have->stamp == stamp) continue;
      GPUNEX_ASSIGN_OR_RETURN(MachineOffers m, LoadMachineOffers(tx, id));
      changed.push_back(std::make_shared<const MachineOffers>(std::move(m)));
    }
    return Status::Ok();
  }));
  Publish(std::move(changed));
  return Status::Ok();
}

Status Market::SupplyTick() {
  const Timestamp now = options_.clock->Now();
  std::shared_ptr<const Snapshot> snap = snapshot();
  return db_.Transact([&](store::Tx& tx) -> Status {
    MarketStore s(tx);
    GPUNEX_ASSIGN_OR_RETURN(std::optional<Timestamp> until, s.AccruedUntil());
    GPUNEX_ASSIGN_OR_RETURN(bool mine, s.AdvanceAccrued(until, now));
    if (!mine || !until || *until >= now) return Status::Ok();
    const int64_t to = ToUnixMicros(now);
    int64_t from = std::max(ToUnixMicros(*until), to - kMaxSupplyGapUs);
    std::map<std::pair<std::string, std::string>, std::pair<int64_t, int64_t>> gpus;
    for (const Offer* o : snap->offers()) {
      auto& g = gpus[{o->gpu_model, o->region}];
      g.first += o->gpus_total;
      g.second += o->gpus_rented;
    }
    while (from < to) {
      const int64_t hour = from / kHourUs;
      const int64_t end = std::min(to, (hour + 1) * kHourUs);
      for (const auto& [key, n] : gpus) {
        GPUNEX_RETURN_IF_ERROR(s.AddSupply(hour, key.first, key.second,
                                           {n.first * (end - from), n.second * (end - from)}));
      }
      from = end;
    }
    return Status::Ok();
  });
}

bool Market::SeesMachine(const std::optional<accounts::Principal>& p, const Offer& o) {
  return p && (p->IsAdmin() || p->IsProvider(o.provider_id));
}

StatusOr<OwnOffers> Market::ProviderOffers(const accounts::Principal& p) {
  if (!p.user.HasRole(accounts::kRoleProvider)) {
    return PermissionDenied("only providers have offers");
  }
  OwnOffers out;
  out.snapshot = snapshot();
  // Each model and region's offers in order, ranked once per request.
  std::map<std::pair<std::string, std::string>, std::vector<SearchHit>> groups;
  for (const Offer* o : out.snapshot->offers()) {
    if (o->provider_id != p.user.id) continue;
    auto [it, fresh] = groups.try_emplace({o->gpu_model, o->region});
    if (fresh) {
      OfferQuery q;
      q.gpu_models = {o->gpu_model};
      q.region = o->region;
      q.min_gpus = 0;  // its place even while every GPU is taken
      it->second = RankAll(*out.snapshot, q);
    }
    const std::vector<SearchHit>& group = it->second;
    OwnOfferRank r;
    r.offer = o;
    r.of = static_cast<int64_t>(group.size());
    for (const SearchHit& h : group) {
      if (h.offer == o) {
        r.position = h.position;
        r.explain = h.explain;
      }
    }
    const std::string where = o->region.empty() ? "" : " in " + o->region;
    if (r.position > 1) {
      const double above = group[static_cast<size_t>(r.position - 2)].explain.rank;
      r.price_for_next_place = PriceForNextPlace(group, *o, r.position, r.explain.rank, above);
      if (r.price_for_next_place) {
        r.advice.push_back("At " + Usd(*r.price_for_next_place) +
                           " USDC per GPU-hour it would rank " +
                           Ordinal(PlaceAt(group, *o, *r.price_for_next_place)) + " of " +
                           std::to_string(r.of) + where + ".");
      }
    }
    if (o->gpus_available == 0) {
      r.advice.push_back("No GPU of this offer is free now, so searches do not show it.");
    }
    if (o->reliability_score < 95) {
      r.advice.push_back("Rank grows in step with the reliability score (now " +
                         std::to_string(static_cast<int>(o->reliability_score)) +
                         "): every point of uptime kept in the schedule counts.");
    }
    if (o->tier != providers::Tier::kEnterprise) {
      r.advice.push_back("Enterprise providers rank 10% higher (tier factor 1.10).");
    }
    if (o->commitment_months < 12) {
      r.advice.push_back("A 12-month commitment gives a factor of 1.08 (now " +
                         std::to_string(CommitFactor(o->commitment_months)).substr(0, 4) + ").");
    }
    out.offers.push_back(std::move(r));
  }
  return out;
}

StatusOr<RecommendationView> Market::Recommend(const std::string& gpu_model,
                                               const std::string& region) {
  const Timestamp now = options_.clock->Now();
  const Timestamp from = now - std::chrono::microseconds(kWeekUs);
  RecommendationView v;
  v.gpu_model = gpu_model;
  v.region = region;
  GPUNEX_RETURN_IF_ERROR(db_.Read([&](store::Tx& tx) -> Status {
    GPUNEX_ASSIGN_OR_RETURN(std::optional<GpuModel> model, catalog::FindModel(tx, gpu_model));
    if (!model) return FieldError("gpu_model", "is not a GPU model of the catalog");
    v.catalog_price = model->default_price;
    MarketStore s(tx);
    const int64_t from_hour = ToUnixMicros(from) / kHourUs;
    GPUNEX_ASSIGN_OR_RETURN(SupplySums global, s.Supply(gpu_model, "", from_hour));
    SupplySums local;
    if (!region.empty()) {
      GPUNEX_ASSIGN_OR_RETURN(local, s.Supply(gpu_model, region, from_hour));
    }
    auto hours = [](int64_t us) { return static_cast<double>(us) / static_cast<double>(kHourUs); };
    v.global_window = {hours(global.listed_gpu_us), hours(global.rented_gpu_us), {}};
    v.region_window = {hours(local.listed_gpu_us), hours(local.rented_gpu_us), {}};
    if (rental_samples_) {
      GPUNEX_ASSIGN_OR_RETURN(v.global_window.rentals,
                              rental_samples_(tx, gpu_model, "", from, now));
      if (!region.empty()) {
        GPUNEX_ASSIGN_OR_RETURN(v.region_window.rentals,
                                rental_samples_(tx, gpu_model, region, from, now));
      }
    }
    return Status::Ok();
  }));
  v.recommendation = market::Recommend(v.region_window, v.global_window, v.catalog_price);
  const Recommendation& r = v.recommendation;
  if (r.basis == "region") {
    v.note = "From " + std::to_string(r.sample_rentals) + " rentals in " + region +
             " over the last 7 days.";
  } else if (r.basis == "global") {
    v.note = "Fewer than 5 rentals in " + (region.empty() ? std::string("the region") : region) +
             " over the last 7 days: from the " + std::to_string(r.sample_rentals) +
             " rentals of this model in every region.";
  } else {
    v.note =
        "No rentals of this model in the last 7 days: this is the catalog's default "
        "price for it.";
  }
  v.reason = RecommendationReason(r);
  return v;
}

StatusOr<MarketStats> Market::Stats(const std::string& gpu_model, const std::string& region) {
  MarketStats out;
  out.gpu_model = gpu_model;
  out.region = region;
  std::shared_ptr<const Snapshot> snap = snapshot();
  std::vector<Usdc> prices;
  for (const Offer* o : snap->offers()) {
    if (!gpu_model.empty() && o->gpu_model != gpu_model) continue;
    if (!region.empty() && o->region != region) continue;
    ++out.offers;
    out.listed_gpus += o->gpus_total;
    out.available_gpus += o->gpus_available;
    out.rented_gpus += o->gpus_rented;
    for (int64_t i = 0; i < o->gpus_total; ++i) prices.push_back(o->price);
  }
  std::sort(prices.begin(), prices.end());
  out.price_p25 = PercentileOf(prices, 0.25);
  out.price_median = PercentileOf(prices, 0.5);
  out.price_p75 = PercentileOf(prices, 0.75);
  return out;
}

}  // namespace gpunex::platform::market
