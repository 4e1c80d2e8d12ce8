// The measurements of gpunex-gpubench on one GPU, in order: FP32 and FP16 FMA throughput,
// memory bandwidth, FP16/BF16/TF32 tensor-core GEMMs, and the sustained BF16 load with
// NVML sampling (docs/gpubench.md says what each does and how it is timed).
//
// Not thread-safe: call from one thread; it starts and joins its own sampling thread.
#pragma once

#include "common/status.h"
#include "gpubench/cli.h"
#include "gpubench/report.h"
#include "gpubench/telemetry.h"

namespace gpunex::gpubench {

// Measures the GPU that `options` names (CUDA device 0 by default) for `plan`. A result
// that fails its sanity check is a finding, not an error: it is in
// Report::sanity_failures and measuring goes on. Fails with kNotFound when the GPU is
// not there, kInvalidArgument for an unknown --catalog-id, kInternal when CUDA or
// cuBLASLt fails (no device, out of memory, a kernel fault).
StatusOr<Report> RunBenchmark(const Options& options, const Plan& plan, Telemetry& telemetry);

}  // namespace gpunex::gpubench
