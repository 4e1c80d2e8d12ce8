// Which passwords gpunexd refuses at sign-up and on a change (docs/security.md, "Passwords").
//
// A password is refused when it is shorter than kMinPasswordLength bytes; when it is one of
// the most common passwords (common_passwords.txt, compiled in), also once the digits and
// symbols around it are taken off ("Dragon2024!" is "dragon"); when it has fewer than
// kMinDistinctCharacters different characters ("aaaaaaaaaa", "abababab12"); or when it is
// the account's email address or name with little else: fewer than
// kMinCharactersBesidesIdentity letters and digits are left once every part of the email
// (local part and its pieces, the domain's labels) and of the name (each word, and all of
// it) of 3 characters or more is taken out, ignoring case.
//
// Thread-safety: pure functions (the list is built once, thread-safely, on first use).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace gpunex::platform::accounts {

inline constexpr size_t kMinPasswordLength = 10;
inline constexpr size_t kMinDistinctCharacters = 5;
inline constexpr size_t kMinCharactersBesidesIdentity = 6;

// "" when `password` may be used by the account with `email` and `name`; otherwise what is
// wrong with it, to show beside the password field ("is one of the most common passwords").
std::string CheckPasswordStrength(std::string_view password, std::string_view email,
                                  std::string_view name);

// Whether `password`, ignoring ASCII case, is on the shipped list of common passwords.
bool IsCommonPassword(std::string_view password);

// How many passwords the shipped list holds.
size_t CommonPasswordCount();

}  // namespace gpunex::platform::accounts
