// A benchmark run and what it found, as the benchmarks folder records it (BEN-1..6).
// Plain values.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/agent_protocol.h"
#include "common/gpu_catalog.h"
#include "common/time.h"
#include "platform/benchmarks/score.h"

namespace gpunex::platform::benchmarks {

// The figures and verdict of one GPU in a run.
struct GpuRunResult {
  std::string gpu_id;
  std::string uuid;
  std::string catalog_id;
  std::string state = "running";  // running | passed | failed | error
  std::optional<protocol::GpubenchFigures> figures;
  std::optional<double> score;
  std::vector<Failure> failures;
  std::optional<std::string> error;
  Timestamp created_at;
  // For reading only: the GPU's index and name on its machine, its model's reference
  // figures (none for "other") and the thresholds that applied.
  int64_t index = 0;
  std::string name;
  std::optional<GpuModel> reference;
  Thresholds thresholds;
};

struct BenchmarkRun {
  std::string id;
  std::string machine_id;
  // first_connect | new_gpu | hardware_change | periodic | retry | requested
  std::string reason;
  std::string state = "running";  // running | passed | failed | error
  std::optional<std::string> requested_by;
  std::string command_id;
  bool machine_phases = false;
  bool emulated = false;
  std::optional<protocol::BenchmarkNetwork> network;
  std::optional<protocol::BenchmarkStorage> storage;
  std::vector<Failure> machine_failures;
  std::optional<std::string> error;
  Timestamp created_at;
  std::optional<Timestamp> finished_at;
  std::vector<GpuRunResult> gpus;  // by index
};

// A GPU's latest performance score, for the machine views.
struct GpuScore {
  std::optional<double> performance_score;
  std::optional<Timestamp> last_benchmark_at;
};

}  // namespace gpunex::platform::benchmarks
