// Version 4, tensor cores through mma.sync (fp16/bf16 in, fp32 accumulate), sm_80+.
// Plan: a 256-thread block (8 warps, 2 along M x 4 along N) computes a 128x256 tile of C,
// stepping K by 32 through a 4-stage ring of shared-memory tiles filled by cp.async (LDGSTS,
// 16-byte chunks: 2 of A and 4 of B per thread per stage). While stage s is multiplied,
// stages s+1..s+3 are in flight; the copy for stage s+3 is issued at the top of step s.
// Each warp owns a 64x64 sub-tile: 128 fp32 accumulators per thread in registers. Per 16-wide
// k step it loads A with 4 ldmatrix.x4 and B with 4 ldmatrix.x4.trans (LDSM) and issues
// 4x8 mma.m16n8k16 (32 mma per 8 LDSM). Fragments are double-buffered in registers (2 x 32):
// those of step kk+1 are loaded before the mma of step kk, across the stage boundary too (the
// one wait + __syncthreads per 32-wide K tile sits after the mma of the next-to-last step), so
// an mma never waits on the ldmatrix just issued. 252 registers (sm_90; built for sm_80-90), no spills:
// __launch_bounds__(256, 1), one block per SM.
// Tiles wholly inside the matrix (every tile of 4096^3) take a branch-free copy; edge tiles
// copy whole in-bounds chunks with cp.async, zero-fill chunks past the edge and load partial
// chunks element by element (never a 16-byte cp.async whose source runs past the allocation:
// compute-sanitizer memcheck reports those even with a smaller src-size), so any M, N, K works.
// Shared layouts are XOR-swizzled on 16-byte chunks so that 8 rows at one logical chunk hit 8
// distinct bank groups, conflict-free for the cp.async stores, ldmatrix reads and the
// epilogue: A [128][32] (64 B rows): chunk ^= (row/2)%4; B [32][256] and C [128][256]:
// chunk ^= row%8. Ring: 4 x (8 KiB A + 16 KiB B) = 96 KiB dynamic (fits sm_80/86/89/90).
// Epilogue: accumulators rounded to T into the (drained) ring as a 64 KiB C tile, then each
// warp writes whole 512-byte rows with 16-byte stores (element stores at the N edge or where
// C is not 16-byte aligned). Tiles are visited in groups of 8 tile-rows for L2 reuse.
// Expected bound: mma.sync issue rate. On Hopper, mma.sync reaches roughly 2/3 of wgmma's peak;
// with 1 block (8 warps) per SM and ~60% of the shared-memory bandwidth used by LDSM + LDGSTS,
// ~0.60-0.65x cuBLAS bf16 at 4096^3 (~430-470 TFLOP/s on H200). The rest needs wgmma (version 5).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

#include "common/cuda_check.h"
#include "gemm/gemm_versions.h"

namespace cp::gemm_versions {
namespace {

constexpr int kBM = 128, kBN = 256, kBK = 32, kStages = 4, kThreads = 256;
constexpr int kWarpM = 64, kWarpN = 64, kWarpsN = kBN / kWarpN;  // 2 x 4 warps
constexpr int kMTiles = kWarpM / 16, kNTiles = kWarpN / 8;       // m16 x n8 mma tiles per warp
constexpr int kKSteps = kBK / 16;
constexpr int kGroupRows = 8;                                     // tile-rows per L2 group
constexpr int kAChunks = kBK / 8, kBChunks = kBN / 8, kCChunks = kBN / 8;  // 16-byte chunks per tile row
constexpr int kAStageBytes = kBM * kBK * 2, kBStageBytes = kBK * kBN * 2;
constexpr int kRingBytes = kStages * (kAStageBytes + kBStageBytes);
constexpr int kCTileBytes = kBM * kBN * 2;
constexpr int kSmemBytes = kRingBytes > kCTileBytes ? kRingBytes : kCTileBytes;
static_assert(kKSteps >= 2, "the stage barrier sits after the mma of step kKSteps-2");
static_assert((kBM / kWarpM) * kWarpsN * 32 == kThreads, "one warp per warp tile");

// Index of the 16-byte chunk holding logical chunk `chunk` of row `row` in a swizzled tile with
// kChunks chunks per row. 8 consecutive rows at one logical chunk land on 8 distinct 16-byte
// bank groups (a 128-byte line holds 8 chunks, i.e. 128/(16*kChunks) rows when kChunks < 8).
template <int kChunks>
__device__ __forceinline__ int swizzled(int row, int chunk) {
  constexpr int kRowsPerLine = kChunks >= 8 ? 1 : 8 / kChunks;
  constexpr int kMask = (kChunks >= 8 ? 8 : kChunks) - 1;
  return row * kChunks + (chunk ^ ((row / kRowsPerLine) & kMask));
}

__device__ __forceinline__ void cp_async_16(std::uint32_t dst, const void* src) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst), "l"(src));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}
__device__ __forceinline__ void st_shared_16(std::uint32_t dst, uint4 v) {
  asm volatile("st.shared.v4.b32 [%0], {%1,%2,%3,%4};\n" ::"r"(dst), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w));
}
__device__ __forceinline__ uint4 ld_shared_16(std::uint32_t src) {
  uint4 v;
  asm volatile("ld.shared.v4.b32 {%0,%1,%2,%3}, [%4];\n" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "r"(src));
  return v;
}
__device__ __forceinline__ void st_global_16(void* dst, uint4 v) {
  asm volatile("st.global.v4.b32 [%0], {%1,%2,%3,%4};\n" ::"l"(dst), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w)
               : "memory");
}
__device__ __forceinline__ void st_shared_4(std::uint32_t dst, std::uint32_t v) {
  asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(dst), "r"(v));
}

// A chunk of 8 elements of which `left` lie inside the matrix (<= 0: none). Whole chunks go
// through cp.async; the rest are read element by element (raw 16-bit patterns: 0 is +0.0 in
// fp16 and bf16) and written with one 16-byte store. The barrier before the stage is read
// orders both kinds of writes.
__device__ __forceinline__ void copy_chunk_checked(std::uint32_t dst, const void* src, std::int64_t left) {
  if (left >= 8) {
    cp_async_16(dst, src);
    return;
  }
  const auto* s = static_cast<const std::uint16_t*>(src);
  std::uint32_t w[4];
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const std::uint32_t lo = 2 * i < left ? s[2 * i] : 0u, hi = 2 * i + 1 < left ? s[2 * i + 1] : 0u;
    w[i] = lo | (hi << 16);
  }
  st_shared_16(dst, make_uint4(w[0], w[1], w[2], w[3]));
}

// One operand's stage tile, kRows x kChunks 16-byte chunks: thread t copies chunk t % kChunks of
// rows t / kChunks + i * kRowsPerPass. `dst` and `src` address the thread's first chunk in shared
// and global memory, `row` and `chunk` say which it is; rows_left / cols_left: rows and columns
// of the tile inside the matrix. kChecked = false assumes the whole tile is inside.
template <int kRows, int kChunks, bool kChecked, typename T>
__device__ __forceinline__ void copy_tile(std::uint32_t dst, const T* src, std::int64_t ld, int row, int chunk,
                                          std::int64_t rows_left, std::int64_t cols_left) {
  constexpr int kRowsPerPass = kThreads / kChunks;
  static_assert(kRowsPerPass % 8 == 0 && kRows % kRowsPerPass == 0, "passes keep the swizzle phase");
#pragma unroll
  for (int i = 0; i < kRows / kRowsPerPass; ++i) {
    const std::uint32_t d = dst + i * kRowsPerPass * kChunks * 16;
    const T* s = src + i * kRowsPerPass * ld;
    if constexpr (kChecked)
      copy_chunk_checked(d, s, row + i * kRowsPerPass < rows_left ? cols_left - chunk * 8 : 0);
    else
      cp_async_16(d, s);
  }
}

// One uniform branch per tile and operand: interior tiles take the branch-free copy.
template <int kRows, int kChunks, typename T>
__device__ __forceinline__ void load_tile(std::uint32_t dst, const T* src, std::int64_t ld, int row, int chunk,
                                          std::int64_t rows_left, std::int64_t cols_left) {
  if (rows_left >= kRows && cols_left >= kChunks * 8)
    copy_tile<kRows, kChunks, false>(dst, src, ld, row, chunk, rows_left, cols_left);
  else
    copy_tile<kRows, kChunks, true>(dst, src, ld, row, chunk, rows_left, cols_left);
}

__device__ __forceinline__ void ldmatrix_x4(std::uint32_t (&r)[4], std::uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}
__device__ __forceinline__ void ldmatrix_x4_trans(std::uint32_t (&r)[4], std::uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
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

// Two floats rounded to T, `lo` in the low half (the lower column).
template <typename T>
__device__ __forceinline__ std::uint32_t pack2(float lo, float hi) {
  if constexpr (std::is_same_v<T, __half>) {
    const __half2 v = __floats2half2_rn(lo, hi);
    return *reinterpret_cast<const std::uint32_t*>(&v);
  } else {
    const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<const std::uint32_t*>(&v);
  }
}

template <typename T>
__global__ void __launch_bounds__(kThreads, 1) gemm_mma_sync_kernel(const T* __restrict__ a, std::int64_t lda,
                                                                  const T* __restrict__ b, std::int64_t ldb,
                                                                  T* __restrict__ c, std::int64_t ldc,
                                                                  std::int64_t m, std::int64_t n, std::int64_t k) {
  extern __shared__ __align__(128) unsigned char smem_raw[];
  const std::uint32_t a_ring = static_cast<std::uint32_t>(__cvta_generic_to_shared(smem_raw));
  const std::uint32_t b_ring = a_ring + kStages * kAStageBytes;

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
  const int warp_m = warp / kWarpsN, warp_n = warp % kWarpsN;

  // This thread's first chunk of each stage tile (see copy_tile), at k = 0.
  const int a_row = tid / kAChunks, a_chunk = tid % kAChunks, b_row = tid / kBChunks, b_chunk = tid % kBChunks;
  const std::uint32_t a_dst = a_ring + 16 * swizzled<kAChunks>(a_row, a_chunk);
  const std::uint32_t b_dst = b_ring + 16 * swizzled<kBChunks>(b_row, b_chunk);
  const T* const a_src = a + (m0 + a_row) * lda + a_chunk * 8;
  const T* const b_src = b + b_row * ldb + n0 + b_chunk * 8;
  auto load_stage = [&](int stage, std::int64_t kt) {
    const std::int64_t k0 = kt * kBK;
    load_tile<kBM, kAChunks>(a_dst + stage * kAStageBytes, a_src + k0, lda, a_row, a_chunk, m - m0, k - k0);
    load_tile<kBK, kBChunks>(b_dst + stage * kBStageBytes, b_src + k0 * ldb, ldb, b_row, b_chunk, k - k0, n - n0);
  };

  // ldmatrix.x4 lane roles: lanes 0-15 address rows 0-15 of the 16x16 block at its first 8
  // columns, lanes 16-31 the same rows at the next 8. For A that yields a0..a3 of the m16k16
  // fragment; for B (k rows, .trans) b0,b1 of n8 tile 2j in r[0],r[1] and of tile 2j+1 in r[2],r[3].
  // The swizzle depends on the row mod 8 only, so moving 16 rows down (A: next m16 tile, B: next
  // k step) adds a constant: 6 per-thread offsets cover every ldmatrix of a stage.
  constexpr int kAFragStride = 16 * kAChunks * 16, kBFragStride = 16 * kBChunks * 16;  // bytes per 16 rows
  std::uint32_t a_frag_off[kKSteps], b_frag_off[kNTiles / 2];
#pragma unroll
  for (int kk = 0; kk < kKSteps; ++kk)
    a_frag_off[kk] = 16 * swizzled<kAChunks>(warp_m * kWarpM + lane % 16, kk * 2 + lane / 16);
#pragma unroll
  for (int nj = 0; nj < kNTiles / 2; ++nj)
    b_frag_off[nj] = 16 * swizzled<kBChunks>(lane % 16, (warp_n * kWarpN + nj * 16) / 8 + lane / 16);
  std::uint32_t af[2][kMTiles][4], bf[2][kNTiles / 2][4];
  auto load_fragments = [&](int buf, int stage, int kk) {
#pragma unroll
    for (int mi = 0; mi < kMTiles; ++mi)
      ldmatrix_x4(af[buf][mi], a_ring + stage * kAStageBytes + a_frag_off[kk] + mi * kAFragStride);
#pragma unroll
    for (int nj = 0; nj < kNTiles / 2; ++nj)
      ldmatrix_x4_trans(bf[buf][nj], b_ring + stage * kBStageBytes + b_frag_off[nj] + kk * kBFragStride);
  };

  float acc[kMTiles][kNTiles][4] = {};  // [m16 tile][n8 tile][fragment]
  const std::int64_t k_tiles = (k + kBK - 1) / kBK;
#pragma unroll 1
  for (int s = 0; s < kStages - 1; ++s) {
    if (s < k_tiles) load_stage(s, s);
    cp_async_commit();  // empty groups keep the wait_group count uniform
  }
  cp_async_wait<kStages - 2>();
  __syncthreads();
  int read_stage = 0, write_stage = kStages - 1;
  load_fragments(0, read_stage, 0);

  for (std::int64_t kt = 0; kt < k_tiles; ++kt) {
#pragma unroll
    for (int kk = 0; kk < kKSteps; ++kk) {
      // Fragments for the next step first; at the last step they come from the next stage,
      // which the barrier below (one step earlier) made visible.
      if (kk + 1 < kKSteps)
        load_fragments((kk + 1) % 2, read_stage, kk + 1);
      else if (kt + 1 < k_tiles)
        load_fragments((kk + 1) % 2, read_stage, 0);
      if (kk == 0) {
        // write_stage was last read (fragments of step kKSteps-1) before the previous barrier.
        if (kt + kStages - 1 < k_tiles) load_stage(write_stage, kt + kStages - 1);
        cp_async_commit();
        write_stage = write_stage == kStages - 1 ? 0 : write_stage + 1;
      }
      // Serpentine over n8 tiles: consecutive mma share an operand.
#pragma unroll
      for (int mi = 0; mi < kMTiles; ++mi)
#pragma unroll
        for (int j = 0; j < kNTiles; ++j) {
          const int ni = mi % 2 ? kNTiles - 1 - j : j;
          mma_16816<T>(acc[mi][ni], af[kk % 2][mi], bf[kk % 2][ni / 2][(ni % 2) * 2],
                       bf[kk % 2][ni / 2][(ni % 2) * 2 + 1]);
        }
      if (kk == kKSteps - 2) {
        cp_async_wait<kStages - 2>();  // tile kt+1 has landed (for this thread) ...
        __syncthreads();               // ... and for every thread; every warp is done with read_stage
        read_stage = read_stage == kStages - 1 ? 0 : read_stage + 1;
      }
    }
  }
  cp_async_wait<0>();
  __syncthreads();  // every warp is done with the ring: reuse it as the C tile

  const std::uint32_t c_tile = a_ring;
  const int g = lane / 4, t = lane % 4;
#pragma unroll
  for (int mi = 0; mi < kMTiles; ++mi)
#pragma unroll
    for (int ni = 0; ni < kNTiles; ++ni)
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        const int row = warp_m * kWarpM + mi * 16 + g + half * 8;
        const int col = warp_n * kWarpN + ni * 8 + 2 * t;
        st_shared_4(c_tile + 16 * swizzled<kCChunks>(row, col / 8) + 2 * (col % 8),
                    pack2<T>(acc[mi][ni][half * 2], acc[mi][ni][half * 2 + 1]));
      }
  __syncthreads();

#pragma unroll 4
  for (int i = 0; i < kBM * kCChunks / kThreads; ++i) {
    const int idx = tid + i * kThreads, row = idx / kCChunks, chunk = idx % kCChunks;
    const std::int64_t grow = m0 + row, gcol = n0 + chunk * 8;
    if (grow >= m || gcol >= n) continue;
    const uint4 v = ld_shared_16(c_tile + 16 * swizzled<kCChunks>(row, chunk));
    T* const dst = c + grow * ldc + gcol;
    if (gcol + 8 <= n && reinterpret_cast<std::uintptr_t>(dst) % 16 == 0) {
      st_global_16(dst, v);
    } else {
      const std::uint32_t w[4] = {v.x, v.y, v.z, v.w};
      auto* d16 = reinterpret_cast<std::uint16_t*>(dst);
#pragma unroll
      for (int j = 0; j < 8; ++j)
        if (j < n - gcol) d16[j] = static_cast<std::uint16_t>(w[j / 2] >> (16 * (j % 2)));
    }
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
