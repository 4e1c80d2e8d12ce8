// The result of one gpunex-gpubench run and its JSON form, the contract with the agent
// (docs/gpubench.md): one object on stdout, TFLOPS and GB/s (1e9 bytes), every figure
// also as a fraction of the model's reference peak from the built-in GPU catalog.
//
// Plain C++, thread-safe (values and pure functions).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/gpu_catalog.h"
#include "gpubench/stats.h"

namespace gpunex::gpubench {

// The version of the output format, "version" in the JSON.
inline constexpr std::string_view kFormatVersion = "1";

struct DeviceReport {
  int index = 0;           // the CUDA device ordinal the benchmark ran on
  std::string uuid;        // "GPU-..."
  std::string name;        // "NVIDIA H200"
  std::string catalog_id;  // empty: the model is not in the catalog (JSON null)
  int pcie_gen = -1;       // -1: unknown (JSON 0)
  int pcie_width = -1;
  int sm_count = 0;
  int64_t memory_mb = 0;
};

// TFLOPS (1e12 floating-point operations per second; an FMA counts as two).
struct ComputeFigures {
  double fp32_tflops = 0;         // FP32 FMA chains, no tensor cores
  double fp16_tflops = 0;         // half2 FMA chains, no tensor cores
  double fp16_tensor_tflops = 0;  // cuBLASLt GEMM, FP16 in and out, FP32 accumulate
  double bf16_tensor_tflops = 0;  // cuBLASLt GEMM, BF16 in and out, FP32 accumulate
  double tf32_tensor_tflops = 0;  // cuBLASLt GEMM, FP32 in and out, TF32 tensor cores
};

// GB/s (1e9 bytes per second), counting the bytes each kernel moves: read and write one
// buffer each, copy reads one and writes one, triad reads two and writes one.
struct MemoryFigures {
  double read_gbps = 0;
  double write_gbps = 0;
  double copy_gbps = 0;
  double triad_gbps = 0;
};

// Each figure over the model's reference peak; memory is triad over the reference
// memory bandwidth, bf16_tensor uses the FP16/BF16 tensor reference.
struct ReferenceFractions {
  double fp32 = 0, fp16 = 0, fp16_tensor = 0, bf16_tensor = 0, tf32_tensor = 0, memory = 0;
};

ReferenceFractions Fractions(const ComputeFigures& c, const MemoryFigures& m,
                             const GpuModel& model);

struct Report {
  DeviceReport device;
  ComputeFigures compute;
  MemoryFigures memory;
  Sustained sustained;
  std::optional<ReferenceFractions> reference;  // absent for a model not in the catalog
  std::vector<std::string> sanity_failures;     // empty: every check passed
  double duration_s = 0;
};

// The report as one line of JSON (no trailing newline). Every figure is a number, rounded
// to 0.01 (TFLOPS, GB/s, seconds, watts, MHz, degrees) or 0.0001 (fractions, cv); a figure
// that is unknown (no NVML, no sustained phase, an unknown PCIe link) is 0, as in the
// agent's other reports. "catalog_id" is null and "reference_fraction" left out for a
// model not in the catalog.
std::string ReportJson(const Report& report);

// What the program prints on stdout when it cannot measure:
// {"tool":"gpunex-gpubench","version":"1","error":"<message>"}.
std::string ErrorJson(std::string_view message);

}  // namespace gpunex::gpubench
