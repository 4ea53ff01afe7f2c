#include "bindings/bindings.h"

PYBIND11_MODULE(_native, m) {
  m.doc() = "cuda_portfolio native kernels (CUDA C++). Called through cuda_portfolio.native, not directly.";
  cp::bind_device(m);
  cp::bind_copy(m);
  cp::bind_gemm(m);
  cp::bind_softmax(m);
}
