// List paging (API.md: ?limit=&cursor=, {"items": [...], "next_cursor": "..."}).
#pragma once

#include <string_view>

#include "common/status.h"

namespace gpunex {

// Parses the `limit` query parameter: `default_limit` when empty, else an integer in
// [1, max_limit]; a field error naming "limit" otherwise.
StatusOr<int> ParsePageLimit(std::string_view s, int default_limit, int max_limit);

}  // namespace gpunex
