#include "gpubench/stats.h"

#include <gtest/gtest.h>

#include <cmath>

namespace gpunex::gpubench {
namespace {

TEST(Median, OddEvenAndEmpty) {
  EXPECT_EQ(Median({3, 1, 2}), 2);
  EXPECT_EQ(Median({4, 1, 3, 2}), 2.5);
  EXPECT_EQ(Median({}), 0);
}

TEST(Summarize, ASteadyGpu) {
  const std::vector<double> tflops(60, 750.0);
  Sustained s = Summarize(tflops, 60.2, {});
  EXPECT_EQ(s.seconds, 60.2);
  EXPECT_EQ(s.mean_tflops, 750);
  EXPECT_EQ(s.min_tflops, 750);
  EXPECT_EQ(s.max_tflops, 750);
  EXPECT_EQ(s.cv, 0);
  EXPECT_EQ(s.min_over_median, 1);
  // No telemetry: the NVML figures are unknown, not zero.
  EXPECT_FALSE(s.thermal_throttle_fraction.has_value());
  EXPECT_FALSE(s.power_throttle_fraction.has_value());
  EXPECT_FALSE(s.max_temperature_c.has_value());
  EXPECT_FALSE(s.mean_power_w.has_value());
  EXPECT_FALSE(s.mean_sm_clock_mhz.has_value());
  EXPECT_TRUE(s.throttle_reasons.empty());
}

TEST(Summarize, AnUnsteadyGpu) {
  const std::vector<double> tflops = {100, 110, 90, 60, 100};
  Sustained s = Summarize(tflops, 5, {});
  EXPECT_DOUBLE_EQ(*s.mean_tflops, 92);
  EXPECT_EQ(*s.min_tflops, 60);
  EXPECT_EQ(*s.max_tflops, 110);
  // Population variance: (64 + 324 + 4 + 1024 + 64) / 5 = 296.
  EXPECT_DOUBLE_EQ(*s.cv, std::sqrt(296.0) / 92);
  EXPECT_DOUBLE_EQ(*s.min_over_median, 0.6);
}

TEST(Summarize, NoIntervalsLeavesThroughputUnknown) {
  Sustained s = Summarize({}, 0, {});
  EXPECT_EQ(s.seconds, 0);
  EXPECT_FALSE(s.mean_tflops.has_value());
  EXPECT_FALSE(s.cv.has_value());
  EXPECT_FALSE(s.min_over_median.has_value());
}

TelemetrySample Reading(int temp, double power, int clock, bool thermal, bool power_cap,
                        std::vector<std::string> reasons) {
  TelemetrySample s;
  s.temperature_c = temp;
  s.power_w = power;
  s.sm_clock_mhz = clock;
  s.reasons_known = true;
  s.thermal_throttle = thermal;
  s.power_throttle = power_cap;
  s.reasons = std::move(reasons);
  return s;
}

TEST(Summarize, ThrottlingTemperaturePowerAndClocksFromTheSamples) {
  std::vector<TelemetrySample> samples = {
      Reading(70, 650, 1980, false, false, {}),
      Reading(78, 700, 1755, false, true, {"sw_power_cap"}),
      Reading(84, 690, 1600, true, true, {"sw_power_cap", "sw_thermal"}),
      Reading(-1, -1, -1, false, false, {"gpu_idle"}),  // figures the driver did not give
  };
  TelemetrySample unknown_reasons = Reading(80, 680, 1700, false, false, {});
  unknown_reasons.reasons_known = false;
  samples.push_back(unknown_reasons);

  Sustained s = Summarize(std::vector<double>{500}, 1, samples);
  EXPECT_DOUBLE_EQ(*s.thermal_throttle_fraction, 1.0 / 4);
  EXPECT_DOUBLE_EQ(*s.power_throttle_fraction, 2.0 / 4);
  EXPECT_EQ(*s.max_temperature_c, 84);
  EXPECT_DOUBLE_EQ(*s.mean_power_w, (650.0 + 700 + 690 + 680) / 4);
  EXPECT_DOUBLE_EQ(*s.mean_sm_clock_mhz, (1980.0 + 1755 + 1600 + 1700) / 4);
  EXPECT_EQ(s.throttle_reasons, (std::vector<std::string>{"sw_power_cap", "sw_thermal"}));
}

}  // namespace
}  // namespace gpunex::gpubench
