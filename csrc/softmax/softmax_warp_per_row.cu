// warp_per_row: short rows (cols <= 1024). Each warp owns one row, a 256-thread block owns 8
// consecutive rows. A lane keeps up to 32 fp32 values of its row in registers (16-byte units
// k * 32 + lane), reductions are warp shuffles only: no shared memory, no __syncthreads.
// Bound: DRAM bytes, forward reads x once and writes y once (2 * rows * cols * size); backward
// reads y, dy once and writes dx (3x), except fp32 backward rows over 512 columns, whose y and dy
// exceed the 32-value budget and are streamed twice (the second read from L1).
#include "common/cuda_check.h"
#include "common/dispatch.h"
#include "softmax/softmax_plans.h"
#include "softmax/softmax_segment.cuh"

namespace cp::softmax_detail {
namespace {

constexpr int kRowsPerBlock = 8;
constexpr int kThreads = kRowsPerBlock * 32;

template <typename T, int kVecs>
__global__ __launch_bounds__(kThreads) void softmax_parallel_warp_per_row_fwd(
    const T* __restrict__ x, std::int64_t x_stride, T* __restrict__ y, std::int64_t y_stride, std::int64_t rows,
    std::int64_t cols, bool aligned) {
  const std::int64_t row = static_cast<std::int64_t>(blockIdx.x) * kRowsPerBlock + threadIdx.x / 32;
  if (row >= rows) return;  // whole warps leave together, so the shuffles stay full-warp
  WarpScope scope;
  softmax_segment_forward<T, kVecs>(x + row * x_stride, y + row * y_stride, 0, cols, threadIdx.x % 32, 32, aligned,
                                    scope);
}

template <typename T, int kVecs>
__global__ __launch_bounds__(kThreads) void softmax_parallel_warp_per_row_bwd(
    const T* __restrict__ y, std::int64_t y_stride, const T* __restrict__ dy, std::int64_t dy_stride,
    T* __restrict__ dx, std::int64_t dx_stride, std::int64_t rows, std::int64_t cols, bool aligned) {
  const std::int64_t row = static_cast<std::int64_t>(blockIdx.x) * kRowsPerBlock + threadIdx.x / 32;
  if (row >= rows) return;
  WarpScope scope;
  softmax_segment_backward<T, kVecs>(y + row * y_stride, dy + row * dy_stride, dx + row * dx_stride, 0, cols,
                                     threadIdx.x % 32, 32, aligned, scope);
}

template <typename T>
int warp_tile_depth(std::int64_t cols, int operands) {
  const std::int64_t units = (cols + vec_width<T>() - 1) / vec_width<T>();
  return tile_depth(units, 32, max_vecs<T>(operands));
}

unsigned warp_grid(std::int64_t rows) { return static_cast<unsigned>((rows + kRowsPerBlock - 1) / kRowsPerBlock); }

}  // namespace

void warp_per_row_forward(const RowOperands& op, const LaunchContext& ctx) {
  CP_DISPATCH_FLOAT_TYPES(op.dtype, T, {
    dispatch_vecs<T, 1>(warp_tile_depth<T>(op.cols, 1), [&](auto depth) {
      softmax_parallel_warp_per_row_fwd<T, decltype(depth)::value><<<warp_grid(op.rows), kThreads, 0, ctx.stream>>>(
          static_cast<const T*>(op.in0), op.in0_stride, static_cast<T*>(op.out), op.out_stride, op.rows, op.cols,
          op.aligned);
    });
  })
  CP_CHECK_LAUNCH("softmax_parallel_warp_per_row_fwd");
}

void warp_per_row_backward(const RowOperands& op, const LaunchContext& ctx) {
  CP_DISPATCH_FLOAT_TYPES(op.dtype, T, {
    dispatch_vecs<T, 2>(warp_tile_depth<T>(op.cols, 2), [&](auto depth) {
      softmax_parallel_warp_per_row_bwd<T, decltype(depth)::value><<<warp_grid(op.rows), kThreads, 0, ctx.stream>>>(
          static_cast<const T*>(op.in0), op.in0_stride, static_cast<const T*>(op.in1), op.in1_stride,
          static_cast<T*>(op.out), op.out_stride, op.rows, op.cols, op.aligned);
    });
  })
  CP_CHECK_LAUNCH("softmax_parallel_warp_per_row_bwd");
}

}  // namespace cp::softmax_detail
