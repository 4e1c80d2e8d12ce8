// The catalog folder's table, gpu_models, and the only SQL that touches it.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/gpu_catalog.h"
#include "common/status.h"
#include "common/time.h"
#include "platform/store/db.h"
#include "platform/store/migrations.h"

namespace gpunex::platform::catalog {

struct GpuModelRow {
  GpuModel model;
  std::string source;  // "builtin" | "review"
  Timestamp created_at;
};

class CatalogStore {
 public:
  explicit CatalogStore(store::Tx& tx) : tx_(tx) {}

  // With `if_absent` an existing id is left as it is; without, it is kAlreadyExists.
  Status Insert(const GpuModelRow& row, bool if_absent);
  StatusOr<std::optional<GpuModelRow>> Find(std::string_view id);
  StatusOr<std::vector<GpuModelRow>> List();  // by id

 private:
  store::Tx& tx_;
};

std::vector<store::Migration> CatalogMigrations();

}  // namespace gpunex::platform::catalog
