#include "common/ids.h"

#include <gtest/gtest.h>

#include <set>

namespace gpunex {
namespace {

TEST(Ids, AreUniqueAndPrefixed) {
  std::set<std::string> seen;
  for (int i = 0; i < 1000; ++i) {
    std::string id = NewId("usr");
    EXPECT_EQ(id.rfind("usr_", 0), 0u);
    EXPECT_EQ(id.size(), 4u + 26u);
    EXPECT_TRUE(seen.insert(id).second);
  }
}

TEST(Ids, SortInCreationOrder) {
  std::string prev = NewId("x");
  for (int i = 0; i < 5000; ++i) {
    std::string id = NewId("x");
    EXPECT_LT(prev, id);
    prev = id;
  }
}

TEST(Secrets, HmacSha256MatchesRfc4231) {
  // RFC 4231, test case 2.
  std::string hex;
  for (const unsigned char c : HmacSha256("Jefe", "what do ya want for nothing?")) {
    static constexpr char kDigits[] = "0123456789abcdef";
    hex += kDigits[c >> 4];
    hex += kDigits[c & 15];
  }
  EXPECT_EQ(hex, "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
}

TEST(Secrets, AreLongRandomAndHashable) {
  std::string a = NewSecret("gpx_s"), b = NewSecret("gpx_s");
  EXPECT_NE(a, b);
  EXPECT_EQ(a.size(), 6u + 43u);
  EXPECT_EQ(Sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  std::string out;
  ASSERT_TRUE(Base64UrlDecode(Base64UrlEncode("hello|world"), &out));
  EXPECT_EQ(out, "hello|world");
  EXPECT_FALSE(Base64UrlDecode("!!!", &out));
  EXPECT_TRUE(ConstantTimeEquals("abc", "abc"));
  EXPECT_FALSE(ConstantTimeEquals("abc", "abd"));
  EXPECT_FALSE(ConstantTimeEquals("abc", "ab"));
}

}  // namespace
}  // namespace gpunex
