// Prices with a real Fleet on both backends: a model without a price is not listed, a
// price lists it, removing it (or a PUT that leaves it out) delists it, a machine
// override beats the provider's price, every change is in the history, bad items are
// refused naming the field with nothing changed, and who may do what.
#include "platform/pricing/pricing.h"

#include <gtest/gtest.h>

#include "platform/catalog/catalog.h"
#include "platform/fleet/test_util.h"
#include "platform/pricing/pricing_store.h"

namespace gpunex::platform::pricing {
namespace {

using fleet::testing::FakeAgent;

constexpr const char* kH100 = "h100-sxm-80gb";

class PricingTest : public fleet::testing::FleetTestBase {
 protected:
  void SetUp() override {
    FleetTestBase::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    ASSERT_TRUE(catalog::SeedBuiltinModels(db(), clock_).ok());
    price_every_model_ = false;  // pricing/ reports the fact here
    MakeFleet(DefaultOptions());
    pricing_ = std::make_unique<Pricing>(faults(), fleet(), PricingOptions{&clock_});
  }
  void TearDown() override {
    pricing_.reset();
    FleetTestBase::TearDown();
  }
  Pricing& pricing() { return *pricing_; }

  FakeAgent& Machine(const std::string& provider) {
    FakeAgent& a = NewAgent(provider);
    EXPECT_TRUE(a.Join().has_value())
        << (a.channel().Errors().empty() ? std::string("no error")
                                         : a.channel().Errors().back().message);
    return a;
  }
  std::vector<std::string> Listings(const std::string& machine_id) {
    std::vector<std::string> out;
    for (const auto& g : GpuIds(machine_id)) out.push_back(ListingOf(g));
    return out;
  }
  std::string PriceTables() {
    std::string out;
    for (const auto& t : Texts("SELECT provider_id || ':' || catalog_id || '=' || "
                               "CAST(price_micro AS TEXT) FROM provider_prices ORDER BY 1")) {
      out += t + ";";
    }
    for (const auto& t : Texts("SELECT machine_id || ':' || catalog_id || '=' || "
                               "CAST(price_micro AS TEXT) FROM machine_prices ORDER BY 1")) {
      out += t + ";";
    }
    return out + "|" + std::to_string(Number("SELECT COUNT(*) FROM price_changes"));
  }

  std::unique_ptr<Pricing> pricing_;
};

TEST_P(PricingTest, AModelWithoutAPriceIsNotListedAndAPriceListsIt) {
  FakeAgent& a = Machine(pia_);
  EXPECT_EQ(Listings(a.machine_id), (std::vector<std::string>{"no_price_set", "no_price_set"}));
  EXPECT_EQ(
      Text("SELECT listing_note FROM machine_gpus WHERE machine_id = ? LIMIT 1", {a.machine_id}),
      "no price set for NVIDIA H100 80GB HBM3");
  const int64_t stamp =
      Number("SELECT offers_changed_at FROM machines WHERE id = ?", {a.machine_id});

  auto set = pricing().SetProviderPrices(As(pia_), {{kH100, Usdc::Micros(2'200'000)}});
  ASSERT_TRUE(set.ok()) << set.status().ToString();
  ASSERT_EQ(set->size(), 1u);
  EXPECT_EQ((*set)[0].price, Usdc::Micros(2'200'000));
  EXPECT_EQ(Listings(a.machine_id), (std::vector<std::string>{"listed", "listed"}));
  EXPECT_GT(Number("SELECT offers_changed_at FROM machines WHERE id = ?", {a.machine_id}), stamp)
      << "the offers of the machine are marked as changed";

  // A price change keeps the listing and marks the offers again.
  const int64_t listed_stamp =
      Number("SELECT offers_changed_at FROM machines WHERE id = ?", {a.machine_id});
  ASSERT_TRUE(pricing().SetProviderPrices(As(pia_), {{kH100, Usdc::Micros(2'000'000)}}).ok());
  EXPECT_GT(Number("SELECT offers_changed_at FROM machines WHERE id = ?", {a.machine_id}),
            listed_stamp);

  // A PUT that leaves the model out removes its price.
  ASSERT_TRUE(pricing().SetProviderPrices(As(pia_), {}).ok());
  EXPECT_EQ(Listings(a.machine_id), (std::vector<std::string>{"no_price_set", "no_price_set"}));

  auto history = pricing().History(As(pia_), {50, std::nullopt});
  ASSERT_TRUE(history.ok());
  ASSERT_EQ(history->items.size(), 3u);
  // Newest first: removed, changed, set.
  EXPECT_EQ(history->items[0].old_price, Usdc::Micros(2'000'000));
  EXPECT_EQ(history->items[0].new_price, std::nullopt);
  EXPECT_EQ(history->items[1].old_price, Usdc::Micros(2'200'000));
  EXPECT_EQ(history->items[1].new_price, Usdc::Micros(2'000'000));
  EXPECT_EQ(history->items[2].old_price, std::nullopt);
  EXPECT_EQ(history->items[2].new_price, Usdc::Micros(2'200'000));
  for (const auto& c : history->items) {
    EXPECT_EQ(c.gpu_model, kH100);
    EXPECT_EQ(c.changed_by, pia_);
    EXPECT_EQ(c.machine_id, std::nullopt);
  }
}

TEST_P(PricingTest, AMachineThatSaysHelloAfterThePriceWasSetIsListed) {
  auto set = pricing().SetProviderPrices(As(pia_), {{kH100, Usdc::Micros(1'000'000)}});
  ASSERT_TRUE(set.ok()) << set.status().ToString();
  FakeAgent& a = Machine(pia_);
  EXPECT_EQ(Listings(a.machine_id), (std::vector<std::string>{"listed", "listed"}));
  FakeAgent& b = Machine(oscar_);
  EXPECT_EQ(Listings(b.machine_id), (std::vector<std::string>{"no_price_set", "no_price_set"}))
      << "another provider's price does not count";
}

TEST_P(PricingTest, AMachineOverrideBeatsTheProvidersPriceAndFallsBackWhenRemoved) {
  FakeAgent& a = Machine(pia_);
  FakeAgent& b = Machine(pia_);
  auto set = pricing().SetMachinePrices(As(pia_), a.machine_id, {{kH100, Usdc::Micros(3'000'000)}});
  ASSERT_TRUE(set.ok()) << set.status().ToString();
  EXPECT_EQ(set->effective.at(kH100), Usdc::Micros(3'000'000));
  EXPECT_EQ(Listings(a.machine_id), (std::vector<std::string>{"listed", "listed"}));
  EXPECT_EQ(Listings(b.machine_id), (std::vector<std::string>{"no_price_set", "no_price_set"}));

  ASSERT_TRUE(pricing().SetProviderPrices(As(pia_), {{kH100, Usdc::Micros(2'500'000)}}).ok());
  auto got = pricing().GetMachinePrices(As(pia_), a.machine_id);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->effective.at(kH100), Usdc::Micros(3'000'000)) << "the override wins";
  ASSERT_EQ(got->overrides.size(), 1u);
  got = pricing().GetMachinePrices(As(pia_), b.machine_id);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->effective.at(kH100), Usdc::Micros(2'500'000));
  EXPECT_TRUE(got->overrides.empty());

  ASSERT_TRUE(pricing().SetMachinePrices(As(pia_), a.machine_id, {}).ok());
  ASSERT_TRUE(db().Read([&](store::Tx& tx) -> Status {
                    auto prices = EffectivePrices(tx, a.machine_id);
                    EXPECT_TRUE(prices.ok());
                    if (prices.ok()) {
                      EXPECT_EQ(prices->at(kH100), Usdc::Micros(2'500'000));
                    }
                    return Status::Ok();
                  })
                  .ok());
  auto history = pricing().History(As(pia_), {50, std::nullopt});
  ASSERT_TRUE(history.ok());
  ASSERT_EQ(history->items.size(), 3u);
  EXPECT_EQ(history->items[0].machine_id, a.machine_id);
  EXPECT_EQ(history->items[0].new_price, std::nullopt);
}

TEST_P(PricingTest, BadItemsAreRefusedNamingTheFieldAndChangeNothing) {
  FakeAgent& a = Machine(pia_);
  ASSERT_TRUE(pricing().SetProviderPrices(As(pia_), {{kH100, Usdc::Micros(1'000'000)}}).ok());
  const std::string before = PriceTables();
  const std::string fleet_before = fleet::testing::Snapshot(test_db());
  struct Case {
    std::vector<PriceItem> items;
    std::string field;
  };
  const std::vector<Case> cases = {
      {{{kH100, Usdc::Micros(0)}}, "items[0].price_micro"},
      {{{kH100, Usdc::Micros(-5)}}, "items[0].price_micro"},
      {{{kH100, Usdc::Micros(1'000'000'001)}}, "items[0].price_micro"},
      {{{"b200-192gb", Usdc::Micros(1)}}, "items[0].gpu_model"},
      {{{"other", Usdc::Micros(1)}}, "items[0].gpu_model"},
      {{{"", Usdc::Micros(1)}}, "items[0].gpu_model"},
      {{{kH100, Usdc::Micros(1)}, {kH100, Usdc::Micros(2)}}, "items[1].gpu_model"},
      {{{"l4-24gb", Usdc::Micros(1)}, {kH100, Usdc::Micros(0)}}, "items[1].price_micro"},
      {std::vector<PriceItem>(kMaxItems + 1, {kH100, Usdc::Micros(1)}), "items"},
  };
  for (const Case& c : cases) {
    auto got = pricing().SetProviderPrices(As(pia_), c.items);
    ASSERT_FALSE(got.ok()) << c.field;
    EXPECT_EQ(got.status().code(), StatusCode::kValidationFailed) << c.field;
    EXPECT_TRUE(got.status().fields().count(c.field)) << c.field << ": " << got.status().ToString();
    auto m = pricing().SetMachinePrices(As(pia_), a.machine_id, c.items);
    ASSERT_FALSE(m.ok()) << c.field;
    EXPECT_TRUE(m.status().fields().count(c.field)) << c.field << ": " << m.status().ToString();
  }
  // The bound itself is allowed.
  EXPECT_EQ(PriceTables(), before);
  EXPECT_EQ(fleet::testing::Snapshot(test_db()), fleet_before);
  EXPECT_TRUE(pricing().SetProviderPrices(As(pia_), {{kH100, kMaxPrice}}).ok());
  EXPECT_TRUE(pricing().SetProviderPrices(As(pia_), {{kH100, Usdc::Micros(1)}}).ok());
}

TEST_P(PricingTest, OnlyTheProviderChangesItsPricesAndAdminsRead) {
  FakeAgent& a = Machine(pia_);
  const std::vector<PriceItem> items = {{kH100, Usdc::Micros(1'000'000)}};
  EXPECT_EQ(pricing().SetProviderPrices(As(customer_), items).status().code(),
            StatusCode::kPermissionDenied);
  EXPECT_EQ(pricing().ProviderPrices(As(customer_)).status().code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(pricing().History(As(customer_), {}).status().code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(pricing().SetMachinePrices(As(oscar_), a.machine_id, items).status().code(),
            StatusCode::kNotFound);
  EXPECT_EQ(pricing().GetMachinePrices(As(oscar_), a.machine_id).status().code(),
            StatusCode::kNotFound);
  EXPECT_EQ(pricing().GetMachinePrices(As(customer_), a.machine_id).status().code(),
            StatusCode::kNotFound);
  EXPECT_TRUE(pricing().GetMachinePrices(As(admin_), a.machine_id).ok());
  EXPECT_EQ(pricing().SetMachinePrices(As(admin_), a.machine_id, items).status().code(),
            StatusCode::kPermissionDenied);
  EXPECT_EQ(Listings(a.machine_id), (std::vector<std::string>{"no_price_set", "no_price_set"}));
  // Oscar's prices are Oscar's.
  ASSERT_TRUE(pricing().SetProviderPrices(As(oscar_), items).ok());
  auto mine = pricing().ProviderPrices(As(pia_));
  ASSERT_TRUE(mine.ok());
  EXPECT_TRUE(mine->empty());
  EXPECT_EQ(Listings(a.machine_id), (std::vector<std::string>{"no_price_set", "no_price_set"}));
}

TEST_P(PricingTest, ACommitThatFailsLeavesTheOldPrices) {
  FakeAgent& a = Machine(pia_);
  ASSERT_TRUE(pricing().SetProviderPrices(As(pia_), {{kH100, Usdc::Micros(1'000'000)}}).ok());
  const std::string before = PriceTables();
  faults().FailCommit("provider_prices", /*committed=*/false);
  EXPECT_FALSE(pricing().SetProviderPrices(As(pia_), {{kH100, Usdc::Micros(9'000'000)}}).ok());
  EXPECT_EQ(PriceTables(), before);
  EXPECT_EQ(Listings(a.machine_id), (std::vector<std::string>{"listed", "listed"}));
}

GPUNEX_INSTANTIATE_BACKENDS(PricingTest);

}  // namespace
}  // namespace gpunex::platform::pricing
