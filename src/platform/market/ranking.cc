#include "platform/market/ranking.h"

#include <algorithm>
#include <cmath>
#include <tuple>

namespace gpunex::platform::market {

double Value(double performance, Usdc price) {
  if (!price.is_positive()) return 0;
  return performance / (static_cast<double>(price.micros()) / Usdc::kMicrosPerUsdc);
}

double Median(std::vector<double> values) {
  if (values.empty()) return 0;
  const size_t mid = values.size() / 2;
  std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(mid), values.end());
  const double upper = values[mid];
  if (values.size() % 2 == 1) return upper;
  const double lower =
      *std::max_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(mid));
  return (lower + upper) / 2;
}

double TierFactor(providers::Tier tier) {
  return tier == providers::Tier::kEnterprise ? kEnterpriseFactor : kCommunityFactor;
}

double CommitFactor(int64_t months) {
  if (months >= 12) return 1.08;
  if (months >= 6) return 1.04;
  if (months >= 3) return 1.02;
  return 1.00;
}

Explanation Rank(const RankInputs& o, double median_value) {
  Explanation e;
  e.reliability = std::clamp(o.reliability, 0.0, 100.0) / 100;
  e.value = Value(o.performance, o.price);
  e.median_value = median_value;
  e.value_factor = median_value > 0 ? std::sqrt(e.value / median_value) : 1;
  e.tier_factor = TierFactor(o.tier);
  e.commit_factor = CommitFactor(o.commitment_months);
  e.rank = e.reliability * e.value_factor * e.tier_factor * e.commit_factor;
  return e;
}

std::optional<Sort> ParseSort(std::string_view s) {
  if (s == "rank") return Sort::kRank;
  if (s == "price") return Sort::kPrice;
  if (s == "-performance") return Sort::kPerformance;
  if (s == "-value") return Sort::kValue;
  if (s == "-reliability") return Sort::kReliability;
  return std::nullopt;
}

std::string_view SortCode(Sort s) {
  switch (s) {
    case Sort::kRank:
      return "rank";
    case Sort::kPrice:
      return "price";
    case Sort::kPerformance:
      return "-performance";
    case Sort::kValue:
      return "-value";
    case Sort::kReliability:
      return "-reliability";
  }
  return "rank";
}

bool Before(Sort sort, const RankInputs& a, double a_rank, const RankInputs& b, double b_rank) {
  switch (sort) {
    case Sort::kRank:
      break;
    case Sort::kPrice:
      if (a.price != b.price) return a.price < b.price;
      break;
    case Sort::kPerformance:
      if (a.performance != b.performance) return a.performance > b.performance;
      break;
    case Sort::kValue: {
      const double va = Value(a.performance, a.price), vb = Value(b.performance, b.price);
      if (va != vb) return va > vb;
      break;
    }
    case Sort::kReliability:
      if (a.reliability != b.reliability) return a.reliability > b.reliability;
      break;
  }
  if (a_rank != b_rank) return a_rank > b_rank;
  const double ua = a.uptime_30d.value_or(0), ub = b.uptime_30d.value_or(0);
  if (ua != ub) return ua > ub;
  if (a.listed_since != b.listed_since) return a.listed_since < b.listed_since;
  return a.id < b.id;
}

}  // namespace gpunex::platform::market
