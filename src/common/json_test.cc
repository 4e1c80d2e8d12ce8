#include "common/json.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

namespace gpunex {
namespace {

TEST(ParseJson, RejectsMalformedAndDeepInput) {
  EXPECT_TRUE(ParseJson("{\"a\": 1}").ok());
  auto bad = ParseJson("{\"a\": ");
  ASSERT_FALSE(bad.ok());
  EXPECT_TRUE(bad.status().fields().count("body"));
  std::string deep(100, '[');
  deep += std::string(100, ']');
  EXPECT_FALSE(ParseJson(deep).ok());
}

TEST(JsonReader, CollectsEveryFieldErrorWithItsPath) {
  auto v = ParseJson(R"({"name": 5, "n": 0, "x": 1.5, "big": 99999999999999999999, "extra": true,
                         "s": "a\u0001b", "obj": []})")
               .value();
  FieldErrors errs;
  JsonReader r(v.get_object(), "gpus[2]", &errs);
  r.RejectUnknown({"name", "n", "x", "big", "s", "obj", "missing"});
  EXPECT_FALSE(r.String("name", true, 10));
  EXPECT_FALSE(r.Int("n", true, 1, 10));
  EXPECT_FALSE(r.Int("x", true, 1, 10));
  EXPECT_FALSE(r.Int("big", true, 1, 10));
  EXPECT_FALSE(r.String("s", true, 10));
  EXPECT_FALSE(r.Object("obj", true));
  EXPECT_FALSE(r.String("missing", true, 10));
  EXPECT_EQ(errs.at("gpus[2].name"), "must be a string");
  EXPECT_EQ(errs.at("gpus[2].n"), "must be at least 1");
  EXPECT_EQ(errs.at("gpus[2].x"), "must be an integer");
  EXPECT_EQ(errs.at("gpus[2].big"), "is too large: must be at most 10");
  EXPECT_EQ(errs.at("gpus[2].s"), "must be text without control characters");
  EXPECT_EQ(errs.at("gpus[2].obj"), "must be an object");
  EXPECT_EQ(errs.at("gpus[2].missing"), "is required");
  EXPECT_EQ(errs.at("gpus[2].extra"), "is not a known field");
}

TEST(JsonReader, NumbersAndStrings) {
  auto v = ParseJson(R"({"g": 2.5, "z": 0, "long": "abcdef", "ok": "héllo"})").value();
  FieldErrors errs;
  JsonReader r(v.get_object(), "", &errs);
  EXPECT_EQ(r.Number("g", true, 0, 100), 2.5);
  EXPECT_FALSE(r.Number("z", true, 0, 100));
  EXPECT_EQ(errs.at("z"), "must be greater than 0");
  EXPECT_FALSE(r.String("long", true, 3));
  EXPECT_EQ(r.String("ok", true, 10), "héllo");
}

// Numbers beyond the 64-bit integers, however they are written, are refused as too large
// under their field, with no conversion of an out-of-range double (the ASan+UBSan build
// runs this: static_cast<int64_t>(2^63) is undefined and gave INT64_MIN).
TEST(JsonReader, NumbersBeyondTheInt64RangeAreTooLarge) {
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  for (const char* text :
       {"9.223372036854775807e18", "9223372036854775807.0", "9223372036854775808", "9.3e18", "1e19",
        "18446744073709551615", "18446744073709551616", "1e300", "99999999999999999999999"}) {
    SCOPED_TRACE(text);
    auto v = ParseJson(std::string("{\"n\": ") + text + "}").value();
    FieldErrors errs;
    JsonReader r(v.get_object(), "", &errs);
    EXPECT_EQ(r.Int("n", true, kMin, kMax), std::nullopt);
    EXPECT_EQ(errs["n"], "is too large: must be at most 9223372036854775807");
    FieldErrors small;
    JsonReader bounded(v.get_object(), "body", &small);
    EXPECT_EQ(bounded.Int("n", true, 0, 100), std::nullopt);
    EXPECT_EQ(small["body.n"], "is too large: must be at most 100");
  }
  for (const char* text : {"-9.3e18", "-1e19", "-9223372036854775809", "-18446744073709551616",
                           "-1e300", "-9.223372036854775808e18"}) {
    SCOPED_TRACE(text);
    auto v = ParseJson(std::string("{\"n\": ") + text + "}").value();
    FieldErrors errs;
    JsonReader r(v.get_object(), "", &errs);
    EXPECT_EQ(r.Int("n", true, kMin, kMax), std::nullopt);
    EXPECT_EQ(errs["n"],
              "is too large a negative number: must be at least " + std::to_string(kMin));
  }
  // The extremes of the range written as integers are read exactly.
  auto ints = ParseJson(R"({"max": 9223372036854775807, "min": -9223372036854775808, "m": 2e6,
                            "z": -0.0})")
                  .value();
  FieldErrors none;
  JsonReader ir(ints.get_object(), "", &none);
  EXPECT_EQ(ir.Int("max", true, kMin, kMax), kMax);
  EXPECT_EQ(ir.Int("min", true, kMin, kMax), kMin);
  EXPECT_EQ(ir.Int("m", true, kMin, kMax), 2'000'000);
  EXPECT_EQ(ir.Int("z", true, kMin, kMax), 0);
  EXPECT_TRUE(none.empty());
  // The doubles next to +-2^63 are inside the range and read exactly; +-2^63 are not.
  // (Built here rather than parsed: Boost.JSON's parsing of long decimals is not
  // correctly rounded.)
  const double below = std::nextafter(9223372036854775808.0, 0.0);  // 2^63 - 1024
  json::object doubles{{"below", below},
                       {"above", -below},
                       {"top", 9223372036854775808.0},
                       {"bottom", -9223372036854775808.0}};
  FieldErrors errs;
  JsonReader r(doubles, "", &errs);
  EXPECT_EQ(r.Int("below", true, kMin, kMax), int64_t{9223372036854774784});
  EXPECT_EQ(r.Int("above", true, kMin, kMax), int64_t{-9223372036854774784});
  EXPECT_EQ(r.Int("top", true, kMin, kMax), std::nullopt);
  EXPECT_EQ(r.Int("bottom", true, kMin, kMax), std::nullopt);
  EXPECT_EQ(errs["top"], "is too large: must be at most 9223372036854775807");
  EXPECT_EQ(errs["bottom"],
            "is too large a negative number: must be at least " + std::to_string(kMin));
  // Within the range, the field's own bounds still decide.
  auto v = ParseJson(R"({"b": 1.5e3, "c": 2.5})").value();
  JsonReader br(v.get_object(), "", &errs);
  EXPECT_EQ(br.Int("b", true, 0, 1000), std::nullopt);
  EXPECT_EQ(errs["b"], "must be at most 1000");
  EXPECT_EQ(br.Int("c", true, 0, 1000), std::nullopt);
  EXPECT_EQ(errs["c"], "must be an integer");
}

// Stored documents are read leniently, but never through an undefined conversion.
TEST(StoredInt, ReadsANumberBeyondTheRangeAsTheEmptyValue) {
  auto v = ParseJson(R"({"big": 9.223372036854775807e18, "neg": -1e19, "ok": 12.9})").value();
  EXPECT_EQ(StoredInt(v.get_object(), "big"), 0);
  EXPECT_EQ(StoredInt(v.get_object(), "neg"), 0);
  EXPECT_EQ(StoredInt(v.get_object(), "ok"), 12);
}

TEST(IsCleanText, ValidatesUtf8) {
  EXPECT_TRUE(IsCleanText("plain", false));
  EXPECT_TRUE(IsCleanText("line\nbreak", true));
  EXPECT_FALSE(IsCleanText("line\nbreak", false));
  EXPECT_FALSE(IsCleanText("\xC3", false));          // truncated
  EXPECT_FALSE(IsCleanText("\xC0\xAF", false));      // overlong
  EXPECT_FALSE(IsCleanText("\xED\xA0\x80", false));  // surrogate
  EXPECT_TRUE(IsCleanText("\xF0\x9F\x98\x80", false));
}

}  // namespace
}  // namespace gpunex
