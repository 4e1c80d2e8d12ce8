// The dashboard's country picker (web/src/countries.ts) offers exactly the codes the API
// accepts (common/countries.h): a country it lists is never refused, and none is missing.
#include "common/countries.h"

#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>

namespace gpunex::platform::web {
namespace {

TEST(DashboardCountries, AreTheCodesTheApiAccepts) {
  std::ifstream in(std::string(GPUNEX_SOURCE_DIR) + "/web/src/countries.ts");
  ASSERT_TRUE(in) << "web/src/countries.ts";
  std::stringstream text;
  text << in.rdbuf();
  const std::string ts = text.str();
  const size_t begin = ts.find("const kCodes =");
  const size_t end = ts.find(';', begin);
  ASSERT_NE(begin, std::string::npos);
  const std::string list = ts.substr(begin, end - begin);
  std::set<std::string> listed;
  const std::regex code(R"(\b[A-Z]{2}\b)");
  for (auto it = std::sregex_iterator(list.begin(), list.end(), code); it != std::sregex_iterator();
       ++it) {
    EXPECT_TRUE(listed.insert(it->str()).second) << it->str() << " is listed twice";
  }
  std::set<std::string> accepted;
  for (char a = 'A'; a <= 'Z'; ++a) {
    for (char b = 'A'; b <= 'Z'; ++b) {
      if (IsCountryCode(std::string{a, b})) accepted.insert(std::string{a, b});
    }
  }
  EXPECT_EQ(listed, accepted);
  EXPECT_EQ(accepted.size(), 249u);
}

}  // namespace
}  // namespace gpunex::platform::web
