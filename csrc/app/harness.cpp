#include "app/harness.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <utility>

namespace cp::app {

DeviceBuffer::DeviceBuffer(std::size_t bytes) : bytes_(bytes) {
  if (bytes_ > 0) CP_CUDA_CHECK(cudaMalloc(&ptr_, bytes_));
}
DeviceBuffer::~DeviceBuffer() {
  if (ptr_) cudaFree(ptr_);
}
DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept
    : ptr_(std::exchange(other.ptr_, nullptr)), bytes_(std::exchange(other.bytes_, 0)) {}
DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    if (ptr_) cudaFree(ptr_);
    ptr_ = std::exchange(other.ptr_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}
void DeviceBuffer::poison() {
  if (bytes_ > 0) CP_CUDA_CHECK(cudaMemset(ptr_, 0xFF, bytes_));
}

void DeviceBuffer::zero() {
  if (bytes_ > 0) CP_CUDA_CHECK(cudaMemset(ptr_, 0, bytes_));
}

bool DeviceBuffer::all_zero(std::size_t bytes) const {
  std::vector<unsigned char> host(std::min(bytes, bytes_));
  if (!host.empty()) CP_CUDA_CHECK(cudaMemcpy(host.data(), ptr_, host.size(), cudaMemcpyDeviceToHost));
  for (unsigned char b : host)
    if (b != 0) return false;
  return true;
}

HostTensor::HostTensor(DType dtype, std::size_t n) : dtype_(dtype), n_(n), bytes_(n * dtype_size(dtype)) {}

float HostTensor::get(std::size_t i) const {
  switch (dtype_) {
    case DType::F32: {
      float v;
      std::memcpy(&v, bytes_.data() + 4 * i, 4);
      return v;
    }
    case DType::F16: {
      __half v;
      std::memcpy(&v, bytes_.data() + 2 * i, 2);
      return __half2float(v);
    }
    case DType::BF16: {
      __nv_bfloat16 v;
      std::memcpy(&v, bytes_.data() + 2 * i, 2);
      return __bfloat162float(v);
    }
  }
  return 0.0f;
}

void HostTensor::set(std::size_t i, float v) {
  switch (dtype_) {
    case DType::F32: std::memcpy(bytes_.data() + 4 * i, &v, 4); break;
    case DType::F16: {
      const __half h = __float2half_rn(v);
      std::memcpy(bytes_.data() + 2 * i, &h, 2);
      break;
    }
    case DType::BF16: {
      const __nv_bfloat16 b = __float2bfloat16_rn(v);
      std::memcpy(bytes_.data() + 2 * i, &b, 2);
      break;
    }
  }
}

void HostTensor::fill_uniform(std::mt19937_64& rng, float lo, float hi) {
  std::uniform_real_distribution<float> dist(lo, hi);
  for (std::size_t i = 0; i < n_; ++i) set(i, dist(rng));
}

void HostTensor::upload(const DeviceBuffer& dst) const {
  CP_CUDA_CHECK(cudaMemcpy(dst.get(), bytes_.data(), bytes_.size(), cudaMemcpyHostToDevice));
}

void HostTensor::download(const DeviceBuffer& src) {
  CP_CUDA_CHECK(cudaMemcpy(bytes_.data(), src.get(), bytes_.size(), cudaMemcpyDeviceToHost));
}

std::vector<double> rounded_to(DType dtype, const std::vector<double>& ref) {
  HostTensor rounded(dtype, ref.size());
  std::vector<double> out(ref.size());
  for (std::size_t i = 0; i < ref.size(); ++i) {
    rounded.set(i, static_cast<float>(ref[i]));
    out[i] = rounded.get(i);
  }
  return out;
}

double relative_error(const std::vector<double>& a, const std::vector<double>& ref) {
  double diff2 = 0.0, ref2 = 0.0;
  for (std::size_t i = 0; i < ref.size(); ++i) {
    diff2 += (a[i] - ref[i]) * (a[i] - ref[i]);
    ref2 += ref[i] * ref[i];
  }
  return ref2 > 0 ? std::sqrt(diff2 / ref2) : std::sqrt(diff2);
}

Verdict compare_relative(const HostTensor& out, const std::vector<double>& ref, double tolerance) {
  std::vector<double> values(ref.size());
  std::size_t unwritten = 0;
  for (std::size_t i = 0; i < ref.size(); ++i) {
    values[i] = out.get(i);
    if (std::isnan(values[i]) && !std::isnan(ref[i])) ++unwritten;
  }
  Verdict v;
  if (unwritten > 0) {
    v.detail = std::to_string(unwritten) + " of " + std::to_string(ref.size()) + " outputs NaN/unwritten";
    return v;
  }
  const double rel = relative_error(values, ref);
  char buf[96];
  std::snprintf(buf, sizeof buf, "rel_err=%.2e (tol %.2g)", rel, tolerance);
  v.detail = buf;
  v.passed = rel <= tolerance;
  return v;
}

}  // namespace cp::app
