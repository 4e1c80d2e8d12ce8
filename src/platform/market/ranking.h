// The default ranking of offers (MKT-2, PRC-4, SPEC §13a) and the ordering of every sort,
// as pure functions; docs/ranking.md explains them with a worked example that
// ranking_test.cc checks digit for digit.
//
//   rank  = (R / 100) · (value / median_value)^0.5 · tier · commit
//   value = performance score / price in USDC per GPU-hour
//   median_value: the median value of the offers that match the search (the mean of the
//                 two middle values for an even count)
//   tier  = 1.10 Enterprise, 1.00 Community
//   commit = 1.00, 1.02, 1.04, 1.08 for none, 3, 6, 12 months (the highest step reached)
// Ties (equal rank): higher uptime over 30 days first (an offer without any scheduled
// time yet counts as 0), then the older listing, then the offer id, so the order is total
// and the same on every instance.
//
// Floating point is used for ranking only; money stays in Usdc.
//
// Thread-safety: pure functions over values.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/money.h"
#include "common/time.h"
#include "platform/providers/provider_status.h"

namespace gpunex::platform::market {

inline constexpr double kEnterpriseFactor = 1.10;
inline constexpr double kCommunityFactor = 1.00;

// What the ranking reads of an offer. The views point into the offer (or literals), so
// that a search over many offers copies no strings.
struct RankInputs {
  double reliability = 100;  // R, 0..100
  double performance = 0;    // the offer's performance score (its GPUs' minimum)
  Usdc price;                // per GPU-hour
  providers::Tier tier = providers::Tier::kCommunity;
  int64_t commitment_months = 0;
  std::optional<double> uptime_30d;
  Timestamp listed_since;
  std::string_view id;
};

// The factors of one offer's rank (the `explain` of the API).
struct Explanation {
  double reliability = 0;  // R / 100
  double value = 0;
  double median_value = 0;
  double value_factor = 0;  // (value / median_value)^0.5
  double tier_factor = 1;
  double commit_factor = 1;
  double rank = 0;
};

// performance / (price in USDC); 0 for a non-positive price.
double Value(double performance, Usdc price);
// The median of `values` (the mean of the two middle ones for an even count); 0 when empty.
double Median(std::vector<double> values);
double TierFactor(providers::Tier tier);
double CommitFactor(int64_t commitment_months);
// The rank of `offer` among offers whose median value is `median_value`. A median of 0
// (no offer has a value) gives every offer a value factor of 1.
Explanation Rank(const RankInputs& offer, double median_value);

// The sorts of the search (MKT-1).
enum class Sort { kRank, kPrice, kPerformance, kValue, kReliability };
// "rank", "price", "-performance", "-value", "-reliability"; nullopt for anything else.
std::optional<Sort> ParseSort(std::string_view s);
std::string_view SortCode(Sort s);

// Whether a comes before b in `sort`: the sort's own key (rank, value, performance and
// reliability descending; price ascending), then the ranking's ties. `a_rank`/`b_rank`
// are the offers' ranks (used by kRank and as the second key of the others).
bool Before(Sort sort, const RankInputs& a, double a_rank, const RankInputs& b, double b_rank);

}  // namespace gpunex::platform::market
