#include "platform/store/rows.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>

namespace gpunex::platform::store {
namespace {

struct Item {
  std::string id;
  int64_t n = 0;
  std::optional<Usdc> price;
  std::string kind;  // stored upper-case
};

const RowMapper<Item>& ItemRows() {
  static const auto* const m = new RowMapper<Item>({
      {"id", &Item::id},
      {"n", &Item::n},
      {"price_micro", &Item::price},
      {"kind", [](Item& i, const Cell& c) { i.kind = c.Str() == "A" ? "alpha" : "other"; }},
  });
  return *m;
}

std::shared_ptr<const ColumnNames> Names(ColumnNames names) {
  return std::make_shared<const ColumnNames>(std::move(names));
}

TEST(RowMapper, WritesTheSelectListAndTheInsertListFromOneDeclaration) {
  EXPECT_EQ(ItemRows().Select(), "id, n, price_micro, kind");
  EXPECT_EQ(ItemRows().Select("i"), "i.id, i.n, i.price_micro, i.kind");
  EXPECT_EQ(ItemRows().Select("i", {{"kind", "'A'"}}), "i.id, i.n, i.price_micro, 'A' AS kind");
  EXPECT_EQ(ItemRows().Names(), "id, n, price_micro, kind");
  EXPECT_EQ(ItemRows().With({{"extra", &Item::id, "x.y"}}).Select("i"),
            "i.id, i.n, i.price_micro, i.kind, x.y AS extra");
}

TEST(RowMapper, BindsByNameWhateverTheOrderOfTheResult) {
  auto names = Names({"kind", "other", "price_micro", "n", "id"});
  std::vector<Row> rows{
      Row(names, {std::string("A"), nullptr, int64_t{1500}, 2.0, std::string("i1")}),
      Row(names, {std::string("B"), nullptr, nullptr, std::string("3"), std::string("i2")})};
  auto items = ItemRows().Decode(rows);
  ASSERT_TRUE(items.ok()) << items.status().ToString();
  ASSERT_EQ(items->size(), 2u);
  EXPECT_EQ((*items)[0].id, "i1");
  EXPECT_EQ((*items)[0].n, 2);  // PostgreSQL may give an integer as a double
  EXPECT_EQ((*items)[0].price, Usdc::Micros(1500));
  EXPECT_EQ((*items)[0].kind, "alpha");
  EXPECT_EQ((*items)[1].n, 3);  // or as text
  EXPECT_FALSE((*items)[1].price.has_value());
  EXPECT_EQ((*items)[1].kind, "other");
}

TEST(RowMapper, RebindsRowsThatComeFromAnotherResult) {
  std::vector<Row> rows{Row(Names({"id", "n", "price_micro", "kind"}),
                            {std::string("i1"), int64_t{1}, nullptr, std::string("A")}),
                        Row(Names({"kind", "price_micro", "n", "id"}),
                            {std::string("B"), nullptr, int64_t{2}, std::string("i2")})};
  auto items = ItemRows().Decode(rows);
  ASSERT_TRUE(items.ok()) << items.status().ToString();
  EXPECT_EQ((*items)[1].id, "i2");
  EXPECT_EQ((*items)[1].n, 2);
}

TEST(RowMapper, FirstIsNoneForAnEmptyResult) {
  auto none = ItemRows().First({});
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
}

TEST(RowMapper, DecodesTheRightSideOfALeftJoinAsOptional) {
  auto names = Names({"owner", "id", "n", "price_micro", "kind"});
  std::vector<Row> rows{
      Row(names, {std::string("o1"), std::string("i1"), int64_t{1}, nullptr, std::string("A")}),
      Row(names, {std::string("o2"), nullptr, nullptr, nullptr, nullptr})};
  auto items = ItemRows().DecodeOptional(rows, "id");
  ASSERT_TRUE(items.ok()) << items.status().ToString();
  ASSERT_EQ(items->size(), 2u);
  ASSERT_TRUE((*items)[0].has_value());
  EXPECT_EQ((*items)[0]->id, "i1");
  EXPECT_FALSE((*items)[1].has_value());
}

TEST(RowMapper, ConvertsInDeclarationOrder) {
  struct Span {
    Timestamp start;
    Timestamp end;
  };
  RowMapper<Span> spans({
      {"start", &Span::start},
      // The end is never before the start (converted first).
      {"end", [](Span& s, const Cell& c) { s.end = std::max(s.start, c.Time()); }},
  });
  auto got = spans.Decode({Row(Names({"end", "start"}), {int64_t{5}, int64_t{9}})});
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ((*got)[0].end, FromUnixMicros(9));
}

TEST(RowMapper, FailsNamingAMissingATwiceSelectedOrAnUnconvertibleColumn) {
  auto missing = ItemRows().Decode(
      {Row(Names({"id", "n", "kind"}), {std::string("i"), int64_t{1}, std::string("A")})});
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kInternal);
  EXPECT_NE(missing.status().message().find("price_micro"), std::string::npos);

  auto twice = ItemRows().Decode(
      {Row(Names({"id", "n", "price_micro", "kind", "n"}),
           {std::string("i"), int64_t{1}, nullptr, std::string("A"), int64_t{2}})});
  ASSERT_FALSE(twice.ok());
  EXPECT_NE(twice.status().message().find("two columns named n"), std::string::npos);

  auto null = ItemRows().Decode({Row(Names({"id", "n", "price_micro", "kind"}),
                                     {std::string("i"), nullptr, nullptr, std::string("A")})});
  ASSERT_FALSE(null.ok());
  EXPECT_EQ(null.status().code(), StatusCode::kInternal);
  EXPECT_NE(null.status().message().find("column n"), std::string::npos)
      << null.status().ToString();
}

}  // namespace
}  // namespace gpunex::platform::store
