#include "agent/benchmark.h"

#include <algorithm>
#include <cmath>

#include "common/gpu_catalog.h"

namespace gpunex::agent {

StatusOr<BenchmarkRequest> ParseBenchmarkRequest(const json::object& payload) {
  FieldErrors errors;
  JsonReader r(payload, "", &errors);
  r.RejectUnknown({"benchmark_id", "gpus", "machine_phases", "sustain_s", "storage", "network"});
  BenchmarkRequest b;
  b.benchmark_id = r.String("benchmark_id", true, 64).value_or("");
  if (const json::array* gpus = r.Array("gpus", true, 0, 64)) {
    for (size_t i = 0; i < gpus->size(); ++i) {
      const std::string path = "gpus[" + std::to_string(i) + "]";
      if (!(*gpus)[i].is_object()) {
        r.Fail(path, "must be an object");
        continue;
      }
      JsonReader g((*gpus)[i].get_object(), r.PathOf(path), &errors);
      g.RejectUnknown({"uuid", "catalog_id"});
      b.gpus.push_back({g.String("uuid", true, 96).value_or(""), g.String("catalog_id", false, 64).value_or("")});
    }
  }
  b.machine_phases = r.Bool("machine_phases", false).value_or(false);
  b.sustain_s = r.Int("sustain_s", false, 0, 600).value_or(60);
  if (const json::object* s = r.Object("storage", false)) {
    JsonReader sr(*s, r.PathOf("storage"), &errors);
    sr.RejectUnknown({"file_mb", "seconds_per_phase"});
    b.storage_file_mb = sr.Int("file_mb", false, 1, 64 * 1024).value_or(1024);
    b.storage_seconds = sr.Number("seconds_per_phase", false, 0, 120).value_or(8);
  }
  if (const json::object* n = r.Object("network", false)) {
    JsonReader nr(*n, r.PathOf("network"), &errors);
    nr.RejectUnknown({"mb", "pings"});
    b.network_mb = nr.Int("mb", false, 1, 1024).value_or(256);
    b.pings = nr.Int("pings", false, 1, 1000).value_or(20);
  }
  if (!errors.empty()) return ValidationFailed(std::move(errors));
  return b;
}

StatusOr<json::object> EmulatedGpubenchResult(const GpuInfo& gpu, double factor, int64_t sustain_s) {
  const GpuModel* m = FindGpuModel(gpu.catalog_id);
  if (!m) return NotFound("no reference figures for " + gpu.name);
  const double bw = m->mem_bw_gbps * factor;
  return json::object{
      {"tool", "gpunex-gpubench"},
      {"version", "1"},
      {"emulated", true},
      {"device",
       {{"index", gpu.index},
        {"uuid", gpu.uuid},
        {"name", gpu.name},
        {"catalog_id", gpu.catalog_id},
        {"pcie_gen", std::max(gpu.pcie_gen_max, 0)},
        {"pcie_width", std::max(gpu.pcie_width_max, 0)},
        {"memory_mb", gpu.vram_mb}}},
      {"compute",
       {{"fp32_tflops", m->fp32_tflops * factor},
        {"fp16_tflops", m->fp16_tflops * factor},
        {"fp16_tensor_tflops", m->fp16_tensor_tflops * factor},
        {"bf16_tensor_tflops", m->fp16_tensor_tflops * factor},
        {"tf32_tensor_tflops", m->tf32_tensor_tflops * factor}}},
      {"memory", {{"read_gbps", bw}, {"write_gbps", bw}, {"copy_gbps", bw}, {"triad_gbps", bw}}},
      {"sustained",
       {{"seconds", sustain_s},
        {"mean_tflops", m->fp16_tensor_tflops * factor},
        {"min_tflops", m->fp16_tensor_tflops * factor},
        {"max_tflops", m->fp16_tensor_tflops * factor},
        {"cv", 0.0},
        {"min_over_median", 1.0},
        {"thermal_throttle_fraction", 0.0},
        {"power_throttle_fraction", 0.0},
        {"max_temperature_c", 60.0},
        {"mean_power_w", std::max(gpu.power_limit_w, 0) * 0.9},
        {"mean_sm_clock_mhz", 0.0},
        {"throttle_reasons", json::array{}}}},
      {"reference_fraction",
       {{"fp32", factor}, {"fp16", factor}, {"fp16_tensor", factor}, {"bf16_tensor", factor},
        {"tf32_tensor", factor}, {"memory", factor}}},
      {"sanity", {{"ok", true}, {"failures", json::array{}}}},
      {"duration_s", 0.0}};
}

std::pair<double, double> Percentiles50And99(std::vector<double> s) {
  if (s.empty()) return {0, 0};
  std::sort(s.begin(), s.end());
  auto rank = [&](double p) {
    size_t k = static_cast<size_t>(std::ceil(p * static_cast<double>(s.size())));
    return s[std::clamp<size_t>(k, 1, s.size()) - 1];
  };
  return {rank(0.50), rank(0.99)};
}

}  // namespace gpunex::agent
