// The GPU catalog as the platform serves it (SPEC §15, REV-5): the built-in reference
// figures seeded into the gpu_models table at start, plus models that reviewers add when
// they approve an unsupported model case by case. The table is catalog_store.h's.
//
// Thread-safety: free functions over a Database or the caller's transaction.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/gpu_catalog.h"
#include "common/status.h"
#include "common/time.h"
#include "platform/accounts/accounts.h"
#include "platform/store/db.h"

namespace gpunex::platform::catalog {

// A model with where it came from: "builtin" (data/gpu-reference.csv) or "review".
struct CatalogModel {
  GpuModel model;
  std::string source;
};

// Inserts built-in models that are missing; never overwrites a row (operators may have
// edited figures). Idempotent; safe on several instances.
Status SeedBuiltinModels(store::Database& db, const Clock& clock = SystemClock());

// Whether `id` is a model in the catalog.
StatusOr<bool> ModelExists(store::Tx& tx, std::string_view id);

// The model `id` with its reference figures as the catalog holds them (built-in and
// reviewed models alike); nullopt when there is none ("other").
StatusOr<std::optional<GpuModel>> FindModel(store::Tx& tx, std::string_view id);

// Every model, by id.
StatusOr<std::vector<CatalogModel>> ListModels(store::Database& db);

// Adds a reviewed model (admins only). Field errors for every bad figure (names as in the
// API: "id", "vram_gb", "default_price_micro", ...); kAlreadyExists naming "id" for a
// taken id.
StatusOr<CatalogModel> AddModel(store::Database& db, const accounts::Principal& p,
                                const GpuModel& m, const Clock& clock = SystemClock());

}  // namespace gpunex::platform::catalog
