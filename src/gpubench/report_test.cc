#include "gpubench/report.h"

#include <gtest/gtest.h>

#include <cmath>

#include "common/json.h"

namespace gpunex::gpubench {
namespace {

Report Sample() {
  Report r;
  r.device.uuid = "GPU-8c2b6f1e-0a1b-2c3d-4e5f-60718293a4b5";
  r.device.name = "NVIDIA H200";
  r.device.catalog_id = "h200-sxm-141gb";
  r.device.pcie_gen = 5;
  r.device.pcie_width = 16;
  r.device.sm_count = 132;
  r.device.memory_mb = 143771;
  r.compute = {60.123456, 118.5, 760.25, 790.004, 380};
  r.memory = {4100.5, 4000, 4200.25, 4150};
  std::vector<double> tflops = {780, 790, 800};
  TelemetrySample t;
  t.temperature_c = 71;
  t.power_w = 690.5;
  t.sm_clock_mhz = 1980;
  t.reasons_known = true;
  t.power_throttle = true;
  t.reasons = {"sw_power_cap"};
  r.sustained = Summarize(tflops, 60.01, std::vector<TelemetrySample>{t});
  r.reference = Fractions(r.compute, r.memory, *FindGpuModel("h200-sxm-141gb"));
  r.duration_s = 98.765;
  return r;
}

const json::object& Obj(const json::value& v, std::string_view key) {
  return v.as_object().at(key).as_object();
}

TEST(ReportJson, HasExactlyTheContractsShape) {
  auto parsed = ParseJson(ReportJson(Sample()));
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  const json::value& v = *parsed;
  std::vector<std::string> keys;
  for (const auto& kv : v.as_object()) keys.emplace_back(kv.key());
  EXPECT_EQ(keys,
            (std::vector<std::string>{"tool", "version", "emulated", "device", "compute", "memory",
                                      "sustained", "reference_fraction", "sanity", "duration_s"}));
  EXPECT_EQ(v.at("tool"), "gpunex-gpubench");
  EXPECT_EQ(v.at("version"), "1");
  EXPECT_EQ(v.at("emulated"), false);

  const auto members = [](const json::object& o) {
    std::vector<std::string> k;
    for (const auto& kv : o) k.emplace_back(kv.key());
    return k;
  };
  EXPECT_EQ(members(Obj(v, "device")),
            (std::vector<std::string>{"index", "uuid", "name", "catalog_id", "pcie_gen",
                                      "pcie_width", "sm_count", "memory_mb"}));
  EXPECT_EQ(members(Obj(v, "compute")),
            (std::vector<std::string>{"fp32_tflops", "fp16_tflops", "fp16_tensor_tflops",
                                      "bf16_tensor_tflops", "tf32_tensor_tflops"}));
  EXPECT_EQ(members(Obj(v, "memory")),
            (std::vector<std::string>{"read_gbps", "write_gbps", "copy_gbps", "triad_gbps"}));
  EXPECT_EQ(members(Obj(v, "sustained")),
            (std::vector<std::string>{"seconds", "mean_tflops", "min_tflops", "max_tflops", "cv",
                                      "min_over_median", "thermal_throttle_fraction",
                                      "power_throttle_fraction", "max_temperature_c",
                                      "mean_power_w", "mean_sm_clock_mhz", "throttle_reasons"}));
  EXPECT_EQ(members(Obj(v, "reference_fraction")),
            (std::vector<std::string>{"fp32", "fp16", "fp16_tensor", "bf16_tensor", "tf32_tensor",
                                      "memory"}));
  EXPECT_EQ(members(Obj(v, "sanity")), (std::vector<std::string>{"ok", "failures"}));

  // Every figure is a number.
  for (const char* section : {"compute", "memory", "reference_fraction"}) {
    for (const auto& kv : Obj(v, section)) EXPECT_TRUE(kv.value().is_number()) << kv.key();
  }
  for (const auto& kv : Obj(v, "sustained")) {
    if (kv.key() != "throttle_reasons") {
      EXPECT_TRUE(kv.value().is_number()) << kv.key();
    }
  }
}

TEST(ReportJson, WritesTheFiguresRounded) {
  EXPECT_EQ(
      ReportJson(Sample()),
      R"({"tool":"gpunex-gpubench","version":"1","emulated":false,)"
      R"("device":{"index":0,"uuid":"GPU-8c2b6f1e-0a1b-2c3d-4e5f-60718293a4b5",)"
      R"("name":"NVIDIA H200","catalog_id":"h200-sxm-141gb","pcie_gen":5,"pcie_width":16,)"
      R"("sm_count":132,"memory_mb":143771},)"
      R"("compute":{"fp32_tflops":60.12,"fp16_tflops":118.5,"fp16_tensor_tflops":760.25,)"
      R"("bf16_tensor_tflops":790,"tf32_tensor_tflops":380},)"
      R"("memory":{"read_gbps":4100.5,"write_gbps":4000,"copy_gbps":4200.25,"triad_gbps":4150},)"
      R"("sustained":{"seconds":60.01,"mean_tflops":790,"min_tflops":780,"max_tflops":800,)"
      R"("cv":0.0103,"min_over_median":0.9873,"thermal_throttle_fraction":0,)"
      R"("power_throttle_fraction":1,"max_temperature_c":71,"mean_power_w":690.5,)"
      R"("mean_sm_clock_mhz":1980,"throttle_reasons":["sw_power_cap"]},)"
      R"("reference_fraction":{"fp32":0.8987,"fp16":0.8857,"fp16_tensor":0.7684,)"
      R"("bf16_tensor":0.7985,"tf32_tensor":0.7681,"memory":0.8646},)"
      R"("sanity":{"ok":true,"failures":[]},"duration_s":98.77})");
}

TEST(Fractions, AreFiguresOverTheModelsReference) {
  const GpuModel& a100 = *FindGpuModel("a100-sxm-80gb");
  ComputeFigures c{19.5, 39, 156, 312, 78};
  MemoryFigures m{0, 0, 0, 2039};
  ReferenceFractions f = Fractions(c, m, a100);
  EXPECT_DOUBLE_EQ(f.fp32, 1);
  EXPECT_DOUBLE_EQ(f.fp16, 0.5);
  EXPECT_DOUBLE_EQ(f.fp16_tensor, 0.5);
  EXPECT_DOUBLE_EQ(f.bf16_tensor, 1);  // against the FP16/BF16 tensor reference
  EXPECT_DOUBLE_EQ(f.tf32_tensor, 0.5);
  EXPECT_DOUBLE_EQ(f.memory, 1);  // triad over the reference bandwidth
}

TEST(ReportJson, UnknownFiguresAreZeroAndAnUnknownModelHasNoFractions) {
  Report r = Sample();
  r.device.catalog_id.clear();
  r.device.pcie_gen = -1;
  r.device.pcie_width = -1;
  r.reference.reset();
  r.sustained = Summarize(std::vector<double>{1, 2}, 2, {});  // no NVML samples
  r.compute.fp32_tflops = std::nan("");
  auto parsed = ParseJson(ReportJson(r));
  ASSERT_TRUE(parsed.ok());
  const json::value& v = *parsed;
  EXPECT_FALSE(v.as_object().contains("reference_fraction"));
  EXPECT_TRUE(v.at("device").at("catalog_id").is_null());
  EXPECT_EQ(v.at("device").at("pcie_gen"), 0);
  EXPECT_EQ(v.at("device").at("pcie_width"), 0);
  EXPECT_EQ(v.at("compute").at("fp32_tflops"), 0);
  for (const char* key : {"thermal_throttle_fraction", "power_throttle_fraction",
                          "max_temperature_c", "mean_power_w", "mean_sm_clock_mhz"}) {
    EXPECT_EQ(v.at("sustained").at(key), 0) << key;
  }
  EXPECT_EQ(v.at("sustained").at("mean_tflops"), 1.5);
  EXPECT_TRUE(v.at("sustained").at("throttle_reasons").as_array().empty());

  // --sustain-s 0: no phase, every sustained figure 0 and still a number.
  r.sustained = Summarize({}, 0, {});
  parsed = ParseJson(ReportJson(r));
  ASSERT_TRUE(parsed.ok());
  for (const auto& kv : parsed->at("sustained").as_object()) {
    if (kv.key() == "throttle_reasons") continue;
    EXPECT_TRUE(kv.value().is_number()) << kv.key();
    EXPECT_EQ(kv.value().to_number<double>(), 0) << kv.key();
  }
}

TEST(ReportJson, ListsSanityFailuresEscaped) {
  Report r = Sample();
  r.sanity_failures = {"bf16_tensor n=8192: relative error 0.98 exceeds 0.02",
                       "odd \"name\"\\\n\x01"};
  auto parsed = ParseJson(ReportJson(r));
  ASSERT_TRUE(parsed.ok()) << ReportJson(r);
  const json::value& sanity = parsed->at("sanity");
  EXPECT_EQ(sanity.at("ok"), false);
  ASSERT_EQ(sanity.at("failures").as_array().size(), 2u);
  EXPECT_EQ(sanity.at("failures").at(0), "bf16_tensor n=8192: relative error 0.98 exceeds 0.02");
  EXPECT_EQ(sanity.at("failures").at(1), "odd \"name\"\\\n\x01");
}

TEST(ErrorJson, CarriesTheMessage) {
  EXPECT_EQ(ErrorJson("no CUDA device is visible"),
            R"({"tool":"gpunex-gpubench","version":"1","error":"no CUDA device is visible"})");
}

}  // namespace
}  // namespace gpunex::gpubench
