// Element types the kernels accept, shared by host launchers, bindings and the executable.
#pragma once
#include <cstddef>
#include <stdexcept>
#include <string>

namespace cp {

enum class DType { F32, F16, BF16 };

inline std::size_t dtype_size(DType t) { return t == DType::F32 ? 4 : 2; }

inline const char* dtype_name(DType t) {
  switch (t) {
    case DType::F32: return "float32";
    case DType::F16: return "float16";
    case DType::BF16: return "bfloat16";
  }
  return "?";
}

// Accepts torch's names ("float32", "float16", "bfloat16") and the short ones.
inline DType parse_dtype(const std::string& name) {
  if (name == "float32" || name == "fp32" || name == "f32") return DType::F32;
  if (name == "float16" || name == "fp16" || name == "f16" || name == "half") return DType::F16;
  if (name == "bfloat16" || name == "bf16") return DType::BF16;
  throw std::invalid_argument("unsupported dtype '" + name + "': supported are float32, float16, bfloat16");
}

}  // namespace cp
