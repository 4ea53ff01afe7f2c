// Error handling shared by every host launcher: a failed CUDA call becomes a C++ exception
// (pybind11 turns it into a Python RuntimeError; the executable prints it and fails the case).
#pragma once
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

namespace cp {

inline void check_cuda(cudaError_t err, const char* what, const char* file, int line) {
  if (err != cudaSuccess) {
    throw std::runtime_error(std::string(what) + " failed: " + cudaGetErrorName(err) + " (" +
                             cudaGetErrorString(err) + ") at " + file + ":" + std::to_string(line));
  }
}

// Makes `device` current for the lifetime of the guard. The native module links the CUDA
// runtime statically, so its notion of the current device is separate from torch's: every
// launcher takes the device index explicitly and sets it here.
class DeviceGuard {
 public:
  explicit DeviceGuard(int device) {
    check_cuda(cudaGetDevice(&previous_), "cudaGetDevice", __FILE__, __LINE__);
    if (previous_ != device) check_cuda(cudaSetDevice(device), "cudaSetDevice", __FILE__, __LINE__);
  }
  ~DeviceGuard() {
    int now = -1;
    if (cudaGetDevice(&now) == cudaSuccess && now != previous_) cudaSetDevice(previous_);
  }
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = 0;
};

}  // namespace cp

#define CP_CUDA_CHECK(expr) ::cp::check_cuda((expr), #expr, __FILE__, __LINE__)
// Call right after a <<<...>>> launch: reports bad launch configurations immediately.
#define CP_CHECK_LAUNCH(kernel_name) ::cp::check_cuda(cudaGetLastError(), kernel_name " launch", __FILE__, __LINE__)
