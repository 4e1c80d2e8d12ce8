// gpunex-gpubench's own CUDA kernels (kernels.cu), behind plain launch functions so that
// the host code is ordinary C++ compiled by the C++ compiler.
//
// Every function enqueues work on `stream` and returns the launch's error
// (cudaGetLastError), not the kernel's outcome, which the next synchronisation reports.
// Buffers are device pointers; "vec" counts are 16-byte vectors (four floats), and
// every buffer is 16-byte aligned (cudaMalloc gives 256).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace gpunex::gpubench {

struct LaunchShape {
  int blocks = 0;
  int threads = 0;
};

enum class Kernel { kFmaF32, kFmaF16, kRead, kWrite, kCopy, kTriad };

// The most blocks of `threads` threads of `kernel` that one multiprocessor holds at once.
cudaError_t BlocksPerSm(Kernel kernel, int threads, int* blocks);

// ---- Arithmetic throughput (shared.h describes the chains) ----------------------------
// Each thread t of the grid runs kFmaChains chains of kFmaUnroll * iters FMAs and writes
// its result to out[t] (numerics.h: FmaF32Expected, FmaF16Expected). FLOPs per thread:
// FP32 2 * kFmaChains * kFmaUnroll * iters; half2 twice that.
cudaError_t LaunchFmaF32(LaunchShape shape, float a, float b, int iters, float* out,
                         cudaStream_t stream);
// `a` and `b` are converted to FP16 (round to nearest) and used in both halves.
cudaError_t LaunchFmaF16(LaunchShape shape, float a, float b, int iters, float* out,
                         cudaStream_t stream);

// ---- Memory bandwidth: grid-stride loops, 16-byte accesses, several in flight -----------
// Each thread has kMemUnroll accesses per array in flight; a grid of
// ceil(vecs / (threads * kMemUnroll)) blocks passes over the buffer once.
inline constexpr int kMemUnroll = 4;
// Sums `in` per block into partial[block] (`blocks` floats). REQUIRES: threads is a
// multiple of 32.
cudaError_t LaunchRead(LaunchShape shape, const void* in, size_t vecs, float* partial,
                       cudaStream_t stream);
// Fills `out` with `value`.
cudaError_t LaunchWrite(LaunchShape shape, void* out, size_t vecs, float value,
                        cudaStream_t stream);
// out = in.
cudaError_t LaunchCopy(LaunchShape shape, const void* in, void* out, size_t vecs,
                       cudaStream_t stream);
// a = b + scalar * c, element-wise, as fma(scalar, c, b).
cudaError_t LaunchTriad(LaunchShape shape, void* a, const void* b, const void* c, size_t vecs,
                        float scalar, cudaStream_t stream);

// ---- Fills and checks (not timed) -------------------------------------------------------
// p[i] = PatternValue(i) for every float i.
cudaError_t FillPattern(void* p, size_t vecs, cudaStream_t stream);
// Adds to *wrong (a device counter) the number of floats that are not `value`.
cudaError_t CountNotValue(const void* p, size_t vecs, float value, unsigned long long* wrong,
                          cudaStream_t stream);
// ... that are not PatternValue(i).
cudaError_t CountNotPattern(const void* p, size_t vecs, unsigned long long* wrong,
                            cudaStream_t stream);
// ... that are not fma(scalar, PatternValue(i), PatternValue(i)) (a triad of two patterns).
cudaError_t CountNotTriad(const void* p, size_t vecs, float scalar, unsigned long long* wrong,
                          cudaStream_t stream);

// The element types of GEMM inputs.
enum class Element { kF32, kF16, kBf16 };
// Fills `count` elements with values uniform in [-1, 1) from `seed` (multiples of 2^-23,
// rounded to nearest for FP16/BF16).
cudaError_t FillUniform(Element type, void* p, size_t count, uint32_t seed, cudaStream_t stream);

}  // namespace gpunex::gpubench
