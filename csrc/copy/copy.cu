// copy_masked: one thread per element, grid-stride over columns (x) and rows (y), every
// access bounds-checked. Bound: bytes (read n + write n), coalesced along each row.
// copy_unmasked_negative_control: the same without the bounds check (see copy.h).
#include "copy/copy.h"

#include <algorithm>

#include "common/cuda_check.h"
#include "common/dispatch.h"

namespace cp {
namespace {

constexpr int kCopyThreads = 256;

template <typename T>
__global__ void copy_masked_kernel(const T* __restrict__ src, std::int64_t src_row_stride, T* __restrict__ dst,
                                   std::int64_t dst_row_stride, std::int64_t rows, std::int64_t cols) {
  for (std::int64_t r = blockIdx.y; r < rows; r += gridDim.y) {
    for (std::int64_t c = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; c < cols;
         c += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
      dst[r * dst_row_stride + c] = src[r * src_row_stride + c];
    }
  }
}

template <typename T>
__global__ void copy_unmasked_negative_control_kernel(const T* src, T* dst) {
  const std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
  dst[i] = src[i];  // no `if (i < n)`: out of bounds in the last block on purpose
}

}  // namespace

void copy_rows(DType dtype, ConstRowsView src, RowsView dst, cudaStream_t stream, int device) {
  if (src.rows != dst.rows || src.cols != dst.cols)
    throw std::invalid_argument("copy_rows: source and destination shapes differ");
  if (src.rows == 0 || src.cols == 0) return;
  DeviceGuard guard(device);
  const std::int64_t col_blocks = std::min<std::int64_t>((src.cols + kCopyThreads - 1) / kCopyThreads, 1 << 20);
  const std::int64_t row_blocks = std::min<std::int64_t>(src.rows, 65535);
  const dim3 grid(static_cast<unsigned>(col_blocks), static_cast<unsigned>(row_blocks));
  CP_DISPATCH_FLOAT_TYPES(dtype, T, {
    copy_masked_kernel<T><<<grid, kCopyThreads, 0, stream>>>(static_cast<const T*>(src.data), src.row_stride,
                                                             static_cast<T*>(dst.data), dst.row_stride, src.rows,
                                                             src.cols);
  })
  CP_CHECK_LAUNCH("copy_masked_kernel");
}

std::int64_t copy_negative_control_padded(std::int64_t n) {
  return (n + kCopyThreads - 1) / kCopyThreads * kCopyThreads;
}

void copy_unmasked_negative_control(DType dtype, const void* src, void* dst, std::int64_t n, cudaStream_t stream,
                                    int device) {
  if (n <= 0) return;
  DeviceGuard guard(device);
  const std::int64_t blocks = copy_negative_control_padded(n) / kCopyThreads;
  CP_DISPATCH_FLOAT_TYPES(dtype, T, {
    copy_unmasked_negative_control_kernel<T><<<static_cast<unsigned>(blocks), kCopyThreads, 0, stream>>>(
        static_cast<const T*>(src), static_cast<T*>(dst));
  })
  CP_CHECK_LAUNCH("copy_unmasked_negative_control_kernel");
}

}  // namespace cp
