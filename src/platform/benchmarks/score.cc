#include "platform/benchmarks/score.h"

#include <cmath>
#include <cstdio>

namespace gpunex::platform::benchmarks {
namespace {

std::string Fmt(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, v >= 100 ? "%.0f" : v >= 10 ? "%.1f" : "%.2f", v);
  return buf;
}

}  // namespace

double PerformanceScore(const GpuFigures& f, const ScoreWeights& w) {
  static const GpuModel base = *FindGpuModel("a100-sxm-80gb");
  double log_sum = 0;
  auto term = [&](double measured, double reference, double weight) {
    double ratio = std::max(measured / reference, 0.01);
    log_sum += weight * std::log(ratio);
  };
  term(f.fp32_tflops, base.fp32_tflops, w.fp32);
  term(f.fp16_tflops, base.fp16_tflops, w.fp16);
  term(f.fp16_tensor_tflops, base.fp16_tensor_tflops, w.fp16_tensor);
  term(f.bf16_tensor_tflops, base.fp16_tensor_tflops, w.bf16_tensor);
  term(f.tf32_tensor_tflops, base.tf32_tensor_tflops, w.tf32_tensor);
  term(f.mem_triad_gbps, base.mem_bw_gbps, w.memory);
  return 100.0 * std::exp(log_sum);
}

Status ApplyThresholdOverrides(const std::map<std::string, double>& overrides,
                               const std::string& where, Thresholds* t) {
  struct Field {
    double Thresholds::*member;
    bool fraction;
  };
  static const std::map<std::string, Field> kFields = {
      {"fp32", {&Thresholds::fp32, true}},
      {"fp16", {&Thresholds::fp16, true}},
      {"fp16_tensor", {&Thresholds::fp16_tensor, true}},
      {"bf16_tensor", {&Thresholds::bf16_tensor, true}},
      {"tf32_tensor", {&Thresholds::tf32_tensor, true}},
      {"memory", {&Thresholds::memory, true}},
      {"min_over_median", {&Thresholds::min_over_median, true}},
      {"thermal_throttle_fraction", {&Thresholds::thermal_throttle_fraction, true}},
      {"plausible_ceiling", {&Thresholds::plausible_ceiling, false}},
      {"download_mbit_s", {&Thresholds::download_mbit_s, false}},
      {"upload_mbit_s", {&Thresholds::upload_mbit_s, false}},
      {"rtt_p50_ms", {&Thresholds::rtt_p50_ms, false}},
      {"seq_read_mb_s", {&Thresholds::seq_read_mb_s, false}},
      {"seq_write_mb_s", {&Thresholds::seq_write_mb_s, false}},
      {"rand_read_iops", {&Thresholds::rand_read_iops, false}},
  };
  for (const auto& [name, value] : overrides) {
    auto it = kFields.find(name);
    if (it == kFields.end())
      return InvalidArgument(where + "." + name + ": is not a known threshold");
    if (!std::isfinite(value) || value < 0 || (it->second.fraction && value > 1)) {
      return InvalidArgument(where + "." + name + ": must be " +
                             (it->second.fraction ? "a fraction between 0 and 1" : "a number ≥ 0"));
    }
    t->*(it->second.member) = value;
  }
  return Status::Ok();
}

namespace {

constexpr char kComputeGuidance[] =
    "Compute throughput is below what this model reaches when healthy: check cooling (airflow, "
    "fans, dust) and thermal throttling, the power limit (nvidia-smi -q -d POWER,PERFORMANCE), "
    "and that no other process uses the GPU.";
constexpr char kMemoryGuidance[] =
    "Memory bandwidth is low: check memory temperature and clocks, "
    "ECC errors and retired pages (nvidia-smi -q -d ECC,PAGE_RETIREMENT), "
    "and that no other process uses the GPU.";

constexpr char kImplausibleGuidance[] =
    "The figure is above what this GPU model can reach: the result is not believed and the GPU "
    "is not offered. If the agent or its GPU source was changed, restore the official "
    "gpunex-agent; if the GPU is another model than the one it reports, it must be listed as "
    "what it is.";
constexpr char kImplausiblePrefix[] = "implausible.";

// A failure when `measured` is below `limit` (or above it, for a maximum).
void Require(std::vector<Failure>& out, const char* metric, double measured, double limit,
             bool is_maximum, const char* guidance) {
  if (is_maximum ? measured > limit : measured < limit) {
    out.push_back({metric, measured, limit, guidance});
  }
}

}  // namespace

std::vector<Failure> CheckGpu(const GpuFigures& f, const GpuModel* model, int64_t pcie_width_max,
                              const Thresholds& t) {
  std::vector<Failure> out;
  if (!f.sanity_ok) {
    std::string what;
    for (const auto& s : f.sanity_failures) what += (what.empty() ? "" : "; ") + s;
    out.push_back({"sanity", 0, 1,
                   "The GPU computed wrong results" +
                       (what.empty() ? std::string() : " (" + what + ")") +
                       ": check for memory errors (nvidia-smi -q -d ECC), remove overclocking, "
                       "update the driver; faulty hardware must be replaced."});
  }
  if (model) {
    auto check = [&](const char* metric, double measured, double reference, double fraction,
                     const char* guidance) {
      Require(out, metric, measured, reference * fraction, false, guidance);
    };
    check("fp32_tflops", f.fp32_tflops, model->fp32_tflops, t.fp32, kComputeGuidance);
    check("fp16_tflops", f.fp16_tflops, model->fp16_tflops, t.fp16, kComputeGuidance);
    check("fp16_tensor_tflops", f.fp16_tensor_tflops, model->fp16_tensor_tflops, t.fp16_tensor,
          kComputeGuidance);
    check("bf16_tensor_tflops", f.bf16_tensor_tflops, model->fp16_tensor_tflops, t.bf16_tensor,
          kComputeGuidance);
    check("tf32_tensor_tflops", f.tf32_tensor_tflops, model->tf32_tensor_tflops, t.tf32_tensor,
          kComputeGuidance);
    check("memory_triad_gbps", f.mem_triad_gbps, model->mem_bw_gbps, t.memory, kMemoryGuidance);
    const std::pair<const char*, std::pair<double, double>> figures[] = {
        {"fp32_tflops", {f.fp32_tflops, model->fp32_tflops}},
        {"fp16_tflops", {f.fp16_tflops, model->fp16_tflops}},
        {"fp16_tensor_tflops", {f.fp16_tensor_tflops, model->fp16_tensor_tflops}},
        {"bf16_tensor_tflops", {f.bf16_tensor_tflops, model->fp16_tensor_tflops}},
        {"tf32_tensor_tflops", {f.tf32_tensor_tflops, model->tf32_tensor_tflops}},
        {"memory_triad_gbps", {f.mem_triad_gbps, model->mem_bw_gbps}},
    };
    for (const auto& [metric, mr] : figures) {
      const double ceiling = mr.second * t.plausible_ceiling;
      if (mr.first > ceiling) {
        out.push_back(
            {std::string(kImplausiblePrefix) + metric, mr.first, ceiling, kImplausibleGuidance});
      }
    }
  }
  if (f.sustained_seconds > 0 && f.sustained_min_over_median < t.min_over_median) {
    out.push_back(
        {"sustained_min_over_median", f.sustained_min_over_median, t.min_over_median,
         "Throughput fell under sustained load (to " + Fmt(100 * f.sustained_min_over_median) +
             "% of its median): usually thermal or power throttling; check cooling and the power "
             "supply."});
  }
  if (f.thermal_throttle_fraction > t.thermal_throttle_fraction) {
    out.push_back({"thermal_throttle_fraction", f.thermal_throttle_fraction,
                   t.thermal_throttle_fraction,
                   "The GPU throttled for heat during " + Fmt(100 * f.thermal_throttle_fraction) +
                       "% of the sustained load (max " + Fmt(f.max_temperature_c) +
                       " °C): improve airflow and cooling, clean the heatsink, check fan speeds."});
  }
  if (pcie_width_max > 0 && f.pcie_width > 0 && f.pcie_width < pcie_width_max) {
    out.push_back({"pcie_width", static_cast<double>(f.pcie_width),
                   static_cast<double>(pcie_width_max),
                   "The PCIe link runs at x" + std::to_string(f.pcie_width) + " of x" +
                       std::to_string(pcie_width_max) +
                       ": reseat the card or riser, use a full-width slot, "
                       "check the BIOS PCIe settings."});
  }
  return out;
}

std::vector<Failure> CheckNetwork(const NetworkFigures& f, const Thresholds& t) {
  constexpr char kGuidance[] =
      "The network between this machine and the platform is slow: check the uplink and its "
      "contracted speed, cabling and switch ports, and that no other traffic saturates it.";
  std::vector<Failure> out;
  Require(out, "network.download_mbit_s", f.download_mbit_s, t.download_mbit_s, false, kGuidance);
  Require(out, "network.upload_mbit_s", f.upload_mbit_s, t.upload_mbit_s, false, kGuidance);
  Require(out, "network.rtt_p50_ms", f.rtt_p50_ms, t.rtt_p50_ms, true,
          "The round trip to the platform is long: check for congestion, a saturated uplink, "
          "or a proxy in the way.");
  return out;
}

std::vector<Failure> CheckStorage(const StorageFigures& f, const Thresholds& t) {
  constexpr char kGuidance[] =
      "The disk where datasets live (the agent's work area) is slow: put it on a local NVMe SSD, "
      "not a network share or a spinning disk, and check that the disk is not nearly full.";
  std::vector<Failure> out;
  Require(out, "storage.seq_read_mb_s", f.seq_read_mb_s, t.seq_read_mb_s, false, kGuidance);
  Require(out, "storage.seq_write_mb_s", f.seq_write_mb_s, t.seq_write_mb_s, false, kGuidance);
  Require(out, "storage.rand_read_iops", f.rand_read_iops, t.rand_read_iops, false, kGuidance);
  return out;
}

std::string Describe(const std::vector<Failure>& fs) {
  std::string s;
  for (const auto& f : fs) {
    if (!s.empty()) s += "; ";
    if (f.metric == "sanity") {
      s += "wrong results";
    } else if (f.metric == "pcie_width") {
      // Lanes are whole numbers: "PCIe link x8 of x16".
      s += "PCIe link x" + std::to_string(std::llround(f.measured)) + " of x" +
           std::to_string(std::llround(f.required));
    } else if (f.metric.ends_with("_fraction") || f.metric.ends_with("over_median")) {
      s += f.metric + " " + Fmt(f.measured) + (f.measured > f.required ? " > " : " < ") +
           Fmt(f.required);
    } else if (IsImplausible(f)) {
      s += f.metric.substr(sizeof kImplausiblePrefix - 1) + " " + Fmt(f.measured) + " > " +
           Fmt(f.required) + " plausible";
    } else if (f.metric == "network.rtt_p50_ms") {
      s += f.metric + " " + Fmt(f.measured) + " > " + Fmt(f.required) + " allowed";
    } else {
      s += f.metric + " " + Fmt(f.measured) + " < " + Fmt(f.required) + " required";
    }
  }
  return s;
}

bool IsImplausible(const Failure& f) { return f.metric.starts_with(kImplausiblePrefix); }

}  // namespace gpunex::platform::benchmarks
