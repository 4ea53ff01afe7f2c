// Version 3, register-blocked SIMT (the fp32 workhorse; fp16/bf16 are converted to fp32 on the
// way to shared memory; allow_tf32 changes nothing here: every product is an fp32 FFMA).
//
// Plan (v2: warp tiling, BK = 16). A 256-thread block computes a 128x128 tile of C, stepping K
// by 16. Its 8 warps form a 4 (M) x 2 (N) grid of 32x64 warp tiles; a warp's 32 lanes form a
// 4 (M) x 8 (N) grid and each lane owns an 8x8 block of C as 2x2 sub-blocks of 4x4: rows
// wm + {0, 16} + 4*lane_m + {0..3}, columns wn + {0, 32} + 4*lane_n + {0..3}. Per k step a
// thread reads 8 A and 8 B values with 4 LDS.128 and issues 64 FFMA (16 FFMA per LDS). Each
// LDS.128 of a warp reads one contiguous span (64 B of A, 128 B of B) that the other lanes
// read too (broadcast): one shared-memory wavefront, no bank conflicts.
//
// Registers: the 8x8 fp32 accumulator and, in the aligned kernels, the A/B fragments of two k
// steps (those of step kk+1 are loaded while step kk's FFMAs issue, across the tile boundary
// too); both general kernels load step kk's fragments just before its FFMAs (their masked loads
// need the registers). Shared memory,
// double-buffered: A transposed, as[k][m], rows padded to 132 floats so that a warp's
// transposing 4-byte stores (16 rows x 2 k groups) hit 32 distinct banks; B as bs[k][n].
// One __syncthreads per K tile: tile t+1 is written into the other buffer during tile t, and
// in the aligned kernels the barrier sits before step 15's FFMAs, which then overlap the first
// LDS of tile t+1 (after them in the general kernels). The
// tile loop is unrolled by two, so the buffer index (and every shared address) is a constant.
//
// Loads. "Aligned" operands (unit column stride, rows and base aligned to 4 elements, K and N
// multiples of 4: the host checks; every 4096^3-style benchmark shape) take a kernel in which
// every 4-element chunk is wholly inside the matrix or wholly outside it: rows of A past M and
// chunks of B past N are clamped to the last row / chunk (their products land in accumulators
// that are never stored) and the partial K tile comes first, so every later tile is a plain
// vector copy. Any other operands (any strides, odd K or N) take the general kernel, which
// masks element by element and zero-fills past M, N and K. No load leaves the matrix, and no
// cp.async has a source that is not wholly inside it. Tiles after the first (which goes
// through registers, except in the general fp32 kernel: cp.async and an immediate wait) arrive
// by cp.async (LDGSTS), issued at step 0 of tile t for tile t+1 and
// waited for at step 14, so no staging registers are live across the k steps (except in the
// general fp16/bf16 kernel, the last case below):
// - aligned: each thread copies its 2 chunks of B (fp32: 16 B straight into bs) and of A into
//   its own slots of a_raw / b_raw, and after the wait converts / transposes them into as, bs
//   (fp32: 2 LDS.128 + 8 STS per tile);
// - general fp32: 4-byte copies per element straight to their (transposed) place, 16-byte ones
//   for whole aligned B chunks, zero stores where masked;
// - general fp16/bf16 (element loads that cp.async cannot do): through registers, one chunk
//   per 4 k steps.
// Epilogue: 4-element row pieces of C, one 16-/8-byte store where C's rows are aligned and the
// piece is inside N, else masked element stores. The grid is 1-D over tiles (N fastest).
//
// Expected bound: FFMA issue (one warp instruction per clock per SM sub-partition). H200: 132
// SMs x 128 FP32 lanes x 2 FLOP x ~1.98 GHz = ~67 TFLOP/s at boost; cuBLAS reaches 51.4 at
// 4096^3 (0.77 of that: power/clock and its own overhead). Aligned fp32, per K tile and thread:
// 1024 FFMA in ~1136 issued instructions (64 fragment LDS.128; 4 LDGSTS, 2 LDS.128 + 8 STS for
// A's transpose; one barrier; ~25 address and loop ops): 90% of issue slots are FFMA, against
// ~83% in v1 (BK = 8, masks and 64-bit address arithmetic in every tile). 127 registers, 2
// blocks (16 warps) per SM to cover LDS latency and one block's barrier. Predicted 0.84-0.90x
// cuBLAS fp32 at 4096^3; measured 47.4 TFLOP/s, 0.93x (bf16 through the same kernel: 46.5;
// docs/perf-log.md, register_blocked v2).
#include <cstdint>
#include <type_traits>

#include "common/cuda_check.h"
#include "common/dispatch.h"
#include "gemm/gemm_operand.cuh"
#include "gemm/gemm_versions.h"

namespace cp::gemm_versions {
namespace {

constexpr int kBM = 128, kBN = 128, kBK = 16, kThreads = 256;
constexpr int kWarpM = 32, kWarpN = 64, kWarpsN = kBN / kWarpN;  // 4 x 2 warps
constexpr int kAsStride = kBM + 4;  // padded row of the transposed A tile (floats)
constexpr int kWaitStep = kBK - 2;  // the step at which tile t+1's copies are waited for
static_assert((kBM / kWarpM) * kWarpsN * 32 == kThreads, "one warp per warp tile");
static_assert(kBM * kBK == kThreads * 8 && kBN * kBK == kThreads * 8, "two 4-element chunks per operand and thread");
static_assert((kAsStride * 4) % 16 == 0 && kAsStride % 32 == 4, "16-byte rows; conflict-free transposing stores");

// Pointer steps in elements, computed on the host: kernel parameters live in the constant bank,
// so the loop adds them without holding them in registers.
struct Steps {
  std::int64_t a_tile;  // 16 columns of A: 16 * a.col_stride
  std::int64_t b_half;  // 8 rows of B: 8 * b.row_stride
  std::int64_t b_tile;  // 16 rows of B: 16 * b.row_stride
};

template <typename T>
struct alignas(4 * sizeof(T)) Vec4 {
  T v[4];
};

template <typename T>
__device__ __forceinline__ Vec4<T> zero_chunk() {
  Vec4<T> out;
#pragma unroll
  for (int i = 0; i < 4; ++i) out.v[i] = from_float<T>(0.0f);
  return out;
}

// Four elements at p + i * step (i < 4) with `count` of them inside the matrix (count may be
// <= 0): one vector load when `vector_ok` and all four are inside, else masked element loads.
template <typename T>
__device__ __forceinline__ Vec4<T> load_chunk(const T* p, std::int64_t step, std::int64_t count, bool vector_ok) {
  if (vector_ok && count >= 4) return *reinterpret_cast<const Vec4<T>*>(p);
  Vec4<T> out;
#pragma unroll
  for (int i = 0; i < 4; ++i, p += step) out.v[i] = i < count ? *p : from_float<T>(0.0f);
  return out;
}

__device__ __forceinline__ std::uint32_t smem_addr(const void* p) {
  return static_cast<std::uint32_t>(__cvta_generic_to_shared(p));
}
// Global -> shared copies (LDGSTS); every source byte lies inside the matrix. The "memory"
// clobbers keep the compiler from moving shared-memory accesses across them and the wait.
__device__ __forceinline__ void cp_async_16(void* dst, const void* src) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(smem_addr(dst)), "l"(src) : "memory");
}
__device__ __forceinline__ void cp_async_8(void* dst, const void* src) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 8;\n" ::"r"(smem_addr(dst)), "l"(src) : "memory");
}
__device__ __forceinline__ void cp_async_4(void* dst, const void* src) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(smem_addr(dst)), "l"(src) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
__device__ __forceinline__ void cp_async_wait_all() { asm volatile("cp.async.wait_group 0;\n" ::: "memory"); }

template <typename T, bool kAligned>
__global__ void __launch_bounds__(kThreads, 2)
    gemm_register_blocked_kernel(StridedIn<T> a, StridedIn<T> b, RowMajorOut<T> c, std::int64_t m, std::int64_t n,
                                 std::int64_t k, Steps steps, bool a_vector, bool b_vector, bool c_vector) {
  constexpr bool kF32 = std::is_same_v<T, float>;
  // Tiles after the first arrive by cp.async, except in the 16-bit general kernel (element
  // loads that cp.async cannot do: it copies 4, 8 or 16 bytes).
  constexpr bool kAsync = kAligned || kF32;
  // 16-bit general kernel: the 4 chunks of tile t+1 (A0, A1, B0, B1) go through registers in
  // kPhases phases; a phase's loads issue at its first k step, its stores at its last.
  constexpr int kPhases = 4, kPhaseSteps = kBK / kPhases, kChunksPerPhase = 4 / kPhases;
  // Step kk+1's fragments load during step kk in the aligned kernels. The general ones load
  // step kk's fragments just before its FFMAs: their masked loads need the registers.
  constexpr bool kDoubleFrag = kAligned;
  __shared__ __align__(16) float as[2][kBK][kAsStride];
  __shared__ __align__(16) float bs[2][kBK][kBN];
  // Aligned kernels: this thread's chunks as they arrive (raw, row-major), slot [h][tid]; the
  // thread itself converts / transposes them into as and bs after the wait. fp32 B chunks go
  // straight to bs.
  __shared__ __align__(16) Vec4<T> a_raw[kAligned ? 2 : 1][kThreads];
  __shared__ __align__(16) Vec4<T> b_raw[kAligned && !kF32 ? 2 : 1][kThreads];

  const int tid = threadIdx.x;
  const std::int64_t tiles_n = (n + kBN - 1) / kBN;
  const std::int64_t m0 = blockIdx.x / tiles_n * kBM;
  const std::int64_t n0 = blockIdx.x % tiles_n * kBN;
  const int k_tiles = static_cast<int>((k + kBK - 1) / kBK);

  // This thread's share of each tile load: A chunks (row m0 + a_row, k offsets a_k + {0, 8}
  // .. +3), B chunks (k offsets b_k + {0, 8}, columns n0 + b_col .. +3).
  const int a_row = tid / 2, a_k = (tid % 2) * 4;
  const int b_k = tid / 32, b_col = (tid % 32) * 4;
  // Running pointers to this thread's first A and B chunk of the next tile. Aligned kernel:
  // rows of A past M and columns of B past N clamped; tile 0 is the K residue (k_first
  // columns), the others are whole. General kernel: tile t covers K from 16 t (the last one
  // partial); rows past M and columns past N are never read, the pointers are only formed.
  const int k_first = static_cast<int>(k - static_cast<std::int64_t>(k_tiles - 1) * kBK);  // 1..16
  const bool a_row_in = m0 + a_row < m;
  const std::int64_t b_cols_left = n - (n0 + b_col);
  const T* a_ptr = a.p + (a_row_in ? m0 + a_row : m - 1) * a.row_stride + a_k * (kAligned ? 1 : a.col_stride);
  const T* b_ptr =
      b.p + b_k * b.row_stride + (b_cols_left > 0 ? n0 + b_col : (n >= 4 ? n - 4 : 0)) * (kAligned ? 1 : b.col_stride);
  // General kernel: B columns inside N at this thread's chunk (only "< 4" matters).
  const int b_count = b_cols_left >= 4 ? 4 : static_cast<int>(b_cols_left > 0 ? b_cols_left : 0);
  Vec4<T> a_stage[2], b_stage[2];

  // Register path: chunk c (0, 1: A; 2, 3: B) of tile t into / out of the staging registers.
  // The pointers move on to the next tile after chunk 1 of each operand.
  auto load_stage = [&](int c, int t) {
    const int h = c % 2;
    if (c < 2) {
      if constexpr (kAligned) {
        a_stage[h] = *reinterpret_cast<const Vec4<T>*>(a_ptr + 8 * h);
      } else {
        const std::int64_t left = k - (static_cast<std::int64_t>(t) * kBK + a_k + 8 * h);  // K columns left
        a_stage[h] = a_row_in ? load_chunk(a_ptr + 8 * h * a.col_stride, a.col_stride, left, a_vector)
                              : zero_chunk<T>();
      }
      if (h == 1) a_ptr += kAligned ? kBK : steps.a_tile;
    } else {
      if constexpr (kAligned) {
        b_stage[h] = *reinterpret_cast<const Vec4<T>*>(b_ptr + h * steps.b_half);
      } else {
        const bool k_in = static_cast<std::int64_t>(t) * kBK + b_k + 8 * h < k;
        b_stage[h] = k_in ? load_chunk(b_ptr + h * steps.b_half, b.col_stride, b_count, b_vector) : zero_chunk<T>();
      }
      if (h == 1) b_ptr += steps.b_tile;
    }
  };
  auto store_stage = [&](int c, int buf) {
    const int h = c % 2;
    if (c < 2) {
#pragma unroll
      for (int i = 0; i < 4; ++i) as[buf][a_k + 8 * h + i][a_row] = to_float(a_stage[h].v[i]);
    } else {
      *reinterpret_cast<float4*>(&bs[buf][b_k + 8 * h][b_col]) = make_float4(
          to_float(b_stage[h].v[0]), to_float(b_stage[h].v[1]), to_float(b_stage[h].v[2]), to_float(b_stage[h].v[3]));
    }
  };

  // Issue tile t's copies into buffer `buf` (aligned: into the raw slots, and fp32 B into bs;
  // fp32 general: masked, zeros where outside).
  auto issue_copies = [&](int t, int buf) {
    if constexpr (kAligned) {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        if constexpr (kF32) {
          cp_async_16(&a_raw[h][tid], a_ptr + 8 * h);
          cp_async_16(&bs[buf][b_k + 8 * h][b_col], b_ptr + h * steps.b_half);
        } else {
          cp_async_8(&a_raw[h][tid], a_ptr + 8 * h);
          cp_async_8(&b_raw[h][tid], b_ptr + h * steps.b_half);
        }
      }
      a_ptr += kBK;
    } else if constexpr (kF32) {
      const std::int64_t k0 = static_cast<std::int64_t>(t) * kBK;
      const T* p = a_ptr;
#pragma unroll
      for (int j = 0; j < 8; ++j, p += a.col_stride) {  // element (a_row, k0 + a_k + 8 (j/4) + j%4)
        const int kc = a_k + 8 * (j / 4) + j % 4;
        if (j == 4) p = a_ptr + steps.a_tile / 2;  // 8 columns on
        float* d = &as[buf][kc][a_row];
        if (a_row_in && k0 + kc < k) {
          cp_async_4(d, p);
        } else {
          *d = 0.0f;
        }
      }
      a_ptr += steps.a_tile;
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const bool k_in = k0 + b_k + 8 * h < k;
        const T* q = b_ptr + h * steps.b_half;
        float* d = &bs[buf][b_k + 8 * h][b_col];
        if (k_in && b_vector && b_count == 4) {
          cp_async_16(d, q);
        } else {
#pragma unroll
          for (int i = 0; i < 4; ++i, q += b.col_stride) {
            if (k_in && i < b_count) {
              cp_async_4(d + i, q);
            } else {
              d[i] = 0.0f;
            }
          }
        }
      }
    }
    b_ptr += steps.b_tile;
    cp_async_commit();
  };
  // Aligned, after the wait: this thread's own raw chunks, converted and transposed (A) into
  // as and bs (the 16-bit B; fp32 B is already in place). Staged through a_stage / b_stage.
  auto unpack_raw = [&](int buf) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      a_stage[h] = a_raw[h][tid];
      store_stage(h, buf);
      if constexpr (!kF32) {
        b_stage[h] = b_raw[h][tid];
        store_stage(2 + h, buf);
      }
    }
  };

  // Tile 0. Aligned: the K residue through registers, whole chunks or zeros.
  if constexpr (kAligned) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      a_stage[h] = a_k + 8 * h < k_first ? *reinterpret_cast<const Vec4<T>*>(a_ptr + 8 * h) : zero_chunk<T>();
      b_stage[h] =
          b_k + 8 * h < k_first ? *reinterpret_cast<const Vec4<T>*>(b_ptr + h * steps.b_half) : zero_chunk<T>();
    }
    a_ptr += k_first;
    b_ptr += k_first * b.row_stride;
#pragma unroll
    for (int c = 0; c < 4; ++c) store_stage(c, 0);
  } else if constexpr (kF32) {
    issue_copies(0, 0);
    cp_async_wait_all();
  } else {
#pragma unroll
    for (int c = 0; c < 4; ++c) load_stage(c, 0);
#pragma unroll
    for (int c = 0; c < 4; ++c) store_stage(c, 0);
  }
  __syncthreads();

  // This thread's place in the warp tile.
  const int warp = tid / 32, lane = tid % 32;
  const int wm = (warp / kWarpsN) * kWarpM, wn = (warp % kWarpsN) * kWarpN;
  const int lane_m = lane / 8, lane_n = lane % 8;
  const int a_frag_col = wm + 4 * lane_m, b_frag_col = wn + 4 * lane_n;
  float af[2][8], bf[2][8];
  auto load_fragments = [&](int buf, int kk, float (&a_f)[8], float (&b_f)[8]) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const float4 x = *reinterpret_cast<const float4*>(&as[buf][kk][a_frag_col + 16 * h]);
      const float4 y = *reinterpret_cast<const float4*>(&bs[buf][kk][b_frag_col + 32 * h]);
      a_f[4 * h] = x.x, a_f[4 * h + 1] = x.y, a_f[4 * h + 2] = x.z, a_f[4 * h + 3] = x.w;
      b_f[4 * h] = y.x, b_f[4 * h + 1] = y.y, b_f[4 * h + 2] = y.z, b_f[4 * h + 3] = y.w;
    }
  };

  float acc[8][8] = {};
  if constexpr (kDoubleFrag) load_fragments(0, 0, af[0], bf[0]);
  // Tile t reads buffer t % 2; the tile loop is unrolled by two so that the buffer index, and
  // with it every shared-memory address, is a compile-time offset.
  auto k_tile = [&](int t, auto buf_constant) {
    constexpr int buf = decltype(buf_constant)::value;
    const bool has_next = t + 1 < k_tiles;  // block-uniform
#pragma unroll
    for (int kk = 0; kk < kBK; ++kk) {
      // Tile t+1 into the other buffer, whose last reads (tile t-1) came before the previous
      // barrier.
      if (has_next) {
        if constexpr (kAsync) {
          if (kk == 0) issue_copies(t + 1, buf ^ 1);
          if (kk == kWaitStep) {
            cp_async_wait_all();  // this thread's copies have landed
            if constexpr (kAligned) unpack_raw(buf ^ 1);
          }
        } else {
          if (kk % kPhaseSteps == 0) {
#pragma unroll
            for (int c = 0; c < kChunksPerPhase; ++c) load_stage(kk / kPhaseSteps * kChunksPerPhase + c, t + 1);
          }
          if (kk % kPhaseSteps == kPhaseSteps - 1) {
#pragma unroll
            for (int c = 0; c < kChunksPerPhase; ++c) store_stage(kk / kPhaseSteps * kChunksPerPhase + c, buf ^ 1);
          }
        }
      }
      if constexpr (kDoubleFrag) {
        if (kk < kBK - 1) {
          load_fragments(buf, kk + 1, af[(kk + 1) % 2], bf[(kk + 1) % 2]);
        } else if (has_next) {
          __syncthreads();  // tile t+1 complete in the other buffer, tile t's reads done
          load_fragments(buf ^ 1, 0, af[0], bf[0]);
        }
      } else {
        load_fragments(buf, kk, af[kk % 2], bf[kk % 2]);
      }
      const float(&a_f)[8] = af[kk % 2];
      const float(&b_f)[8] = bf[kk % 2];
#pragma unroll
      for (int i = 0; i < 8; ++i)
#pragma unroll
        for (int j = 0; j < 8; ++j) acc[i][j] = fmaf(a_f[i], b_f[j], acc[i][j]);
      if constexpr (!kDoubleFrag) {
        if (kk == kBK - 1 && has_next) __syncthreads();
      }
    }
  };
  for (int t = 0; t < k_tiles; t += 2) {
    k_tile(t, std::integral_constant<int, 0>{});
    if (t + 1 < k_tiles) k_tile(t + 1, std::integral_constant<int, 1>{});
  }

  // Epilogue: accumulator row 4*h + i is C row m0 + a_frag_col + 16*h + i; column 4*g + j is
  // C column n0 + b_frag_col + 32*g + j. The tile origin is derived again from the block index
  // (a volatile read, so that it is not held in registers through the main loop).
  unsigned tile;
  asm volatile("mov.u32 %0, %%ctaid.x;\n" : "=r"(tile));
  const std::int64_t tiles_n_again = (n + kBN - 1) / kBN;
  const std::int64_t row0 = tile / tiles_n_again * kBM + a_frag_col;
  const std::int64_t col0 = tile % tiles_n_again * kBN + b_frag_col;
#pragma unroll
  for (int h = 0; h < 2; ++h) {
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const std::int64_t row = row0 + 16 * h + i;
      if (row >= m) continue;
      T* c_row = c.p + row * c.row_stride;
#pragma unroll
      for (int g = 0; g < 2; ++g) {
        const std::int64_t col = col0 + 32 * g;
        const float* v = &acc[4 * h + i][4 * g];
        if (c_vector && col + 4 <= n) {
          Vec4<T> q;
#pragma unroll
          for (int j = 0; j < 4; ++j) q.v[j] = from_float<T>(v[j]);
          *reinterpret_cast<Vec4<T>*>(c_row + col) = q;
        } else {
#pragma unroll
          for (int j = 0; j < 4; ++j)
            if (col + j < n) c_row[col + j] = from_float<T>(v[j]);
        }
      }
    }
  }
}

// Whole 4-element chunks along an operand's rows can be read as one vector: unit stride
// there, and every chunk start (row starts + multiples of 4 elements) aligned to 4 elements.
// A single row needs no row-stride condition.
bool rows_vectorizable(const void* data, std::int64_t rows, std::int64_t row_stride, std::int64_t col_stride,
                       std::size_t esize) {
  const std::size_t chunk = 4 * esize;
  return col_stride == 1 && (rows == 1 || row_stride % 4 == 0) && reinterpret_cast<std::uintptr_t>(data) % chunk == 0;
}

}  // namespace

void register_blocked(DType dtype, const ConstMatrixView& a, const ConstMatrixView& b, const MatrixView& c,
                      cudaStream_t stream) {
  const std::int64_t m = a.rows, n = b.cols, k = a.cols;
  const std::int64_t tiles = ((m + kBM - 1) / kBM) * ((n + kBN - 1) / kBN);
  if (tiles > 0x7fffffff) throw std::invalid_argument("gemm(register_blocked): more than 2^31-1 output tiles");
  if ((k + kBK - 1) / kBK > 0x7fffffff) throw std::invalid_argument("gemm(register_blocked): K over 2^35");
  const unsigned grid = static_cast<unsigned>(tiles);
  const std::size_t es = dtype_size(dtype);
  // A's chunks run along K (its columns): the same test as B's chunks along N. C's row pieces
  // start at multiples of 4 columns, so C's rows need the same alignment (its col_stride is 1,
  // or N is 1 and no piece is whole).
  const bool a_vector = rows_vectorizable(a.data, a.rows, a.row_stride, a.col_stride, es);
  const bool b_vector = rows_vectorizable(b.data, b.rows, b.row_stride, b.col_stride, es);
  const bool c_vector = rows_vectorizable(c.data, c.rows, c.row_stride, 1, es);
  // The aligned kernel: every 4-element chunk wholly inside the matrix or clamped (K and N
  // multiples of 4 keep A's chunks aligned after the K residue and B's chunks whole).
  const bool aligned = a_vector && b_vector && k % 4 == 0 && n % 4 == 0;
  const Steps steps{kBK * a.col_stride, 8 * b.row_stride, kBK * b.row_stride};
  CP_DISPATCH_FLOAT_TYPES(dtype, T, {
    if (aligned) {
      gemm_register_blocked_kernel<T, true><<<grid, kThreads, 0, stream>>>(
          strided_in<T>(a), strided_in<T>(b), row_major_out<T>(c), m, n, k, steps, a_vector, b_vector, c_vector);
    } else {
      gemm_register_blocked_kernel<T, false><<<grid, kThreads, 0, stream>>>(
          strided_in<T>(a), strided_in<T>(b), row_major_out<T>(c), m, n, k, steps, a_vector, b_vector, c_vector);
    }
  })
  CP_CHECK_LAUNCH("gemm_register_blocked_kernel");
}

}  // namespace cp::gemm_versions
