#include "platform/bank/details.h"

#include <algorithm>
#include <array>
#include <string>
#include <vector>

#include "common/countries.h"
#include "common/utf8.h"

namespace gpunex::platform::bank {
namespace {

// The SEPA scheme countries and territories with IBANs of their own (EPC409-09, 2025:
// 41 countries), with the length and BBAN format of the SWIFT IBAN Registry. Ordered by
// code.
constexpr std::array<IbanCountry, 42> kSepaIban = {{
    {"AD", 24, "4n4n12c", false},     // Andorra
    {"AL", 28, "8n16c", false},       // Albania (SEPA since 2024)
    {"AT", 20, "5n11n", true},        // Austria
    {"BE", 16, "3n7n2n", true},       // Belgium
    {"BG", 22, "4a4n2n8c", true},     // Bulgaria
    {"CH", 21, "5n12c", false},       // Switzerland
    {"CY", 28, "3n5n16c", true},      // Cyprus
    {"CZ", 24, "4n6n10n", true},      // Czechia
    {"DE", 22, "8n10n", true},        // Germany
    {"DK", 18, "4n9n1n", true},       // Denmark
    {"EE", 20, "2n2n11n1n", true},    // Estonia
    {"ES", 24, "4n4n1n1n10n", true},  // Spain
    {"FI", 18, "3n11n", true},        // Finland (and Åland)
    {"FR", 27, "5n5n11c2n", true},    // France (and its overseas departments)
    {"GB", 22, "4a6n8n", false},      // United Kingdom (and Jersey, Guernsey, Isle of Man)
    {"GI", 23, "4a15c", false},       // Gibraltar
    {"GR", 27, "3n4n16c", true},      // Greece
    {"HR", 21, "7n10n", true},        // Croatia
    {"HU", 28, "3n4n1n15n1n", true},  // Hungary
    {"IE", 22, "4a6n8n", true},       // Ireland
    {"IS", 26, "4n2n6n10n", true},    // Iceland
    {"IT", 27, "1a5n5n12c", true},    // Italy
    {"LI", 21, "5n12c", true},        // Liechtenstein
    {"LT", 20, "5n11n", true},        // Lithuania
    {"LU", 20, "3n13c", true},        // Luxembourg
    {"LV", 21, "4a13c", true},        // Latvia
    {"MC", 27, "5n5n11c2n", false},   // Monaco
    {"MD", 24, "2c18c", false},       // Moldova (SEPA since 2025)
    {"ME", 22, "3n13n2n", false},     // Montenegro (SEPA since 2024)
    {"MK", 19, "3n10c2n", false},     // North Macedonia (SEPA since 2025)
    {"MT", 31, "4a5n18c", true},      // Malta
    {"NL", 18, "4a10n", true},        // Netherlands
    {"NO", 15, "4n6n1n", true},       // Norway
    {"PL", 28, "8n16n", true},        // Poland
    {"PT", 25, "4n4n11n2n", true},    // Portugal (and the Azores, Madeira)
    {"RO", 24, "4a16c", true},        // Romania
    {"RS", 22, "3n13n2n", false},     // Serbia (SEPA since 2025)
    {"SE", 24, "3n16n1n", true},      // Sweden
    {"SI", 19, "5n8n2n", true},       // Slovenia
    {"SK", 24, "4n6n10n", true},      // Slovakia
    {"SM", 27, "1a5n5n12c", false},   // San Marino
    {"VA", 22, "3n15n", false},       // Vatican City State
}};

bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsUpper(char c) { return c >= 'A' && c <= 'Z'; }
bool IsUpperAlnum(char c) { return IsDigit(c) || IsUpper(c); }
bool IsAsciiSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}
char ToUpper(char c) { return c >= 'a' && c <= 'z' ? static_cast<char>(c - 'a' + 'A') : c; }

bool AllDigits(std::string_view s) { return std::all_of(s.begin(), s.end(), IsDigit); }

// Whether a routing number's first two digits are in the Federal Reserve's ranges:
// 00-12 (banks), 21-32 (thrifts), 61-72 (electronic) and 80 (travellers' cheques).
bool FedPrefix(std::string_view routing) {
  const int prefix = (routing[0] - '0') * 10 + (routing[1] - '0');
  return prefix <= 12 || (prefix >= 21 && prefix <= 32) || (prefix >= 61 && prefix <= 72) ||
         prefix == 80;
}

// The ABA check: 3-7-1 weights, the sum a multiple of 10. REQUIRES: 9 digits.
bool AbaCheckDigitOk(std::string_view routing) {
  static constexpr int kWeights[9] = {3, 7, 1, 3, 7, 1, 3, 7, 1};
  int sum = 0;
  for (int i = 0; i < 9; ++i) sum += kWeights[i] * (routing[i] - '0');
  return sum % 10 == 0;
}

// Removes spaces and upper-cases; false when something other than ASCII letters, digits
// and spaces remains.
bool Compact(std::string_view raw, std::string* out) {
  out->clear();
  for (char c : raw) {
    if (c == ' ') continue;
    c = ToUpper(c);
    if (!IsUpperAlnum(c)) return false;
    out->push_back(c);
  }
  return true;
}

// A BBAN format's runs: "5n5n11c2n" is {5, n}, {5, n}, {11, c}, {2, n}.
struct Run {
  int count;
  char kind;  // n, a or c
};
std::vector<Run> Runs(std::string_view format) {
  std::vector<Run> runs;
  for (size_t i = 0; i < format.size();) {
    int count = 0;
    while (i < format.size() && IsDigit(format[i])) count = count * 10 + (format[i++] - '0');
    if (i < format.size()) runs.push_back({count, format[i++]});
  }
  return runs;
}

// Whether `bban` has the form `format` says ("8n10n").
bool MatchesBban(std::string_view bban, std::string_view format) {
  size_t at = 0;
  for (const Run& run : Runs(format)) {
    for (int k = 0; k < run.count; ++k, ++at) {
      if (at >= bban.size()) return false;
      const char c = bban[at];
      const bool ok = run.kind == 'n' ? IsDigit(c) : run.kind == 'a' ? IsUpper(c) : IsUpperAlnum(c);
      if (!ok) return false;
    }
  }
  return at == bban.size();
}

// "8n10n" in words: "18 digits"; "5n5n11c2n": "10 digits, 11 letters or digits and 2
// digits". Neighbouring runs of one kind are told as one.
std::string DescribeBban(std::string_view format) {
  std::vector<Run> runs;
  for (const Run& run : Runs(format)) {
    if (!runs.empty() && runs.back().kind == run.kind) {
      runs.back().count += run.count;
    } else {
      runs.push_back(run);
    }
  }
  std::string out;
  for (size_t i = 0; i < runs.size(); ++i) {
    if (i > 0) out += i + 1 == runs.size() ? " and " : ", ";
    const auto [count, kind] = runs[i];
    out += std::to_string(count) + " ";
    out += kind == 'n'   ? (count == 1 ? "digit" : "digits")
           : kind == 'a' ? (count == 1 ? "capital letter" : "capital letters")
                         : (count == 1 ? "letter or digit" : "letters or digits");
  }
  return out;
}

// ISO 7064 MOD 97-10 over the IBAN with its first four characters moved to the end and
// each letter replaced by two digits (A = 10 ... Z = 35). 1 for a valid IBAN.
int Mod97(std::string_view iban) {
  int rem = 0;
  const auto feed = [&](char c) {
    if (IsDigit(c)) {
      rem = (rem * 10 + (c - '0')) % 97;
    } else {
      rem = (rem * 100 + (c - 'A' + 10)) % 97;
    }
  };
  for (char c : iban.substr(4)) feed(c);
  for (char c : iban.substr(0, 4)) feed(c);
  return rem;
}

std::string Field(std::string_view field) { return std::string(field); }

}  // namespace

std::span<const IbanCountry> SepaIbanCountries() { return kSepaIban; }

const IbanCountry* FindSepaIbanCountry(std::string_view code) {
  auto it = std::lower_bound(kSepaIban.begin(), kSepaIban.end(), code,
                             [](const IbanCountry& c, std::string_view k) { return c.code < k; });
  return it != kSepaIban.end() && it->code == code ? &*it : nullptr;
}

StatusOr<std::string> NormalizeIban(std::string_view raw, std::string_view field) {
  std::string iban;
  if (!Compact(raw, &iban)) {
    return FieldError(Field(field), "may contain only letters, digits and spaces");
  }
  if (iban.empty()) return FieldError(Field(field), "is required");
  if (iban.size() < 2 || !IsUpper(iban[0]) || !IsUpper(iban[1])) {
    return FieldError(Field(field), "must start with a two-letter country code, such as DE");
  }
  const std::string_view code = std::string_view(iban).substr(0, 2);
  const IbanCountry* country = FindSepaIbanCountry(code);
  if (!country) {
    if (IsCountryCode(code)) {
      return FieldError(Field(field), "is an account in " + std::string(code) +
                                          ", which is not a SEPA country: bank payouts by "
                                          "SEPA transfer go to SEPA countries only");
    }
    return FieldError(Field(field), "must start with the code of a SEPA country, such as DE (" +
                                        std::string(code) + " is not one)");
  }
  if (iban.size() < 4 || !IsDigit(iban[2]) || !IsDigit(iban[3])) {
    return FieldError(Field(field), "must have two check digits after the country code");
  }
  if (static_cast<int>(iban.size()) != country->length) {
    return FieldError(Field(field), "must have " + std::to_string(country->length) +
                                        " characters for an account in " + std::string(code) +
                                        " (this one has " + std::to_string(iban.size()) + ")");
  }
  if (!MatchesBban(std::string_view(iban).substr(4), country->bban)) {
    return FieldError(Field(field), "does not have the form of an IBAN from " + std::string(code) +
                                        ": after the check digits come " +
                                        DescribeBban(country->bban));
  }
  // ISO 13616 check digits are 02 to 98; 00, 01 and 99 can pass MOD 97 but are never
  // issued.
  const int check = (iban[2] - '0') * 10 + (iban[3] - '0');
  if (check < 2 || check > 98 || Mod97(iban) != 1) {
    return FieldError(Field(field), "has wrong check digits: check it for a typing mistake");
  }
  return iban;
}

bool IbanNeedsBic(std::string_view iban) {
  const IbanCountry* country = FindSepaIbanCountry(iban.substr(0, 2));
  return country && !country->eea;
}

std::string FormatIbanForPrint(std::string_view iban) {
  std::string out;
  out.reserve(iban.size() + iban.size() / 4);
  for (size_t i = 0; i < iban.size(); ++i) {
    if (i > 0 && i % 4 == 0) out.push_back(' ');
    out.push_back(iban[i]);
  }
  return out;
}

StatusOr<std::string> NormalizeBic(std::string_view raw, std::string_view field) {
  std::string bic;
  if (!Compact(raw, &bic)) {
    return FieldError(Field(field), "may contain only letters, digits and spaces");
  }
  if (bic.empty()) return FieldError(Field(field), "is required");
  if (bic.size() != 8 && bic.size() != 11) {
    return FieldError(Field(field), "must have 8 or 11 letters and digits (it has " +
                                        std::to_string(bic.size()) + ")");
  }
  if (!std::all_of(bic.begin(), bic.begin() + 4, IsUpper)) {
    return FieldError(Field(field), "must start with 4 letters, the bank's code");
  }
  const std::string_view country = std::string_view(bic).substr(4, 2);
  // XK (Kosovo) is not in ISO 3166-1 but SWIFT assigns BICs with it.
  if (!IsUpper(country[0]) || !IsUpper(country[1]) ||
      !(IsCountryCode(country) || country == "XK")) {
    return FieldError(Field(field), "must have a country code in its 5th and 6th characters (" +
                                        std::string(country) + " is not one)");
  }
  // The location and branch are letters or digits: Compact admitted nothing else.
  return bic;
}

bool IsAbaRouting(std::string_view routing) {
  if (routing.size() != 9 || !AllDigits(routing)) return false;
  return routing != "000000000" && FedPrefix(routing) && AbaCheckDigitOk(routing);
}

Status ValidateAbaRouting(std::string_view routing, std::string_view field) {
  if (routing.empty()) return FieldError(Field(field), "is required");
  if (routing.size() != 9 || !AllDigits(routing)) {
    return FieldError(Field(field), "must be 9 digits");
  }
  if (routing == "000000000") return FieldError(Field(field), "is not a routing number");
  if (!FedPrefix(routing)) {
    return FieldError(Field(field),
                      "is not a routing number: its first two digits must be 00 to 12, 21 to 32, "
                      "61 to 72 or 80");
  }
  if (!AbaCheckDigitOk(routing)) {
    return FieldError(Field(field), "has a wrong check digit: check it for a typing mistake");
  }
  return Status::Ok();
}

Status ValidateAchAccount(std::string_view account, std::string_view field) {
  if (account.empty()) return FieldError(Field(field), "is required");
  if (!AllDigits(account)) return FieldError(Field(field), "may contain only digits");
  if (account.size() < 4 || account.size() > 17) {
    return FieldError(Field(field), "must be 4 to 17 digits");
  }
  return Status::Ok();
}

bool IsValidAccountType(std::string_view type) { return type == "checking" || type == "savings"; }

std::string MaskAccount(std::string_view account) {
  if (account.size() <= 4) return "****";
  return "****" + std::string(account.substr(account.size() - 4));
}

StatusOr<std::string> NormalizeHolder(std::string_view raw, std::string_view field) {
  size_t begin = 0, end = raw.size();
  while (begin < end && IsAsciiSpace(raw[begin])) ++begin;
  while (end > begin && IsAsciiSpace(raw[end - 1])) --end;
  const std::string_view name = raw.substr(begin, end - begin);
  if (name.empty()) return FieldError(Field(field), "is required");
  size_t chars = 0;
  for (size_t pos = 0; pos < name.size(); ++chars) {
    const char32_t cp = NextCodePoint(name, &pos);
    if (cp == kInvalidUtf8) {
      return FieldError(Field(field), "is not valid UTF-8 text");
    }
    // C0 and C1 controls, DEL, line and paragraph separators, and the bidirectional
    // embeddings, overrides and isolates that make text display other than it reads.
    const bool control = cp < 0x20 || (cp >= 0x7F && cp <= 0x9F) || cp == 0x2028 || cp == 0x2029 ||
                         (cp >= 0x202A && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069);
    if (control) {
      return FieldError(Field(field), "may not contain control characters (tabs, line breaks)");
    }
  }
  if (chars > kMaxHolderChars) {
    return FieldError(Field(field),
                      "must be at most " + std::to_string(kMaxHolderChars) + " characters");
  }
  return std::string(name);
}

}  // namespace gpunex::platform::bank
