#include "platform/benchmarks/score.h"

#include <gtest/gtest.h>

#include "common/json.h"

namespace gpunex::platform::benchmarks {
namespace {

// The worked example of docs/performance-score.md: an L4 measured at these figures.
GpuFigures WorkedExampleL4() {
  GpuFigures f;
  f.fp32_tflops = 27.0;
  f.fp16_tflops = 26.5;
  f.fp16_tensor_tflops = 98.0;
  f.bf16_tensor_tflops = 99.0;
  f.tf32_tensor_tflops = 47.0;
  f.mem_triad_gbps = 255.0;
  f.sustained_seconds = 60;
  f.sustained_min_over_median = 0.97;
  f.thermal_throttle_fraction = 0.0;
  f.pcie_width = 16;
  return f;
}

TEST(PerformanceScore, WorkedExampleFromTheDocs) {
  EXPECT_NEAR(PerformanceScore(WorkedExampleL4()), 28.48, 0.01);
}

TEST(PerformanceScore, A100AtItsReferenceScores100AndScaleIsGeometric) {
  const GpuModel& a100 = *FindGpuModel("a100-sxm-80gb");
  GpuFigures f;
  f.fp32_tflops = a100.fp32_tflops;
  f.fp16_tflops = a100.fp16_tflops;
  f.fp16_tensor_tflops = f.bf16_tensor_tflops = a100.fp16_tensor_tflops;
  f.tf32_tensor_tflops = a100.tf32_tensor_tflops;
  f.mem_triad_gbps = a100.mem_bw_gbps;
  EXPECT_NEAR(PerformanceScore(f), 100.0, 1e-9);
  // Every figure at 90% → 90: the weights sum to 1.
  for (double* x : {&f.fp32_tflops, &f.fp16_tflops, &f.fp16_tensor_tflops, &f.bf16_tensor_tflops,
                    &f.tf32_tensor_tflops, &f.mem_triad_gbps}) {
    *x *= 0.9;
  }
  EXPECT_NEAR(PerformanceScore(f), 90.0, 1e-9);
  // Only memory halved → 100 · 0.9 · 0.5^0.35.
  f.mem_triad_gbps /= 2;
  EXPECT_NEAR(PerformanceScore(f), 90.0 * std::pow(0.5, 0.35), 1e-9);
  // A figure of zero does not make the score zero or NaN.
  f.fp32_tflops = 0;
  EXPECT_GT(PerformanceScore(f), 0);
}

TEST(Thresholds, WorkedExamplePassesAndEachShortfallIsNamed) {
  const GpuModel* l4 = FindGpuModel("l4-24gb");
  ASSERT_NE(l4, nullptr);
  Thresholds t;
  EXPECT_TRUE(CheckGpu(WorkedExampleL4(), l4, 16, t).empty());

  GpuFigures slow = WorkedExampleL4();
  slow.mem_triad_gbps = 209.0;  // the L4 needs 0.70 · 300 = 210 GB/s
  slow.thermal_throttle_fraction = 0.5;
  slow.pcie_width = 8;
  auto fails = CheckGpu(slow, l4, 16, t);
  std::vector<std::string> metrics;
  for (const auto& f : fails) metrics.push_back(f.metric);
  EXPECT_EQ(metrics, (std::vector<std::string>{"memory_triad_gbps", "thermal_throttle_fraction",
                                               "pcie_width"}));
  EXPECT_NEAR(fails[0].required, 210.0, 1e-9);
  EXPECT_NE(fails[1].guidance.find("airflow"), std::string::npos);
  EXPECT_NE(fails[2].guidance.find("x8 of x16"), std::string::npos);
  EXPECT_EQ(Describe({fails[0]}), "memory_triad_gbps 209 < 210 required");
}

TEST(Thresholds, WrongResultsFailWhateverTheSpeed) {
  GpuFigures f = WorkedExampleL4();
  f.bf16_tensor_tflops = 10000;  // garbage computed fast
  f.sanity_ok = false;
  f.sanity_failures = {"bf16 GEMM: 3 of 64 sampled outputs wrong"};
  auto fails = CheckGpu(f, FindGpuModel("l4-24gb"), 16, Thresholds{});
  ASSERT_EQ(fails.size(), 2u);
  EXPECT_EQ(fails[0].metric, "sanity");
  EXPECT_NE(fails[0].guidance.find("3 of 64"), std::string::npos);
  // And no L4 computes 10,000 TFLOPS: the figure is not believed either.
  EXPECT_EQ(fails[1].metric, "implausible.bf16_tensor_tflops");
  EXPECT_EQ(Describe({fails[1]}), "bf16_tensor_tflops 10000 > 157 plausible");
}

TEST(Thresholds, UnknownModelsAreCheckedForHealthOnly) {
  GpuFigures f = WorkedExampleL4();
  f.fp32_tflops = 0.1;
  EXPECT_TRUE(CheckGpu(f, nullptr, 0, Thresholds{}).empty());
  f.sustained_min_over_median = 0.5;
  ASSERT_EQ(CheckGpu(f, nullptr, 0, Thresholds{}).size(), 1u);
}

TEST(Thresholds, MachineFigures) {
  Thresholds t;
  EXPECT_TRUE(CheckNetwork({10, 20, 900, 400}, t).empty());
  auto n = CheckNetwork({400, 900, 50, 10}, t);
  ASSERT_EQ(n.size(), 3u);
  EXPECT_EQ(n[0].metric, "network.download_mbit_s");
  EXPECT_EQ(n[2].metric, "network.rtt_p50_ms");
  StorageFigures s{500, 400, 50000, 80, 300, true};
  EXPECT_TRUE(CheckStorage(s, t).empty());
  s.rand_read_iops = 150;  // a spinning disk
  auto d = CheckStorage(s, t);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_NE(d[0].guidance.find("NVMe"), std::string::npos);
}

TEST(GpubenchJson, ParsesTheToolsOutputAndRefusesBadFigures) {
  auto v = ParseJson(R"({"tool": "gpunex-gpubench", "version": "1", "emulated": false,
    "device": {"index": 0, "uuid": "GPU-1", "name": "NVIDIA L4", "catalog_id": "l4-24gb",
               "pcie_gen": 4, "pcie_width": 16, "sm_count": 58, "memory_mb": 23034},
    "compute": {"fp32_tflops": 27, "fp16_tflops": 26.5, "fp16_tensor_tflops": 98,
                "bf16_tensor_tflops": 99, "tf32_tensor_tflops": 47},
    "memory": {"read_gbps": 270, "write_gbps": 260, "copy_gbps": 250, "triad_gbps": 255},
    "sustained": {"seconds": 60, "mean_tflops": 97, "min_tflops": 95, "max_tflops": 99, "cv": 0.01,
                  "min_over_median": 0.97, "thermal_throttle_fraction": 0,
                  "power_throttle_fraction": 0.3,
                  "max_temperature_c": 71, "mean_power_w": 70, "mean_sm_clock_mhz": 2000,
                  "throttle_reasons": ["sw_power_cap"]},
    "reference_fraction": {"fp32": 0.89},
    "sanity": {"ok": true, "failures": []}, "duration_s": 95})");
  ASSERT_TRUE(v.ok());
  auto f = protocol::ParseGpubenchFigures(v->get_object(), "result");
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_NEAR(PerformanceScore(*f), 28.48, 0.01);
  EXPECT_EQ(f->pcie_width, 16);
  EXPECT_DOUBLE_EQ(f->power_throttle_fraction, 0.3);

  v->get_object()["compute"].as_object()["bf16_tensor_tflops"] = -5;
  v->get_object()["sustained"].as_object()["thermal_throttle_fraction"] = 1.5;
  auto bad = protocol::ParseGpubenchFigures(v->get_object(), "gpus[0].result");
  ASSERT_FALSE(bad.ok());
  EXPECT_TRUE(bad.status().fields().count("gpus[0].result.compute.bf16_tensor_tflops"));
  EXPECT_TRUE(bad.status().fields().count("gpus[0].result.sustained.thermal_throttle_fraction"));
}

}  // namespace
}  // namespace gpunex::platform::benchmarks
