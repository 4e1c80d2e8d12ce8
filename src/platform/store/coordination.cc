#include "platform/store/coordination.h"

namespace gpunex::platform::store {

Status LockUntilCommit(Tx& tx, int64_t key) {
  if (tx.Backend() != BackendKind::kPostgres) return Status::Ok();
  return tx.Query("SELECT pg_advisory_xact_lock(?)", {key}).status();
}

std::string MarkOf(const Row& row) {
  std::string mark;
  // By position: the summaries of one query may share a name (PostgreSQL names each
  // MAX(...) "max").
  for (size_t i = 0; i < row.size(); ++i) {
    const Cell cell = row.At(i);
    mark += (cell.IsNull() ? "-" : cell.Str()) + "/";
  }
  return mark;
}

}  // namespace gpunex::platform::store
