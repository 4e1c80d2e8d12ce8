// Keyset paging over SQL: the one implementation every list uses (common/paging.h says
// what a page and a cursor are).
//
// A PageQuery names what to select and the list's sort key: columns whose values, in
// order, identify a row and sort the list (the last one unique, usually `id`). QueryPage
// appends the key columns to the select list, the condition "key after the cursor"
// (a row-value comparison, (a, b) > (?, ?), or < for a descending list), the ORDER BY and
// LIMIT limit + 1, and returns at most `limit` rows with the cursor of the last one when
// there are more.
//
// Thread-safety: functions over the caller's transaction.
#pragma once

#include <string>
#include <vector>

#include "common/paging.h"
#include "platform/store/db.h"

namespace gpunex::platform::store {

// One column of a sort key. REQUIRES: never NULL in the listed rows.
struct KeyColumn {
  enum class Type { kInt, kText };
  std::string expr;  // a column or expression of the select ("created_at", "m.id")
  Type type = Type::kText;
};

struct PageQuery {
  std::string columns;        // the select list: "id, name, status"
  std::string from;           // "FROM machines m JOIN ..."
  std::string where;          // conditions without WHERE ("provider_id = ?"), or ""
  std::vector<Value> params;  // for `where`
  std::vector<KeyColumn> key;
  bool descending = false;
};

// The rows of one page. Each row holds the selected columns first, then the key columns
// under the names page_key_0, page_key_1, ... (which the caller ignores). Fails with a field error
// on "cursor" when the request's cursor does not have the shape of `query.key`; with the
// transaction's status otherwise.
StatusOr<Page<Row>> QueryPage(Tx& tx, const PageQuery& query, const PageRequest& page);

}  // namespace gpunex::platform::store
