#include "agent/benchmark.h"

#include <gtest/gtest.h>

namespace gpunex::agent {
namespace {

TEST(BenchmarkRequest, ParsesThePlatformsPayloadAndNamesBadFields) {
  auto v = ParseJson(R"({"benchmark_id": "bmk_1", "gpus": [{"uuid": "GPU-1", "catalog_id": "l4-24gb"}],
    "machine_phases": true, "sustain_s": 30, "storage": {"file_mb": 64, "seconds_per_phase": 1.5},
    "network": {"mb": 8, "pings": 5}})");
  ASSERT_TRUE(v.ok());
  auto r = ParseBenchmarkRequest(v->get_object());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->benchmark_id, "bmk_1");
  ASSERT_EQ(r->gpus.size(), 1u);
  EXPECT_EQ(r->gpus[0].catalog_id, "l4-24gb");
  EXPECT_TRUE(r->machine_phases);
  EXPECT_EQ(r->storage_file_mb, 64);
  EXPECT_DOUBLE_EQ(r->storage_seconds, 1.5);
  EXPECT_EQ(r->pings, 5);

  auto bad = ParseJson(R"({"benchmark_id": "b", "gpus": [{"uuid": 3}], "sustain_s": 9999,
    "network": {"mb": 0}, "rm": true})");
  auto e = ParseBenchmarkRequest(bad->get_object());
  ASSERT_FALSE(e.ok());
  for (const char* f : {"gpus[0].uuid", "sustain_s", "network.mb", "rm"}) {
    EXPECT_TRUE(e.status().fields().count(f)) << f << ": " << e.status().ToString();
  }
}

TEST(EmulatedBenchmark, ReferenceFiguresTimesTheFactorLabelledEmulated) {
  GpuInfo g;
  g.index = 1;
  g.uuid = "GPU-emu-1";
  g.name = "NVIDIA L4";
  g.catalog_id = "l4-24gb";
  g.pcie_width_max = 16;
  auto r = EmulatedGpubenchResult(g, 0.5, 60);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->at("emulated").as_bool());
  EXPECT_DOUBLE_EQ(r->at("compute").at("bf16_tensor_tflops").to_number<double>(), 60.5);
  EXPECT_DOUBLE_EQ(r->at("memory").at("triad_gbps").to_number<double>(), 150.0);
  EXPECT_EQ(r->at("device").at("pcie_width").as_int64(), 16);
  g.catalog_id = "";
  EXPECT_EQ(EmulatedGpubenchResult(g, 1, 60).status().code(), StatusCode::kNotFound);
}

TEST(EmulatedBenchmark, Percentiles) {
  std::vector<double> v;
  for (int i = 100; i >= 1; --i) v.push_back(i);
  auto [p50, p99] = Percentiles50And99(v);
  EXPECT_EQ(p50, 50);
  EXPECT_EQ(p99, 99);
  EXPECT_EQ(Percentiles50And99({}).first, 0);
  EXPECT_EQ(Percentiles50And99({7}).second, 7);
}

}  // namespace
}  // namespace gpunex::agent
