// Telemetry: what gpunex-gpubench reads from the driver's management library (NVML) about
// the GPU under test, by UUID: PCIe link and memory size once, and clocks, temperature,
// power and throttle reasons every ~500 ms during the sustained phase.
//
// One factory, OpenTelemetry(), linked in one of two forms: nvml_telemetry.cc (the normal
// build: the provider agent's NvmlGpuSource, NVML loaded with dlopen) or no_telemetry.cc
// (the standalone build of bench/gpubench_vs_torch.sh on a machine without the project's
// libraries: every call fails with kUnavailable). A benchmark without telemetry still
// measures; its NVML-derived figures are then 0 in the report.
//
// Units: MiB, MHz, watts, degrees Celsius; -1 where the driver gives no figure.
// Thread-safety: every Telemetry may be called from several threads at once.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace gpunex::gpubench {

// Slow-changing facts about the GPU.
struct GpuFacts {
  int pcie_gen = -1;    // current link generation (under load; idle links train down)
  int pcie_width = -1;  // current link width, lanes
  int pcie_gen_max = -1;
  int pcie_width_max = -1;
  int64_t memory_mb = -1;  // total device memory, MiB
};

// One reading.
struct TelemetrySample {
  int temperature_c = -1;
  double power_w = -1;
  int sm_clock_mhz = -1;
  bool reasons_known = false;     // whether the driver reported clocks-event reasons at all
  bool thermal_throttle = false;  // sw_thermal or hw_thermal set
  bool power_throttle = false;    // sw_power_cap or hw_power_brake set
  // Every reason set, in NVML bit order, as the agent names them ("sw_power_cap", ...).
  std::vector<std::string> reasons;
};

class Telemetry {
 public:
  virtual ~Telemetry();

  // "nvml" or "none".
  virtual std::string Kind() const = 0;

  // The facts about the GPU whose UUID is `uuid` ("GPU-8c2b6f1e-..."). Fails with
  // kUnavailable when NVML cannot be used, kNotFound when it does not list that GPU.
  virtual StatusOr<GpuFacts> Facts(std::string_view uuid) = 0;

  // One reading of that GPU. Fails as Facts() does.
  virtual StatusOr<TelemetrySample> Sample(std::string_view uuid) = 0;
};

// The telemetry of this build: NVML (normal build) or none (standalone build).
std::unique_ptr<Telemetry> OpenTelemetry();

// NVML through the agent's NvmlGpuSource, loading `library` with dlopen (tests point it at
// a fake). Normal build only (nvml_telemetry.cc). The clocks-event reasons count as known
// in every reading: the agent's source gives 0 both for "none" and for a driver without
// the call (older than R270).
std::unique_ptr<Telemetry> NvmlTelemetry(std::string library);

}  // namespace gpunex::gpubench
