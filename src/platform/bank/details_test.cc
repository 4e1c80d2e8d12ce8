#include "platform/bank/details.h"

#include <gtest/gtest.h>

#include <set>

namespace gpunex::platform::bank {
namespace {

// The message of a one-field error, "" for OK.
std::string Why(const Status& st, const std::string& field = "iban") {
  if (st.ok()) return "";
  EXPECT_EQ(st.code(), StatusCode::kValidationFailed) << st.ToString();
  auto it = st.fields().find(field);
  return it == st.fields().end() ? "no error for " + field + ": " + st.ToString() : it->second;
}
template <typename T>
std::string Why(const StatusOr<T>& s, const std::string& field = "iban") {
  return Why(s.status(), field);
}

TEST(IbanTable, LengthsAgreeWithTheFormatsAndCodesAreSortedAndUnique) {
  std::string previous;
  for (const IbanCountry& c : SepaIbanCountries()) {
    int sum = 0, count = 0;
    for (char ch : c.bban) {
      if (ch >= '0' && ch <= '9') {
        count = count * 10 + (ch - '0');
      } else {
        EXPECT_TRUE(ch == 'n' || ch == 'a' || ch == 'c') << c.code;
        sum += count;
        count = 0;
      }
    }
    EXPECT_EQ(c.length, 4 + sum) << c.code;
    EXPECT_LT(previous, std::string(c.code));
    previous = std::string(c.code);
    EXPECT_EQ(FindSepaIbanCountry(c.code), &c);
  }
  EXPECT_EQ(SepaIbanCountries().size(), 42u);  // 41 countries and Gibraltar
  EXPECT_EQ(FindSepaIbanCountry("US"), nullptr);
}

TEST(Iban, AcceptsValidIbansOfSeveralCountries) {
  for (const char* iban : {"DE89370400440532013000",
                           "GB82WEST12345698765432",
                           "FR1420041010050500013M02606",
                           "NL91ABNA0417164300",
                           "IT60X0542811101000000123456",
                           "ES9121000418450200051332",
                           "CH9300762011623852957",
                           "AT611904300234573201",
                           "NO9386011117947",
                           "MT84MALT011000012345MTLCAST001S",
                           "GI75NWBK000000007099453",
                           "VA59001123000012345678",
                           "AL47212110090000000235698741",
                           "PL61109010140000071219812874",
                           "SE4550000000058398257466",
                           "BE68539007547034",
                           "IE29AIBK93115212345678",
                           "PT50000201231234567890154",
                           "RS35260005601001611379",
                           "MD24AG000225100013104168"}) {
    auto n = NormalizeIban(iban, "iban");
    ASSERT_TRUE(n.ok()) << iban << ": " << n.status().ToString();
    EXPECT_EQ(*n, iban);
  }
}

TEST(Iban, NormalizesSpacesAndCase) {
  auto n = NormalizeIban(" de89 3704 0044 0532 0130 00 ", "iban");
  ASSERT_TRUE(n.ok()) << n.status().ToString();
  EXPECT_EQ(*n, "DE89370400440532013000");
  EXPECT_EQ(FormatIbanForPrint(*n), "DE89 3704 0044 0532 0130 00");
  EXPECT_EQ(FormatIbanForPrint("FR1420041010050500013M02606"), "FR14 2004 1010 0505 0001 3M02 606");
}

TEST(Iban, RejectsWrongCheckDigits) {
  EXPECT_EQ(Why(NormalizeIban("DE88370400440532013000", "iban")),
            "has wrong check digits: check it for a typing mistake");
  // One digit of the account changed.
  EXPECT_NE(Why(NormalizeIban("GB82WEST12345698765433", "iban")), "");
  // Two neighbouring digits swapped.
  EXPECT_NE(Why(NormalizeIban("FR1420041010050500013M02660", "iban")), "");
}

TEST(Iban, RejectsCheckDigitsThatIso13616NeverIssues) {
  // Each pair passes MOD 97-10; only 02 to 98 are check digits.
  EXPECT_TRUE(NormalizeIban("DE02370400440000000024", "iban").ok());
  EXPECT_EQ(Why(NormalizeIban("DE99370400440000000024", "iban")),
            "has wrong check digits: check it for a typing mistake");
  EXPECT_TRUE(NormalizeIban("DE97370400440000000060", "iban").ok());
  EXPECT_FALSE(NormalizeIban("DE00370400440000000060", "iban").ok());
}

TEST(Iban, RejectsWrongLengths) {
  EXPECT_EQ(Why(NormalizeIban("DE8937040044053201300", "iban")),
            "must have 22 characters for an account in DE (this one has 21)");
  EXPECT_EQ(Why(NormalizeIban("DE893704004405320130000", "iban")),
            "must have 22 characters for an account in DE (this one has 23)");
  EXPECT_NE(Why(NormalizeIban("NO938601111794", "iban")), "");
}

TEST(Iban, RejectsBbansOfTheWrongForm) {
  // GB: 4 letters (the bank) then 14 digits.
  EXPECT_EQ(Why(NormalizeIban("GB82WES312345698765432", "iban")),
            "does not have the form of an IBAN from GB: after the check digits come 4 capital "
            "letters and 14 digits");
  // DE: 18 digits.
  EXPECT_EQ(Why(NormalizeIban("DE89370400440532013A00", "iban")),
            "does not have the form of an IBAN from DE: after the check digits come 18 digits");
  // FR: 10 digits, 11 letters or digits, 2 digits.
  EXPECT_EQ(Why(NormalizeIban("FR1420041010050500013M0260A", "iban")),
            "does not have the form of an IBAN from FR: after the check digits come 10 digits, 11 "
            "letters or digits and 2 digits");
}

TEST(Iban, RejectsCountriesOutsideSepa) {
  EXPECT_EQ(Why(NormalizeIban("BR1800360305000010009795493C1", "iban")),
            "is an account in BR, which is not a SEPA country: bank payouts by SEPA transfer go "
            "to SEPA countries only");
  EXPECT_NE(Why(NormalizeIban("US12345678901234567890", "iban")), "");
  EXPECT_EQ(Why(NormalizeIban("SA0380000000608010167519", "iban")).substr(0, 19),
            "is an account in SA");
  EXPECT_EQ(Why(NormalizeIban("ZZ89370400440532013000", "iban")),
            "must start with the code of a SEPA country, such as DE (ZZ is not one)");
}

TEST(Iban, RejectsOtherMalformedInput) {
  EXPECT_EQ(Why(NormalizeIban("", "iban")), "is required");
  EXPECT_EQ(Why(NormalizeIban("   ", "iban")), "is required");
  EXPECT_EQ(Why(NormalizeIban("DE89-3704-0044", "iban")),
            "may contain only letters, digits and spaces");
  EXPECT_EQ(Why(NormalizeIban("DE89\xC3\xA9", "iban")),
            "may contain only letters, digits and spaces");
  EXPECT_EQ(Why(NormalizeIban("89370400440532013000", "iban")),
            "must start with a two-letter country code, such as DE");
  EXPECT_EQ(Why(NormalizeIban("DEX9370400440532013000", "iban")),
            "must have two check digits after the country code");
  // The field is the caller's.
  EXPECT_EQ(Why(NormalizeIban("", "payout.iban"), "payout.iban"), "is required");
}

TEST(Iban, SaysWhichCountriesNeedABic) {
  EXPECT_FALSE(IbanNeedsBic("DE89370400440532013000"));
  EXPECT_FALSE(IbanNeedsBic("NO9386011117947"));  // EEA
  EXPECT_TRUE(IbanNeedsBic("GB82WEST12345698765432"));
  EXPECT_TRUE(IbanNeedsBic("CH9300762011623852957"));
  EXPECT_TRUE(IbanNeedsBic("GI75NWBK000000007099453"));
}

TEST(Bic, AcceptsEightAndElevenCharacters) {
  auto b = NormalizeBic("deutdeff", "bic");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(*b, "DEUTDEFF");
  b = NormalizeBic("DEUT DE FF 500", "bic");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(*b, "DEUTDEFF500");
  EXPECT_TRUE(NormalizeBic("NWBKGB2L", "bic").ok());
  EXPECT_TRUE(NormalizeBic("UBSWCHZH80A", "bic").ok());
  EXPECT_TRUE(NormalizeBic("RAIFXKPR", "bic").ok());  // Kosovo
}

TEST(Bic, RejectsMalformedBics) {
  EXPECT_EQ(Why(NormalizeBic("", "bic"), "bic"), "is required");
  EXPECT_EQ(Why(NormalizeBic("DEUTDEF", "bic"), "bic"),
            "must have 8 or 11 letters and digits (it has 7)");
  EXPECT_EQ(Why(NormalizeBic("DEUTDEFF5", "bic"), "bic"),
            "must have 8 or 11 letters and digits (it has 9)");
  EXPECT_EQ(Why(NormalizeBic("DEU1DEFF", "bic"), "bic"),
            "must start with 4 letters, the bank's code");
  EXPECT_EQ(Why(NormalizeBic("DEUTZZFF", "bic"), "bic"),
            "must have a country code in its 5th and 6th characters (ZZ is not one)");
  EXPECT_EQ(Why(NormalizeBic("DEUT1EFF", "bic"), "bic"),
            "must have a country code in its 5th and 6th characters (1E is not one)");
  EXPECT_EQ(Why(NormalizeBic("DEUT-DEFF", "bic"), "bic"),
            "may contain only letters, digits and spaces");
}

TEST(AbaRouting, AcceptsValidRoutingNumbers) {
  for (const char* r : {"021000021", "011000015", "026009593", "121000358", "322271627"}) {
    EXPECT_TRUE(ValidateAbaRouting(r, "routing").ok()) << r;
    EXPECT_TRUE(IsAbaRouting(r)) << r;
  }
}

TEST(AbaRouting, RejectsBadRoutingNumbers) {
  EXPECT_EQ(Why(ValidateAbaRouting("021000022", "routing"), "routing"),
            "has a wrong check digit: check it for a typing mistake");
  EXPECT_EQ(Why(ValidateAbaRouting("02100002", "routing"), "routing"), "must be 9 digits");
  EXPECT_EQ(Why(ValidateAbaRouting("0210000211", "routing"), "routing"), "must be 9 digits");
  EXPECT_EQ(Why(ValidateAbaRouting("02100002A", "routing"), "routing"), "must be 9 digits");
  EXPECT_EQ(Why(ValidateAbaRouting("", "routing"), "routing"), "is required");
  EXPECT_EQ(Why(ValidateAbaRouting("000000000", "routing"), "routing"), "is not a routing number");
  // 13 is outside the Federal Reserve's ranges; 131000005 passes the check digit.
  EXPECT_EQ(Why(ValidateAbaRouting("131000005", "routing"), "routing").substr(0, 24),
            "is not a routing number:");
  EXPECT_FALSE(IsAbaRouting("131000005"));
  EXPECT_FALSE(IsAbaRouting("021000022"));
}

TEST(AchAccount, AcceptsFourToSeventeenDigits) {
  EXPECT_TRUE(ValidateAchAccount("1234", "account").ok());
  EXPECT_TRUE(ValidateAchAccount("12345678901234567", "account").ok());
  EXPECT_EQ(Why(ValidateAchAccount("123", "account"), "account"), "must be 4 to 17 digits");
  EXPECT_EQ(Why(ValidateAchAccount("123456789012345678", "account"), "account"),
            "must be 4 to 17 digits");
  EXPECT_EQ(Why(ValidateAchAccount("1234-5678", "account"), "account"), "may contain only digits");
  EXPECT_EQ(Why(ValidateAchAccount("", "account"), "account"), "is required");
}

TEST(AchAccount, KnowsTheAccountTypes) {
  EXPECT_TRUE(IsValidAccountType("checking"));
  EXPECT_TRUE(IsValidAccountType("savings"));
  EXPECT_FALSE(IsValidAccountType("Checking"));
  EXPECT_FALSE(IsValidAccountType(""));
}

TEST(MaskAccount, ShowsTheLastFour) {
  EXPECT_EQ(MaskAccount("DE89370400440532013000"), "****3000");
  EXPECT_EQ(MaskAccount("12345"), "****2345");
  EXPECT_EQ(MaskAccount("1234"), "****");
  EXPECT_EQ(MaskAccount(""), "****");
}

TEST(Holder, TrimsAndKeepsTheName) {
  auto h = NormalizeHolder("  Zoë Ørsted-Müller \n", "holder");
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(*h, "Zoë Ørsted-Müller");
  EXPECT_TRUE(NormalizeHolder(std::string(70, 'a'), "holder").ok());
  // 70 characters of two bytes each.
  std::string seventy;
  for (int i = 0; i < 70; ++i) seventy += "\xC3\xA9";
  EXPECT_TRUE(NormalizeHolder(seventy, "holder").ok());
}

TEST(Holder, RejectsEmptyLongControlAndInvalidText) {
  EXPECT_EQ(Why(NormalizeHolder(" \t ", "holder"), "holder"), "is required");
  EXPECT_EQ(Why(NormalizeHolder(std::string(71, 'a'), "holder"), "holder"),
            "must be at most 70 characters");
  EXPECT_EQ(Why(NormalizeHolder("Ann\tLee", "holder"), "holder"),
            "may not contain control characters (tabs, line breaks)");
  EXPECT_EQ(Why(NormalizeHolder("Ann\nLee", "holder"), "holder"),
            "may not contain control characters (tabs, line breaks)");
  EXPECT_NE(Why(NormalizeHolder("Ann \xE2\x80\xAE"
                                "eeL",
                                "holder"),
                "holder"),
            "");  // RLO
  EXPECT_EQ(Why(NormalizeHolder("Ann \xC3", "holder"), "holder"), "is not valid UTF-8 text");
  EXPECT_EQ(Why(NormalizeHolder("Ann \xC0\xAF", "holder"), "holder"),
            "is not valid UTF-8 text");  // overlong '/'
}

}  // namespace
}  // namespace gpunex::platform::bank
