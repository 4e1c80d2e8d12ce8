#include "common/json.h"

#include <gtest/gtest.h>

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
  EXPECT_EQ(errs.at("gpus[2].big"), "must be at most 10");
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
