// The marketplace over a real store on both backends: the offer index follows prices,
// GPUs disabled and machines going offline through the stamps, sees two changes within
// one stopped clock tick, accounts supply once per tick across instances, recommends the
// catalog price without rentals and the formula's with them, and tells a provider its
// place and the price that gains one.
#include "platform/market/market.h"

#include <gtest/gtest.h>

#include "platform/applications/applications_store.h"
#include "platform/catalog/catalog.h"
#include "platform/fleet/test_util.h"
#include "platform/pricing/pricing.h"
#include "platform/providers/providers.h"

namespace gpunex::platform::market {
namespace {

using fleet::testing::FakeAgent;

constexpr const char* kH100 = "h100-sxm-80gb";

class MarketTest : public fleet::testing::FleetTestBase {
 protected:
  void SetUp() override {
    FleetTestBase::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    clock_.Set(*ParseRfc3339("2026-12-01T10:20:00Z"));
    ASSERT_TRUE(catalog::SeedBuiltinModels(db(), clock_).ok());
    price_every_model_ = false;
    MakeFleet(DefaultOptions());
    pricing_ =
        std::make_unique<pricing::Pricing>(faults(), fleet(), pricing::PricingOptions{&clock_});
    market_ = MakeMarket();
    Approve(pia_, "Milan", "IT", "eu-south", 6);
    Approve(oscar_, "Turin", "IT", "eu-south", 0);
  }
  void TearDown() override {
    market_.reset();
    pricing_.reset();
    FleetTestBase::TearDown();
  }
  std::unique_ptr<Market> MakeMarket() {
    MarketOptions o;
    o.clock = &clock_;
    return std::make_unique<Market>(faults(), o);
  }
  Market& market() { return *market_; }

  void Approve(const std::string& user_id, std::string city, std::string country,
               std::string region, int64_t commitment) {
    ASSERT_TRUE(db().Transact([&](store::Tx& tx) -> Status {
                      applications::ApplicationRow row;
                      row.id = "app_" + user_id;
                      row.user_id = user_id;
                      row.status = applications::ApplicationStatus::kApproved;
                      applications::GpuEntry e;
                      e.model = kH100;
                      e.location = applications::Location{city, country, region};
                      row.body.gpus = {e};
                      row.body.infrastructure.commitment_months = commitment;
                      row.suggested_tier = applications::Tier::kCommunity;
                      row.created_at = row.updated_at = clock_.Now();
                      return applications::ApplicationsStore(tx).Insert(row);
                    })
                    .ok());
  }
  FakeAgent& Machine(const std::string& provider) {
    FakeAgent& a = NewAgent(provider);
    EXPECT_TRUE(a.Join().has_value());
    return a;
  }
  void Price(const std::string& provider, int64_t micros) {
    ASSERT_TRUE(pricing_->SetProviderPrices(As(provider), {{kH100, Usdc::Micros(micros)}}).ok());
  }
  // Every GPU of the machine scores `score`, as a passed benchmark would record it.
  void Score(const std::string& machine_id, double score) {
    for (const std::string& g : GpuIds(machine_id)) {
      ASSERT_TRUE(
          db().Transact([&](store::Tx& tx) -> Status {
                GPUNEX_RETURN_IF_ERROR(
                    tx.Exec("DELETE FROM gpu_benchmark_status WHERE gpu_id = ?", {g}).status());
                GPUNEX_RETURN_IF_ERROR(
                    tx.Exec("INSERT INTO gpu_benchmark_status (gpu_id, machine_id, "
                            "performance_score, last_benchmark_at) VALUES (?, ?, ?, ?)",
                            {g, machine_id, score, ToUnixMicros(clock_.Now())})
                        .status());
                return fleet::TouchOffers(tx, clock_.Now(), machine_id);
              })
              .ok());
    }
  }
  std::vector<const Offer*> Offers() {
    EXPECT_TRUE(market().PollOnce().ok());
    snap_ = market().snapshot();
    return snap_->offers();
  }

  std::unique_ptr<pricing::Pricing> pricing_;
  std::unique_ptr<Market> market_;
  std::shared_ptr<const Snapshot> snap_;
};

TEST_P(MarketTest, TheIndexFollowsPricesDisabledGpusAndMachinesGoingOffline) {
  FakeAgent& a = Machine(pia_);
  ASSERT_TRUE(market().ReloadAll().ok());
  EXPECT_TRUE(market().snapshot()->offers().empty()) << "no price, no offer";

  Price(pia_, 2'200'000);
  auto offers = Offers();
  ASSERT_EQ(offers.size(), 1u);
  const Offer& o = *offers[0];
  EXPECT_EQ(o.id, OfferId(a.machine_id, kH100));
  EXPECT_EQ(o.machine_id, a.machine_id);
  EXPECT_EQ(o.gpus_available, 2);
  EXPECT_EQ(o.gpus_total, 2);
  EXPECT_EQ(o.price, Usdc::Micros(2'200'000));
  EXPECT_EQ(o.gpu_name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(o.vram_gb, 80);
  EXPECT_EQ(o.city, "Milan");
  EXPECT_EQ(o.country, "IT");
  EXPECT_EQ(o.region, "eu-south");
  EXPECT_EQ(o.commitment_months, 6);
  EXPECT_EQ(o.tier, providers::Tier::kCommunity);
  EXPECT_EQ(o.pseudonym, Pseudonym(pia_));
  EXPECT_NE(o.pseudonym, Pseudonym(oscar_));
  EXPECT_TRUE(o.reliability_new);
  EXPECT_EQ(o.available_gpu_ids, GpuIds(a.machine_id));

  // Nothing changed: the machine's offers are not loaded again.
  const MachineOffers* before = market().snapshot()->Machine(a.machine_id);
  Offers();
  EXPECT_EQ(market().snapshot()->Machine(a.machine_id), before);

  // Two changes within one tick of a stopped clock are both seen.
  Price(pia_, 2'100'000);
  ASSERT_EQ(Offers()[0]->price, Usdc::Micros(2'100'000));
  Price(pia_, 2'000'000);
  ASSERT_EQ(Offers()[0]->price, Usdc::Micros(2'000'000));

  ASSERT_TRUE(fleet().SetGpuEnabled(As(pia_), a.machine_id, GpuIds(a.machine_id)[0], false).ok());
  offers = Offers();
  ASSERT_EQ(offers.size(), 1u);
  EXPECT_EQ(offers[0]->gpus_available, 1);
  EXPECT_EQ(offers[0]->gpus_total, 1);

  a.Disconnect();
  clock_.Advance(std::chrono::seconds(31));
  ASSERT_TRUE(fleet().SweepOnce().ok());
  EXPECT_TRUE(Offers().empty()) << "an offline machine offers nothing";
}

TEST_P(MarketTest, AFullReloadFindsWhatNoStampMarked) {
  FakeAgent& a = Machine(pia_);
  Price(pia_, 1'000'000);
  ASSERT_EQ(Offers().size(), 1u);
  // A tier change marks no stamp; the periodic full reload picks it up.
  ASSERT_TRUE(db().Transact([&](store::Tx& tx) {
                    return providers::UpsertProvider(tx, clock_.Now(), pia_,
                                                     providers::Tier::kEnterprise, "app_" + pia_,
                                                     admin_);
                  })
                  .ok());
  clock_.Advance(std::chrono::minutes(1));
  EXPECT_EQ(Offers()[0]->tier, providers::Tier::kCommunity);
  clock_.Advance(std::chrono::minutes(5));
  EXPECT_EQ(Offers()[0]->tier, providers::Tier::kEnterprise);
  EXPECT_EQ(Offers()[0]->machine_id, a.machine_id);
}

TEST_P(MarketTest, SupplyIsAccountedOncePerTickAcrossInstancesAndSplitByHour) {
  Machine(pia_);
  Price(pia_, 1'000'000);
  Offers();
  auto other = MakeMarket();
  ASSERT_TRUE(other->ReloadAll().ok());
  ASSERT_TRUE(market().SupplyTick().ok());  // the starting point
  clock_.Advance(std::chrono::minutes(4));  // 10:24, then across 11:00 below
  ASSERT_TRUE(market().SupplyTick().ok());
  ASSERT_TRUE(other->SupplyTick().ok()) << "the other instance finds the tick done";
  const int64_t minute = 60'000'000;
  EXPECT_EQ(Number("SELECT SUM(listed_gpu_us) FROM market_supply"), 2 * 4 * minute);
  clock_.Set(*ParseRfc3339("2026-12-01T11:02:00Z"));
  ASSERT_TRUE(other->SupplyTick().ok());
  // At most 5 minutes are accounted after a gap (nobody knows what was listed meanwhile):
  // 10:57–11:00 in one hour, 11:00–11:02 in the next.
  EXPECT_EQ(Number("SELECT COUNT(*) FROM market_supply"), 2);
  EXPECT_EQ(Number("SELECT listed_gpu_us FROM market_supply WHERE hour = ?",
                   {ToUnixMicros(clock_.Now()) / (3600 * int64_t{1'000'000})}),
            2 * 2 * minute);
  EXPECT_EQ(Number("SELECT SUM(rented_gpu_us) FROM market_supply"), 0);
  EXPECT_EQ(Number("SELECT SUM(listed_gpu_us) FROM market_supply"), 2 * (4 + 5) * minute);

  auto r = market().Recommend(kH100, "eu-south");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_DOUBLE_EQ(r->region_window.listed_gpu_hours, 2.0 * 9 / 60);
  EXPECT_EQ(r->recommendation.basis, "catalog");
  EXPECT_EQ(r->recommendation.price, FindGpuModel(kH100)->default_price);
  EXPECT_EQ(r->recommendation.sample_rentals, 0);
  EXPECT_DOUBLE_EQ(r->recommendation.utilization.value_or(-1), 0);
}

TEST_P(MarketTest, TheRecommendationUsesRentalsWhenThereAreAny) {
  std::vector<RentalSample> region(5, {2.0, Usdc::Micros(2'000'000)});
  market().SetRentalSamples([&](store::Tx&, const std::string& model, const std::string& where,
                                Timestamp from,
                                Timestamp to) -> StatusOr<std::vector<RentalSample>> {
    EXPECT_EQ(model, kH100);
    EXPECT_EQ(to - from, std::chrono::hours(24 * 7));
    if (where == "eu-south") return region;
    return std::vector<RentalSample>(7, {1.0, Usdc::Micros(3'000'000)});
  });
  auto r = market().Recommend(kH100, "eu-south");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->recommendation.basis, "region");
  EXPECT_EQ(r->recommendation.sample_rentals, 5);
  // Nothing listed: no utilization, which counts as 0 (factor 0.85).
  EXPECT_EQ(r->recommendation.price, Usdc::Micros(1'700'000));
  EXPECT_EQ(r->recommendation.factor, 0.85);
  EXPECT_EQ(r->reason,
            "Below the median rented price: no listed GPU-hours were accounted in the window, "
            "so the lowest utilization factor applies (× 0.850).");
  region.pop_back();
  r = market().Recommend(kH100, "eu-south");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->recommendation.basis, "global");
  EXPECT_EQ(r->recommendation.sample_rentals, 7);
  EXPECT_EQ(r->recommendation.median_price, Usdc::Micros(3'000'000));
  EXPECT_EQ(market().Recommend("b200", "").status().code(), StatusCode::kValidationFailed);
}

TEST_P(MarketTest, AProviderSeesItsPlaceAndThePriceThatGainsOne) {
  FakeAgent& a = Machine(pia_);
  FakeAgent& b = Machine(oscar_);
  Price(pia_, 3'000'000);
  Price(oscar_, 2'000'000);
  Score(a.machine_id, 100);
  Score(b.machine_id, 100);
  Offers();
  auto own = market().ProviderOffers(As(pia_));
  ASSERT_TRUE(own.ok()) << own.status().ToString();
  ASSERT_EQ(own->offers.size(), 1u);
  const OwnOfferRank& r = own->offers[0];
  EXPECT_EQ(r.offer->machine_id, a.machine_id);
  EXPECT_EQ(r.position, 2);
  EXPECT_EQ(r.of, 2);
  EXPECT_EQ(PlaceSummary(r.position, r.of, r.offer->gpu_name, r.offer->region),
            "2nd of 2 NVIDIA H100 80GB HBM3 offers in eu-south");
  ASSERT_TRUE(r.price_for_next_place.has_value());
  const Usdc gain = *r.price_for_next_place;
  EXPECT_LT(gain, Usdc::Micros(3'000'000));
  EXPECT_FALSE(r.advice.empty());

  EXPECT_EQ(gain.micros() % 10'000, 0) << "in whole cents";
  // At that price it is first; a cent more and it is second again.
  Price(pia_, gain.micros() + 10'000);
  Offers();
  own = market().ProviderOffers(As(pia_));
  ASSERT_TRUE(own.ok());
  EXPECT_EQ(own->offers[0].position, 2);
  Price(pia_, gain.micros());
  Offers();
  own = market().ProviderOffers(As(pia_));
  ASSERT_TRUE(own.ok());
  EXPECT_EQ(own->offers[0].position, 1);
  EXPECT_FALSE(own->offers[0].price_for_next_place.has_value());
  EXPECT_EQ(market().ProviderOffers(As(customer_)).status().code(), StatusCode::kPermissionDenied);
}

TEST_P(MarketTest, StatsCountGpusAndPriceQuartiles) {
  Machine(pia_);
  Machine(oscar_);
  Price(pia_, 1'000'000);
  Price(oscar_, 3'000'000);
  Offers();
  auto s = market().Stats(kH100, "");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->offers, 2);
  EXPECT_EQ(s->listed_gpus, 4);
  EXPECT_EQ(s->available_gpus, 4);
  EXPECT_EQ(s->rented_gpus, 0);
  EXPECT_EQ(s->price_p25, Usdc::Micros(1'000'000));
  EXPECT_EQ(s->price_median, Usdc::Micros(1'000'000));
  EXPECT_EQ(s->price_p75, Usdc::Micros(3'000'000));
  s = market().Stats("l4-24gb", "");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->offers, 0);
  EXPECT_EQ(s->price_median, std::nullopt);
}

GPUNEX_INSTANTIATE_BACKENDS(MarketTest);

}  // namespace
}  // namespace gpunex::platform::market
