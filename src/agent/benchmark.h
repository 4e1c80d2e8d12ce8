// The run_benchmark command (BEN-1..5), agent side: the run itself, in the order of
// docs/agent-protocol.md, from the typed payload (protocol::RunBenchmark) to the typed
// result (protocol::BenchmarkResult, common/agent_protocol.h); the emulated GPU figures;
// the gpunex-gpubench workload. What reaches outside the agent (the workload runner, the
// channel to the platform, the disk) comes in as BenchmarkSteps, which Agent wires
// (agent.cc) and tests replace.
//
// Thread-safety: RunBenchmark may be called from any thread, one run at a time per
// machine (the runs would measure each other); the other functions are pure.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "agent/bench/network.h"
#include "agent/bench/storage.h"
#include "agent/gpu/gpu_source.h"
#include "common/agent_protocol.h"
#include "common/json.h"
#include "common/status.h"

namespace gpunex::agent {

// What gpunex-gpubench would print for an EMULATED GPU: the model's reference figures
// times `factor`, perfectly steady, labelled "emulated": true. kNotFound for a GPU whose
// model is not in the catalog.
StatusOr<json::object> EmulatedGpubenchResult(const GpuInfo& gpu, double factor, int64_t sustain_s);

// p50 and p99 of `samples` (nearest rank); zeros when empty.
std::pair<double, double> Percentiles50And99(std::vector<double> samples);

// Workload ids of benchmark containers, kept apart from customer workloads.
inline constexpr char kBenchWorkloadPrefix[] = "bench-";

// The workload that runs gpunex-gpubench from `image` on `gpu` alone: the image's
// entrypoint is gpunex-gpubench, the command its arguments. Checked like a platform's
// start_workload (protocol::ParseStartWorkload); kValidationFailed naming the field when
// `image` is not an image reference.
StatusOr<protocol::StartWorkload> GpubenchWorkload(const std::string& benchmark_id,
                                                   const GpuInfo& gpu, int64_t sustain_s,
                                                   const std::string& image);

// The parts of a benchmark run that reach outside the agent's memory.
struct BenchmarkSteps {
  // gpunex-gpubench on a real GPU: the JSON it printed.
  std::function<StatusOr<json::object>(const GpuInfo& gpu, int64_t sustain_s)> gpubench;
  // `n` round trips over the channel to the platform, in milliseconds.
  std::function<StatusOr<std::vector<double>>(int64_t n)> round_trips;
  // Download and upload throughput against the platform, `bytes` each way.
  std::function<StatusOr<bench::NetworkResult>(int64_t bytes)> throughput;
  // The storage benchmark on a test file of `file_bytes`.
  std::function<StatusOr<bench::StorageResult>(int64_t file_bytes, double seconds_per_phase)>
      storage;
};

// Runs `req` on the GPUs of `gpus`: each requested GPU in turn (an emulated one answers
// with EmulatedGpubenchResult, one the machine does not have with an error), then, with
// machine_phases, the round trips and the throughput (skipped when the round trips
// fail), then the storage benchmark. Never fails as a whole: what could not be measured
// is an error in its place of the result.
protocol::BenchmarkResult RunBenchmark(const protocol::RunBenchmark& req, GpuSource& gpus,
                                       const BenchmarkSteps& steps);

// An error as a benchmark result carries it: the status as text, made safe for the wire
// and cut to protocol::kMaxBenchmarkErrorLength bytes at a character boundary.
std::string BenchmarkErrorText(const Status& status);

// One GPU's entry in the result: its gpunex-gpubench JSON, or why there is none.
protocol::BenchmarkResult::Gpu GpuResult(const std::string& uuid,
                                         const StatusOr<json::object>& figures);

// The network figures: p50 and p99 of the round trips `rtt_ms`, and the throughput.
protocol::BenchmarkNetwork NetworkFigures(const std::vector<double>& rtt_ms,
                                          const bench::NetworkResult& throughput);

// The storage figures of a storage benchmark.
protocol::BenchmarkStorage StorageFigures(const bench::StorageResult& disk);

}  // namespace gpunex::agent
