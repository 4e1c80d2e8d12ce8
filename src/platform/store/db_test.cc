#include "platform/store/db.h"

#include <gtest/gtest.h>

#include <memory>
#include <stdexcept>

namespace gpunex::platform::store {
namespace {

TEST(NumberPlaceholders, RenumbersOutsideLiterals) {
  EXPECT_EQ(NumberPlaceholders("SELECT ? , '?', \"a?\" FROM t WHERE x = ? AND y='it''s?'"),
            "SELECT $1 , '?', \"a?\" FROM t WHERE x = $2 AND y='it''s?'");
}

TEST(Row, ReadsCellsByColumnName) {
  Row r(std::make_shared<const ColumnNames>(ColumnNames{"n", "ratio", "name", "gone"}),
        {int64_t{5}, 2.5, std::string("x"), nullptr});
  EXPECT_EQ(r["n"].Int(), 5);
  EXPECT_DOUBLE_EQ(r["ratio"].Real(), 2.5);
  EXPECT_EQ(r["name"].Str(), "x");
  EXPECT_TRUE(r["gone"].IsNull());
  EXPECT_FALSE(r["gone"].OptInt().has_value());
  EXPECT_EQ(r["n"].Str(), "5");
  EXPECT_THROW((void)r["missing"], std::logic_error);
  EXPECT_THROW((void)r["gone"].Int(), std::logic_error);
  EXPECT_THROW((void)r.Only(), std::logic_error);
}

TEST(Row, OnlyReadsTheCellOfAOneColumnRow) {
  Row r(std::make_shared<const ColumnNames>(ColumnNames{"MAX(at)"}), {int64_t{7}});
  EXPECT_EQ(r.Only().Int(), 7);
  EXPECT_EQ(r.Only().column(), "MAX(at)");
}

TEST(OpenDatabase, RejectsUnknownUrlScheme) {
  auto db = OpenDatabase("mysql://x", "/tmp/unused");
  ASSERT_FALSE(db.ok());
  EXPECT_EQ(db.status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace gpunex::platform::store
