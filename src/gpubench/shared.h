// What the CUDA kernels (kernels.cu) and the host-side checks (numerics.cc) must agree
// on bit for bit: the FMA kernels' shape, starting values and coefficients, and the
// memory kernels' fill pattern. Plain C++17, compiled by nvcc and by g++.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define GPUBENCH_HOST_DEVICE __host__ __device__
#else
#define GPUBENCH_HOST_DEVICE
#endif

namespace gpunex::gpubench {

// Independent FMA chains per thread (instruction-level parallelism), and FMAs per chain
// per loop iteration (unrolled), in the FP32 and the half2 kernels. One thread running
// `iters` iterations performs kFmaChains * kFmaUnroll * iters FMA instructions.
inline constexpr int kFmaChains = 8;
inline constexpr int kFmaUnroll = 16;

// Each chain computes x <- fma(x, a, b). FP32: a = 1 - 2^-20, b = 2^-20; FP16 (each half
// of a half2): a = 1 - 2^-10, b = 2^-10. All four are exact in their types, and x stays
// in [0, 1], so the FP16 chain has an exact double-precision emulation on the host.
inline constexpr float kFmaF32A = 1.0f - 1.0f / 1048576.0f;
inline constexpr float kFmaF32B = 1.0f / 1048576.0f;
inline constexpr float kFmaF16A = 1.0f - 1.0f / 1024.0f;
inline constexpr float kFmaF16B = 1.0f / 1024.0f;

// The starting value of chain `chain` of global thread `thread`: a multiple of 1/1024 in
// [0, 1), exact in FP32 and FP16. The half2 kernel's chain c uses FmaStart(t, 2c) in its
// low half and FmaStart(t, 2c + 1) in its high half.
GPUBENCH_HOST_DEVICE inline float FmaStart(uint32_t thread, uint32_t chain) {
  return static_cast<float>((thread * 7u + chain * 131u) % 1024u) / 1024.0f;
}

// A 32-bit integer hash (lowbias32, Chris Wellons): every input bit affects every output
// bit, so neighbouring elements get unrelated values.
GPUBENCH_HOST_DEVICE inline uint32_t Hash32(uint32_t x) {
  x ^= x >> 16;
  x *= 0x7feb352dU;
  x ^= x >> 15;
  x *= 0x846ca68bU;
  x ^= x >> 16;
  return x;
}

// The value the memory kernels' pattern puts in float element `i`: in [1, 2), exact.
GPUBENCH_HOST_DEVICE inline float PatternValue(uint32_t i) {
  return 1.0f + static_cast<float>(Hash32(i) >> 9) * (1.0f / 8388608.0f);
}

// The scalar of the triad a = b + s * c. The memory check expects fma(s, c, b) exactly.
inline constexpr float kTriadScalar = 0.5f;
// The value the write kernel stores (and the read kernel then sums).
inline constexpr float kWriteValue = 1.0f;

}  // namespace gpunex::gpubench
