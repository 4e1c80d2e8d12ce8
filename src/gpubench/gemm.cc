#include "gpubench/gemm.h"

#include <algorithm>
#include <cstring>
#include <random>
#include <set>

#include "gpubench/cuda_status.h"
#include "gpubench/kernels.h"
#include "gpubench/numerics.h"

namespace gpunex::gpubench {
namespace {

constexpr int kCheckRows = 16;
constexpr int kCheckCols = 16;
constexpr uint32_t kSeedA = 0xA11CE;
constexpr uint32_t kSeedB = 0xB0B;

struct TypeInfo {
  cudaDataType_t data;
  cublasComputeType_t compute;
  Element element;
  size_t bytes;
  double tolerance;
};

TypeInfo Info(GemmType type) {
  switch (type) {
    case GemmType::kFp16:
      return {CUDA_R_16F, CUBLAS_COMPUTE_32F, Element::kF16, 2, kFp16GemmTolerance};
    case GemmType::kBf16:
      return {CUDA_R_16BF, CUBLAS_COMPUTE_32F, Element::kBf16, 2, kBf16GemmTolerance};
    case GemmType::kTf32:
      break;
  }
  return {CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32, Element::kF32, 4, kTf32GemmTolerance};
}

// Up to `count` distinct indices in [0, n), spread at random, the first and last included.
std::vector<int64_t> SpreadIndices(int64_t n, int count, std::mt19937_64* rng) {
  std::set<int64_t> picked{0, n - 1};
  std::uniform_int_distribution<int64_t> pick(0, n - 1);
  while (static_cast<int>(picked.size()) < std::min<int64_t>(count, n)) picked.insert(pick(*rng));
  return {picked.begin(), picked.end()};
}

}  // namespace

const char* GemmTypeName(GemmType type) {
  switch (type) {
    case GemmType::kFp16:
      return "fp16_tensor";
    case GemmType::kBf16:
      return "bf16_tensor";
    case GemmType::kTf32:
      return "tf32_tensor";
  }
  return "?";
}

uint64_t GemmBytes(GemmType type, int64_t n) {
  return 3 * static_cast<uint64_t>(n) * static_cast<uint64_t>(n) * Info(type).bytes;
}

GemmProblem::GemmProblem(cublasLtHandle_t lt, GemmType type, int64_t n, void* workspace,
                         size_t workspace_bytes, cudaStream_t stream)
    : lt_(lt),
      type_(type),
      n_(n),
      workspace_(workspace),
      workspace_bytes_(workspace_bytes),
      stream_(stream) {}

GemmProblem::~GemmProblem() {
  if (d_layout_ != nullptr) cublasLtMatrixLayoutDestroy(d_layout_);
  if (b_layout_ != nullptr) cublasLtMatrixLayoutDestroy(b_layout_);
  if (a_layout_ != nullptr) cublasLtMatrixLayoutDestroy(a_layout_);
  if (desc_ != nullptr) cublasLtMatmulDescDestroy(desc_);
  // Work still queued on the stream may use the buffers.
  cudaStreamSynchronize(stream_);
  cudaFree(d_);
  cudaFree(b_);
  cudaFree(a_);
}

StatusOr<std::unique_ptr<GemmProblem>> GemmProblem::Create(cublasLtHandle_t lt, GemmType type,
                                                           int64_t n, void* workspace,
                                                           size_t workspace_bytes,
                                                           cudaStream_t stream) {
  std::unique_ptr<GemmProblem> p(new GemmProblem(lt, type, n, workspace, workspace_bytes, stream));
  const TypeInfo info = Info(type);
  const size_t elems = static_cast<size_t>(n) * static_cast<size_t>(n);
  const std::string what = std::string(GemmTypeName(type)) + " n=" + std::to_string(n);
  GPUBENCH_CUDA(cudaMalloc(&p->a_, elems * info.bytes), what + ": allocating A");
  GPUBENCH_CUDA(cudaMalloc(&p->b_, elems * info.bytes), what + ": allocating B");
  GPUBENCH_CUDA(cudaMalloc(&p->d_, elems * info.bytes), what + ": allocating D");
  GPUBENCH_CUDA(FillUniform(info.element, p->a_, elems, kSeedA, stream), what + ": filling A");
  GPUBENCH_CUDA(FillUniform(info.element, p->b_, elems, kSeedB, stream), what + ": filling B");

  GPUBENCH_CUBLAS(cublasLtMatmulDescCreate(&p->desc_, info.compute, CUDA_R_32F),
                  what + ": cublasLtMatmulDescCreate");
  const cublasOperation_t trans_a = CUBLAS_OP_T;
  const cublasOperation_t trans_b = CUBLAS_OP_N;
  GPUBENCH_CUBLAS(cublasLtMatmulDescSetAttribute(p->desc_, CUBLASLT_MATMUL_DESC_TRANSA, &trans_a,
                                                 sizeof trans_a),
                  what + ": setting TRANSA");
  GPUBENCH_CUBLAS(cublasLtMatmulDescSetAttribute(p->desc_, CUBLASLT_MATMUL_DESC_TRANSB, &trans_b,
                                                 sizeof trans_b),
                  what + ": setting TRANSB");
  // A is stored K x M (op(A) = A^T is M x K), B K x N, D M x N; all column-major.
  const auto dim = static_cast<uint64_t>(n);
  GPUBENCH_CUBLAS(cublasLtMatrixLayoutCreate(&p->a_layout_, info.data, dim, dim, n),
                  what + ": layout of A");
  GPUBENCH_CUBLAS(cublasLtMatrixLayoutCreate(&p->b_layout_, info.data, dim, dim, n),
                  what + ": layout of B");
  GPUBENCH_CUBLAS(cublasLtMatrixLayoutCreate(&p->d_layout_, info.data, dim, dim, n),
                  what + ": layout of D");
  GPUBENCH_CUDA(cudaStreamSynchronize(stream), what + ": filling the inputs");
  return p;
}

double GemmProblem::Flops() const {
  const auto n = static_cast<double>(n_);
  return 2 * n * n * n;
}

StatusOr<std::vector<cublasLtMatmulAlgo_t>> GemmProblem::Algorithms(int max) {
  const std::string what = std::string(GemmTypeName(type_)) + " n=" + std::to_string(n_);
  cublasLtMatmulPreference_t pref = nullptr;
  GPUBENCH_CUBLAS(cublasLtMatmulPreferenceCreate(&pref), what + ": cublasLtMatmulPreferenceCreate");
  const uint64_t ws = workspace_bytes_;
  cublasStatus_t st = cublasLtMatmulPreferenceSetAttribute(
      pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws);
  std::vector<cublasLtMatmulHeuristicResult_t> results(static_cast<size_t>(std::max(max, 1)));
  int returned = 0;
  if (st == CUBLAS_STATUS_SUCCESS) {
    st =
        cublasLtMatmulAlgoGetHeuristic(lt_, desc_, a_layout_, b_layout_, d_layout_, d_layout_, pref,
                                       static_cast<int>(results.size()), results.data(), &returned);
  }
  cublasLtMatmulPreferenceDestroy(pref);
  GPUBENCH_CUBLAS(st, what + ": cublasLtMatmulAlgoGetHeuristic");
  std::vector<cublasLtMatmulAlgo_t> algos;
  for (int i = 0; i < returned; ++i) {
    if (results[static_cast<size_t>(i)].state == CUBLAS_STATUS_SUCCESS) {
      algos.push_back(results[static_cast<size_t>(i)].algo);
    }
  }
  if (algos.empty()) return Internal(what + ": cuBLASLt proposes no algorithm");
  return algos;
}

Status GemmProblem::Enqueue(const cublasLtMatmulAlgo_t& algo, int count) {
  const float alpha = 1.0f;
  const float beta = 0.0f;
  for (int i = 0; i < count; ++i) {
    GPUBENCH_CUBLAS(
        cublasLtMatmul(lt_, desc_, &alpha, a_, a_layout_, b_, b_layout_, &beta, d_, d_layout_, d_,
                       d_layout_, &algo, workspace_, workspace_bytes_, stream_),
        std::string(GemmTypeName(type_)) + ": cublasLtMatmul");
  }
  return Status::Ok();
}

Status GemmProblem::Download(const void* buffer, int64_t offset, int64_t count,
                             std::vector<double>* out) {
  const TypeInfo info = Info(type_);
  std::vector<unsigned char> raw(static_cast<size_t>(count) * info.bytes);
  GPUBENCH_CUDA(cudaMemcpy(raw.data(),
                           static_cast<const unsigned char*>(buffer) +
                               static_cast<size_t>(offset) * info.bytes,
                           raw.size(), cudaMemcpyDeviceToHost),
                std::string(GemmTypeName(type_)) + ": copying samples to the host");
  out->resize(static_cast<size_t>(count));
  for (size_t i = 0; i < out->size(); ++i) {
    const unsigned char* e = raw.data() + i * info.bytes;
    if (info.bytes == 4) {
      float f;
      std::memcpy(&f, e, 4);
      (*out)[i] = f;
    } else {
      uint16_t bits;
      std::memcpy(&bits, e, 2);
      (*out)[i] = type_ == GemmType::kBf16 ? Bf16BitsToDouble(bits) : HalfBitsToDouble(bits);
    }
  }
  return Status::Ok();
}

StatusOr<std::optional<std::string>> GemmProblem::Check(const cublasLtMatmulAlgo_t& algo) {
  const std::string what = std::string(GemmTypeName(type_)) + " n=" + std::to_string(n_);
  const size_t elems = static_cast<size_t>(n_) * static_cast<size_t>(n_);
  // All-ones bytes are NaN in FP16, BF16 and FP32: an output the GEMM leaves unwritten fails.
  GPUBENCH_CUDA(cudaMemsetAsync(d_, 0xff, elems * Info(type_).bytes, stream_),
                what + ": poisoning D");
  GPUNEX_RETURN_IF_ERROR(Enqueue(algo, 1));
  GPUBENCH_CUDA(cudaStreamSynchronize(stream_), what + ": running the checked GEMM");

  std::mt19937_64 rng(static_cast<uint64_t>(n_) * 7919 + static_cast<uint64_t>(type_));
  const std::vector<int64_t> rows = SpreadIndices(n_, kCheckRows, &rng);
  const std::vector<int64_t> cols = SpreadIndices(n_, kCheckCols, &rng);
  // Row i of op(A) is column i of the stored A: K contiguous elements.
  std::vector<std::vector<double>> a_rows(rows.size());
  for (size_t r = 0; r < rows.size(); ++r) {
    GPUNEX_RETURN_IF_ERROR(Download(a_, rows[r] * n_, n_, &a_rows[r]));
  }
  std::vector<double> got;
  std::vector<double> ref;
  std::vector<double> b_col;
  std::vector<double> d_col;
  for (int64_t j : cols) {
    GPUNEX_RETURN_IF_ERROR(Download(b_, j * n_, n_, &b_col));
    GPUNEX_RETURN_IF_ERROR(Download(d_, j * n_, n_, &d_col));
    for (size_t r = 0; r < rows.size(); ++r) {
      got.push_back(d_col[static_cast<size_t>(rows[r])]);
      ref.push_back(Dot(a_rows[r], b_col));
    }
  }
  return CheckGemmSamples(what, got, ref, Info(type_).tolerance);
}

}  // namespace gpunex::gpubench
