// Bank details for payouts by bank transfer (PAY-2): what a provider enters so that the
// platform can pay them by SEPA credit transfer (IBAN, optional BIC) or by US ACH (ABA
// routing number, account number and type), checked before they are stored, so that a
// payout file never carries an account the bank would reject for its form.
//
// The checks are about form, not existence: an IBAN with correct check digits may still
// name a closed account. Each function that validates user input fails with the
// codebase's one-field error (FieldError: kValidationFailed, with `field` mapped to a
// sentence such as "has wrong check digits: check it for a typing mistake"), so that an
// API handler can return it as it is.
//
// SEPA countries are those of the EPC's list of SEPA scheme countries (EPC409-09): the
// EEA, Switzerland, the United Kingdom, Monaco, San Marino, the Vatican City State,
// Andorra, Albania, Montenegro, Moldova, North Macedonia and Serbia, and Gibraltar, the
// one SEPA territory with IBANs of its own (the other territories use their country's:
// Jersey, Guernsey and the Isle of Man GB; the French overseas departments FR; Åland FI;
// the Canaries ES; the Azores and Madeira PT). Each has its IBAN length and BBAN format
// from the SWIFT IBAN Registry in one table (details.cc).
//
// Thread-safety: pure functions over values.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "common/status.h"

namespace gpunex::platform::bank {

// One SEPA country's IBAN as the SWIFT IBAN Registry describes it.
struct IbanCountry {
  std::string_view code;  // ISO 3166-1 alpha-2, the IBAN's first two characters
  int length;             // of the whole IBAN in electronic form
  // The BBAN (what follows the check digits) as runs of <count><kind>: n digits,
  // a upper-case letters, c letters or digits. Germany "8n10n", France "5n5n11c2n".
  std::string_view bban;
  // Inside the European Economic Area. A credit transfer that involves a PSP outside it
  // needs the beneficiary PSP's BIC and the originator's address (SCT rulebook AT-23,
  // AT-03).
  bool eea;
};

// The table, ordered by code.
std::span<const IbanCountry> SepaIbanCountries();
// The entry for `code` ("DE"); nullptr when it is not a SEPA country with IBANs.
const IbanCountry* FindSepaIbanCountry(std::string_view code);

// Normalizes an IBAN typed by a person ("de89 3704 0044 0532 0130 00"): removes spaces,
// upper-cases, and checks the country (a SEPA country), the length and BBAN format of
// that country, and the ISO 13616 check digits (ISO 7064 MOD 97-10). Returns the
// electronic form ("DE89370400440532013000").
StatusOr<std::string> NormalizeIban(std::string_view raw, std::string_view field);

// Whether a payment to or from this IBAN (electronic form, valid) needs the BIC of the
// account's bank: true for SEPA countries outside the EEA (CH, GB, ...).
bool IbanNeedsBic(std::string_view iban);

// The IBAN in its print form: groups of four separated by one space
// ("DE89 3704 0044 0532 0130 00").
std::string FormatIbanForPrint(std::string_view iban);

// Normalizes a BIC (ISO 9362): removes spaces, upper-cases, and checks the form: 4
// letters (the bank), 2 letters naming a country (ISO 3166-1, or XK), 2 letters or
// digits (the location), and optionally 3 letters or digits (the branch). Returns 8 or
// 11 characters.
StatusOr<std::string> NormalizeBic(std::string_view raw, std::string_view field);

// Checks an ABA routing transit number: 9 digits, the first two in the ranges of the
// Federal Reserve (00-12, 21-32, 61-72, 80), and the check digit (3-7-1 weights, the sum
// a multiple of 10). Not all zeros.
Status ValidateAbaRouting(std::string_view routing, std::string_view field);
// The same check as a predicate.
bool IsAbaRouting(std::string_view routing);

// Checks a US deposit account number for ACH: 4 to 17 digits.
Status ValidateAchAccount(std::string_view account, std::string_view field);

// "checking" or "savings".
bool IsValidAccountType(std::string_view type);

// The account, IBAN or routing number as shown to people other than its owner: "****"
// then its last four characters ("****3000"); "****" alone for four characters or fewer.
std::string MaskAccount(std::string_view account);

// Normalizes an account holder's name: trims white space at both ends, and checks that
// it is valid UTF-8, 1 to 70 characters (code points) long, and has no control or
// direction-override characters. The name is kept as entered (the payment files
// transliterate it); returns it trimmed.
StatusOr<std::string> NormalizeHolder(std::string_view raw, std::string_view field);

inline constexpr size_t kMaxHolderChars = 70;

}  // namespace gpunex::platform::bank
