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

int64_t Row::Int(size_t i) const {
  const Value& v = cells_.at(i);
  if (auto p = std::get_if<int64_t>(&v)) return *p;
  if (auto d = std::get_if<double>(&v)) return static_cast<int64_t>(std::llround(*d));
  if (auto s = std::get_if<std::string>(&v)) return std::stoll(*s);
  throw std::logic_error("column " + std::to_string(i) + " is null, not an integer");
}

std::optional<int64_t> Row::OptInt(size_t i) const {
  if (IsNull(i)) return std::nullopt;
  return Int(i);
}

double Row::Real(size_t i) const {
  const Value& v = cells_.at(i);
  if (auto d = std::get_if<double>(&v)) return *d;
  if (auto p = std::get_if<int64_t>(&v)) return static_cast<double>(*p);
  if (auto s = std::get_if<std::string>(&v)) return std::stod(*s);
  throw std::logic_error("column " + std::to_string(i) + " is null, not a number");
}

std::optional<Timestamp> Row::OptTime(size_t i) const {
  if (IsNull(i)) return std::nullopt;
  return Time(i);
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

std::string Row::Str(size_t i) const {
  const Value& v = cells_.at(i);
  if (auto s = std::get_if<std::string>(&v)) return *s;
  if (auto p = std::get_if<int64_t>(&v)) return std::to_string(*p);
  if (auto d = std::get_if<double>(&v)) return std::to_string(*d);
  throw std::logic_error("column " + std::to_string(i) + " is null, not text");
}

std::optional<std::string> Row::OptStr(size_t i) const {
  if (IsNull(i)) return std::nullopt;
  return Str(i);
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
