#include "platform/store/rows.h"

namespace gpunex::platform::store::internal {

StatusOr<std::vector<size_t>> BindColumns(const ColumnNames& names,
                                          const std::vector<std::string>& wanted) {
  std::vector<size_t> index;
  index.reserve(wanted.size());
  for (const std::string& w : wanted) {
    std::optional<size_t> at;
    for (size_t i = 0; i < names.size(); ++i) {
      if (names[i] != w) continue;
      if (at) return Internal("the result has two columns named " + w);
      at = i;
    }
    if (!at) return Internal("the result has no column named " + w);
    index.push_back(*at);
  }
  return index;
}

Status DecodeError(std::string_view column, const std::exception& e) {
  return Internal("decoding column " + std::string(column) + ": " + e.what());
}

}  // namespace gpunex::platform::store::internal
