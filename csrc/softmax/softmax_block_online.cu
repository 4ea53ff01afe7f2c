// block_online: long rows with enough rows to fill the GPU, any length. One block per row
// (512 threads; 1024 when the grid is capped at one row per SM, below) streams the row in tiles of 128 bytes per thread (forward: 8 16-byte units of x; backward:
// 4 each of y and dy): pass 1 keeps a running (max, sum) per thread (online softmax: the sum is
// rescaled when the max grows; backward: the running dot product), one block reduction, then
// pass 2 reads the row again and writes the output. Rows that fit one tile (512 threads: forward up to
// 16384 fp32 / 32768 16-bit columns, backward 8192 / 16384; twice that at 1024 threads) stay in registers
// and are read once (softmax_segment's single-tile path); the two passes and what follows are for longer rows.
// Bound: one read + one write from DRAM (forward 2, backward 3 tensor passes) if the second read
// hits L2. Two things keep it there:
//  - L2 hints: the first read asks for evict_last; the second read and the stores are streaming
//    (evict-first), so the lines still waiting for their second read are the ones L2 keeps.
//  - Rows in flight: each in-flight row holds its bytes in L2 between the two reads. When the
//    blocks that fit on the GPU (2 per SM) would hold more than kL2Share of L2, the grid shrinks
//    to fewer rows per SM (at least 1) and each block walks rows (row += gridDim.x). At 1 row per
//    SM the block has 1024 threads, so the row still has the whole SM's registers in flight.
// Measured on the H200 (docs/perf-log.md, v9): 0.97x copy bandwidth at 4096x32768 (fp32 forward,
// bf16 both ways; 0.70-0.77x before). Longer rows get 1 block per SM under the cap, too few bytes
// in flight to cover DRAM latency: 0.58-0.80x.
// Why a block per row and not a persistent grid where the rows fit: the same kernel run as a grid of
// the resident blocks, each walking a fixed list of rows, was 9-13% slower at the same DRAM bytes;
// bulk L2 prefetches of the rows ahead were read again from DRAM (perf log, session 44).
#include <algorithm>
#include <limits>
#include <type_traits>

#include "common/cuda_check.h"
#include "common/dispatch.h"
#include "softmax/softmax_plans.h"
#include "softmax/softmax_segment.cuh"

namespace cp::softmax_detail {
namespace {

// Two block shapes with 64 registers per thread: 512 threads, 2 blocks per SM, for one block per
// row and for a capped grid of 2+ rows per SM; 1024 threads, 1 block per SM, for a capped grid of
// 1 row per SM, so that the one row has the whole SM's threads (128 KiB) in flight, not half.
constexpr int kSmallBlock = 512, kLargeBlock = 1024;
constexpr int kThreadsAt64Registers = 1024;  // an SM's 64K registers at 64 per thread
// Share of L2 the rows in flight may hold between their two reads (l2_reread_budget_bytes).
constexpr double kL2Share = 0.7;

template <typename T, int kThreads>
__global__ __launch_bounds__(kThreads, kThreadsAt64Registers / kThreads) void softmax_parallel_block_online_fwd(
    const T* __restrict__ x, std::int64_t x_stride, T* __restrict__ y, std::int64_t y_stride, std::int64_t rows,
    std::int64_t cols, bool aligned) {
  BlockScope scope;
  for (std::int64_t row = blockIdx.x; row < rows; row += gridDim.x)
    softmax_segment_forward<T, max_units(1), BlockScope, true>(x + row * x_stride, y + row * y_stride, 0, cols,
                                                               threadIdx.x, kThreads, aligned, scope);
}

template <typename T, int kThreads>
__global__ __launch_bounds__(kThreads, kThreadsAt64Registers / kThreads) void softmax_parallel_block_online_bwd(
    const T* __restrict__ y, std::int64_t y_stride, const T* __restrict__ dy, std::int64_t dy_stride,
    T* __restrict__ dx, std::int64_t dx_stride, std::int64_t rows, std::int64_t cols, bool aligned) {
  BlockScope scope;
  for (std::int64_t row = blockIdx.x; row < rows; row += gridDim.x)
    softmax_segment_backward<T, max_units(2), BlockScope, true>(y + row * y_stride, dy + row * dy_stride,
                                                                dx + row * dx_stride, 0, cols, threadIdx.x, kThreads,
                                                                aligned, scope);
}

// Rows per SM that the GPU keeps in flight with the 512-thread kernel (occupancy) and that fit
// the L2 re-read budget between their two reads (each re-reads `operands` tensors' row).
struct Residency {
  std::int64_t resident_per_sm, fit_per_sm;
};

template <typename Kernel>
Residency residency(Kernel kernel, DType dtype, std::int64_t cols, int operands, int device, int sm_count) {
  int resident_per_sm = 0;
  CP_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&resident_per_sm, kernel, kSmallBlock, 0));
  const double reread_bytes = static_cast<double>(operands) * static_cast<double>(cols) * dtype_size(dtype);
  return {resident_per_sm, static_cast<std::int64_t>(l2_reread_budget_bytes(device) / (reread_bytes * sm_count))};
}

template <typename T>
Residency residency_of(bool forward, DType dtype, std::int64_t cols, int device, int sm_count) {
  return forward ? residency(softmax_parallel_block_online_fwd<T, kSmallBlock>, dtype, cols, 1, device, sm_count)
                 : residency(softmax_parallel_block_online_bwd<T, kSmallBlock>, dtype, cols, 2, device, sm_count);
}

// launch(block threads as an integral_constant, grid): one 512-thread block per row while the
// resident rows fit the L2 share; else a persistent grid of as many rows per SM as fit, each
// block walking rows: 512-thread blocks for 2+ rows per SM, one 1024-thread block per SM for 1.
template <typename Launch>
void launch_online(const Residency& r, const RowOperands& op, const LaunchContext& ctx, Launch&& launch) {
  const auto grid = [](std::int64_t blocks) {
    return static_cast<unsigned>(std::min<std::int64_t>(blocks, std::numeric_limits<int>::max()));
  };
  if (r.fit_per_sm >= r.resident_per_sm)
    launch(std::integral_constant<int, kSmallBlock>{}, grid(op.rows));
  else if (r.fit_per_sm >= 2)
    launch(std::integral_constant<int, kSmallBlock>{}, grid(std::min<std::int64_t>(op.rows, r.fit_per_sm * ctx.sm_count)));
  else
    launch(std::integral_constant<int, kLargeBlock>{}, grid(std::min<std::int64_t>(op.rows, ctx.sm_count)));
}

}  // namespace

void block_online_forward(const RowOperands& op, const LaunchContext& ctx) {
  CP_DISPATCH_FLOAT_TYPES(op.dtype, T, {
    const Residency r = residency_of<T>(true, op.dtype, op.cols, ctx.device, ctx.sm_count);
    launch_online(r, op, ctx, [&](auto threads, unsigned grid) {
      softmax_parallel_block_online_fwd<T, threads><<<grid, threads.value, 0, ctx.stream>>>(
          static_cast<const T*>(op.in0), op.in0_stride, static_cast<T*>(op.out), op.out_stride, op.rows, op.cols,
          op.aligned);
    });
  })
  CP_CHECK_LAUNCH("softmax_parallel_block_online_fwd");
}

void block_online_backward(const RowOperands& op, const LaunchContext& ctx) {
  CP_DISPATCH_FLOAT_TYPES(op.dtype, T, {
    const Residency r = residency_of<T>(false, op.dtype, op.cols, ctx.device, ctx.sm_count);
    launch_online(r, op, ctx, [&](auto threads, unsigned grid) {
      softmax_parallel_block_online_bwd<T, threads><<<grid, threads.value, 0, ctx.stream>>>(
          static_cast<const T*>(op.in0), op.in0_stride, static_cast<const T*>(op.in1), op.in1_stride,
          static_cast<T*>(op.out), op.out_stride, op.rows, op.cols, op.aligned);
    });
  })
  CP_CHECK_LAUNCH("softmax_parallel_block_online_bwd");
}

double l2_reread_budget_bytes(int device) {
  int l2_bytes = 0;
  CP_CUDA_CHECK(cudaDeviceGetAttribute(&l2_bytes, cudaDevAttrL2CacheSize, device));
  return kL2Share * l2_bytes;
}

bool block_online_rereads_from_l2(DType dtype, std::int64_t rows, std::int64_t cols, bool forward, int device,
                                  int sm_count, int min_rows_per_sm) {
  Residency r{};
  CP_DISPATCH_FLOAT_TYPES(dtype, T, { r = residency_of<T>(forward, dtype, cols, device, sm_count); })
  // The grid launch_online picks fills with rows: resident_per_sm per SM uncapped, else fit (>= 1).
  return r.fit_per_sm >= min_rows_per_sm && rows >= std::min(r.fit_per_sm, r.resident_per_sm) * sm_count;
}

}  // namespace cp::softmax_detail
