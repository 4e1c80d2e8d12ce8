// US payout files (PAY-4): a NACHA ACH file of credit entries from the platform's
// account (at the ODFI, its bank) to providers' checking or savings accounts, to be
// uploaded to that bank; and a parser that re-checks such a file from its bytes.
//
// The file: a file header (record type 1); one batch per Standard Entry Class present,
// PPD (to consumers) then CCD (to businesses), each a batch header (5) with service class
// 220 (credits only), its entry details (6: transaction code 22 for checking, 32 for
// savings) and a batch control (8); a file control (9); then records of 94 '9's up to a
// multiple of 10 records (blocking factor 10). Every record is 94 characters; records are
// separated by "\n", with one after the last. Text is upper-case ASCII (latin.h
// ToNachaText). Dates and times are UTC.
//
// Entry i of NachaFile::entries (0-based) gets the trace number TraceNumber(odfi_routing,
// i + 1): the ODFI's first 8 digits and a 7-digit sequence, unique in the file and
// ascending in each batch, so that a caller knows each payout's trace number (returns
// and notices of change name it) before the file is written.
//
// ParseNacha re-checks a file from its bytes; the payouts code calls it on every file
// before it is released. Its checks do not share code with WriteNacha's formatting.
//
// Thread-safety: pure functions over values.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "common/time.h"

namespace gpunex::platform::bank {

inline constexpr size_t kNachaRecordLength = 94;
inline constexpr size_t kNachaBlockingFactor = 10;
inline constexpr int64_t kMaxNachaEntryCents = 9'999'999'999;  // 10 digits: $99,999,999.99

struct NachaFile {
  struct Entry {
    std::string sec_code = "PPD";  // "PPD" (a consumer's account) or "CCD" (a business's)
    std::string routing;           // the RDFI's ABA routing number, 9 digits
    std::string account_number;    // 4 to 17 digits (details.h ValidateAchAccount)
    std::string account_type;      // "checking" (transaction code 22) or "savings" (32)
    int64_t amount_cents = 0;      // 1 to kMaxNachaEntryCents
    std::string individual_id;     // <= 15, e.g. the payout id (longer is cut)
    std::string individual_name;   // the receiver, <= 22 (longer is cut); CCD: the company
  };

  std::string immediate_destination;       // 9-digit routing of the bank that receives the file
  std::string immediate_destination_name;  // <= 23
  // 10 characters as the bank assigns them, e.g. "1" + the company's 9-digit tax id; 9
  // digits (a routing number) are written with a leading space.
  std::string immediate_origin;
  std::string immediate_origin_name;  // <= 23
  char file_id_modifier = 'A';        // 'A'..'Z' or '0'..'9': tells files of a day apart
  Timestamp created_at;
  std::string company_name;                    // <= 16
  std::string company_id;                      // 1 to 10 letters or digits, e.g. "1" + tax id
  std::string company_entry_description;       // <= 10, shown to the receiver: "PAYOUT"
  std::chrono::year_month_day effective_date;  // the settlement date asked for
  std::string odfi_routing;    // the platform's bank, 9 digits; its first 8 are the ODFI id
  std::vector<Entry> entries;  // at least one
  // The trace sequence of the first entry (entry i gets first_sequence + i): files of one
  // originator on one day must not repeat a trace number.
  int64_t first_sequence = 1;
};

// The trace number of the entry with this 1-based sequence number:
// odfi_routing[0..8) then the sequence in 7 digits. REQUIRES: 1 <= sequence <= 9999999.
std::string TraceNumber(std::string_view odfi_routing, int64_t sequence);

// The file's text. Fails with kInvalidArgument naming the field ("entries[3].routing")
// for input outside the rules above: a routing number that is not one (details.h
// ValidateAbaRouting), an amount <= 0 or above 10 digits, an unknown SEC code or account
// type, an account number that is not 4 to 17 digits, text with nothing left after
// conversion, a date outside 2000-2099 (two-digit years), totals beyond the 12 digits of
// the control records, more than 9 999 999 entries.
StatusOr<std::string> WriteNacha(const NachaFile& file);

struct NachaSummary {
  struct Entry {
    int64_t batch_number = 0;
    std::string sec_code;
    int transaction_code = 0;    // 22, 32 (credits); 27, 37 (debits); 23, 28, 33, 38 (prenotes)
    std::string routing;         // 9 digits
    std::string account_number;  // trailing spaces removed
    int64_t amount_cents = 0;
    std::string individual_id;    // trailing spaces removed
    std::string individual_name;  // trailing spaces removed
    std::string trace_number;     // 15 digits
  };
  int64_t batch_count = 0;
  int64_t block_count = 0;
  int64_t entry_addenda_count = 0;  // entry details and addenda records
  int64_t entry_hash = 0;           // the sum of the RDFI ids, its rightmost 10 digits
  int64_t total_debit_cents = 0;
  int64_t total_credit_cents = 0;
  std::vector<Entry> entries;  // in file order
};

// Parses a file and re-checks it entirely: every record 94 printable ASCII characters,
// the record order (1, then batches of 5, 6 with their 7s, 8; then 9; then filler),
// the blocking (a multiple of 10 records, at most 9 filler records), each field's form
// (digits where there must be digits, dates, codes), routing check digits, that each
// trace number starts with its batch's ODFI id and that the sequences ascend in a batch
// and never repeat, that each batch control agrees with its header and with the counts,
// entry hash and totals of its entries, and that the file control agrees with the
// batches and the block count. Service classes 200, 220 and 225 and the SEC codes PPD
// and CCD are known; addenda (one type 05 record per entry) are accepted.
// Fails with kInvalidArgument saying which line (1-based) and field is wrong.
StatusOr<NachaSummary> ParseNacha(std::string_view text);

}  // namespace gpunex::platform::bank
