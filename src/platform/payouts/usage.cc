#include "platform/payouts/usage.h"

#include <map>
#include <utility>

#include "platform/billing/ledger.h"
#include "platform/rentals/rentals.h"

namespace gpunex::platform::payouts {

StatusOr<std::vector<RentalUsage>> Usage(store::Tx& tx, const std::string& provider_id,
                                         Timestamp from, Timestamp to, bool by_day) {
  GPUNEX_ASSIGN_OR_RETURN(std::vector<std::string> ids,
                          rentals::ProviderRentalIds(tx, provider_id));
  GPUNEX_ASSIGN_OR_RETURN(std::vector<billing::RentalUsageSum> sums,
                          billing::UsageOfRentals(tx, ids, from, to, by_day));
  // Keyed by (day, rental id): the order the callers list them in.
  std::map<std::pair<int64_t, std::string>, RentalUsage> usage;
  std::map<std::string, std::vector<RentalUsage*>> of_rental;
  for (const billing::RentalUsageSum& s : sums) {
    auto [it, added] = usage.try_emplace({s.day, s.rental_id});
    RentalUsage& u = it->second;
    if (added) {
      u.rental_id = s.rental_id;
      u.day = s.day;
      of_rental[s.rental_id].push_back(&u);
    }
    if (s.kind == billing::kUsageProvider) u.provider_micro += s.amount.micros();
    if (s.kind == billing::kUsageFee) u.fee_micro += s.amount.micros();
    if (s.kind == billing::kRefundProvider) u.refund_provider_micro += s.amount.micros();
    if (s.kind == billing::kRefundFee) u.refund_fee_micro += s.amount.micros();
  }
  std::vector<std::string> used;
  used.reserve(of_rental.size());
  for (const auto& [id, rows] : of_rental) used.push_back(id);
  GPUNEX_ASSIGN_OR_RETURN(std::vector<rentals::Rental> found, rentals::FindRentals(tx, used));
  for (const rentals::Rental& r : found) {
    for (RentalUsage* u : of_rental[r.id]) {
      u->machine_id = r.machine_id;
      u->gpu_model = r.gpu_model;
      u->gpu_ids = r.gpu_ids;
      u->gpus = r.gpus;
      u->price_micro = r.price.micros();
    }
  }
  std::vector<RentalUsage> out;
  out.reserve(usage.size());
  for (auto& [key, u] : usage) out.push_back(std::move(u));
  return out;
}

StatusOr<std::vector<RentalUsage>> UsageCovered(store::Tx& tx, const std::string& provider_id,
                                                Timestamp from, Timestamp until) {
  // Times are whole microseconds, as the ledger stores them: (from, until] is
  // [from + 1 µs, until + 1 µs).
  constexpr auto kTick = std::chrono::microseconds(1);
  return Usage(tx, provider_id, from + kTick, until + kTick, false);
}

}  // namespace gpunex::platform::payouts
