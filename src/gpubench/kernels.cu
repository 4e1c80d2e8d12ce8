// The kernels of gpunex-gpubench. Only CUDA and the C++17 standard library here; the C++20
// host code stays in .cc files.
//
// Throughput kernels are written to run at the hardware's rate, not to be short:
// - FMA: kFmaChains independent chains per thread, unrolled kFmaUnroll deep, so that every
//   scheduler has independent FMAs to issue each cycle; coefficients arrive as kernel
//   arguments, so the compiler cannot fold the chains; each thread's result is written
//   and checked, so it cannot drop them either.
// - memory: 16-byte loads and stores, kMemUnroll of them in flight per thread before the
//   first use, grid-stride so that any grid covers the buffer.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "gpubench/kernels.h"
#include "gpubench/shared.h"

namespace gpunex::gpubench {
namespace {

constexpr int kFmaThreads = 256;  // the FMA kernels' block size (launch bounds)
constexpr int kCheckThreads = 256;
constexpr int kCheckBlocks = 4096;

__global__ void __launch_bounds__(kFmaThreads)
    FmaF32Kernel(float a, float b, int iters, float* __restrict__ out) {
  const uint32_t t = blockIdx.x * blockDim.x + threadIdx.x;
  float x[kFmaChains];
#pragma unroll
  for (int c = 0; c < kFmaChains; ++c) x[c] = FmaStart(t, static_cast<uint32_t>(c));
  for (int it = 0; it < iters; ++it) {
#pragma unroll
    for (int u = 0; u < kFmaUnroll; ++u) {
#pragma unroll
      for (int c = 0; c < kFmaChains; ++c) x[c] = __fmaf_rn(x[c], a, b);
    }
  }
  float sum = 0.0f;
#pragma unroll
  for (int c = 0; c < kFmaChains; ++c) sum = __fadd_rn(sum, x[c]);
  out[t] = sum;
}

__global__ void __launch_bounds__(kFmaThreads)
    FmaF16Kernel(__half2 a, __half2 b, int iters, float* __restrict__ out) {
  const uint32_t t = blockIdx.x * blockDim.x + threadIdx.x;
  __half2 x[kFmaChains];
#pragma unroll
  for (int c = 0; c < kFmaChains; ++c) {
    x[c] = __floats2half2_rn(FmaStart(t, static_cast<uint32_t>(2 * c)),
                             FmaStart(t, static_cast<uint32_t>(2 * c + 1)));
  }
  for (int it = 0; it < iters; ++it) {
#pragma unroll
    for (int u = 0; u < kFmaUnroll; ++u) {
#pragma unroll
      for (int c = 0; c < kFmaChains; ++c) x[c] = __hfma2(x[c], a, b);
    }
  }
  float sum = 0.0f;
#pragma unroll
  for (int c = 0; c < kFmaChains; ++c) {
    sum = __fadd_rn(sum, __low2float(x[c]));
    sum = __fadd_rn(sum, __high2float(x[c]));
  }
  out[t] = sum;
}

__device__ __forceinline__ size_t GlobalThread() {
  return static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ __forceinline__ size_t GridThreads() {
  return static_cast<size_t>(gridDim.x) * blockDim.x;
}

__global__ void ReadKernel(const float4* __restrict__ in, size_t n, float* __restrict__ partial) {
  const size_t stride = GridThreads();
  size_t i = GlobalThread();
  float4 acc = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  for (; i + (kMemUnroll - 1) * stride < n; i += kMemUnroll * stride) {
    float4 v[kMemUnroll];
#pragma unroll
    for (int u = 0; u < kMemUnroll; ++u) v[u] = in[i + u * stride];
#pragma unroll
    for (int u = 0; u < kMemUnroll; ++u) {
      acc.x += v[u].x;
      acc.y += v[u].y;
      acc.z += v[u].z;
      acc.w += v[u].w;
    }
  }
  for (; i < n; i += stride) {
    const float4 v = in[i];
    acc.x += v.x;
    acc.y += v.y;
    acc.z += v.z;
    acc.w += v.w;
  }
  // One partial per block, so that the sums add almost no traffic to what is measured.
  float sum = (acc.x + acc.y) + (acc.z + acc.w);
  for (int offset = 16; offset > 0; offset /= 2) sum += __shfl_down_sync(0xffffffffu, sum, offset);
  __shared__ float warp_sums[32];
  const int lane = threadIdx.x % 32;
  const int warp = threadIdx.x / 32;
  if (lane == 0) warp_sums[warp] = sum;
  __syncthreads();
  if (threadIdx.x == 0) {
    float block_sum = 0.0f;
    for (int w = 0; w < static_cast<int>((blockDim.x + 31) / 32); ++w) block_sum += warp_sums[w];
    partial[blockIdx.x] = block_sum;
  }
}

__global__ void WriteKernel(float4* __restrict__ out, size_t n, float value) {
  const size_t stride = GridThreads();
  size_t i = GlobalThread();
  const float4 v = make_float4(value, value, value, value);
  for (; i + (kMemUnroll - 1) * stride < n; i += kMemUnroll * stride) {
#pragma unroll
    for (int u = 0; u < kMemUnroll; ++u) out[i + u * stride] = v;
  }
  for (; i < n; i += stride) out[i] = v;
}

__global__ void CopyKernel(const float4* __restrict__ in, float4* __restrict__ out, size_t n) {
  const size_t stride = GridThreads();
  size_t i = GlobalThread();
  for (; i + (kMemUnroll - 1) * stride < n; i += kMemUnroll * stride) {
    float4 v[kMemUnroll];
#pragma unroll
    for (int u = 0; u < kMemUnroll; ++u) v[u] = in[i + u * stride];
#pragma unroll
    for (int u = 0; u < kMemUnroll; ++u) out[i + u * stride] = v[u];
  }
  for (; i < n; i += stride) out[i] = in[i];
}

__device__ __forceinline__ float4 Triad(float s, float4 b, float4 c) {
  return make_float4(__fmaf_rn(s, c.x, b.x), __fmaf_rn(s, c.y, b.y), __fmaf_rn(s, c.z, b.z),
                     __fmaf_rn(s, c.w, b.w));
}

__global__ void TriadKernel(float4* __restrict__ a, const float4* __restrict__ b,
                            const float4* __restrict__ c, size_t n, float s) {
  const size_t stride = GridThreads();
  size_t i = GlobalThread();
  for (; i + (kMemUnroll - 1) * stride < n; i += kMemUnroll * stride) {
    float4 vb[kMemUnroll];
    float4 vc[kMemUnroll];
#pragma unroll
    for (int u = 0; u < kMemUnroll; ++u) {
      vb[u] = b[i + u * stride];
      vc[u] = c[i + u * stride];
    }
#pragma unroll
    for (int u = 0; u < kMemUnroll; ++u) a[i + u * stride] = Triad(s, vb[u], vc[u]);
  }
  for (; i < n; i += stride) a[i] = Triad(s, b[i], c[i]);
}

// Float element f of the pattern, as the check kernels expect it.
__device__ __forceinline__ float4 PatternVec(size_t vec) {
  const uint32_t f = static_cast<uint32_t>(vec * 4);
  return make_float4(PatternValue(f), PatternValue(f + 1), PatternValue(f + 2),
                     PatternValue(f + 3));
}

__global__ void FillPatternKernel(float4* __restrict__ p, size_t n) {
  for (size_t i = GlobalThread(); i < n; i += GridThreads()) p[i] = PatternVec(i);
}

__device__ __forceinline__ unsigned long long Differ(float4 got, float4 want) {
  return static_cast<unsigned long long>(got.x != want.x) + (got.y != want.y) + (got.z != want.z) +
         (got.w != want.w);
}

// kind 0: every float is `value`; 1: the pattern; 2: fma(value, pattern, pattern).
__global__ void CountWrongKernel(const float4* __restrict__ p, size_t n, int kind, float value,
                                 unsigned long long* wrong) {
  unsigned long long bad = 0;
  for (size_t i = GlobalThread(); i < n; i += GridThreads()) {
    float4 want;
    if (kind == 0) {
      want = make_float4(value, value, value, value);
    } else if (kind == 1) {
      want = PatternVec(i);
    } else {
      const float4 pv = PatternVec(i);
      want = Triad(value, pv, pv);
    }
    bad += Differ(p[i], want);
  }
  if (bad != 0) atomicAdd(wrong, bad);
}

template <typename T>
__device__ __forceinline__ T FromFloat(float v);
template <>
__device__ __forceinline__ float FromFloat<float>(float v) {
  return v;
}
template <>
__device__ __forceinline__ __half FromFloat<__half>(float v) {
  return __float2half_rn(v);
}
template <>
__device__ __forceinline__ __nv_bfloat16 FromFloat<__nv_bfloat16>(float v) {
  return __float2bfloat16_rn(v);
}

template <typename T>
__global__ void FillUniformKernel(T* __restrict__ p, size_t n, uint32_t seed) {
  const uint32_t key = Hash32(seed);
  for (size_t i = GlobalThread(); i < n; i += GridThreads()) {
    const uint32_t h = Hash32(static_cast<uint32_t>(i) ^ key);
    const float v = static_cast<float>(h >> 8) * (1.0f / 8388608.0f) - 1.0f;
    p[i] = FromFloat<T>(v);
  }
}

cudaError_t Launched() { return cudaGetLastError(); }

template <typename KernelFn>
cudaError_t Occupancy(KernelFn fn, int threads, int* blocks) {
  return cudaOccupancyMaxActiveBlocksPerMultiprocessor(blocks, fn, threads, 0);
}

}  // namespace

cudaError_t BlocksPerSm(Kernel kernel, int threads, int* blocks) {
  switch (kernel) {
    case Kernel::kFmaF32:
      return Occupancy(FmaF32Kernel, threads, blocks);
    case Kernel::kFmaF16:
      return Occupancy(FmaF16Kernel, threads, blocks);
    case Kernel::kRead:
      return Occupancy(ReadKernel, threads, blocks);
    case Kernel::kWrite:
      return Occupancy(WriteKernel, threads, blocks);
    case Kernel::kCopy:
      return Occupancy(CopyKernel, threads, blocks);
    case Kernel::kTriad:
      return Occupancy(TriadKernel, threads, blocks);
  }
  return cudaErrorInvalidValue;
}

cudaError_t LaunchFmaF32(LaunchShape shape, float a, float b, int iters, float* out,
                         cudaStream_t stream) {
  if (shape.threads > kFmaThreads) return cudaErrorInvalidConfiguration;
  FmaF32Kernel<<<shape.blocks, shape.threads, 0, stream>>>(a, b, iters, out);
  return Launched();
}

cudaError_t LaunchFmaF16(LaunchShape shape, float a, float b, int iters, float* out,
                         cudaStream_t stream) {
  if (shape.threads > kFmaThreads) return cudaErrorInvalidConfiguration;
  FmaF16Kernel<<<shape.blocks, shape.threads, 0, stream>>>(__float2half2_rn(a), __float2half2_rn(b),
                                                           iters, out);
  return Launched();
}

cudaError_t LaunchRead(LaunchShape shape, const void* in, size_t vecs, float* partial,
                       cudaStream_t stream) {
  ReadKernel<<<shape.blocks, shape.threads, 0, stream>>>(static_cast<const float4*>(in), vecs,
                                                         partial);
  return Launched();
}

cudaError_t LaunchWrite(LaunchShape shape, void* out, size_t vecs, float value,
                        cudaStream_t stream) {
  WriteKernel<<<shape.blocks, shape.threads, 0, stream>>>(static_cast<float4*>(out), vecs, value);
  return Launched();
}

cudaError_t LaunchCopy(LaunchShape shape, const void* in, void* out, size_t vecs,
                       cudaStream_t stream) {
  CopyKernel<<<shape.blocks, shape.threads, 0, stream>>>(static_cast<const float4*>(in),
                                                         static_cast<float4*>(out), vecs);
  return Launched();
}

cudaError_t LaunchTriad(LaunchShape shape, void* a, const void* b, const void* c, size_t vecs,
                        float scalar, cudaStream_t stream) {
  TriadKernel<<<shape.blocks, shape.threads, 0, stream>>>(
      static_cast<float4*>(a), static_cast<const float4*>(b), static_cast<const float4*>(c), vecs,
      scalar);
  return Launched();
}

cudaError_t FillPattern(void* p, size_t vecs, cudaStream_t stream) {
  FillPatternKernel<<<kCheckBlocks, kCheckThreads, 0, stream>>>(static_cast<float4*>(p), vecs);
  return Launched();
}

cudaError_t CountNotValue(const void* p, size_t vecs, float value, unsigned long long* wrong,
                          cudaStream_t stream) {
  CountWrongKernel<<<kCheckBlocks, kCheckThreads, 0, stream>>>(static_cast<const float4*>(p), vecs,
                                                               0, value, wrong);
  return Launched();
}

cudaError_t CountNotPattern(const void* p, size_t vecs, unsigned long long* wrong,
                            cudaStream_t stream) {
  CountWrongKernel<<<kCheckBlocks, kCheckThreads, 0, stream>>>(static_cast<const float4*>(p), vecs,
                                                               1, 0.0f, wrong);
  return Launched();
}

cudaError_t CountNotTriad(const void* p, size_t vecs, float scalar, unsigned long long* wrong,
                          cudaStream_t stream) {
  CountWrongKernel<<<kCheckBlocks, kCheckThreads, 0, stream>>>(static_cast<const float4*>(p), vecs,
                                                               2, scalar, wrong);
  return Launched();
}

cudaError_t FillUniform(Element type, void* p, size_t count, uint32_t seed, cudaStream_t stream) {
  switch (type) {
    case Element::kF32:
      FillUniformKernel<<<kCheckBlocks, kCheckThreads, 0, stream>>>(static_cast<float*>(p), count,
                                                                    seed);
      break;
    case Element::kF16:
      FillUniformKernel<<<kCheckBlocks, kCheckThreads, 0, stream>>>(static_cast<__half*>(p), count,
                                                                    seed);
      break;
    case Element::kBf16:
      FillUniformKernel<<<kCheckBlocks, kCheckThreads, 0, stream>>>(static_cast<__nv_bfloat16*>(p),
                                                                    count, seed);
      break;
  }
  return Launched();
}

}  // namespace gpunex::gpubench
