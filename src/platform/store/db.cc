#include "platform/store/db.h"

#include <cmath>
#include <exception>
#include <stdexcept>

#include "common/log.h"

namespace gpunex::platform::store {

std::string_view BackendName(BackendKind kind) {
  switch (kind) {
    case BackendKind::kSqlite:
      return "sqlite";
    case BackendKind::kPostgres:
      return "postgresql";
  }
  return "unknown";
}

namespace {

std::string Prefix(std::string_view column) { return "column " + std::string(column); }

}  // namespace

int64_t Cell::Int() const {
  if (auto p = std::get_if<int64_t>(value_)) return *p;
  if (auto d = std::get_if<double>(value_)) return static_cast<int64_t>(std::llround(*d));
  if (auto s = std::get_if<std::string>(value_)) return std::stoll(*s);
  throw std::logic_error(Prefix(column_) + " is null, not an integer");
}

std::optional<int64_t> Cell::OptInt() const {
  if (IsNull()) return std::nullopt;
  return Int();
}

double Cell::Real() const {
  if (auto d = std::get_if<double>(value_)) return *d;
  if (auto p = std::get_if<int64_t>(value_)) return static_cast<double>(*p);
  if (auto s = std::get_if<std::string>(value_)) return std::stod(*s);
  throw std::logic_error(Prefix(column_) + " is null, not a number");
}

std::string Cell::Str() const {
  if (auto s = std::get_if<std::string>(value_)) return *s;
  if (auto p = std::get_if<int64_t>(value_)) return std::to_string(*p);
  if (auto d = std::get_if<double>(value_)) return std::to_string(*d);
  throw std::logic_error(Prefix(column_) + " is null, not text");
}

std::optional<std::string> Cell::OptStr() const {
  if (IsNull()) return std::nullopt;
  return Str();
}

std::optional<Timestamp> Cell::OptTime() const {
  if (IsNull()) return std::nullopt;
  return Time();
}

const ColumnNames& Row::names() const {
  static const auto* const kNone = new ColumnNames();
  return names_ ? *names_ : *kNone;
}

Cell Row::At(size_t i) const {
  const ColumnNames& n = names();
  return Cell(i < n.size() ? std::string_view(n[i]) : std::string_view("?"), cells_.at(i));
}

Cell Row::Only() const {
  if (cells_.size() != 1) {
    throw std::logic_error("a row of " + std::to_string(cells_.size()) + " columns, not one");
  }
  return At(0);
}

Cell Row::operator[](std::string_view name) const {
  const ColumnNames& n = names();
  for (size_t i = 0; i < n.size() && i < cells_.size(); ++i) {
    if (n[i] == name) return Cell(n[i], cells_[i]);
  }
  throw std::logic_error("the result has no column " + std::string(name));
}

void RunAfterCommit(std::vector<std::function<void()>> callbacks) {
  for (auto& fn : callbacks) {
    try {
      fn();
    } catch (const std::exception& e) {
      LogError("store.after_commit_threw", {{"error", e.what()}});
    } catch (...) {
      LogError("store.after_commit_threw", {{"error", "unknown exception"}});
    }
  }
}

std::string NumberPlaceholders(std::string_view sql) {
  std::string out;
  out.reserve(sql.size() + 16);
  int n = 0;
  char quote = 0;
  for (char c : sql) {
    if (quote) {
      out += c;
      if (c == quote) quote = 0;  // a doubled quote re-enters the literal on the next char
      continue;
    }
    if (c == '\'' || c == '"') {
      quote = c;
      out += c;
    } else if (c == '?') {
      out += '$';
      out += std::to_string(++n);
    } else {
      out += c;
    }
  }
  return out;
}

StatusOr<std::unique_ptr<Database>> OpenDatabase(const std::string& database_url,
                                                 const std::string& data_dir) {
  if (database_url.starts_with("postgresql://") || database_url.starts_with("postgres://")) {
    return OpenPostgresDatabase(database_url);
  }
  if (!database_url.empty() && !database_url.starts_with("sqlite:")) {
    return InvalidArgument("database_url must be a postgresql:// URL or empty (SQLite)");
  }
  return OpenSqliteDatabase(data_dir);
}

}  // namespace gpunex::platform::store
