// A 2-D view of a row-wise operand: `rows` rows of `cols` contiguous elements, consecutive rows
// `row_stride` elements apart. Python reshapes any tensor (any dim, non-contiguous leading
// dims) into this form before calling the native module, so kernels see one layout.
#pragma once
#include <cstdint>

#include "common/dtype.h"

namespace cp {

struct RowsView {
  void* data;
  std::int64_t rows;
  std::int64_t cols;
  std::int64_t row_stride;  // in elements
};

struct ConstRowsView {
  const void* data;
  std::int64_t rows;
  std::int64_t cols;
  std::int64_t row_stride;  // in elements
};

}  // namespace cp
