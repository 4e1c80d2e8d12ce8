#include "platform/market/recommendation.h"

#include <algorithm>
#include <cmath>

namespace gpunex::platform::market {

std::optional<Usdc> MedianRentedPrice(const std::vector<RentalSample>& rentals) {
  std::vector<RentalSample> sorted;
  double total = 0;
  for (const RentalSample& r : rentals) {
    if (r.gpu_hours <= 0) continue;
    sorted.push_back(r);
    total += r.gpu_hours;
  }
  if (sorted.empty()) return std::nullopt;
  std::sort(sorted.begin(), sorted.end(),
            [](const RentalSample& a, const RentalSample& b) { return a.price < b.price; });
  const double half = total / 2;
  double seen = 0;
  for (size_t i = 0; i < sorted.size(); ++i) {
    seen += sorted[i].gpu_hours;
    if (seen > half) return sorted[i].price;
    if (seen == half) {  // exactly half below: between this price and the next
      const int64_t a = sorted[i].price.micros(), b = sorted[i + 1].price.micros();
      return Usdc::Micros(a + (b - a) / 2);
    }
  }
  return sorted.back().price;
}

double UtilizationFactor(double u) {
  return std::clamp(1 + 0.5 * (u - kTargetUtilization), 0.85, 1.20);
}

Recommendation Recommend(const MarketWindow& region, const MarketWindow& global,
                         Usdc catalog_default) {
  const MarketWindow* w = nullptr;
  Recommendation r;
  if (static_cast<int64_t>(region.rentals.size()) >= kMinRegionRentals) {
    w = &region;
    r.basis = "region";
  } else if (!global.rentals.empty()) {
    w = &global;
    r.basis = "global";
  } else {
    w = &global;
    r.basis = "catalog";
  }
  if (w->listed_gpu_hours > 0) r.utilization = w->rented_gpu_hours / w->listed_gpu_hours;
  r.sample_rentals = static_cast<int64_t>(w->rentals.size());
  r.median_price = MedianRentedPrice(w->rentals);
  if (!r.median_price) {
    r.price = catalog_default;
    return r;
  }
  const double factor = UtilizationFactor(r.utilization.value_or(0));
  r.factor = factor;
  // p · factor in micro-USDC, rounded down; factor has at most a few significant digits
  // beyond the third decimal, so the double product is exact enough to floor.
  r.price = Usdc::Micros(static_cast<int64_t>(
      std::floor(static_cast<double>(r.median_price->micros()) * factor + 1e-6)));
  return r;
}

}  // namespace gpunex::platform::market
