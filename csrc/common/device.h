// Device queries every host launcher needs (the GEMM and softmax dispatchers, the sm_90a plans).
#pragma once
#include <cuda_runtime.h>

#include "common/cuda_check.h"

namespace cp {

struct ComputeCapability {
  int major = 0, minor = 0;
};

inline ComputeCapability compute_capability(int device) {
  ComputeCapability cc;
  CP_CUDA_CHECK(cudaDeviceGetAttribute(&cc.major, cudaDevAttrComputeCapabilityMajor, device));
  CP_CUDA_CHECK(cudaDeviceGetAttribute(&cc.minor, cudaDevAttrComputeCapabilityMinor, device));
  return cc;
}

inline int sm_count(int device) {
  int n = 0;
  CP_CUDA_CHECK(cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, device));
  return n;
}

}  // namespace cp
