// A provider's status (REV-4): active from approval on; suspended (set by an operator in
// the database: no route sets it yet), its agents are refused with every token. And its
// tier (REV-3), decided on approval: it sets the commission and the ranking's tier factor.
//
// Thread-safety: constant data.
#pragma once

#include <string_view>

#include "common/enum_names.h"

namespace gpunex::platform::providers {

enum class ProviderStatus { kActive, kSuspended };
inline constexpr EnumNames<ProviderStatus, 2> kProviderStatusNames{{{
    {ProviderStatus::kActive, "active"},
    {ProviderStatus::kSuspended, "suspended"},
}}};
inline std::string_view Name(ProviderStatus s) { return kProviderStatusNames.Name(s); }

enum class Tier { kCommunity, kEnterprise };
inline constexpr EnumNames<Tier, 2> kTierNames{{{
    {Tier::kCommunity, "community"},
    {Tier::kEnterprise, "enterprise"},
}}};
inline std::string_view Name(Tier t) { return kTierNames.Name(t); }

}  // namespace gpunex::platform::providers
