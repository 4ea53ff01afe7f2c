#include <pybind11/stl.h>

#include <string>
#include <utility>

#include "bindings/bindings.h"

namespace py = pybind11;

namespace cp {

void bind_device(py::module_& m) {
  m.def(
      "device_count",
      []() -> std::pair<int, std::string> {
        int n = 0;
        const cudaError_t err = cudaGetDeviceCount(&n);
        if (err != cudaSuccess) {
          cudaGetLastError();  // clear the sticky-free error so later calls start clean
          return {0, std::string(cudaGetErrorName(err)) + ": " + cudaGetErrorString(err)};
        }
        return {n, n == 0 ? "no CUDA device found" : ""};
      },
      "(count, reason): how many CUDA devices the statically linked runtime sees, and why none if 0.");
  m.def(
      "compute_capability",
      [](int device) -> std::pair<int, int> {
        int major = 0, minor = 0;
        cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device);
        cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device);
        return {major, minor};
      },
      py::arg("device"));
  m.def("runtime_version", []() {
    int v = 0;
    cudaRuntimeGetVersion(&v);
    return v;
  });
#ifdef CUDA_PORTFOLIO_HAS_SM90A
  m.attr("has_sm90a_kernels") = true;
#else
  m.attr("has_sm90a_kernels") = false;
#endif
}

}  // namespace cp
