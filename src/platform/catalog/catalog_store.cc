#include "platform/catalog/catalog_store.h"

#include "platform/store/rows.h"

namespace gpunex::platform::catalog {
namespace {

const store::RowMapper<GpuModelRow>& ModelRows() {
  static const auto* const m = new store::RowMapper<GpuModelRow>({
      {"id", [](GpuModelRow& r, const store::Cell& c) { r.model.id = c.Str(); }},
      {"nvml_name", [](GpuModelRow& r, const store::Cell& c) { r.model.nvml_name = c.Str(); }},
      {"vram_gb",
       [](GpuModelRow& r, const store::Cell& c) { r.model.vram_gb = static_cast<int>(c.Int()); }},
      {"fp32_tflops", [](GpuModelRow& r, const store::Cell& c) { r.model.fp32_tflops = c.Real(); }},
      {"fp16_tflops", [](GpuModelRow& r, const store::Cell& c) { r.model.fp16_tflops = c.Real(); }},
      {"fp16_tensor_tflops",
       [](GpuModelRow& r, const store::Cell& c) { r.model.fp16_tensor_tflops = c.Real(); }},
      {"tf32_tensor_tflops",
       [](GpuModelRow& r, const store::Cell& c) { r.model.tf32_tensor_tflops = c.Real(); }},
      {"mem_bw_gbps", [](GpuModelRow& r, const store::Cell& c) { r.model.mem_bw_gbps = c.Real(); }},
      {"default_price_micro",
       [](GpuModelRow& r, const store::Cell& c) { r.model.default_price = Usdc::Micros(c.Int()); }},
      {"source", &GpuModelRow::source},
      {"created_at", &GpuModelRow::created_at},
  });
  return *m;
}

}  // namespace

Status CatalogStore::Insert(const GpuModelRow& row, bool if_absent) {
  const GpuModel& m = row.model;
  std::string sql = std::string("INSERT INTO gpu_models (") + ModelRows().Names() +
                    ") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)";
  if (if_absent) sql += " ON CONFLICT (id) DO NOTHING";
  return tx_
      .Exec(sql, {m.id, m.nvml_name, int64_t{m.vram_gb}, m.fp32_tflops, m.fp16_tflops,
                  m.fp16_tensor_tflops, m.tf32_tensor_tflops, m.mem_bw_gbps,
                  m.default_price.micros(), row.source, ToUnixMicros(row.created_at)})
      .status();
}

StatusOr<std::optional<GpuModelRow>> CatalogStore::Find(std::string_view id) {
  GPUNEX_ASSIGN_OR_RETURN(
      store::Rows rows,
      tx_.Query(std::string("SELECT ") + ModelRows().Select() + " FROM gpu_models WHERE id = ?",
                {std::string(id)}));
  return ModelRows().First(rows);
}

StatusOr<std::vector<GpuModelRow>> CatalogStore::List() {
  GPUNEX_ASSIGN_OR_RETURN(
      store::Rows rows,
      tx_.Query(std::string("SELECT ") + ModelRows().Select() + " FROM gpu_models ORDER BY id"));
  return ModelRows().Decode(rows);
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
