// block_per_row: medium rows (cols <= 32768). One block per row; each thread keeps its part of the
// row in registers (16-byte units k * threads + tid): the forward up to 32 fp32 values, the backward
// up to 4 raw units each of y and dy. The block is sized so the whole row is one tile (about 256
// threads, 128 for the 16-bit forward, 384 for the 16-bit backward; up to 1024 for the longest
// rows), and short rows take fewer threads so that each still loads at least 64 bytes
// (kMinUnitsInFlight). One shuffle + shared-memory reduction per row: (max, sum) combined in a
// single pass for forward, the dot product for backward.
// Bound: DRAM bytes, one read + one write per element (forward 2x, backward 3x the tensor size).
// Backward rows whose y and dy exceed the register budget (fp32 > 16384 cols, 16-bit > 32768 less
// the edges) are streamed twice, the second read mostly from L2. The 16-bit backward's 4-unit
// kernels with edge slots spill 28-34 bytes under the 1024-thread bound's 64 registers (sm_90a,
// nvcc 13.0); rows of whole 16-byte units take a form without them (WholeUnits): 63, no spill.
#include <algorithm>

#include "common/cuda_check.h"
#include "common/dispatch.h"
#include "softmax/softmax_plans.h"
#include "softmax/softmax_segment.cuh"

namespace cp::softmax_detail {
namespace {

constexpr int kMaxThreads = 1024;
// 16-byte units each thread loads at least, over all operands, where the register budget allows:
// a short row is one block's whole load, so the bytes an SM has in flight are (blocks per SM, at
// most 2048 threads' worth) x (row bytes), and fewer, deeper threads fit more rows. 256 threads x
// 4 fp32 values at 1024 columns ran at 0.64 of copy bandwidth, 64 x 16 values at 0.97; 16-bit
// forward 1000-2048 columns 0.62-0.81 -> 0.90-0.95 (docs/perf-log.md, session 20).
constexpr int kMinUnitsInFlight = 4;

// kWholeUnits: every row is aligned and a multiple of 16 bytes long (no edge slots, WholeUnits).
template <typename T, int kVecs, bool kWholeUnits>
__global__ __launch_bounds__(kMaxThreads) void softmax_parallel_block_per_row_fwd(
    const T* __restrict__ x, std::int64_t x_stride, T* __restrict__ y, std::int64_t y_stride, std::int64_t cols,
    bool aligned) {
  const std::int64_t row = blockIdx.x;
  BlockScope scope;
  softmax_segment_forward<T, kVecs, BlockScope, false, kWholeUnits>(x + row * x_stride, y + row * y_stride, 0, cols,
                                                                    threadIdx.x, blockDim.x, aligned, scope);
}

template <typename T, int kVecs, bool kWholeUnits>
__global__ __launch_bounds__(kMaxThreads) void softmax_parallel_block_per_row_bwd(
    const T* __restrict__ y, std::int64_t y_stride, const T* __restrict__ dy, std::int64_t dy_stride,
    T* __restrict__ dx, std::int64_t dx_stride, std::int64_t cols, bool aligned) {
  const std::int64_t row = blockIdx.x;
  BlockScope scope;
  softmax_segment_backward<T, kVecs, BlockScope, false, kWholeUnits>(
      y + row * y_stride, dy + row * dy_stride, dx + row * dx_stride, 0, cols, threadIdx.x, blockDim.x, aligned, scope);
}

struct BlockShape {
  int depth;
  int threads;
};

// The deepest tile a thread holds: the forward keeps its exponentials as fp32 values (max_vecs),
// the backward only the raw units of y and dy (max_units: twice as deep for 16-bit types, the same
// for fp32). So the 16-bit backward's rows past 6144 columns take 4-unit tiles in blocks of half the
// threads; through 16384 columns two to four fit an SM where 2-unit tiles' blocks of 640-1024 threads
// fit one (past 9216 columns at 52 registers): bf16 4096 x 10001 / 12001 0.72 / 0.77 -> 0.97 / 0.98 of copy
// (results/h200/experiments/softmax-cuda-1d09970-block-per-row-backward-16bit-four-unit-tiles-*).
template <typename T, int kOperands>
constexpr int kMaxDepth = kOperands == 1 ? max_vecs<T>(1) : max_units(kOperands);

// Preferred threads per row: fewer, deeper threads keep more loads in flight. fp32: 256 threads, of
// up to 8 units forward (32 values) and 4 per operand backward; the 16-bit forward holds 4 units (its
// 32 fp32 values), half fp32's, so 128. The
// 16-bit backward stays in 2-unit tiles through 384 threads (6144 columns: three 52-register blocks
// per SM) and takes 4-unit tiles past that, in blocks of half the threads that fit 2-4 per SM: bf16
// 4096 x 4097 / 6001 read 0.94 / 0.98 of copy in 2-unit tiles and 0.91 / 0.95 in 4-unit ones, 4096 x
// 8001 0.93 / 0.97 (results/h200/experiments/softmax-cuda-7197463-block-per-row-backward-16bit-*).
template <typename T, int kOperands>
constexpr int kPreferredThreads = sizeof(T) == 4 ? 256 : kOperands == 1 ? 128 : 384;

template <typename T, int kOperands>
BlockShape block_shape(std::int64_t span) {  // span: see tile_span
  const std::int64_t units = (span + vec_width<T>() - 1) / vec_width<T>();
  const int min_depth = std::min(kMaxDepth<T, kOperands>, kMinUnitsInFlight / kOperands);
  // At least one full warp: a block launches whole warps, so a shorter row spreads over all 32 lanes.
  const std::int64_t target_threads = std::max<std::int64_t>(
      32, std::min<std::int64_t>(kPreferredThreads<T, kOperands>, (units + min_depth - 1) / min_depth));
  const int depth = tile_depth(units, target_threads, kMaxDepth<T, kOperands>);
  const std::int64_t lanes = (units + depth - 1) / depth;
  return {depth, static_cast<int>(std::min<std::int64_t>(kMaxThreads, (lanes + 31) / 32 * 32))};
}

}  // namespace

void block_per_row_forward(const RowOperands& op, const LaunchContext& ctx) {
  CP_DISPATCH_FLOAT_TYPES(op.dtype, T, {
    const BlockShape shape = block_shape<T, 1>(tile_span<T>(op.cols, op.aligned));
    dispatch_depth<kMaxDepth<T, 1>>(shape.depth, [&](auto depth) {
      dispatch_flag(whole_units(op, vec_width<T>()), [&](auto whole) {
        softmax_parallel_block_per_row_fwd<T, decltype(depth)::value, decltype(whole)::value>
            <<<static_cast<unsigned>(op.rows), shape.threads, 0, ctx.stream>>>(
                static_cast<const T*>(op.in0), op.in0_stride, static_cast<T*>(op.out), op.out_stride, op.cols,
                op.aligned);
      });
    });
  })
  CP_CHECK_LAUNCH("softmax_parallel_block_per_row_fwd");
}

// Calls f(kernel, threads) with the backward kernel and block size block_per_row runs rows of `cols` in: what
// the launcher launches and what auto's occupancy rule asks about (softmax_choose_plan).
template <typename T, typename F>
void with_backward_kernel(std::int64_t cols, bool aligned, F&& f) {
  const BlockShape shape = block_shape<T, 2>(tile_span<T>(cols, aligned));
  dispatch_depth<kMaxDepth<T, 2>>(shape.depth, [&](auto depth) {
    dispatch_flag(whole_units(aligned, cols, vec_width<T>()), [&](auto whole) {
      f(softmax_parallel_block_per_row_bwd<T, decltype(depth)::value, decltype(whole)::value>, shape.threads);
    });
  });
}

void block_per_row_backward(const RowOperands& op, const LaunchContext& ctx) {
  CP_DISPATCH_FLOAT_TYPES(op.dtype, T, {
    with_backward_kernel<T>(op.cols, op.aligned, [&](auto kernel, int threads) {
      kernel<<<static_cast<unsigned>(op.rows), threads, 0, ctx.stream>>>(
          static_cast<const T*>(op.in0), op.in0_stride, static_cast<const T*>(op.in1), op.in1_stride,
          static_cast<T*>(op.out), op.out_stride, op.cols, op.aligned);
    });
  })
  CP_CHECK_LAUNCH("softmax_parallel_block_per_row_bwd");
}

BlockResidency block_per_row_backward_residency(DType dtype, std::int64_t cols, bool aligned) {
  BlockResidency r{};
  CP_DISPATCH_FLOAT_TYPES(dtype, T, {
    with_backward_kernel<T>(cols, aligned, [&](auto kernel, int threads) {
      CP_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&r.blocks, kernel, threads, 0));
      r.threads = threads;
    });
  })
  return r;
}

}  // namespace cp::softmax_detail
