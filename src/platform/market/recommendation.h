// The price recommendation (PRC-3, SPEC §13a), pure; docs/price-recommendation.md has the
// worked example that recommendation_test.cc checks.
//
// Per GPU model and region, over the last 7 days:
//   u = rented GPU-hours / listed GPU-hours
//   p = the median price of the rented GPU-hours (each rental's price weighted by its
//       GPU-hours: the price at which half the rented GPU-hours were sold; with an even
//       split, the mean of the two prices either side)
//   recommended = p · clamp(1 + 0.5·(u − 0.7), 0.85, 1.20), rounded down to a micro-USDC
// Fewer than 5 rentals in the region: the model's figures over every region ("global");
// none at all: the catalog's default price for the model ("catalog"), unchanged.
//
// Thread-safety: pure functions over values.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/money.h"

namespace gpunex::platform::market {

inline constexpr int64_t kMinRegionRentals = 5;
inline constexpr double kTargetUtilization = 0.7;

// One rental's part of the window: its GPU-hours inside the window and its price.
struct RentalSample {
  double gpu_hours = 0;
  Usdc price;  // per GPU-hour
};

// Supply and demand of one model in one region (or every region) over the window.
struct MarketWindow {
  double listed_gpu_hours = 0;  // GPUs on the marketplace (listed, rented or benchmarking)
  double rented_gpu_hours = 0;
  std::vector<RentalSample> rentals;
};

struct Recommendation {
  Usdc price;
  std::optional<double> utilization;  // none: nothing was listed
  std::optional<Usdc> median_price;   // none: no rentals
  int64_t sample_rentals = 0;
  std::string basis;  // "region" | "global" | "catalog"
  // The utilization factor the median was multiplied by; none for "catalog".
  std::optional<double> factor;
};

// The GPU-hour-weighted median price; nullopt without rentals.
std::optional<Usdc> MedianRentedPrice(const std::vector<RentalSample>& rentals);
// The multiplier clamp(1 + 0.5·(u − 0.7), 0.85, 1.20).
double UtilizationFactor(double u);
Recommendation Recommend(const MarketWindow& region, const MarketWindow& global,
                         Usdc catalog_default);

}  // namespace gpunex::platform::market
