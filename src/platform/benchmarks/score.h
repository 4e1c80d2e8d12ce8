// The performance score and the benchmark thresholds (BEN-6), as pure functions over the
// figures one benchmark run measured. docs/performance-score.md gives the formulas, the
// default thresholds and a worked example that score_test.cc checks.
//
// Thread-safety: free functions and plain values.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/agent_protocol.h"
#include "common/gpu_catalog.h"
#include "common/status.h"

namespace gpunex::platform::benchmarks {

// The figures the score and the checks read: what gpunex-gpubench (or an emulated GPU)
// measured on one GPU, and the machine's network and storage (common/agent_protocol.h).
using GpuFigures = protocol::GpubenchFigures;
using NetworkFigures = protocol::BenchmarkNetwork;
using StorageFigures = protocol::BenchmarkStorage;

// The weights of the score's geometric mean; they sum to 1.
struct ScoreWeights {
  double fp32 = 0.15, fp16 = 0.05, fp16_tensor = 0.15, bf16_tensor = 0.20, tf32_tensor = 0.10,
         memory = 0.35;
};

// S = 100 · Π (measured_i / A100-SXM-80GB reference_i)^w_i over the six figures (memory:
// triad). An A100-SXM-80GB at exactly its datasheet peaks scores 100. Figures ≤ 0 count
// as 1% of the reference (a GPU that could not run a kernel still gets a finite score).
double PerformanceScore(const GpuFigures& f, const ScoreWeights& w = {});

// Minimum fractions of the model's reference figures, and machine-level minimums.
struct Thresholds {
  double fp32 = 0.65, fp16 = 0.60, fp16_tensor = 0.60, bf16_tensor = 0.60, tf32_tensor = 0.50;
  double memory = 0.70;                     // triad / reference bandwidth
  double min_over_median = 0.85;            // sustained throughput steadiness
  double thermal_throttle_fraction = 0.20;  // at most
  // A figure above this multiple of the model's reference is not believed: no healthy GPU
  // of the model reaches it (its datasheet peaks are upper bounds; 1.3 leaves room for
  // factory-overclocked cards and measurement noise). docs/trust.md.
  double plausible_ceiling = 1.3;
  double download_mbit_s = 100, upload_mbit_s = 50, rtt_p50_ms = 250;
  double seq_read_mb_s = 200, seq_write_mb_s = 100, rand_read_iops = 2000;
};

// Sets the thresholds named in `overrides` (the member names above: "memory",
// "bf16_tensor", "download_mbit_s", ...). Fails naming `where`.<name> for an unknown name
// or a value out of range (fractions in (0, 1], minimums ≥ 0).
Status ApplyThresholdOverrides(const std::map<std::string, double>& overrides,
                               const std::string& where, Thresholds* t);

// One thing a benchmark found below its threshold, with what the provider should check.
struct Failure {
  std::string metric;  // "bf16_tensor_tflops", "pcie_width", "storage.rand_read_iops", ...
  double measured = 0;
  double required = 0;
  std::string guidance;  // a sentence for the provider

  bool operator==(const Failure&) const = default;
};

// Checks one GPU against its model's reference: each figure at least its minimum fraction
// and at most plausible_ceiling times the reference (above: an "implausible.<metric>"
// failure, and the run's figures are not believed). `model` null: a model without
// reference figures ("other"): only sanity, steadiness and throttling are checked.
// `pcie_width_max`: the link width the GPU reported in its inventory (0 = unknown).
std::vector<Failure> CheckGpu(const GpuFigures& f, const GpuModel* model, int64_t pcie_width_max,
                              const Thresholds& t);
std::vector<Failure> CheckNetwork(const NetworkFigures& f, const Thresholds& t);
std::vector<Failure> CheckStorage(const StorageFigures& f, const Thresholds& t);

// "bf16 tensor 41.2 TFLOPS < 72.6 required; ..." for a notification.
std::string Describe(const std::vector<Failure>& fs);
// Whether a failure says the figures cannot be true (implausible.<metric>).
bool IsImplausible(const Failure& f);

}  // namespace gpunex::platform::benchmarks
