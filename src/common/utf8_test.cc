#include "common/utf8.h"

#include <gtest/gtest.h>

namespace gpunex {
namespace {

TEST(Utf8Test, DecodesAndRefusesMalformedSequences) {
  const std::string s = "a\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80";  // a é € 😀
  size_t pos = 0;
  EXPECT_EQ(NextCodePoint(s, &pos), U'a');
  EXPECT_EQ(NextCodePoint(s, &pos), U'\u00E9');
  EXPECT_EQ(NextCodePoint(s, &pos), U'\u20AC');
  EXPECT_EQ(NextCodePoint(s, &pos), U'\U0001F600');
  EXPECT_EQ(pos, s.size());
  for (const std::string bad : {"\xC0\xAF", "\xED\xA0\x80", "\xE2\x82", "\xFF"}) {
    size_t p = 0;
    EXPECT_EQ(NextCodePoint(bad, &p), kInvalidUtf8) << bad;
    EXPECT_EQ(p, 1u);
  }
}

TEST(Utf8Test, StripInvisibleRemovesBidiControlsAndZeroWidthCharacters) {
  // "Ali" + RIGHT-TO-LEFT OVERRIDE + "ce" + ZERO WIDTH SPACE + " " + FIRST STRONG ISOLATE
  // + "Bob" + POP DIRECTIONAL ISOLATE + BOM + soft hyphen + ZWJ.
  const std::string name =
      "Ali\xE2\x80\xAE"
      "ce\xE2\x80\x8B \xE2\x81\xA8"
      "Bob\xE2\x81\xA9\xEF\xBB\xBF\xC2\xAD\xE2\x80\x8D";
  EXPECT_EQ(StripInvisible(name), "Alice Bob");
  // Visible text, accents and emoji stay; so do malformed bytes (checked elsewhere).
  EXPECT_EQ(StripInvisible("Zo\xC3\xAB \xF0\x9F\x98\x80"), "Zo\xC3\xAB \xF0\x9F\x98\x80");
  EXPECT_EQ(StripInvisible("x\xFFy"), "x\xFFy");
  EXPECT_FALSE(IsInvisibleFormat(U' '));
  EXPECT_TRUE(IsInvisibleFormat(0x202E));
  EXPECT_TRUE(IsInvisibleFormat(0x200F));
}

}  // namespace
}  // namespace gpunex
