#include "platform/store/db.h"

#include <gtest/gtest.h>

namespace gpunex::platform::store {
namespace {

TEST(NumberPlaceholders, RenumbersOutsideLiterals) {
  EXPECT_EQ(NumberPlaceholders("SELECT ? , '?', \"a?\" FROM t WHERE x = ? AND y='it''s?'"),
            "SELECT $1 , '?', \"a?\" FROM t WHERE x = $2 AND y='it''s?'");
}

TEST(Row, ConvertsCells) {
  Row r({int64_t{5}, 2.5, std::string("x"), nullptr});
  EXPECT_EQ(r.Int(0), 5);
  EXPECT_DOUBLE_EQ(r.Real(1), 2.5);
  EXPECT_EQ(r.Str(2), "x");
  EXPECT_TRUE(r.IsNull(3));
  EXPECT_FALSE(r.OptInt(3).has_value());
  EXPECT_EQ(r.Str(0), "5");
}

TEST(OpenDatabase, RejectsUnknownUrlScheme) {
  auto db = OpenDatabase("mysql://x", "/tmp/unused");
  ASSERT_FALSE(db.ok());
  EXPECT_EQ(db.status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace gpunex::platform::store
