// ExpectEachNameReadsBack: the test every table of names (common/enum_names.h) gets, that
// each enumerator has a name of its own, which reads back as itself.
//
// Thread-safety: a function of its arguments.
#pragma once

#include <gtest/gtest.h>

#include <cstddef>
#include <set>
#include <string_view>

#include "common/enum_names.h"

namespace gpunex::testing {

// REQUIRES: the enumerators of E are 0 ... `last`, in order (no values given).
template <typename E, size_t N>
void ExpectEachNameReadsBack(const EnumNames<E, N>& names, E last) {
  std::set<std::string_view> seen;
  for (int i = 0; i <= static_cast<int>(last); ++i) {
    const auto e = static_cast<E>(i);
    EXPECT_NE(names.Name(e), "unknown") << i;
    EXPECT_TRUE(seen.insert(names.Name(e)).second) << names.Name(e);
    EXPECT_EQ(names.Parse(names.Name(e)), e) << names.Name(e);
    EXPECT_EQ(names.ParseStored(names.Name(e)), e) << names.Name(e);
  }
  EXPECT_EQ(seen.size(), N) << "the table has a row for an enumerator past `last`";
  EXPECT_EQ(names.Parse(""), std::nullopt);
}

}  // namespace gpunex::testing
