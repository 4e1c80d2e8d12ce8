#include "platform/bank/nacha.h"

#include <gtest/gtest.h>

#include <sstream>

namespace gpunex::platform::bank {
namespace {

using std::chrono::day;
using std::chrono::month;
using std::chrono::year;

NachaFile ThreeEntries() {
  NachaFile f;
  f.immediate_destination = "021000021";
  f.immediate_destination_name = "JPMorgan Chase";
  f.immediate_origin = "1123456789";
  f.immediate_origin_name = "gpunex Operations Inc";
  f.file_id_modifier = 'A';
  f.created_at = *ParseRfc3339("2026-12-07T08:30:15Z");
  f.company_name = "gpunex";
  f.company_id = "1123456789";
  f.company_entry_description = "PAYOUT";
  f.effective_date = year(2026) / month(12) / day(8);
  f.odfi_routing = "021000021";
  f.entries = {
      {"PPD", "011000015", "123456789", "checking", 123450, "pay_01JEXAMPLEA",
       "Ren\xC3\xA9 M\xC3\xBCller"},
      {"CCD", "026009593", "98765432101234567", "savings", 5, "pay_01JEXAMPLEB",
       "Acme GPU Farms LLC"},
      {"PPD", "121000358", "4444", "savings", 9999999999, "pay_01JEXAMPLEC", "Ann Lee"},
  };
  return f;
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

std::string Join(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& l : lines) out += l + "\n";
  return out;
}

TEST(Nacha, WritesRecordsOf94CharactersInBlocksOfTen) {
  auto text = WriteNacha(ThreeEntries());
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  ASSERT_EQ(text->back(), '\n');
  const auto lines = Lines(*text);
  for (const auto& l : lines) EXPECT_EQ(l.size(), 94u) << l;
  EXPECT_EQ(lines.size() % 10, 0u);
  // 1, 5 (PPD), 6, 6, 8, 5 (CCD), 6, 8, 9 and one filler record.
  ASSERT_EQ(lines.size(), 10u);
  std::string types;
  for (const auto& l : lines) types += l[0];
  EXPECT_EQ(types, "1566856899");
  EXPECT_EQ(lines[9], std::string(94, '9'));

  EXPECT_EQ(lines[0].substr(0, 40),
            "101 0210000211123456789261207"
            "0830A094101");
  EXPECT_EQ(lines[0].substr(40, 23), "JPMORGAN CHASE         ");
  EXPECT_EQ(lines[1].substr(0, 4), "5220");
  EXPECT_EQ(lines[1].substr(50, 3), "PPD");
  EXPECT_EQ(lines[1].substr(53, 10), "PAYOUT    ");
  EXPECT_EQ(lines[1].substr(69, 6), "261208");
  EXPECT_EQ(lines[1].substr(79, 15), "021000020000001");
  // Entry 1: checking credit to 011000015, trace sequence 1.
  EXPECT_EQ(lines[2],
            "622011000015123456789        0000123450PAY_01JEXAMPLEARENE MULLER           "
            "  0021000020000001");
  // Entry 3 is the PPD batch's second, with sequence 3.
  EXPECT_EQ(lines[3].substr(0, 3), "632");
  EXPECT_EQ(lines[3].substr(79, 15), "021000020000003");
  EXPECT_EQ(lines[6].substr(79, 15), "021000020000002");
  EXPECT_EQ(lines[6].substr(1, 2), "32");
  EXPECT_EQ(TraceNumber("021000021", 3), "021000020000003");
}

TEST(Nacha, ParseAgreesWithIndependentlyComputedTotals) {
  const NachaFile f = ThreeEntries();
  auto text = WriteNacha(f);
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  auto sum = ParseNacha(*text);
  ASSERT_TRUE(sum.ok()) << sum.status().ToString();
  int64_t credit = 0, hash = 0;
  for (const auto& e : f.entries) {
    credit += e.amount_cents;
    hash += std::stoll(e.routing.substr(0, 8));
  }
  EXPECT_EQ(sum->total_credit_cents, credit);
  EXPECT_EQ(sum->total_debit_cents, 0);
  EXPECT_EQ(sum->entry_hash, hash % 10'000'000'000);
  EXPECT_EQ(sum->entry_addenda_count, 3);
  EXPECT_EQ(sum->batch_count, 2);
  EXPECT_EQ(sum->block_count, 1);
  ASSERT_EQ(sum->entries.size(), 3u);
  EXPECT_EQ(sum->entries[0].account_number, "123456789");
  EXPECT_EQ(sum->entries[0].individual_name, "RENE MULLER");
  EXPECT_EQ(sum->entries[0].transaction_code, 22);
  EXPECT_EQ(sum->entries[1].amount_cents, 9999999999);
  EXPECT_EQ(sum->entries[1].trace_number, TraceNumber(f.odfi_routing, 3));
  EXPECT_EQ(sum->entries[2].sec_code, "CCD");
  EXPECT_EQ(sum->entries[2].routing, "026009593");
  EXPECT_EQ(sum->entries[2].batch_number, 2);

  // The file control's figures, read directly.
  const auto lines = Lines(*text);
  EXPECT_EQ(lines[8].substr(1, 6), "000002");
  EXPECT_EQ(lines[8].substr(7, 6), "000001");
  EXPECT_EQ(lines[8].substr(13, 8), "00000003");
  EXPECT_EQ(std::stoll(lines[8].substr(21, 10)), hash % 10'000'000'000);
  EXPECT_EQ(std::stoll(lines[8].substr(43, 12)), credit);
}

TEST(Nacha, FillsWholeBlocksOnly) {
  NachaFile f = ThreeEntries();
  // 1 + (5 + 6 entries + 8) + 9 = 10 records: no filler.
  f.entries.resize(1);
  for (int i = 0; i < 5; ++i) f.entries.push_back(f.entries[0]);
  auto text = WriteNacha(f);
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(Lines(*text).size(), 10u);
  EXPECT_EQ(Lines(*text)[9].substr(0, 1), "9");
  EXPECT_NE(Lines(*text)[9], std::string(94, '9'));  // the file control, not filler
  auto sum = ParseNacha(*text);
  ASSERT_TRUE(sum.ok()) << sum.status().ToString();
  EXPECT_EQ(sum->block_count, 1);
  f.entries.push_back(f.entries[0]);
  text = WriteNacha(f);
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(Lines(*text).size(), 20u);
  EXPECT_TRUE(ParseNacha(*text).ok());
}

TEST(Nacha, RejectsBadInputNamingTheField) {
  const auto field = [](const NachaFile& f) {
    auto s = WriteNacha(f);
    EXPECT_EQ(s.status().code(), StatusCode::kInvalidArgument) << s.status().ToString();
    return s.status().fields().empty() ? s.status().message() : s.status().fields().begin()->first;
  };
  NachaFile f = ThreeEntries();
  f.entries[1].routing = "026009594";
  EXPECT_EQ(field(f), "entries[1].routing");
  f = ThreeEntries();
  f.entries[0].amount_cents = 0;
  EXPECT_EQ(field(f), "entries[0].amount_cents");
  f.entries[0].amount_cents = 10'000'000'000;
  EXPECT_EQ(field(f), "entries[0].amount_cents");
  f = ThreeEntries();
  f.entries[2].account_type = "money market";
  EXPECT_EQ(field(f), "entries[2].account_type");
  f = ThreeEntries();
  f.entries[2].sec_code = "WEB";
  EXPECT_EQ(field(f), "entries[2].sec_code");
  f = ThreeEntries();
  f.entries[2].account_number = "12-34";
  EXPECT_EQ(field(f), "entries[2].account_number");
  f = ThreeEntries();
  f.entries[2].individual_name = "  ";
  EXPECT_EQ(field(f), "entries[2].individual_name");
  f = ThreeEntries();
  f.entries.clear();
  EXPECT_EQ(field(f), "entries");
  f = ThreeEntries();
  f.odfi_routing = "123";
  EXPECT_EQ(field(f), "odfi_routing");
  f = ThreeEntries();
  f.immediate_destination = "021000022";
  EXPECT_EQ(field(f), "immediate_destination");
  f = ThreeEntries();
  f.immediate_origin = "12345";
  EXPECT_EQ(field(f), "immediate_origin");
  f = ThreeEntries();
  f.file_id_modifier = 'a';
  EXPECT_EQ(field(f), "file_id_modifier");
  f = ThreeEntries();
  f.company_id = "12345678901";
  EXPECT_EQ(field(f), "company_id");
  f = ThreeEntries();
  f.effective_date = year(2026) / month(2) / day(29);
  EXPECT_EQ(field(f), "effective_date");
  // A routing number of 9 digits as the origin gets its leading space.
  f = ThreeEntries();
  f.immediate_origin = "011000015";
  auto text = WriteNacha(f);
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(text->substr(13, 10), " 011000015");
}

class Tamper : public ::testing::Test {
 protected:
  void SetUp() override {
    auto text = WriteNacha(ThreeEntries());
    ASSERT_TRUE(text.ok());
    lines_ = Lines(*text);
  }
  // ParseNacha's message for the file with lines[line] changed at `pos` (0-based).
  std::string Parse(size_t line, size_t pos, const std::string& with) {
    auto lines = lines_;
    lines[line].replace(pos, with.size(), with);
    return Message(lines);
  }
  static std::string Message(const std::vector<std::string>& lines) {
    auto s = ParseNacha(Join(lines));
    if (s.ok()) return "ok";
    EXPECT_EQ(s.status().code(), StatusCode::kInvalidArgument);
    return s.status().message();
  }
  std::vector<std::string> lines_;
};

TEST_F(Tamper, TheUntouchedFileParses) { EXPECT_EQ(Message(lines_), "ok"); }

TEST_F(Tamper, AnAmountIsCaughtByTheBatchTotal) {
  // Entry 1's amount 0000123450 → 0000123451.
  EXPECT_EQ(Parse(2, 38, "1"),
            "line 5 (batch control): the totals are 0 debit and 10000123449 credit (cents) but "
            "the entries add up to 0 and 10000123450");
}

TEST_F(Tamper, BothTotalsChangedAreCaughtByTheFileControl) {
  auto lines = lines_;
  lines[2].replace(38, 1, "1");
  lines[4].replace(42, 2, "50");  // batch control credit total ...449 → ...450
  EXPECT_NE(Message(lines).find("line 9 (file control): the totals"), std::string::npos)
      << Message(lines);
}

TEST_F(Tamper, AnEntryHashIsCaught) {
  EXPECT_NE(Parse(4, 19, "9").find("line 5 (batch control): the entry hash"), std::string::npos);
  EXPECT_NE(Parse(8, 30, "9").find("line 9 (file control): the entry hash"), std::string::npos);
}

TEST_F(Tamper, ARoutingCheckDigitIsCaught) {
  // 011000015 → 011000016 (and the hash does not change: only the check digit did).
  EXPECT_EQ(Parse(2, 11, "6"),
            "line 3 (entry detail): the receiving DFI and check digit (positions 4-12) "
            "\"011000016\" are not a valid routing number");
}

TEST_F(Tamper, LengthsAreCaught) {
  auto lines = lines_;
  lines[3].pop_back();
  EXPECT_EQ(Message(lines), "line 4: has 93 characters; every record has 94");
  lines = lines_;
  lines[6] += " ";
  EXPECT_EQ(Message(lines), "line 7: has 95 characters; every record has 94");
}

TEST_F(Tamper, BlockingAndOrderAreCaught) {
  auto lines = lines_;
  lines.pop_back();  // the filler record
  EXPECT_NE(Message(lines).find("not a multiple of the blocking factor"), std::string::npos);
  lines = lines_;
  for (int i = 0; i < 10; ++i) lines.push_back(std::string(94, '9'));
  EXPECT_NE(Message(lines).find("filler"), std::string::npos);
  lines = lines_;
  std::swap(lines[2], lines[3]);  // trace sequences 3 then 1
  EXPECT_NE(Message(lines).find("does not ascend in its batch"), std::string::npos);
  lines = lines_;
  std::swap(lines[0], lines[1]);
  EXPECT_NE(Message(lines).find("must start with a file header"), std::string::npos);
  lines = lines_;
  lines.erase(lines.begin() + 4);  // the first batch control
  lines.push_back(std::string(94, '9'));
  EXPECT_NE(Message(lines).find("batch control"), std::string::npos) << Message(lines);
}

TEST_F(Tamper, CountsAndTracesAreCaught) {
  EXPECT_NE(Parse(4, 9, "3").find("the entry/addenda count is 3 but the batch has 2"),
            std::string::npos);
  EXPECT_NE(Parse(8, 6, "3").find("the batch count is 3"), std::string::npos);
  EXPECT_NE(Parse(8, 12, "2").find("the block count is 2"), std::string::npos);
  // A trace number of another ODFI.
  EXPECT_NE(Parse(3, 79, "1").find("does not start with the batch's originating DFI"),
            std::string::npos);
  // Entry 2 (CCD batch) given entry 1's sequence: ascending in its batch, repeated in the file.
  EXPECT_NE(Parse(6, 87, "0000001").find("is used twice in the file"), std::string::npos);
}

TEST_F(Tamper, FieldFormsAreCaught) {
  EXPECT_NE(Parse(2, 29, "00001234X0").find("the amount (positions 30-39) must be digits"),
            std::string::npos);
  EXPECT_NE(Parse(0, 23, "261332").find("the file creation date"), std::string::npos);
  EXPECT_NE(Parse(1, 50, "WEB").find("must be PPD or CCD"), std::string::npos);
  EXPECT_NE(Parse(2, 1, "27").find("does not belong in a batch of service class 220"),
            std::string::npos);
  EXPECT_NE(Parse(2, 78, "1").find("no addenda record follows"), std::string::npos);
  EXPECT_EQ(ParseNacha("").status().message(), "the file is empty");
}

TEST(Nacha, ParsesCrlfLineEnds) {
  auto text = WriteNacha(ThreeEntries());
  ASSERT_TRUE(text.ok());
  std::string crlf;
  for (char c : *text) crlf += c == '\n' ? std::string("\r\n") : std::string(1, c);
  EXPECT_TRUE(ParseNacha(crlf).ok());
}

}  // namespace
}  // namespace gpunex::platform::bank
