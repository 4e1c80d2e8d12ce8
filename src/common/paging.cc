#include "common/paging.h"

#include "common/ids.h"
#include "common/json.h"

namespace gpunex {
namespace {

Status NotACursor() { return FieldError("cursor", "is not a cursor from a previous page"); }

}  // namespace

std::string Cursor::Encode() const {
  json::array a;
  for (const Part& p : parts_) {
    if (const int64_t* i = std::get_if<int64_t>(&p)) {
      a.emplace_back(*i);
    } else {
      a.emplace_back(std::get<std::string>(p));
    }
  }
  return Base64UrlEncode(ToJsonText(a));
}

StatusOr<Cursor> Cursor::Decode(std::string_view text) {
  std::string raw;
  if (text.empty() || text.size() > kMaxTextLength || !Base64UrlDecode(text, &raw)) {
    return NotACursor();
  }
  auto v = ParseJson(raw);
  if (!v.ok() || !v->is_array() || v->get_array().empty() || v->get_array().size() > kMaxParts) {
    return NotACursor();
  }
  std::vector<Part> parts;
  for (const json::value& p : v->get_array()) {
    if (p.is_int64()) {
      parts.emplace_back(p.get_int64());
    } else if (p.is_string()) {
      parts.emplace_back(std::string(p.get_string()));
    } else {
      return NotACursor();
    }
  }
  return Cursor(std::move(parts));
}

}  // namespace gpunex
