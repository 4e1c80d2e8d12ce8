#include "agent/gpu/gpu_source.h"

#include <bit>

namespace gpunex::agent {

GpuSource::~GpuSource() = default;

std::vector<std::string> ThrottleReasonNames(uint64_t mask) {
  static constexpr const char* kNames[] = {
      "gpu_idle",
      "applications_clocks_setting",
      "sw_power_cap",
      "hw_slowdown",
      "sync_boost",
      "sw_thermal",
      "hw_thermal",
      "hw_power_brake",
      "display_clock_setting",
  };
  std::vector<std::string> names;
  for (; mask != 0; mask &= mask - 1) {
    int bit = std::countr_zero(mask);
    if (bit < static_cast<int>(std::size(kNames))) {
      names.emplace_back(kNames[bit]);
    } else {
      names.push_back("bit_" + std::to_string(bit));
    }
  }
  return names;
}

namespace {

json::value IntOrNull(int64_t v) { return v < 0 ? json::value(nullptr) : json::value(v); }
json::value TextOrNull(const std::string& s) {
  return s.empty() ? json::value(nullptr) : json::value(s);
}

}  // namespace

json::object ToJson(const GpuInfo& gpu) {
  json::object o;
  o["index"] = gpu.index;
  o["uuid"] = gpu.uuid;
  o["name"] = gpu.name;
  o["catalog_id"] = gpu.catalog_id.empty() ? "other" : gpu.catalog_id;
  o["vram_mb"] = gpu.vram_mb;
  o["driver_version"] = TextOrNull(gpu.driver_version);
  o["cuda_driver_version"] = TextOrNull(gpu.cuda_driver_version);
  o["pcie_gen_max"] = IntOrNull(gpu.pcie_gen_max);
  o["pcie_gen_current"] = IntOrNull(gpu.pcie_gen_current);
  o["pcie_width_max"] = IntOrNull(gpu.pcie_width_max);
  o["pcie_width_current"] = IntOrNull(gpu.pcie_width_current);
  o["power_limit_w"] = IntOrNull(gpu.power_limit_w);
  o["emulated"] = gpu.emulated;
  return o;
}

json::object ToJson(const GpuTelemetry& t) {
  json::object o;
  o["uuid"] = t.uuid;
  o["utilization_pct"] = IntOrNull(t.utilization_pct);
  o["memory_used_mb"] = IntOrNull(t.memory_used_mb);
  o["temperature_c"] = IntOrNull(t.temperature_c);
  o["power_w"] = t.power_w < 0 ? json::value(nullptr) : json::value(t.power_w);
  o["sm_clock_mhz"] = IntOrNull(t.sm_clock_mhz);
  json::array names;
  for (const auto& n : t.throttle_names) names.emplace_back(n);
  o["throttle_reasons"] = std::move(names);
  return o;
}

}  // namespace gpunex::agent
