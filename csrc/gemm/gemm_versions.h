// The launchers of each ladder version, called only by gemm.cu (which has already checked the
// operands against the version's requirements listed here). One file per version.
#pragma once
#include <cuda_runtime.h>

#include <cstddef>
#include <string>

#include "gemm/gemm.h"

namespace cp::gemm_versions {

// 1. any strides, fp32/fp16/bf16.
void naive(DType dtype, const ConstMatrixView& a, const ConstMatrixView& b, const MatrixView& c,
           cudaStream_t stream);
// 2. any strides, fp32/fp16/bf16.
void smem_tiled(DType dtype, const ConstMatrixView& a, const ConstMatrixView& b, const MatrixView& c,
                cudaStream_t stream);
// 3. any strides, fp32/fp16/bf16; 4-element vector loads (16 B fp32, 8 B fp16/bf16) where an
//    operand's rows allow them.
void register_blocked(DType dtype, const ConstMatrixView& a, const ConstMatrixView& b, const MatrixView& c,
                      cudaStream_t stream);
// 4. fp16/bf16; A row-major and B row-major (unit column stride), row strides and base
//    pointers 16-byte aligned (cp.async moves 16-byte chunks).
void mma_sync(DType dtype, const ConstMatrixView& a, const ConstMatrixView& b, const MatrixView& c,
              cudaStream_t stream);

// 5. sm_90a, fp16/bf16 (declared always, defined only in builds with CUDA_PORTFOLIO_HAS_SM90A); each operand row- or column-major with 16-byte aligned strides and
//    base pointer (TMA). Split K uses `workspace` (16-byte aligned, zeroed once by its owner: see
//    gemm_workspace_bytes) for per-tile counters and fp32 partial tiles, reduced in the kernel.
//    wgmma_tma_config names the tile, stages and split K one call takes (tile_plan: the shape,
//    and whether B's lines start off 32-byte sectors while A's start on them).
std::size_t wgmma_tma_workspace_bytes(std::int64_t m, std::int64_t n, std::int64_t k, int sm_count);
std::size_t wgmma_tma_counter_bytes(int sm_count);  // the workspace's leading counter region (left zero)
std::string wgmma_tma_config(const ConstMatrixView& a, const ConstMatrixView& b, int sm_count);
void wgmma_tma(DType dtype, const ConstMatrixView& a, const ConstMatrixView& b, const MatrixView& c,
               void* workspace, std::size_t workspace_bytes, int sm_count, cudaStream_t stream);

}  // namespace cp::gemm_versions
