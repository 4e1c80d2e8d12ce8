#include "common/enum_names.h"

#include <gtest/gtest.h>

namespace gpunex {
namespace {

enum class Colour { kRed, kGreen, kBlue };
constexpr EnumNames<Colour, 3> kColourNames{{{
    {Colour::kRed, "red"},
    {Colour::kGreen, "green"},
    {Colour::kBlue, "blue"},
}}};

TEST(EnumNames, NamesParseAndListTheTable) {
  static_assert(kColourNames.Name(Colour::kGreen) == "green");
  static_assert(kColourNames.Parse("blue") == Colour::kBlue);
  EXPECT_EQ(kColourNames.Parse("Blue"), std::nullopt);
  EXPECT_EQ(kColourNames.ParseStored("red"), Colour::kRed);
  EXPECT_THROW(kColourNames.ParseStored("purple"), std::invalid_argument);
  EXPECT_EQ(kColourNames.Listed(), "\"red\", \"green\" or \"blue\"");
  constexpr EnumNames<Colour, 2> two{{{{Colour::kRed, "red"}, {Colour::kBlue, "blue"}}}};
  EXPECT_EQ(two.Listed(), "\"red\" or \"blue\"");
  constexpr EnumNames<Colour, 1> one{{{{Colour::kRed, "red"}}}};
  EXPECT_EQ(one.Listed(), "\"red\"");
}

}  // namespace
}  // namespace gpunex
