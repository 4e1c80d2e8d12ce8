#include "platform/accounts/password_policy.h"

#include <gtest/gtest.h>

namespace gpunex::platform::accounts {
namespace {

constexpr std::string_view kEmail = "alice.martin@example.com";
constexpr std::string_view kName = "Alice Martin";

std::string Check(std::string_view password) {
  return CheckPasswordStrength(password, kEmail, kName);
}

TEST(PasswordPolicy, TheShippedListIsLoaded) {
  // About 9,500 of the 10,000 most common (docs/security.md says which were left out).
  EXPECT_GT(CommonPasswordCount(), 9000u);
  EXPECT_LE(CommonPasswordCount(), 10000u);
  EXPECT_TRUE(IsCommonPassword("password"));
  EXPECT_TRUE(IsCommonPassword("QWERTYUIOP"));  // case is ignored
  EXPECT_TRUE(IsCommonPassword("1234567890"));
  EXPECT_FALSE(IsCommonPassword("correct-horse-battery"));
  EXPECT_FALSE(IsCommonPassword("# The most common passwords"));  // the header is no entry
}

TEST(PasswordPolicy, RefusesShortCommonAndRepetitivePasswords) {
  EXPECT_EQ(Check("short1!"), "must be at least 10 characters");
  EXPECT_EQ(Check("qwertyuiop"),
            "is one of the most common passwords; choose one that others are unlikely to use");
  EXPECT_EQ(Check("1q2w3e4r5t"), Check("qwertyuiop"));
  // A common password with digits and symbols around it is still that password.
  EXPECT_EQ(Check("Dragon2024!!"), Check("qwertyuiop"));
  EXPECT_EQ(Check("!!Football99"), Check("qwertyuiop"));
  EXPECT_EQ(Check("aaaaaaaaaa"), "uses too few different characters");
  EXPECT_EQ(Check("abababab12"), "uses too few different characters");
}

TEST(PasswordPolicy, RefusesPasswordsMadeOfTheEmailOrName) {
  const std::string derived = "must not be based on your email address or name";
  EXPECT_EQ(Check("alice.martin@example.com"), derived);  // the email itself
  EXPECT_EQ(Check("ALICE.MARTIN@EXAMPLE.COM"), derived);
  EXPECT_EQ(Check("AliceMartin1!"), derived);
  EXPECT_EQ(Check("martin-alice-77"), derived);
  EXPECT_EQ(Check("example2024"), derived);  // the domain and a few characters
  // A name part shorter than 3 characters does not count as one.
  EXPECT_EQ(CheckPasswordStrength("jo-bluewhale-9", "jo@example.com", "Jo"), "");
}

TEST(PasswordPolicy, AcceptsGoodPasswords) {
  EXPECT_EQ(Check("correct-horse-battery"), "");
  EXPECT_EQ(Check("alice-likes-7-blue-whales"), "");  // the name plus much more
  EXPECT_EQ(Check("Tr0ub4dor&3xyz"), "");
  // The tests' administrator: "admin" is its email's local part, the rest is enough.
  EXPECT_EQ(CheckPasswordStrength("admin-password-123", "admin@gpunex.test", "Rita Reviewer"), "");
}

}  // namespace
}  // namespace gpunex::platform::accounts
