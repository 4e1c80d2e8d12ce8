// NvmlGpuSource against testdata/fake_nvml.cc, a test double of libnvidia-ml built in
// three variants (FAKE_NVML_FULL_PATH, FAKE_NVML_MINIMAL_PATH, FAKE_NVML_NO_DRIVER_PATH are their
// paths), and against libraries that are missing or are not NVML.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <thread>

#include "agent/gpu/gpu_source.h"

namespace gpunex::agent {
namespace {

TEST(NvmlGpuSource, MissingLibraryIsUnavailableWithAHint) {
  auto source = NvmlGpuSource("libnvidia-ml-does-not-exist.so.1");
  EXPECT_EQ(source->Kind(), "nvml");
  EXPECT_FALSE(source->Emulated());
  EXPECT_EQ(source->PerfFactor(), 1.0);
  auto gpus = source->Inventory();
  ASSERT_FALSE(gpus.ok());
  EXPECT_EQ(gpus.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(gpus.status().message().find("NVML not found"), std::string::npos);
  EXPECT_NE(gpus.status().message().find("install the NVIDIA driver"), std::string::npos)
      << gpus.status().message();
  EXPECT_NE(gpus.status().message().find("libnvidia-ml-does-not-exist.so.1"), std::string::npos);
  auto sample = source->Sample();
  ASSERT_FALSE(sample.ok());
  EXPECT_EQ(sample.status().code(), StatusCode::kUnavailable);
}

TEST(NvmlGpuSource, DefaultLibraryOnAMachineWithoutDriverSaysSo) {
  // This test machine has no NVIDIA driver; where one is installed, expect GPUs.
  auto gpus = NvmlGpuSource()->Inventory();
  if (gpus.ok()) GTEST_SKIP() << "NVML present: " << gpus->size() << " GPUs";
  EXPECT_EQ(gpus.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(gpus.status().message().find("libnvidia-ml.so.1"), std::string::npos);
}

TEST(NvmlGpuSource, LibraryThatIsNotNvmlIsUnavailable) {
  auto gpus = NvmlGpuSource("libm.so.6")->Inventory();
  ASSERT_FALSE(gpus.ok());
  EXPECT_EQ(gpus.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(gpus.status().message().find("lacks nvmlInit_v2"), std::string::npos)
      << gpus.status().message();
}

TEST(NvmlGpuSource, DriverNotLoadedIsUnavailable) {
  auto source = NvmlGpuSource(FAKE_NVML_NO_DRIVER_PATH);
  for (int attempt = 0; attempt < 2; ++attempt) {  // the second call tries again
    auto gpus = source->Inventory();
    ASSERT_FALSE(gpus.ok());
    EXPECT_EQ(gpus.status().code(), StatusCode::kUnavailable);
    EXPECT_NE(gpus.status().message().find("Driver Not Loaded (NVML code 9)"), std::string::npos)
        << gpus.status().message();
  }
}

TEST(NvmlGpuSource, InventoryFromFakeLibrary) {
  auto source = NvmlGpuSource(FAKE_NVML_FULL_PATH);
  auto gpus = source->Inventory();
  ASSERT_TRUE(gpus.ok()) << gpus.status().ToString();
  ASSERT_EQ(gpus->size(), 2u);

  const GpuInfo& h100 = (*gpus)[0];
  EXPECT_EQ(h100.index, 0);
  EXPECT_EQ(h100.uuid, "GPU-11111111-2222-3333-4444-555555555555");
  EXPECT_EQ(h100.name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(h100.catalog_id, "h100-sxm-80gb");
  EXPECT_EQ(h100.vram_mb, 81559);  // 85520809984 bytes
  EXPECT_EQ(h100.driver_version, "550.54.15");
  EXPECT_EQ(h100.cuda_driver_version, "12.4");  // 12040
  EXPECT_EQ(h100.pcie_gen_max, 5);
  EXPECT_EQ(h100.pcie_gen_current, 5);
  EXPECT_EQ(h100.pcie_width_max, 16);
  EXPECT_EQ(h100.pcie_width_current, 16);
  EXPECT_EQ(h100.power_limit_w, 700);  // 700000 mW
  EXPECT_FALSE(h100.emulated);

  const GpuInfo& t4 = (*gpus)[1];
  EXPECT_EQ(t4.index, 1);
  EXPECT_EQ(t4.uuid, "GPU-66666666-7777-8888-9999-aaaaaaaaaaaa");
  EXPECT_EQ(t4.name, "Tesla T4");
  EXPECT_EQ(t4.catalog_id, "");  // not in the catalog: "other"
  EXPECT_EQ(ToJson(t4).at("catalog_id"), "other");
  EXPECT_EQ(t4.vram_mb, 15360);
  EXPECT_EQ(t4.pcie_gen_max, 3);
  EXPECT_EQ(t4.pcie_gen_current, 1);
  EXPECT_EQ(t4.pcie_width_current, 8);
  EXPECT_EQ(t4.power_limit_w, 70);
}

TEST(NvmlGpuSource, SampleFromFakeLibrary) {
  auto source = NvmlGpuSource(FAKE_NVML_FULL_PATH);
  auto sample = source->Sample();
  ASSERT_TRUE(sample.ok()) << sample.status().ToString();
  ASSERT_EQ(sample->size(), 2u);

  const GpuTelemetry& h100 = (*sample)[0];
  EXPECT_EQ(h100.uuid, "GPU-11111111-2222-3333-4444-555555555555");
  EXPECT_EQ(h100.utilization_pct, 37);
  EXPECT_EQ(h100.memory_used_mb, 2048);  // 2147483648 bytes
  EXPECT_EQ(h100.temperature_c, 41);
  EXPECT_DOUBLE_EQ(h100.power_w, 123.456);  // 123456 mW
  EXPECT_EQ(h100.sm_clock_mhz, 1980);
  EXPECT_EQ(h100.throttle_reasons, kThrottleSwPowerCap | kThrottleSwThermalSlowdown);
  EXPECT_EQ(h100.throttle_names, (std::vector<std::string>{"sw_power_cap", "sw_thermal"}));

  const GpuTelemetry& t4 = (*sample)[1];
  EXPECT_EQ(t4.utilization_pct, 0);
  EXPECT_EQ(t4.memory_used_mb, 0);
  EXPECT_DOUBLE_EQ(t4.power_w, 9.87);
  EXPECT_EQ(t4.throttle_names, std::vector<std::string>{"gpu_idle"});
}

TEST(NvmlGpuSource, OptionalSymbolsMissingLeaveFiguresUnknown) {
  // The minimal fake lacks every optional symbol but has the R535 name for throttle
  // reasons; its GPU 1 has fallen off the bus.
  auto source = NvmlGpuSource(FAKE_NVML_MINIMAL_PATH);
  auto gpus = source->Inventory();
  ASSERT_TRUE(gpus.ok()) << gpus.status().ToString();
  ASSERT_EQ(gpus->size(), 1u);
  const GpuInfo& g = (*gpus)[0];
  EXPECT_EQ(g.uuid, "GPU-11111111-2222-3333-4444-555555555555");
  EXPECT_EQ(g.catalog_id, "h100-sxm-80gb");
  EXPECT_EQ(g.vram_mb, 81559);
  EXPECT_EQ(g.driver_version, "");
  EXPECT_EQ(g.cuda_driver_version, "");
  EXPECT_EQ(g.pcie_gen_max, -1);
  EXPECT_EQ(g.pcie_width_current, -1);
  EXPECT_EQ(g.power_limit_w, -1);

  auto sample = source->Sample();
  ASSERT_TRUE(sample.ok()) << sample.status().ToString();
  ASSERT_EQ(sample->size(), 1u);
  const GpuTelemetry& t = (*sample)[0];
  EXPECT_EQ(t.utilization_pct, -1);
  EXPECT_EQ(t.memory_used_mb, 2048);
  EXPECT_EQ(t.temperature_c, -1);
  EXPECT_EQ(t.power_w, -1);
  EXPECT_EQ(t.sm_clock_mhz, -1);
  EXPECT_EQ(t.throttle_names, (std::vector<std::string>{"sw_power_cap", "sw_thermal"}));
  EXPECT_EQ(ToJson(t).at("power_w"), nullptr);
}

TEST(NvmlGpuSource, InitialisesOnceAndShutsDownOnDestruction) {
  // Holding our own reference keeps the fake's state across the source's dlclose.
  void* lib = dlopen(FAKE_NVML_FULL_PATH, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(lib, nullptr) << dlerror();
  auto init_count = reinterpret_cast<int (*)()>(dlsym(lib, "fake_nvml_init_count"));
  ASSERT_NE(init_count, nullptr);
  {
    auto source = NvmlGpuSource(FAKE_NVML_FULL_PATH);
    EXPECT_EQ(init_count(), 0);  // nothing happens before the first call
    ASSERT_TRUE(source->Inventory().ok());
    ASSERT_TRUE(source->Sample().ok());
    ASSERT_TRUE(source->Inventory().ok());
    EXPECT_EQ(init_count(), 1);
  }
  EXPECT_EQ(init_count(), 0);
  dlclose(lib);
}

TEST(NvmlGpuSource, SafeFromSeveralThreads) {
  auto source = NvmlGpuSource(FAKE_NVML_FULL_PATH);
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&] {
      for (int n = 0; n < 200; ++n) {
        auto sample = source->Sample();
        ASSERT_TRUE(sample.ok());
        EXPECT_EQ(sample->size(), 2u);
        EXPECT_EQ(source->Inventory()->size(), 2u);
      }
    });
  }
  for (auto& t : threads) t.join();
}

}  // namespace
}  // namespace gpunex::agent
