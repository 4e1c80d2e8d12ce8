// NvmlGpuSource: the real GPUs, through libnvidia-ml loaded with dlopen.
//
// The NVML types and entry points used are declared here, copied from nvml.h, so that
// the agent builds without NVIDIA headers and starts on hosts without a driver. Symbols
// whose absence only costs one figure are optional (the figure is then -1); the rest are
// required, and a library without them is treated like a missing one.
#include <dlfcn.h>

#include <cmath>
#include <string>
#include <utility>

#include "agent/gpu/gpu_source.h"
#include "common/gpu_catalog.h"
#include "common/log.h"
#include "common/thread_annotations.h"

namespace gpunex::agent {
namespace {

// ---- The NVML ABI (nvml.h) -------------------------------------------------------------
using NvmlReturn = int;            // nvmlReturn_t
struct NvmlDeviceSt;               // opaque
using NvmlDevice = NvmlDeviceSt*;  // nvmlDevice_t
struct NvmlMemory {                // nvmlMemory_t (v1), bytes
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};
struct NvmlUtilization {  // nvmlUtilization_t, percent
  unsigned int gpu;
  unsigned int memory;
};
constexpr NvmlReturn kNvmlSuccess = 0;
constexpr int kNvmlTemperatureGpu = 0;  // NVML_TEMPERATURE_GPU
constexpr int kNvmlClockSm = 1;         // NVML_CLOCK_SM
// NVML_DEVICE_UUID_V2_BUFFER_SIZE, NVML_DEVICE_NAME_V2_BUFFER_SIZE and
// NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE are 96, 96 and 80; one size fits all.
constexpr unsigned int kNvmlTextBuffer = 96;

using DeviceUintFn = NvmlReturn (*)(NvmlDevice, unsigned int*);

struct NvmlApi {
  // Required.
  NvmlReturn (*init)() = nullptr;      // nvmlInit_v2
  NvmlReturn (*shutdown)() = nullptr;  // nvmlShutdown
  NvmlReturn (*device_count)(unsigned int*) = nullptr;
  NvmlReturn (*device_by_index)(unsigned int, NvmlDevice*) = nullptr;
  NvmlReturn (*device_uuid)(NvmlDevice, char*, unsigned int) = nullptr;
  NvmlReturn (*device_name)(NvmlDevice, char*, unsigned int) = nullptr;
  NvmlReturn (*device_memory)(NvmlDevice, NvmlMemory*) = nullptr;
  // Optional.
  const char* (*error_string)(NvmlReturn) = nullptr;
  NvmlReturn (*driver_version)(char*, unsigned int) = nullptr;
  NvmlReturn (*cuda_driver_version)(int*) = nullptr;
  DeviceUintFn pcie_gen_max = nullptr;
  DeviceUintFn pcie_gen_current = nullptr;
  DeviceUintFn pcie_width_max = nullptr;
  DeviceUintFn pcie_width_current = nullptr;
  DeviceUintFn power_limit_mw = nullptr;
  DeviceUintFn power_usage_mw = nullptr;
  NvmlReturn (*utilization)(NvmlDevice, NvmlUtilization*) = nullptr;
  NvmlReturn (*temperature)(NvmlDevice, int, unsigned int*) = nullptr;
  NvmlReturn (*clock_mhz)(NvmlDevice, int, unsigned int*) = nullptr;
  // nvmlDeviceGetCurrentClocksEventReasons (R535 and later) or its older name
  // nvmlDeviceGetCurrentClocksThrottleReasons.
  NvmlReturn (*clocks_event_reasons)(NvmlDevice, unsigned long long*) = nullptr;
};

// Resolves `name` into `*fn`; false when the library lacks it.
template <typename Fn>
bool Resolve(void* lib, const char* name, Fn* fn) {
  void* sym = dlsym(lib, name);
  *fn = reinterpret_cast<Fn>(sym);
  return sym != nullptr;
}

// Fills `api` from `lib`. Returns the first required symbol missing, or "".
std::string ResolveAll(void* lib, NvmlApi* api) {
  std::string missing;
  auto required = [&](const char* name, auto* fn) {
    if (!Resolve(lib, name, fn) && missing.empty()) missing = name;
  };
  required("nvmlInit_v2", &api->init);
  required("nvmlShutdown", &api->shutdown);
  required("nvmlDeviceGetCount_v2", &api->device_count);
  required("nvmlDeviceGetHandleByIndex_v2", &api->device_by_index);
  required("nvmlDeviceGetUUID", &api->device_uuid);
  required("nvmlDeviceGetName", &api->device_name);
  required("nvmlDeviceGetMemoryInfo", &api->device_memory);

  Resolve(lib, "nvmlErrorString", &api->error_string);
  Resolve(lib, "nvmlSystemGetDriverVersion", &api->driver_version);
  if (!Resolve(lib, "nvmlSystemGetCudaDriverVersion_v2", &api->cuda_driver_version)) {
    Resolve(lib, "nvmlSystemGetCudaDriverVersion", &api->cuda_driver_version);
  }
  Resolve(lib, "nvmlDeviceGetMaxPcieLinkGeneration", &api->pcie_gen_max);
  Resolve(lib, "nvmlDeviceGetCurrPcieLinkGeneration", &api->pcie_gen_current);
  Resolve(lib, "nvmlDeviceGetMaxPcieLinkWidth", &api->pcie_width_max);
  Resolve(lib, "nvmlDeviceGetCurrPcieLinkWidth", &api->pcie_width_current);
  Resolve(lib, "nvmlDeviceGetPowerManagementLimit", &api->power_limit_mw);
  Resolve(lib, "nvmlDeviceGetPowerUsage", &api->power_usage_mw);
  Resolve(lib, "nvmlDeviceGetUtilizationRates", &api->utilization);
  Resolve(lib, "nvmlDeviceGetTemperature", &api->temperature);
  Resolve(lib, "nvmlDeviceGetClockInfo", &api->clock_mhz);
  if (!Resolve(lib, "nvmlDeviceGetCurrentClocksEventReasons", &api->clocks_event_reasons)) {
    Resolve(lib, "nvmlDeviceGetCurrentClocksThrottleReasons", &api->clocks_event_reasons);
  }
  return missing;
}

// fn(dev, &v), or -1 when the symbol is missing or the call fails.
int64_t ReadUint(DeviceUintFn fn, NvmlDevice dev) {
  unsigned int v = 0;
  if (fn == nullptr || fn(dev, &v) != kNvmlSuccess) return -1;
  return v;
}

// NVML encodes CUDA versions as 1000 * major + 10 * minor: 12040 -> "12.4".
std::string CudaVersionText(int v) {
  return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10);
}

class NvmlSource final : public GpuSource {
 public:
  explicit NvmlSource(std::string library) : library_(std::move(library)) {}

  ~NvmlSource() override {
    MutexLock lock(&mu_);
    if (initialized_) api_.shutdown();
    if (lib_ != nullptr) dlclose(lib_);
  }

  std::string Kind() const override { return "nvml"; }
  bool Emulated() const override { return false; }
  double PerfFactor() const override { return 1.0; }

  StatusOr<std::vector<GpuInfo>> Inventory() override EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    GPUNEX_RETURN_IF_ERROR(EnsureReadyLocked());

    std::string driver;
    char text[kNvmlTextBuffer];
    if (api_.driver_version != nullptr && api_.driver_version(text, sizeof text) == kNvmlSuccess) {
      driver = text;
    }
    std::string cuda;
    int cuda_version = 0;
    if (api_.cuda_driver_version != nullptr &&
        api_.cuda_driver_version(&cuda_version) == kNvmlSuccess && cuda_version > 0) {
      cuda = CudaVersionText(cuda_version);
    }

    GPUNEX_ASSIGN_OR_RETURN(unsigned int count, CountLocked());
    std::vector<GpuInfo> gpus;
    for (unsigned int i = 0; i < count; ++i) {
      NvmlDevice dev = nullptr;
      std::string uuid;
      if (Status s = DeviceLocked(i, &dev, &uuid); !s.ok()) {
        LogWarn("agent.gpu.unreadable", {{"index", i}, {"error", s.message()}});
        continue;
      }
      GpuInfo g;
      g.index = static_cast<int>(i);
      g.uuid = std::move(uuid);
      if (api_.device_name(dev, text, sizeof text) == kNvmlSuccess) g.name = text;
      NvmlMemory mem{};
      g.vram_mb = api_.device_memory(dev, &mem) == kNvmlSuccess
                      ? static_cast<int64_t>(mem.total / kBytesPerMib)
                      : -1;
      // Drivers report a little less than the marketing size (81559 MiB for 80 GB).
      int vram_gb = static_cast<int>(std::lround(static_cast<double>(g.vram_mb) / 1024));
      g.catalog_id = MatchNvmlName(g.name, vram_gb).value_or("");
      g.driver_version = driver;
      g.cuda_driver_version = cuda;
      g.pcie_gen_max = static_cast<int>(ReadUint(api_.pcie_gen_max, dev));
      g.pcie_gen_current = static_cast<int>(ReadUint(api_.pcie_gen_current, dev));
      g.pcie_width_max = static_cast<int>(ReadUint(api_.pcie_width_max, dev));
      g.pcie_width_current = static_cast<int>(ReadUint(api_.pcie_width_current, dev));
      int64_t limit_mw = ReadUint(api_.power_limit_mw, dev);
      g.power_limit_w = limit_mw < 0 ? -1 : static_cast<int>((limit_mw + 500) / 1000);
      gpus.push_back(std::move(g));
    }
    return gpus;
  }

  StatusOr<std::vector<GpuTelemetry>> Sample() override EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    GPUNEX_RETURN_IF_ERROR(EnsureReadyLocked());
    GPUNEX_ASSIGN_OR_RETURN(unsigned int count, CountLocked());
    std::vector<GpuTelemetry> out;
    for (unsigned int i = 0; i < count; ++i) {
      GpuTelemetry t;
      NvmlDevice dev = nullptr;
      // Inventory() logs unreadable GPUs; sampling every few seconds would repeat it.
      if (!DeviceLocked(i, &dev, &t.uuid).ok()) continue;
      NvmlUtilization util{};
      if (api_.utilization != nullptr && api_.utilization(dev, &util) == kNvmlSuccess) {
        t.utilization_pct = static_cast<int>(util.gpu);
      }
      NvmlMemory mem{};
      if (api_.device_memory(dev, &mem) == kNvmlSuccess) {
        t.memory_used_mb = static_cast<int64_t>(mem.used / kBytesPerMib);
      }
      unsigned int v = 0;
      if (api_.temperature != nullptr &&
          api_.temperature(dev, kNvmlTemperatureGpu, &v) == kNvmlSuccess) {
        t.temperature_c = static_cast<int>(v);
      }
      int64_t power_mw = ReadUint(api_.power_usage_mw, dev);
      if (power_mw >= 0) t.power_w = static_cast<double>(power_mw) / 1000;
      if (api_.clock_mhz != nullptr && api_.clock_mhz(dev, kNvmlClockSm, &v) == kNvmlSuccess) {
        t.sm_clock_mhz = static_cast<int>(v);
      }
      unsigned long long reasons = 0;
      if (api_.clocks_event_reasons != nullptr &&
          api_.clocks_event_reasons(dev, &reasons) == kNvmlSuccess) {
        t.throttle_reasons = reasons;
        t.throttle_names = ThrottleReasonNames(reasons);
      }
      out.push_back(std::move(t));
    }
    return out;
  }

 private:
  static constexpr unsigned long long kBytesPerMib = 1024 * 1024;

  // Loads the library and initialises NVML unless done; retried on every call until it
  // succeeds.
  Status EnsureReadyLocked() REQUIRES(mu_) {
    if (lib_ == nullptr) {
      dlerror();
      void* lib = dlopen(library_.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (lib == nullptr) {
        const char* why = dlerror();
        return Unavailable(
            "NVML not found: install the NVIDIA driver on the host and give the agent container "
            "the GPUs (NVIDIA Container Toolkit, --gpus all); cannot load " +
            library_ + ": " + (why != nullptr ? why : "unknown error"));
      }
      NvmlApi api;
      if (std::string missing = ResolveAll(lib, &api); !missing.empty()) {
        dlclose(lib);
        return Unavailable("NVML unusable: " + library_ + " lacks " + missing +
                           "; the NVIDIA driver is too old or the library is not NVML");
      }
      lib_ = lib;
      api_ = api;
    }
    if (!initialized_) {
      NvmlReturn r = api_.init();
      if (r != kNvmlSuccess) {
        return Unavailable("NVML did not initialise: " + ErrorTextLocked(r) +
                           ". Check that the NVIDIA driver is loaded (nvidia-smi on the host) and "
                           "that the agent container was started with --gpus all");
      }
      initialized_ = true;
    }
    return Status::Ok();
  }

  StatusOr<unsigned int> CountLocked() REQUIRES(mu_) {
    unsigned int count = 0;
    if (NvmlReturn r = api_.device_count(&count); r != kNvmlSuccess) {
      return Unavailable("NVML cannot count GPUs: " + ErrorTextLocked(r));
    }
    return count;
  }

  // The handle and UUID of GPU `index`.
  Status DeviceLocked(unsigned int index, NvmlDevice* dev, std::string* uuid) REQUIRES(mu_) {
    NvmlReturn r = api_.device_by_index(index, dev);
    char text[kNvmlTextBuffer];
    if (r == kNvmlSuccess) r = api_.device_uuid(*dev, text, sizeof text);
    if (r != kNvmlSuccess) {
      return Unavailable("NVML cannot read GPU " + std::to_string(index) + ": " +
                         ErrorTextLocked(r));
    }
    *uuid = text;
    return Status::Ok();
  }

  std::string ErrorTextLocked(NvmlReturn r) const REQUIRES(mu_) {
    const char* text = api_.error_string != nullptr ? api_.error_string(r) : nullptr;
    return std::string(text != nullptr ? text : "error") + " (NVML code " + std::to_string(r) + ")";
  }

  const std::string library_;
  Mutex mu_;
  void* lib_ GUARDED_BY(mu_) = nullptr;  // set once, with api_
  NvmlApi api_ GUARDED_BY(mu_);
  bool initialized_ GUARDED_BY(mu_) = false;  // nvmlInit succeeded, nvmlShutdown owed
};

}  // namespace

std::unique_ptr<GpuSource> NvmlGpuSource(std::string library) {
  return std::make_unique<NvmlSource>(std::move(library));
}

}  // namespace gpunex::agent
