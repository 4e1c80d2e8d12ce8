// TEST DOUBLE, not NVIDIA code: a stand-in for libnvidia-ml.so.1 that exports the NVML
// entry points NvmlGpuSource uses, with canned answers, so that the dlopen/dlsym path,
// the unit conversions and the throttle decoding are tested on machines without a GPU.
// Never install or ship it.
//
// Built three ways (see ../CMakeLists.txt):
//   default               two healthy GPUs, an H100 SXM and a Tesla T4 (not in the
//                         catalog); exports the pre-R535 name
//                         nvmlDeviceGetCurrentClocksThrottleReasons.
//   FAKE_NVML_MINIMAL     only the symbols NvmlGpuSource requires, plus the R535 name
//                         nvmlDeviceGetCurrentClocksEventReasons; GPU 1 has fallen off
//                         the bus (NVML_ERROR_GPU_IS_LOST).
//   FAKE_NVML_NO_DRIVER   nvmlInit_v2 fails with NVML_ERROR_DRIVER_NOT_LOADED.
#include <cstring>

namespace {

struct FakeDevice {
  const char* uuid;
  const char* name;
  unsigned long long total_bytes, used_bytes;
  unsigned int pcie_gen_max, pcie_gen_current, pcie_width_max, pcie_width_current;
  unsigned int power_limit_mw, power_usage_mw;
  unsigned int utilization_gpu, temperature_c, sm_clock_mhz;
  unsigned long long throttle_reasons;
  bool lost;
};

FakeDevice devices[] = {
    {"GPU-11111111-2222-3333-4444-555555555555", "NVIDIA H100 80GB HBM3", 85520809984ULL,
     2147483648ULL, 5, 5, 16, 16, 700000, 123456, 37, 41, 1980, 0x4 | 0x20, false},
    {"GPU-66666666-7777-8888-9999-aaaaaaaaaaaa", "Tesla T4", 16106127360ULL, 0ULL, 3, 1, 16, 8,
     70000, 9870, 0, 33, 300, 0x1,
#ifdef FAKE_NVML_MINIMAL
     true
#else
     false
#endif
    },
};

// nvmlReturn_t values; each variant uses some.
enum NvmlResult : int {
  kSuccess = 0,
  kErrorUninitialized = 1,
  kErrorInvalidArgument = 2,
  kErrorInsufficientSize = 7,
  kErrorDriverNotLoaded = 9,
  kErrorGpuIsLost = 15,
};

int init_count = 0;  // nvmlInit_v2 calls not yet matched by nvmlShutdown

int CopyText(const char* text, char* out, unsigned int length) {
  if (std::strlen(text) + 1 > length) return kErrorInsufficientSize;
  std::strcpy(out, text);
  return kSuccess;
}

// The device behind a handle, or nullptr when NVML would refuse it.
FakeDevice* Dev(void* handle) {
  if (init_count == 0) return nullptr;
  return static_cast<FakeDevice*>(handle);
}

}  // namespace

extern "C" {

// Test hook, not NVML: how many nvmlInit_v2 calls are not yet shut down.
int fake_nvml_init_count() { return init_count; }

int nvmlInit_v2() {
#ifdef FAKE_NVML_NO_DRIVER
  return kErrorDriverNotLoaded;
#else
  ++init_count;
  return kSuccess;
#endif
}

int nvmlShutdown() {
  if (init_count == 0) return kErrorUninitialized;
  --init_count;
  return kSuccess;
}

#ifndef FAKE_NVML_MINIMAL
const char* nvmlErrorString(int result) {
  switch (result) {
    case kSuccess:
      return "Success";
    case kErrorUninitialized:
      return "Uninitialized";
    case kErrorDriverNotLoaded:
      return "Driver Not Loaded";
    case kErrorGpuIsLost:
      return "GPU is lost";
    default:
      return "Unknown Error";
  }
}

int nvmlSystemGetDriverVersion(char* version, unsigned int length) {
  return CopyText("550.54.15", version, length);
}

int nvmlSystemGetCudaDriverVersion_v2(int* version) {
  *version = 12040;
  return kSuccess;
}
#endif

int nvmlDeviceGetCount_v2(unsigned int* count) {
  if (init_count == 0) return kErrorUninitialized;
  *count = sizeof devices / sizeof devices[0];
  return kSuccess;
}

int nvmlDeviceGetHandleByIndex_v2(unsigned int index, void** device) {
  if (init_count == 0) return kErrorUninitialized;
  if (index >= sizeof devices / sizeof devices[0]) return kErrorInvalidArgument;
  if (devices[index].lost) return kErrorGpuIsLost;
  *device = &devices[index];
  return kSuccess;
}

int nvmlDeviceGetUUID(void* device, char* uuid, unsigned int length) {
  FakeDevice* d = Dev(device);
  return d ? CopyText(d->uuid, uuid, length) : kErrorUninitialized;
}

int nvmlDeviceGetName(void* device, char* name, unsigned int length) {
  FakeDevice* d = Dev(device);
  return d ? CopyText(d->name, name, length) : kErrorUninitialized;
}

struct FakeMemory {  // nvmlMemory_t
  unsigned long long total, free, used;
};

int nvmlDeviceGetMemoryInfo(void* device, FakeMemory* memory) {
  FakeDevice* d = Dev(device);
  if (!d) return kErrorUninitialized;
  memory->total = d->total_bytes;
  memory->used = d->used_bytes;
  memory->free = d->total_bytes - d->used_bytes;
  return kSuccess;
}

#ifdef FAKE_NVML_MINIMAL
int nvmlDeviceGetCurrentClocksEventReasons(void* device, unsigned long long* reasons) {
  FakeDevice* d = Dev(device);
  if (!d) return kErrorUninitialized;
  *reasons = d->throttle_reasons;
  return kSuccess;
}
#else
#define FAKE_NVML_UINT_GETTER(fn, field)      \
  int fn(void* device, unsigned int* value) { \
    FakeDevice* d = Dev(device);              \
    if (!d) return kErrorUninitialized;       \
    *value = d->field;                        \
    return kSuccess;                          \
  }
FAKE_NVML_UINT_GETTER(nvmlDeviceGetMaxPcieLinkGeneration, pcie_gen_max)
FAKE_NVML_UINT_GETTER(nvmlDeviceGetCurrPcieLinkGeneration, pcie_gen_current)
FAKE_NVML_UINT_GETTER(nvmlDeviceGetMaxPcieLinkWidth, pcie_width_max)
FAKE_NVML_UINT_GETTER(nvmlDeviceGetCurrPcieLinkWidth, pcie_width_current)
FAKE_NVML_UINT_GETTER(nvmlDeviceGetPowerManagementLimit, power_limit_mw)
FAKE_NVML_UINT_GETTER(nvmlDeviceGetPowerUsage, power_usage_mw)
#undef FAKE_NVML_UINT_GETTER

struct FakeUtilization {  // nvmlUtilization_t
  unsigned int gpu, memory;
};

int nvmlDeviceGetUtilizationRates(void* device, FakeUtilization* utilization) {
  FakeDevice* d = Dev(device);
  if (!d) return kErrorUninitialized;
  utilization->gpu = d->utilization_gpu;
  utilization->memory = d->utilization_gpu / 2;
  return kSuccess;
}

int nvmlDeviceGetTemperature(void* device, int sensor, unsigned int* celsius) {
  FakeDevice* d = Dev(device);
  if (!d) return kErrorUninitialized;
  if (sensor != 0) return kErrorInvalidArgument;  // NVML_TEMPERATURE_GPU
  *celsius = d->temperature_c;
  return kSuccess;
}

int nvmlDeviceGetClockInfo(void* device, int type, unsigned int* mhz) {
  FakeDevice* d = Dev(device);
  if (!d) return kErrorUninitialized;
  if (type != 1) return kErrorInvalidArgument;  // NVML_CLOCK_SM
  *mhz = d->sm_clock_mhz;
  return kSuccess;
}

int nvmlDeviceGetCurrentClocksThrottleReasons(void* device, unsigned long long* reasons) {
  FakeDevice* d = Dev(device);
  if (!d) return kErrorUninitialized;
  *reasons = d->throttle_reasons;
  return kSuccess;
}
#endif

}  // extern "C"
