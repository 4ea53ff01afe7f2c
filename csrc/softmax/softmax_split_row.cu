// split_row: long rows, few rows (32 x 1M, 4 x 4M): each row is cut into `slices` contiguous
// slices, one 512-thread block per slice, so the whole GPU works on a handful of rows.
// These are the portable kernels; on Hopper, operands whose rows share their offset from a 16-byte
// boundary go to the streamed kernels of softmax_split_row_stream_sm90a.cu instead.
// A block keeps its slice in registers as raw 16-byte units (32 registers per thread: 16384 fp32
// or 32768 fp16/bf16 elements forward, half that per operand backward), reduces it to partial
// statistics, publishes them in the workspace, bumps the row's arrival counter and spins until
// every slice of the row has arrived; then it combines
// all partials (same order in every block, so every block gets the same bits) and writes its
// slice from registers: DRAM sees one read + one write.
// Deadlock freedom: blocks take row/slice tickets from a global counter in the order they start,
// and slices <= co-resident blocks (occupancy API x SMs), so the blocks a spinning block waits for
// are already resident or can still be scheduled (the argument CUB's decoupled look-back uses).
// Rows longer than that capacity get multi-tile slices, read twice (second read from L2).
// Bound: DRAM bytes (forward 2x, backward 3x the tensor) plus one arrival round trip per row.
// Workspace: [ticket][exits][row counter x rows], then (16-byte aligned) the partials (V x rows x
// slices; sized for MaxSum in both directions, so the backward's floats use half). All of it is zero at launch and the kernel leaves it zero (draw_ticket, RowExchange and
// leave_workspace in softmax_reduce.cuh say how and why that is safe): the caller zeroes it once, no
// memset per call. Each block draws one ticket, so the draw of ticket gridDim.x - 1 resets the ticket
// counter; the last block to leave resets the row counters and partials.
#include <algorithm>
#include <stdexcept>
#include <string>

#include "common/cuda_check.h"
#include "common/dispatch.h"
#include "softmax/softmax_plans.h"
#include "softmax/softmax_segment.cuh"

namespace cp::softmax_detail {
namespace {

constexpr int kThreads = 512;

// Workspace layout (header comment): counters_bytes of counters, then the partials.
struct SplitLayout {
  std::int64_t slices, slice_len;
  std::size_t counters_bytes, total_bytes;
};

// This block's ticket, in shared memory so that it keeps no register live across the slice's work
// (the 16-bit forward kernels sit at their 64-register cap).
__device__ __forceinline__ unsigned& block_ticket() {
  __shared__ unsigned ticket;
  return ticket;
}

// Scope of one row slice: block reduction, then the exchange through global memory.
template <typename V>
struct GridScope {
  V* row_partials;     // this row's `slices` slots
  unsigned* row_word;  // this row's counter word
  int slices, slice;

  __device__ V reduce(V v) const {
    v = block_reduce(v);
    if (threadIdx.x == 0) {
      store_cg(row_partials + slice, v);
      RowExchange{row_word, slices}.arrive();
    }
    __syncthreads();
    V acc = reduce_identity<V>();
    for (int i = threadIdx.x; i < slices; i += blockDim.x) acc = combine(acc, load_cg(row_partials + i));
    return block_reduce(acc);
  }
};

struct Ticket {
  std::int64_t row;
  int slice;
};

// One ticket per block: the last one (gridDim.x - 1) resets the counter.
__device__ __forceinline__ Ticket take_ticket(unsigned* workspace, int slices) {
  if (threadIdx.x == 0) block_ticket() = draw_ticket(workspace, gridDim.x - 1);
  __syncthreads();
  const unsigned ticket = block_ticket();
  return {static_cast<std::int64_t>(ticket / slices), static_cast<int>(ticket % slices)};
}

// At the end of the block, after its slice is written (gridDim.x = rows x slices).
template <typename V>
__device__ __forceinline__ void leave(unsigned* workspace, V* partials, int slices) {
  leave_workspace(workspace, gridDim.x / slices, partials, gridDim.x, threadIdx.x, kThreads, [] { __syncthreads(); });
}

template <typename T, int kVecs>
__global__ __launch_bounds__(kThreads, 2) void softmax_parallel_split_row_fwd(
    const T* __restrict__ x, std::int64_t x_stride, T* __restrict__ y, std::int64_t y_stride, std::int64_t cols,
    int slices, std::int64_t slice_len, bool aligned, unsigned* workspace, MaxSum* partials) {
  const Ticket t = take_ticket(workspace, slices);
  const GridScope<MaxSum> scope{partials + t.row * slices, workspace + kWorkspaceHeader + t.row, slices, t.slice};
  const std::int64_t begin = t.slice * slice_len;
  softmax_segment_forward<T, kVecs>(x + t.row * x_stride, y + t.row * y_stride, begin, std::min(cols, begin + slice_len),
                                    threadIdx.x, kThreads, aligned, scope);
  leave(workspace, partials, slices);
}

template <typename T, int kVecs>
__global__ __launch_bounds__(kThreads, 2) void softmax_parallel_split_row_bwd(
    const T* __restrict__ y, std::int64_t y_stride, const T* __restrict__ dy, std::int64_t dy_stride,
    T* __restrict__ dx, std::int64_t dx_stride, std::int64_t cols, int slices,
    std::int64_t slice_len, bool aligned, unsigned* workspace, float* partials) {
  const Ticket t = take_ticket(workspace, slices);
  const GridScope<float> scope{partials + t.row * slices, workspace + kWorkspaceHeader + t.row, slices, t.slice};
  const std::int64_t begin = t.slice * slice_len;
  softmax_segment_backward<T, kVecs>(y + t.row * y_stride, dy + t.row * dy_stride, dx + t.row * dx_stride, begin,
                                     std::min(cols, begin + slice_len), threadIdx.x, kThreads, aligned, scope);
  leave(workspace, partials, slices);
}

// Slices: as many one-tile slices as the row needs, capped by the co-resident block count.
template <typename T, int kOperands, typename Kernel>
SplitLayout split_layout(Kernel kernel, std::int64_t rows, std::int64_t cols, int device, int sm_count) {
  int per_sm = 0;
  {
    DeviceGuard guard(device);
    CP_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, kThreads, 0));
  }
  const std::int64_t capacity = std::max<std::int64_t>(1, static_cast<std::int64_t>(per_sm) * sm_count);
  constexpr int W = vec_width<T>();
  const std::int64_t tile_elems = static_cast<std::int64_t>(kThreads) * max_units(kOperands) * W;
  std::int64_t slices = std::min(capacity, (cols + tile_elems - 1) / tile_elems);
  const std::int64_t slice_len = ((cols + slices - 1) / slices + W - 1) / W * W;  // 16-byte aligned slices
  slices = (cols + slice_len - 1) / slice_len;
  if (slices >= kMaxRowSlices) throw std::invalid_argument("softmax split_row: too many slices per row");
  SplitLayout l{slices, slice_len, 0, 0};
  l.counters_bytes = sizeof(unsigned) * static_cast<std::size_t>(kWorkspaceHeader + rows);
  const std::size_t partials_offset = (l.counters_bytes + 15) / 16 * 16;
  l.total_bytes = partials_offset + sizeof(MaxSum) * static_cast<std::size_t>(rows * slices);
  return l;
}

template <typename T>
SplitLayout forward_layout(std::int64_t rows, std::int64_t cols, int device, int sm_count) {
  return split_layout<T, 1>(softmax_parallel_split_row_fwd<T, max_units(1)>, rows, cols, device, sm_count);
}
template <typename T>
SplitLayout backward_layout(std::int64_t rows, std::int64_t cols, int device, int sm_count) {
  return split_layout<T, 2>(softmax_parallel_split_row_bwd<T, max_units(2)>, rows, cols, device, sm_count);
}

template <typename V>
V* partials_of(const LaunchContext& ctx, const SplitLayout& l) {
  return reinterpret_cast<V*>(static_cast<char*>(ctx.workspace) + (l.counters_bytes + 15) / 16 * 16);
}

// The workspace must hold the layout and be zero (the caller zeroed it once; launches leave it so).
void check_workspace(const LaunchContext& ctx, const SplitLayout& l) {
  if (ctx.workspace == nullptr || ctx.workspace_bytes < l.total_bytes)
    throw std::invalid_argument("softmax split_row: workspace of " + std::to_string(ctx.workspace_bytes) +
                                " bytes given, " + std::to_string(l.total_bytes) + " needed");
}

unsigned split_grid(std::int64_t rows, const SplitLayout& l) {
  const std::int64_t blocks = rows * l.slices;
  if (blocks > 0x7fffffff) throw std::invalid_argument("softmax split_row: rows x slices exceeds the grid limit");
  return static_cast<unsigned>(blocks);
}

}  // namespace

std::size_t split_row_workspace_bytes(DType dtype, std::int64_t rows, std::int64_t cols, int device, int sm_count) {
  std::size_t bytes = 0;
  CP_DISPATCH_FLOAT_TYPES(dtype, T, {
    bytes = std::max(forward_layout<T>(rows, cols, device, sm_count).total_bytes,
                     backward_layout<T>(rows, cols, device, sm_count).total_bytes);
  })
#ifdef CUDA_PORTFOLIO_HAS_SM90A
  bytes = std::max(bytes, split_row_stream_workspace_bytes(dtype, rows, cols, device, sm_count));
#endif
  return bytes;
}

std::string split_row_config(const RowOperands& op, bool forward, int device, int sm_count) {
#ifdef CUDA_PORTFOLIO_HAS_SM90A
  if (split_row_streams(op, device))
    return split_row_stream_config(op.dtype, op.rows, op.cols, forward, device, sm_count);
#endif
  SplitLayout l{};
  CP_DISPATCH_FLOAT_TYPES(op.dtype, T, {
    l = forward ? forward_layout<T>(op.rows, op.cols, device, sm_count)
                : backward_layout<T>(op.rows, op.cols, device, sm_count);
  })
  return "portable: " + std::to_string(l.slices) + (l.slices == 1 ? " slice" : " slices") + " per row, " +
         std::to_string(l.slice_len) + " columns each";
}

void split_row_forward(const RowOperands& op, const LaunchContext& ctx) {
#ifdef CUDA_PORTFOLIO_HAS_SM90A
  if (split_row_streams(op, ctx.device)) return split_row_stream_forward(op, ctx);
#endif
  CP_DISPATCH_FLOAT_TYPES(op.dtype, T, {
    const SplitLayout l = forward_layout<T>(op.rows, op.cols, ctx.device, ctx.sm_count);
    check_workspace(ctx, l);
    softmax_parallel_split_row_fwd<T, max_units(1)><<<split_grid(op.rows, l), kThreads, 0, ctx.stream>>>(
        static_cast<const T*>(op.in0), op.in0_stride, static_cast<T*>(op.out), op.out_stride, op.cols,
        static_cast<int>(l.slices), l.slice_len, op.aligned, static_cast<unsigned*>(ctx.workspace),
        partials_of<MaxSum>(ctx, l));
  })
  CP_CHECK_LAUNCH("softmax_parallel_split_row_fwd");
}

void split_row_backward(const RowOperands& op, const LaunchContext& ctx) {
#ifdef CUDA_PORTFOLIO_HAS_SM90A
  if (split_row_streams(op, ctx.device)) return split_row_stream_backward(op, ctx);
#endif
  CP_DISPATCH_FLOAT_TYPES(op.dtype, T, {
    const SplitLayout l = backward_layout<T>(op.rows, op.cols, ctx.device, ctx.sm_count);
    check_workspace(ctx, l);
    softmax_parallel_split_row_bwd<T, max_units(2)><<<split_grid(op.rows, l), kThreads, 0, ctx.stream>>>(
        static_cast<const T*>(op.in0), op.in0_stride, static_cast<const T*>(op.in1), op.in1_stride,
        static_cast<T*>(op.out), op.out_stride, op.cols, static_cast<int>(l.slices), l.slice_len,
        op.aligned, static_cast<unsigned*>(ctx.workspace), partials_of<float>(ctx, l));
  })
  CP_CHECK_LAUNCH("softmax_parallel_split_row_bwd");
}

}  // namespace cp::softmax_detail
