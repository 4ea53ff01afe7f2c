// Version 5, Hopper (sm_90a): TMA -> shared-memory stage ring on mbarriers -> wgmma,
// warp-specialised and persistent. fp16/bf16 in, fp32 accumulate. One kernel, five tiles
// (template parameters kBM x kBN, chosen per call by tile_plan()):
//  - 128 x 256 tiles, 4 stages of 48 KiB, wgmma.m64n256k16: every shape but the next four.
//  - 128 x 128 tiles, 6 stages of 32 KiB, wgmma.m64n128k16: few output tiles and long K, where
//    128 x 256 tiles would split K. They split K themselves while their own tiles are few:
//    1024x1024x16384 runs 64 tiles x split 2, cuBLAS's shape of the work there (128 x 256 tiles
//    needed split 4 and a fold of 3 partials per tile); 1024x2048x16384 runs 128 tiles, unsplit.
//    Also, unsplit, where 128 x 256 and 128 x 192 tiles would end on a mostly idle round
//    (unsplit_width; e.g. 5120^3).
//  - 128 x 192 tiles, 4 stages of 40 KiB, wgmma.m64n192k16, no split K: where 128 x 256 tiles would
//    end on a mostly idle round (unsplit_width: 3072^3 is 288 of those on 132 SMs, 3 rounds for
//    2.18 rounds of work; 384 of 128 x 192 take 3 rounds of 3/4 the time).
//  - 128 x 64 tiles, 8 stages of 24 KiB, wgmma.m64n64k16, no split K: M <= 128 with at least
//    ~0.9 x #SMs 64-wide tiles (e.g. 128x8192x8192), where 128 x 256 tiles needed split K.
//  - 256 x 128 tiles, 4 stages of 48 KiB, two wgmma.m64n128k16 per consumer, no split K: B's
//    lines start off 32-byte sectors while A's start on them (e.g. row-major B with N = 3000).
//    The L2's request coalescer merges few of the loads of such lines that neighbouring blocks
//    share, so B gets the smaller share of the tile's loads (docs/perf-log.md, v8).
// Plan: 384 threads = 3 warpgroups. Warpgroup 0 is the producer: after setmaxnreg drops it to
// 40 registers, one thread walks this block's work units and, per 64-wide K block, waits for
// a free stage (`empty` mbarrier), arms the stage's `full` mbarrier with the byte count and
// issues the TMA loads of a BM x 64 A tile and a 64 x BN B tile (128-byte swizzle, zero fill
// past the matrix edge, so any M, N, K). Warpgroups 1 and 2 are consumers (setmaxnreg 232):
// each owns BM / 2 rows of the BM x BN output tile as BM / 128 wgmma tiles of 64 x BN, BM x BN /
// 256 fp32 accumulators per thread (128 at 128 x 256 and 256 x 128, 96 at 128 x 192, 64 at
// 128 x 128, 32 at 128 x 64), and per K block waits on `full`,
// issues 4 k16 steps of wgmma.m64nBNk16 per wgmma tile reading both operands from shared memory
// through matrix descriptors, and keeps that group in flight while it waits for the next stage:
// the previous group's completion (wgmma.wait_group 1) releases the previous stage (`empty`).
// Each operand may be K-major or MN-major (row- or column-major in memory, no copy): the
// tensor map's box and the descriptor's strides follow the layout and the wgmma transpose
// bit says which. Persistent: grid = min(#SMs, work units), units visited in grouped order
// (8 tile-rows at a time) for L2 reuse. Few output tiles and long K (e.g. 1024x1024x16384) run
// 128 x 128 tiles and split K across blocks (S <= 16 slices of >= 4 K blocks; tiles x S <= #SMs, so
// each block gets one unit, though nothing below relies on that; the host splits no other tile,
// but the kernel would fold them the same way) and reduce the slices inside this kernel
// (fold_splits): the first S - 1 blocks of a tile to finish store their fp32 partial tile to the
// workspace and publish it on the tile's counter (release); the last to finish (ticket S - 1)
// waits for those S - 1 publications (acquire; they come from blocks already running) and adds
// the partials in split order 0..S-1 with its own at its index, so the result does not depend
// on the arrival order, then runs the normal epilogue. Partial traffic per tile: S - 1 tiles
// written and read back in L2.
// The tile counters must be zero at launch, and every launch leaves them zero: the folding block
// resets its tile's counter once all S - 1 others have published (nothing touches it after that).
// So the caller zeroes a workspace once, not per launch: v6 put a memset node before every
// split-K launch, and the benchmark measured 1024²x16384 at 0.85 of cuBLAS against 0.96 kernel
// against kernels under ncu.
// Epilogue (C 16-byte aligned): each consumer rounds each 64 x BN wgmma tile to T into a
// shared buffer of 64 x 64 boxes (128-byte swizzle, conflict-free 4-byte stores), two boxes at a
// time at BN = 256 (a 128-column half) and BN = 128 (the whole tile), all three at once at BN = 192,
// its one box at BN = 64, and one thread issues TMA
// stores that clip at the matrix edge; the last ones stay in flight while the next tile's MMAs
// start. At 256 x 128 (two passes per consumer, one per wgmma tile) the second pass goes into the
// consumer's 16 KiB share of the tile's last stage, which both consumers keep from the producer
// until one K block into their next tile, so it does not wait for the first pass's stores to read
// the buffer (kKeepLastStage). Otherwise (misaligned C) the accumulators are stored straight from registers, masked at
// the edges.
// Shared memory (all <= 227 KiB, static_assert in TileConfig), a 192 KiB stage ring (160 at 128 x 192):
//   128 x 256: 4 x (16 KiB A + 32 KiB B) + 2 x 16 KiB epilogue + 1 KiB alignment slack = 225 KiB
//              dynamic, + 80 B static (barriers, split ticket);
//   128 x 128: 6 x (16 KiB A + 16 KiB B) + 2 x 16 KiB epilogue + 1 KiB = 225 KiB, + 112 B static;
//   256 x 128: 4 x (32 KiB A + 16 KiB B) + 2 x 16 KiB epilogue + 1 KiB = 225 KiB, + 80 B static;
//   128 x 64:  8 x (16 KiB A + 8 KiB B) + 2 x 8 KiB epilogue + 1 KiB = 209 KiB, + 144 B static;
//   128 x 192: 4 x (16 KiB A + 24 KiB B) + 2 x 24 KiB epilogue + 1 KiB = 209 KiB, + 80 B static.
// The folding block stashes its own partial, 32 (16 at 128 x 64) accumulators at a time, in its
// epilogue buffer (only 128 x 128 tiles split K, but the fold is written for any tile).
// Expected bound: 128 x 256 tiles: tensor-core issue, ~0.85-1.0x cuBLAS bf16 (600-730 TFLOP/s on
// H200) on large shapes; one consumer's epilogue still stalls its own next tile, which ping-pong
// consumers (two tiles in flight) would remove. 2-CTA clusters sharing B by TMA multicast measured
// within noise of this kernel at the 128 x 256 shapes, so it has none (docs/perf-log.md, Session 26).
// Split-K shapes (128 x 128): the K loop (L2- or DRAM-bound: 128 blocks each stream their own A and
// B slices) plus a tail of one partial store and one (S - 1)-partial fold on the last block of each
// tile. Per block the MACs and the wgmma issue are those of 128 x 256 at twice the split; the
// operand bytes are 1/3 more, the fold (S - 1 = 1 partial of 64 KiB at 1024^2x16384, against 3 of
// 128 KiB) much less. Shared-memory reads per MAC: 1.2x those of 128 x 256 (6 KiB per 131,072 MACs
// against 10 KiB per 262,144), under the 128 B/clock an SM's shared memory gives (one m64n128k16 per
// consumer reads 6 KiB in its ~64 tensor clocks).
// 128 x 64 tiles: DRAM, reading B once (128 MiB at 128x8192x8192: ~32 us at the 4.26 TB/s copy
// ceiling; cuBLAS's 128 x 64, 8-stage kernel takes 37.2 us); every block also re-reads all of A
// from L2 (no cluster multicast).
// 128 x 192 tiles: as 128 x 256 with 1/9 more operand bytes per FLOP and a 160 KiB ring (4 stages
// of 40 KiB: as many K blocks in flight as 128 x 256, two fewer than 128 x 128's 6); where they are
// taken the rounds they save (1/4 at 3072^3) dominate.
// 256 x 128 tiles: as 128 x 256 (the same bytes per FLOP), less the part of the misaligned B's
// L2 cost that the tile moves onto A; measured 0.93 (layouts sweep) to 1.02 (benchmark, after
// session 32) of cuBLAS at 4096x3000x2048, against 0.80-0.89 with 128 x 256 tiles (docs/perf-log.md v8).
#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cudaTypedefs.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>

#include "common/cuda_check.h"
#include "common/gpu_sync.cuh"
#include "common/hopper_async.cuh"
#include "common/numeric.cuh"
#include "gemm/gemm_versions.h"

namespace cp::gemm_versions {
namespace {

using namespace cp::hopper;  // mbarriers, named barriers, smem_addr

constexpr int kBK = 64;
constexpr int kConsumers = 2, kThreads = 128 * (kConsumers + 1);
constexpr int kGroupRows = 8;
constexpr int kSwizzleElems = 64;                        // 128 bytes of 16-bit elements: one swizzle row
constexpr int kRingBytes = 192 * 1024;                   // the stage ring: as many whole stages as fit
constexpr int kOutBoxBytes = 64 * kSwizzleElems * 2;     // one 64 x 64 box of C, 128-byte swizzle
constexpr int kMinKBlocksPerSplit = 4;
// Split K: the per-tile counter word (low 16 bits: tickets taken, high 16 bits: partials
// published; splits <= 16).
constexpr unsigned kPublished = 1u << 16;
constexpr std::size_t kCounterAlign = 256;  // the partials start 256-byte aligned after the counters
constexpr int kSplitBarrier = 3;            // named barrier over both consumers (256 threads)

// One tile configuration: a kBM x kBN output tile; everything sized by the tile follows. Each
// consumer owns kBM / 2 rows as kSubTiles wgmma tiles of 64 x kBN.
template <int kBM_, int kBN_>
struct TileConfig {
  static constexpr int kBM = kBM_, kBN = kBN_;
  static_assert(kBM == 128 || kBM == 256, "one or two 64-row wgmma tiles per consumer");
  static_assert(kBN == 256 || kBN == 192 || kBN == 128 || kBN == 64,
                "wgmma wrappers exist for n256, n192, n128 and n64");
  static constexpr int kRowsPerConsumer = kBM / kConsumers;
  static constexpr int kSubTiles = kRowsPerConsumer / 64;
  static constexpr int kSubAcc = kBN / 2;            // fp32 accumulators per thread per 64 x kBN wgmma tile
  static constexpr int kAcc = kSubTiles * kSubAcc;   // per consumer thread: kBM / 2 x kBN over 128 threads
  static constexpr int kATileBytes = kBM * kBK * 2;
  static constexpr int kBTileBytes = kBK * kBN * 2;
  static constexpr int kStageBytes = kATileBytes + kBTileBytes;
  // 4 at 128 x 256 and 256 x 128, 6 at 128 x 128, 8 at 128 x 64 (each filling the ring); 4 of 40 KiB
  // at 128 x 192, 160 KiB (five would not fit beside its larger epilogue buffers).
  static constexpr int kStages = kRingBytes / kStageBytes;
  // Epilogue staging, per consumer: 64 x 64 boxes of a 64 x kBN wgmma tile, two at a time where
  // two divide the tile (a 64 x 128 half at BN = 256, the whole tile at BN = 128), else the whole
  // tile at once (three boxes at BN = 192, one at BN = 64).
  static constexpr int kOutBoxes = kBN / kSwizzleElems % 2 == 0 ? 2 : kBN / kSwizzleElems;
  static constexpr int kOutBufBytes = kOutBoxes * kOutBoxBytes;
  // Epilogue passes per consumer and tile: two at 128 x 256 (the halves) and 256 x 128 (the wgmma tiles).
  static constexpr int kEpiloguePasses = kSubTiles * (kBN / kSwizzleElems / kOutBoxes);
  // At 256 x 128 the second pass goes into the consumer's share of the tile's last stage, which the consumers keep
  // from the producer until that pass's TMA stores have read it, so it does not wait for the first pass's stores
  // to read the epilogue buffer: 4000x3000x2000 4.5-7% faster. At 128 x 256 the same cost 0.2-1% at 4096^3 and
  // 8192^3 (docs/perf-log.md, session 32), so it keeps one buffer there.
  static constexpr bool kKeepLastStage = kEpiloguePasses == 2 && kSubTiles == 2;
  static_assert(!kKeepLastStage || kConsumers * kOutBufBytes <= kStageBytes, "both consumers' second passes fit");
  // Dynamic shared memory: the ring, the epilogue buffers, and slack for the 1024-byte alignment.
  static constexpr int kSmemBytes = kStages * kStageBytes + kConsumers * kOutBufBytes + 1024;
  static constexpr int kStaticSmemBytes = 2 * kStages * 8 + 16;  // full/empty mbarriers, split ticket (padded)
  static_assert(kSmemBytes + kStaticSmemBytes <= 227 * 1024, "over the 227 KiB a block may use");
  static constexpr int kPartialFloats = kBM * kBN;  // one split's fp32 partial tile in the workspace
  // float4 per thread per split in one step of the fold: the stash of a step fills at most the
  // epilogue buffer (8 at 128 x 256 and 256 x 128, 4 at 128 x 64).
  static constexpr int kFoldVecs = kOutBufBytes / (128 * 16) < 8 ? kOutBufBytes / (128 * 16) : 8;
  static_assert(kAcc / 4 % kFoldVecs == 0, "the fold walks a thread's float4 in whole steps");
};
using Wide = TileConfig<128, 256>;
using Narrow = TileConfig<128, 64>;
using Tall = TileConfig<256, 128>;
using Square = TileConfig<128, 128>;
using Mid = TileConfig<128, 192>;

// A consumer's accumulators of wgmma tile `sub` (rows 64 * sub of its kRowsPerConsumer).
template <class Cfg>
__device__ __forceinline__ float (&sub_tile(float (&acc)[Cfg::kAcc], int sub))[Cfg::kSubAcc] {
  return *reinterpret_cast<float(*)[Cfg::kSubAcc]>(acc + sub * Cfg::kSubAcc);
}

// ---- TMA tensor copies and wgmma wrappers (PTX; the mbarriers are in common/hopper_async.cuh) ----

__device__ __forceinline__ void tma_load_2d(void* dst, const CUtensorMap* map, std::uint64_t* bar, int inner,
                                            int outer) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];\n" ::"r"(
          smem_addr(dst)),
      "l"(map), "r"(inner), "r"(outer), "r"(smem_addr(bar))
      : "memory");
}

// TMA store of one box from shared memory; completion is tracked per thread in bulk groups.
__device__ __forceinline__ void tma_store_2d(const CUtensorMap* map, std::uint32_t src, int inner, int outer) {
  asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%2, %3}], [%1];\n" ::"l"(map),
               "r"(src), "r"(inner), "r"(outer)
               : "memory");
}
__device__ __forceinline__ void bulk_commit() { asm volatile("cp.async.bulk.commit_group;\n" ::: "memory"); }
// Waits until this thread's bulk stores have finished reading shared memory (the buffer is free).
__device__ __forceinline__ void bulk_wait_read() { asm volatile("cp.async.bulk.wait_group.read 0;\n" ::: "memory"); }
// Waits until this thread's bulk stores are complete.
__device__ __forceinline__ void bulk_wait() { asm volatile("cp.async.bulk.wait_group 0;\n" ::: "memory"); }
__device__ __forceinline__ void st_shared_b32(std::uint32_t addr, std::uint32_t v) {
  asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(addr), "r"(v) : "memory");
}
__device__ __forceinline__ void st_shared_v4(std::uint32_t addr, float x, float y, float z, float w) {
  asm volatile("st.shared.v4.f32 [%0], {%1, %2, %3, %4};\n" ::"r"(addr), "f"(x), "f"(y), "f"(z), "f"(w) : "memory");
}
__device__ __forceinline__ float4 ld_shared_v4(std::uint32_t addr) {
  float4 v;
  asm volatile("ld.shared.v4.f32 {%0, %1, %2, %3}, [%4];\n" : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "r"(addr) : "memory");
  return v;
}

// Split-K hand-off between blocks: atom_add_relaxed_gpu, fence_red_add_gpu, ld_acquire_gpu (common/gpu_sync.cuh).

template <int kRegs>
__device__ __forceinline__ void setmaxnreg_inc() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(kRegs));
}
template <int kRegs>
__device__ __forceinline__ void setmaxnreg_dec() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(kRegs));
}

// wgmma shared-memory matrix descriptor for a 128-byte-swizzled tile: start address, leading
// and stride byte offsets (all >> 4), swizzle mode 1 (128B) in bits 62-63.
//  K-major:  rows of 64 K-elements (128 B); SBO = 1024 B between 8-row groups; LBO unused.
//  MN-major: rows of 64 MN-elements per K; SBO = 1024 B between 8-K groups, LBO = bytes
//            between 64-wide MN chunks.
__device__ __forceinline__ std::uint64_t make_desc(const void* tile, std::uint32_t lbo_bytes) {
  std::uint64_t d = (smem_addr(tile) & 0x3FFFF) >> 4;
  d |= static_cast<std::uint64_t>((lbo_bytes >> 4) & 0x3FFF) << 16;
  d |= static_cast<std::uint64_t>(1024 >> 4) << 32;
  d |= 1ull << 62;
  return d;
}

__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
// Waits until at most kPending committed wgmma groups are still running.
template <int kPending>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(kPending) : "memory");
}

// Tells the compiler the accumulators change here, so no read of them moves above a wait.
template <int kN>
__device__ __forceinline__ void fence_accumulators(float (&acc)[kN]) {
#pragma unroll
  for (int i = 0; i < kN; ++i) asm volatile("" : "+f"(acc[i])::"memory");
}

// wgmma's accumulator operands, 32 at a time: their place-holders in the instruction text and the
// matching "+f" constraints on d[i..i+31].
#define CP_WGMMA_D0_31 "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
#define CP_WGMMA_D32_63 "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
#define CP_WGMMA_D64_95 "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95"
#define CP_WGMMA_D96_127 "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127"
#define CP_WGMMA_F8(i) \
  "+f"(d[(i)]), "+f"(d[(i) + 1]), "+f"(d[(i) + 2]), "+f"(d[(i) + 3]), "+f"(d[(i) + 4]), "+f"(d[(i) + 5]), \
      "+f"(d[(i) + 6]), "+f"(d[(i) + 7])
#define CP_WGMMA_F32(i) CP_WGMMA_F8(i), CP_WGMMA_F8((i) + 8), CP_WGMMA_F8((i) + 16), CP_WGMMA_F8((i) + 24)
// One wgmma.mma_async: SHAPE and TYPE name the instruction, D its accumulator place-holders, OPERANDS
// the place-holders of the two descriptors and two transpose flags that follow them, and the
// variadic rest the accumulator constraints.
#define CP_WGMMA_ASM(SHAPE, TYPE, D, OPERANDS, ...)                                                 \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"                                          \
               "wgmma.mma_async.sync.aligned." SHAPE ".f32." TYPE "." TYPE " {" D "}, " OPERANDS ";\n}\n" \
               : __VA_ARGS__                                                                        \
               : "l"(desc_a), "l"(desc_b), "n"(kTransA), "n"(kTransB))

// One k16 step of a 64 x kBN wgmma tile: D(64 x kBN, fp32) += A(64x16) * B(16 x kBN), both from
// shared memory; kTransA / kTransB = 1 when that operand is MN-major in shared memory. d holds this
// thread's kBN / 2 accumulators.
template <typename T, int kBN, int kTransA, int kTransB>
__device__ __forceinline__ void wgmma_k16(float (&d)[kBN / 2], std::uint64_t desc_a, std::uint64_t desc_b) {
#define CP_WGMMA_K16(TYPE)                                                                                 \
  if constexpr (kBN == 256) {                                                                              \
    CP_WGMMA_ASM("m64n256k16", TYPE,                                                                       \
                 CP_WGMMA_D0_31 ", " CP_WGMMA_D32_63 ", " CP_WGMMA_D64_95 ", " CP_WGMMA_D96_127,           \
                 "%128, %129, p, 1, 1, %130, %131", CP_WGMMA_F32(0), CP_WGMMA_F32(32), CP_WGMMA_F32(64),   \
                 CP_WGMMA_F32(96));                                                                        \
  } else if constexpr (kBN == 192) {                                                                       \
    CP_WGMMA_ASM("m64n192k16", TYPE, CP_WGMMA_D0_31 ", " CP_WGMMA_D32_63 ", " CP_WGMMA_D64_95,             \
                 "%96, %97, p, 1, 1, %98, %99", CP_WGMMA_F32(0), CP_WGMMA_F32(32), CP_WGMMA_F32(64));      \
  } else if constexpr (kBN == 128) {                                                                       \
    CP_WGMMA_ASM("m64n128k16", TYPE, CP_WGMMA_D0_31 ", " CP_WGMMA_D32_63, "%64, %65, p, 1, 1, %66, %67",   \
                 CP_WGMMA_F32(0), CP_WGMMA_F32(32));                                                       \
  } else {                                                                                                 \
    static_assert(kBN == 64, "wgmma wrappers exist for n256, n192, n128 and n64");                         \
    CP_WGMMA_ASM("m64n64k16", TYPE, CP_WGMMA_D0_31, "%32, %33, p, 1, 1, %34, %35", CP_WGMMA_F32(0));       \
  }
  if constexpr (std::is_same_v<T, __half>) {
    CP_WGMMA_K16("f16")
  } else {
    CP_WGMMA_K16("bf16")
  }
#undef CP_WGMMA_K16
}
#undef CP_WGMMA_ASM
#undef CP_WGMMA_F32
#undef CP_WGMMA_F8
#undef CP_WGMMA_D96_127
#undef CP_WGMMA_D64_95
#undef CP_WGMMA_D32_63
#undef CP_WGMMA_D0_31

// ---- the kernel ----

struct Problem {
  int m, n, k;
  int tiles_m, tiles_n, k_blocks, splits;
  bool tma_store;  // C is 16-byte aligned with a 16-byte multiple row pitch: the epilogue uses TMA
};

struct WorkUnit {
  int m0, n0, kb_begin, kb_end, tile, split;
};

template <class Cfg>
__device__ __forceinline__ WorkUnit work_unit(const Problem& p, int unit) {
  const int tile = unit / p.splits, split = unit % p.splits;
  const int tiles_per_group = kGroupRows * p.tiles_n;
  const int first_row = tile / tiles_per_group * kGroupRows;
  const int rows_in_group = min(p.tiles_m - first_row, kGroupRows);
  const int in_group = tile % tiles_per_group;
  WorkUnit w;
  w.m0 = (first_row + in_group % rows_in_group) * Cfg::kBM;
  w.n0 = in_group / rows_in_group * Cfg::kBN;
  w.kb_begin = static_cast<int>(static_cast<std::int64_t>(split) * p.k_blocks / p.splits);
  w.kb_end = static_cast<int>(static_cast<std::int64_t>(split + 1) * p.k_blocks / p.splits);
  w.tile = tile;
  w.split = split;
  return w;
}

template <typename T>
__device__ __forceinline__ void store_pair(T* c, std::int64_t ldc, int row, int col, int n, float v0, float v1) {
  T* p = c + static_cast<std::int64_t>(row) * ldc + col;
  if (col + 1 < n) {
    p[0] = from_float<T>(v0);
    p[1] = from_float<T>(v1);
  } else if (col < n) {
    p[0] = from_float<T>(v0);
  }
}

template <typename T>
__device__ __forceinline__ std::uint32_t pack2(float lo, float hi) {
  const T a = from_float<T>(lo), b = from_float<T>(hi);
  std::uint16_t ua, ub;
  memcpy(&ua, &a, 2);
  memcpy(&ub, &b, 2);
  return static_cast<std::uint32_t>(ua) | (static_cast<std::uint32_t>(ub) << 16);
}

// Epilogue through shared memory and TMA: one 64 x kBN wgmma tile of this consumer (rows row0..+63
// of C) goes out kOutBoxes 64 x 64 boxes at a time (the two of a 128-column half at BN = 256, the
// whole tile at BN = 128 (two boxes) and BN = 192 (three), the one box at BN = 64). Per
// pass its threads write the rounded accumulators into a buffer (swizzled boxes, 4-byte stores,
// conflict-free: the 8 rows of a store land in 8 different 16-byte chunks), then one thread
// issues the pass's TMA stores, which clip at the matrix edge. The consumer's passes, counted from
// `first_pass` over its wgmma tiles, alternate between `buf` (its epilogue buffer, rewritten only after
// earlier stores have read it) and `odd_buf` (its share of the tile's last stage, fresh; `buf` again where
// the consumers keep no stage). The last stores stay in flight while the consumer starts its next tile.
template <typename T, class Cfg>
__device__ __forceinline__ void store_tile_tma(const float (&acc)[Cfg::kSubAcc], std::uint32_t buf,
                                               std::uint32_t odd_buf, int first_pass, const CUtensorMap* map_c,
                                               int row0, int n0, int consumer, int t) {
  constexpr int kBN = Cfg::kBN, kBoxes = Cfg::kOutBoxes, kBlocks = 8 * kBoxes;  // per pass: boxes, 8-column blocks
  const int warp = t / 32, lane = t % 32, g = lane / 4, q = lane % 4;
  const int barrier = 1 + consumer;
#pragma unroll
  for (int pass = 0; pass < kBN / 8 / kBlocks; ++pass) {
    const std::uint32_t pass_buf = (first_pass + pass) % 2 == 0 ? buf : odd_buf;
    if (t == 0 && pass_buf == buf) bulk_wait_read();  // the previous TMA stores from buf are done reading it
    named_barrier(barrier, 128);
#pragma unroll
    for (int jl = 0; jl < kBlocks; ++jl) {  // the 8-column blocks of this pass
      const int j = kBlocks * pass + jl, box = jl / 8, chunk = jl % 8;
#pragma unroll
      for (int upper = 0; upper < 2; ++upper) {  // rows g and g + 8 of this warp's 16
        const int row = warp * 16 + g + 8 * upper;
        const std::uint32_t addr = pass_buf + box * kOutBoxBytes + row * 128 + ((chunk ^ (row & 7)) << 4) + 4 * q;
        st_shared_b32(addr, pack2<T>(acc[4 * j + 2 * upper], acc[4 * j + 2 * upper + 1]));
      }
    }
    fence_async_shared();
    named_barrier(barrier, 128);
    if (t == 0) {
#pragma unroll
      for (int box = 0; box < kBoxes; ++box)
        tma_store_2d(map_c, pass_buf + box * kOutBoxBytes, n0 + (kBoxes * pass + box) * kSwizzleElems, row0);
      bulk_commit();
    }
  }
}

// Split K, called by both consumers once their accumulators hold this block's slice of the tile.
// One thread (the leader) takes a ticket on the tile's counter. Blocks that are not the last to arrive
// store their partial tile to their split's slot of the workspace, in the accumulator fragment
// order (thread t's float4 j at [(consumer * kAcc / 4 + j) * 128 + t]: a warp's store is 512
// contiguous bytes, and the reader, the same thread of another block, loads the same addresses,
// so no edge masking), then publish it with a release increment. The block with the last ticket waits
// until the splits that took tickets before it have published (they are running, with nothing
// left but their stores: no wait on a block that may not be scheduled), then adds the partials in
// split order 0..S-1 with its own registers at its own index: ((p0 + p1) + p2) + ..., the same
// expression whatever the arrival order, so the result is bit-identical run to run. Returns true
// in the block that now holds the whole sum (it runs the epilogue), false in the others.
template <class Cfg>
__device__ __forceinline__ bool fold_splits(float (&acc)[Cfg::kAcc], float* __restrict__ partials,
                                            unsigned* __restrict__ counters, const Problem& p, const WorkUnit& w,
                                            int consumer, int t, unsigned char* out_buf, unsigned& ticket) {
  constexpr int kPartialFloats = Cfg::kPartialFloats, kFoldVecs = Cfg::kFoldVecs, kVecs = Cfg::kAcc / 4;
  constexpr int kSlotVecs = kPartialFloats / 4;
  unsigned* counter = counters + w.tile;
  const bool leader = consumer == 0 && t == 0;
  if (t == 0) bulk_wait_read();  // out_buf (the stash below) is no longer read by a TMA store
  if (leader) ticket = atom_add_relaxed_gpu(counter, 1) & (kPublished - 1);
  named_barrier(kSplitBarrier, 256);
  const bool last = ticket == static_cast<unsigned>(p.splits - 1);
  const std::uint32_t stash = smem_addr(out_buf) + 16 * t;
  float4* tile_partials =
      reinterpret_cast<float4*>(partials + static_cast<std::int64_t>(w.tile) * p.splits * kPartialFloats) +
      consumer * kVecs * 128 + t;
  if (!last) {
    float4* mine = tile_partials + static_cast<std::int64_t>(w.split) * kSlotVecs;
#pragma unroll
    for (int j = 0; j < kVecs; ++j)
      __stcg(mine + j * 128, make_float4(acc[4 * j], acc[4 * j + 1], acc[4 * j + 2], acc[4 * j + 3]));
    named_barrier(kSplitBarrier, 256);  // every thread's stores precede the leader's release
    if (leader) fence_red_add_gpu(counter, kPublished);
    return false;
  }
  if (leader) {
    while ((ld_acquire_gpu(counter) >> 16) < static_cast<unsigned>(p.splits - 1)) {
    }
    *counter = 0;  // every split has counted and published: zero for the next launch (kernel end orders it)
  }
  named_barrier(kSplitBarrier, 256);  // the leader's acquire precedes every thread's loads
  // acc becomes the running sum, kFoldVecs float4 (32 accumulators, 16 at 128 x 64) at
  // a time. This block's own slice of the chunk waits in `stash` (this thread's kFoldVecs x 16
  // bytes of the consumer's epilogue buffer) until its turn; the next split's chunk is loaded
  // while the current one is added, so 2 x kFoldVecs float4 loads per thread are in flight.
  const auto fetch = [&](const float4* chunk, int s, float4(&v)[kFoldVecs]) {
    if (s == w.split) {
#pragma unroll
      for (int jj = 0; jj < kFoldVecs; ++jj) v[jj] = ld_shared_v4(stash + jj * 128 * 16);
    } else {
      const float4* slot = chunk + static_cast<std::int64_t>(s) * kSlotVecs;
#pragma unroll
      for (int jj = 0; jj < kFoldVecs; ++jj) v[jj] = __ldcg(slot + jj * 128);
    }
  };
#pragma unroll
  for (int c = 0; c < kVecs / kFoldVecs; ++c) {
    const float4* chunk = tile_partials + kFoldVecs * c * 128;
    if (w.split != 0) {  // start from split 0's partial; ours waits in the stash
#pragma unroll
      for (int jj = 0; jj < kFoldVecs; ++jj) {
        const int j = kFoldVecs * c + jj;
        st_shared_v4(stash + jj * 128 * 16, acc[4 * j], acc[4 * j + 1], acc[4 * j + 2], acc[4 * j + 3]);
        const float4 v = __ldcg(chunk + jj * 128);
        acc[4 * j] = v.x, acc[4 * j + 1] = v.y, acc[4 * j + 2] = v.z, acc[4 * j + 3] = v.w;
      }
    }
    float4 v[kFoldVecs];
    fetch(chunk, 1, v);
#pragma unroll 1
    for (int s = 1;; ++s) {
      const bool more = s + 1 < p.splits;
      float4 next[kFoldVecs];
      if (more) fetch(chunk, s + 1, next);
#pragma unroll
      for (int jj = 0; jj < kFoldVecs; ++jj) {
        const int j = kFoldVecs * c + jj;
        acc[4 * j] += v[jj].x, acc[4 * j + 1] += v[jj].y, acc[4 * j + 2] += v[jj].z, acc[4 * j + 3] += v[jj].w;
      }
      if (!more) break;
#pragma unroll
      for (int jj = 0; jj < kFoldVecs; ++jj) v[jj] = next[jj];
    }
  }
  return true;
}

template <typename T, int kBM, int kBN, bool kAMnMajor, bool kBMnMajor>
__global__ void __launch_bounds__(kThreads, 1)
    gemm_wgmma_tma_kernel(const __grid_constant__ CUtensorMap map_a, const __grid_constant__ CUtensorMap map_b,
                          const __grid_constant__ CUtensorMap map_c, T* __restrict__ c, std::int64_t ldc,
                          float* __restrict__ partials, unsigned* __restrict__ counters, Problem p) {
  using Cfg = TileConfig<kBM, kBN>;
  constexpr int kStages = Cfg::kStages, kStageBytes = Cfg::kStageBytes, kATileBytes = Cfg::kATileBytes;
  extern __shared__ unsigned char smem_raw[];
  // 128-byte swizzle atoms are 1024 bytes and must start 1024-byte aligned.
  unsigned char* smem = reinterpret_cast<unsigned char*>((reinterpret_cast<std::uintptr_t>(smem_raw) + 1023) & ~std::uintptr_t{1023});
  __shared__ __align__(8) std::uint64_t full[kStages], empty[kStages];
  __shared__ unsigned split_ticket;  // split K: the ticket the leader took, for both consumers

  const int warpgroup = threadIdx.x / 128;
  if (threadIdx.x == 0) {
    for (int s = 0; s < kStages; ++s) {
      mbar_init(&full[s], 1);                  // the producer's arrive.expect_tx
      mbar_init(&empty[s], kConsumers * 4);    // one arrive per consumer warp
    }
    mbar_init_fence();  // barriers visible to the consumers and to TMA
  }
  __syncthreads();

  const int units = p.tiles_m * p.tiles_n * p.splits;
  if (warpgroup == 0) {
    setmaxnreg_dec<40>();
    if (threadIdx.x == 0) {
      int stage = 0;
      unsigned phase = 0;
      for (int unit = blockIdx.x; unit < units; unit += gridDim.x) {
        const WorkUnit w = work_unit<Cfg>(p, unit);
        for (int kb = w.kb_begin; kb < w.kb_end; ++kb) {
          mbar_wait(&empty[stage], phase ^ 1);
          unsigned char* a_tile = smem + stage * kStageBytes;
          unsigned char* b_tile = a_tile + kATileBytes;
          mbar_arrive_expect_tx(&full[stage], kStageBytes);
          const int k0 = kb * kBK;
          if constexpr (kAMnMajor) {  // kBM / 64 boxes of 64(M) x 64(K)
            for (int i = 0; i < kBM / kSwizzleElems; ++i)
              tma_load_2d(a_tile + i * kSwizzleElems * kBK * 2, &map_a, &full[stage], w.m0 + i * kSwizzleElems, k0);
          } else {  // one 64(K) x kBM(M) box
            tma_load_2d(a_tile, &map_a, &full[stage], k0, w.m0);
          }
          if constexpr (kBMnMajor) {  // kBN / 64 boxes of 64(N) x 64(K)
            for (int i = 0; i < kBN / kSwizzleElems; ++i)
              tma_load_2d(b_tile + i * kSwizzleElems * kBK * 2, &map_b, &full[stage], w.n0 + i * kSwizzleElems, k0);
          } else {  // one 64(K) x kBN(N) box
            tma_load_2d(b_tile, &map_b, &full[stage], k0, w.n0);
          }
          if (++stage == kStages) stage = 0, phase ^= 1;
        }
      }
    }
    return;
  }

  setmaxnreg_inc<232>();
  const int consumer = warpgroup - 1;  // rows [kRowsPerConsumer * consumer, +kRowsPerConsumer) of the tile
  const int t = threadIdx.x % 128, warp = t / 32, lane = t % 32;
  int stage = 0;
  unsigned phase = 0;
  float acc[Cfg::kAcc];
  // Unsplit tall tiles keep the tile's last stage for their epilogue's second pass (store_tile_tma).
  const bool keep_last_stage = Cfg::kKeepLastStage && p.splits == 1 && p.tma_store;
  int kept = -1;  // the stage the last epilogue's second pass went into, until its stores have read it
  for (int unit = blockIdx.x; unit < units; unit += gridDim.x) {
    const WorkUnit w = work_unit<Cfg>(p, unit);
#pragma unroll
    for (int i = 0; i < Cfg::kAcc; ++i) acc[i] = 0.0f;
    int held = -1;  // the stage the wgmma group still in flight reads
    for (int kb = w.kb_begin; kb < w.kb_end; ++kb) {
      mbar_wait(&full[stage], phase);
      const unsigned char* a_tile = smem + stage * kStageBytes;
      const unsigned char* b_tile = a_tile + kATileBytes;
      wgmma_fence();
#pragma unroll
      for (int kk = 0; kk < kBK / 16; ++kk) {
        // K-major: step 16 elements (32 B) along the swizzled row; MN-major: step 16 K rows
        // (16 x 128 B). A: wgmma tile `sub` of this consumer is 64 rows of 128 B (K-major) or
        // one 64-wide M chunk (MN-major), the consumer's chunks in order.
        const std::uint64_t db = kBMnMajor ? make_desc(b_tile + kk * 16 * 128, kSwizzleElems * kBK * 2)
                                           : make_desc(b_tile + kk * 32, 16);
#pragma unroll
        for (int sub = 0; sub < Cfg::kSubTiles; ++sub) {
          const int chunk = consumer * Cfg::kSubTiles + sub;  // 64-row chunk of the A tile
          const std::uint64_t da =
              kAMnMajor ? make_desc(a_tile + chunk * kSwizzleElems * kBK * 2 + kk * 16 * 128, kSwizzleElems * kBK * 2)
                        : make_desc(a_tile + chunk * 64 * 128 + kk * 32, 16);
          wgmma_k16<T, kBN, kAMnMajor ? 1 : 0, kBMnMajor ? 1 : 0>(sub_tile<Cfg>(acc, sub), da, db);
        }
      }
      wgmma_commit();
      // Keep this K block's group in flight while the next stage is awaited: only the previous
      // group must be done, and its stage goes back to the producer.
      wgmma_wait<1>();
      if (held >= 0 && lane == 0) mbar_arrive(&empty[held]);
      if (kept >= 0) {  // the previous tile's stores were issued a K block ago: the stage goes back to the producer
        if (lane == 0) {
          if (t == 0) bulk_wait_read();  // this consumer's stores were issued by thread 0
          mbar_arrive(&empty[kept]);
        }
        kept = -1;
      }
      held = stage;
      if (++stage == kStages) stage = 0, phase ^= 1;
    }
    wgmma_wait<0>();
    fence_accumulators(acc);
    unsigned char* out_buf = smem + kStages * kStageBytes + consumer * Cfg::kOutBufBytes;
    std::uint32_t odd_buf = smem_addr(out_buf);  // shared-memory addresses: 32 bits
    if (keep_last_stage) {
      kept = held;
      odd_buf = smem_addr(smem + held * kStageBytes + consumer * Cfg::kOutBufBytes);
      named_barrier(kSplitBarrier, 256);  // both consumers' wgmmas are done reading the stage before either writes it
    } else if (held >= 0 && lane == 0) {
      mbar_arrive(&empty[held]);
    }

    if (p.splits > 1 && !fold_splits<Cfg>(acc, partials, counters, p, w, consumer, t, out_buf, split_ticket)) continue;

    // Fragment layout of wgmma's D, per 64 x kBN wgmma tile d = sub_tile(acc, sub): warp w holds
    // rows 16w..16w+15; per 8-column block j, d[4j + {0,1}] = (row g, cols 8j + 2q + {0,1}),
    // d[4j + {2,3}] = (row g + 8, same).
#pragma unroll
    for (int sub = 0; sub < Cfg::kSubTiles; ++sub) {
      const float(&d)[Cfg::kSubAcc] = sub_tile<Cfg>(acc, sub);
      const int tile_row0 = w.m0 + consumer * Cfg::kRowsPerConsumer + sub * 64;
      if (p.tma_store) {
        store_tile_tma<T, Cfg>(d, smem_addr(out_buf), odd_buf, sub * (Cfg::kEpiloguePasses / Cfg::kSubTiles), &map_c, tile_row0,
                               w.n0, consumer, t);
      } else {
        const int g = lane / 4, q = lane % 4;
        const int row0 = tile_row0 + warp * 16 + g;
#pragma unroll
        for (int j = 0; j < kBN / 8; ++j) {
          const int col = w.n0 + 8 * j + 2 * q;
          if (row0 < p.m) store_pair(c, ldc, row0, col, p.n, d[4 * j], d[4 * j + 1]);
          if (row0 + 8 < p.m) store_pair(c, ldc, row0 + 8, col, p.n, d[4 * j + 2], d[4 * j + 3]);
        }
      }
    }
  }
  if (t == 0) bulk_wait();  // the last TMA stores must finish before the block's shared memory goes
}

// ---- host side ----

PFN_cuTensorMapEncodeTiled_v12000 encode_tiled() {
  static PFN_cuTensorMapEncodeTiled_v12000 fn = [] {
    void* f = nullptr;
    cudaDriverEntryPointQueryResult status{};
#if CUDART_VERSION >= 12050
    CP_CUDA_CHECK(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &f, 12000, cudaEnableDefault, &status));
#else
    CP_CUDA_CHECK(cudaGetDriverEntryPoint("cuTensorMapEncodeTiled", &f, cudaEnableDefault, &status));
#endif
    if (status != cudaDriverEntryPointSuccess || f == nullptr)
      throw std::runtime_error("gemm(wgmma_tma): the driver has no cuTensorMapEncodeTiled (needs a CUDA 12+ driver)");
    return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(f);
  }();
  return fn;
}

// A tensor map over a 2-D operand with one unit stride: `inner` elements contiguous, `outer`
// lines `outer_stride` elements apart; boxes of 64 x box_outer with the 128-byte swizzle.
CUtensorMap make_tensor_map(CUtensorMapDataType type, const void* data, std::int64_t inner, std::int64_t outer,
                            std::int64_t outer_stride, int box_outer) {
  CUtensorMap map;
  const cuuint64_t dims[2] = {static_cast<cuuint64_t>(inner), static_cast<cuuint64_t>(outer)};
  // A single line's stride is never used; any 16-byte multiple satisfies the encoder.
  const std::int64_t stride_bytes = outer > 1 ? outer_stride * 2 : ((inner * 2 + 15) / 16) * 16;
  const cuuint64_t strides[1] = {static_cast<cuuint64_t>(stride_bytes)};
  const cuuint32_t box[2] = {static_cast<cuuint32_t>(kSwizzleElems), static_cast<cuuint32_t>(box_outer)};
  const cuuint32_t elem_strides[2] = {1, 1};
  const CUresult r = encode_tiled()(&map, type, 2, const_cast<void*>(data), dims, strides, box, elem_strides,
                                    CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                                    CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS)
    throw std::runtime_error("gemm(wgmma_tma): cuTensorMapEncodeTiled failed with CUresult " + std::to_string(r));
  return map;
}

// K-major when the K index has unit stride (A row-major, B column-major).
bool a_is_mn_major(const ConstMatrixView& a) { return !(a.col_stride == 1 && (a.row_stride != 1 || a.cols > 1)); }
bool b_is_mn_major(const ConstMatrixView& b) { return !(b.row_stride == 1 && (b.col_stride != 1 || b.rows > 1)); }

// K split of a tile configuration: few output tiles and long K spread K over the blocks.
template <class Cfg>
int split_count(std::int64_t m, std::int64_t n, std::int64_t k, int sm_count) {
  const std::int64_t tiles = ((m + Cfg::kBM - 1) / Cfg::kBM) * ((n + Cfg::kBN - 1) / Cfg::kBN);
  const std::int64_t k_blocks = (k + kBK - 1) / kBK;
  if (tiles * 2 > sm_count) return 1;
  return static_cast<int>(std::max<std::int64_t>(1, std::min({sm_count / tiles, k_blocks / kMinKBlocksPerSplit,
                                                               std::int64_t{16}})));
}

// Whether an operand's contiguous lines (rows of a row-major matrix, columns of a column-major
// one) all start on a 32-byte sector: base and line pitch both multiples of 32 bytes.
bool lines_on_sectors(const ConstMatrixView& x) {
  const bool row_major = x.col_stride == 1 && (x.row_stride != 1 || x.cols > 1);
  const std::int64_t pitch_bytes = (row_major ? x.row_stride : x.col_stride) * 2;
  return reinterpret_cast<std::uintptr_t>(x.data) % 32 == 0 && pitch_bytes % 32 == 0;
}

// Tile and K split of one call.
// - One 128-row tile (M <= 128) with enough 64-wide tiles to fill the GPU (>= ~0.9 x #SMs) takes
//   128 x 64 tiles, 8 stages, no split K: such shapes read B once from DRAM and are bound there.
//   At 128x8192x8192 bf16 on an H200 (ncu) the 128 x 256 tiles needed split K 4 to reach 128
//   blocks and ran 47.5 us at 61% of DRAM throughput; cuBLAS's 128 x 64 tiles, 8 stages, no
//   split K (128 blocks, each over the whole K) ran 37.2 us at 78%.
// - B's lines off 32-byte sectors while A's are on them (e.g. row-major B with N = 3000 bf16:
//   6,000-byte rows), no split K: 256 x 128 tiles. Blocks that share a B tile then ask the L2 for
//   sectors its request coalescer mostly fails to merge when the box rows start mid-sector
//   (ncu at 4096x3000x2048: 63% more L2 reads than at N = 3072, tensor pipes 58% busy against
//   81%). The tall tile halves B's share of the loads (1/3 instead of 2/3) at the same bytes per
//   FLOP (docs/perf-log.md).
// - Few output tiles and long K, where 128 x 256 tiles would split K: 128 x 128 tiles and their own
//   split (1024x1024x16384: split 2 over 64 tiles; 128 x 256 needed 4 over 32). Under ncu (bf16, 8
//   launches back to back) 128 x 256 split 4 ran 56 us against cuBLAS's 128 x 128 split 2 + reduce,
//   51 us.
// - Everything else runs unsplit 128 x 256 tiles, or narrower ones where those finish sooner
//   (unsplit_width).
struct TilePlan {
  int bm, bn, stages, splits;
};

// Wave quantization: a persistent grid of 128 x W tiles takes ceil(tiles / #SMs) rounds of one tile
// time (proportional to W), however few tiles its last round has. 3072^3 is 288 tiles of 128 x 256 on
// 132 SMs: 3 rounds for 2.18 rounds of work, 768 column-times. 128 x 192 tiles cut it finer: 384
// tiles, 3 rounds of 192, 576 (cuBLAS runs 192 x 192 tiles there, 2 rounds of 1.125); 128 x 128:
// 576 tiles, 5 rounds of 128, 640. A narrower tile moves more operand bytes per FLOP and runs more
// epilogues, which the model leaves out: on the H200 128 x 128 tiles took 2-10% longer than it says
// (bf16/fp16, docs/perf-log.md "wgmma_tma v12"): 10240^2 x 4096 (model 0.98 of 128 x 256) came out
// even, 16384^2 x 1024 (0.99) 6-10% slower, 5120^3 (0.93) 2.5-5% faster, 3072^3 (0.83) 12-14%
// faster. So a narrower tile replaces the one chosen so far only where the model has it >= 5% sooner.
int unsplit_width(std::int64_t m, std::int64_t n, int sm_count) {
  const std::int64_t strips = (m + Wide::kBM - 1) / Wide::kBM;
  const auto time = [&](std::int64_t width) {
    const std::int64_t tiles = strips * ((n + width - 1) / width);
    return (tiles + sm_count - 1) / sm_count * width;
  };
  int width = Wide::kBN;
  for (const int narrower : {Mid::kBN, Square::kBN})
    if (time(narrower) * 20 <= time(width) * 19) width = narrower;
  return width;
}

TilePlan tile_plan(std::int64_t m, std::int64_t n, std::int64_t k, int sm_count, bool b_off_sectors_a_on) {
  const std::int64_t narrow_tiles = (n + Narrow::kBN - 1) / Narrow::kBN;
  if (m <= Narrow::kBM && narrow_tiles * 10 >= std::int64_t{9} * sm_count)
    return {Narrow::kBM, Narrow::kBN, Narrow::kStages, 1};
  if (split_count<Wide>(m, n, k, sm_count) > 1)
    return {Square::kBM, Square::kBN, Square::kStages, split_count<Square>(m, n, k, sm_count)};
  if (b_off_sectors_a_on) return {Tall::kBM, Tall::kBN, Tall::kStages, 1};
  switch (unsplit_width(m, n, sm_count)) {
    case Mid::kBN: return {Mid::kBM, Mid::kBN, Mid::kStages, 1};
    case Square::kBN: return {Square::kBM, Square::kBN, Square::kStages, 1};
    default: return {Wide::kBM, Wide::kBN, Wide::kStages, 1};
  }
}
TilePlan tile_plan(const ConstMatrixView& a, const ConstMatrixView& b, int sm_count) {
  return tile_plan(a.rows, b.cols, a.cols, sm_count, !lines_on_sectors(b) && lines_on_sectors(a));
}

template <typename T, class Cfg, bool kAMnMajor, bool kBMnMajor>
void launch(const ConstMatrixView& a, const ConstMatrixView& b, const MatrixView& c, float* partials,
            unsigned* counters, const Problem& p, int grid, cudaStream_t stream) {
  const CUtensorMapDataType type =
      std::is_same_v<T, __half> ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16 : CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
  const CUtensorMap map_a = kAMnMajor ? make_tensor_map(type, a.data, p.m, p.k, a.col_stride, kBK)
                                      : make_tensor_map(type, a.data, p.k, p.m, a.row_stride, Cfg::kBM);
  const CUtensorMap map_b = kBMnMajor ? make_tensor_map(type, b.data, p.n, p.k, b.row_stride, kBK)
                                      : make_tensor_map(type, b.data, p.k, p.n, b.col_stride, Cfg::kBN);
  // The output's map is used only by the TMA-store epilogue (aligned C); else it stays unset.
  CUtensorMap map_c{};
  if (p.tma_store) map_c = make_tensor_map(type, c.data, p.n, p.m, c.row_stride, 64);
  auto kernel = gemm_wgmma_tma_kernel<T, Cfg::kBM, Cfg::kBN, kAMnMajor, kBMnMajor>;
  CP_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, Cfg::kSmemBytes));
  kernel<<<grid, kThreads, Cfg::kSmemBytes, stream>>>(map_a, map_b, map_c, static_cast<T*>(c.data), c.row_stride,
                                                      partials, counters, p);
  CP_CHECK_LAUNCH("gemm_wgmma_tma_kernel");
}

template <typename T, class Cfg>
void dispatch_layouts(const ConstMatrixView& a, const ConstMatrixView& b, const MatrixView& c, float* partials,
                      unsigned* counters, const Problem& p, int grid, cudaStream_t stream) {
  const bool a_mn = a_is_mn_major(a), b_mn = b_is_mn_major(b);
  if (a_mn && b_mn) launch<T, Cfg, true, true>(a, b, c, partials, counters, p, grid, stream);
  else if (a_mn) launch<T, Cfg, true, false>(a, b, c, partials, counters, p, grid, stream);
  else if (b_mn) launch<T, Cfg, false, true>(a, b, c, partials, counters, p, grid, stream);
  else launch<T, Cfg, false, false>(a, b, c, partials, counters, p, grid, stream);
}

template <typename T>
void dispatch_tile(const TilePlan& plan, const ConstMatrixView& a, const ConstMatrixView& b, const MatrixView& c,
                   float* partials, unsigned* counters, const Problem& p, int grid, cudaStream_t stream) {
  if (plan.bn == Narrow::kBN) dispatch_layouts<T, Narrow>(a, b, c, partials, counters, p, grid, stream);
  else if (plan.bm == Tall::kBM) dispatch_layouts<T, Tall>(a, b, c, partials, counters, p, grid, stream);
  else if (plan.bn == Square::kBN) dispatch_layouts<T, Square>(a, b, c, partials, counters, p, grid, stream);
  else if (plan.bn == Mid::kBN) dispatch_layouts<T, Mid>(a, b, c, partials, counters, p, grid, stream);
  else dispatch_layouts<T, Wide>(a, b, c, partials, counters, p, grid, stream);
}

}  // namespace

// Split-K workspace: the tile counters, then tiles x splits fp32 partial tiles of the tile's size.
// The counter region has one size per GPU, room for the most tiles that split K (half the SMs:
// split_count), padded to kCounterAlign bytes: a stream's workspace serves launches of every shape,
// and a region sized per launch would let a launch with more tiles read the partials an earlier
// one left where its counters now start (64 tiles then 66 on 132 SMs: 256 then 512 bytes).
std::size_t wgmma_tma_counter_bytes(int sm_count) {
  const auto most_tiles = static_cast<std::size_t>(std::max(1, sm_count / 2));
  return (most_tiles * sizeof(unsigned) + kCounterAlign - 1) / kCounterAlign * kCounterAlign;
}

// Only 128 x 128 tiles split K, and the operands' alignment only picks the tile when K is not
// split, so the workspace follows from the shape alone.
std::size_t wgmma_tma_workspace_bytes(std::int64_t m, std::int64_t n, std::int64_t k, int sm_count) {
  const TilePlan plan = tile_plan(m, n, k, sm_count, false);
  if (plan.splits == 1) return 0;
  const std::int64_t tiles = ((m + plan.bm - 1) / plan.bm) * ((n + plan.bn - 1) / plan.bn);
  return wgmma_tma_counter_bytes(sm_count) +
         static_cast<std::size_t>(tiles) * plan.splits * plan.bm * plan.bn * sizeof(float);
}

std::string wgmma_tma_config(const ConstMatrixView& a, const ConstMatrixView& b, int sm_count) {
  const TilePlan plan = tile_plan(a, b, sm_count);
  return std::to_string(plan.bm) + "x" + std::to_string(plan.bn) + "x" + std::to_string(kBK) + ", " +
         std::to_string(plan.stages) + " stages, split-K " + std::to_string(plan.splits);
}

void wgmma_tma(DType dtype, const ConstMatrixView& a, const ConstMatrixView& b, const MatrixView& c,
               void* workspace, std::size_t /*workspace_bytes*/, int sm_count, cudaStream_t stream) {
  const std::int64_t m = a.rows, n = b.cols, k = a.cols;
  if (m > 0x7fffffff - Tall::kBM || n > 0x7fffffff - Wide::kBN || k > 0x7fffffff - kBK)
    throw std::invalid_argument("gemm(wgmma_tma): M, N and K must be < 2^31 (TMA coordinates are 32-bit)");
  const TilePlan plan = tile_plan(a, b, sm_count);
  Problem p;
  p.m = static_cast<int>(m), p.n = static_cast<int>(n), p.k = static_cast<int>(k);
  p.tiles_m = static_cast<int>((m + plan.bm - 1) / plan.bm);
  p.tiles_n = static_cast<int>((n + plan.bn - 1) / plan.bn);
  p.k_blocks = static_cast<int>((k + kBK - 1) / kBK);
  p.splits = plan.splits;
  // TMA stores need a 16-byte aligned base and row pitch (row-major C; any row count).
  p.tma_store = c.col_stride == 1 && reinterpret_cast<std::uintptr_t>(c.data) % 16 == 0 &&
                (m == 1 || (c.row_stride * 2) % 16 == 0);
  const std::int64_t units = static_cast<std::int64_t>(p.tiles_m) * p.tiles_n * p.splits;
  if (units > 0x7fffffff) throw std::invalid_argument("gemm(wgmma_tma): more than 2^31-1 output tiles");
  const int grid = static_cast<int>(std::min<std::int64_t>(units, sm_count));
  unsigned* counters = nullptr;
  float* partials = nullptr;
  if (p.splits > 1) {
    // The counters are zero: the caller zeroed the workspace once, and every launch leaves them so.
    const std::size_t cbytes = wgmma_tma_counter_bytes(sm_count);
    counters = static_cast<unsigned*>(workspace);
    partials = reinterpret_cast<float*>(static_cast<unsigned char*>(workspace) + cbytes);
  }
  switch (dtype) {
    case DType::F16: dispatch_tile<__half>(plan, a, b, c, partials, counters, p, grid, stream); break;
    case DType::BF16: dispatch_tile<__nv_bfloat16>(plan, a, b, c, partials, counters, p, grid, stream); break;
    case DType::F32: throw std::invalid_argument("gemm(wgmma_tma): float32 is not supported");
  }
}

}  // namespace cp::gemm_versions
