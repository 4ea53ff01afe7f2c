// Version 4, tensor cores through mma.sync (fp16/bf16 in, fp32 accumulate), sm_80+.
// Plan: a 256-thread block (8 warps, 2 along M x 4 along N) computes a 128x128 tile of C,
// stepping K by 32 through a 4-stage ring of shared-memory tiles filled by cp.async
// (LDGSTS, 16-byte chunks, 2 chunks of A and 2 of B per thread per stage; chunks that cross
// the matrix edge are loaded element by element and zero-filled, so any M, N, K works). While stage s
// is being multiplied, stages s+1..s+3 are in flight. Each warp owns a 64x32 sub-tile:
// per 16-wide k step it loads A with 4 ldmatrix.x4 and B with 2 ldmatrix.x4.trans (LDSM)
// and issues 4x4 mma.m16n8k16; its 64 fp32 accumulators stay in registers.
// Shared layouts are XOR-swizzled on 16-byte chunks so each 8-row ldmatrix phase hits 8
// distinct bank groups: A [128][32] (64 B rows): chunk ^= (row/2)%4; B [32][128] (256 B
// rows): chunk ^= row%8. Tiles are visited in groups of 8 tile-rows so neighbouring blocks
// share A and B panels in L2.
// Expected bound: mma.sync issue + ldmatrix bandwidth, no warp specialisation: ~0.6-0.7x
// cuBLAS bf16 (~400-470 TFLOP/s on H200); Hopper's full rate needs wgmma (version 5).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

#include "common/cuda_check.h"
#include "common/numeric.cuh"
#include "gemm/gemm_versions.h"

namespace cp::gemm_versions {
namespace {

constexpr int kBM = 128, kBN = 128, kBK = 32, kStages = 4, kThreads = 256;
constexpr int kGroupRows = 8;  // tile-rows per L2 group
constexpr int kATileElems = kBM * kBK, kBTileElems = kBK * kBN;
constexpr int kSmemBytes = kStages * (kATileElems + kBTileElems) * 2;

// Element offset of 16-byte chunk `chunk` of row `row` in the swizzled A / B stage tiles.
__device__ __forceinline__ int a_offset(int row, int chunk) { return row * kBK + ((chunk ^ ((row >> 1) & 3)) << 3); }
__device__ __forceinline__ int b_offset(int row, int chunk) { return row * kBN + ((chunk ^ (row & 7)) << 3); }

__device__ __forceinline__ std::uint32_t smem_addr(const void* p) {
  return static_cast<std::uint32_t>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void cp_async_16(void* dst, const void* src) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(smem_addr(dst)), "l"(src));
}

// One 8-element (16-byte) chunk of a stage tile, `left` elements of it inside the matrix (<= 0:
// none). Whole chunks go through cp.async; edge chunks are loaded element by element and
// zero-filled with ordinary stores, never a cp.async whose 16-byte source runs past the
// allocation (compute-sanitizer memcheck reports those as out-of-bounds 16-byte reads even with
// a smaller src-size). The __syncthreads before the stage is read orders both kinds of writes.
template <typename T>
__device__ __forceinline__ void load_chunk(T* dst, const T* src, std::int64_t left) {
  if (left >= 8) {
    cp_async_16(dst, src);
    return;
  }
#pragma unroll
  for (int j = 0; j < 8; ++j) dst[j] = j < left ? src[j] : from_float<T>(0.0f);
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

__device__ __forceinline__ void ldmatrix_x4(std::uint32_t (&r)[4], const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(p)));
}
__device__ __forceinline__ void ldmatrix_x4_trans(std::uint32_t (&r)[4], const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(p)));
}

template <typename T>
__device__ __forceinline__ void mma_16816(float (&d)[4], const std::uint32_t (&a)[4], std::uint32_t b0,
                                          std::uint32_t b1) {
  if constexpr (std::is_same_v<T, __half>) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  } else {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
}

template <typename T>
__global__ void __launch_bounds__(kThreads, 2) gemm_mma_sync_kernel(const T* __restrict__ a, std::int64_t lda,
                                                                  const T* __restrict__ b, std::int64_t ldb,
                                                                  T* __restrict__ c, std::int64_t ldc,
                                                                  std::int64_t m, std::int64_t n, std::int64_t k) {
  extern __shared__ __align__(128) unsigned char smem_raw[];
  T* const a_tiles = reinterpret_cast<T*>(smem_raw);
  T* const b_tiles = a_tiles + kStages * kATileElems;

  // Grouped tile order: kGroupRows tile-rows advance together along N.
  const std::int64_t tiles_m = (m + kBM - 1) / kBM, tiles_n = (n + kBN - 1) / kBN;
  const std::int64_t tiles_per_group = kGroupRows * tiles_n;
  const std::int64_t group = blockIdx.x / tiles_per_group;
  const std::int64_t first_row = group * kGroupRows;
  const std::int64_t rows_in_group = min(tiles_m - first_row, static_cast<std::int64_t>(kGroupRows));
  const std::int64_t in_group = blockIdx.x % tiles_per_group;
  const std::int64_t m0 = (first_row + in_group % rows_in_group) * kBM;
  const std::int64_t n0 = (in_group / rows_in_group) * kBN;

  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  const int warp_m = warp / 4, warp_n = warp % 4;  // 2 x 4 warps of 64 x 32

  auto load_stage = [&](int stage, std::int64_t k0) {
    T* as = a_tiles + stage * kATileElems;
    T* bs = b_tiles + stage * kBTileElems;
#pragma unroll
    for (int i = 0; i < 2; ++i) {  // A: 128 rows x 4 chunks
      const int idx = tid + i * kThreads, row = idx / 4, chunk = idx % 4;
      const std::int64_t gr = m0 + row, gc = k0 + chunk * 8;
      const std::int64_t left = gr < m ? k - gc : 0;
      load_chunk(as + a_offset(row, chunk), a + (left > 0 ? gr * lda + gc : 0), left);
    }
#pragma unroll
    for (int i = 0; i < 2; ++i) {  // B: 32 rows x 16 chunks
      const int idx = tid + i * kThreads, row = idx / 16, chunk = idx % 16;
      const std::int64_t gr = k0 + row, gc = n0 + chunk * 8;
      const std::int64_t left = gr < k ? n - gc : 0;
      load_chunk(bs + b_offset(row, chunk), b + (left > 0 ? gr * ldb + gc : 0), left);
    }
  };

  float acc[4][4][4] = {};  // [m16 tile][n8 tile][fragment]
  const std::int64_t k_tiles = (k + kBK - 1) / kBK;
#pragma unroll
  for (int s = 0; s < kStages - 1; ++s) {
    if (s < k_tiles) load_stage(s, s * kBK);
    cp_async_commit();  // empty groups keep the wait_group count uniform
  }

  for (std::int64_t kt = 0; kt < k_tiles; ++kt) {
    cp_async_wait<kStages - 2>();  // tile kt has landed (for this thread) ...
    __syncthreads();               // ... and for every thread; stage (kt-1)%S is free again
    const std::int64_t next = kt + kStages - 1;
    if (next < k_tiles) load_stage(static_cast<int>(next % kStages), next * kBK);
    cp_async_commit();

    const int stage = static_cast<int>(kt % kStages);
    const T* as = a_tiles + stage * kATileElems;
    const T* bs = b_tiles + stage * kBTileElems;
#pragma unroll
    for (int kk = 0; kk < kBK; kk += 16) {
      std::uint32_t af[4][4], bf[2][4];
#pragma unroll
      for (int mi = 0; mi < 4; ++mi) {
        const int row = warp_m * 64 + mi * 16 + (lane % 16);
        ldmatrix_x4(af[mi], as + a_offset(row, kk / 8 + lane / 16));
      }
#pragma unroll
      for (int nj = 0; nj < 2; ++nj) {
        const int row = kk + (lane % 16);
        ldmatrix_x4_trans(bf[nj], bs + b_offset(row, (warp_n * 32 + nj * 16) / 8 + lane / 16));
      }
#pragma unroll
      for (int mi = 0; mi < 4; ++mi)
#pragma unroll
        for (int ni = 0; ni < 4; ++ni)
          mma_16816<T>(acc[mi][ni], af[mi], bf[ni / 2][(ni % 2) * 2], bf[ni / 2][(ni % 2) * 2 + 1]);
    }
  }
  cp_async_wait<0>();

  const int g = lane / 4, t = lane % 4;
#pragma unroll
  for (int mi = 0; mi < 4; ++mi)
#pragma unroll
    for (int ni = 0; ni < 4; ++ni)
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        const std::int64_t row = m0 + warp_m * 64 + mi * 16 + g + half * 8;
        const std::int64_t col = n0 + warp_n * 32 + ni * 8 + 2 * t;
        if (row >= m) continue;
        if (col < n) c[row * ldc + col] = from_float<T>(acc[mi][ni][half * 2]);
        if (col + 1 < n) c[row * ldc + col + 1] = from_float<T>(acc[mi][ni][half * 2 + 1]);
      }
}

template <typename T>
void launch(const ConstMatrixView& a, const ConstMatrixView& b, const MatrixView& c, cudaStream_t stream) {
  const std::int64_t m = a.rows, n = b.cols, k = a.cols;
  const std::int64_t tiles = ((m + kBM - 1) / kBM) * ((n + kBN - 1) / kBN);
  if (tiles > 0x7fffffff) throw std::invalid_argument("gemm(mma_sync): more than 2^31-1 output tiles");
  CP_CUDA_CHECK(cudaFuncSetAttribute(gemm_mma_sync_kernel<T>, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemBytes));
  gemm_mma_sync_kernel<T><<<static_cast<unsigned>(tiles), kThreads, kSmemBytes, stream>>>(
      static_cast<const T*>(a.data), a.row_stride, static_cast<const T*>(b.data), b.row_stride,
      static_cast<T*>(c.data), c.row_stride, m, n, k);
  CP_CHECK_LAUNCH("gemm_mma_sync_kernel");
}

}  // namespace

void mma_sync(DType dtype, const ConstMatrixView& a, const ConstMatrixView& b, const MatrixView& c,
              cudaStream_t stream) {
  switch (dtype) {
    case DType::F16: launch<__half>(a, b, c, stream); break;
    case DType::BF16: launch<__nv_bfloat16>(a, b, c, stream); break;
    case DType::F32: throw std::invalid_argument("gemm(mma_sync): float32 is not supported");
  }
}

}  // namespace cp::gemm_versions
