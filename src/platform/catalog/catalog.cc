#include "platform/catalog/catalog.h"

#include <cctype>

#include "platform/catalog/catalog_store.h"

namespace gpunex::platform::catalog {
namespace {

constexpr double kMaxFigure = 100000;
const Usdc kMaxDefaultPrice = Usdc::Micros(1000 * Usdc::kMicrosPerUsdc);

FieldErrors Validate(const GpuModel& m) {
  FieldErrors errors;
  bool id_ok = !m.id.empty() && m.id.size() <= 64 && m.id != "other";
  for (unsigned char c : m.id) id_ok = id_ok && (std::islower(c) || std::isdigit(c) || c == '-');
  if (!id_ok)
    errors.emplace("id", "must use lower-case letters, digits and '-' and not be \"other\"");
  if (m.nvml_name.empty()) errors.emplace("name", "is required");
  if (m.vram_gb < 1 || m.vram_gb > 4096) errors.emplace("vram_gb", "must be from 1 to 4096");
  const std::pair<const char*, double> figures[] = {{"fp32_tflops", m.fp32_tflops},
                                                    {"fp16_tflops", m.fp16_tflops},
                                                    {"fp16_tensor_tflops", m.fp16_tensor_tflops},
                                                    {"tf32_tensor_tflops", m.tf32_tensor_tflops},
                                                    {"mem_bw_gbps", m.mem_bw_gbps}};
  for (const auto& [name, v] : figures) {
    if (!(v > 0 && v <= kMaxFigure)) errors.emplace(name, "must be more than 0 and at most 100000");
  }
  if (!m.default_price.is_positive() || m.default_price > kMaxDefaultPrice) {
    errors.emplace("default_price_micro", "must be from 1 to 1000000000");
  }
  return errors;
}

}  // namespace

Status SeedBuiltinModels(store::Database& db, const Clock& clock) {
  const Timestamp now = clock.Now();
  return db.Transact([&](store::Tx& tx) -> Status {
    CatalogStore s(tx);
    for (const GpuModel& m : BuiltinGpuCatalog())
      GPUNEX_RETURN_IF_ERROR(s.Insert({m, "builtin", now}, true));
    return Status::Ok();
  });
}

StatusOr<bool> ModelExists(store::Tx& tx, std::string_view id) {
  GPUNEX_ASSIGN_OR_RETURN(std::optional<GpuModelRow> row, CatalogStore(tx).Find(id));
  return row.has_value();
}

StatusOr<std::optional<GpuModel>> FindModel(store::Tx& tx, std::string_view id) {
  GPUNEX_ASSIGN_OR_RETURN(std::optional<GpuModelRow> row, CatalogStore(tx).Find(id));
  if (!row) return std::optional<GpuModel>();
  return std::optional<GpuModel>(std::move(row->model));
}

StatusOr<std::vector<CatalogModel>> ListModels(store::Database& db) {
  std::vector<CatalogModel> out;
  GPUNEX_RETURN_IF_ERROR(db.Read([&](store::Tx& tx) -> Status {
    GPUNEX_ASSIGN_OR_RETURN(std::vector<GpuModelRow> rows, CatalogStore(tx).List());
    out.clear();
    for (auto& r : rows) out.push_back({std::move(r.model), std::move(r.source)});
    return Status::Ok();
  }));
  return out;
}

StatusOr<CatalogModel> AddModel(store::Database& db, const accounts::Principal& p,
                                const GpuModel& m, const Clock& clock) {
  if (!p.IsAdmin()) return PermissionDenied("only admins can add GPU models");
  FieldErrors errors = Validate(m);
  if (!errors.empty()) return ValidationFailed(std::move(errors));
  const Timestamp now = clock.Now();
  Status st = db.Transact([&](store::Tx& tx) -> Status {
    GPUNEX_RETURN_IF_ERROR(CatalogStore(tx).Insert({m, "review", now}, false));
    return accounts::Audit(tx, now, p.user.id, "gpu_model.added", m.id, p.ip);
  });
  if (st.code() == StatusCode::kAlreadyExists) {
    return Status(StatusCode::kAlreadyExists, "a GPU model with this id exists",
                  FieldErrors{{"id", "is already in the catalog"}});
  }
  GPUNEX_RETURN_IF_ERROR(st);
  return CatalogModel{m, "review"};
}

}  // namespace gpunex::platform::catalog
