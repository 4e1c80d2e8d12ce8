// The run_benchmark command (BEN-1..5), agent side: the payload the platform sends,
// the emulated GPU figures, and the result the agent answers with. Agent::Execute
// drives it (agent.cc); docs/agent-protocol.md describes the command.
//
// Payload: {"benchmark_id", "gpus": [{"uuid", "catalog_id"}], "machine_phases": bool,
//           "sustain_s", "storage": {"file_mb", "seconds_per_phase"},
//           "network": {"mb", "pings"}}
// Result data: {"benchmark_id", "emulated",
//               "gpus": [{"uuid", "ok", "error"?, "result"?: <gpunex-gpubench JSON>}],
//               "network"?: {"rtt_p50_ms", "rtt_p99_ms", "download_mbit_s", "upload_mbit_s"},
//               "network_error"?, "storage"?: {...}, "storage_error"?}
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "agent/gpu/gpu_source.h"
#include "common/json.h"
#include "common/status.h"

namespace gpunex::agent {

struct BenchmarkRequest {
  std::string benchmark_id;
  struct Gpu {
    std::string uuid, catalog_id;
  };
  std::vector<Gpu> gpus;
  bool machine_phases = false;
  int64_t sustain_s = 60;
  int64_t storage_file_mb = 1024;
  double storage_seconds = 8;
  int64_t network_mb = 256;
  int64_t pings = 20;
};

// Parses and bounds the payload; kValidationFailed naming the field.
StatusOr<BenchmarkRequest> ParseBenchmarkRequest(const json::object& payload);

// What gpunex-gpubench would print for an EMULATED GPU: the model's reference figures
// times `factor`, perfectly steady, labelled "emulated": true. kNotFound for a GPU whose
// model is not in the catalog.
StatusOr<json::object> EmulatedGpubenchResult(const GpuInfo& gpu, double factor, int64_t sustain_s);

// p50 and p99 of `samples` (nearest rank); zeros when empty.
std::pair<double, double> Percentiles50And99(std::vector<double> samples);

// Workload ids of benchmark containers, kept apart from customer workloads.
inline constexpr char kBenchWorkloadPrefix[] = "bench-";

}  // namespace gpunex::agent
