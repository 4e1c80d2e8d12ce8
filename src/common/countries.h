// ISO 3166-1 alpha-2 country codes, for addresses and bank details.
//
// Thread-safety: pure functions.
#pragma once

#include <string_view>

namespace gpunex {

// Whether `code` is an assigned ISO 3166-1 alpha-2 code, in upper case ("IT").
bool IsCountryCode(std::string_view code);

}  // namespace gpunex
