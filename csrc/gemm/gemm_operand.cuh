// Device-side strided operand access shared by the SIMT versions (1-3): element (r, c) of a
// matrix at p[r * row_stride + c * col_stride], with 64-bit offsets so matrices past 2^31
// elements index correctly.
#pragma once
#include <cstdint>

#include "common/numeric.cuh"
#include "gemm/gemm.h"

namespace cp {

template <typename T>
struct StridedIn {
  const T* __restrict__ p;
  std::int64_t row_stride, col_stride;
  __device__ __forceinline__ float at(std::int64_t r, std::int64_t c) const {
    return to_float(p[r * row_stride + c * col_stride]);
  }
};

template <typename T>
struct RowMajorOut {
  T* __restrict__ p;
  std::int64_t row_stride;
  __device__ __forceinline__ void store(std::int64_t r, std::int64_t c, float v) const {
    p[r * row_stride + c] = from_float<T>(v);
  }
};

template <typename T>
StridedIn<T> strided_in(const ConstMatrixView& v) {
  return {static_cast<const T*>(v.data), v.row_stride, v.col_stride};
}

template <typename T>
RowMajorOut<T> row_major_out(const MatrixView& v) {
  return {static_cast<T*>(v.data), v.row_stride};
}

}  // namespace cp
