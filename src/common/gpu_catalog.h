// The GPU reference catalog (SPEC §15): peak figures from NVIDIA datasheets, built into
// every binary from data/gpu-reference.csv. The platform seeds its catalog table from it;
// the agent's emulated GPU source and the benchmarks read the same figures.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/money.h"

namespace gpunex {

struct GpuModel {
  std::string id;         // catalog id, e.g. "h100-sxm-80gb"
  std::string nvml_name;  // the usual NVML name, e.g. "NVIDIA H100 80GB HBM3"
  int vram_gb = 0;
  double fp32_tflops = 0;
  double fp16_tflops = 0;         // without tensor cores
  double fp16_tensor_tflops = 0;  // FP16/BF16 dense tensor
  double tf32_tensor_tflops = 0;
  double mem_bw_gbps = 0;  // GB/s
  Usdc default_price;      // per GPU per hour, our starting default (PRC-3)
};

// The built-in catalog, in file order.
const std::vector<GpuModel>& BuiltinGpuCatalog();

// Parses the CSV format of data/gpu-reference.csv. Throws std::runtime_error naming the
// line on malformed input (used only on built-in data and in tests).
std::vector<GpuModel> ParseGpuCatalogCsv(std::string_view csv);

// Finds a model by catalog id.
const GpuModel* FindGpuModel(std::string_view id);

// Maps an NVML device name to a catalog id, loosely (case, spaces, "PCIe"/"PCIE",
// "SXM4"); nullopt for unknown names.
std::optional<std::string> MatchNvmlName(std::string_view nvml_name, int vram_gb);

// Whether a GPU that NVML names `nvml_name` with `vram_mb` of memory can be the catalog
// model `m`: the same name (loosely, as MatchNvmlName) and 85 % to 105 % of its VRAM (what
// NVML reports is a little below the marketing figure: an H100 80GB reports 81,559 MiB).
bool ReportsModel(const GpuModel& m, std::string_view nvml_name, int64_t vram_mb);

}  // namespace gpunex
