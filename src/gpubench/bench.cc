#include "gpubench/bench.h"

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "common/gpu_catalog.h"
#include "gpubench/cuda_status.h"
#include "gpubench/gemm.h"
#include "gpubench/kernels.h"
#include "gpubench/numerics.h"
#include "gpubench/shared.h"

namespace gpunex::gpubench {
namespace {

using SteadyClock = std::chrono::steady_clock;

constexpr size_t kWorkspaceBytes = size_t{64} << 20;  // cuBLASLt workspace
constexpr int kThreads = 256;                         // block size of our own kernels
constexpr int kFmaCheckIters = 64;                    // iterations of the checked FMA launch
constexpr int kFmaCheckThreads = 64;                  // threads whose FMA result is checked
constexpr uint64_t kMinMemoryBuffer = uint64_t{64} << 20;
constexpr uint64_t kBufferAlign = uint64_t{2} << 20;
constexpr uint64_t kGemmHeadroom = uint64_t{512} << 20;  // left free beside a GEMM problem

void Progress(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
void Progress(const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  std::fputs("gpunex-gpubench: ", stderr);
  std::vfprintf(stderr, fmt, args);
  std::fputc('\n', stderr);
  va_end(args);
}

// A device allocation, freed on destruction.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  ~DeviceBuffer() { cudaFree(p_); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  Status Allocate(size_t bytes, std::string_view what) {
    return CudaStatus(cudaMalloc(&p_, bytes), std::string("allocating ") + std::string(what));
  }
  void* get() const { return p_; }
  template <typename T>
  T* as() const {
    return static_cast<T*>(p_);
  }

 private:
  void* p_ = nullptr;
};

// A pair of CUDA events around a span of work on a stream.
class EventPair {
 public:
  EventPair() = default;
  ~EventPair() {
    if (start_ != nullptr) cudaEventDestroy(start_);
    if (stop_ != nullptr) cudaEventDestroy(stop_);
  }
  EventPair(const EventPair&) = delete;
  EventPair& operator=(const EventPair&) = delete;

  Status Create() {
    GPUBENCH_CUDA(cudaEventCreate(&start_), "cudaEventCreate");
    return CudaStatus(cudaEventCreate(&stop_), "cudaEventCreate");
  }
  cudaEvent_t start() const { return start_; }
  cudaEvent_t stop() const { return stop_; }

 private:
  cudaEvent_t start_ = nullptr;
  cudaEvent_t stop_ = nullptr;
};

// CUDA events in a row, destroyed together.
class EventList {
 public:
  EventList() = default;
  ~EventList() {
    for (cudaEvent_t e : events_) cudaEventDestroy(e);
  }
  EventList(const EventList&) = delete;
  EventList& operator=(const EventList&) = delete;

  Status Create(size_t count) {
    for (size_t i = 0; i < count; ++i) {
      cudaEvent_t e = nullptr;
      GPUBENCH_CUDA(cudaEventCreate(&e), "cudaEventCreate");
      events_.push_back(e);
    }
    return Status::Ok();
  }
  size_t size() const { return events_.size(); }
  cudaEvent_t operator[](size_t i) const { return events_[i]; }

 private:
  std::vector<cudaEvent_t> events_;
};

// Enqueues `count` runs of the measured work.
using Enqueue = std::function<Status(int count)>;

// Milliseconds that `count` runs take on the GPU, by CUDA events.
StatusOr<double> TimeMs(cudaStream_t stream, int count, const Enqueue& enqueue) {
  EventPair ev;
  GPUNEX_RETURN_IF_ERROR(ev.Create());
  GPUBENCH_CUDA(cudaEventRecord(ev.start(), stream), "cudaEventRecord");
  GPUNEX_RETURN_IF_ERROR(enqueue(count));
  GPUBENCH_CUDA(cudaEventRecord(ev.stop(), stream), "cudaEventRecord");
  GPUBENCH_CUDA(cudaEventSynchronize(ev.stop()), "running the measured work");
  float ms = 0;
  GPUBENCH_CUDA(cudaEventElapsedTime(&ms, ev.start(), ev.stop()), "cudaEventElapsedTime");
  return static_cast<double>(ms);
}

// Milliseconds per run: one warm-up run, a two-run estimate, then as many runs as fill
// `target_ms`, back to back in one timed span.
StatusOr<double> MsPerRun(cudaStream_t stream, double target_ms, const Enqueue& enqueue) {
  GPUNEX_ASSIGN_OR_RETURN(double warm_ms, TimeMs(stream, 1, enqueue));
  (void)warm_ms;
  GPUNEX_ASSIGN_OR_RETURN(double two_ms, TimeMs(stream, 2, enqueue));
  const double estimate = std::max(two_ms / 2, 1e-3);
  const int count = static_cast<int>(std::clamp(std::ceil(target_ms / estimate), 1.0, 1e6));
  GPUNEX_ASSIGN_OR_RETURN(double total_ms, TimeMs(stream, count, enqueue));
  return total_ms / count;
}

// The GPU under test and what every measurement shares.
struct Gpu {
  int ordinal = 0;
  cudaDeviceProp prop{};
  std::string uuid;
  cudaStream_t stream = nullptr;
  cublasLtHandle_t lt = nullptr;
  DeviceBuffer workspace;

  Gpu() = default;
  Gpu(const Gpu&) = delete;
  Gpu& operator=(const Gpu&) = delete;
  ~Gpu() {
    if (stream != nullptr) cudaStreamSynchronize(stream);
    if (lt != nullptr) cublasLtDestroy(lt);
    if (stream != nullptr) cudaStreamDestroy(stream);
  }
};

std::string UuidOf(const cudaDeviceProp& prop) {
  unsigned char bytes[16];
  static_assert(sizeof prop.uuid.bytes == sizeof bytes);
  std::memcpy(bytes, prop.uuid.bytes, sizeof bytes);
  return FormatGpuUuid(std::span<const unsigned char, 16>(bytes));
}

Status OpenGpu(const Options& options, Gpu* gpu) {
  int count = 0;
  if (cudaError_t e = cudaGetDeviceCount(&count); e != cudaSuccess) {
    return CudaStatus(e,
                      "no usable CUDA device (is the NVIDIA driver installed, "
                      "and is the GPU given to this container?)");
  }
  if (count == 0) return NotFound("no CUDA device is visible");
  if (!options.uuid.empty()) {
    gpu->ordinal = -1;
    for (int i = 0; i < count && gpu->ordinal < 0; ++i) {
      cudaDeviceProp prop{};
      GPUBENCH_CUDA(cudaGetDeviceProperties(&prop, i), "reading device properties");
      if (SameGpuUuid(UuidOf(prop), options.uuid)) gpu->ordinal = i;
    }
    if (gpu->ordinal < 0) return NotFound("no visible CUDA device has UUID " + options.uuid);
  } else {
    gpu->ordinal = options.device >= 0 ? options.device : 0;
    if (gpu->ordinal >= count) {
      return NotFound("there is no CUDA device " + std::to_string(gpu->ordinal) + " (" +
                      std::to_string(count) + " visible)");
    }
  }
  GPUBENCH_CUDA(cudaSetDevice(gpu->ordinal), "selecting the device");
  GPUBENCH_CUDA(cudaGetDeviceProperties(&gpu->prop, gpu->ordinal), "reading device properties");
  gpu->uuid = UuidOf(gpu->prop);
  if (gpu->prop.major < 8) {
    return FailedPrecondition(
        std::string(gpu->prop.name) + " has compute capability " + std::to_string(gpu->prop.major) +
        "." + std::to_string(gpu->prop.minor) + "; gpunex-gpubench needs 8.0 (Ampere) or newer");
  }
  GPUBENCH_CUDA(cudaStreamCreateWithFlags(&gpu->stream, cudaStreamNonBlocking),
                "creating a stream");
  GPUBENCH_CUBLAS(cublasLtCreate(&gpu->lt), "cublasLtCreate");
  GPUNEX_RETURN_IF_ERROR(gpu->workspace.Allocate(kWorkspaceBytes, "the cuBLASLt workspace"));
  return Status::Ok();
}

// Reads `count` values of type T from the device.
template <typename T>
Status ToHost(const void* device, size_t count, std::vector<T>* out, std::string_view what) {
  out->resize(count);
  return CudaStatus(cudaMemcpy(out->data(), device, count * sizeof(T), cudaMemcpyDeviceToHost),
                    std::string("copying ") + std::string(what) + " to the host");
}

// ---- FMA throughput -------------------------------------------------------------------------

Status MeasureFma(Gpu& gpu, const Plan& plan, Report* report) {
  struct Variant {
    const char* name;
    Kernel kernel;
    double flops_per_fma;  // FP32 FMA: 2; half2 FMA: 4
    double* figure;
  };
  const Variant variants[] = {
      {"fp32", Kernel::kFmaF32, 2, &report->compute.fp32_tflops},
      {"fp16", Kernel::kFmaF16, 4, &report->compute.fp16_tflops},
  };
  for (const Variant& v : variants) {
    int per_sm = 0;
    GPUBENCH_CUDA(BlocksPerSm(v.kernel, kThreads, &per_sm), "cudaOccupancyMaxActiveBlocks");
    const LaunchShape shape{gpu.prop.multiProcessorCount * std::max(per_sm, 1), kThreads};
    const size_t threads = static_cast<size_t>(shape.blocks) * static_cast<size_t>(shape.threads);
    DeviceBuffer out;
    GPUNEX_RETURN_IF_ERROR(out.Allocate(threads * sizeof(float), "FMA outputs"));
    auto launch = [&](int iters) {
      return v.kernel == Kernel::kFmaF32
                 ? LaunchFmaF32(shape, kFmaF32A, kFmaF32B, iters, out.as<float>(), gpu.stream)
                 : LaunchFmaF16(shape, kFmaF16A, kFmaF16B, iters, out.as<float>(), gpu.stream);
    };

    GPUNEX_ASSIGN_OR_RETURN(double ms, MsPerRun(gpu.stream, plan.target_ms, [&](int count) {
                              for (int i = 0; i < count; ++i) {
                                GPUBENCH_CUDA(launch(plan.fma_iters), "launching the FMA kernel");
                              }
                              return Status::Ok();
                            }));
    const double flops =
        static_cast<double>(threads) * kFmaChains * kFmaUnroll * plan.fma_iters * v.flops_per_fma;
    *v.figure = flops / (ms * 1e-3) / 1e12;
    Progress("%s: %.2f TFLOPS (%d blocks of %d threads, %.3f ms per launch)", v.name, *v.figure,
             shape.blocks, shape.threads, ms);

    // The same kernel, shorter, so that the host can emulate sampled threads exactly.
    GPUBENCH_CUDA(cudaMemsetAsync(out.get(), 0xff, threads * sizeof(float), gpu.stream),
                  "poisoning FMA outputs");
    GPUBENCH_CUDA(launch(kFmaCheckIters), "launching the FMA kernel");
    GPUBENCH_CUDA(cudaStreamSynchronize(gpu.stream), "running the FMA kernel");
    std::vector<float> all;
    GPUNEX_RETURN_IF_ERROR(ToHost(out.get(), threads, &all, "FMA outputs"));
    std::vector<uint32_t> picked;
    std::vector<float> got, want;
    for (int k = 0; k < kFmaCheckThreads; ++k) {
      const auto t =
          static_cast<uint32_t>(threads - 1 - (threads - 1) * k / (kFmaCheckThreads - 1));
      picked.push_back(t);
      got.push_back(all[t]);
      want.push_back(v.kernel == Kernel::kFmaF32 ? FmaF32Expected(t, kFmaCheckIters)
                                                 : FmaF16Expected(t, kFmaCheckIters));
    }
    if (auto failure = CheckFmaOutputs(v.name, picked, got, want)) {
      Progress("SANITY FAILURE %s", failure->c_str());
      report->sanity_failures.push_back(*failure);
    }
  }
  return Status::Ok();
}

// ---- Memory bandwidth -----------------------------------------------------------------------

Status MeasureMemory(Gpu& gpu, const Plan& plan, Report* report) {
  size_t free_bytes = 0, total_bytes = 0;
  GPUBENCH_CUDA(cudaMemGetInfo(&free_bytes, &total_bytes), "cudaMemGetInfo");
  const uint64_t bytes =
      std::min<uint64_t>(plan.memory_buffer_cap, free_bytes / 8) / kBufferAlign * kBufferAlign;
  if (bytes < kMinMemoryBuffer) {
    return Internal("too little free device memory for the memory benchmark: " +
                    std::to_string(free_bytes >> 20) + " MiB free");
  }
  const size_t vecs = bytes / 16;
  const uint64_t floats = bytes / 4;

  DeviceBuffer x, y, z, partial, wrong;
  GPUNEX_RETURN_IF_ERROR(x.Allocate(bytes, "memory buffer"));
  GPUNEX_RETURN_IF_ERROR(y.Allocate(bytes, "memory buffer"));
  GPUNEX_RETURN_IF_ERROR(z.Allocate(bytes, "memory buffer"));
  GPUNEX_RETURN_IF_ERROR(wrong.Allocate(sizeof(unsigned long long), "a counter"));
  GPUBENCH_CUDA(FillPattern(y.get(), vecs, gpu.stream), "filling a memory buffer");

  const int one_pass_blocks = static_cast<int>(
      std::min<size_t>((vecs + kThreads * kMemUnroll - 1) / (kThreads * kMemUnroll), 1u << 30));
  // One partial sum per block of either grid (no GPU holds more than 32 blocks per SM).
  const size_t partials = std::max<size_t>(static_cast<size_t>(one_pass_blocks),
                                           static_cast<size_t>(gpu.prop.multiProcessorCount) * 32);
  GPUNEX_RETURN_IF_ERROR(partial.Allocate(partials * sizeof(float), "read partial sums"));

  // The number of wrong floats a check kernel counts.
  auto count_wrong =
      [&](const std::function<cudaError_t(unsigned long long*)>& check) -> StatusOr<uint64_t> {
    GPUBENCH_CUDA(cudaMemsetAsync(wrong.get(), 0, sizeof(unsigned long long), gpu.stream),
                  "clearing a counter");
    GPUBENCH_CUDA(check(wrong.as<unsigned long long>()), "launching a check kernel");
    GPUBENCH_CUDA(cudaStreamSynchronize(gpu.stream), "running a check kernel");
    std::vector<unsigned long long> n;
    GPUNEX_RETURN_IF_ERROR(ToHost(wrong.get(), 1, &n, "a counter"));
    return static_cast<uint64_t>(n[0]);
  };

  struct Case {
    const char* name;
    Kernel kernel;
    double bytes_moved;  // per launch
    double* figure;
    void* poisoned;  // the launch's output, poisoned before each timing
    std::function<cudaError_t(LaunchShape)> launch;
    // Checks the output of the last launch; the failure sentence or nullopt.
    std::function<StatusOr<std::optional<std::string>>(LaunchShape)> check;
  };
  const double b = static_cast<double>(bytes);
  std::vector<Case> cases;
  cases.push_back(
      {"write", Kernel::kWrite, b, &report->memory.write_gbps, x.get(),
       [&](LaunchShape s) { return LaunchWrite(s, x.get(), vecs, kWriteValue, gpu.stream); },
       [&](LaunchShape) -> StatusOr<std::optional<std::string>> {
         GPUNEX_ASSIGN_OR_RETURN(uint64_t n, count_wrong([&](unsigned long long* w) {
                                   return CountNotValue(x.get(), vecs, kWriteValue, w, gpu.stream);
                                 }));
         return CheckWrongCount("write", n, floats);
       }});
  cases.push_back(
      {"read", Kernel::kRead, b, &report->memory.read_gbps, partial.get(),
       [&](LaunchShape s) { return LaunchRead(s, x.get(), vecs, partial.as<float>(), gpu.stream); },
       [&](LaunchShape s) -> StatusOr<std::optional<std::string>> {
         GPUBENCH_CUDA(cudaStreamSynchronize(gpu.stream), "running the read kernel");
         std::vector<float> sums;
         GPUNEX_RETURN_IF_ERROR(
             ToHost(partial.get(), static_cast<size_t>(s.blocks), &sums, "partial sums"));
         return CheckReadSums(sums, floats);
       }});
  cases.push_back({"copy", Kernel::kCopy, 2 * b, &report->memory.copy_gbps, z.get(),
                   [&](LaunchShape s) {
                     return s.blocks == 0 ? cudaMemcpyAsync(z.get(), y.get(), bytes,
                                                            cudaMemcpyDeviceToDevice, gpu.stream)
                                          : LaunchCopy(s, y.get(), z.get(), vecs, gpu.stream);
                   },
                   [&](LaunchShape) -> StatusOr<std::optional<std::string>> {
                     GPUNEX_ASSIGN_OR_RETURN(uint64_t n, count_wrong([&](unsigned long long* w) {
                                               return CountNotPattern(z.get(), vecs, w, gpu.stream);
                                             }));
                     return CheckWrongCount("copy", n, floats);
                   }});
  cases.push_back(
      {"triad", Kernel::kTriad, 3 * b, &report->memory.triad_gbps, x.get(),
       [&](LaunchShape s) {
         return LaunchTriad(s, x.get(), y.get(), z.get(), vecs, kTriadScalar, gpu.stream);
       },
       [&](LaunchShape) -> StatusOr<std::optional<std::string>> {
         GPUNEX_ASSIGN_OR_RETURN(uint64_t n, count_wrong([&](unsigned long long* w) {
                                   return CountNotTriad(x.get(), vecs, kTriadScalar, w, gpu.stream);
                                 }));
         return CheckWrongCount("triad", n, floats);
       }});

  for (const Case& c : cases) {
    int per_sm = 0;
    GPUBENCH_CUDA(BlocksPerSm(c.kernel, kThreads, &per_sm), "cudaOccupancyMaxActiveBlocks");
    // A resident grid that loops over the buffer, and a grid that passes over it once;
    // which is faster depends on the chip, so both are timed and the better one counts.
    std::vector<LaunchShape> shapes = {
        {gpu.prop.multiProcessorCount * std::max(per_sm, 1), kThreads},
        {one_pass_blocks, kThreads},
    };
    // Copy is also timed through the driver's own device-to-device copy (what frameworks
    // call for a contiguous copy), shape {0, 0}; the figure is the better of the two.
    if (c.kernel == Kernel::kCopy) shapes.push_back({0, 0});
    double best = 0;
    for (const LaunchShape& shape : shapes) {
      // Poisoned output: a launch that does nothing fails its check.
      const size_t poison_bytes =
          c.poisoned == partial.get() ? partials * sizeof(float) : static_cast<size_t>(bytes);
      GPUBENCH_CUDA(cudaMemsetAsync(c.poisoned, 0xff, poison_bytes, gpu.stream),
                    "poisoning a memory buffer");
      GPUNEX_ASSIGN_OR_RETURN(double ms, MsPerRun(gpu.stream, plan.target_ms, [&](int count) {
                                for (int i = 0; i < count; ++i) {
                                  GPUBENCH_CUDA(c.launch(shape), "launching a memory kernel");
                                }
                                return Status::Ok();
                              }));
      const double gbps = c.bytes_moved / (ms * 1e-3) / 1e9;
      if (shape.blocks == 0) {
        Progress("%s: %.1f GB/s (cudaMemcpyAsync, %.1f MiB buffers, %.3f ms per copy)", c.name,
                 gbps, b / (1 << 20), ms);
      } else {
        Progress("%s: %.1f GB/s (%d blocks of %d threads, %.1f MiB buffers, %.3f ms per launch)",
                 c.name, gbps, shape.blocks, shape.threads, b / (1 << 20), ms);
      }
      best = std::max(best, gbps);
      GPUNEX_ASSIGN_OR_RETURN(std::optional<std::string> failure, c.check(shape));
      if (failure.has_value()) {
        Progress("SANITY FAILURE %s", failure->c_str());
        report->sanity_failures.push_back(*failure);
      }
    }
    *c.figure = best;
  }
  return Status::Ok();
}

// ---- Tensor-core GEMMs ----------------------------------------------------------------------

struct GemmBest {
  double tflops = 0;
  double ms = 0;  // per GEMM
  int64_t n = 0;
  cublasLtMatmulAlgo_t algo{};
};

StatusOr<GemmBest> MeasureGemm(Gpu& gpu, const Plan& plan, GemmType type, Report* report) {
  const char* name = GemmTypeName(type);
  GemmBest best;
  for (int64_t n : plan.gemm_sizes) {
    size_t free_bytes = 0, total_bytes = 0;
    GPUBENCH_CUDA(cudaMemGetInfo(&free_bytes, &total_bytes), "cudaMemGetInfo");
    if (GemmBytes(type, n) + kGemmHeadroom > free_bytes) {
      Progress("%s n=%lld: skipped, %zu MiB free", name, static_cast<long long>(n),
               free_bytes >> 20);
      continue;
    }
    GPUNEX_ASSIGN_OR_RETURN(
        std::unique_ptr<GemmProblem> problem,
        GemmProblem::Create(gpu.lt, type, n, gpu.workspace.get(), kWorkspaceBytes, gpu.stream));
    GPUNEX_ASSIGN_OR_RETURN(std::vector<cublasLtMatmulAlgo_t> algos,
                            problem->Algorithms(plan.gemm_algos));
    // Screen the proposals briefly, then time the fastest fully.
    int chosen = -1;
    double chosen_ms = 0;
    for (size_t i = 0; i < algos.size(); ++i) {
      auto ms = MsPerRun(gpu.stream, plan.screen_ms,
                         [&](int count) { return problem->Enqueue(algos[i], count); });
      if (!ms.ok()) {
        // An algorithm the library proposes but cannot run here is skipped, not fatal; a
        // fault in the GPU shows up again in the next call.
        Progress("%s n=%lld: algorithm %zu failed: %s", name, static_cast<long long>(n), i,
                 ms.status().message().c_str());
        GPUBENCH_CUDA(cudaGetLastError(), std::string(name) + ": after a failed algorithm");
        continue;
      }
      if (chosen < 0 || *ms < chosen_ms) {
        chosen = static_cast<int>(i);
        chosen_ms = *ms;
      }
    }
    if (chosen < 0) return Internal(std::string(name) + ": no cuBLASLt algorithm ran");
    const cublasLtMatmulAlgo_t& algo = algos[static_cast<size_t>(chosen)];
    GPUNEX_ASSIGN_OR_RETURN(double ms, MsPerRun(gpu.stream, plan.target_ms, [&](int count) {
                              return problem->Enqueue(algo, count);
                            }));
    const double tflops = problem->Flops() / (ms * 1e-3) / 1e12;
    Progress("%s n=%lld: %.1f TFLOPS (algorithm %d of %zu, %.3f ms per GEMM)", name,
             static_cast<long long>(n), tflops, chosen, algos.size(), ms);
    GPUNEX_ASSIGN_OR_RETURN(std::optional<std::string> failure, problem->Check(algo));
    if (failure.has_value()) {
      Progress("SANITY FAILURE %s", failure->c_str());
      report->sanity_failures.push_back(*failure);
    }
    if (tflops > best.tflops) best = {tflops, ms, n, algo};
  }
  if (best.n == 0) return Internal(std::string(name) + ": too little device memory for any size");
  return best;
}

// ---- Sustained load -------------------------------------------------------------------------

// Samples the telemetry every `period` on its own thread between Start() and Stop().
class Sampler {
 public:
  Sampler(Telemetry& telemetry, std::string uuid, std::chrono::milliseconds period)
      : telemetry_(telemetry), uuid_(std::move(uuid)), period_(period) {}
  ~Sampler() { Stop(); }

  void Start() {
    thread_ = std::thread([this] { Run(); });
  }
  void Stop() {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

  // REQUIRES: Stop() returned.
  const std::vector<TelemetrySample>& samples() const { return samples_; }
  const std::optional<GpuFacts>& facts_under_load() const { return facts_; }

 private:
  void Run() {
    const auto start = SteadyClock::now();
    bool warned = false;
    for (auto next = start;; next += period_) {
      StatusOr<TelemetrySample> s = telemetry_.Sample(uuid_);
      if (s.ok()) {
        samples_.push_back(std::move(s).value());
      } else if (!warned) {
        Progress("no telemetry during the sustained phase: %s", s.status().message().c_str());
        warned = true;
      }
      // The link trains up under load; read it once the load has run for a second.
      if (!facts_.has_value() && SteadyClock::now() - start >= std::chrono::seconds(1)) {
        if (StatusOr<GpuFacts> facts = telemetry_.Facts(uuid_); facts.ok()) facts_ = *facts;
      }
      std::unique_lock lock(mu_);
      if (cv_.wait_until(lock, next + period_, [this] { return stop_; })) return;
    }
  }

  Telemetry& telemetry_;
  const std::string uuid_;
  const std::chrono::milliseconds period_;
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;  // GUARDED_BY(mu_)
  // Written by the sampling thread only, read after Stop() has joined it.
  std::vector<TelemetrySample> samples_;
  std::optional<GpuFacts> facts_;
};

Status RunSustained(Gpu& gpu, const Plan& plan, const GemmBest& bf16, Telemetry& telemetry,
                    Report* report, std::optional<GpuFacts>* facts_under_load) {
  if (plan.sustain_s <= 0) {
    report->sustained = Summarize({}, 0, {});
    return Status::Ok();
  }
  GPUNEX_ASSIGN_OR_RETURN(std::unique_ptr<GemmProblem> problem,
                          GemmProblem::Create(gpu.lt, GemmType::kBf16, bf16.n, gpu.workspace.get(),
                                              kWorkspaceBytes, gpu.stream));
  const int per_interval =
      std::max(1, static_cast<int>(std::lround(plan.interval_s * 1000 / bf16.ms)));
  const int intervals =
      std::max(1, static_cast<int>(std::lround(plan.sustain_s / plan.interval_s)));
  Progress("sustained: %d intervals of %d BF16 GEMMs (n=%lld), about %.0f s", intervals,
           per_interval, static_cast<long long>(bf16.n), plan.sustain_s);

  EventList events;
  GPUNEX_RETURN_IF_ERROR(events.Create(static_cast<size_t>(intervals) + 1));

  Sampler sampler(telemetry, gpu.uuid,
                  std::chrono::milliseconds(static_cast<int64_t>(plan.sample_ms)));
  sampler.Start();
  GPUBENCH_CUDA(cudaEventRecord(events[0], gpu.stream), "cudaEventRecord");
  for (int k = 0; k < intervals; ++k) {
    GPUNEX_RETURN_IF_ERROR(problem->Enqueue(bf16.algo, per_interval));
    GPUBENCH_CUDA(cudaEventRecord(events[static_cast<size_t>(k) + 1], gpu.stream),
                  "cudaEventRecord");
    // Keep the host at most two intervals ahead of the GPU.
    if (k >= 1) {
      GPUBENCH_CUDA(cudaEventSynchronize(events[static_cast<size_t>(k) - 1]),
                    "running the sustained load");
    }
  }
  GPUBENCH_CUDA(cudaEventSynchronize(events[events.size() - 1]), "running the sustained load");
  sampler.Stop();

  std::vector<double> tflops;
  for (size_t k = 0; k + 1 < events.size(); ++k) {
    float ms = 0;
    GPUBENCH_CUDA(cudaEventElapsedTime(&ms, events[k], events[k + 1]), "cudaEventElapsedTime");
    tflops.push_back(per_interval * problem->Flops() / (ms * 1e-3) / 1e12);
  }
  float total_ms = 0;
  GPUBENCH_CUDA(cudaEventElapsedTime(&total_ms, events[0], events[events.size() - 1]),
                "cudaEventElapsedTime");
  report->sustained = Summarize(tflops, total_ms / 1000.0, sampler.samples());
  *facts_under_load = sampler.facts_under_load();
  const Sustained& s = report->sustained;
  Progress("sustained: mean %.1f TFLOPS, min %.1f, max %.1f, cv %.4f, %zu NVML samples",
           s.mean_tflops.value_or(0), s.min_tflops.value_or(0), s.max_tflops.value_or(0),
           s.cv.value_or(0), sampler.samples().size());
  return Status::Ok();
}

}  // namespace

StatusOr<Report> RunBenchmark(const Options& options, const Plan& plan, Telemetry& telemetry) {
  const auto started = SteadyClock::now();
  Report report;

  const GpuModel* model = nullptr;
  if (!options.catalog_id.empty()) {
    model = FindGpuModel(options.catalog_id);
    if (model == nullptr) {
      return InvalidArgument("--catalog-id " + options.catalog_id + " is not in the GPU catalog");
    }
  }

  Gpu gpu;
  GPUNEX_RETURN_IF_ERROR(OpenGpu(options, &gpu));
  StatusOr<GpuFacts> idle_facts = telemetry.Facts(gpu.uuid);
  if (!idle_facts.ok()) {
    Progress("no %s telemetry: %s", telemetry.Kind().c_str(),
             idle_facts.status().message().c_str());
  }

  DeviceReport& d = report.device;
  d.index = gpu.ordinal;
  d.uuid = gpu.uuid;
  d.name = gpu.prop.name;
  d.sm_count = gpu.prop.multiProcessorCount;
  d.memory_mb = idle_facts.ok() && idle_facts->memory_mb > 0
                    ? idle_facts->memory_mb
                    : static_cast<int64_t>(gpu.prop.totalGlobalMem >> 20);
  if (model == nullptr) {
    const int vram_gb = static_cast<int>(std::lround(static_cast<double>(d.memory_mb) / 1024));
    if (auto id = MatchNvmlName(d.name, vram_gb)) model = FindGpuModel(*id);
  }
  if (model != nullptr) d.catalog_id = model->id;
  Progress("%s (%s), CUDA device %d, %d SMs, %lld MiB, catalog %s", d.name.c_str(), d.uuid.c_str(),
           d.index, d.sm_count, static_cast<long long>(d.memory_mb),
           model != nullptr ? model->id.c_str() : "unknown");

  GPUNEX_RETURN_IF_ERROR(MeasureFma(gpu, plan, &report));
  GPUNEX_RETURN_IF_ERROR(MeasureMemory(gpu, plan, &report));
  GPUNEX_ASSIGN_OR_RETURN(GemmBest fp16, MeasureGemm(gpu, plan, GemmType::kFp16, &report));
  GPUNEX_ASSIGN_OR_RETURN(GemmBest bf16, MeasureGemm(gpu, plan, GemmType::kBf16, &report));
  GPUNEX_ASSIGN_OR_RETURN(GemmBest tf32, MeasureGemm(gpu, plan, GemmType::kTf32, &report));
  report.compute.fp16_tensor_tflops = fp16.tflops;
  report.compute.bf16_tensor_tflops = bf16.tflops;
  report.compute.tf32_tensor_tflops = tf32.tflops;

  std::optional<GpuFacts> loaded_facts;
  GPUNEX_RETURN_IF_ERROR(RunSustained(gpu, plan, bf16, telemetry, &report, &loaded_facts));

  // The link as it ran under load; otherwise what it can do at most (idle links train
  // down, so an idle reading would understate it).
  if (loaded_facts.has_value() && loaded_facts->pcie_gen > 0) {
    d.pcie_gen = loaded_facts->pcie_gen;
    d.pcie_width = loaded_facts->pcie_width;
  } else if (idle_facts.ok()) {
    d.pcie_gen = idle_facts->pcie_gen_max;
    d.pcie_width = idle_facts->pcie_width_max;
  }

  if (model != nullptr) report.reference = Fractions(report.compute, report.memory, *model);
  report.duration_s = std::chrono::duration<double>(SteadyClock::now() - started).count();
  return report;
}

}  // namespace gpunex::gpubench
