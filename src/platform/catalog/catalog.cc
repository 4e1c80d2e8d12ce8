#include "platform/catalog/catalog.h"

#include <cctype>

#include "common/time.h"

namespace gpunex::platform::catalog {
namespace {

constexpr const char* kColumns =
    "id, nvml_name, vram_gb, fp32_tflops, fp16_tflops, fp16_tensor_tflops, tf32_tensor_tflops, "
    "mem_bw_gbps, default_price_micro, source";

Status Insert(store::Tx& tx, const GpuModel& m, std::string_view source, bool ignore_existing) {
  std::string sql = std::string("INSERT INTO gpu_models (") + kColumns +
                    ", created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)";
  if (ignore_existing) sql += " ON CONFLICT (id) DO NOTHING";
  return tx
      .Exec(sql, {m.id, m.nvml_name, int64_t{m.vram_gb}, m.fp32_tflops, m.fp16_tflops,
                  m.fp16_tensor_tflops, m.tf32_tensor_tflops, m.mem_bw_gbps,
                  m.default_price_micro, std::string(source), NowMicros()})
      .status();
}

// A row selected with kColumns.
GpuModel ModelFromRow(const store::Row& r) {
  return GpuModel{r.Str(0),  r.Str(1),  static_cast<int>(r.Int(2)), r.Real(3), r.Real(4),
                  r.Real(5), r.Real(6), r.Real(7),                  r.Int(8)};
}

}  // namespace

json::object ToJson(const GpuModel& m, std::string_view source) {
  return {{"id", m.id},
          {"name", m.nvml_name},
          {"vram_gb", m.vram_gb},
          {"fp32_tflops", m.fp32_tflops},
          {"fp16_tflops", m.fp16_tflops},
          {"fp16_tensor_tflops", m.fp16_tensor_tflops},
          {"bf16_tensor_tflops", m.fp16_tensor_tflops},
          {"tf32_tensor_tflops", m.tf32_tensor_tflops},
          {"mem_bw_gbps", m.mem_bw_gbps},
          {"default_price_micro", m.default_price_micro},
          {"source", source}};
}

Status SeedBuiltinModels(store::Database& db) {
  return db.Transact([](store::Tx& tx) -> Status {
    for (const GpuModel& m : BuiltinGpuCatalog()) {
      GPUNEX_RETURN_IF_ERROR(Insert(tx, m, "builtin", true));
    }
    return Status::Ok();
  });
}

StatusOr<bool> ModelExists(store::Tx& tx, std::string_view id) {
  GPUNEX_ASSIGN_OR_RETURN(store::Rows rows,
                          tx.Query("SELECT 1 FROM gpu_models WHERE id = ?", {std::string(id)}));
  return !rows.empty();
}

StatusOr<std::optional<GpuModel>> FindModel(store::Tx& tx, std::string_view id) {
  GPUNEX_ASSIGN_OR_RETURN(
      store::Rows rows,
      tx.Query(std::string("SELECT ") + kColumns + " FROM gpu_models WHERE id = ?", {std::string(id)}));
  if (rows.empty()) return std::optional<GpuModel>();
  return std::optional<GpuModel>(ModelFromRow(rows[0]));
}

StatusOr<json::object> ListModels(store::Database& db) {
  json::array items;
  GPUNEX_RETURN_IF_ERROR(db.Read([&](store::Tx& tx) -> Status {
    GPUNEX_ASSIGN_OR_RETURN(
        store::Rows rows,
        tx.Query(std::string("SELECT ") + kColumns + " FROM gpu_models ORDER BY id"));
    for (const auto& r : rows) items.push_back(ToJson(ModelFromRow(r), r.Str(9)));
    return Status::Ok();
  }));
  return json::object{{"items", std::move(items)}};
}

StatusOr<json::object> AddModel(store::Database& db, const accounts::Principal& p,
                                const json::value& body) {
  if (!p.IsAdmin()) return PermissionDenied("only admins can add GPU models");
  if (!body.is_object()) return FieldError("body", "must be a JSON object");
  FieldErrors errors;
  JsonReader r(body.get_object(), "", &errors);
  r.RejectUnknown({"id", "name", "vram_gb", "fp32_tflops", "fp16_tflops", "fp16_tensor_tflops",
                   "tf32_tensor_tflops", "mem_bw_gbps", "default_price_micro"});
  GpuModel m;
  if (auto id = r.String("id", true, 64)) {
    bool ok = !id->empty() && id != "other";
    for (unsigned char c : *id) ok = ok && (std::islower(c) || std::isdigit(c) || c == '-');
    if (ok) {
      m.id = *id;
    } else {
      r.Fail("id", "must use lower-case letters, digits and '-' and not be \"other\"");
    }
  }
  m.nvml_name = r.String("name", true, 100).value_or("");
  m.vram_gb = static_cast<int>(r.Int("vram_gb", true, 1, 4096).value_or(0));
  m.fp32_tflops = r.Number("fp32_tflops", true, 0, 100000).value_or(0);
  m.fp16_tflops = r.Number("fp16_tflops", true, 0, 100000).value_or(0);
  m.fp16_tensor_tflops = r.Number("fp16_tensor_tflops", true, 0, 100000).value_or(0);
  m.tf32_tensor_tflops = r.Number("tf32_tensor_tflops", true, 0, 100000).value_or(0);
  m.mem_bw_gbps = r.Number("mem_bw_gbps", true, 0, 100000).value_or(0);
  m.default_price_micro = r.Int("default_price_micro", true, 1, 1000 * 1000000LL).value_or(0);
  if (!errors.empty()) return ValidationFailed(std::move(errors));
  Status st = db.Transact([&](store::Tx& tx) -> Status {
    GPUNEX_RETURN_IF_ERROR(Insert(tx, m, "review", false));
    return accounts::Audit(tx, p.user.id, "gpu_model.added", m.id, p.ip);
  });
  if (st.code() == StatusCode::kAlreadyExists) {
    return Status(StatusCode::kAlreadyExists, "a GPU model with this id exists",
                  FieldErrors{{"id", "is already in the catalog"}});
  }
  GPUNEX_RETURN_IF_ERROR(st);
  return ToJson(m, "review");
}

}  // namespace gpunex::platform::catalog
