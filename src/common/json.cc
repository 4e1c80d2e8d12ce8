#include "common/json.h"

#include <charconv>
#include <cmath>

namespace gpunex {

StatusOr<json::value> ParseJson(std::string_view text) {
  json::parse_options opts;
  opts.max_depth = 32;
  boost::system::error_code ec;
  json::value v = json::parse(text, ec, {}, opts);
  if (ec) {
    return Status(StatusCode::kInvalidArgument, "the request body is not valid JSON",
                  FieldErrors{{"body", "not valid JSON: " + ec.message()}});
  }
  return v;
}

json::value ParseJsonOr(std::string_view text, json::value fallback) {
  auto v = ParseJson(text);
  return v.ok() ? std::move(*v) : fallback;
}

namespace {

// 2^63, exactly representable: the doubles in [-2^63, 2^63) are the ones whose integer
// part an int64_t holds. (static_cast<double>(INT64_MAX) rounds up to 2^63 itself, so a
// bound written with it lets 2^63 through to an undefined conversion.)
constexpr double kTwoTo63 = 9223372036854775808.0;

// The refusal of a number beyond the 64-bit integers: positive above `max`, negative
// below `min`.
std::string TooLarge(bool positive, int64_t min, int64_t max) {
  return positive ? "is too large: must be at most " + std::to_string(max)
                  : "is too large a negative number: must be at least " + std::to_string(min);
}

void Write(const json::value& v, std::string* out) {
  switch (v.kind()) {
    case json::kind::object: {
      *out += '{';
      bool first = true;
      for (const auto& kv : v.get_object()) {
        if (!first) *out += ',';
        first = false;
        *out += json::serialize(json::string_view(kv.key()));
        *out += ':';
        Write(kv.value(), out);
      }
      *out += '}';
      return;
    }
    case json::kind::array: {
      *out += '[';
      bool first = true;
      for (const auto& e : v.get_array()) {
        if (!first) *out += ',';
        first = false;
        Write(e, out);
      }
      *out += ']';
      return;
    }
    case json::kind::double_: {
      double d = v.get_double();
      if (!std::isfinite(d)) {
        *out += "null";
        return;
      }
      char buf[32];
      auto [end, ec] = std::to_chars(buf, buf + sizeof buf, d);
      out->append(buf, ec == std::errc() ? end : buf);
      return;
    }
    default:
      *out += json::serialize(v);
  }
}

}  // namespace

std::string ToJsonText(const json::value& v) {
  std::string out;
  Write(v, &out);
  return out;
}

std::string JsonReader::PathOf(std::string_view key) const {
  if (path_.empty()) return std::string(key);
  return path_ + "." + std::string(key);
}

void JsonReader::Fail(std::string_view key, std::string message) const {
  errors_->emplace(PathOf(key), std::move(message));
}

bool JsonReader::Has(std::string_view key) const { return obj_.contains(key); }

bool JsonReader::HasValue(std::string_view key) const {
  auto it = obj_.find(key);
  return it != obj_.end() && !it->value().is_null();
}

bool IsCleanText(std::string_view s, bool multiline) {
  size_t i = 0;
  while (i < s.size()) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      if (c < 0x20 || c == 0x7f) {
        if (!(multiline && (c == '\n' || c == '\r' || c == '\t'))) return false;
      }
      ++i;
      continue;
    }
    int extra;
    uint32_t cp;
    if ((c & 0xE0) == 0xC0) {
      extra = 1;
      cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      extra = 2;
      cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      extra = 3;
      cp = c & 0x07;
    } else {
      return false;
    }
    for (int k = 1; k <= extra; ++k) {
      if (i + k >= s.size()) return false;
      unsigned char cc = static_cast<unsigned char>(s[i + k]);
      if ((cc & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (cc & 0x3F);
    }
    if ((extra == 1 && cp < 0x80) || (extra == 2 && cp < 0x800) || (extra == 3 && cp < 0x10000) ||
        cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
      return false;
    }
    i += extra + 1;
  }
  return true;
}

std::optional<std::string> JsonReader::String(std::string_view key, bool required, size_t max_len,
                                              bool multiline) const {
  auto it = obj_.find(key);
  if (it == obj_.end() || it->value().is_null()) {
    if (required) Fail(key, "is required");
    return std::nullopt;
  }
  if (!it->value().is_string()) {
    Fail(key, "must be a string");
    return std::nullopt;
  }
  std::string s(it->value().get_string());
  if (s.size() > max_len) {
    Fail(key, "must be at most " + std::to_string(max_len) + " characters");
    return std::nullopt;
  }
  if (!IsCleanText(s, multiline)) {
    Fail(key, "must be text without control characters");
    return std::nullopt;
  }
  if (required && s.find_first_not_of(" \t\r\n") == std::string::npos) {
    Fail(key, "is required");
    return std::nullopt;
  }
  return s;
}

std::optional<int64_t> JsonReader::Int(std::string_view key, bool required, int64_t min,
                                       int64_t max) const {
  auto it = obj_.find(key);
  if (it == obj_.end() || it->value().is_null()) {
    if (required) Fail(key, "is required");
    return std::nullopt;
  }
  const json::value& v = it->value();
  int64_t n;
  if (v.is_int64()) {
    n = v.get_int64();
  } else if (v.is_uint64()) {  // above INT64_MAX: Boost.JSON keeps those as uint64
    Fail(key, TooLarge(true, min, max));
    return std::nullopt;
  } else if (v.is_double()) {
    // A number written with a fraction or an exponent ("2e6", "9.223372036854775807e18"),
    // or one beyond the 64-bit integers (18446744073709551616, -9223372036854775809).
    // Only a whole double in [-2^63, 2^63) converts to an int64_t (converting any other is
    // undefined behaviour); -2^63 itself is refused too, as the double of a number just
    // below the range (-9223372036854775809) is -2^63. INT64_MIN written as an integer is
    // an int64 above.
    const double d = v.get_double();
    if (std::isnan(d)) {
      Fail(key, "must be an integer");
      return std::nullopt;
    }
    if (!(d > -kTwoTo63 && d < kTwoTo63)) {
      Fail(key, TooLarge(d > 0, min, max));
      return std::nullopt;
    }
    if (std::trunc(d) != d) {
      Fail(key, "must be an integer");
      return std::nullopt;
    }
    n = static_cast<int64_t>(d);
  } else {
    Fail(key, "must be an integer");
    return std::nullopt;
  }
  if (n < min) {
    Fail(key, "must be at least " + std::to_string(min));
    return std::nullopt;
  }
  if (n > max) {
    Fail(key, "must be at most " + std::to_string(max));
    return std::nullopt;
  }
  return n;
}

std::optional<double> JsonReader::Number(std::string_view key, bool required, double min_exclusive,
                                         double max_inclusive) const {
  auto it = obj_.find(key);
  if (it == obj_.end() || it->value().is_null()) {
    if (required) Fail(key, "is required");
    return std::nullopt;
  }
  const json::value& v = it->value();
  if (!v.is_number()) {
    Fail(key, "must be a number");
    return std::nullopt;
  }
  double d = v.to_number<double>();
  auto fmt = [](double x) {
    std::string s = std::to_string(x);
    s.erase(s.find_last_not_of('0') + 1);
    if (!s.empty() && s.back() == '.') s.pop_back();
    return s;
  };
  if (!std::isfinite(d) || d <= min_exclusive) {
    Fail(key, "must be greater than " + fmt(min_exclusive));
    return std::nullopt;
  }
  if (d > max_inclusive) {
    Fail(key, "must be at most " + fmt(max_inclusive));
    return std::nullopt;
  }
  return d;
}

std::optional<bool> JsonReader::Bool(std::string_view key, bool required) const {
  auto it = obj_.find(key);
  if (it == obj_.end() || it->value().is_null()) {
    if (required) Fail(key, "is required");
    return std::nullopt;
  }
  if (!it->value().is_bool()) {
    Fail(key, "must be true or false");
    return std::nullopt;
  }
  return it->value().get_bool();
}

const json::object* JsonReader::Object(std::string_view key, bool required) const {
  auto it = obj_.find(key);
  if (it == obj_.end() || it->value().is_null()) {
    if (required) Fail(key, "is required");
    return nullptr;
  }
  if (!it->value().is_object()) {
    Fail(key, "must be an object");
    return nullptr;
  }
  return &it->value().get_object();
}

const json::array* JsonReader::Array(std::string_view key, bool required, size_t min_items,
                                     size_t max_items) const {
  auto it = obj_.find(key);
  if (it == obj_.end() || it->value().is_null()) {
    if (required) Fail(key, "is required");
    return nullptr;
  }
  if (!it->value().is_array()) {
    Fail(key, "must be an array");
    return nullptr;
  }
  const json::array& a = it->value().get_array();
  if (a.size() < min_items) {
    Fail(key,
         "must have at least " + std::to_string(min_items) + " item" + (min_items == 1 ? "" : "s"));
    return nullptr;
  }
  if (a.size() > max_items) {
    Fail(key, "must have at most " + std::to_string(max_items) + " items");
    return nullptr;
  }
  return &a;
}

void JsonReader::RejectUnknown(std::initializer_list<std::string_view> known) const {
  for (const auto& kv : obj_) {
    bool ok = false;
    for (auto k : known) ok = ok || kv.key() == k;
    if (!ok) Fail(kv.key(), "is not a known field");
  }
}

const json::object& StoredObject(const json::value& v) {
  static const json::object kEmpty;
  return v.is_object() ? v.get_object() : kEmpty;
}

std::string StoredText(const json::object& o, std::string_view key) {
  auto it = o.find(key);
  return it != o.end() && it->value().is_string() ? std::string(it->value().get_string()) : "";
}

int64_t StoredInt(const json::object& o, std::string_view key) {
  auto it = o.find(key);
  if (it == o.end()) return 0;
  if (it->value().is_int64()) return it->value().get_int64();
  if (it->value().is_double()) {
    // Truncated; one outside the int64 range (or NaN) reads as the empty value, as a
    // cast of it would be undefined.
    const double d = it->value().get_double();
    return d >= -kTwoTo63 && d < kTwoTo63 ? static_cast<int64_t>(d) : 0;
  }
  return 0;
}

double StoredNumber(const json::object& o, std::string_view key) {
  auto it = o.find(key);
  if (it == o.end()) return 0;
  if (it->value().is_double()) return it->value().get_double();
  if (it->value().is_int64()) return static_cast<double>(it->value().get_int64());
  return 0;
}

std::vector<std::string> StoredTextList(const json::value& v) {
  std::vector<std::string> out;
  if (!v.is_array()) return out;
  for (const auto& x : v.get_array()) {
    if (x.is_string()) out.emplace_back(x.get_string());
  }
  return out;
}

}  // namespace gpunex
