#include "agent/benchmark.h"

#include <algorithm>
#include <cmath>

#include "common/gpu_catalog.h"
#include "common/log.h"

namespace gpunex::agent {

StatusOr<json::object> EmulatedGpubenchResult(const GpuInfo& gpu, double factor,
                                              int64_t sustain_s) {
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
       {{"fp32", factor},
        {"fp16", factor},
        {"fp16_tensor", factor},
        {"bf16_tensor", factor},
        {"tf32_tensor", factor},
        {"memory", factor}}},
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

StatusOr<protocol::StartWorkload> GpubenchWorkload(const std::string& benchmark_id,
                                                   const GpuInfo& gpu, int64_t sustain_s,
                                                   const std::string& image) {
  // Short, valid and unique: the policy's workload id syntax.
  std::string wid =
      std::string(kBenchWorkloadPrefix) + benchmark_id + "-" + std::to_string(gpu.index);
  if (wid.size() > protocol::kMaxWorkloadIdLength) {
    wid = wid.substr(wid.size() - protocol::kMaxWorkloadIdLength);
  }
  protocol::StartWorkload w;
  w.workload_id = wid;
  w.image = image;
  w.command = {"--uuid", gpu.uuid, "--sustain-s", std::to_string(sustain_s)};
  w.gpu_uuids = {gpu.uuid};
  w.memory_mb = 4096;
  w.cpus = 2.0;
  w.pids_limit = 256;
  w.scratch_mb = 64;
  w.timeout_s = sustain_s + 600;
  // The same checks as a workload from the platform: the image comes from the agent's
  // configuration, the ids from the platform.
  return protocol::ParseStartWorkload(protocol::ToJson(w));
}

std::string BenchmarkErrorText(const Status& status) {
  std::string text = protocol::SanitizeLogText(status.ToString());
  if (text.size() > protocol::kMaxBenchmarkErrorLength) {
    size_t n = protocol::kMaxBenchmarkErrorLength;
    while (n > 0 && (static_cast<unsigned char>(text[n]) & 0xC0) == 0x80) --n;
    text.resize(n);
  }
  return text;
}

protocol::BenchmarkResult::Gpu GpuResult(const std::string& uuid,
                                         const StatusOr<json::object>& figures) {
  protocol::BenchmarkResult::Gpu g;
  g.uuid = uuid;
  g.ok = figures.ok();
  if (figures.ok()) {
    g.result = *figures;
  } else {
    g.error = BenchmarkErrorText(figures.status());
  }
  return g;
}

protocol::BenchmarkNetwork NetworkFigures(const std::vector<double>& rtt_ms,
                                          const bench::NetworkResult& throughput) {
  auto [p50, p99] = Percentiles50And99(rtt_ms);
  return {p50, p99, throughput.download_mbit_s, throughput.upload_mbit_s};
}

protocol::BenchmarkStorage StorageFigures(const bench::StorageResult& disk) {
  return {disk.seq_read_mb_s,    disk.seq_write_mb_s,   disk.rand_read_iops,
          disk.rand_read_p50_us, disk.rand_read_p99_us, disk.direct_io};
}

protocol::BenchmarkResult RunBenchmark(const protocol::RunBenchmark& req, GpuSource& gpus,
                                       const BenchmarkSteps& steps) {
  protocol::BenchmarkResult result;
  result.benchmark_id = req.benchmark_id;
  result.emulated = gpus.Emulated();
  std::vector<GpuInfo> inventory;
  if (auto inv = gpus.Inventory(); inv.ok()) inventory = *inv;
  for (const auto& want : req.gpus) {
    auto it = std::find_if(inventory.begin(), inventory.end(),
                           [&](const GpuInfo& g) { return g.uuid == want.uuid; });
    StatusOr<json::object> figures = NotFound("the GPU is not on this machine now");
    if (it != inventory.end()) {
      figures = it->emulated ? EmulatedGpubenchResult(*it, gpus.PerfFactor(), req.sustain_s)
                             : steps.gpubench(*it, req.sustain_s);
    }
    result.gpus.push_back(GpuResult(want.uuid, figures));
  }
  if (!req.machine_phases) return result;
  // The network phase measures a path that can drop or stall for a moment; a failed
  // measurement is taken once more before it is reported.
  StatusOr<std::vector<double>> rtt = Unavailable("not measured");
  StatusOr<bench::NetworkResult> net = Unavailable("not measured");
  for (int attempt = 0; attempt < 2 && !net.ok(); ++attempt) {
    if (attempt > 0) {
      LogWarn("agent.benchmark_network_retry",
              {{"benchmark_id", req.benchmark_id}, {"error", net.status().ToString()}});
    }
    rtt = steps.round_trips(req.pings);
    net = rtt.ok() ? steps.throughput(req.network_mb << 20)
                   : StatusOr<bench::NetworkResult>(rtt.status());
  }
  if (net.ok()) {
    result.network = NetworkFigures(*rtt, *net);
  } else {
    result.network_error = BenchmarkErrorText(net.status());
  }
  auto disk = steps.storage(req.storage_file_mb << 20, req.storage_seconds);
  if (disk.ok()) {
    result.storage = StorageFigures(*disk);
  } else {
    result.storage_error = BenchmarkErrorText(disk.status());
  }
  return result;
}

}  // namespace gpunex::agent
