// The numerical sanity checks of gpunex-gpubench, on the host: what each measured kernel
// must have computed, and whether it did. A benchmark that computes garbage fast must
// fail, so every figure the program reports comes from a kernel or GEMM whose output was
// checked here.
//
// Plain C++, no CUDA: the device code copies its outputs (or samples of them) back and
// hands them to these functions. Thread-safe (pure functions).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace gpunex::gpubench {

// ---- Number formats ---------------------------------------------------------------------

// The value of an IEEE binary16 (FP16) bit pattern.
double HalfBitsToDouble(uint16_t bits);
// The value of a bfloat16 bit pattern (the upper half of an FP32).
double Bf16BitsToDouble(uint16_t bits);
// `v` rounded to the nearest FP16 value, ties to even, with subnormals, and +-infinity
// beyond the largest finite FP16 (65504). NaN stays NaN.
double RoundToHalf(double v);

// ---- The FMA throughput kernels ------------------------------------------------------------

// What the FP32 FMA kernel writes for global thread `thread` after `iters` loop
// iterations (shared.h: kFmaChains chains of kFmaUnroll * iters steps, summed in chain
// order in FP32).
float FmaF32Expected(uint32_t thread, int iters);
// The same for the half2 kernel: each half of each chain in FP16 with one rounding per
// FMA, then the halves summed in FP32, low before high, chain by chain.
float FmaF16Expected(uint32_t thread, int iters);

// Checks a kernel's outputs against the expected values: `got[k]` is what thread
// `threads[k]` wrote, `expected[k]` what it should have. Returns a failure sentence
// naming `what` when any differs by more than a relative 1e-6 (the emulation is exact;
// the slack only forgives a different summation rounding), or nullopt.
std::optional<std::string> CheckFmaOutputs(std::string_view what, std::span<const uint32_t> threads,
                                           std::span<const float> got,
                                           std::span<const float> expected);

// ---- GEMM --------------------------------------------------------------------------------

// The largest relative error, ||out - ref||_2 / ||ref||_2 over the sampled outputs, that
// a GEMM of this input type may show. The output is rounded to the input type (FP16,
// BF16) or the inputs to TF32 inside the tensor cores; the bounds are about ten times
// what healthy hardware shows, and far below the error of garbage (about 1).
inline constexpr double kFp16GemmTolerance = 5e-3;
inline constexpr double kBf16GemmTolerance = 2e-2;
inline constexpr double kTf32GemmTolerance = 5e-3;

// sum_k a[k] * b[k] in double. REQUIRES: a.size() == b.size().
double Dot(std::span<const double> a, std::span<const double> b);

// Compares sampled GEMM outputs `got` with references `ref` computed in double. Fails
// (returns a sentence naming `what`) when any output is NaN or infinite, when there are no
// samples, when ||ref|| is 0, or when the relative error exceeds `tolerance`.
// REQUIRES: got.size() == ref.size().
std::optional<std::string> CheckGemmSamples(std::string_view what, std::span<const double> got,
                                            std::span<const double> ref, double tolerance);

// ---- Memory kernels ------------------------------------------------------------------------

// The memory kernels' own checks count wrong elements on the device; this turns a count
// into a failure sentence ("copy: 12 of 268435456 values wrong") or nullopt when 0.
std::optional<std::string> CheckWrongCount(std::string_view what, uint64_t wrong, uint64_t total);

// The read kernel writes one FP32 partial sum per block of a buffer that holds
// kWriteValue everywhere; their sum must be kWriteValue * `floats` exactly (every partial
// is an integer below 2^24 as long as no block reads more than 2^24 floats). Fails naming
// "read" otherwise.
std::optional<std::string> CheckReadSums(std::span<const float> partials, uint64_t floats);

}  // namespace gpunex::gpubench
