#include "platform/store/coordination.h"

namespace gpunex::platform::store {

Status LockUntilCommit(Tx& tx, int64_t key) {
  if (tx.Backend() != BackendKind::kPostgres) return Status::Ok();
  return tx.Query("SELECT pg_advisory_xact_lock(?)", {key}).status();
}

std::string MarkOf(const Row& row) {
  std::string mark;
  for (size_t i = 0; i < row.size(); ++i) mark += (row.IsNull(i) ? "-" : row.Str(i)) + "/";
  return mark;
}

}  // namespace gpunex::platform::store
