// The evaluate step of applying a benchmark result: from the parsed result and what is
// known of each GPU under test, each GPU's outcome (figures, score, failures against its
// model's thresholds), the run's state, the verdict each measured GPU gets as a listing
// fact, and what changed for the provider's listing. Pure: no store, no clock.
//
// Thread-safety: pure functions over values.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/agent_protocol.h"
#include "common/gpu_catalog.h"
#include "platform/benchmarks/benchmark_run.h"
#include "platform/benchmarks/score.h"
#include "platform/fleet/fleet.h"
#include "platform/listing/listing.h"

namespace gpunex::platform::benchmarks {

// Stored texts (errors, notes) longer than this many bytes are cut to at most this many,
// before the character the limit would split, and marked with a trailing "…" (3 bytes).
inline constexpr size_t kMaxReasonLength = 1000;
std::string Truncate(std::string s);

struct GpuUnderTest {
  std::string gpu_id;
  std::string uuid;
  std::string catalog_id;
  std::string label;              // "NVIDIA L4 (GPU 0)", for the provider
  int64_t pcie_width_max = 0;     // from the inventory; 0 = unknown
  std::optional<GpuModel> model;  // none: not in the catalog ("other")
  Thresholds thresholds;
  listing::BenchmarkVerdict previous = listing::BenchmarkVerdict::kPassed;
};

struct GpuOutcome {
  std::string gpu_id;
  BenchmarkState state = BenchmarkState::kError;  // passed | failed | error
  std::optional<GpuFigures> figures;
  std::optional<double> score;
  std::vector<Failure> failures;
  std::optional<std::string> error;
  // Its listing facts after the run: a verdict when it was measured.
  fleet::BenchmarkFacts facts;
};

struct Evaluation {
  BenchmarkState run_state = BenchmarkState::kError;  // passed | failed | error
  std::optional<std::string> run_error;
  bool emulated = false;
  std::optional<NetworkFigures> network;
  std::optional<StorageFigures> storage;
  std::vector<Failure> machine_failures;  // count against every GPU of the run
  std::vector<GpuOutcome> gpus;           // in the order of the input
  // What changed for the listing, by GPU label.
  std::vector<std::string> delisted, relisted, first_listed;
  std::string delist_details;  // each delisted GPU's failures with guidance
};

// `machine_thresholds` judge the network and storage figures (when the run had its
// machine phases).
Evaluation Evaluate(const protocol::BenchmarkResult& result, bool machine_phases,
                    const std::vector<GpuUnderTest>& gpus, const Thresholds& machine_thresholds);

}  // namespace gpunex::platform::benchmarks
