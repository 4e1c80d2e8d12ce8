#include "common/paging.h"

#include <charconv>
#include <string>

namespace gpunex {

StatusOr<int> ParsePageLimit(std::string_view s, int default_limit, int max_limit) {
  if (s.empty()) return default_limit;
  int v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || v < 1 || v > max_limit) {
    return FieldError("limit", "must be an integer from 1 to " + std::to_string(max_limit));
  }
  return v;
}

}  // namespace gpunex
