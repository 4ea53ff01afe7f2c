// Maps a runtime DType to the CUDA storage type for a templated launcher body, and a runtime
// flag to a template argument.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <type_traits>

#include "common/dtype.h"

#define CP_DISPATCH_FLOAT_TYPES(dtype, T, ...)            \
  switch (dtype) {                                        \
    case ::cp::DType::F32: { using T = float; __VA_ARGS__ } break;          \
    case ::cp::DType::F16: { using T = __half; __VA_ARGS__ } break;         \
    case ::cp::DType::BF16: { using T = __nv_bfloat16; __VA_ARGS__ } break; \
  }

namespace cp {
// Calls f(std::true_type{}) or f(std::false_type{}): `flag` as a compile-time constant in f.
template <typename F>
void dispatch_flag(bool flag, F&& f) {
  if (flag) {
    f(std::true_type{});
  } else {
    f(std::false_type{});
  }
}
}  // namespace cp
