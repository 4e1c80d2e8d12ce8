// NvmlTelemetry against the agent's fake libnvidia-ml (src/agent/gpu/testdata/fake_nvml.cc):
// an H100 throttled for power and heat, and a Tesla T4 whose idle link trained down.
#include <gtest/gtest.h>

#include "gpubench/telemetry.h"

namespace gpunex::gpubench {
namespace {

constexpr const char* kH100 = "GPU-11111111-2222-3333-4444-555555555555";
constexpr const char* kT4 = "gpu-66666666-7777-8888-9999-AAAAAAAAAAAA";  // case does not matter

TEST(NvmlTelemetry, ReadsTheGpuByUuid) {
  auto t = NvmlTelemetry(FAKE_NVML_FULL_PATH);
  EXPECT_EQ(t->Kind(), "nvml");
  auto facts = t->Facts(kT4);
  ASSERT_TRUE(facts.ok()) << facts.status().ToString();
  EXPECT_EQ(facts->pcie_gen, 1);
  EXPECT_EQ(facts->pcie_width, 8);
  EXPECT_EQ(facts->pcie_gen_max, 3);
  EXPECT_EQ(facts->pcie_width_max, 16);
  EXPECT_EQ(facts->memory_mb, 15360);

  auto s = t->Sample(kH100);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->temperature_c, 41);
  EXPECT_DOUBLE_EQ(s->power_w, 123.456);
  EXPECT_EQ(s->sm_clock_mhz, 1980);
  EXPECT_TRUE(s->reasons_known);
  EXPECT_TRUE(s->thermal_throttle);  // sw_thermal
  EXPECT_TRUE(s->power_throttle);    // sw_power_cap
  EXPECT_EQ(s->reasons, (std::vector<std::string>{"sw_power_cap", "sw_thermal"}));

  auto idle = t->Sample(kT4);
  ASSERT_TRUE(idle.ok());
  EXPECT_FALSE(idle->thermal_throttle);
  EXPECT_FALSE(idle->power_throttle);
  EXPECT_EQ(idle->reasons, std::vector<std::string>{"gpu_idle"});
}

TEST(NvmlTelemetry, AGpuNvmlDoesNotListIsNotFound) {
  auto t = NvmlTelemetry(FAKE_NVML_FULL_PATH);
  EXPECT_EQ(t->Facts("GPU-00000000-0000-0000-0000-000000000000").status().code(),
            StatusCode::kNotFound);
  EXPECT_EQ(t->Sample("GPU-00000000-0000-0000-0000-000000000000").status().code(),
            StatusCode::kNotFound);
}

TEST(NvmlTelemetry, NoLibraryIsUnavailable) {
  auto t = NvmlTelemetry("libnvidia-ml-does-not-exist.so.1");
  EXPECT_EQ(t->Facts(kH100).status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(t->Sample(kH100).status().code(), StatusCode::kUnavailable);
}

}  // namespace
}  // namespace gpunex::gpubench
