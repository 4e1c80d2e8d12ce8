// The command line of gpunex-gpubench and the measurement plan it selects:
//
//   gpunex-gpubench [--device N | --uuid GPU-...] [--catalog-id ID] [--sustain-s S] [--quick]
//
// Plain C++, thread-safe (values and pure functions).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace gpunex::gpubench {

struct Options {
  int device = -1;         // CUDA device ordinal; -1: not given (device 0 unless --uuid)
  std::string uuid;        // "GPU-..."; empty: not given
  std::string catalog_id;  // empty: matched from the device name
  double sustain_s = -1;   // -1: not given (60, or 5 with --quick)
  bool quick = false;
  bool help = false;
  bool version = false;
};

// Parses the arguments after the program name; "--name value" and "--name=value" both
// work. Fails with kInvalidArgument naming the argument: unknown names, missing or
// malformed values, --device with --uuid, a UUID not of the form GPU-<hex and dashes>,
// a sustain time outside [0, 3600] s.
StatusOr<Options> ParseOptions(std::span<const std::string_view> args);

// The help text.
std::string Usage();

// How long and how large each measurement is.
struct Plan {
  double target_ms = 0;             // timed span of each reported measurement
  double screen_ms = 0;             // timed span of each GEMM algorithm tried
  int fma_iters = 0;                // loop iterations per FMA kernel launch
  std::vector<int64_t> gemm_sizes;  // M = N = K tried for each GEMM type
  int gemm_algos = 0;               // heuristic algorithms tried per size
  uint64_t memory_buffer_cap = 0;   // bytes per memory buffer, at most
  double sustain_s = 0;             // 0: no sustained phase
  double interval_s = 0;            // throughput interval within the sustained phase
  double sample_ms = 0;             // NVML sampling period
};

// The full plan keeps the whole run under two minutes with the default 60 s sustained
// phase; --quick shortens every step (a few seconds of measurement, 5 s sustained).
Plan MakePlan(const Options& options);

// "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" from the 16 bytes of a CUDA or NVML UUID.
std::string FormatGpuUuid(std::span<const unsigned char, 16> bytes);

// Whether two UUID texts name the same GPU: case-insensitive, the "GPU-" prefix optional.
bool SameGpuUuid(std::string_view a, std::string_view b);

}  // namespace gpunex::gpubench
