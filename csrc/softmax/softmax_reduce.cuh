// Building blocks shared by every softmax_parallel kernel: NaN-propagating max, the (max, sum)
// partial statistics and their combine, warp/block reductions, and 16-byte vector loads/stores
// with a scalar fallback for misaligned units and the ragged ends of a row.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include "common/gpu_sync.cuh"
#include "common/numeric.cuh"

namespace cp::softmax_detail {

constexpr float kLog2e = 1.4426950408889634f;
constexpr float kNegInf = -std::numeric_limits<float>::infinity();  // portable (MSVC host pass too)

// A thread keeps at most this many fp32 values of one tile in registers (all operands together:
// forward holds x, backward holds y and dy), so 1024-thread blocks stay within 64 registers.
constexpr int kMaxValuesPerThread = 32;
// The same 32 registers counted as raw 16-byte units (4 registers each), all operands together:
// 32 fp32 values but 64 fp16/bf16 ones. The portable split_row, block_online and block_per_row's
// backward hold 16-bit tiles this deep (max_units), so a 16-bit
// thread keeps as many bytes in flight through the row exchange as an fp32 one. (The cluster
// plan's CTAs of up to 1024 threads have 64 registers: its depth-8 16-bit tiles spilled, and its
// fp32 depth-8 forward spills 56 bytes, ptxas sm_90a.)
constexpr int kMaxUnitsPerThread = 8;

// Elements of T in one 16-byte access.
template <typename T>
constexpr int vec_width() {
  return 16 / static_cast<int>(sizeof(T));
}

// fmaxf drops NaN; torch.softmax turns a row with a NaN into NaN, so the max must keep it.
__device__ __forceinline__ float nan_max(float a, float b) {
  float r;
  asm("max.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
  return r;
}

// Softmax statistics of part of a row: its max and sum(exp(x - max)). A part whose max is -inf
// (all -inf, or empty) has sum 0, never exp(-inf - -inf) = NaN.
struct alignas(8) MaxSum {
  float max;
  float sum;
};

__device__ __forceinline__ MaxSum empty_max_sum() { return {kNegInf, 0.0f}; }

// 2^x in one MUFU.EX2. exp2f() adds a range check and two multiplies per call to keep
// subnormal results; softmax values below 2^-126 (~1e-38) round to 0 instead, far inside every
// tolerance, and an element costs 3 fewer instructions (16-bit rows are compute-bound without it).
__device__ __forceinline__ float fast_exp2(float x) {
  float r;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));
  return r;
}

// exp(x - max) with the -inf row handled: an all -inf row gives exp(-inf) = 0 everywhere
// (and 0 * (1/0) = NaN at the end, as torch.softmax gives).
__device__ __forceinline__ float exp_shifted(float x, float max) {
  return fast_exp2((x - (max == kNegInf ? 0.0f : max)) * kLog2e);
}

// log2(x) in one MUFU.LG2 (x > 0, normal).
__device__ __forceinline__ float fast_log2(float x) {
  float r;
  asm("lg2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));
  return r;
}

// exp(x - max) * scale, the general form: FADD, FMUL and MUFU per element (the FMUL by a scale of 1
// folds away).
struct SubtractExp {
  float max, scale;
  __device__ __forceinline__ float operator()(float x) const { return exp_shifted(x, max) * scale; }
};

// exp(x - max) / divisor as 2^(x * log2e - bias), bias = max * log2e + log2(divisor): one FFMA and
// the MUFU per element. Rounding bias puts up to |bias| * 2^-24 into the exponent; while |max| <
// kFusedExpMaxAbs (and log2(divisor) <= 63) that is under 1e-5, a relative error of the order of
// the subtract form's own and far under a 16-bit output's rounding (fp16 2^-12 = 2.4e-4, bf16 2^-9).
// Larger maxima (fp16 reaches 6.5e4, bf16 3e38), infinities and NaN take SubtractExp.
struct FusedExp {
  float bias;
  __device__ __forceinline__ float operator()(float x) const { return fast_exp2(fmaf(x, kLog2e, -bias)); }
};
constexpr float kFusedExpMaxAbs = 64.0f;

// exp(x - max) / divisor for every x of a row (divisor > 0: the row's sum, or 1 while taking
// statistics); apply(f) returns f(exp) with exp the form chosen once, here, so the branch sits
// outside f's loops. 16-bit inputs take FusedExp where it is exact enough: their kernels execute
// twice fp32's instructions per byte, and the FFMA saves a FADD (and the FMUL by 1 / sum) per
// element. Measured (docs/perf-log.md, session 19): block_online bf16 forward 0.78 -> 0.80 of copy,
// split_row unmoved (its time goes to the row exchange). warp_per_row's gain there (0.84 -> 0.88 at
// 65536x256) came from its registers (47 -> 40): its single tile keeps exp_shifted values and does not
// take this. fp32 keeps the subtract form (the branch folds away).
template <typename T>
struct RowExp {
  bool fused;
  FusedExp fused_exp;
  SubtractExp subtract_exp;

  __device__ __forceinline__ RowExp(float max, float divisor)
      : fused(sizeof(T) == 2 && fabsf(max) < kFusedExpMaxAbs),
        fused_exp{fused ? fmaf(max, kLog2e, divisor == 1.0f ? 0.0f : fast_log2(divisor)) : 0.0f},
        subtract_exp{max, 1.0f / divisor} {}

  template <typename F>
  __device__ __forceinline__ decltype(auto) apply(F&& f) const {
    if (fused) return f(fused_exp);
    return f(subtract_exp);
  }
};

// Factor that moves a sum taken relative to `from` onto the larger max `to`.
__device__ __forceinline__ float rescale(float from, float to) {
  return from == to ? 1.0f : fast_exp2((from - to) * kLog2e);
}

// Commutative bit for bit (both orders give the same floats), so every lane of a butterfly
// reduction ends with identical statistics.
__device__ __forceinline__ MaxSum combine(MaxSum a, MaxSum b) {
  const float m = nan_max(a.max, b.max);
  return {m, a.sum * rescale(a.max, m) + b.sum * rescale(b.max, m)};
}

__device__ __forceinline__ float combine(float a, float b) { return a + b; }

// The identity of combine() for each reduced type.
template <typename V>
__device__ __forceinline__ V reduce_identity();
template <>
__device__ __forceinline__ float reduce_identity<float>() { return 0.0f; }
template <>
__device__ __forceinline__ MaxSum reduce_identity<MaxSum>() { return empty_max_sum(); }

__device__ __forceinline__ float shfl_xor(float v, int mask) { return __shfl_xor_sync(0xffffffffu, v, mask); }
__device__ __forceinline__ MaxSum shfl_xor(MaxSum v, int mask) {
  return {shfl_xor(v.max, mask), shfl_xor(v.sum, mask)};
}

// Butterfly over aligned groups of kLanes lanes (a power of two <= 32): every lane returns its
// group's total. All 32 lanes of the warp must call it (full-mask shuffles).
template <int kLanes, typename V>
__device__ __forceinline__ V lane_group_reduce(V v) {
  static_assert(kLanes >= 1 && kLanes <= 32 && (kLanes & (kLanes - 1)) == 0, "kLanes: a power of two <= 32");
#pragma unroll
  for (int mask = kLanes / 2; mask > 0; mask >>= 1) v = combine(v, shfl_xor(v, mask));
  return v;
}

// Every lane returns the warp's total.
template <typename V>
__device__ __forceinline__ V warp_reduce(V v) {
  return lane_group_reduce<32>(v);
}

// Every thread of the block returns the block's total (the same bits in every thread). Up to 4 warps,
// each thread folds the warps' totals in order (at most 3 combines, fewer than a butterfly's 5); past
// that, each warp runs the same 32-lane butterfly over them (lane l takes warp l's, the identity past
// the last warp): a (max, sum) combine waits on two exponentials, and a 1024-thread block's chain of 31
// cost every thread 62 of them (docs/perf-log.md, sessions 42-43).
template <typename V>
__device__ __forceinline__ V block_reduce(V v) {
  __shared__ V warp_totals[32];
  v = warp_reduce(v);
  const int lane = threadIdx.x % 32, warps = (blockDim.x + 31) / 32;
  if (lane == 0) warp_totals[threadIdx.x / 32] = v;
  __syncthreads();
  V total;
  if (warps <= 4) {
    total = warp_totals[0];
    for (int w = 1; w < warps; ++w) total = combine(total, warp_totals[w]);
  } else {
    total = warp_reduce(lane < warps ? warp_totals[lane] : reduce_identity<V>());
  }
  __syncthreads();  // warp_totals may be reused by the next reduction
  return total;
}

// The 16-byte unit of a row: vec_width<T>() consecutive elements held as four 32-bit words, two
// 16-bit elements per word (the lower address in the low half). As an array of 16-bit elements
// the compiler gave each element its own 32-bit register: 8 per 16-bit unit instead of 4.
// An fp32 unit stays four floats: as words, ptxas allocated some fp32 kernels worse (a 4-byte
// spill in warp_per_row forward at depth 8).
template <typename T>
struct alignas(16) Vec {
  std::uint32_t w[4];
};
template <>
struct alignas(16) Vec<float> {
  float w[4];
};

template <typename T>
__device__ __forceinline__ std::uint32_t bits_of(T x) {
  std::uint16_t b;
  memcpy(&b, &x, sizeof(b));
  return b;
}

// The unit whose element j is element(j).
template <typename T, typename F>
__device__ __forceinline__ Vec<T> make_vec(F element) {
  Vec<T> v;
#pragma unroll
  for (int q = 0; q < 4; ++q) {
    if constexpr (std::is_same_v<T, float>)
      v.w[q] = element(q);
    else
      v.w[q] = bits_of<T>(element(2 * q)) | bits_of<T>(element(2 * q + 1)) << 16;
  }
  return v;
}

// The unit of fp32 values `in` rounded to T (16-bit pairs by one cvt.rn.{bf16x2,f16x2}.f32 each).
template <typename T>
__device__ __forceinline__ Vec<T> round_vec(const float (&in)[vec_width<T>()]) {
  Vec<T> v;
#pragma unroll
  for (int q = 0; q < 4; ++q) {
    if constexpr (std::is_same_v<T, float>) {
      v.w[q] = in[q];
    } else if constexpr (std::is_same_v<T, __nv_bfloat16>) {
      const __nv_bfloat162 p = __floats2bfloat162_rn(in[2 * q], in[2 * q + 1]);
      memcpy(&v.w[q], &p, sizeof(p));
    } else {
      const __half2 p = __floats2half2_rn(in[2 * q], in[2 * q + 1]);
      memcpy(&v.w[q], &p, sizeof(p));
    }
  }
  return v;
}

// Elements of T between the 16-byte boundary at or below p and p itself.
template <typename T>
__device__ __forceinline__ int misalignment(const T* p) {
  return static_cast<int>((reinterpret_cast<std::uintptr_t>(p) & 15) / sizeof(T));
}

// Where a 16-byte access leaves its line in L2. Streaming (`.cs`: evict-first in L1 and L2) marks
// lines the kernel will not touch again (its output, a row's second and last read), so that the
// lines still waiting for their second read are the ones L2 keeps (block_online). KeepForReread
// additionally gives the first read an evict_last policy.
enum class L2Hint { Normal, Streaming, KeepForReread };

// One 16-byte access for a whole unit at a 16-byte aligned address (ld.global.nc.v4 /
// st.global.v4). The store is written in PTX because the compiler split every C++ form tried
// (the Vec<T> struct, a uint4) into element stores in most kernels: 8 st.global.u16 per 16-bit
// unit, 4 st.global.f32 per fp32 unit (docs/perf-log.md).
template <typename T>
__device__ __forceinline__ Vec<T> ldg_unit(const T* p) {
  const uint4 u = __ldg(reinterpret_cast<const uint4*>(p));
  Vec<T> v;
  memcpy(&v, &u, sizeof(v));
  return v;
}

// The unit at p when `take`, else `fill`. The hinted loads are inline PTX, which the compiler does
// not predicate: behind a C++ condition each got its own branch (one LDG.E.128 per basic block in
// the SASS), so the predicate goes into the PTX (`@p ld`) and the loads stay in one block.
template <typename T, L2Hint H = L2Hint::Normal>
__device__ __forceinline__ Vec<T> load_unit_or(const T* p, bool take, const Vec<T>& fill) {
  if constexpr (H == L2Hint::Normal) {
    return take ? ldg_unit(p) : fill;
  } else {
    uint4 u;
    memcpy(&u, &fill, sizeof(u));
    if constexpr (H == L2Hint::Streaming) {
      asm("{\n.reg .pred p;\nsetp.ne.b32 p, %5, 0;\n@p ld.global.cs.nc.v4.u32 {%0, %1, %2, %3}, [%4];\n}"
          : "+r"(u.x), "+r"(u.y), "+r"(u.z), "+r"(u.w)
          : "l"(p), "r"(static_cast<int>(take)));
    } else {
      asm("{\n.reg .pred p;\n.reg .b64 policy;\nsetp.ne.b32 p, %5, 0;\n"
          "createpolicy.fractional.L2::evict_last.b64 policy, 1.0;\n"
          "@p ld.global.nc.L2::cache_hint.v4.u32 {%0, %1, %2, %3}, [%4], policy;\n}"
          : "+r"(u.x), "+r"(u.y), "+r"(u.z), "+r"(u.w)
          : "l"(p), "r"(static_cast<int>(take)));
    }
    Vec<T> v;
    memcpy(&v, &u, sizeof(v));
    return v;
  }
}

template <typename T, L2Hint H = L2Hint::Normal>
__device__ __forceinline__ Vec<T> load_unit(const T* p) {
  if constexpr (H == L2Hint::Normal)
    return ldg_unit(p);
  else
    return load_unit_or<T, H>(p, true, Vec<T>{});
}

template <typename T, L2Hint H = L2Hint::Normal>
__device__ __forceinline__ void store_unit(T* p, const Vec<T>& v) {
  uint4 u;
  memcpy(&u, &v, sizeof(u));
  if constexpr (H == L2Hint::Normal)
    asm volatile("st.global.v4.b32 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"(u.x), "r"(u.y), "r"(u.z), "r"(u.w)
                 : "memory");
  else
    asm volatile("st.global.cs.v4.b32 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"(u.x), "r"(u.y), "r"(u.z), "r"(u.w)
                 : "memory");
}

// The unit of elements [i, i + W) of `row`; those before `lo` or at or past `end` read as `fill`.
// One 16-byte load when the unit is whole and `vectors` (the caller knows the unit is 16-byte
// aligned), element loads otherwise.
template <typename T, L2Hint H = L2Hint::Normal>
__device__ __forceinline__ Vec<T> load_vec(const T* __restrict__ row, std::int64_t i, std::int64_t lo,
                                           std::int64_t end, bool vectors, float fill) {
  constexpr int W = vec_width<T>();
  if (vectors && i >= lo && i + W <= end) return load_unit<T, H>(row + i);
  const T filler = from_float<T>(fill);
  T e[W];
#pragma unroll
  for (int j = 0; j < W; ++j) e[j] = i + j >= lo && i + j < end ? row[i + j] : filler;
  return make_vec<T>([&](int j) { return e[j]; });
}

// Element j of a unit as fp32. The 16-bit conversions are volatile asm so that the compiler
// converts again in each pass over a tile instead of keeping converted fp32 copies of the
// whole tile alive between passes (more registers than the raw units, and spills at the
// 64-register caps). One instruction per element and pass. ptxas still merges identical
// conversions of two passes, so the pass after a row reduction uses unpack_late.
template <typename T>
__device__ __forceinline__ float unpack(const Vec<T>& v, int j) {
  if constexpr (std::is_same_v<T, float>) {
    return v.w[j];
  } else {
    const std::uint32_t word = v.w[j / 2];  // elements j & ~1 (low half) and j | 1 (high half)
    if constexpr (std::is_same_v<T, __nv_bfloat16>) {  // bf16 is the top half of an fp32
      std::uint32_t bits;
      if (j & 1)
        asm volatile("and.b32 %0, %1, 0xffff0000;" : "=r"(bits) : "r"(word));
      else
        asm volatile("shl.b32 %0, %1, 16;" : "=r"(bits) : "r"(word));
      return __uint_as_float(bits);
    } else {
      float r;
      if (j & 1)
        asm volatile("{\n.reg .f16 lo, hi;\nmov.b32 {lo, hi}, %1;\ncvt.f32.f16 %0, hi;\n}" : "=f"(r) : "r"(word));
      else
        asm volatile("{\n.reg .f16 lo, hi;\nmov.b32 {lo, hi}, %1;\ncvt.f32.f16 %0, lo;\n}" : "=f"(r) : "r"(word));
      return r;
    }
  }
}

// unpack() by another instruction form (byte permutes): the same value, which ptxas cannot merge
// with an unpack() of the same element before a row reduction, so the tile's 16-bit values are
// not kept converted (twice the registers) through the reduction.
template <typename T>
__device__ __forceinline__ float unpack_late(const Vec<T>& v, int j) {
  if constexpr (std::is_same_v<T, float>) {
    return v.w[j];
  } else {
    const std::uint32_t word = v.w[j / 2];
    if constexpr (std::is_same_v<T, __nv_bfloat16>) {  // the element's two bytes to the top, zeros below
      std::uint32_t bits;
      if (j & 1)
        asm volatile("prmt.b32 %0, %1, %2, 0x3244;" : "=r"(bits) : "r"(word), "r"(0u));
      else
        asm volatile("prmt.b32 %0, %1, %2, 0x1044;" : "=r"(bits) : "r"(word), "r"(0u));
      return __uint_as_float(bits);
    } else {  // the halves swapped first, then the other half converted
      float r;
      if (j & 1)
        asm volatile("{\n.reg .b32 s;\n.reg .f16 lo, hi;\nprmt.b32 s, %1, %1, 0x1032;\nmov.b32 {lo, hi}, s;\n"
                     "cvt.f32.f16 %0, lo;\n}" : "=f"(r) : "r"(word));
      else
        asm volatile("{\n.reg .b32 s;\n.reg .f16 lo, hi;\nprmt.b32 s, %1, %1, 0x1032;\nmov.b32 {lo, hi}, s;\n"
                     "cvt.f32.f16 %0, hi;\n}" : "=f"(r) : "r"(word));
      return r;
    }
  }
}

// Elementwise NaN-propagating max of two words of 16-bit pairs (max.NaN.{bf16x2,f16x2}), no
// conversion.
template <typename T>
__device__ __forceinline__ std::uint32_t max_word(std::uint32_t a, std::uint32_t b) {
  static_assert(sizeof(T) == 2, "16-bit pairs only");
  std::uint32_t r;
  if constexpr (std::is_same_v<T, __nv_bfloat16>)
    asm("max.NaN.bf16x2 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
  else
    asm("max.NaN.f16x2 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
  return r;
}

template <typename T, L2Hint H = L2Hint::Normal>
__device__ __forceinline__ void store_vec(T* __restrict__ row, std::int64_t i, std::int64_t lo, std::int64_t end,
                                          bool vectors, const float (&in)[vec_width<T>()]) {
  constexpr int W = vec_width<T>();
  if (vectors && i >= lo && i + W <= end) {
    store_unit<T, H>(row + i, round_vec<T>(in));
  } else {
#pragma unroll
    for (int j = 0; j < W; ++j)
      if (i + j >= lo && i + j < end) row[i + j] = from_float<T>(in[j]);
  }
}

}  // namespace cp::softmax_detail

namespace cp::softmax_detail {

// Partials exchanged between blocks through global memory go through L2 (.cg), never a stale L1 line.
__device__ __forceinline__ void store_cg(float* p, float v) { __stcg(p, v); }
__device__ __forceinline__ void store_cg(MaxSum* p, MaxSum v) { __stcg(reinterpret_cast<float2*>(p), make_float2(v.max, v.sum)); }
__device__ __forceinline__ float load_cg(const float* p) { return __ldcg(p); }
__device__ __forceinline__ MaxSum load_cg(const MaxSum* p) {
  const float2 v = __ldcg(reinterpret_cast<const float2*>(p));
  return {v.x, v.y};
}
__device__ __forceinline__ void store_cg(unsigned long long* p, unsigned long long v) { __stcg(p, v); }

// A slice's partial as one 64-bit word that is never 0, so a zeroed slot reads "not yet published"
// (the streamed split_row's exchange): (max, sum) as their bits, sum high: max = +0 has sum >= 1 (its own
// element); y * dy's sum with a 1 in the high word.
__device__ __forceinline__ unsigned long long published_bits(MaxSum v) {
  return static_cast<unsigned long long>(__float_as_uint(v.sum)) << 32 | __float_as_uint(v.max);
}
__device__ __forceinline__ unsigned long long published_bits(float v) { return 1ull << 32 | __float_as_uint(v); }
template <typename V>
__device__ __forceinline__ V published_value(unsigned long long bits);
template <>
__device__ __forceinline__ MaxSum published_value<MaxSum>(unsigned long long bits) {
  return {__uint_as_float(static_cast<unsigned>(bits)), __uint_as_float(static_cast<unsigned>(bits >> 32))};
}
template <>
__device__ __forceinline__ float published_value<float>(unsigned long long bits) {
  return __uint_as_float(static_cast<unsigned>(bits));
}

// The split_row plans' workspace protocol (softmax_split_row.cu, softmax_split_row_stream_sm90a.cu):
// a header of two counters (tickets, exits), one counter word per row and the rows' partials (one
// slot per slice; the streamed kernel has no row words: its slots are 64-bit and 0 until published,
// published_bits below). The whole workspace is zero at launch and every launch leaves all it touched zero
// again, so the caller zeroes it once when it allocates it (no memset per launch), whatever shapes
// later launches on it run: a launch with more rows puts its counters where an earlier one kept
// partials, so those are reset too.
constexpr int kWorkspaceHeader = 2;  // [ticket][exits], then the row words

// Tickets: a launch hands out the tickets 0..last, one atomicAdd each, and nothing else touches the
// counter. The draw that returns `last` comes after every other draw in the counter's order, and no
// draw follows it, so that thread zeroes the counter (the next launch sees it: kernel boundary).
__device__ __forceinline__ unsigned draw_ticket(unsigned* counter, unsigned last) {
  const unsigned ticket = atomicAdd(counter, 1u);
  if (ticket == last) atomicExch(counter, 0u);
  return ticket;
}

// A row's counter word counts the slices that have published their partial. One thread per block
// calls arrive() after storing its slice's partial; then all the block's threads may read the row's
// partials. Slices < kMaxRowSlices (the hosts check). The words and partials are reset once per
// launch, by the last block to leave (count_exit, zero_workspace), not per row: a per-row reset made
// the row's last slice wait for the others to finish reading before its block could go on (1-2% from
// 32 to 1024 rows, docs/perf-log.md, session 17).
constexpr int kMaxRowSlices = 1 << 16;

struct RowExchange {
  unsigned* word;
  int slices;

  // Counts this block's arrival with release semantics (the partial this thread stored before is
  // visible to whoever sees the count) and polls with acquire loads until every slice of the row has
  // arrived; afterwards the partials may be read, by this thread and, past a block barrier, by the
  // others. Release/acquire rather than two __threadfence() (fence.sc.gpu) around a volatile poll:
  // the exchange is on every multi-slice job's path (docs/perf-log.md, session 19).
  __device__ __forceinline__ void arrive() const {
    red_release_add_gpu(word, 1u);
    while (ld_acquire_gpu(word) < static_cast<unsigned>(slices)) {
    }
  }
};

// Leaving the workspace: each block, once done with the row words and partials, counts its exit on
// the header's second word (count_exit: release, after the block's reads of the partials are ordered
// before it); the block whose exit is the launch's last (acquire) zeroes the rows' words, the `slots`
// partials and the exit counter (zero_workspace). Safe: every other block has counted its exit after
// its last access, and nothing touches the workspace after the last exit but the zeroing block.
// Nothing waits, so no deadlock can come of it.

// One thread: counts the block's exit; true for the launch's last.
__device__ __forceinline__ bool count_exit(unsigned* workspace) {
  __threadfence();
  const bool last = atomicAdd(workspace + 1, 1u) == gridDim.x - 1;
  if (last) __threadfence();
  return last;
}

// `threads` threads of the last block out (thread index `thread`).
template <typename V>
__device__ __forceinline__ void zero_workspace(unsigned* workspace, std::int64_t rows, V* partials, std::int64_t slots,
                                               int thread, int threads) {
  unsigned* row_words = workspace + kWorkspaceHeader;
  for (std::int64_t i = thread; i < rows; i += threads) __stcg(row_words + i, 0u);
  for (std::int64_t i = thread; i < slots; i += threads) store_cg(partials + i, V{});
  if (thread == 0) __stcg(workspace + 1, 0u);
}

// Both, for a block whose `threads` threads (synced by `barrier`) all reach the end together. Not
// inlined: at the end of the 16-bit kernels at their 64-register cap, inlined code risks spills.
template <typename V, typename Barrier>
__device__ __noinline__ void leave_workspace(unsigned* workspace, std::int64_t rows, V* partials, std::int64_t slots,
                                             int thread, int threads, Barrier barrier) {
  __shared__ int last_out;
  barrier();  // every thread's reads of the partials come before the exit count
  if (thread == 0) last_out = count_exit(workspace);
  barrier();
  if (last_out) zero_workspace(workspace, rows, partials, slots, thread, threads);
}

}  // namespace cp::softmax_detail
