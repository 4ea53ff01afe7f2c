// Version 3, register-blocked SIMT (the fp32 workhorse; fp16/bf16 are converted to fp32 on load).
// Plan: a 256-thread block computes a 128x128 tile of C, stepping K by 8. Each step every thread
// loads 4 consecutive-in-K elements of A (row tid/2) and 4 consecutive-in-N elements of B
// (row tid/32), as one 16-byte (fp32) / 8-byte (fp16, bf16) vector when the operand's rows are
// contiguous and aligned and the chunk is inside the matrix, else element by element with
// masks (any strides, any M, N, K). The values go to shared memory as fp32, A transposed
// (As[k][m]) so both operands are read back as float4. Shared memory is double-buffered and
// the next tile's global loads are issued before this tile's math, so one barrier per step.
// Each thread keeps an 8x8 fp32 accumulator in registers: rows {4ty..4ty+3, 64+4ty..}, columns
// {4tx..4tx+3, 64+4tx..} (tx = tid%16, ty = tid/16): 64 FMAs per 4 LDS.128, and the two
// 64-apart halves keep a warp's float4 reads free of bank conflicts. The grid is 1-D over
// tiles (N fastest), so any M and N fit.
// Expected bound: FP32 FMA issue: ~0.7-0.85x cuBLAS fp32 (36-43 of 51 TFLOP/s on H200).
#include <cstdint>

#include "common/cuda_check.h"
#include "common/dispatch.h"
#include "gemm/gemm_operand.cuh"
#include "gemm/gemm_versions.h"

namespace cp::gemm_versions {
namespace {

constexpr int kBM = 128, kBN = 128, kBK = 8, kThreads = 256;

template <typename T>
struct alignas(4 * sizeof(T)) Vec4 {
  T v[4];
};

// Four elements at base + i * step (i < 4): one vector load when `vector_ok`, else masked
// scalar loads (`limit` counts the elements left in the row, zero-filling the rest).
template <typename T>
__device__ __forceinline__ void load4(const T* base, std::int64_t step, std::int64_t limit, bool vector_ok,
                                      float (&out)[4]) {
  if (vector_ok && limit >= 4) {
    const Vec4<T> q = *reinterpret_cast<const Vec4<T>*>(base);
#pragma unroll
    for (int i = 0; i < 4; ++i) out[i] = to_float(q.v[i]);
  } else {
#pragma unroll
    for (int i = 0; i < 4; ++i) out[i] = i < limit ? to_float(base[i * step]) : 0.0f;
  }
}

template <typename T>
__global__ void __launch_bounds__(kThreads) gemm_register_blocked_kernel(StridedIn<T> a, StridedIn<T> b,
                                                                          RowMajorOut<T> c, std::int64_t m,
                                                                          std::int64_t n, std::int64_t k,
                                                                          bool a_vector, bool b_vector) {
  __shared__ __align__(16) float as[2][kBK][kBM];
  __shared__ __align__(16) float bs[2][kBK][kBN];
  const int tid = threadIdx.x;
  const std::int64_t tiles_n = (n + kBN - 1) / kBN;
  const std::int64_t m0 = blockIdx.x / tiles_n * kBM;
  const std::int64_t n0 = blockIdx.x % tiles_n * kBN;

  // This thread's share of each tile load.
  const int a_row = tid / 2, a_k = (tid % 2) * 4;   // 128 rows x 2 chunks of 4
  const int b_row = tid / 32, b_n = (tid % 32) * 4;  // 8 rows x 32 chunks of 4
  const bool a_row_in = m0 + a_row < m;
  const std::int64_t b_cols_left = n - (n0 + b_n);
  float a_next[4], b_next[4];

  auto load_tile = [&](std::int64_t k0) {
    const std::int64_t ak = k0 + a_k;
    if (a_row_in && ak < k) {
      load4(a.p + (m0 + a_row) * a.row_stride + ak * a.col_stride, a.col_stride, k - ak, a_vector, a_next);
    } else {
#pragma unroll
      for (int i = 0; i < 4; ++i) a_next[i] = 0.0f;
    }
    const std::int64_t bk = k0 + b_row;
    if (bk < k && b_cols_left > 0) {
      load4(b.p + bk * b.row_stride + (n0 + b_n) * b.col_stride, b.col_stride, b_cols_left, b_vector, b_next);
    } else {
#pragma unroll
      for (int i = 0; i < 4; ++i) b_next[i] = 0.0f;
    }
  };
  auto store_tile = [&](int buf) {
#pragma unroll
    for (int i = 0; i < 4; ++i) as[buf][a_k + i][a_row] = a_next[i];
    *reinterpret_cast<float4*>(&bs[buf][b_row][b_n]) = make_float4(b_next[0], b_next[1], b_next[2], b_next[3]);
  };

  const int tx = tid % 16, ty = tid / 16;
  float acc[8][8] = {};
  const std::int64_t k_tiles = (k + kBK - 1) / kBK;
  load_tile(0);
  store_tile(0);
  __syncthreads();
  for (std::int64_t t = 0; t < k_tiles; ++t) {
    const int buf = static_cast<int>(t & 1);
    if (t + 1 < k_tiles) load_tile((t + 1) * kBK);
#pragma unroll
    for (int kk = 0; kk < kBK; ++kk) {
      const float4 a_lo = *reinterpret_cast<const float4*>(&as[buf][kk][4 * ty]);
      const float4 a_hi = *reinterpret_cast<const float4*>(&as[buf][kk][64 + 4 * ty]);
      const float4 b_lo = *reinterpret_cast<const float4*>(&bs[buf][kk][4 * tx]);
      const float4 b_hi = *reinterpret_cast<const float4*>(&bs[buf][kk][64 + 4 * tx]);
      const float af[8] = {a_lo.x, a_lo.y, a_lo.z, a_lo.w, a_hi.x, a_hi.y, a_hi.z, a_hi.w};
      const float bf[8] = {b_lo.x, b_lo.y, b_lo.z, b_lo.w, b_hi.x, b_hi.y, b_hi.z, b_hi.w};
#pragma unroll
      for (int i = 0; i < 8; ++i)
#pragma unroll
        for (int j = 0; j < 8; ++j) acc[i][j] = fmaf(af[i], bf[j], acc[i][j]);
    }
    if (t + 1 < k_tiles) store_tile(buf ^ 1);
    __syncthreads();
  }

#pragma unroll
  for (int i = 0; i < 8; ++i) {
    const std::int64_t row = m0 + (i < 4 ? 4 * ty + i : 64 + 4 * ty + (i - 4));
    if (row >= m) continue;
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      const std::int64_t col = n0 + (j < 4 ? 4 * tx + j : 64 + 4 * tx + (j - 4));
      if (col < n) c.store(row, col, acc[i][j]);
    }
  }
}

// Whole 4-element chunks along an operand's rows can be read as one vector: unit stride
// there, and every chunk start (row starts + multiples of 4 elements) aligned to 4 elements.
bool rows_vectorizable(const ConstMatrixView& v, std::size_t esize) {
  const std::size_t chunk = 4 * esize;
  return v.col_stride == 1 && v.row_stride % 4 == 0 && reinterpret_cast<std::uintptr_t>(v.data) % chunk == 0;
}

}  // namespace

void register_blocked(DType dtype, const ConstMatrixView& a, const ConstMatrixView& b, const MatrixView& c,
                      cudaStream_t stream) {
  const std::int64_t m = a.rows, n = b.cols, k = a.cols;
  const std::int64_t tiles = ((m + kBM - 1) / kBM) * ((n + kBN - 1) / kBN);
  if (tiles > 0x7fffffff) throw std::invalid_argument("gemm(register_blocked): more than 2^31-1 output tiles");
  const unsigned grid = static_cast<unsigned>(tiles);
  const std::size_t es = dtype_size(dtype);
  // A's chunks run along K (its columns): the same test as B's chunks along N.
  const bool a_vector = rows_vectorizable(a, es), b_vector = rows_vectorizable(b, es);
  CP_DISPATCH_FLOAT_TYPES(dtype, T, {
    gemm_register_blocked_kernel<T><<<grid, kThreads, 0, stream>>>(strided_in<T>(a), strided_in<T>(b),
                                                                    row_major_out<T>(c), m, n, k, a_vector,
                                                                    b_vector);
  })
  CP_CHECK_LAUNCH("gemm_register_blocked_kernel");
}

}  // namespace cp::gemm_versions
