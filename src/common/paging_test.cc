#include "common/paging.h"

#include <gtest/gtest.h>

namespace gpunex {
namespace {

TEST(Cursor, RoundTripsItsKey) {
  Cursor c({int64_t{1'795'968'000'000'001}, std::string("app_01JD3XYZ")});
  auto back = Cursor::Decode(c.Encode());
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, c);
  EXPECT_EQ(Cursor::Decode(Cursor({std::string("")}).Encode())->parts().size(), 1u);
}

TEST(Cursor, RefusesTextItDidNotMake) {
  for (std::string_view bad : {"", "!!!", "bm90IGpzb24",     /* "not json" */
                               "W10", /* [] */ "eyJhIjoxfQ", /* {"a":1} */
                               "WzEuNV0", /* [1.5] */ "W251bGxd" /* [null] */}) {
    auto c = Cursor::Decode(bad);
    ASSERT_FALSE(c.ok()) << bad;
    EXPECT_EQ(c.status().code(), StatusCode::kValidationFailed);
    EXPECT_EQ(c.status().fields().count("cursor"), 1u) << bad;
  }
  EXPECT_FALSE(Cursor::Decode(std::string(Cursor::kMaxTextLength + 1, 'A')).ok());
  EXPECT_FALSE(
      Cursor::Decode(Cursor({int64_t{1}, int64_t{2}, int64_t{3}, int64_t{4}, int64_t{5}}).Encode())
          .ok());
}

}  // namespace
}  // namespace gpunex
