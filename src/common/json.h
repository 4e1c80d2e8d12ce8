// JSON helpers over Boost.JSON: strict parsing of request bodies and a reader that
// validates an object field by field, collecting every error under its full path
// ("gpus[0].location.country") instead of stopping at the first.
#pragma once

#include <boost/json.hpp>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace gpunex {

namespace json = boost::json;

// Parses a request body. Fails with kInvalidArgument naming "body" when the text is not
// JSON, or when it is nested deeper than 32 levels.
StatusOr<json::value> ParseJson(std::string_view text);
// The parsed value of JSON the program stored itself, or `fallback` when it does not parse.
json::value ParseJsonOr(std::string_view text, json::value fallback);

// Lenient reads of JSON documents the program stored itself (TEXT columns): what was
// validated when it was written is not validated again when it is read back; a member
// that is missing or of another type reads as the empty value.
const json::object& StoredObject(const json::value& v);  // an empty object when not one
std::string StoredText(const json::object& o, std::string_view key);
int64_t StoredInt(const json::object& o, std::string_view key);  // doubles truncated
double StoredNumber(const json::object& o, std::string_view key);
std::vector<std::string> StoredTextList(const json::value& v);  // the strings of an array

// Serialises compactly; doubles in their shortest exact form (10, 2.5), not 1E1.
std::string ToJsonText(const json::value& v);

// A view of one JSON object being validated. Every accessor records a field error in
// the shared FieldErrors when the field is missing (and required), has the wrong type
// or is out of bounds, and then returns nullopt/nullptr.
class JsonReader {
 public:
  // `path` is this object's own path ("" for the root, "gpus[0]" for an element).
  JsonReader(const json::object& obj, std::string path, FieldErrors* errors)
      : obj_(obj), path_(std::move(path)), errors_(errors) {}

  // The full path of a member: "gpus[0].quantity".
  std::string PathOf(std::string_view key) const;
  void Fail(std::string_view key, std::string message) const;

  bool Has(std::string_view key) const;
  // Present and not null.
  bool HasValue(std::string_view key) const;

  // A string of at most `max_len` bytes of valid UTF-8 without control characters
  // (newline and tab allowed when `multiline`). Empty strings count as missing when
  // required.
  std::optional<std::string> String(std::string_view key, bool required, size_t max_len,
                                    bool multiline = false) const;
  std::optional<int64_t> Int(std::string_view key, bool required, int64_t min, int64_t max) const;
  std::optional<double> Number(std::string_view key, bool required, double min_exclusive,
                               double max_inclusive) const;
  std::optional<bool> Bool(std::string_view key, bool required) const;
  const json::object* Object(std::string_view key, bool required) const;
  const json::array* Array(std::string_view key, bool required, size_t min_items,
                           size_t max_items) const;
  // Records an error for each member not in `known`.
  void RejectUnknown(std::initializer_list<std::string_view> known) const;

  const std::string& path() const { return path_; }
  FieldErrors* errors() const { return errors_; }

 private:
  const json::object& obj_;
  std::string path_;
  FieldErrors* errors_;
};

// Whether `s` is valid UTF-8 with no control characters (except \n, \r, \t when
// `multiline`).
bool IsCleanText(std::string_view s, bool multiline);

}  // namespace gpunex
