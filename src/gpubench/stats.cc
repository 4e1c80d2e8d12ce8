#include "gpubench/stats.h"

#include <algorithm>
#include <cmath>

namespace gpunex::gpubench {

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  const size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid), v.end());
  const double upper = v[mid];
  if (v.size() % 2 == 1) return upper;
  const double lower = *std::max_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid));
  return (lower + upper) / 2;
}

Sustained Summarize(std::span<const double> interval_tflops, double seconds,
                    std::span<const TelemetrySample> samples) {
  Sustained out;
  out.seconds = seconds;

  if (!interval_tflops.empty()) {
    const double n = static_cast<double>(interval_tflops.size());
    double sum = 0;
    double lo = interval_tflops[0];
    double hi = interval_tflops[0];
    for (double t : interval_tflops) {
      sum += t;
      lo = std::min(lo, t);
      hi = std::max(hi, t);
    }
    const double mean = sum / n;
    double var = 0;
    for (double t : interval_tflops) var += (t - mean) * (t - mean);
    var /= n;
    const double median = Median({interval_tflops.begin(), interval_tflops.end()});
    out.mean_tflops = mean;
    out.min_tflops = lo;
    out.max_tflops = hi;
    if (mean > 0) out.cv = std::sqrt(var) / mean;
    if (median > 0) out.min_over_median = lo / median;
  }

  int with_reasons = 0, thermal = 0, power = 0;
  int temps = 0, powers = 0, clocks = 0;
  double max_temp = 0, power_sum = 0, clock_sum = 0;
  for (const TelemetrySample& s : samples) {
    if (s.reasons_known) {
      ++with_reasons;
      thermal += s.thermal_throttle ? 1 : 0;
      power += s.power_throttle ? 1 : 0;
      for (const std::string& r : s.reasons) {
        if (r == "gpu_idle") continue;
        if (std::find(out.throttle_reasons.begin(), out.throttle_reasons.end(), r) ==
            out.throttle_reasons.end()) {
          out.throttle_reasons.push_back(r);
        }
      }
    }
    if (s.temperature_c >= 0) {
      max_temp = temps == 0 ? s.temperature_c : std::max<double>(max_temp, s.temperature_c);
      ++temps;
    }
    if (s.power_w >= 0) {
      power_sum += s.power_w;
      ++powers;
    }
    if (s.sm_clock_mhz >= 0) {
      clock_sum += s.sm_clock_mhz;
      ++clocks;
    }
  }
  if (with_reasons > 0) {
    out.thermal_throttle_fraction = static_cast<double>(thermal) / with_reasons;
    out.power_throttle_fraction = static_cast<double>(power) / with_reasons;
  }
  if (temps > 0) out.max_temperature_c = max_temp;
  if (powers > 0) out.mean_power_w = power_sum / powers;
  if (clocks > 0) out.mean_sm_clock_mhz = clock_sum / clocks;
  return out;
}

}  // namespace gpunex::gpubench
