// OpenTelemetry() through the provider agent's GPU source (src/agent/gpu): NVML loaded with
// dlopen, so the benchmark starts, and measures, even where the library is missing.
#include <memory>
#include <string>
#include <utility>

#include "agent/gpu/gpu_source.h"
#include "gpubench/cli.h"
#include "gpubench/telemetry.h"

namespace gpunex::gpubench {
namespace {

class NvmlSourceTelemetry final : public Telemetry {
 public:
  explicit NvmlSourceTelemetry(std::string library)
      : source_(agent::NvmlGpuSource(std::move(library))) {}

  std::string Kind() const override { return "nvml"; }

  StatusOr<GpuFacts> Facts(std::string_view uuid) override {
    GPUNEX_ASSIGN_OR_RETURN(std::vector<agent::GpuInfo> gpus, source_->Inventory());
    for (const agent::GpuInfo& g : gpus) {
      if (!SameGpuUuid(g.uuid, uuid)) continue;
      GpuFacts f;
      f.pcie_gen = g.pcie_gen_current;
      f.pcie_width = g.pcie_width_current;
      f.pcie_gen_max = g.pcie_gen_max;
      f.pcie_width_max = g.pcie_width_max;
      f.memory_mb = g.vram_mb;
      return f;
    }
    return NotFound("NVML does not list " + std::string(uuid));
  }

  StatusOr<TelemetrySample> Sample(std::string_view uuid) override {
    GPUNEX_ASSIGN_OR_RETURN(std::vector<agent::GpuTelemetry> readings, source_->Sample());
    for (agent::GpuTelemetry& t : readings) {
      if (!SameGpuUuid(t.uuid, uuid)) continue;
      TelemetrySample s;
      s.temperature_c = t.temperature_c;
      s.power_w = t.power_w;
      s.sm_clock_mhz = t.sm_clock_mhz;
      s.reasons_known = true;  // telemetry.h: NvmlTelemetry
      s.thermal_throttle = (t.throttle_reasons & (agent::kThrottleSwThermalSlowdown |
                                                  agent::kThrottleHwThermalSlowdown)) != 0;
      s.power_throttle = (t.throttle_reasons &
                          (agent::kThrottleSwPowerCap | agent::kThrottleHwPowerBrakeSlowdown)) != 0;
      s.reasons = std::move(t.throttle_names);
      return s;
    }
    return NotFound("NVML does not list " + std::string(uuid));
  }

 private:
  std::unique_ptr<agent::GpuSource> source_;
};

}  // namespace

std::unique_ptr<Telemetry> NvmlTelemetry(std::string library) {
  return std::make_unique<NvmlSourceTelemetry>(std::move(library));
}

std::unique_ptr<Telemetry> OpenTelemetry() { return NvmlTelemetry("libnvidia-ml.so.1"); }

}  // namespace gpunex::gpubench
