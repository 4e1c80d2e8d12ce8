#include "agent/gpu/gpu_source.h"

#include <gtest/gtest.h>

namespace gpunex::agent {
namespace {

using Names = std::vector<std::string>;

TEST(ThrottleReasonNames, DecodesEachNvmlBit) {
  EXPECT_EQ(ThrottleReasonNames(0), Names{});
  EXPECT_EQ(ThrottleReasonNames(kThrottleGpuIdle), Names{"gpu_idle"});
  EXPECT_EQ(ThrottleReasonNames(kThrottleSwPowerCap | kThrottleSwThermalSlowdown),
            (Names{"sw_power_cap", "sw_thermal"}));
  EXPECT_EQ(
      ThrottleReasonNames(0x1ff),
      (Names{"gpu_idle", "applications_clocks_setting", "sw_power_cap", "hw_slowdown", "sync_boost",
             "sw_thermal", "hw_thermal", "hw_power_brake", "display_clock_setting"}));
}

TEST(ThrottleReasonNames, NamesUnknownBitsByPosition) {
  EXPECT_EQ(ThrottleReasonNames(kThrottleHwSlowdown | (uint64_t{1} << 12) | (uint64_t{1} << 63)),
            (Names{"hw_slowdown", "bit_12", "bit_63"}));
}

TEST(GpuJson, WritesEveryFieldAndNullForUnknown) {
  GpuInfo g;
  g.index = 1;
  g.uuid = "GPU-66666666-7777-8888-9999-aaaaaaaaaaaa";
  g.name = "Tesla T4";
  g.vram_mb = 15360;
  g.driver_version = "550.54.15";
  g.pcie_gen_max = 3;
  g.pcie_width_max = 16;
  EXPECT_EQ(ToJsonText(ToJson(g)),
            R"({"index":1,"uuid":"GPU-66666666-7777-8888-9999-aaaaaaaaaaaa","name":"Tesla T4",)"
            R"("catalog_id":"other","vram_mb":15360,"driver_version":"550.54.15",)"
            R"("cuda_driver_version":null,"pcie_gen_max":3,"pcie_gen_current":null,)"
            R"("pcie_width_max":16,"pcie_width_current":null,"power_limit_w":null,)"
            R"("emulated":false})");
  g.catalog_id = "l4-24gb";
  g.emulated = true;
  json::object o = ToJson(g);
  EXPECT_EQ(o.at("catalog_id"), "l4-24gb");
  EXPECT_EQ(o.at("emulated"), true);
}

TEST(GpuJson, WritesTelemetry) {
  GpuTelemetry t;
  t.uuid = "GPU-x";
  t.utilization_pct = 0;
  t.memory_used_mb = 2048;
  t.temperature_c = 41;
  t.power_w = 123.456;
  t.throttle_reasons = kThrottleSwPowerCap | kThrottleSwThermalSlowdown;
  t.throttle_names = ThrottleReasonNames(t.throttle_reasons);
  EXPECT_EQ(ToJsonText(ToJson(t)),
            R"({"uuid":"GPU-x","utilization_pct":0,"memory_used_mb":2048,"temperature_c":41,)"
            R"("power_w":123.456,"sm_clock_mhz":null,)"
            R"("throttle_reasons":["sw_power_cap","sw_thermal"]})");
}

}  // namespace
}  // namespace gpunex::agent
