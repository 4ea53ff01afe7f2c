// block_online: long rows with enough rows to fill the GPU, any length. One 512-thread block per
// row streams the row in tiles of 512 x 16 values: pass 1 keeps a running (max, sum) per thread
// (online softmax: the sum is rescaled when the max grows; backward: the running dot product),
// one block reduction, then pass 2 reads the row again and writes the output.
// Bound: the row is READ TWICE. With ~4 rows per SM in flight the second read hits L2 while
// 4 * 132 rows fit in it (fp32 rows up to ~28K columns); beyond that DRAM sees 3 (forward) or
// 5 (backward) tensor passes instead of 2 / 3, capping forward near 0.67x copy bandwidth.
// The fallback that runs any shape; block_per_row / cluster_split_row beat it where they apply.
#include "common/cuda_check.h"
#include "common/dispatch.h"
#include "softmax/softmax_plans.h"
#include "softmax/softmax_segment.cuh"

namespace cp::softmax_detail {
namespace {

constexpr int kThreads = 512;

// 16 values per thread and operand: 4 (fp32) or 2 (16-bit) 16-byte loads in flight per operand.
template <typename T>
constexpr int online_depth() {
  return max_vecs<T>(2);
}

template <typename T>
__global__ __launch_bounds__(kThreads) void softmax_parallel_block_online_fwd(const T* __restrict__ x,
                                                                              std::int64_t x_stride,
                                                                              T* __restrict__ y,
                                                                              std::int64_t y_stride,
                                                                              std::int64_t cols, bool aligned) {
  const std::int64_t row = blockIdx.x;
  BlockScope scope;
  softmax_segment_forward<T, online_depth<T>()>(x + row * x_stride, y + row * y_stride, 0, cols, threadIdx.x,
                                                kThreads, aligned, scope);
}

template <typename T>
__global__ __launch_bounds__(kThreads) void softmax_parallel_block_online_bwd(
    const T* __restrict__ y, std::int64_t y_stride, const T* __restrict__ dy, std::int64_t dy_stride,
    T* __restrict__ dx, std::int64_t dx_stride, std::int64_t cols, bool aligned) {
  const std::int64_t row = blockIdx.x;
  BlockScope scope;
  softmax_segment_backward<T, online_depth<T>()>(y + row * y_stride, dy + row * dy_stride, dx + row * dx_stride, 0,
                                                 cols, threadIdx.x, kThreads, aligned, scope);
}

}  // namespace

void block_online_forward(const RowOperands& op, const LaunchContext& ctx) {
  CP_DISPATCH_FLOAT_TYPES(op.dtype, T, {
    softmax_parallel_block_online_fwd<T><<<static_cast<unsigned>(op.rows), kThreads, 0, ctx.stream>>>(
        static_cast<const T*>(op.in0), op.in0_stride, static_cast<T*>(op.out), op.out_stride, op.cols, op.aligned);
  })
  CP_CHECK_LAUNCH("softmax_parallel_block_online_fwd");
}

void block_online_backward(const RowOperands& op, const LaunchContext& ctx) {
  CP_DISPATCH_FLOAT_TYPES(op.dtype, T, {
    softmax_parallel_block_online_bwd<T><<<static_cast<unsigned>(op.rows), kThreads, 0, ctx.stream>>>(
        static_cast<const T*>(op.in0), op.in0_stride, static_cast<const T*>(op.in1), op.in1_stride,
        static_cast<T*>(op.out), op.out_stride, op.cols, op.aligned);
  })
  CP_CHECK_LAUNCH("softmax_parallel_block_online_bwd");
}

}  // namespace cp::softmax_detail
