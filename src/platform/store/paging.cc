#include "platform/store/paging.h"

namespace gpunex::platform::store {
namespace {

Status WrongCursor() {
  return FieldError("cursor", "is not a cursor from a previous page of this list");
}

// The name the key's i-th column is selected under, apart from the caller's columns (which
// may hold the same column under its own name).
std::string KeyName(size_t i) { return "page_key_" + std::to_string(i); }

}  // namespace

StatusOr<Page<Row>> QueryPage(Tx& tx, const PageQuery& query, const PageRequest& page) {
  if (query.key.empty() || page.limit < 1) return Internal("a page query needs a key and a limit");
  std::string keys, marks, selected;
  for (size_t i = 0; i < query.key.size(); ++i) {
    keys += (keys.empty() ? "" : ", ") + query.key[i].expr;
    marks += marks.empty() ? "?" : ", ?";
    selected += ", " + query.key[i].expr + " AS " + KeyName(i);
  }
  std::string sql = "SELECT " + query.columns + selected + " " + query.from;
  std::vector<Value> params = query.params;
  std::string where = query.where;
  if (page.after) {
    const auto& parts = page.after->parts();
    if (parts.size() != query.key.size()) return WrongCursor();
    for (size_t i = 0; i < parts.size(); ++i) {
      const bool is_int = std::holds_alternative<int64_t>(parts[i]);
      if (is_int != (query.key[i].type == KeyColumn::Type::kInt)) return WrongCursor();
      if (is_int) {
        params.emplace_back(std::get<int64_t>(parts[i]));
      } else {
        params.emplace_back(std::get<std::string>(parts[i]));
      }
    }
    const std::string cond =
        "(" + keys + ") " + (query.descending ? "<" : ">") + " (" + marks + ")";
    where = where.empty() ? cond : "(" + where + ") AND " + cond;
  }
  if (!where.empty()) sql += " WHERE " + where;
  std::string order;
  for (const KeyColumn& k : query.key) {
    order += (order.empty() ? "" : ", ") + k.expr + (query.descending ? " DESC" : "");
  }
  sql += " ORDER BY " + order + " LIMIT ?";
  params.emplace_back(int64_t{page.limit} + 1);

  GPUNEX_ASSIGN_OR_RETURN(Rows rows, tx.Query(sql, params));
  Page<Row> out;
  const bool more = rows.size() > static_cast<size_t>(page.limit);
  if (more) {
    rows.erase(rows.begin() + page.limit, rows.end());
    const Row& last = rows.back();
    std::vector<Cursor::Part> parts;
    for (size_t i = 0; i < query.key.size(); ++i) {
      const Cell key = last[KeyName(i)];
      if (query.key[i].type == KeyColumn::Type::kInt) {
        parts.emplace_back(key.Int());
      } else {
        parts.emplace_back(key.Str());
      }
    }
    out.next = Cursor(std::move(parts));
  }
  out.items = std::move(rows);
  return out;
}

}  // namespace gpunex::platform::store
