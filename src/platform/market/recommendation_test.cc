#include "platform/market/recommendation.h"

#include <gtest/gtest.h>

#include <vector>

namespace gpunex::platform::market {
namespace {

RentalSample Rental(double gpu_hours, int64_t price_micros) {
  return {gpu_hours, Usdc::Micros(price_micros)};
}

const Usdc kL4Catalog = Usdc::Micros(400'000);

// ------------------------------------------------------------------ the worked examples
//
// docs/price-recommendation.md: one example per basis, every printed figure checked.

// eu-south: 12 L4 GPUs listed all week (2 016 GPU-hours), 6 rentals of 1 512 GPU-hours.
MarketWindow EuSouth() {
  return {2016,
          1512,
          {Rental(120, 420'000), Rental(300, 450'000), Rental(200, 400'000), Rental(500, 480'000),
           Rental(250, 440'000), Rental(142, 500'000)}};
}

// Every region: 3 600 GPU-hours listed, 8 rentals of 2 400 GPU-hours.
MarketWindow Global() {
  return {3600,
          2400,
          {Rental(400, 380'000), Rental(300, 400'000), Rental(500, 420'000), Rental(350, 440'000),
           Rental(250, 450'000), Rental(200, 460'000), Rental(250, 470'000), Rental(150, 500'000)}};
}

// eu-north: 3 rentals only.
MarketWindow EuNorth() {
  return {504, 300, {Rental(100, 440'000), Rental(150, 460'000), Rental(50, 500'000)}};
}

TEST(RecommendationExample, RegionBasis) {
  const Recommendation r = Recommend(EuSouth(), Global(), kL4Catalog);
  EXPECT_EQ(r.basis, "region");
  EXPECT_EQ(r.sample_rentals, 6);
  ASSERT_TRUE(r.utilization);
  EXPECT_DOUBLE_EQ(*r.utilization, 0.75);
  // Sorted by price: 200 h at 0.40, 120 at 0.42, 250 at 0.44 (570 so far, under the half
  // of 756), 300 at 0.45 (870): the median is 0.45.
  EXPECT_EQ(r.median_price, Usdc::Micros(450'000));
  EXPECT_DOUBLE_EQ(UtilizationFactor(0.75), 1.025);
  EXPECT_EQ(r.factor, 1.025);
  // 450 000 · 1.025 = 461 250 exactly (the double product is 461 249.99999999994).
  EXPECT_EQ(r.price, Usdc::Micros(461'250));
}

TEST(RecommendationExample, GlobalBasisWithHalfSplitAndRoundingDown) {
  const Recommendation r = Recommend(EuNorth(), Global(), kL4Catalog);
  EXPECT_EQ(r.basis, "global");
  EXPECT_EQ(r.sample_rentals, 8);
  ASSERT_TRUE(r.utilization);
  EXPECT_NEAR(*r.utilization, 0.666667, 5e-7);
  // 400 h at 0.38, 300 at 0.40, 500 at 0.42: exactly 1 200 of 2 400 GPU-hours, so the
  // median is between 0.42 and the next price, 0.44.
  EXPECT_EQ(MedianRentedPrice(Global().rentals), Usdc::Micros(430'000));
  EXPECT_EQ(r.median_price, Usdc::Micros(430'000));
  EXPECT_NEAR(UtilizationFactor(*r.utilization), 0.983333, 5e-7);
  // 430 000 · 0.983333... = 422 833.33 micro-USDC, rounded down.
  EXPECT_EQ(r.price, Usdc::Micros(422'833));
}

TEST(RecommendationExample, CatalogBasis) {
  // No rentals anywhere (today: the rentals folder does not exist yet), 24 GPUs listed.
  const MarketWindow region{1008, 0, {}};
  const MarketWindow global{4032, 0, {}};
  const Recommendation r = Recommend(region, global, kL4Catalog);
  EXPECT_EQ(r.basis, "catalog");
  EXPECT_EQ(r.price, kL4Catalog);
  EXPECT_EQ(r.sample_rentals, 0);
  EXPECT_EQ(r.median_price, std::nullopt);
  EXPECT_EQ(r.factor, std::nullopt);
  ASSERT_TRUE(r.utilization);  // the global window's
  EXPECT_EQ(*r.utilization, 0);
}

// ------------------------------------------------------------------ the pieces

TEST(Recommendation, FiveRentalsInTheRegionAreEnoughFourAreNot) {
  MarketWindow region{500, 350, {}};
  for (int i = 0; i < 4; ++i) region.rentals.push_back(Rental(70, 600'000));
  const MarketWindow global = Global();
  Recommendation r = Recommend(region, global, kL4Catalog);
  EXPECT_EQ(r.basis, "global");
  EXPECT_EQ(r.sample_rentals, 8);
  EXPECT_EQ(r.median_price, Usdc::Micros(430'000));
  region.rentals.push_back(Rental(70, 600'000));
  r = Recommend(region, global, kL4Catalog);
  EXPECT_EQ(r.basis, "region");
  EXPECT_EQ(r.sample_rentals, 5);
  EXPECT_EQ(r.median_price, Usdc::Micros(600'000));
  EXPECT_DOUBLE_EQ(*r.utilization, 0.7);
  EXPECT_EQ(r.price, Usdc::Micros(600'000));  // u = 0.7: factor 1
}

TEST(Recommendation, NoRegionAsksForTheGlobalFigures) {
  // GET /market/recommendation without region: the region window is empty.
  const Recommendation r = Recommend(MarketWindow{}, Global(), kL4Catalog);
  EXPECT_EQ(r.basis, "global");
  EXPECT_EQ(r.price, Usdc::Micros(422'833));
}

TEST(Recommendation, UtilizationFactorClamps) {
  EXPECT_DOUBLE_EQ(UtilizationFactor(0), 0.85);
  EXPECT_DOUBLE_EQ(UtilizationFactor(0.4), 0.85);
  EXPECT_DOUBLE_EQ(UtilizationFactor(0.5), 0.90);
  EXPECT_DOUBLE_EQ(UtilizationFactor(0.7), 1.00);
  EXPECT_DOUBLE_EQ(UtilizationFactor(1.0), 1.15);
  EXPECT_DOUBLE_EQ(UtilizationFactor(1.1), 1.20);
  EXPECT_DOUBLE_EQ(UtilizationFactor(1.5), 1.20);
}

TEST(Recommendation, ClampAtBothEndsInThePrice) {
  const std::vector<RentalSample> five(5, Rental(10, 1'000'000));
  // u = 0: 0.85.
  EXPECT_EQ(Recommend({100, 0, five}, {}, kL4Catalog).price, Usdc::Micros(850'000));
  // u = 1.5 (more rented than listed, which the accounting should not produce): 1.20.
  EXPECT_EQ(Recommend({100, 150, five}, {}, kL4Catalog).price, Usdc::Micros(1'200'000));
  // u = 0.7: the median unchanged.
  EXPECT_EQ(Recommend({100, 70, five}, {}, kL4Catalog).price, Usdc::Micros(1'000'000));
}

TEST(Recommendation, WeightedMedian) {
  EXPECT_EQ(MedianRentedPrice({}), std::nullopt);
  EXPECT_EQ(MedianRentedPrice({Rental(5, 300'000)}), Usdc::Micros(300'000));
  // The GPU-hours weigh, not the number of rentals: one long rental outweighs three short.
  EXPECT_EQ(MedianRentedPrice(
                {Rental(1, 300'000), Rental(1, 310'000), Rental(1, 320'000), Rental(10, 900'000)}),
            Usdc::Micros(900'000));
  // Input order does not matter.
  EXPECT_EQ(MedianRentedPrice(
                {Rental(10, 900'000), Rental(1, 320'000), Rental(1, 300'000), Rental(1, 310'000)}),
            Usdc::Micros(900'000));
  // An exact half split: the mean of the prices either side.
  EXPECT_EQ(MedianRentedPrice({Rental(2, 400'000), Rental(2, 500'000)}), Usdc::Micros(450'000));
  EXPECT_EQ(MedianRentedPrice({Rental(3, 500'000), Rental(1, 410'000), Rental(2, 390'000)}),
            Usdc::Micros(455'000));
  // ... rounded down to a micro-USDC.
  EXPECT_EQ(MedianRentedPrice({Rental(1, 400'000), Rental(1, 400'001)}), Usdc::Micros(400'000));
  // Just past the half: that price.
  EXPECT_EQ(MedianRentedPrice({Rental(2.001, 400'000), Rental(2, 500'000)}), Usdc::Micros(400'000));
  // Rentals without GPU-hours in the window weigh nothing.
  EXPECT_EQ(MedianRentedPrice({Rental(0, 100'000), Rental(0, 200'000)}), std::nullopt);
  EXPECT_EQ(MedianRentedPrice({Rental(0, 100'000), Rental(3, 700'000)}), Usdc::Micros(700'000));
}

TEST(Recommendation, RoundsDownToAMicroUsdc) {
  const std::vector<RentalSample> five(5, Rental(10, 333'333));
  // u = 0.75: 333 333 · 1.025 = 341 666.325.
  EXPECT_EQ(Recommend({100, 75, five}, {}, kL4Catalog).price, Usdc::Micros(341'666));
  // u = 0.5: 333 333 · 0.9 = 299 999.7.
  EXPECT_EQ(Recommend({100, 50, five}, {}, kL4Catalog).price, Usdc::Micros(299'999));
  // An exact product stays exact although its double is a hair below it:
  // 450 000 · 1.025 = 461 249.99999999994 in doubles.
  const std::vector<RentalSample> at45(5, Rental(10, 450'000));
  EXPECT_EQ(Recommend({100, 75, at45}, {}, kL4Catalog).price, Usdc::Micros(461'250));
}

TEST(Recommendation, ZeroListedHoursLeavesUtilizationUnknown) {
  const std::vector<RentalSample> five(5, Rental(10, 500'000));
  const Recommendation r = Recommend({0, 50, five}, {}, kL4Catalog);
  EXPECT_EQ(r.basis, "region");
  EXPECT_EQ(r.utilization, std::nullopt);
  // Without a utilization the factor is the one of u = 0 (see docs/price-recommendation.md).
  EXPECT_EQ(r.price, Usdc::Micros(425'000));
  // Catalog with nothing listed anywhere: no utilization either.
  const Recommendation c = Recommend({}, {}, kL4Catalog);
  EXPECT_EQ(c.basis, "catalog");
  EXPECT_EQ(c.utilization, std::nullopt);
  EXPECT_EQ(c.price, kL4Catalog);
}

}  // namespace
}  // namespace gpunex::platform::market
