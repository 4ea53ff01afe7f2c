// Elementwise copy: the first op wired end to end (Python -> bindings -> launcher -> kernel,
// and executable -> the same launcher). Its unmasked twin exists only as the Compute
// Sanitizer negative control.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "common/rows.h"

namespace cp {

// dst[r, c] = src[r, c] for every row r < rows and column c < cols. Bounds-checked.
void copy_rows(DType dtype, ConstRowsView src, RowsView dst, cudaStream_t stream, int device);

// DELIBERATELY BROKEN: copies `n` contiguous elements with no bounds check, rounding the grid
// up to whole 256-thread blocks, so it writes past the end of `dst` whenever n % 256 != 0.
// `src` must hold copy_negative_control_padded(n) elements, so the write is the only bad access.
// Used only to show that compute-sanitizer memcheck reports the invalid access; never called
// by default (executable: --negative-control; Python: cuda_portfolio.native.copy_unmasked_negative_control).
std::int64_t copy_negative_control_padded(std::int64_t n);
void copy_unmasked_negative_control(DType dtype, const void* src, void* dst, std::int64_t n, cudaStream_t stream,
                                    int device);

}  // namespace cp
