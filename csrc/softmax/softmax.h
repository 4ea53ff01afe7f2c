// Row-wise softmax (forward and backward) over (rows, cols) views: the host API that the pybind11
// bindings and the executable both call. Every kernel's name starts softmax_parallel_<plan> and ends
// _fwd / _bwd (split_row's streamed Hopper kernels: softmax_parallel_split_row_stream_{fwd,bwd}), so
// `ncu --kernel-name regex:softmax_parallel` selects them all.
//
// Plans (how a row is spread over the GPU):
//   warp_per_row       a group of 8-32 lanes of a warp per row, row in registers (backward: rows
//                      past 512 columns read twice)                   cols <= 1024
//   block_per_row      one block per row, row in registers (fp32 backward: rows past 16384
//                      columns read twice)                            cols <= 32768
//   block_online       one block per row, online max+sum, then a second read + write   any cols
//   split_row          a row over several blocks, statistics exchanged through global memory
//                      (co-resident blocks; portable: a per-row arrival counter, streamed on
//                      sm_90: per-slice published slots)                any cols; needs a workspace
//   cluster_split_row  a row over a thread-block cluster, statistics exchanged through
//                      distributed shared memory                      sm_90 builds with sm_90a only
#pragma once
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "common/rows.h"

namespace cp {

enum class SoftmaxPlan { WarpPerRow, BlockPerRow, BlockOnline, SplitRow, ClusterSplitRow };
enum class SoftmaxDirection { Forward, Backward };

// Every plan name in the order above (cluster_split_row included on any build/GPU).
std::vector<std::string> softmax_plan_names();
const char* softmax_plan_name(SoftmaxPlan plan);
// std::invalid_argument naming the known plans for anything else ("auto" is not a plan).
SoftmaxPlan parse_softmax_plan(const std::string& name);

// The plan expected to be fastest for this shape and direction on `device` (what plan="auto" runs).
SoftmaxPlan softmax_choose_plan(DType dtype, std::int64_t rows, std::int64_t cols, int device,
                                SoftmaxDirection direction);
// "" when `plan` can run this shape on `device` (forward and backward), else the reason.
std::string softmax_plan_unsupported(SoftmaxPlan plan, DType dtype, std::int64_t rows, std::int64_t cols,
                                     int device);
// Scratch bytes forward/backward need for this plan and shape (0 for most plans; split_row: its
// counters and per-slice partials). The caller owns the scratch, so that no launch allocates,
// synchronises or memsets, and zeroes it once when it allocates it: it must be all zero at launch,
// and every launch leaves it all zero, whatever shape the next launch on it runs. Launches that may
// run at the same time need scratch of their own (Python keeps one per device and stream; the
// executable one per case).
std::size_t softmax_workspace_bytes(SoftmaxPlan plan, DType dtype, std::int64_t rows, std::int64_t cols,
                                    int device);

// What `plan` launches for these operands, as text (the benchmark records it beside the plan): split_row names
// its layout, the one thing about it that a shape changes (streamed: slices per row, grid, chunks held for pass 2;
// portable: slices per row of how many columns); "" for the other plans. `in1` is dy (backward) or empty (forward).
std::string softmax_config(SoftmaxPlan plan, DType dtype, ConstRowsView in0, ConstRowsView in1, ConstRowsView out,
                           SoftmaxDirection direction, int device);

// y = softmax(x) per row. `workspace` holds softmax_workspace_bytes(...) bytes (may be null if 0).
void softmax_forward(SoftmaxPlan plan, DType dtype, ConstRowsView x, RowsView y, void* workspace,
                     std::size_t workspace_bytes, cudaStream_t stream, int device);
// dx = y * (dy - sum(y * dy)) per row.
void softmax_backward(SoftmaxPlan plan, DType dtype, ConstRowsView y, ConstRowsView dy, RowsView dx,
                      void* workspace, std::size_t workspace_bytes, cudaStream_t stream, int device);

}  // namespace cp
