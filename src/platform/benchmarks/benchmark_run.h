// A benchmark run and what it found, as the benchmarks folder records it (BEN-1..6).
// Plain values.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/agent_protocol.h"
#include "common/enum_names.h"
#include "common/gpu_catalog.h"
#include "common/time.h"
#include "platform/benchmarks/score.h"

namespace gpunex::platform::benchmarks {

// A run's state, and each of its GPUs': running → passed | failed | error. A run (a GPU)
// ends once, and nothing leaves an end.
enum class BenchmarkState { kRunning, kPassed, kFailed, kError };
inline constexpr EnumNames<BenchmarkState, 4> kBenchmarkStateNames{{{
    {BenchmarkState::kRunning, "running"},
    {BenchmarkState::kPassed, "passed"},
    {BenchmarkState::kFailed, "failed"},
    {BenchmarkState::kError, "error"},
}}};
inline std::string_view Name(BenchmarkState s) { return kBenchmarkStateNames.Name(s); }
constexpr bool BenchmarkMayGo(BenchmarkState from, BenchmarkState to) {
  return from == BenchmarkState::kRunning && to != BenchmarkState::kRunning;
}

// Why a run was scheduled, and why a GPU is due before its periodic run. In rank order:
// when a run's GPUs are due for different reasons, the one ranked last names the run (a
// change beats a schedule). A run the provider or an admin asked for is "requested".
enum class BenchmarkReason {
  kSpotCheck,       // a random check after a pass (docs/trust.md)
  kPeriodic,        // its last benchmark is older than interval_s
  kRetry,           // its last run could not measure it
  kNewGpu,          // a GPU the machine did not have before
  kHardwareChange,  // the machine's inventory changed since its last benchmark
  kFirstConnect,    // the machine's first run
  kRequested,
};
inline constexpr EnumNames<BenchmarkReason, 7> kBenchmarkReasonNames{{{
    {BenchmarkReason::kSpotCheck, "spot_check"},
    {BenchmarkReason::kPeriodic, "periodic"},
    {BenchmarkReason::kRetry, "retry"},
    {BenchmarkReason::kNewGpu, "new_gpu"},
    {BenchmarkReason::kHardwareChange, "hardware_change"},
    {BenchmarkReason::kFirstConnect, "first_connect"},
    {BenchmarkReason::kRequested, "requested"},
}}};
inline std::string_view Name(BenchmarkReason r) { return kBenchmarkReasonNames.Name(r); }

// The figures and verdict of one GPU in a run.
struct GpuRunResult {
  std::string gpu_id;
  std::string uuid;
  std::string catalog_id;
  BenchmarkState state = BenchmarkState::kRunning;
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
  BenchmarkReason reason = BenchmarkReason::kRequested;
  BenchmarkState state = BenchmarkState::kRunning;
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
