// SEPA payout files (PAY-4): an ISO 20022 pain.001.001.09 message
// (CustomerCreditTransferInitiationV09) with SEPA credit transfers in euros from the
// platform's account to providers' accounts, as the EPC's SEPA Credit Transfer
// Customer-to-PSP Implementation Guidelines (EPC132-08, 2019 message version) describe,
// to be uploaded to the platform's bank.
//
// One message holds one payment information block: one debtor account, one requested
// execution date, service level SEPA, charges shared (SLEV), and one credit transfer per
// line. The writer builds the document with libxml2's tree API (text is escaped by the
// library, never concatenated) and validates the serialized bytes against the
// pain.001.001.09 XML schema compiled into the library (pain.001.001.09.xsd beside this
// file) before it returns them: a file it returns is valid, and a writer bug fails the
// write instead of reaching the bank.
//
// Text fields are converted to the EPC basic Latin set (latin.h) and cut to the EPC's
// lengths (names 70, unstructured remittance 140). Identifiers (message id, end-to-end
// ids) are not converted, which could break reconciliation: they must be in the set
// already, 1 to 35 characters, neither start nor end with '/' nor contain "//".
//
// Amounts are integer euro cents, written with two decimals ("1234.50"), never through
// floating point. libxml2 is initialised once and never prints: its messages become the
// Status's.
//
// Thread-safety: WritePain001 and ValidatePain001 may run concurrently (one parsed schema
// is shared read-only; each call has its own documents and validation context).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "common/time.h"

namespace gpunex::platform::bank {

inline constexpr std::string_view kPain001Namespace =
    "urn:iso:std:iso:20022:tech:xsd:pain.001.001.09";

// A postal address in the structured form of ISO 20022 (PostalAddress24).
struct PostalAddress {
  std::string street;           // StrtNm, <= 70; may be ""
  std::string building_number;  // BldgNb, <= 16; may be ""
  std::string post_code;        // PstCd, <= 16; may be ""
  std::string town;             // TwnNm, <= 35; required
  std::string country;          // Ctry, ISO 3166-1 alpha-2; required
};

struct Pain001 {
  struct Debtor {
    std::string name;                // the platform operator's legal name (Dbtr/Nm)
    std::string iban;                // the account that pays (DbtrAcct)
    std::optional<std::string> bic;  // its bank's BIC; without it DbtrAgt is NOTPROVIDED
    // The operator's address: required when a PSP outside the EEA takes part (a debtor
    // or creditor IBAN of CH, GB, ...: SCT rulebook AT-03); written whenever given.
    std::optional<PostalAddress> address;
  };
  struct Line {
    std::string end_to_end_id;  // unique in the file, <= 35, e.g. the payout id
    std::string creditor_name;  // the account holder
    std::string iban;
    // The creditor's bank; required when a PSP outside the EEA takes part (AT-23).
    std::optional<std::string> bic;
    int64_t amount_cents = 0;  // euro cents, 1 to 99 999 999 999 (999 999 999.99 EUR)
    std::string remittance;    // unstructured, shown to the creditor; "" for none
  };

  std::string message_id;        // MsgId and PmtInfId: unique per file for the bank, <= 35
  Timestamp created_at;          // CreDtTm, written in UTC with its offset (+00:00)
  std::string initiating_party;  // InitgPty/Nm, usually the operator's name
  Debtor debtor;
  std::chrono::year_month_day execution_date;  // ReqdExctnDt/Dt
  std::vector<Line> lines;                     // at least one
};

inline constexpr size_t kMaxSepaNameChars = 70;
inline constexpr size_t kMaxSepaRemittanceChars = 140;
inline constexpr size_t kMaxSepaIdChars = 35;
inline constexpr int64_t kMaxSepaAmountCents = 99'999'999'999;

// The message as UTF-8 XML. Fails with kInvalidArgument naming the line and field for
// input outside the rules above (no lines, an amount <= 0 or too large, a bad IBAN or
// BIC, a missing BIC or address where one is required, an identifier outside the set or
// repeated, a name with nothing left after conversion); with kInternal, carrying the
// schema's messages, when the document it built does not validate.
StatusOr<std::string> WritePain001(const Pain001& file);

// Parses `xml` (no DTD, no network access) and validates it against the
// pain.001.001.09 schema. Fails with kInvalidArgument carrying the parser's or the
// schema's messages (with line numbers); with kInternal when the schema cannot be used.
Status ValidatePain001(std::string_view xml);

// A gpunex id ("pay_01JD3...") as an EPC identifier: '_' is outside the EPC set, so it
// becomes '-' ("pay-01JD3..."). Reversible for gpunex ids, whose base32 part has no '-'.
std::string SepaIdFromGpunexId(std::string_view id);

// Euro cents as the decimal the files carry: 123450 → "1234.50", 5 → "0.05".
// REQUIRES: cents >= 0
std::string FormatCents(int64_t cents);

}  // namespace gpunex::platform::bank
