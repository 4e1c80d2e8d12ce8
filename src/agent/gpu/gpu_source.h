// GpuSource: where the provider agent learns which GPUs the host has (SPEC AGT-2) and how
// they are doing (AGT-4).
//
// Two implementations, one factory each:
//   NvmlGpuSource()      the real GPUs, through the NVIDIA Management Library, loaded
//                        with dlopen at run time so that the agent builds and starts on
//                        hosts without a driver (it then says so and reports no GPUs);
//   EmulatedGpuSource()  GPUs invented from the reference catalog, for development and
//                        end-to-end tests on machines without GPUs. Everything it reports
//                        is marked emulated.
//
// Units: MiB for memory, watts for power, MHz for clocks, degrees Celsius. A figure that
// the driver does not report is -1 (an empty string for text); ToJson writes it as null.
//
// Thread-safety: every GpuSource may be called from several threads at once.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/json.h"
#include "common/status.h"
#include "common/time.h"

namespace gpunex::agent {

// What one GPU is. Stable while the host runs; reported on connect and when it changes.
struct GpuInfo {
  int index = 0;     // NVML index, 0-based
  std::string uuid;  // "GPU-8c2b6f1e-..." (emulated: "GPU-emu-8c2b6f1e-...")
  std::string name;  // as NVML reports it: "NVIDIA H100 80GB HBM3"
  // Catalog id ("h100-sxm-80gb"); empty when the name matches no catalog model, which
  // the platform files under "other" for review.
  std::string catalog_id;
  int64_t vram_mb = 0;              // total device memory, MiB
  std::string driver_version;       // "550.54.15"
  std::string cuda_driver_version;  // highest CUDA version the driver supports: "12.4"
  int pcie_gen_max = -1;            // 1..6
  int pcie_gen_current = -1;        // idle GPUs often train the link down
  int pcie_width_max = -1;          // lanes: 1, 4, 8, 16
  int pcie_width_current = -1;
  int power_limit_w = -1;  // enforced power limit, watts
  bool emulated = false;
};

// One reading of one GPU.
struct GpuTelemetry {
  std::string uuid;
  int utilization_pct = -1;  // share of the last sample period a kernel ran, 0..100
  int64_t memory_used_mb = -1;
  int temperature_c = -1;
  double power_w = -1;  // current draw
  int sm_clock_mhz = -1;
  uint64_t throttle_reasons = 0;            // NVML clocks-event bitmask (kThrottle* below)
  std::vector<std::string> throttle_names;  // ThrottleReasonNames(throttle_reasons)
};

// NVML clocks-event ("throttle") reason bits, as in nvml.h.
inline constexpr uint64_t kThrottleGpuIdle = 0x1;
inline constexpr uint64_t kThrottleApplicationsClocksSetting = 0x2;
inline constexpr uint64_t kThrottleSwPowerCap = 0x4;
inline constexpr uint64_t kThrottleHwSlowdown = 0x8;
inline constexpr uint64_t kThrottleSyncBoost = 0x10;
inline constexpr uint64_t kThrottleSwThermalSlowdown = 0x20;
inline constexpr uint64_t kThrottleHwThermalSlowdown = 0x40;
inline constexpr uint64_t kThrottleHwPowerBrakeSlowdown = 0x80;
inline constexpr uint64_t kThrottleDisplayClockSetting = 0x100;

// Names for the set bits, lowest bit first: "gpu_idle", "applications_clocks_setting",
// "sw_power_cap", "hw_slowdown", "sync_boost", "sw_thermal", "hw_thermal",
// "hw_power_brake", "display_clock_setting"; a bit NVML may add later is "bit_<n>".
std::vector<std::string> ThrottleReasonNames(uint64_t mask);

class GpuSource {
 public:
  virtual ~GpuSource();

  // "nvml" or "emulated".
  virtual std::string Kind() const = 0;
  // Whether the GPUs are invented (true for the emulated source only).
  virtual bool Emulated() const = 0;
  // How fast these GPUs are relative to their catalog figures: 1.0 for real GPUs; the
  // emulated source's configured factor, which emulated benchmarks apply.
  virtual double PerfFactor() const = 0;

  // Every GPU, in index order; an empty list when the driver sees none. A GPU that
  // cannot be read (fallen off the bus) is left out and logged.
  // Fails with kUnavailable, and a message that says what to install or fix, when the
  // NVIDIA library or driver is missing or will not initialise; later calls try again.
  virtual StatusOr<std::vector<GpuInfo>> Inventory() = 0;

  // One reading per GPU, in index order. Fails as Inventory() does.
  virtual StatusOr<std::vector<GpuTelemetry>> Sample() = 0;
};

// The real GPUs through NVML. `library` is what dlopen is given: a file name searched
// on the library path, or a path (tests point it at a fake). Never fails to construct:
// when the library or the driver is missing, Inventory() and Sample() fail with
// kUnavailable ("NVML not found: install the NVIDIA driver ...") and the source keeps
// trying on later calls, so an agent started before the driver recovers.
std::unique_ptr<GpuSource> NvmlGpuSource(std::string library = "libnvidia-ml.so.1");

// Invented GPUs. `spec` lists catalog ids with counts, "h100-sxm-80gb:2,l4-24gb:1" (a
// missing ":count" means 1); each count is 1..64 and so is the total, and a model may be
// listed once. `perf_factor` is in (0, 2]. `seed` is a stable identity of the machine
// (its machine key, say): the same seed gives the same UUIDs, different seeds different
// ones. Telemetry is an idle GPU's, varying smoothly with `clock` and the same for the
// same time; `clock` must outlive the source.
// Fails with kInvalidArgument naming the bad part: an unknown model, a bad count,
// malformed text, a perf_factor out of range, an empty seed.
StatusOr<std::unique_ptr<GpuSource>> EmulatedGpuSource(std::string_view spec, double perf_factor,
                                                       std::string_view seed,
                                                       const Clock& clock = SystemClock());

// Wire format (agent -> platform). Unknown figures (-1, "") are null; an empty
// catalog_id is "other"; throttle_reasons is the array of names.
json::object ToJson(const GpuInfo& gpu);
json::object ToJson(const GpuTelemetry& t);

}  // namespace gpunex::agent
