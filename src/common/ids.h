// Identifiers, secrets and hashes.
//
// Ids are "<prefix>_<26 base32 chars>": the first 10 characters encode the creation
// time in milliseconds, so ids sort by creation time, the rest are random.
// Secrets (session tokens, API keys, agent tokens) are "<prefix>_<43 base64url chars>"
// (256 random bits); only their SHA-256 is stored.
#pragma once

#include <string>
#include <string_view>

namespace gpunex {

// A new sortable id such as "usr_01JD3...". Thread-safe.
std::string NewId(std::string_view prefix);

// A new 256-bit secret with the given prefix, e.g. "gpx_s". Thread-safe.
std::string NewSecret(std::string_view prefix);

// Lower-case hex SHA-256 of `data`.
std::string Sha256Hex(std::string_view data);

// HMAC-SHA-256 of `data` under `key` (RFC 2104): 32 raw bytes.
std::string HmacSha256(std::string_view key, std::string_view data);

// Constant-time equality of two strings of equal length.
bool ConstantTimeEquals(std::string_view a, std::string_view b);

// RFC 4648 base64url without padding.
std::string Base64UrlEncode(std::string_view data);
bool Base64UrlDecode(std::string_view in, std::string* out);

}  // namespace gpunex
