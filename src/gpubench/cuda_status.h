// CUDA runtime and cuBLASLt error codes as gpunex Status values, for the host code of
// gpunex-gpubench (bench.cc, gemm.cc).
#pragma once

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <string>
#include <string_view>

#include "common/status.h"

namespace gpunex::gpubench {

// OK for cudaSuccess; otherwise kInternal: "<what>: <CUDA error name>: <description>".
inline Status CudaStatus(cudaError_t e, std::string_view what) {
  if (e == cudaSuccess) return Status::Ok();
  return Internal(std::string(what) + ": " + cudaGetErrorName(e) + ": " + cudaGetErrorString(e));
}

// OK for CUBLAS_STATUS_SUCCESS; otherwise kInternal naming `what` and the cuBLAS status.
inline Status CublasStatus(cublasStatus_t s, std::string_view what) {
  if (s == CUBLAS_STATUS_SUCCESS) return Status::Ok();
  return Internal(std::string(what) + ": " + cublasLtGetStatusString(s));
}

}  // namespace gpunex::gpubench

#define GPUBENCH_CUDA(call, what) \
  GPUNEX_RETURN_IF_ERROR(::gpunex::gpubench::CudaStatus((call), (what)))
#define GPUBENCH_CUBLAS(call, what) \
  GPUNEX_RETURN_IF_ERROR(::gpunex::gpubench::CublasStatus((call), (what)))
