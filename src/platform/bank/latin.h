// The character sets of the payment files, and the conversion of people's names and
// free text (UTF-8) into them.
//
// SEPA: every bank in the scheme must accept the EPC's basic Latin set (SEPA credit
// transfer rulebook, "character set"): a-z A-Z 0-9 / - ? : ( ) . , ' + and space. Some
// accept more, none is obliged to, so the pain.001 writer uses only these.
// NACHA: upper-case printable ASCII in fixed-width fields.
//
// Letters with diacritics become their base letters (é → e, ł → l, ș → s), ligatures and
// letters with no base letter their usual spelling (ß → ss, æ → ae, œ → oe, þ → th);
// typographic apostrophes and dashes their ASCII forms; combining marks and zero-width
// characters are dropped; any kind of white space becomes one space (runs collapse, the
// ends are trimmed); any other character becomes '.'. Invalid UTF-8 bytes become '.'.
//
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace gpunex::platform::bank {

// `utf8` in the EPC basic Latin set, at most `max_chars` characters (one byte each), cut
// at the limit with no trailing space. "" for text that has nothing but white space.
std::string ToSepaLatin(std::string_view utf8, size_t max_chars);

// Whether every character of `s` is in the EPC basic Latin set.
bool IsSepaLatin(std::string_view s);

// `utf8` as NACHA text: transliterated as above, upper-cased, characters outside printable
// ASCII as '.', cut to `width` and left-justified with spaces: exactly `width` characters.
std::string ToNachaText(std::string_view utf8, size_t width);

}  // namespace gpunex::platform::bank
