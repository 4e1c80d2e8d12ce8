// Who ended a workload, and so a rental (RNT-3): the party its cause is put down to
// (endings.h). The reliability score counts endings by it (reliability/formula.h).
//
// Thread-safety: constant data.
#pragma once

#include <string_view>

#include "common/enum_names.h"

namespace gpunex::platform::fleet {

enum class EndParty { kCustomer, kProvider, kPlatform };
inline constexpr EnumNames<EndParty, 3> kEndPartyNames{{{
    {EndParty::kCustomer, "customer"},
    {EndParty::kProvider, "provider"},
    {EndParty::kPlatform, "platform"},
}}};
inline std::string_view Name(EndParty p) { return kEndPartyNames.Name(p); }

}  // namespace gpunex::platform::fleet
