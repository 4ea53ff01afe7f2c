// block_per_row: medium rows (cols <= 32768). One block per row; each thread keeps up to 32 fp32
// values of the row in registers (16-byte units k * threads + tid); the block is sized so the
// whole row is one tile (about 256 threads for fp32 and 128 for 16-bit types, so a thread has the
// same bytes in flight in every dtype; up to 1024 threads for the longest rows), and short rows
// take fewer threads so that each still loads at least 64 bytes (kMinUnitsInFlight). One shuffle +
// shared-memory reduction per row: (max, sum) combined in a single pass for forward, the dot
// product for backward.
// Bound: DRAM bytes, one read + one write per element (forward 2x, backward 3x the tensor size).
// Backward rows whose y and dy exceed the register budget (fp32 > 16384, 16-bit > 16384 cols)
// are streamed twice, the second read mostly from L2.
#include <algorithm>

#include "common/cuda_check.h"
#include "common/dispatch.h"
#include "softmax/softmax_plans.h"
#include "softmax/softmax_segment.cuh"

namespace cp::softmax_detail {
namespace {

constexpr int kMaxThreads = 1024;
// Preferred threads per row for fp32 (16-bit types: half): deeper tiles, more loads in flight.
constexpr int kTargetThreadsFp32 = 256;
// 16-byte units each thread loads at least, over all operands, where the register budget allows:
// a short row is one block's whole load, so the bytes an SM has in flight are (blocks per SM, at
// most 2048 threads' worth) x (row bytes), and fewer, deeper threads fit more rows. 256 threads x
// 4 fp32 values at 1024 columns ran at 0.64 of copy bandwidth, 64 x 16 values at 0.97; 16-bit
// forward 1000-2048 columns 0.62-0.81 -> 0.90-0.95 (docs/perf-log.md, session 20).
constexpr int kMinUnitsInFlight = 4;

template <typename T, int kVecs>
__global__ __launch_bounds__(kMaxThreads) void softmax_parallel_block_per_row_fwd(
    const T* __restrict__ x, std::int64_t x_stride, T* __restrict__ y, std::int64_t y_stride, std::int64_t cols,
    bool aligned) {
  const std::int64_t row = blockIdx.x;
  BlockScope scope;
  softmax_segment_forward<T, kVecs>(x + row * x_stride, y + row * y_stride, 0, cols, threadIdx.x, blockDim.x,
                                    aligned, scope);
}

template <typename T, int kVecs>
__global__ __launch_bounds__(kMaxThreads) void softmax_parallel_block_per_row_bwd(
    const T* __restrict__ y, std::int64_t y_stride, const T* __restrict__ dy, std::int64_t dy_stride,
    T* __restrict__ dx, std::int64_t dx_stride, std::int64_t cols, bool aligned) {
  const std::int64_t row = blockIdx.x;
  BlockScope scope;
  softmax_segment_backward<T, kVecs>(y + row * y_stride, dy + row * dy_stride, dx + row * dx_stride, 0, cols,
                                     threadIdx.x, blockDim.x, aligned, scope);
}

struct BlockShape {
  int depth;
  int threads;
};

template <typename T>
BlockShape block_shape(std::int64_t span, int operands) {  // span: see tile_span
  const std::int64_t units = (span + vec_width<T>() - 1) / vec_width<T>();
  const int min_depth = std::min(max_vecs<T>(operands), kMinUnitsInFlight / operands);
  const std::int64_t preferred = kTargetThreadsFp32 * static_cast<int>(sizeof(T)) / 4;
  // At least one full warp: a block launches whole warps, so a shorter row spreads over all 32 lanes.
  const std::int64_t target_threads =
      std::max<std::int64_t>(32, std::min<std::int64_t>(preferred, (units + min_depth - 1) / min_depth));
  const int depth = tile_depth(units, target_threads, max_vecs<T>(operands));
  const std::int64_t lanes = (units + depth - 1) / depth;
  return {depth, static_cast<int>(std::min<std::int64_t>(kMaxThreads, (lanes + 31) / 32 * 32))};
}

}  // namespace

void block_per_row_forward(const RowOperands& op, const LaunchContext& ctx) {
  CP_DISPATCH_FLOAT_TYPES(op.dtype, T, {
    const BlockShape shape = block_shape<T>(tile_span<T>(op.cols, op.aligned), 1);
    dispatch_vecs<T, 1>(shape.depth, [&](auto depth) {
      softmax_parallel_block_per_row_fwd<T, decltype(depth)::value>
          <<<static_cast<unsigned>(op.rows), shape.threads, 0, ctx.stream>>>(
              static_cast<const T*>(op.in0), op.in0_stride, static_cast<T*>(op.out), op.out_stride, op.cols,
              op.aligned);
    });
  })
  CP_CHECK_LAUNCH("softmax_parallel_block_per_row_fwd");
}

void block_per_row_backward(const RowOperands& op, const LaunchContext& ctx) {
  CP_DISPATCH_FLOAT_TYPES(op.dtype, T, {
    const BlockShape shape = block_shape<T>(tile_span<T>(op.cols, op.aligned), 2);
    dispatch_vecs<T, 2>(shape.depth, [&](auto depth) {
      softmax_parallel_block_per_row_bwd<T, decltype(depth)::value>
          <<<static_cast<unsigned>(op.rows), shape.threads, 0, ctx.stream>>>(
              static_cast<const T*>(op.in0), op.in0_stride, static_cast<const T*>(op.in1), op.in1_stride,
              static_cast<T*>(op.out), op.out_stride, op.cols, op.aligned);
    });
  })
  CP_CHECK_LAUNCH("softmax_parallel_block_per_row_bwd");
}

int block_per_row_backward_blocks_per_sm(DType dtype, std::int64_t cols, bool aligned) {
  int blocks = 0;
  CP_DISPATCH_FLOAT_TYPES(dtype, T, {
    const BlockShape shape = block_shape<T>(tile_span<T>(cols, aligned), 2);
    dispatch_vecs<T, 2>(shape.depth, [&](auto depth) {
      CP_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
          &blocks, softmax_parallel_block_per_row_bwd<T, decltype(depth)::value>, shape.threads, 0));
    });
  })
  return blocks;
}

}  // namespace cp::softmax_detail
