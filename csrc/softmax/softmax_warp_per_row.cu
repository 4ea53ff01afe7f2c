// warp_per_row: short rows (cols <= 1024). A row belongs to a group of kLanes lanes of one warp
// (kLanes = 8, 16 or 32: the fewest that hold the row within the register budget), so a
// 256-thread block owns 256 / kLanes consecutive rows. A lane keeps up to 32 fp32 values of its
// row in registers (16-byte units k * kLanes + lane); reductions are shuffles inside the group:
// no shared memory, no __syncthreads. Narrow groups for short rows keep several 16-byte loads in
// flight per lane (a bf16 row of 256 columns: 8 lanes x 4 loads instead of 32 lanes x 1 load,
// which left too few bytes in flight per SM to cover DRAM latency; see docs/perf-log.md).
// Bound: DRAM bytes, forward reads x once and writes y once (2 * rows * cols * size); backward
// reads y, dy once and writes dx (3x), except backward rows over 512 columns, whose y and dy
// exceed the 32-value budget (in every dtype) and are streamed twice (the second read from L1).
#include <type_traits>

#include "common/cuda_check.h"
#include "common/dispatch.h"
#include "softmax/softmax_plans.h"
#include "softmax/softmax_segment.cuh"

namespace cp::softmax_detail {
namespace {

constexpr int kThreads = 256;
constexpr int kMinLanes = 8;

// The row this thread's lane group owns, the end of its segment (0 for a group past the last
// row: it touches no memory but still joins its warp's shuffles) and whether the whole warp is
// past the end (then it leaves, keeping the shuffles of the other warps full).
template <int kLanes>
struct GroupRow {
  std::int64_t row;
  std::int64_t end;
  bool warp_done;

  __device__ __forceinline__ GroupRow(std::int64_t rows, std::int64_t cols) {
    const std::int64_t block_row = static_cast<std::int64_t>(blockIdx.x) * (kThreads / kLanes);
    const std::int64_t warp_row = block_row + threadIdx.x / 32 * (32 / kLanes);
    const std::int64_t own = block_row + threadIdx.x / kLanes;
    warp_done = warp_row >= rows;
    row = own < rows ? own : warp_row;
    end = own < rows ? cols : 0;
  }
};

template <typename T, int kVecs, int kLanes>
__global__ __launch_bounds__(kThreads) void softmax_parallel_warp_per_row_fwd(
    const T* __restrict__ x, std::int64_t x_stride, T* __restrict__ y, std::int64_t y_stride, std::int64_t rows,
    std::int64_t cols, bool aligned) {
  const GroupRow<kLanes> g(rows, cols);
  if (g.warp_done) return;
  LaneGroupScope<kLanes> scope;
  softmax_segment_forward<T, kVecs>(x + g.row * x_stride, y + g.row * y_stride, 0, g.end, threadIdx.x % kLanes,
                                    kLanes, aligned, scope);
}

template <typename T, int kVecs, int kLanes>
__global__ __launch_bounds__(kThreads) void softmax_parallel_warp_per_row_bwd(
    const T* __restrict__ y, std::int64_t y_stride, const T* __restrict__ dy, std::int64_t dy_stride,
    T* __restrict__ dx, std::int64_t dx_stride, std::int64_t rows, std::int64_t cols, bool aligned) {
  const GroupRow<kLanes> g(rows, cols);
  if (g.warp_done) return;
  LaneGroupScope<kLanes> scope;
  softmax_segment_backward<T, kVecs>(y + g.row * y_stride, dy + g.row * dy_stride, dx + g.row * dx_stride, 0, g.end,
                                     threadIdx.x % kLanes, kLanes, aligned, scope);
}

struct GroupShape {
  int depth;  // 16-byte units per lane
  int lanes;  // lanes per row
};

// The narrowest group (>= kMinLanes) whose lanes hold `span` elements (the row, see tile_span) at
// the deepest tile the register budget allows; longer rows are streamed by a full warp.
template <typename T>
GroupShape group_shape(std::int64_t span, int operands) {
  const std::int64_t units = (span + vec_width<T>() - 1) / vec_width<T>();
  const int max_depth = max_vecs<T>(operands);
  int lanes = kMinLanes;
  while (lanes < 32 && (units + lanes - 1) / lanes > max_depth) lanes *= 2;
  return {tile_depth(units, lanes, max_depth), lanes};
}

template <typename F>
void dispatch_lanes(int lanes, F&& f) {
  switch (lanes) {
    case 8: f(std::integral_constant<int, 8>{}); break;
    case 16: f(std::integral_constant<int, 16>{}); break;
    case 32: f(std::integral_constant<int, 32>{}); break;
  }
}

unsigned group_grid(std::int64_t rows, int lanes) {
  const std::int64_t rows_per_block = kThreads / lanes;
  return static_cast<unsigned>((rows + rows_per_block - 1) / rows_per_block);
}

}  // namespace

void warp_per_row_forward(const RowOperands& op, const LaunchContext& ctx) {
  CP_DISPATCH_FLOAT_TYPES(op.dtype, T, {
    const GroupShape shape = group_shape<T>(tile_span<T>(op.cols, op.aligned), 1);
    dispatch_lanes(shape.lanes, [&](auto lanes) {
      dispatch_vecs<T, 1>(shape.depth, [&](auto depth) {
        softmax_parallel_warp_per_row_fwd<T, decltype(depth)::value, decltype(lanes)::value>
            <<<group_grid(op.rows, shape.lanes), kThreads, 0, ctx.stream>>>(
                static_cast<const T*>(op.in0), op.in0_stride, static_cast<T*>(op.out), op.out_stride, op.rows,
                op.cols, op.aligned);
      });
    });
  })
  CP_CHECK_LAUNCH("softmax_parallel_warp_per_row_fwd");
}

void warp_per_row_backward(const RowOperands& op, const LaunchContext& ctx) {
  CP_DISPATCH_FLOAT_TYPES(op.dtype, T, {
    const GroupShape shape = group_shape<T>(tile_span<T>(op.cols, op.aligned), 2);
    dispatch_lanes(shape.lanes, [&](auto lanes) {
      dispatch_vecs<T, 2>(shape.depth, [&](auto depth) {
        softmax_parallel_warp_per_row_bwd<T, decltype(depth)::value, decltype(lanes)::value>
            <<<group_grid(op.rows, shape.lanes), kThreads, 0, ctx.stream>>>(
                static_cast<const T*>(op.in0), op.in0_stride, static_cast<const T*>(op.in1), op.in1_stride,
                static_cast<T*>(op.out), op.out_stride, op.rows, op.cols, op.aligned);
      });
    });
  })
  CP_CHECK_LAUNCH("softmax_parallel_warp_per_row_bwd");
}

}  // namespace cp::softmax_detail
