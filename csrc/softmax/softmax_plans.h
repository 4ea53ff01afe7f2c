// Internal: what softmax.cu (the one host launcher) needs from each plan file.
#pragma once
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "common/dtype.h"

namespace cp::softmax_detail {

// One call's operands. Forward reads in0 = x; backward reads in0 = y and in1 = dy.
// `aligned`: every base pointer and row stride allows 16-byte accesses.
struct RowOperands {
  DType dtype;
  std::int64_t rows, cols;
  const void* in0;
  std::int64_t in0_stride;
  const void* in1;
  std::int64_t in1_stride;
  void* out;
  std::int64_t out_stride;
  bool aligned;
};

// Every row of the operands is whole 16-byte units of `width` elements: aligned, and cols a multiple
// of width (the single-tile kernels' kWholeUnits form, WholeUnits).
inline bool whole_units(bool aligned, std::int64_t cols, int width) { return aligned && cols % width == 0; }
inline bool whole_units(const RowOperands& op, int width) { return whole_units(op.aligned, op.cols, width); }

struct LaunchContext {
  cudaStream_t stream;
  int device;
  int sm_count;
  void* workspace;
  std::size_t workspace_bytes;
};

constexpr std::int64_t kWarpPerRowMaxCols = 1024;
constexpr std::int64_t kBlockPerRowMaxCols = 32768;

void warp_per_row_forward(const RowOperands& op, const LaunchContext& ctx);
void warp_per_row_backward(const RowOperands& op, const LaunchContext& ctx);
void block_per_row_forward(const RowOperands& op, const LaunchContext& ctx);
void block_per_row_backward(const RowOperands& op, const LaunchContext& ctx);
// Blocks of block_per_row's backward that fit one SM (occupancy) for rows of `cols` columns, and their threads.
struct BlockResidency {
  int blocks, threads;
};
BlockResidency block_per_row_backward_residency(DType dtype, std::int64_t cols, bool aligned);
void block_online_forward(const RowOperands& op, const LaunchContext& ctx);
void block_online_backward(const RowOperands& op, const LaunchContext& ctx);
// Bytes of L2 that the two-pass plans (block_online, streamed split_row) let the rows between
// their two reads hold: kL2Share (0.7, softmax_block_online.cu) of the device's L2. Outputs and
// second reads are evict-first, so most of the rest is free; 0.7 was the v9 sweep's best cap.
double l2_reread_budget_bytes(int device);

// Whether every row block_online keeps in flight fits the L2 share between its two reads (at
// least min_rows_per_sm rows per SM fit) and the rows fill the grid it launches: then each row
// costs one DRAM read + one write.
bool block_online_rereads_from_l2(DType dtype, std::int64_t rows, std::int64_t cols, bool forward, int device,
                                  int sm_count, int min_rows_per_sm = 1);

std::size_t split_row_workspace_bytes(DType dtype, std::int64_t rows, std::int64_t cols, int device, int sm_count);
void split_row_forward(const RowOperands& op, const LaunchContext& ctx);
void split_row_backward(const RowOperands& op, const LaunchContext& ctx);
// The layout split_row launches for these operands (softmax_config's text).
std::string split_row_config(const RowOperands& op, bool forward, int device, int sm_count);

// Defined in softmax_split_row_stream_sm90a.cu (built only with CUDA_PORTFOLIO_HAS_SM90A): split_row's
// Hopper kernels, used when split_row_streams(op, device): sm_90, every operand's rows at the same
// offset from a 16-byte boundary, rows holding at least one whole 16-byte unit. The (dtype, cols)
// form leaves out the operands (for the auto choice).
bool split_row_streams(DType dtype, std::int64_t cols, int device);
bool split_row_streams(const RowOperands& op, int device);
std::size_t split_row_stream_workspace_bytes(DType dtype, std::int64_t rows, std::int64_t cols, int device,
                                             int sm_count);
void split_row_stream_forward(const RowOperands& op, const LaunchContext& ctx);
std::string split_row_stream_config(DType dtype, std::int64_t rows, std::int64_t cols, bool forward, int device,
                                    int sm_count);
void split_row_stream_backward(const RowOperands& op, const LaunchContext& ctx);

// Defined in softmax_cluster_split_row_sm90a.cu (built only with CUDA_PORTFOLIO_HAS_SM90A).
// "" when the cluster kernels can run on `device` (sm_90 and a cluster fits), else the reason.
std::string cluster_split_row_unsupported(int device);
void cluster_split_row_forward(const RowOperands& op, const LaunchContext& ctx);
void cluster_split_row_backward(const RowOperands& op, const LaunchContext& ctx);

}  // namespace cp::softmax_detail
