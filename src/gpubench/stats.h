// How steady a GPU was during the sustained phase of gpunex-gpubench: throughput per
// interval (repeated BF16 GEMMs, timed with CUDA events) and the NVML readings taken
// meanwhile, reduced to the figures of the report's "sustained" object.
//
// Plain C++, thread-safe (pure functions).
#pragma once

#include <optional>
#include <span>
#include <string>
#include <vector>

#include "gpubench/telemetry.h"

namespace gpunex::gpubench {

struct Sustained {
  double seconds = 0;  // measured length of the phase (the intervals' total)
  // Throughput over the intervals, TFLOPS. Absent when there were no intervals.
  std::optional<double> mean_tflops, min_tflops, max_tflops;
  std::optional<double> cv;               // population standard deviation / mean
  std::optional<double> min_over_median;  // the worst interval against the typical one
  // From the NVML samples; absent when there were none (or none with that figure).
  std::optional<double> thermal_throttle_fraction;  // samples with sw/hw thermal slowdown
  std::optional<double> power_throttle_fraction;    // samples with power cap or power brake
  std::optional<double> max_temperature_c;
  std::optional<double> mean_power_w;
  std::optional<double> mean_sm_clock_mhz;
  // Every reason seen in any sample, without "gpu_idle", first-seen order.
  std::vector<std::string> throttle_reasons;
};

// The median of `v` (the mean of the middle two for an even count); 0 when empty.
double Median(std::vector<double> v);

// Reduces the phase. `interval_tflops` holds one throughput per interval, `seconds` the
// phase's measured length; `samples` the NVML readings. A reading's -1 figures are left
// out of that figure's statistics; throttle fractions count only readings whose reasons
// were known.
Sustained Summarize(std::span<const double> interval_tflops, double seconds,
                    std::span<const TelemetrySample> samples);

}  // namespace gpunex::gpubench
