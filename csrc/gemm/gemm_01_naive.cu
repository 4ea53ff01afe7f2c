// Version 1, naive: one thread per output element C[m, n], looping over k with two global
// loads per multiply-add. Threads of a warp share m and take consecutive n, so B and C are
// coalesced for row-major B while A's element is a broadcast. Grid-strided over both
// dimensions, so any M, N works with a capped grid; any strides.
// Expected bound: L1/L2 traffic, 2 loads per FMA with little reuse: ~1-3 TFLOP/s fp32 on
// H200 (a few % of cuBLAS fp32's 51), whatever the dtype.
#include <algorithm>

#include "common/cuda_check.h"
#include "common/dispatch.h"
#include "gemm/gemm_operand.cuh"
#include "gemm/gemm_versions.h"

namespace cp::gemm_versions {
namespace {

constexpr int kBlockX = 32, kBlockY = 8;

template <typename T>
__global__ void gemm_naive_kernel(StridedIn<T> a, StridedIn<T> b, RowMajorOut<T> c, std::int64_t m,
                                  std::int64_t n, std::int64_t k) {
  for (std::int64_t row = blockIdx.y * static_cast<std::int64_t>(blockDim.y) + threadIdx.y; row < m;
       row += static_cast<std::int64_t>(gridDim.y) * blockDim.y) {
    for (std::int64_t col = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; col < n;
         col += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
      float acc = 0.0f;
      for (std::int64_t i = 0; i < k; ++i) acc = fmaf(a.at(row, i), b.at(i, col), acc);
      c.store(row, col, acc);
    }
  }
}

}  // namespace

void naive(DType dtype, const ConstMatrixView& a, const ConstMatrixView& b, const MatrixView& c,
           cudaStream_t stream) {
  const std::int64_t m = a.rows, n = b.cols, k = a.cols;
  const dim3 block(kBlockX, kBlockY);
  const dim3 grid(static_cast<unsigned>(std::min<std::int64_t>((n + kBlockX - 1) / kBlockX, 1 << 20)),
                  static_cast<unsigned>(std::min<std::int64_t>((m + kBlockY - 1) / kBlockY, 65535)));
  CP_DISPATCH_FLOAT_TYPES(dtype, T, {
    gemm_naive_kernel<T><<<grid, block, 0, stream>>>(strided_in<T>(a), strided_in<T>(b), row_major_out<T>(c), m, n, k);
  })
  CP_CHECK_LAUNCH("gemm_naive_kernel");
}

}  // namespace cp::gemm_versions
