#include "platform/bank/latin.h"

#include <gtest/gtest.h>

namespace gpunex::platform::bank {
namespace {

TEST(SepaLatin, KeepsTheBasicSet) {
  const std::string all =
      "abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMNOPQRSTUVWXYZ 0123456789 /-?:().,'+";
  EXPECT_EQ(ToSepaLatin(all, 140), all);
  EXPECT_TRUE(IsSepaLatin(all));
  EXPECT_FALSE(IsSepaLatin("a&b"));
  EXPECT_FALSE(IsSepaLatin("caf\xC3\xA9"));
}

TEST(SepaLatin, TransliteratesAccentedLettersAndLigatures) {
  EXPECT_EQ(ToSepaLatin("Ren\xC3\xA9 M\xC3\xBCller", 70), "Rene Muller");  // é ü
  EXPECT_EQ(ToSepaLatin("Stra\xC3\x9F"
                        "e",
                        70),
            "Strasse");                                                                 // ß
  EXPECT_EQ(ToSepaLatin("\xC3\x98rsted \xC3\x86gir \xC3\xA6", 70), "Orsted AEgir ae");  // Ø Æ æ
  EXPECT_EQ(ToSepaLatin("\xC5\x81\xC3\xB3"
                        "d\xC5\xBA",
                        70),
            "Lodz");                                                 // Łódź
  EXPECT_EQ(ToSepaLatin("\xC5\x92uvre \xC3\xBE", 70), "OEuvre th");  // Œ þ
  EXPECT_EQ(ToSepaLatin("Bra\xC8\x99ov \xC8\x9A"
                        "ar\xC4\x83",
                        70),
            "Brasov Tara");  // ș Ț ă
  EXPECT_EQ(ToSepaLatin("\xC4\x8C"
                        "esk\xC3\xA1 \xC5\xA0koda \xC5\xBD",
                        70),
            "Ceska Skoda Z");
  EXPECT_EQ(ToSepaLatin("\xC3\x85sa \xC3\xB0", 70), "Asa d");  // Å ð
}

TEST(SepaLatin, DropsCombiningMarks) {
  // "e" + COMBINING ACUTE ACCENT, as macOS file names and some keyboards send it.
  EXPECT_EQ(ToSepaLatin("Rene\xCC\x81", 70), "Rene");
}

TEST(SepaLatin, MapsPunctuationAndReplacesTheRest) {
  EXPECT_EQ(ToSepaLatin("O\xE2\x80\x99"
                        "Brien \xE2\x80\x93 Ltd",
                        70),
            "O'Brien - Ltd");  // ’ –
  EXPECT_EQ(ToSepaLatin("Smith & Co_1 \"x\" @home", 70), "Smith . Co.1 .x. .home");
  EXPECT_EQ(ToSepaLatin("\xE5\xBC\xA0\xE4\xB8\x89", 70), "..");  // 张三
  EXPECT_EQ(ToSepaLatin("a\xFF"
                        "b",
                        70),
            "a.b");                                     // invalid UTF-8
  EXPECT_EQ(ToSepaLatin("\xCE\xA9mega", 70), ".mega");  // Greek
}

TEST(SepaLatin, CollapsesWhiteSpaceAndTrims) {
  EXPECT_EQ(ToSepaLatin("  Ann \t\n  Lee\xC2\xA0 Ltd  ", 70), "Ann Lee Ltd");
  EXPECT_EQ(ToSepaLatin(" \t ", 70), "");
  EXPECT_EQ(ToSepaLatin("", 70), "");
}

TEST(SepaLatin, TruncatesWithoutATrailingSpace) {
  EXPECT_EQ(ToSepaLatin("abcdef", 3), "abc");
  EXPECT_EQ(ToSepaLatin("abc def", 4), "abc");
  EXPECT_EQ(ToSepaLatin("abc def", 5), "abc d");
  EXPECT_EQ(ToSepaLatin("Gro\xC3\x9F", 4), "Gros");  // ß cut in the middle of "ss"
  EXPECT_EQ(ToSepaLatin(std::string(200, 'x'), 140).size(), 140u);
  EXPECT_EQ(ToSepaLatin("abc", 0), "");
}

TEST(NachaText, UpperCasesPadsAndCuts) {
  EXPECT_EQ(ToNachaText("Ren\xC3\xA9 M\xC3\xBCller", 22), "RENE MULLER           ");
  EXPECT_EQ(ToNachaText("Smith & Co", 10), "SMITH & CO");
  EXPECT_EQ(ToNachaText("A very long company name", 16), "A VERY LONG COMP");
  EXPECT_EQ(ToNachaText("", 5), "     ");
  EXPECT_EQ(ToNachaText("stra\xC3\x9F"
                        "e",
                        8),
            "STRASSE ");
  EXPECT_EQ(ToNachaText("\xE5\xBC\xA0", 3), ".  ");
  EXPECT_EQ(ToNachaText("pay_01jd", 15).size(), 15u);
}

}  // namespace
}  // namespace gpunex::platform::bank
