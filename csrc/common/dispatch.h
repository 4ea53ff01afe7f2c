// Maps a runtime DType to the CUDA storage type for a templated launcher body.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "common/dtype.h"

#define CP_DISPATCH_FLOAT_TYPES(dtype, T, ...)            \
  switch (dtype) {                                        \
    case ::cp::DType::F32: { using T = float; __VA_ARGS__ } break;          \
    case ::cp::DType::F16: { using T = __half; __VA_ARGS__ } break;         \
    case ::cp::DType::BF16: { using T = __nv_bfloat16; __VA_ARGS__ } break; \
  }
