// The one host launcher for softmax: plan names, the auto choice, shape/device checks, and
// dispatch to the plan files. The pybind11 bindings and the executable both call these.
#include "softmax/softmax.h"

#include <stdexcept>

#include "common/cuda_check.h"
#include "common/device.h"
#include "softmax/softmax_plans.h"

namespace cp {
namespace {

using softmax_detail::LaunchContext;
using softmax_detail::RowOperands;

constexpr SoftmaxPlan kAllPlans[] = {SoftmaxPlan::WarpPerRow, SoftmaxPlan::BlockPerRow, SoftmaxPlan::BlockOnline,
                                     SoftmaxPlan::SplitRow, SoftmaxPlan::ClusterSplitRow};

bool aligned16(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; }
// 16-byte accesses need every row start aligned: the base pointer and (with > 1 row) the stride.
bool rows_aligned16(const void* p, std::int64_t rows, std::int64_t row_stride, DType dtype) {
  return aligned16(p) && (rows <= 1 || (row_stride * static_cast<std::int64_t>(dtype_size(dtype))) % 16 == 0);
}

// A launch's operands (in1: the backward's dy; null for the forward), aligned when every operand's rows are. The
// launches and softmax_config both build them here, so a config names the layout the launch would run.
RowOperands row_operands(DType dtype, ConstRowsView in0, const ConstRowsView* in1, void* out, std::int64_t out_stride) {
  const bool aligned = rows_aligned16(in0.data, in0.rows, in0.row_stride, dtype) &&
                       rows_aligned16(out, in0.rows, out_stride, dtype) &&
                       (in1 == nullptr || rows_aligned16(in1->data, in0.rows, in1->row_stride, dtype));
  return {dtype, in0.rows, in0.cols, in0.data, in0.row_stride, in1 != nullptr ? in1->data : nullptr,
          in1 != nullptr ? in1->row_stride : 0, out, out_stride, aligned};
}

void check_view(const char* what, std::int64_t rows, std::int64_t cols, std::int64_t row_stride, std::int64_t want_rows,
                std::int64_t want_cols) {
  if (rows != want_rows || cols != want_cols)
    throw std::invalid_argument(std::string("softmax: ") + what + " is " + std::to_string(rows) + "x" +
                                std::to_string(cols) + ", expected " + std::to_string(want_rows) + "x" +
                                std::to_string(want_cols));
  if (rows > 1 && row_stride < cols)
    throw std::invalid_argument(std::string("softmax: ") + what + " row stride " + std::to_string(row_stride) +
                                " is smaller than its " + std::to_string(cols) + " columns");
}

void require_runnable(SoftmaxPlan plan, DType dtype, std::int64_t rows, std::int64_t cols, int device) {
  const std::string why = softmax_plan_unsupported(plan, dtype, rows, cols, device);
  if (!why.empty())
    throw std::invalid_argument(std::string("softmax: plan '") + softmax_plan_name(plan) + "' " + why);
}

}  // namespace

std::vector<std::string> softmax_plan_names() {
  std::vector<std::string> names;
  for (SoftmaxPlan p : kAllPlans) names.emplace_back(softmax_plan_name(p));
  return names;
}

const char* softmax_plan_name(SoftmaxPlan plan) {
  switch (plan) {
    case SoftmaxPlan::WarpPerRow: return "warp_per_row";
    case SoftmaxPlan::BlockPerRow: return "block_per_row";
    case SoftmaxPlan::BlockOnline: return "block_online";
    case SoftmaxPlan::SplitRow: return "split_row";
    case SoftmaxPlan::ClusterSplitRow: return "cluster_split_row";
  }
  return "?";
}

SoftmaxPlan parse_softmax_plan(const std::string& name) {
  for (SoftmaxPlan p : kAllPlans)
    if (name == softmax_plan_name(p)) return p;
  std::string known;
  for (SoftmaxPlan p : kAllPlans) known += std::string(known.empty() ? "" : ", ") + softmax_plan_name(p);
  throw std::invalid_argument("softmax: unknown plan '" + name + "'; plans: " + known);
}

// Short rows: a lane group of a warp each; rows up to 16384 columns with enough rows to fill the GPU: a block each.
// Longer rows are measured, not derived: the rule below follows `--plans all` on the H200, every
// plan timed in fp32 and bf16, fwd and bwd (results/h200/softmax-plans.json: 6 long-row shapes;
// softmax-plans-v9b.json: block_online with its 1024-thread capped grid at 4 of them, 16384x1024
// and 8192x8192):
// - Hopper, rows split_row streams through a bulk-copy ring (v10: rows of whole 16-byte units,
//   softmax-plans-v10.json; v13: rows at any offset from a 16-byte boundary that hold a whole
//   unit, softmax-plans-v13.json): split_row, except forward where block_online's rows re-read
//   from L2. At 2048x50257 v13's split_row measured 0.86 / 0.78 fp32 (block_online 0.79 / 0.73)
//   and 0.77 / 0.83 bf16 (block_online 0.78 / 0.67; bf16 forward keeps block_online: 3 rows per
//   SM fit L2). split_row measured 0.86-0.93 fp32 / 0.83-0.89 bf16 at 1024x131072 (cluster 0.74,
//   block_online 0.60-0.79) and was the best plan at 256x262144, 32x1M and 4x4M in both
//   directions; at 4096x32768 backward 0.96 / 0.99 (block_online 0.94 / 0.98), forward
//   block_online 0.97 / 0.96 (split_row 0.96 / 0.84). Forward keeps block_online only with >= 2
//   rows per SM in L2: at bf16 1024x131072 (1 row per SM) split_row measured 0.83 against
//   block_online's 0.79 (through auto at 6a834aa: 0.84). The rules below are for the rows it
//   does not stream:
// - fewer rows than a quarter of the SMs (33 on a 132-SM H200): split_row, which spreads a row over the most blocks (0.47-0.64x copy;
//   cluster_split_row 0.25-0.54x, block_online 0.04-0.34x);
// - 513-1024 columns with at least as many rows as SMs, backward and fp32 forward: block_per_row with its
//   short-row tiles (session 20,
//   results/h200/experiments/softmax-block-per-row-min-depth-*.json; 16384x1024 backward 1.00x fp32,
//   0.95x bf16 against warp_per_row's 0.89x / 0.86x, which reads the row twice there; fp32 forward
//   0.97x against 0.95x, 32768x1000 0.98x against 0.97x). Fewer rows, and the 16-bit forward, keep
//   warp_per_row (0.89-0.96x both);
// - block_online wherever every row it keeps in flight re-reads from L2, whether one block per row
//   or a capped grid of one 1024-thread block per SM (block_online_rereads_from_l2): 0.96-0.99x at
//   4096x32768 in fp32 forward and bf16 both ways, 0.95x fp32 backward (cluster 0.94x), 0.78x at
//   2048x50257 forward in both types (cluster 0.74x fp32), 0.66x bf16 2048x50257 backward;
// - 16-bit with fewer rows than SMs: split_row; otherwise forward: block_online too (bf16 256x262144:
//   0.65x; split_row 0.59x, cluster 0.41x); backward: block_per_row up to 32768 columns, block_online
//   with many rows (>= 12 per SM), else split_row (1024x131072: 0.76x against block_online's 0.64x);
// - fp32: split_row below 2 rows per SM, else block_per_row up to 32768 columns and block_online past
//   that. cluster_split_row is never auto's pick: it needs sm_90 and the sm_90a build, where split_row
//   streams every row it would take (it measured 0.73x against split_row's 0.81x at fp32 1024x131072
//   backward before the streamed kernel).
// 16-bit backward rows with more rows than SMs leave block_per_row where fewer than two of its
// blocks fit an SM: one block per SM idles through each row's reduction. With 2-unit tiles (before
// 4-unit ones, softmax_block_per_row.cu) that was past 9216 columns: bf16 4096 x 9209 / 9217 read
// 0.97x / 0.68x copy, 9216 / 9224 0.99x / 0.70x (results/h200/experiments/
// softmax-cuda-{bf0fb44-16bit-bwd-edges-plans,cd08e12-16bit-bwd-blocks-per-sm}.json). With 4-unit
// tiles two or more fit through 16384 columns (4096 x 9217 / 12001 / 16001 0.97x / 0.98x / 0.99x,
// softmax-cuda-1d09970-block-per-row-backward-16bit-four-unit-tiles-after.json), so the rule
// below is for kernels and GPUs where they do not:
// - rows that are not whole 16-byte units take split_row: 0.74-0.93x at bf16 4096 x 10001 / 12001
//   / 16001 and 1024x16001 (0.68-0.70x at 8001-9001, where block_per_row leads by 0.23-0.28x).
// - rows of whole units take block_online: 0.86-1.00x against block_per_row's
//   0.71-0.89x and split_row's 0.77-0.98x at 4096 x 10000 / 12000 / 14000 / 16384, 8192x12000,
//   1024 x 12000 / 16384, 512x12000, 264x16384 (softmax-8d6e230-16bit-bwd-aligned-plans.json);
//   4096x9224 0.81x against 0.70x. Up to 9216 block_per_row wins (4096x9216 0.99x against 0.83x,
//   8192 columns 0.96x against 0.74x), and at one row per SM: bf16
//   132x16384 / 132x12000 0.55x / 0.49x against block_online's 0.53x / 0.45x
//   (softmax-a02e182-cuda-16bit-bwd-132-rows.json; 133-263 rows are not measured).
// Forward block_per_row stays the best plan at these rows.
SoftmaxPlan softmax_choose_plan(DType dtype, std::int64_t rows, std::int64_t cols, int device,
                                SoftmaxDirection direction) {
  const std::int64_t sms = sm_count(device);
  const bool forward = direction == SoftmaxDirection::Forward;
  if (cols <= softmax_detail::kWarpPerRowMaxCols) {
    // Past 512 columns a block per row holds the row in one tile. Backward: warp_per_row's tiles
    // (16 values each of y and dy per lane) no longer do, and it reads the row twice. fp32 forward:
    // warp_per_row's full-warp, 32-value tiles measured slower than block_per_row's 16-value ones.
    const bool past_half = cols > softmax_detail::kWarpPerRowMaxCols / 2 && rows >= sms;
    if (past_half && (!forward || dtype == DType::F32)) return SoftmaxPlan::BlockPerRow;
    return SoftmaxPlan::WarpPerRow;
  }
  // Rows of whole 16-byte units, as an aligned tensor's are (the launch checks the pointers).
  const bool whole_units = softmax_detail::whole_units(true, cols, 16 / static_cast<int>(dtype_size(dtype)));
  if (cols <= 16384 && rows >= sms) {
    if (!forward && dtype != DType::F32 && rows > sms) {
      if (softmax_detail::block_per_row_backward_residency(dtype, cols, whole_units).blocks < 2)
        return whole_units ? SoftmaxPlan::BlockOnline : SoftmaxPlan::SplitRow;
    }
    return SoftmaxPlan::BlockPerRow;
  }
  // 16-bit backward rows of whole units past 16384 columns, many rows: block_per_row where its one block per SM is
  // a whole 1024 threads (4-unit tiles from 31745 columns), which keeps 128 KB in flight through the reduction:
  // bf16 4096x32768 1.00x copy against split_row's 0.99x on an H200, 0.99x / 0.96x Liger on an H100, 4096x32000
  // 0.99x / 0.97x Liger; at 768 threads (4096x24001) split_row leads, 0.95x against 0.92x (docs/perf-log.md,
  // session 71). Auto's A/B on an H100: 16-bit 2048-4096 x 32000-32768 +2.4-3.8% (session 72).
  if (!forward && dtype != DType::F32 && whole_units && cols <= softmax_detail::kBlockPerRowMaxCols &&
      rows >= 12 * sms) {
    const softmax_detail::BlockResidency r = softmax_detail::block_per_row_backward_residency(dtype, cols, true);
    if (r.blocks * r.threads >= 1024) return SoftmaxPlan::BlockPerRow;
  }
#ifdef CUDA_PORTFOLIO_HAS_SM90A
  if (softmax_detail::split_row_streams(dtype, cols, device)) {
    if (forward && softmax_detail::block_online_rereads_from_l2(dtype, rows, cols, forward, device, static_cast<int>(sms),
                                                                 /*min_rows_per_sm=*/2))
      return SoftmaxPlan::BlockOnline;
    return SoftmaxPlan::SplitRow;
  }
#endif
  if (rows < sms / 4) return SoftmaxPlan::SplitRow;
  if (softmax_detail::block_online_rereads_from_l2(dtype, rows, cols, forward, device, static_cast<int>(sms)))
    return SoftmaxPlan::BlockOnline;
  const bool many_rows = rows >= 12 * sms;
  const bool fits_block = cols <= softmax_detail::kBlockPerRowMaxCols;
  if (dtype != DType::F32) {
    if (rows < sms) return SoftmaxPlan::SplitRow;
    if (forward) return SoftmaxPlan::BlockOnline;
    if (fits_block) return SoftmaxPlan::BlockPerRow;
    return many_rows ? SoftmaxPlan::BlockOnline : SoftmaxPlan::SplitRow;
  }
  if (rows < 2 * sms) return SoftmaxPlan::SplitRow;
  return fits_block ? SoftmaxPlan::BlockPerRow : SoftmaxPlan::BlockOnline;
}

std::string softmax_plan_unsupported(SoftmaxPlan plan, DType /*dtype*/, std::int64_t rows, std::int64_t cols,
                                     int device) {
  if (rows < 0 || cols < 0) return "cannot run a negative shape";
  switch (plan) {
    case SoftmaxPlan::WarpPerRow:
      if (cols > softmax_detail::kWarpPerRowMaxCols)
        return "cannot run rows of " + std::to_string(cols) + " columns (max " +
               std::to_string(softmax_detail::kWarpPerRowMaxCols) +
               ": one warp keeps the row in registers); use block_per_row, block_online or split_row";
      return "";
    case SoftmaxPlan::BlockPerRow:
      if (cols > softmax_detail::kBlockPerRowMaxCols)
        return "cannot run rows of " + std::to_string(cols) + " columns (max " +
               std::to_string(softmax_detail::kBlockPerRowMaxCols) +
               ": one block keeps the row in registers); use block_online, split_row or cluster_split_row";
      return "";
    case SoftmaxPlan::BlockOnline:
    case SoftmaxPlan::SplitRow: return "";
    case SoftmaxPlan::ClusterSplitRow:
#ifdef CUDA_PORTFOLIO_HAS_SM90A
      return softmax_detail::cluster_split_row_unsupported(device);
#else
      (void)device;
      return "is not in this build (built without the sm_90a kernels: CUDA_PORTFOLIO_HOPPER=OFF or nvcc < 12)";
#endif
  }
  return "is unknown";
}

std::size_t softmax_workspace_bytes(SoftmaxPlan plan, DType dtype, std::int64_t rows, std::int64_t cols, int device) {
  if (plan != SoftmaxPlan::SplitRow || rows <= 0 || cols <= 0) return 0;
  return softmax_detail::split_row_workspace_bytes(dtype, rows, cols, device, sm_count(device));
}

std::string softmax_config(SoftmaxPlan plan, DType dtype, ConstRowsView in0, ConstRowsView in1, ConstRowsView out,
                           SoftmaxDirection direction, int device) {
  const bool forward = direction == SoftmaxDirection::Forward;
  check_view("in0", in0.rows, in0.cols, in0.row_stride, in0.rows, in0.cols);
  check_view("out", out.rows, out.cols, out.row_stride, in0.rows, in0.cols);
  if (!forward) check_view("in1", in1.rows, in1.cols, in1.row_stride, in0.rows, in0.cols);
  if (plan != SoftmaxPlan::SplitRow || in0.rows == 0 || in0.cols == 0) return "";
  DeviceGuard guard(device);
  require_runnable(plan, dtype, in0.rows, in0.cols, device);
  // Nothing is launched: the output's address is only compared (split_row_streams, the alignment), never written.
  const RowOperands op = row_operands(dtype, in0, forward ? nullptr : &in1, const_cast<void*>(out.data), out.row_stride);
  return softmax_detail::split_row_config(op, forward, device, sm_count(device));
}

void softmax_forward(SoftmaxPlan plan, DType dtype, ConstRowsView x, RowsView y, void* workspace,
                     std::size_t workspace_bytes, cudaStream_t stream, int device) {
  check_view("y", y.rows, y.cols, y.row_stride, x.rows, x.cols);
  check_view("x", x.rows, x.cols, x.row_stride, x.rows, x.cols);
  if (x.rows == 0 || x.cols == 0) return;
  DeviceGuard guard(device);
  require_runnable(plan, dtype, x.rows, x.cols, device);
  const RowOperands op = row_operands(dtype, x, nullptr, y.data, y.row_stride);
  const LaunchContext ctx{stream, device, sm_count(device), workspace, workspace_bytes};
  switch (plan) {
    case SoftmaxPlan::WarpPerRow: softmax_detail::warp_per_row_forward(op, ctx); break;
    case SoftmaxPlan::BlockPerRow: softmax_detail::block_per_row_forward(op, ctx); break;
    case SoftmaxPlan::BlockOnline: softmax_detail::block_online_forward(op, ctx); break;
    case SoftmaxPlan::SplitRow: softmax_detail::split_row_forward(op, ctx); break;
    case SoftmaxPlan::ClusterSplitRow:
#ifdef CUDA_PORTFOLIO_HAS_SM90A
      softmax_detail::cluster_split_row_forward(op, ctx);
#endif
      break;
  }
}

void softmax_backward(SoftmaxPlan plan, DType dtype, ConstRowsView y, ConstRowsView dy, RowsView dx,
                      void* workspace, std::size_t workspace_bytes, cudaStream_t stream, int device) {
  check_view("y", y.rows, y.cols, y.row_stride, y.rows, y.cols);
  check_view("dy", dy.rows, dy.cols, dy.row_stride, y.rows, y.cols);
  check_view("dx", dx.rows, dx.cols, dx.row_stride, y.rows, y.cols);
  if (y.rows == 0 || y.cols == 0) return;
  DeviceGuard guard(device);
  require_runnable(plan, dtype, y.rows, y.cols, device);
  const RowOperands op = row_operands(dtype, y, &dy, dx.data, dx.row_stride);
  const LaunchContext ctx{stream, device, sm_count(device), workspace, workspace_bytes};
  switch (plan) {
    case SoftmaxPlan::WarpPerRow: softmax_detail::warp_per_row_backward(op, ctx); break;
    case SoftmaxPlan::BlockPerRow: softmax_detail::block_per_row_backward(op, ctx); break;
    case SoftmaxPlan::BlockOnline: softmax_detail::block_online_backward(op, ctx); break;
    case SoftmaxPlan::SplitRow: softmax_detail::split_row_backward(op, ctx); break;
    case SoftmaxPlan::ClusterSplitRow:
#ifdef CUDA_PORTFOLIO_HAS_SM90A
      softmax_detail::cluster_split_row_backward(op, ctx);
#endif
      break;
  }
}

}  // namespace cp
