// warp_per_row: short rows (cols <= 1024). A row belongs to a group of kLanes lanes of one warp
// (kLanes = 8, 16 or 32: the fewest that hold the row at 16 values per operand per lane), so a
// 256-thread block owns 256 / kLanes consecutive rows. A lane keeps its part of the row in
// registers (16-byte units k * kLanes + lane; up to 32 fp32 values on the longest rows);
// reductions are shuffles inside the group: no shared memory, no __syncthreads. A bf16 row of 256
// columns: 16 lanes x 2 loads, fp32: 16 lanes x 4 loads (the shape of Triton's program; see
// docs/perf-log.md for the deeper tiles tried before).
// Bound: DRAM bytes, forward reads x once and writes y once (2 * rows * cols * size); backward
// reads y, dy once and writes dx (3x), except backward rows over 512 columns, whose y and dy
// exceed the 32-value budget (in every dtype) and are streamed twice (the second read from L1).
#include <algorithm>
#include <type_traits>

#include "common/cuda_check.h"
#include "common/dispatch.h"
#include "softmax/softmax_plans.h"
#include "softmax/softmax_segment.cuh"

namespace cp::softmax_detail {
namespace {

constexpr int kThreads = 256;
constexpr int kMinLanes = 8;
// Values per operand a lane prefers to hold: 16, as Triton's warp_per_row programs do (4096-element
// tiles over 256 threads). Deeper tiles (32 values) took 77-80 registers in 16-bit forward, three
// blocks per SM, and ran at 0.60 of copy bandwidth where Triton's shape ran at 0.84.
constexpr int kPreferredValues = 16;

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

// 16-bit backward: 4 blocks per SM (64 registers), as Triton's program of the same shape; no spills.
// Set when the kernels took 71 registers uncapped (3 blocks); they take 64 uncapped now (nvcc 13.0,
// sm_90) and 59-62 bounded. fp32 backward would spill at that bound and has none: 47-50 registers
// through depth 2, at depth 4 74 with 32 lanes (3 blocks per SM) and 85 with 8 or 16 (2).
template <typename T>
constexpr int bwd_min_blocks() {
  return sizeof(T) == 2 ? 4 : 1;
}

// The 16-bit forward's 32-lane 2-unit kernel (rows of 257-512 columns): 6 blocks per SM (40
// registers, no spills). Uncapped it takes 44 since its edge slots (e6e8339): 5 blocks per SM.
// Bounded, bf16 and fp16 16384 x 384 / 512 read 0.61 / 0.73 -> 0.64 / 0.76 of copy (results/h200/
// experiments/softmax-cuda-7197463-warp-per-row-forward-16bit-40-registers-compare.txt).
// 0 leaves a kernel unbounded, as if the argument were omitted (the same SASS).
template <typename T, int kVecs, int kLanes>
constexpr int fwd_min_blocks() {
  return sizeof(T) == 2 && kVecs == 2 && kLanes == 32 ? 6 : 0;
}

// kWholeUnits: every row is aligned and a multiple of 16 bytes long (no edge slots, WholeUnits).
template <typename T, int kVecs, int kLanes, bool kWholeUnits>
__global__ __launch_bounds__(kThreads, fwd_min_blocks<T, kVecs, kLanes>()) void softmax_parallel_warp_per_row_fwd(
    const T* __restrict__ x, std::int64_t x_stride, T* __restrict__ y, std::int64_t y_stride, std::int64_t rows,
    std::int64_t cols, bool aligned) {
  const GroupRow<kLanes> g(rows, cols);
  if (g.warp_done) return;
  LaneGroupScope<kLanes> scope;
  softmax_segment_forward<T, kVecs, LaneGroupScope<kLanes>, false, kWholeUnits>(
      x + g.row * x_stride, y + g.row * y_stride, 0, g.end, threadIdx.x % kLanes, kLanes, aligned, scope);
}

template <typename T, int kVecs, int kLanes>
__global__ __launch_bounds__(kThreads, bwd_min_blocks<T>()) void softmax_parallel_warp_per_row_bwd(
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

// The narrowest group (>= kMinLanes) whose lanes hold `span` elements (the row, see tile_span)
// with at most kPreferredValues per operand per lane; rows too long for that take a full warp at
// the deepest tile the register budget allows, and longer ones are streamed.
template <typename T>
GroupShape group_shape(std::int64_t span, int operands) {
  const std::int64_t units = (span + vec_width<T>() - 1) / vec_width<T>();
  const int max_depth = max_vecs<T>(operands);
  const int preferred_depth = std::min(max_depth, kPreferredValues / vec_width<T>());
  int lanes = kMinLanes;
  while (lanes < 32 && (units + lanes - 1) / lanes > preferred_depth) lanes *= 2;
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
        dispatch_flag(whole_units(op, vec_width<T>()), [&](auto whole) {
          softmax_parallel_warp_per_row_fwd<T, decltype(depth)::value, decltype(lanes)::value, decltype(whole)::value>
              <<<group_grid(op.rows, shape.lanes), kThreads, 0, ctx.stream>>>(
                  static_cast<const T*>(op.in0), op.in0_stride, static_cast<T*>(op.out), op.out_stride, op.rows,
                  op.cols, op.aligned);
        });
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
