// One tensor-core GEMM problem of gpunex-gpubench through cuBLASLt: D = op(A) * B with
// M = N = K = n, column-major, A transposed ("TN", the layout the libraries tune first),
// inputs uniform in [-1, 1), FP32 scale and accumulation:
//   kFp16  A, B, D in FP16, compute CUBLAS_COMPUTE_32F
//   kBf16  A, B, D in BF16, compute CUBLAS_COMPUTE_32F
//   kTf32  A, B, D in FP32, compute CUBLAS_COMPUTE_32F_FAST_TF32 (TF32 tensor cores)
//
// Not thread-safe: one thread drives a problem and its stream.
#pragma once

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"

namespace gpunex::gpubench {

enum class GemmType { kFp16, kBf16, kTf32 };

// "fp16_tensor", "bf16_tensor", "tf32_tensor": the names in the report and its failures.
const char* GemmTypeName(GemmType type);

// Device bytes a problem of this type and size allocates (A, B and D).
uint64_t GemmBytes(GemmType type, int64_t n);

class GemmProblem {
 public:
  // Allocates and fills A and B, allocates D, and describes the multiplication. The
  // handle, workspace and stream are borrowed and must outlive the problem. Fails with
  // kInternal naming the CUDA or cuBLASLt call that failed (out of memory included).
  static StatusOr<std::unique_ptr<GemmProblem>> Create(cublasLtHandle_t lt, GemmType type,
                                                       int64_t n, void* workspace,
                                                       size_t workspace_bytes, cudaStream_t stream);
  ~GemmProblem();
  GemmProblem(const GemmProblem&) = delete;
  GemmProblem& operator=(const GemmProblem&) = delete;

  GemmType type() const { return type_; }
  int64_t n() const { return n_; }
  // Floating-point operations of one GEMM: 2 n^3.
  double Flops() const;

  // The algorithms cuBLASLt's heuristic proposes within the workspace, best guess first,
  // at most `max`. Fails when it proposes none.
  StatusOr<std::vector<cublasLtMatmulAlgo_t>> Algorithms(int max);

  // Enqueues `count` GEMMs with `algo`.
  Status Enqueue(const cublasLtMatmulAlgo_t& algo, int count);

  // Fills D with NaN, runs one GEMM with `algo`, and compares 256 outputs (16 rows x 16
  // columns spread over D) with dot products computed in FP64 from the actual inputs.
  // Returns the failure sentence (numerics.h: CheckGemmSamples) or nullopt when right;
  // fails only when the GPU cannot be driven.
  StatusOr<std::optional<std::string>> Check(const cublasLtMatmulAlgo_t& algo);

 private:
  GemmProblem(cublasLtHandle_t lt, GemmType type, int64_t n, void* workspace,
              size_t workspace_bytes, cudaStream_t stream);

  // Copies `count` elements at element offset `offset` of `buffer` to the host as doubles.
  Status Download(const void* buffer, int64_t offset, int64_t count, std::vector<double>* out);

  cublasLtHandle_t lt_;
  GemmType type_;
  int64_t n_;
  void* workspace_;
  size_t workspace_bytes_;
  cudaStream_t stream_;
  void* a_ = nullptr;
  void* b_ = nullptr;
  void* d_ = nullptr;
  cublasLtMatmulDesc_t desc_ = nullptr;
  cublasLtMatrixLayout_t a_layout_ = nullptr;
  cublasLtMatrixLayout_t b_layout_ = nullptr;
  cublasLtMatrixLayout_t d_layout_ = nullptr;
};

}  // namespace gpunex::gpubench
