#include "platform/catalog/catalog_store.h"

namespace gpunex::platform::catalog {
namespace {

constexpr const char* kColumns =
    "id, nvml_name, vram_gb, fp32_tflops, fp16_tflops, fp16_tensor_tflops, tf32_tensor_tflops, "
    "mem_bw_gbps, default_price_micro, source, created_at";

GpuModelRow RowFrom(const store::Row& r) {
  GpuModel m{r.Str(0),  r.Str(1),  static_cast<int>(r.Int(2)), r.Real(3), r.Real(4), r.Real(5),
             r.Real(6), r.Real(7), Usdc::Micros(r.Int(8))};
  return {std::move(m), r.Str(9), r.Time(10)};
}

}  // namespace

Status CatalogStore::Insert(const GpuModelRow& row, bool if_absent) {
  const GpuModel& m = row.model;
  std::string sql = std::string("INSERT INTO gpu_models (") + kColumns +
                    ") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)";
  if (if_absent) sql += " ON CONFLICT (id) DO NOTHING";
  return tx_
      .Exec(sql, {m.id, m.nvml_name, int64_t{m.vram_gb}, m.fp32_tflops, m.fp16_tflops,
                  m.fp16_tensor_tflops, m.tf32_tensor_tflops, m.mem_bw_gbps,
                  m.default_price.micros(), row.source, ToUnixMicros(row.created_at)})
      .status();
}

StatusOr<std::optional<GpuModelRow>> CatalogStore::Find(std::string_view id) {
  GPUNEX_ASSIGN_OR_RETURN(store::Rows rows, tx_.Query(std::string("SELECT ") + kColumns +
                                                          " FROM gpu_models WHERE id = ?",
                                                      {std::string(id)}));
  if (rows.empty()) return std::optional<GpuModelRow>();
  return std::optional<GpuModelRow>(RowFrom(rows[0]));
}

StatusOr<std::vector<GpuModelRow>> CatalogStore::List() {
  GPUNEX_ASSIGN_OR_RETURN(store::Rows rows, tx_.Query(std::string("SELECT ") + kColumns +
                                                      " FROM gpu_models ORDER BY id"));
  std::vector<GpuModelRow> out;
  for (const auto& r : rows) out.push_back(RowFrom(r));
  return out;
}

std::vector<store::Migration> CatalogMigrations() {
  return {
      {2,
       "catalog",
       "GPU catalog with reference figures",
       {
           R"(CREATE TABLE gpu_models (
                id TEXT PRIMARY KEY,
                nvml_name TEXT NOT NULL,
                vram_gb BIGINT NOT NULL,
                fp32_tflops DOUBLE PRECISION NOT NULL,
                fp16_tflops DOUBLE PRECISION NOT NULL,
                fp16_tensor_tflops DOUBLE PRECISION NOT NULL,
                tf32_tensor_tflops DOUBLE PRECISION NOT NULL,
                mem_bw_gbps DOUBLE PRECISION NOT NULL,
                default_price_micro BIGINT NOT NULL,
                source TEXT NOT NULL,
                created_at BIGINT NOT NULL))",
       },
       {}},
  };
}

}  // namespace gpunex::platform::catalog
