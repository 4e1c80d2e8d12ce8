// The GPU catalog as the platform serves it (SPEC §15, REV-5): the built-in reference
// figures seeded into the gpu_models table at start, plus models that reviewers add when
// they approve an unsupported model case by case.
#pragma once

#include <optional>
#include <string>

#include "common/gpu_catalog.h"
#include "common/json.h"
#include "common/status.h"
#include "platform/accounts/accounts.h"
#include "platform/store/db.h"

namespace gpunex::platform::catalog {

// Inserts built-in models that are missing; never overwrites a row (operators may have
// edited figures). Idempotent; safe on several instances.
Status SeedBuiltinModels(store::Database& db);

// Whether `id` is a model in the catalog.
StatusOr<bool> ModelExists(store::Tx& tx, std::string_view id);

// The model `id` with its reference figures as the catalog holds them (built-in and
// reviewed models alike); nullopt when there is none ("other").
StatusOr<std::optional<GpuModel>> FindModel(store::Tx& tx, std::string_view id);

// GET /gpu-models: {"items": [...]} with reference figures; prices in micro-USDC.
StatusOr<json::object> ListModels(store::Database& db);

// POST /gpu-models (admins): adds a reviewed model. Fields as in the list; kAlreadyExists
// for a taken id.
StatusOr<json::object> AddModel(store::Database& db, const accounts::Principal& p,
                                const json::value& body);

json::object ToJson(const GpuModel& m, std::string_view source);

}  // namespace gpunex::platform::catalog
