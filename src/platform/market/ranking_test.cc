#include "platform/market/ranking.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "platform/market/search.h"

namespace gpunex::platform::market {
namespace {

constexpr providers::Tier kEnterprise = providers::Tier::kEnterprise;
constexpr providers::Tier kCommunity = providers::Tier::kCommunity;

Timestamp At(std::string_view rfc3339) { return ParseRfc3339(rfc3339).value(); }

// ------------------------------------------------------------------ the worked example
//
// docs/ranking.md, "Worked example": six NVIDIA L4 offers in eu-south. Every figure the
// document prints is checked here to the precision it is printed with: this test and
// that document change together.

std::vector<RankInputs> Example() {
  return {
      {98.0, 28.5, Usdc::Micros(450'000), kEnterprise, 12, 0.995, At("2026-09-01T08:00:00Z"),
       "ofr_a"},
      {98.0, 28.5, Usdc::Micros(450'000), kEnterprise, 12, 0.999, At("2026-10-01T08:00:00Z"),
       "ofr_b"},
      {95.0, 27.6, Usdc::Micros(400'000), kCommunity, 6, 0.980, At("2026-07-15T12:00:00Z"),
       "ofr_c"},
      {95.0, 27.6, Usdc::Micros(400'000), kCommunity, 6, 0.980, At("2026-08-15T12:00:00Z"),
       "ofr_d"},
      {99.5, 29.1, Usdc::Micros(520'000), kCommunity, 0, 0.9995, At("2026-06-01T09:30:00Z"),
       "ofr_e"},
      {88.0, 26.4, Usdc::Micros(320'000), kCommunity, 3, 0.930, At("2026-11-20T16:00:00Z"),
       "ofr_f"},
  };
}

const RankInputs& ById(const std::vector<RankInputs>& offers, std::string_view id) {
  return *std::find_if(offers.begin(), offers.end(),
                       [&](const RankInputs& o) { return o.id == id; });
}

double ExampleMedian() {
  std::vector<double> values;
  for (const RankInputs& o : Example()) values.push_back(Value(o.performance, o.price));
  return Median(values);
}

// The ids of `offers` in `sort`'s order, ranked against their own median value.
std::vector<std::string> OrderOf(std::vector<RankInputs> offers, Sort sort) {
  std::vector<double> values;
  for (const RankInputs& o : offers) values.push_back(Value(o.performance, o.price));
  const double median = Median(values);
  std::sort(offers.begin(), offers.end(), [&](const RankInputs& a, const RankInputs& b) {
    return Before(sort, a, Rank(a, median).rank, b, Rank(b, median).rank);
  });
  std::vector<std::string> ids;
  for (const RankInputs& o : offers) ids.emplace_back(o.id);
  return ids;
}

TEST(RankingExample, ValuesAndMedian) {
  const std::vector<RankInputs> offers = Example();
  EXPECT_NEAR(Value(28.5, Usdc::Micros(450'000)), 63.3333, 5e-5);
  EXPECT_NEAR(Value(27.6, Usdc::Micros(400'000)), 69.0000, 5e-5);
  EXPECT_NEAR(Value(29.1, Usdc::Micros(520'000)), 55.9615, 5e-5);
  EXPECT_NEAR(Value(26.4, Usdc::Micros(320'000)), 82.5000, 5e-5);
  // Six values, so the mean of the 3rd and 4th: (63.3333 + 69.0000) / 2.
  EXPECT_NEAR(ExampleMedian(), 66.1667, 5e-5);
  EXPECT_DOUBLE_EQ(ExampleMedian(), (28.5 / 0.45 + 27.6 / 0.4) / 2);
}

TEST(RankingExample, Factors) {
  const std::vector<RankInputs> offers = Example();
  const double median = ExampleMedian();
  struct Row {
    std::string_view id;
    double reliability, value_factor, tier, commit, rank;
  };
  const Row rows[] = {
      {"ofr_a", 0.980, 0.978355, 1.10, 1.08, 1.139040},
      {"ofr_b", 0.980, 0.978355, 1.10, 1.08, 1.139040},
      {"ofr_c", 0.950, 1.021186, 1.00, 1.04, 1.008932},
      {"ofr_d", 0.950, 1.021186, 1.00, 1.04, 1.008932},
      {"ofr_e", 0.995, 0.919656, 1.00, 1.00, 0.915057},
      {"ofr_f", 0.880, 1.116625, 1.00, 1.02, 1.002283},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(std::string(row.id));
    const Explanation e = Rank(ById(offers, row.id), median);
    EXPECT_NEAR(e.reliability, row.reliability, 5e-7);
    EXPECT_DOUBLE_EQ(e.median_value, median);
    EXPECT_NEAR(e.value_factor, row.value_factor, 5e-7);
    EXPECT_DOUBLE_EQ(e.tier_factor, row.tier);
    EXPECT_DOUBLE_EQ(e.commit_factor, row.commit);
    EXPECT_NEAR(e.rank, row.rank, 5e-7);
    EXPECT_DOUBLE_EQ(e.rank, e.reliability * e.value_factor * e.tier_factor * e.commit_factor);
  }
  // The explain of ofr_e as the document prints it.
  const Explanation e = Rank(ById(offers, "ofr_e"), median);
  EXPECT_NEAR(e.value, 55.961538, 5e-7);
  EXPECT_NEAR(e.median_value, 66.166667, 5e-7);
}

TEST(RankingExample, OrderAndTies) {
  const std::vector<RankInputs> offers = Example();
  const double median = ExampleMedian();
  EXPECT_EQ(OrderOf(offers, Sort::kRank),
            (std::vector<std::string>{"ofr_b", "ofr_a", "ofr_c", "ofr_d", "ofr_f", "ofr_e"}));
  // a and b have the same rank to the last bit; b is younger but has the higher uptime.
  const RankInputs &a = ById(offers, "ofr_a"), &b = ById(offers, "ofr_b");
  EXPECT_EQ(Rank(a, median).rank, Rank(b, median).rank);
  EXPECT_TRUE(Before(Sort::kRank, b, Rank(b, median).rank, a, Rank(a, median).rank));
  EXPECT_FALSE(Before(Sort::kRank, a, Rank(a, median).rank, b, Rank(b, median).rank));
  // c and d: the same rank and uptime; c is the older listing.
  const RankInputs &c = ById(offers, "ofr_c"), &d = ById(offers, "ofr_d");
  EXPECT_EQ(Rank(c, median).rank, Rank(d, median).rank);
  EXPECT_TRUE(Before(Sort::kRank, c, Rank(c, median).rank, d, Rank(d, median).rank));
  EXPECT_FALSE(Before(Sort::kRank, d, Rank(d, median).rank, c, Rank(c, median).rank));
}

TEST(RankingExample, EverySortsOrder) {
  const std::vector<RankInputs> offers = Example();
  using Ids = std::vector<std::string>;
  EXPECT_EQ(OrderOf(offers, Sort::kPrice),
            (Ids{"ofr_f", "ofr_c", "ofr_d", "ofr_b", "ofr_a", "ofr_e"}));
  EXPECT_EQ(OrderOf(offers, Sort::kPerformance),
            (Ids{"ofr_e", "ofr_b", "ofr_a", "ofr_c", "ofr_d", "ofr_f"}));
  EXPECT_EQ(OrderOf(offers, Sort::kValue),
            (Ids{"ofr_f", "ofr_c", "ofr_d", "ofr_b", "ofr_a", "ofr_e"}));
  EXPECT_EQ(OrderOf(offers, Sort::kReliability),
            (Ids{"ofr_e", "ofr_b", "ofr_a", "ofr_c", "ofr_d", "ofr_f"}));
}

// The provider's rank view (Market::ProviderOffers): the highest price at which an offer
// would take one place more among the offers of its model and region. Checked here
// through RankAll over a snapshot, one micro-USDC either side of the printed figure.
std::shared_ptr<const Snapshot> ExampleSnapshot(std::string_view repriced_id, Usdc price) {
  std::vector<std::shared_ptr<const MachineOffers>> machines;
  for (const RankInputs& in : Example()) {
    auto m = std::make_shared<MachineOffers>();
    m->machine_id = "mch_" + std::string(in.id);
    m->stamp = 1;
    Offer o;
    o.id = in.id;
    o.machine_id = m->machine_id;
    o.gpu_model = "l4-24gb";
    o.region = "eu-south";
    o.gpus_available = o.gpus_total = 1;
    o.reliability_score = in.reliability;
    o.performance_score = in.performance;
    o.price = in.id == repriced_id ? price : in.price;
    o.tier = in.tier;
    o.commitment_months = in.commitment_months;
    o.uptime_30d = in.uptime_30d;
    o.listed_since = in.listed_since;
    m->offers.push_back(std::move(o));
    machines.push_back(std::move(m));
  }
  return std::make_shared<const Snapshot>(std::move(machines));
}

int64_t PositionAt(std::string_view id, Usdc price) {
  auto snap = ExampleSnapshot(id, price);
  OfferQuery q;
  q.gpu_models = {"l4-24gb"};
  q.region = "eu-south";
  q.min_gpus = 0;
  for (const SearchHit& h : RankAll(*snap, q)) {
    if (h.offer->id == id) return h.position;
  }
  return 0;
}

TEST(RankingExample, PriceForNextPlace) {
  struct Row {
    std::string_view id;
    int64_t position;
    int64_t threshold_micros;  // the highest price that gains a place; 0: first already
    int64_t shown_micros;      // price_for_next_place_micro: the threshold in whole cents
    int64_t position_there;    // where the threshold (and the shown price) puts it
  };
  // ofr_c and ofr_f cannot gain just one place: the two offers above them share a rank
  // (a and b, c and d), and passing one means passing both.
  const Row rows[] = {
      {"ofr_b", 1, 0, 0, 1},
      {"ofr_a", 2, 449'999, 440'000, 1},
      {"ofr_c", 3, 313'838, 310'000, 1},
      {"ofr_d", 4, 399'999, 390'000, 3},
      {"ofr_f", 5, 315'796, 310'000, 3},
      {"ofr_e", 6, 433'430, 430'000, 5},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(std::string(row.id));
    const Usdc listed = ById(Example(), row.id).price;
    EXPECT_EQ(PositionAt(row.id, listed), row.position);
    if (row.threshold_micros == 0) continue;
    EXPECT_EQ(PositionAt(row.id, Usdc::Micros(row.threshold_micros)), row.position_there);
    EXPECT_EQ(PositionAt(row.id, Usdc::Micros(row.threshold_micros + 1)), row.position);
    EXPECT_EQ(row.shown_micros, row.threshold_micros / 10'000 * 10'000);
    EXPECT_EQ(PositionAt(row.id, Usdc::Micros(row.shown_micros)), row.position_there);
  }
}

// ------------------------------------------------------------------ the pieces

TEST(Ranking, TiesGoToHigherUptimeThenOlderListingThenId) {
  RankInputs a{90, 30,   Usdc::Micros(400'000),      kCommunity,
               0,  0.99, At("2026-10-01T00:00:00Z"), "ofr_1"};
  RankInputs b = a;
  b.id = "ofr_2";
  // Everything equal: the smaller id first, whichever way round they are compared.
  EXPECT_TRUE(Before(Sort::kRank, a, 1.0, b, 1.0));
  EXPECT_FALSE(Before(Sort::kRank, b, 1.0, a, 1.0));
  EXPECT_FALSE(Before(Sort::kRank, a, 1.0, a, 1.0));  // strict
  // An older listing beats the id.
  b.listed_since = At("2026-09-30T23:59:59Z");
  EXPECT_TRUE(Before(Sort::kRank, b, 1.0, a, 1.0));
  // A higher uptime beats the older listing.
  a.uptime_30d = 0.991;
  EXPECT_TRUE(Before(Sort::kRank, a, 1.0, b, 1.0));
  // A higher rank beats everything.
  EXPECT_TRUE(Before(Sort::kRank, b, 1.0000001, a, 1.0));
}

TEST(Ranking, NoUptimeYetCountsAsZero) {
  RankInputs a{90, 30,           Usdc::Micros(400'000),      kCommunity,
               0,  std::nullopt, At("2026-10-01T00:00:00Z"), "ofr_1"};
  RankInputs b = a;
  b.id = "ofr_2";
  b.uptime_30d = 0.0;
  b.listed_since = At("2026-09-01T00:00:00Z");
  // None and 0 are equal: the older listing decides.
  EXPECT_TRUE(Before(Sort::kRank, b, 1.0, a, 1.0));
  b.uptime_30d = 0.001;
  b.listed_since = At("2026-11-01T00:00:00Z");
  EXPECT_TRUE(Before(Sort::kRank, b, 1.0, a, 1.0));
}

TEST(Ranking, SortKeysComeBeforeRank) {
  const RankInputs cheap{80, 20,  Usdc::Micros(300'000),      kCommunity,
                         0,  0.9, At("2026-10-01T00:00:00Z"), "ofr_cheap"};
  const RankInputs fast{99, 40,   Usdc::Micros(500'000),      kEnterprise,
                        12, 0.99, At("2026-10-01T00:00:00Z"), "ofr_fast"};
  // fast has the higher rank, the performance, the reliability and the value (80 vs 66.7).
  EXPECT_TRUE(Before(Sort::kRank, fast, 2.0, cheap, 1.0));
  EXPECT_TRUE(Before(Sort::kPrice, cheap, 1.0, fast, 2.0));
  EXPECT_TRUE(Before(Sort::kPerformance, fast, 2.0, cheap, 1.0));
  EXPECT_TRUE(Before(Sort::kReliability, fast, 2.0, cheap, 1.0));
  EXPECT_TRUE(Before(Sort::kValue, fast, 2.0, cheap, 1.0));
  // On an equal sort key the rank decides, then the ties.
  RankInputs same_price = fast;
  same_price.price = cheap.price;
  EXPECT_TRUE(Before(Sort::kPrice, same_price, 2.0, cheap, 1.0));
  EXPECT_FALSE(Before(Sort::kPrice, cheap, 1.0, same_price, 2.0));
}

TEST(Ranking, MedianOfOddEvenAndEmpty) {
  EXPECT_EQ(Median({}), 0);
  EXPECT_EQ(Median({7}), 7);
  EXPECT_EQ(Median({3, 1, 2}), 2);
  EXPECT_EQ(Median({5, 1, 4, 2, 3}), 3);
  EXPECT_EQ(Median({4, 1, 3, 2}), 2.5);
  EXPECT_EQ(Median({10, 2}), 6);
  EXPECT_EQ(Median({1, 9, 9, 1}), 5);
  EXPECT_EQ(Median({2, 2, 2, 8}), 2);
  EXPECT_EQ(Median({0, 0, 0}), 0);
}

TEST(Ranking, CommitFactorSteps) {
  EXPECT_EQ(CommitFactor(-1), 1.00);
  EXPECT_EQ(CommitFactor(0), 1.00);
  EXPECT_EQ(CommitFactor(2), 1.00);
  EXPECT_EQ(CommitFactor(3), 1.02);
  EXPECT_EQ(CommitFactor(5), 1.02);
  EXPECT_EQ(CommitFactor(6), 1.04);
  EXPECT_EQ(CommitFactor(11), 1.04);
  EXPECT_EQ(CommitFactor(12), 1.08);
  EXPECT_EQ(CommitFactor(24), 1.08);
}

TEST(Ranking, TierFactor) {
  EXPECT_EQ(TierFactor(kEnterprise), 1.10);
  EXPECT_EQ(TierFactor(kCommunity), 1.00);
  // A tier is read in its stored form only.
  EXPECT_EQ(providers::kTierNames.Parse("enterprise"), kEnterprise);
  EXPECT_EQ(providers::kTierNames.Parse("Enterprise"), std::nullopt);
}

TEST(Ranking, ValueOfZeroPriceIsZero) {
  EXPECT_EQ(Value(30, Usdc::Zero()), 0);
  EXPECT_EQ(Value(30, Usdc::Micros(-1)), 0);
  EXPECT_DOUBLE_EQ(Value(30, Usdc::Micros(1)), 30'000'000);
  EXPECT_DOUBLE_EQ(Value(30, Usdc::Micros(1'500'000)), 20);
  // With others priced, an unpriced offer's value factor is 0, and so is its rank.
  const RankInputs free{
      100, 30, Usdc::Zero(), kEnterprise, 12, 1.0, At("2026-10-01T00:00:00Z"), "ofr_free"};
  const Explanation e = Rank(free, 50);
  EXPECT_EQ(e.value, 0);
  EXPECT_EQ(e.value_factor, 0);
  EXPECT_EQ(e.rank, 0);
}

TEST(Ranking, MedianZeroGivesValueFactorOne) {
  // No offer has a value (no performance score yet): the rank is R/100 · tier · commit.
  const RankInputs o{90, 0,   Usdc::Micros(400'000),      kEnterprise,
                     6,  0.9, At("2026-10-01T00:00:00Z"), "ofr_new"};
  const Explanation e = Rank(o, 0);
  EXPECT_EQ(e.value, 0);
  EXPECT_EQ(e.median_value, 0);
  EXPECT_EQ(e.value_factor, 1);
  EXPECT_DOUBLE_EQ(e.rank, 0.9 * 1.10 * 1.04);
}

TEST(Ranking, ReliabilityIsClampedToHundred) {
  RankInputs o{120, 30,  Usdc::Micros(300'000),      kCommunity,
               0,   1.0, At("2026-10-01T00:00:00Z"), "ofr_x"};
  EXPECT_EQ(Rank(o, 100).reliability, 1.0);
  EXPECT_EQ(Rank(o, 100).rank, 1.0);
  o.reliability = -5;
  EXPECT_EQ(Rank(o, 100).reliability, 0);
  EXPECT_EQ(Rank(o, 100).rank, 0);
}

TEST(Ranking, ParseSortAndSortCodeRoundTrip) {
  for (Sort s : {Sort::kRank, Sort::kPrice, Sort::kPerformance, Sort::kValue, Sort::kReliability}) {
    EXPECT_EQ(ParseSort(SortCode(s)), s);
  }
  EXPECT_EQ(SortCode(Sort::kRank), "rank");
  EXPECT_EQ(SortCode(Sort::kPrice), "price");
  EXPECT_EQ(SortCode(Sort::kPerformance), "-performance");
  EXPECT_EQ(SortCode(Sort::kValue), "-value");
  EXPECT_EQ(SortCode(Sort::kReliability), "-reliability");
  for (std::string_view bad :
       {"", "Rank", "-price", "performance", "value", "reliability", "-rank", "price "}) {
    EXPECT_EQ(ParseSort(bad), std::nullopt) << bad;
  }
}

}  // namespace
}  // namespace gpunex::platform::market
