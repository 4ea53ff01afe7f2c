// Hand-offs between blocks through counters in global memory (gpu scope, sm_70 and later): the
// PTX wrappers the split-K GEMM's tile counters (gemm_05_wgmma_tma_sm90a.cu) and the split_row
// softmax's exchanges share: the portable kernels' row counters (softmax_reduce.cuh, RowExchange) and
// the 64-bit slots of the streamed and held kernels (row_total in softmax_split_row_stream_sm90a.cu,
// SlotScope in softmax_split_row.cu).
#pragma once

namespace cp {

__device__ __forceinline__ unsigned atom_add_relaxed_gpu(unsigned* p, unsigned v) {
  unsigned old;
  asm volatile("atom.relaxed.gpu.global.add.u32 %0, [%1], %2;\n" : "=r"(old) : "l"(p), "r"(v) : "memory");
  return old;
}
// Release: the fence orders every access this thread has made or observed (its block's, through a
// barrier before it) before the increment.
__device__ __forceinline__ void fence_red_add_gpu(unsigned* p, unsigned v) {
  asm volatile("fence.acq_rel.gpu;\nred.relaxed.gpu.global.add.u32 [%0], %1;\n" ::"l"(p), "r"(v) : "memory");
}
// Release by this thread alone: its own earlier stores are visible to whoever acquires the count
// (what one thread publishing a value it wrote needs; fence_red_add_gpu also covers its block).
__device__ __forceinline__ void red_release_add_gpu(unsigned* p, unsigned v) {
  asm volatile("red.release.gpu.global.add.u32 [%0], %1;\n" ::"l"(p), "r"(v) : "memory");
}
__device__ __forceinline__ unsigned ld_acquire_gpu(const unsigned* p) {
  unsigned v;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];\n" : "=r"(v) : "l"(p) : "memory");
  return v;
}

// A 64-bit value one thread publishes and others poll for (gpu scope, single-copy atomic): when the
// value itself is the message, the poll that sees it has read it, and no ordering beyond it is needed.
// Published by an atomic exchange, not a relaxed store: as a store it reached the pollers late, behind
// the block's output stores before it (the split_row held forward waited 14-17% longer at its exchanges
// than Triton's, whose publish is an atomic: docs/perf-log.md, session 74). PTX's exchange needs a
// destination for the old value, which nothing reads: a register local to the asm block.
__device__ __forceinline__ void publish_relaxed_gpu(unsigned long long* p, unsigned long long v) {
  asm volatile("{\n\t.reg .b64 old;\n\tatom.relaxed.gpu.global.exch.b64 old, [%0], %1;\n\t}\n"
               :
               : "l"(p), "l"(v)
               : "memory");
}
__device__ __forceinline__ unsigned long long ld_relaxed_gpu(const unsigned long long* p) {
  unsigned long long v;
  asm volatile("ld.relaxed.gpu.global.b64 %0, [%1];\n" : "=l"(v) : "l"(p) : "memory");
  return v;
}

}  // namespace cp
