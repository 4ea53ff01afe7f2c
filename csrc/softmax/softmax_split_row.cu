// split_row: long rows, few rows (32 x 1M, 4 x 4M): each row is cut into `slices` contiguous
// slices, so the whole GPU works on a handful of rows. This file has the portable kernels and the held
// form; on Hopper, operands whose rows share their offset from a 16-byte boundary go to the streamed
// kernels of softmax_split_row_stream_sm90a.cu instead, except the launches the held form's rule
// gives it (held_plan()).
//
// The portable kernels (softmax_parallel_split_row_fwd / _bwd): one 512-thread block per slice. A block
// keeps its slice in registers as raw 16-byte units (32 registers per thread: 16384 fp32 or 32768
// fp16/bf16 elements forward, half that per operand backward), reduces it to partial statistics,
// publishes them in the workspace, bumps the row's arrival counter and spins until every slice of the
// row has arrived; then it combines all partials (same order in every block, so every block gets the
// same bits) and writes its slice from registers: DRAM sees one read + one write. Rows longer than
// one tile per co-resident block get multi-tile slices, read twice (second read from L2).
// Deadlock freedom: blocks take row/slice tickets from a global counter in the order they start, and
// slices <= co-resident blocks (occupancy API x SMs), so the blocks a spinning block waits for are
// already resident or can still be scheduled (the argument CUB's decoupled look-back uses).
// Bound: DRAM bytes (forward 2x, backward 3x the tensor) plus one arrival round trip per row.
// Workspace: [ticket][exits][row counter x rows], then (16-byte aligned) the partials (V x rows x
// slices; sized for MaxSum in both directions, so the backward's floats use half). All of it is zero
// at launch and the kernel leaves it zero (draw_ticket, RowExchange and leave_workspace in
// softmax_reduce.cuh say how and why that is safe): the caller zeroes it once, no memset per call.
// Each block draws one ticket, so the draw of ticket gridDim.x - 1 resets the ticket counter; the
// last block to leave resets the row counters and partials.
//
// The held form (softmax_parallel_split_row_held_{fwd,bwd}), the Triton split_row's held form in CUDA:
// a persistent grid of 256-thread blocks, four per SM, each drawing (row, slice) jobs by ticket one at a
// time (run_held_jobs). A job is one tile of a row of whole 16-byte units (forward 32 KiB, 8 units a
// thread; backward 16 KiB each of y and dy, 4 units each), loaded at once and held in registers through
// the row's exchange: one 64-bit slot per job, published by an atomic exchange and polled by thread i
// for slice i (SlotScope), one L2 round trip. While a block waits at an exchange, the three others on
// its SM load or write. Bound: DRAM bytes, one read and one write (backward two reads), plus one
// exchange per job. Deadlock freedom: a block holds one job at a time, slices <= co-resident blocks
// and tickets go out in order, so the oldest unfinished row's slices are all held by running blocks
// that wait for nothing else. Workspace: [ticket][exits], then (16-byte aligned) the slots, 0 until
// published (published_bits is never 0); every block draws until a ticket is past the last job, so the
// draw of ticket jobs + gridDim.x - 1 resets the counter, and the last block out zeroes the slots.
#include <algorithm>
#include <cstdlib>
#include <optional>
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
  std::int64_t capacity;  // co-resident blocks (occupancy x SMs): the held form's grid at most
  bool one_tile;          // every slice fits one tile (held in registers, read once)
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

constexpr int kHeldThreads = 256;  // four blocks per SM at 64 registers, as the Triton held form's 8-warp programs

// Scope of one held job: the block's (max, sum) reduction, then the one-trip exchange through the row's
// slots. Every block of the row combines the slots in the same tree, so every slice gets the same bits.
struct SlotScope {
  unsigned long long* row_slots;  // this row's `slices` slots
  int slices, slice;

  template <typename V>
  __device__ V reduce(V v) const {
    v = block_reduce(v);
    if (slices == 1) return v;
    if (threadIdx.x == 0) publish_relaxed_gpu(row_slots + slice, published_bits(v));
    V acc = reduce_identity<V>();
    for (int i = threadIdx.x; i < slices; i += blockDim.x) {
      unsigned long long bits;
      while ((bits = ld_relaxed_gpu(row_slots + i)) == 0) {
      }
      acc = combine(acc, published_value<V>(bits));
    }
    return block_reduce(acc);
  }
};

// The held form's job loop (header comment): draw tickets until one is past the last job, run job(row, begin,
// scope) for each (begin: the slice's first column), then leave the workspace (the last block out zeroes the slots).
template <typename Job>
__device__ __forceinline__ void run_held_jobs(int slices, std::int64_t slice_len, unsigned jobs, unsigned* workspace,
                                              unsigned long long* slots, Job&& job) {
  for (;;) {
    if (threadIdx.x == 0) block_ticket() = draw_ticket(workspace, jobs + gridDim.x - 1);
    __syncthreads();  // the ticket is read before the job's reductions, whose barriers order the next draw after it
    const unsigned ticket = block_ticket();
    if (ticket >= jobs) break;
    const int slice = static_cast<int>(ticket % slices);
    const SlotScope scope{slots + (ticket - slice), slices, slice};
    job(static_cast<std::int64_t>(ticket / slices), slice * slice_len, scope);
  }
  leave_workspace(workspace, 0, slots, jobs, threadIdx.x, kHeldThreads, [] { __syncthreads(); });
}

// The held kernels (header comment): rows of whole 16-byte units only (the 16-bit kernels with edge slots spill at
// the 64-register cap), so every slice is whole units too (slice_len is a multiple of W). The backward holds 4
// units each of y and dy a thread (16 KiB of each a job).
template <typename T, int kVecs>
__global__ __launch_bounds__(kHeldThreads, 4) void softmax_parallel_split_row_held_fwd(
    const T* __restrict__ x, std::int64_t x_stride, T* __restrict__ y, std::int64_t y_stride, std::int64_t cols,
    int slices, std::int64_t slice_len, unsigned jobs, unsigned* workspace, unsigned long long* slots) {
  run_held_jobs(slices, slice_len, jobs, workspace, slots, [&](std::int64_t row, std::int64_t begin, SlotScope scope) {
    softmax_segment_forward<T, kVecs, SlotScope, false, true>(x + row * x_stride, y + row * y_stride, begin,
                                                              std::min(cols, begin + slice_len), threadIdx.x,
                                                              kHeldThreads, true, scope);
  });
}

template <typename T, int kVecs>
__global__ __launch_bounds__(kHeldThreads, 4) void softmax_parallel_split_row_held_bwd(
    const T* __restrict__ y, std::int64_t y_stride, const T* __restrict__ dy, std::int64_t dy_stride,
    T* __restrict__ dx, std::int64_t dx_stride, std::int64_t cols, int slices, std::int64_t slice_len, unsigned jobs,
    unsigned* workspace, unsigned long long* slots) {
  run_held_jobs(slices, slice_len, jobs, workspace, slots, [&](std::int64_t row, std::int64_t begin, SlotScope scope) {
    softmax_segment_backward<T, kVecs, SlotScope, false, true>(y + row * y_stride, dy + row * dy_stride,
                                                               dx + row * dx_stride, begin,
                                                               std::min(cols, begin + slice_len), threadIdx.x,
                                                               kHeldThreads, true, scope);
  });
}

// Slices: as many one-tile slices as the row needs, capped by the co-resident block count.
template <typename T, int kOperands, int kBlockThreads = kThreads, typename Kernel>
SplitLayout split_layout(Kernel kernel, std::int64_t rows, std::int64_t cols, int device, int sm_count) {
  int per_sm = 0;
  {
    DeviceGuard guard(device);
    CP_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, kBlockThreads, 0));
  }
  const std::int64_t capacity = std::max<std::int64_t>(1, static_cast<std::int64_t>(per_sm) * sm_count);
  constexpr int W = vec_width<T>();
  const std::int64_t tile_elems = static_cast<std::int64_t>(kBlockThreads) * max_units(kOperands) * W;
  std::int64_t slices = std::min(capacity, (cols + tile_elems - 1) / tile_elems);
  const std::int64_t slice_len = ((cols + slices - 1) / slices + W - 1) / W * W;  // 16-byte aligned slices
  slices = (cols + slice_len - 1) / slice_len;
  if (slices >= kMaxRowSlices) throw std::invalid_argument("softmax split_row: too many slices per row");
  SplitLayout l{slices, slice_len, capacity, slice_len <= tile_elems, 0, 0};
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

// The held layout of a direction: split_layout's slices at 256 threads (forward 8 units a thread, backward 4 of
// each operand), then the header and one 64-bit slot per job (no row words).
template <typename T>
SplitLayout held_layout(bool forward, std::int64_t rows, std::int64_t cols, int device, int sm_count) {
  SplitLayout l = forward ? split_layout<T, 1, kHeldThreads>(softmax_parallel_split_row_held_fwd<T, max_units(1)>, rows,
                                                             cols, device, sm_count)
                          : split_layout<T, 2, kHeldThreads>(softmax_parallel_split_row_held_bwd<T, max_units(2)>, rows,
                                                             cols, device, sm_count);
  l.counters_bytes = sizeof(unsigned) * kWorkspaceHeader;
  const std::size_t slots = static_cast<std::size_t>(rows * l.slices);
  l.total_bytes = (l.counters_bytes + 15) / 16 * 16 + sizeof(unsigned long long) * slots;
  return l;
}

// Where the held form takes a Hopper launch from the streamed kernel. The forward's rule was fitted to 18 cells
// on an H100 and checked by an A/B on another (docs/perf-log.md, sessions 74-75); the backward's four conditions
// are the same and match the 18 cells of a sweep on a third (session 76). Both: 256x262144 to 4096x50304, fp32
// and bf16.
// - rows in flight (co-resident blocks / slices per row) at least 4: with fewer (4x4M: 1-2) every block of a
//   round waits at the same exchange, and the held forward lost 17-26%, the backward 25%;
// - jobs at least 3 per block: 8x1M, at 1-2 a block, lost 6-11% forward and 14-17% backward;
// - the tiles at least 0.85 full (cols / (slices x tile)): bf16 4096x50304's four forward slices fill 0.77 of
//   theirs and lost 2.3%, fp32's seven fill 0.88 and gained 3-4%; its backward slices fill 0.88 / 0.94 and
//   gained 5.4 / 3.9%;
// - a row of at most 1 MiB (forward: 32 slices of 32 KiB; backward: 64 of 16 KiB of each operand): 32x1M's
//   forward (64 / 128 slices) gained 1.5 / 4.6% on one H100 and lost 2.6 / 5.4% on another, and its fp32
//   backward lost 17% (bf16 gained 1.7%), so the streamed kernel keeps them.
// Where all four hold the forward gained 1-11% and the backward 3-12% (256x262144, 512x262144, 1024x131072,
// 2048x65536, 128x262144; the backward also 4096x50304).
constexpr std::int64_t kHeldRowsInFlightLeast = 4;
constexpr std::int64_t kHeldJobsPerBlockLeast = 3;
constexpr double kHeldTileFillLeast = 0.85;
constexpr std::int64_t kHeldRowBytesMost = std::int64_t{1} << 20;

// What the held form can run and what the rule above asks of a shape (the operands' part, whole 16-byte units
// and the streamed kernel's phase test, is held_plan()'s).
struct HeldShape {
  SplitLayout layout;
  bool runs;  // every slice one tile, and the tickets (jobs + grid) fit 32 bits
  bool pays;  // the rule

  // Whether the held form takes the shape, given held_override(); held_plan adds the operands' part.
  bool chosen(int forced) const { return runs && (forced == 1 || (forced == -1 && pays)); }

  template <typename T>
  static HeldShape of(bool forward, std::int64_t rows, std::int64_t cols, int device, int sm_count) {
    const SplitLayout l = held_layout<T>(forward, rows, cols, device, sm_count);
    const std::int64_t jobs = rows * l.slices;
    const double tile_elems = static_cast<double>(kHeldThreads) * max_units(forward ? 1 : 2) * vec_width<T>();
    return {l, l.one_tile && jobs + l.capacity <= 0xffffffffll,
            cols * static_cast<std::int64_t>(sizeof(T)) <= kHeldRowBytesMost &&
                l.slices * kHeldRowsInFlightLeast <= l.capacity &&
                jobs >= kHeldJobsPerBlockLeast * l.capacity &&
                static_cast<double>(cols) >= kHeldTileFillLeast * static_cast<double>(l.slices) * tile_elems};
  }
};

HeldShape held_shape(DType dtype, bool forward, std::int64_t rows, std::int64_t cols, int device, int sm_count) {
  HeldShape h{};
  CP_DISPATCH_FLOAT_TYPES(dtype, T, { h = HeldShape::of<T>(forward, rows, cols, device, sm_count); })
  return h;
}

// CUDA_PORTFOLIO_SPLIT_ROW_IN_REGISTERS (for sweeps): 1 runs the held form, both directions, wherever it can run;
// 0 never; unset (-1), the rule decides.
int held_override() {
  const char* v = std::getenv("CUDA_PORTFOLIO_SPLIT_ROW_IN_REGISTERS");
  if (v == nullptr) return -1;
  if (std::string(v) != "0" && std::string(v) != "1")
    throw std::invalid_argument("CUDA_PORTFOLIO_SPLIT_ROW_IN_REGISTERS: 0 or 1, not " + std::string(v));
  return v[0] - '0';
}

// The layout a direction's held form runs with, or none where another kernel takes the launch: rows of whole
// 16-byte units it can run, forced, or (unset) operands the streamed kernel would take where the rule holds.
// Off Hopper the portable kernels keep them unless forced. Computed once per launch (an occupancy query).
std::optional<SplitLayout> held_plan(const RowOperands& op, bool forward, int device, int sm_count) {
  bool whole = false;
  CP_DISPATCH_FLOAT_TYPES(op.dtype, T, { whole = whole_units(op, vec_width<T>()); })
  if (!whole) return std::nullopt;
  const HeldShape h = held_shape(op.dtype, forward, op.rows, op.cols, device, sm_count);
  const int forced = held_override();
  if (!h.chosen(forced)) return std::nullopt;
#ifdef CUDA_PORTFOLIO_HAS_SM90A
  if (forced != 1 && !split_row_streams(op, device)) return std::nullopt;
#else
  if (forced != 1) return std::nullopt;
#endif
  return h.layout;
}

void held_launch(const RowOperands& op, bool forward, const SplitLayout& l, const LaunchContext& ctx) {
  check_workspace(ctx, l);
  const std::int64_t jobs = op.rows * l.slices;
  const unsigned grid = static_cast<unsigned>(std::min(jobs, l.capacity));
  auto* workspace = static_cast<unsigned*>(ctx.workspace);
  unsigned long long* slots = partials_of<unsigned long long>(ctx, l);
  CP_DISPATCH_FLOAT_TYPES(op.dtype, T, {
    if (forward)
      softmax_parallel_split_row_held_fwd<T, max_units(1)><<<grid, kHeldThreads, 0, ctx.stream>>>(
          static_cast<const T*>(op.in0), op.in0_stride, static_cast<T*>(op.out), op.out_stride, op.cols,
          static_cast<int>(l.slices), l.slice_len, static_cast<unsigned>(jobs), workspace, slots);
    else
      softmax_parallel_split_row_held_bwd<T, max_units(2)><<<grid, kHeldThreads, 0, ctx.stream>>>(
          static_cast<const T*>(op.in0), op.in0_stride, static_cast<const T*>(op.in1), op.in1_stride,
          static_cast<T*>(op.out), op.out_stride, op.cols, static_cast<int>(l.slices), l.slice_len,
          static_cast<unsigned>(jobs), workspace, slots);
  })
  CP_CHECK_LAUNCH(forward ? "softmax_parallel_split_row_held_fwd" : "softmax_parallel_split_row_held_bwd");
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
  const int forced = held_override();
  for (const bool forward : {true, false}) {  // the held form's slots, where it may run
    const HeldShape held = held_shape(dtype, forward, rows, cols, device, sm_count);
    if (held.chosen(forced)) bytes = std::max(bytes, held.layout.total_bytes);
  }
#ifdef CUDA_PORTFOLIO_HAS_SM90A
  bytes = std::max(bytes, split_row_stream_workspace_bytes(dtype, rows, cols, device, sm_count));
#endif
  return bytes;
}

std::string split_row_config(const RowOperands& op, bool forward, int device, int sm_count) {
  if (const std::optional<SplitLayout> held = held_plan(op, forward, device, sm_count)) {
    const SplitLayout& l = *held;
    const std::int64_t grid = std::min(op.rows * l.slices, l.capacity);
    return "held: " + std::to_string(l.slices) + (l.slices == 1 ? " slice" : " slices") + " per row, " +
           std::to_string(l.slice_len) + " columns each, grid " + std::to_string(grid) + " x " +
           std::to_string(kHeldThreads);
  }
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
  if (const std::optional<SplitLayout> held = held_plan(op, true, ctx.device, ctx.sm_count))
    return held_launch(op, true, *held, ctx);
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
  if (const std::optional<SplitLayout> held = held_plan(op, false, ctx.device, ctx.sm_count))
    return held_launch(op, false, *held, ctx);
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
