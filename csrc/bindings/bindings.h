// One bind_<op>() per op file; module.cpp calls each. Arguments are plain integers (device
// pointers, sizes, strides in elements, the cudaStream_t of torch's current stream, the
// device index), so the module never links libtorch and works across torch versions.
#pragma once
#include <pybind11/pybind11.h>

#include <cstdint>

#include <cuda_runtime.h>

namespace cp {

inline cudaStream_t as_stream(std::uintptr_t stream) { return reinterpret_cast<cudaStream_t>(stream); }
template <typename T = void>
inline T* as_ptr(std::uintptr_t p) { return reinterpret_cast<T*>(p); }

void bind_device(pybind11::module_& m);
void bind_copy(pybind11::module_& m);
void bind_gemm(pybind11::module_& m);
void bind_softmax(pybind11::module_& m);

}  // namespace cp
