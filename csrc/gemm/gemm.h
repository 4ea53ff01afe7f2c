// GEMM C = A @ B (A: M x K, B: K x N, C: M x N), fp32 accumulation, C's dtype = A's = B's.
// A ladder of kernels kept side by side (like llm.c dev/cuda), each selectable by name:
//   naive -> smem_tiled -> register_blocked -> mma_sync -> wgmma_tma (sm_90a).
// The Python module and the executable both call gemm() below: the one place that picks the
// version, grid, block, shared memory and plan.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>
#include <string>
#include <vector>

#include "common/dtype.h"

namespace cp {

// A strided 2-D operand: element (r, c) lives at data[r * row_stride + c * col_stride]
// (strides in elements), so row-major (col_stride == 1) and column-major (row_stride == 1)
// matrices reach the kernels without a copy where a version supports that layout.
struct ConstMatrixView {
  const void* data;
  std::int64_t rows, cols;
  std::int64_t row_stride, col_stride;
};

struct MatrixView {
  void* data;
  std::int64_t rows, cols;
  std::int64_t row_stride, col_stride;
};

// The kernel names in ladder order.
const std::vector<std::string>& gemm_kernels();

// "" when `kernel` can run these operands on `device`, otherwise the reason (unknown name,
// dtype, layout, alignment, architecture, shape mismatch). gemm() throws std::invalid_argument
// with the same text. Not checked here: the launchers' 32-bit size limits (output tiles under
// 2^31 in register_blocked, mma_sync and wgmma_tma, wgmma_tma's M, N and K under 2^31,
// register_blocked's K under 2^35), which gemm() alone enforces; smem_tiled needs none (its grid
// is ceil(N / 32) blocks wide, grid-strided over M).
std::string gemm_check(const std::string& kernel, DType dtype, bool allow_tf32, const ConstMatrixView& a,
                       const ConstMatrixView& b, const MatrixView& c, int device);

// The part of gemm_check that no operands can change: "" when this build has `kernel` for `dtype` and
// `device` can run it, otherwise the reason (the executable skips such cases instead of failing them).
std::string gemm_device_unsupported(const std::string& kernel, DType dtype, int device);

// Bytes of device scratch gemm() needs for this call (split K: tile counters and fp32 partial
// tiles, 16-byte aligned); 0 for most calls. The caller owns the scratch, so that no launch
// allocates or synchronises, and zeroes it once when it allocates it: the counters must be zero
// at launch and every launch leaves them zero (no memset per call). Launches that may run at the
// same time need scratch of their own (Python keeps one per device and stream; the executable one
// per case).
std::size_t gemm_workspace_bytes(const std::string& kernel, DType dtype, const ConstMatrixView& a,
                                 const ConstMatrixView& b, int device);
// The leading bytes of that scratch which every launch leaves zero (the split-K tile counters; the partial tiles
// after them keep what the last launch wrote): what a caller may check after a launch. 0 when there is no scratch.
std::size_t gemm_workspace_zeroed_bytes(const std::string& kernel, DType dtype, const ConstMatrixView& a,
                                        const ConstMatrixView& b, int device);

// The tile configuration `kernel` takes for C = A @ B on a GPU of sm_count SMs, for the kernels
// that choose one per call (wgmma_tma: tile, stages, split K, from the shape and the operands'
// alignment; the benchmark records it); "" for the others, whose one tile their file's header
// names. Host-side only (the views' pointers are read, never dereferenced): no GPU needed.
std::string gemm_config(const std::string& kernel, const ConstMatrixView& a, const ConstMatrixView& b, int sm_count);

// C = A @ B on `stream`. fp32 inputs use tf32 tensor cores only when allow_tf32 and the
// version has a tf32 path; otherwise they are computed in fp32.
void gemm(const std::string& kernel, DType dtype, bool allow_tf32, const ConstMatrixView& a,
          const ConstMatrixView& b, const MatrixView& c, void* workspace, std::size_t workspace_bytes,
          cudaStream_t stream, int device);

}  // namespace cp
