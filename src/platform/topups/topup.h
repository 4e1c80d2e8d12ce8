// A top-up (PAY-6): a customer's request to add USDC to their balance, paid on Solana
// with a Solana Pay transfer request. Plain values.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "common/enum_names.h"
#include "common/money.h"
#include "common/time.h"

namespace gpunex::platform::topups {

// States: pending (waiting for the payment) → credited (a payment was found and added to
// the balance), or pending → expired (ttl_s passed without one; still watched, and still
// credited when paid, until watch_s after its creation) → credited.
enum class TopupStatus { kPending, kCredited, kExpired };
inline constexpr EnumNames<TopupStatus, 3> kTopupStatusNames{{{
    {TopupStatus::kPending, "pending"},
    {TopupStatus::kCredited, "credited"},
    {TopupStatus::kExpired, "expired"},
}}};
inline std::string_view Name(TopupStatus s) { return kTopupStatusNames.Name(s); }
// Whether a top-up may go from `from` to `to`: pending → credited | expired, expired →
// credited. Nothing leaves credited.
constexpr bool TopupMayGo(TopupStatus from, TopupStatus to) {
  switch (from) {
    case TopupStatus::kPending:
      return to == TopupStatus::kCredited || to == TopupStatus::kExpired;
    case TopupStatus::kExpired:
      return to == TopupStatus::kCredited;
    case TopupStatus::kCredited:
      return false;
  }
  return false;
}

struct Topup {
  std::string id;  // "tu_..."
  std::string customer_id;
  Usdc amount;            // asked
  std::string reference;  // base58 of 32 random bytes: finds the payment on chain
  TopupStatus status = TopupStatus::kPending;
  std::optional<std::string> signature;  // of the transaction credited
  std::optional<Usdc> credited;          // what arrived (at least `amount`)
  // A sentence on the latest finding: "waiting for a payment of 12.5 USDC", why a
  // transaction found was not credited, or what was credited.
  std::string detail;
  Timestamp created_at;
  Timestamp expires_at;  // created_at + ttl_s
  std::optional<Timestamp> credited_at;
  std::optional<Timestamp> last_checked_at;  // of the chain, when it changed the row

  // Not stored: what Topups shows with it, from its options.
  std::string url;        // the Solana Pay transfer request
  std::string recipient;  // the platform's wallet (base58)
  std::string mint;       // USDC's mint (base58)
};

}  // namespace gpunex::platform::topups
