#include "platform/bank/nacha.h"

#include <algorithm>
#include <cstdio>
#include <unordered_set>

#include "platform/bank/details.h"
#include "platform/bank/internal/input_error.h"
#include "platform/bank/latin.h"

namespace gpunex::platform::bank {
namespace {

using internal::AsInputError;
using internal::InputError;

constexpr int64_t kTenDigits = 10'000'000'000;         // entry hash modulus
constexpr int64_t kMaxTwelveDigits = 999'999'999'999;  // control record totals
constexpr int64_t kMaxBatchEntries = 999'999;          // 6-digit entry/addenda count
constexpr int64_t kMaxSequence = 9'999'999;            // 7-digit trace sequence

bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool AllDigits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), IsDigit);
}
bool IsUpperAlnum(char c) { return IsDigit(c) || (c >= 'A' && c <= 'Z'); }
bool Blank(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return c == ' '; });
}
std::string Upper(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
  }
  return out;
}
std::string_view TrimRight(std::string_view s) {
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  return s;
}

// --- writing

// `v` in `width` digits, zero-filled. REQUIRES: 0 <= v < 10^width.
std::string Num(int64_t v, int width) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%0*lld", width, static_cast<long long>(v));
  return buf;
}

// Text that is already NACHA text, left-justified in `width`. REQUIRES: fits.
std::string Pad(std::string_view s, size_t width) {
  std::string out(s);
  out.resize(width, ' ');
  return out;
}

std::string Yymmdd(std::chrono::year_month_day d) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%02d%02u%02u", int(d.year()) % 100, unsigned(d.month()),
                unsigned(d.day()));
  return buf;
}

// Converted text that must keep something.
StatusOr<std::string> Text(const std::string& path, std::string_view raw, size_t width) {
  std::string text = ToNachaText(raw, width);
  if (Blank(text)) return InputError(path, "is required");
  return text;
}

struct Batch {
  std::string sec_code;
  std::vector<size_t> entries;  // indexes into NachaFile::entries, ascending
};

}  // namespace

std::string TraceNumber(std::string_view odfi_routing, int64_t sequence) {
  return std::string(odfi_routing.substr(0, 8)) + Num(sequence, 7);
}

StatusOr<std::string> WriteNacha(const NachaFile& f) {
  // The file's own fields.
  if (Status st = ValidateAbaRouting(f.immediate_destination, "immediate_destination"); !st.ok()) {
    return AsInputError(st);
  }
  std::string origin = Upper(f.immediate_origin);
  if (origin.size() == 9 && AllDigits(origin)) origin = " " + origin;
  const bool origin_ok =
      origin.size() == 10 && (std::all_of(origin.begin(), origin.end(), IsUpperAlnum) ||
                              (origin[0] == ' ' && AllDigits(origin.substr(1))));
  if (!origin_ok) {
    return InputError("immediate_origin",
                      "must be 10 letters or digits, or a 9-digit routing number");
  }
  GPUNEX_ASSIGN_OR_RETURN(const std::string dest_name,
                          Text("immediate_destination_name", f.immediate_destination_name, 23));
  GPUNEX_ASSIGN_OR_RETURN(const std::string origin_name,
                          Text("immediate_origin_name", f.immediate_origin_name, 23));
  if (!IsUpperAlnum(f.file_id_modifier)) {
    return InputError("file_id_modifier", "must be a capital letter or a digit");
  }
  GPUNEX_ASSIGN_OR_RETURN(const std::string company_name, Text("company_name", f.company_name, 16));
  const std::string company_id = Upper(f.company_id);
  if (company_id.empty() || company_id.size() > 10 ||
      !std::all_of(company_id.begin(), company_id.end(), IsUpperAlnum)) {
    return InputError("company_id", "must be 1 to 10 letters or digits");
  }
  GPUNEX_ASSIGN_OR_RETURN(const std::string description,
                          Text("company_entry_description", f.company_entry_description, 10));
  // NACHA dates have two-digit years: this century's.
  const auto in_century = [](std::chrono::year_month_day d) {
    return d.ok() && d.year() >= std::chrono::year(2000) && d.year() <= std::chrono::year(2099);
  };
  if (!in_century(f.effective_date)) {
    return InputError("effective_date", "is not a valid date from 2000 to 2099");
  }
  if (!in_century(
          std::chrono::year_month_day(std::chrono::floor<std::chrono::days>(f.created_at)))) {
    return InputError("created_at", "is not a time from 2000 to 2099");
  }
  if (Status st = ValidateAbaRouting(f.odfi_routing, "odfi_routing"); !st.ok())
    return AsInputError(st);
  if (f.entries.empty()) return InputError("entries", "must have at least one entry");
  if (f.first_sequence < 1 ||
      f.first_sequence + static_cast<int64_t>(f.entries.size()) - 1 > kMaxSequence) {
    return InputError("first_sequence", "leaves the 7-digit trace sequence");
  }
  if (static_cast<int64_t>(f.entries.size()) > kMaxSequence) {
    return InputError("entries",
                      "must be at most " + std::to_string(kMaxSequence) + " in one file");
  }

  // The entries, checked and formatted, in batches by SEC code.
  Batch batches[2] = {{"PPD", {}}, {"CCD", {}}};
  std::vector<std::string> records(f.entries.size());
  std::vector<int64_t> rdfi(f.entries.size());
  for (size_t i = 0; i < f.entries.size(); ++i) {
    const NachaFile::Entry& e = f.entries[i];
    const std::string at = "entries[" + std::to_string(i) + "].";
    Batch* batch = e.sec_code == "PPD" ? &batches[0] : e.sec_code == "CCD" ? &batches[1] : nullptr;
    if (!batch) return InputError(at + "sec_code", "must be PPD (a consumer) or CCD (a business)");
    if (Status st = ValidateAbaRouting(e.routing, at + "routing"); !st.ok())
      return AsInputError(st);
    if (Status st = ValidateAchAccount(e.account_number, at + "account_number"); !st.ok()) {
      return AsInputError(st);
    }
    const char* code = e.account_type == "checking"  ? "22"
                       : e.account_type == "savings" ? "32"
                                                     : nullptr;
    if (!code) return InputError(at + "account_type", "must be checking or savings");
    if (e.amount_cents <= 0) return InputError(at + "amount_cents", "must be more than 0");
    if (e.amount_cents > kMaxNachaEntryCents) {
      return InputError(at + "amount_cents", "must be at most $99,999,999.99 (10 digits)");
    }
    GPUNEX_ASSIGN_OR_RETURN(const std::string name,
                            Text(at + "individual_name", e.individual_name, 22));
    for (char d : std::string_view(e.routing).substr(0, 8)) rdfi[i] = rdfi[i] * 10 + (d - '0');
    std::string r;
    r.reserve(kNachaRecordLength);
    r += "6";
    r += code;
    r += e.routing;  // RDFI id (8) and check digit (1)
    r += Pad(e.account_number, 17);
    r += Num(e.amount_cents, 10);
    r += ToNachaText(e.individual_id, 15);
    r += name;
    r += "  ";  // discretionary data
    r += "0";   // no addenda
    r += TraceNumber(f.odfi_routing, f.first_sequence + static_cast<int64_t>(i));
    records[i] = std::move(r);
    batch->entries.push_back(i);
  }

  const std::string odfi = f.odfi_routing.substr(0, 8);
  std::vector<std::string> out;
  out.reserve(f.entries.size() + 8);
  {
    const auto secs = std::chrono::floor<std::chrono::seconds>(f.created_at);
    const auto day = std::chrono::floor<std::chrono::days>(secs);
    const std::chrono::hh_mm_ss hms(secs - day);
    std::string r = "1";
    r += "01";  // priority code
    r += " " + f.immediate_destination;
    r += origin;
    r += Yymmdd(std::chrono::year_month_day(day));
    r += Num(hms.hours().count(), 2) + Num(hms.minutes().count(), 2);
    r += f.file_id_modifier;
    r += "094";  // record size
    r += "10";   // blocking factor
    r += "1";    // format code
    r += dest_name;
    r += origin_name;
    r += Pad("", 8);  // reference code
    out.push_back(std::move(r));
  }
  int64_t batch_number = 0, file_count = 0, file_hash = 0, file_credit = 0;
  for (const Batch& b : batches) {
    if (b.entries.empty()) continue;
    ++batch_number;
    const int64_t count = static_cast<int64_t>(b.entries.size());
    if (count > kMaxBatchEntries) {
      return InputError("entries", "must be at most " + std::to_string(kMaxBatchEntries) + " " +
                                       b.sec_code + " entries in one file");
    }
    int64_t hash = 0, credit = 0;
    for (size_t i : b.entries) {
      hash += rdfi[i];
      credit += f.entries[i].amount_cents;  // <= 999999 * 10^10: no overflow
    }
    if (credit > kMaxTwelveDigits) {
      return InputError("entries", "add up to more than $9,999,999,999.99 of " + b.sec_code +
                                       " entries, the most a batch can carry");
    }
    std::string h = "5";
    h += "220";  // credits only
    h += company_name;
    h += Pad("", 20);  // company discretionary data
    h += Pad(company_id, 10);
    h += b.sec_code;
    h += description;
    h += Pad("", 6);  // company descriptive date
    h += Yymmdd(f.effective_date);
    h += Pad("", 3);  // settlement date: the ACH operator's
    h += "1";         // originator status: a depository financial institution
    h += odfi;
    h += Num(batch_number, 7);
    out.push_back(std::move(h));
    for (size_t i : b.entries) out.push_back(std::move(records[i]));
    std::string c = "8";
    c += "220";
    c += Num(count, 6);
    c += Num(hash % kTenDigits, 10);
    c += Num(0, 12);  // debits
    c += Num(credit, 12);
    c += Pad(company_id, 10);
    c += Pad("", 19);  // message authentication code
    c += Pad("", 6);   // reserved
    c += odfi;
    c += Num(batch_number, 7);
    out.push_back(std::move(c));
    file_count += count;
    file_hash += hash;
    file_credit += credit;
  }
  if (file_credit > kMaxTwelveDigits) {
    return InputError("entries",
                      "add up to more than $9,999,999,999.99, the most a file can carry");
  }
  const int64_t records_total = static_cast<int64_t>(out.size()) + 1;
  const int64_t blocks = (records_total + 9) / 10;
  {
    std::string r = "9";
    r += Num(batch_number, 6);
    r += Num(blocks, 6);
    r += Num(file_count, 8);
    r += Num(file_hash % kTenDigits, 10);
    r += Num(0, 12);
    r += Num(file_credit, 12);
    r += Pad("", 39);
    out.push_back(std::move(r));
  }
  while (static_cast<int64_t>(out.size()) < blocks * 10) out.emplace_back(kNachaRecordLength, '9');

  std::string text;
  text.reserve(out.size() * (kNachaRecordLength + 1));
  for (const std::string& r : out) {
    if (r.size() != kNachaRecordLength) {
      return Internal("the NACHA writer made a record of " + std::to_string(r.size()) +
                      " characters: " + r.substr(0, 1));
    }
    text += r;
    text += '\n';
  }
  return text;
}

// --- parsing

namespace {

// One record being read, for errors that name it.
class Record {
 public:
  Record(std::string_view line, size_t number, const char* kind)
      : line_(line), number_(number), kind_(kind) {}

  // Positions as NACHA numbers them: 1-based, inclusive.
  std::string_view At(size_t from, size_t to) const {
    return line_.substr(from - 1, to - from + 1);
  }

  Status Bad(const std::string& what) const {
    return InvalidArgument("line " + std::to_string(number_) + " (" + kind_ + "): " + what);
  }
  // A field of digits only, as a number.
  StatusOr<int64_t> Number(size_t from, size_t to, const char* name) const {
    const std::string_view s = At(from, to);
    if (!AllDigits(s)) {
      return Bad(std::string(name) + " (positions " + std::to_string(from) + "-" +
                 std::to_string(to) + ") must be digits, not \"" + std::string(s) + "\"");
    }
    int64_t v = 0;
    for (char c : s) v = v * 10 + (c - '0');
    return v;
  }
  Status Expect(size_t from, size_t to, std::string_view want, const char* name) const {
    if (At(from, to) != want) {
      return Bad(std::string(name) + " (positions " + std::to_string(from) + "-" +
                 std::to_string(to) + ") must be \"" + std::string(want) + "\", not \"" +
                 std::string(At(from, to)) + "\"");
    }
    return Status::Ok();
  }
  Status Required(size_t from, size_t to, const char* name) const {
    if (Blank(At(from, to))) return Bad(std::string(name) + " is blank");
    return Status::Ok();
  }
  Status Date(size_t from, const char* name) const {
    const std::string_view s = At(from, from + 5);
    if (AllDigits(s)) {
      const int y = 2000 + (s[0] - '0') * 10 + (s[1] - '0');
      const unsigned m = (s[2] - '0') * 10 + (s[3] - '0'), d = (s[4] - '0') * 10 + (s[5] - '0');
      if (std::chrono::year_month_day(std::chrono::year(y), std::chrono::month(m),
                                      std::chrono::day(d))
              .ok()) {
        return Status::Ok();
      }
    }
    return Bad(std::string(name) + " must be a date YYMMDD, not \"" + std::string(s) + "\"");
  }
  char Type() const { return line_[0]; }
  size_t number() const { return number_; }

 private:
  std::string_view line_;
  size_t number_;
  const char* kind_;
};

bool IsCredit(int code) { return code == 22 || code == 23 || code == 32 || code == 33; }
bool IsDebit(int code) { return code == 27 || code == 28 || code == 37 || code == 38; }
bool IsPrenote(int code) { return code == 23 || code == 28 || code == 33 || code == 38; }

const char* KindOf(char type) {
  switch (type) {
    case '1':
      return "file header";
    case '5':
      return "batch header";
    case '6':
      return "entry detail";
    case '7':
      return "addenda";
    case '8':
      return "batch control";
    case '9':
      return "file control";
    default:
      return "unknown record";
  }
}

}  // namespace

StatusOr<NachaSummary> ParseNacha(std::string_view text) {
  if (text.empty()) return InvalidArgument("the file is empty");
  std::vector<std::string_view> lines;
  for (size_t at = 0; at < text.size();) {
    size_t nl = text.find('\n', at);
    if (nl == std::string_view::npos) nl = text.size();
    std::string_view line = text.substr(at, nl - at);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    lines.push_back(line);
    at = nl + 1;
  }
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string_view line = lines[i];
    const std::string where = "line " + std::to_string(i + 1);
    if (line.size() != kNachaRecordLength) {
      return InvalidArgument(where + ": has " + std::to_string(line.size()) +
                             " characters; every record has 94");
    }
    for (char c : line) {
      if (c < 0x20 || c > 0x7E) {
        return InvalidArgument(where + ": has a character that is not printable ASCII");
      }
    }
  }

  NachaSummary sum;
  size_t i = 0;
  const auto record = [&](size_t index) {
    return Record(lines[index], index + 1, KindOf(lines[index][0]));
  };

  // File header.
  {
    const Record r = record(0);
    if (r.Type() != '1') return r.Bad("the file must start with a file header (record type 1)");
    GPUNEX_RETURN_IF_ERROR(r.Expect(2, 3, "01", "the priority code"));
    if (r.At(4, 4) != " " || !IsAbaRouting(r.At(5, 13))) {
      return r.Bad(
          "the immediate destination (positions 4-13) must be a space and a valid "
          "9-digit routing number, not \"" +
          std::string(r.At(4, 13)) + "\"");
    }
    GPUNEX_RETURN_IF_ERROR(r.Required(14, 23, "the immediate origin (positions 14-23)"));
    GPUNEX_RETURN_IF_ERROR(r.Date(24, "the file creation date (positions 24-29)"));
    GPUNEX_ASSIGN_OR_RETURN(const int64_t hhmm, r.Number(30, 33, "the file creation time"));
    if (hhmm / 100 > 23 || hhmm % 100 > 59) {
      return r.Bad("the file creation time (positions 30-33) must be HHMM");
    }
    if (!IsUpperAlnum(r.At(34, 34)[0])) {
      return r.Bad("the file id modifier (position 34) must be A-Z or 0-9");
    }
    GPUNEX_RETURN_IF_ERROR(r.Expect(35, 37, "094", "the record size"));
    GPUNEX_RETURN_IF_ERROR(r.Expect(38, 39, "10", "the blocking factor"));
    GPUNEX_RETURN_IF_ERROR(r.Expect(40, 40, "1", "the format code"));
    i = 1;
  }

  std::unordered_set<std::string_view> traces;
  int64_t last_batch = 0;
  while (i < lines.size() && lines[i][0] == '5') {
    const Record h = record(i);
    GPUNEX_ASSIGN_OR_RETURN(const int64_t service, h.Number(2, 4, "the service class code"));
    if (service != 200 && service != 220 && service != 225) {
      return h.Bad("the service class code must be 200, 220 or 225, not " +
                   std::to_string(service));
    }
    GPUNEX_RETURN_IF_ERROR(h.Required(5, 20, "the company name (positions 5-20)"));
    GPUNEX_RETURN_IF_ERROR(h.Required(41, 50, "the company identification (positions 41-50)"));
    const std::string_view sec = h.At(51, 53);
    if (sec != "PPD" && sec != "CCD") {
      return h.Bad("the standard entry class (positions 51-53) must be PPD or CCD, not \"" +
                   std::string(sec) + "\"");
    }
    GPUNEX_RETURN_IF_ERROR(h.Required(54, 63, "the company entry description (positions 54-63)"));
    GPUNEX_RETURN_IF_ERROR(h.Date(70, "the effective entry date (positions 70-75)"));
    const std::string_view settlement = h.At(76, 78);
    if (!Blank(settlement) && !AllDigits(settlement)) {
      return h.Bad("the settlement date (positions 76-78) must be blank or a day of the year");
    }
    const char status = h.At(79, 79)[0];
    if (status != '0' && status != '1' && status != '2') {
      return h.Bad("the originator status code (position 79) must be 0, 1 or 2");
    }
    const std::string_view odfi = h.At(80, 87);
    if (!AllDigits(odfi)) return h.Bad("the originating DFI (positions 80-87) must be 8 digits");
    GPUNEX_ASSIGN_OR_RETURN(const int64_t batch_number, h.Number(88, 94, "the batch number"));
    if (batch_number <= last_batch) {
      return h.Bad("the batch number " + std::to_string(batch_number) +
                   " does not ascend (the batch before is " + std::to_string(last_batch) + ")");
    }
    last_batch = batch_number;
    ++i;

    int64_t count = 0, hash = 0, debit = 0, credit = 0, last_seq = 0;
    while (i < lines.size() && (lines[i][0] == '6' || lines[i][0] == '7')) {
      const Record e = record(i);
      if (e.Type() == '7') {
        return e.Bad(
            "an addenda record must follow an entry detail whose addenda indicator "
            "is 1");
      }
      GPUNEX_ASSIGN_OR_RETURN(const int64_t code, e.Number(2, 3, "the transaction code"));
      const int tc = static_cast<int>(code);
      if (!IsCredit(tc) && !IsDebit(tc)) {
        return e.Bad("the transaction code " + std::to_string(code) +
                     " is not one of 22, 23, 27, 28, 32, 33, 37, 38");
      }
      if ((service == 220 && !IsCredit(tc)) || (service == 225 && !IsDebit(tc))) {
        return e.Bad("the transaction code " + std::to_string(code) +
                     " does not belong in a batch of service class " + std::to_string(service));
      }
      const std::string_view routing = e.At(4, 12);
      int64_t rdfi = 0;
      if (!IsAbaRouting(routing)) {
        return e.Bad("the receiving DFI and check digit (positions 4-12) \"" +
                     std::string(routing) + "\" are not a valid routing number");
      }
      const std::string_view account = e.At(13, 29);
      if (Blank(account) || account[0] == ' ') {
        return e.Bad(
            "the DFI account number (positions 13-29) must be left-justified and not "
            "blank");
      }
      GPUNEX_ASSIGN_OR_RETURN(const int64_t amount, e.Number(30, 39, "the amount"));
      if (IsPrenote(tc) ? amount != 0 : amount <= 0) {
        return e.Bad(IsPrenote(tc) ? "a prenote must have the amount 0"
                                   : "the amount must be more than 0");
      }
      GPUNEX_RETURN_IF_ERROR(e.Required(55, 76, "the receiver's name (positions 55-76)"));
      const char addenda = e.At(79, 79)[0];
      if (addenda != '0' && addenda != '1') {
        return e.Bad("the addenda record indicator (position 79) must be 0 or 1");
      }
      const std::string_view trace = e.At(80, 94);
      if (!AllDigits(trace)) return e.Bad("the trace number (positions 80-94) must be digits");
      if (trace.substr(0, 8) != odfi) {
        return e.Bad("the trace number " + std::string(trace) +
                     " does not start with the batch's originating DFI " + std::string(odfi));
      }
      GPUNEX_ASSIGN_OR_RETURN(const int64_t seq, e.Number(88, 94, "the trace sequence"));
      if (seq <= last_seq) {
        return e.Bad("the trace number " + std::string(trace) + " does not ascend in its batch");
      }
      last_seq = seq;
      if (!traces.insert(trace).second) {
        return e.Bad("the trace number " + std::string(trace) + " is used twice in the file");
      }
      ++count;
      for (char d : routing.substr(0, 8)) rdfi = rdfi * 10 + (d - '0');
      hash += rdfi;
      (IsCredit(tc) ? credit : debit) += amount;
      sum.entries.push_back({batch_number, std::string(sec), tc, std::string(routing),
                             std::string(TrimRight(account)), amount,
                             std::string(TrimRight(e.At(40, 54))),
                             std::string(TrimRight(e.At(55, 76))), std::string(trace)});
      ++i;
      if (addenda == '1') {
        if (i >= lines.size() || lines[i][0] != '7') {
          return e.Bad("the addenda record indicator is 1 but no addenda record follows");
        }
        const Record a = record(i);
        GPUNEX_RETURN_IF_ERROR(a.Expect(2, 3, "05", "the addenda type code"));
        GPUNEX_RETURN_IF_ERROR(a.Expect(84, 87, "0001", "the addenda sequence number"));
        GPUNEX_RETURN_IF_ERROR(a.Expect(88, 94, trace.substr(8), "the entry detail sequence"));
        ++count;
        ++i;
      }
    }
    if (count == 0) return h.Bad("the batch has no entries");
    if (i >= lines.size() || lines[i][0] != '8') {
      return i < lines.size() ? record(i).Bad(
                                    "a batch control (record type 8) must end the batch begun on "
                                    "line " +
                                    std::to_string(h.number()))
                              : h.Bad("the batch has no batch control (record type 8)");
    }
    const Record c = record(i);
    GPUNEX_RETURN_IF_ERROR(c.Expect(2, 4, h.At(2, 4), "the service class code"));
    GPUNEX_ASSIGN_OR_RETURN(const int64_t c_count, c.Number(5, 10, "the entry/addenda count"));
    if (c_count != count) {
      return c.Bad("the entry/addenda count is " + std::to_string(c_count) + " but the batch has " +
                   std::to_string(count));
    }
    GPUNEX_ASSIGN_OR_RETURN(const int64_t c_hash, c.Number(11, 20, "the entry hash"));
    if (c_hash != hash % kTenDigits) {
      return c.Bad("the entry hash is " + std::to_string(c_hash) + " but the entries' is " +
                   std::to_string(hash % kTenDigits));
    }
    GPUNEX_ASSIGN_OR_RETURN(const int64_t c_debit, c.Number(21, 32, "the total debit amount"));
    GPUNEX_ASSIGN_OR_RETURN(const int64_t c_credit, c.Number(33, 44, "the total credit amount"));
    if (c_debit != debit || c_credit != credit) {
      return c.Bad("the totals are " + std::to_string(c_debit) + " debit and " +
                   std::to_string(c_credit) + " credit (cents) but the entries add up to " +
                   std::to_string(debit) + " and " + std::to_string(credit));
    }
    GPUNEX_RETURN_IF_ERROR(c.Expect(45, 54, h.At(41, 50), "the company identification"));
    GPUNEX_RETURN_IF_ERROR(c.Expect(74, 79, "      ", "the reserved field"));
    GPUNEX_RETURN_IF_ERROR(c.Expect(80, 87, odfi, "the originating DFI"));
    GPUNEX_RETURN_IF_ERROR(c.Expect(88, 94, h.At(88, 94), "the batch number"));
    ++i;
    ++sum.batch_count;
    sum.entry_addenda_count += count;
    sum.entry_hash += hash;
    sum.total_debit_cents += debit;
    sum.total_credit_cents += credit;
  }
  sum.entry_hash %= kTenDigits;

  if (sum.batch_count == 0) {
    return i < lines.size() ? record(i).Bad(
                                  "a batch header (record type 5) must follow the "
                                  "file header")
                            : InvalidArgument("the file has only a file header");
  }
  if (i >= lines.size()) return InvalidArgument("the file has no file control (record type 9)");
  const Record fc = record(i);
  if (fc.Type() != '9') {
    return fc.Bad("a batch header (5) or the file control (9) must follow a batch control");
  }
  ++i;
  const size_t filler = lines.size() - i;
  for (; i < lines.size(); ++i) {
    if (lines[i] != std::string(kNachaRecordLength, '9')) {
      return record(i).Bad("only filler records of 94 '9's may follow the file control");
    }
  }
  if (lines.size() % kNachaBlockingFactor != 0) {
    return InvalidArgument("the file has " + std::to_string(lines.size()) +
                           " records, not a multiple of the blocking factor 10");
  }
  if (filler >= kNachaBlockingFactor) {
    return InvalidArgument("the file ends with " + std::to_string(filler) +
                           " filler records; a block of filler only is not allowed");
  }
  sum.block_count = static_cast<int64_t>(lines.size() / kNachaBlockingFactor);

  GPUNEX_ASSIGN_OR_RETURN(const int64_t f_batches, fc.Number(2, 7, "the batch count"));
  if (f_batches != sum.batch_count) {
    return fc.Bad("the batch count is " + std::to_string(f_batches) + " but the file has " +
                  std::to_string(sum.batch_count));
  }
  GPUNEX_ASSIGN_OR_RETURN(const int64_t f_blocks, fc.Number(8, 13, "the block count"));
  if (f_blocks != sum.block_count) {
    return fc.Bad("the block count is " + std::to_string(f_blocks) + " but the file has " +
                  std::to_string(sum.block_count));
  }
  GPUNEX_ASSIGN_OR_RETURN(const int64_t f_count, fc.Number(14, 21, "the entry/addenda count"));
  if (f_count != sum.entry_addenda_count) {
    return fc.Bad("the entry/addenda count is " + std::to_string(f_count) +
                  " but the batches have " + std::to_string(sum.entry_addenda_count));
  }
  GPUNEX_ASSIGN_OR_RETURN(const int64_t f_hash, fc.Number(22, 31, "the entry hash"));
  if (f_hash != sum.entry_hash) {
    return fc.Bad("the entry hash is " + std::to_string(f_hash) + " but the batches' is " +
                  std::to_string(sum.entry_hash));
  }
  GPUNEX_ASSIGN_OR_RETURN(const int64_t f_debit, fc.Number(32, 43, "the total debit amount"));
  GPUNEX_ASSIGN_OR_RETURN(const int64_t f_credit, fc.Number(44, 55, "the total credit amount"));
  if (f_debit != sum.total_debit_cents || f_credit != sum.total_credit_cents) {
    return fc.Bad("the totals are " + std::to_string(f_debit) + " debit and " +
                  std::to_string(f_credit) + " credit (cents) but the batches add up to " +
                  std::to_string(sum.total_debit_cents) + " and " +
                  std::to_string(sum.total_credit_cents));
  }
  if (!Blank(fc.At(56, 94))) return fc.Bad("the reserved field (positions 56-94) must be blank");
  return sum;
}

}  // namespace gpunex::platform::bank
