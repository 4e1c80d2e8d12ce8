#include "cli/output.h"

#include <gtest/gtest.h>

namespace gpunex::cli {
namespace {

json::value Parse(std::string_view text) { return *ParseJson(text); }

TEST(UsdcTest, MicroUsdcPrintsWithoutTrailingZeros) {
  EXPECT_EQ(Usdc(2500000), "2.5");
  EXPECT_EQ(Usdc(1), "0.000001");
  EXPECT_EQ(Usdc(0), "0");
  EXPECT_EQ(Usdc(-1500000), "-1.5");
  EXPECT_EQ(Usdc(12000000), "12");
  EXPECT_EQ(Usdc(INT64_MIN), "-9223372036854.775808");
}

TEST(UsdcTest, ParsesDecimalsExactly) {
  EXPECT_EQ(*ParseUsdc("0.5", "x"), 500000);
  EXPECT_EQ(*ParseUsdc("12", "x"), 12000000);
  EXPECT_EQ(*ParseUsdc("1.000001", "x"), 1000001);
  EXPECT_EQ(*ParseUsdc("0.1", "x"), 100000);  // no binary fraction in the way
  for (const char* bad :
       {"", "-1", "1.", ".5", "1.0000001", "1e3", "abc", "1,5", "9999999999999"}) {
    auto r = ParseUsdc(bad, "--max-price");
    EXPECT_FALSE(r.ok()) << bad;
    if (!r.ok()) {
      EXPECT_NE(r.status().message().find("--max-price"), std::string::npos);
    }
  }
}

TEST(RenderTest, ATableAlignsColumnsAndShowsMoneyInUsdc) {
  const json::value items = Parse(
      R"([{"id":"rnt_a","state":"running","cost_per_hour_micro":450000,"end_reason":null},
          {"id":"rnt_bb","state":"ended","cost_per_hour_micro":1200000,"end_reason":"stopped"}])");
  const std::vector<Column> cols = {{"ID", "id"},
                                    {"STATE", "state"},
                                    {"USDC/H", "cost_per_hour_micro", Show::kMoney},
                                    {"END", "end_reason", Show::kText, true}};
  EXPECT_EQ(RenderList(items.as_array(), cols, Format::kTable),
            "ID      STATE    USDC/H\n"
            "rnt_a   running  0.45\n"
            "rnt_bb  ended    1.2\n");
  EXPECT_EQ(RenderList(items.as_array(), cols, Format::kWide),
            "ID      STATE    USDC/H  END\n"
            "rnt_a   running  0.45    -\n"
            "rnt_bb  ended    1.2     stopped\n");
  EXPECT_EQ(RenderList(items.as_array(), cols, Format::kQuiet), "rnt_a\nrnt_bb\n");
  EXPECT_EQ(RenderList(json::array{}, cols, Format::kTable), "ID  STATE  USDC/H\n");
}

TEST(RenderTest, JsonIsTheApiObjectsExactly) {
  const json::value items = Parse(R"([{"id":"a","n":1.5,"nested":{"x":[1,2]},"nothing":null}])");
  const std::string out = RenderList(items.as_array(), {{"ID", "id"}}, Format::kJson);
  EXPECT_EQ(*ParseJson(out), items);
  EXPECT_EQ(RenderList(json::array{}, {}, Format::kJson), "[]\n");
}

TEST(RenderTest, CsvQuotesWhatNeedsIt) {
  const json::value items = Parse(R"([{"a":"x,y","b":"say \"hi\"","c":null}])");
  EXPECT_EQ(RenderList(items.as_array(), {{"A", "a"}, {"B", "b"}, {"C", "c"}}, Format::kCsv),
            "A,B,C\r\n\"x,y\",\"say \"\"hi\"\"\",\r\n");
}

TEST(RenderTest, ADottedPathReachesNestedMembers) {
  const json::value offer = Parse(R"({"provider":{"pseudonym":"blue-fox"},"tags":["a","b"]})");
  EXPECT_EQ(Cell(offer, {"P", "provider.pseudonym"}), "blue-fox");
  EXPECT_EQ(Cell(offer, {"T", "tags", Show::kList}), "a,b");
  EXPECT_EQ(Cell(offer, {"X", "provider.missing"}), "-");
}

TEST(YamlTest, StringsThatYamlWouldReadOtherwiseAreQuoted) {
  const json::value v = Parse(
      R"({"id":"rnt_1","ok":true,"no":"no","num":"123","empty":"","list":[{"a":1,"b":"x: y"},[]],"obj":{},"n":null})");
  EXPECT_EQ(ToYaml(v),
            "id: rnt_1\n"
            "ok: true\n"
            "\"no\": \"no\"\n"  // a key too: YAML 1.1 reads `no` as false
            "num: \"123\"\n"
            "empty: \"\"\n"
            "list:\n"
            "- a: 1\n"
            "  b: \"x: y\"\n"
            "- []\n"
            "obj: {}\n"
            "\"n\": null\n");
}

TEST(FormatTest, NamesAreChecked) {
  EXPECT_EQ(*ParseFormat("wide"), Format::kWide);
  auto bad = ParseFormat("xml");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("xml"), std::string::npos);
}

}  // namespace
}  // namespace gpunex::cli
