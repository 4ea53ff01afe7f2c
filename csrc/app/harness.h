// The executable's test/timing harness: every kernel the executable knows is a Case; main.cpp
// runs the cases in one fixed order (see cases.cpp) so a profiler's --launch-skip selects a
// known launch. CPU references live in the *_cases.cpp files beside the cases, never in csrc/<op>/.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "common/cuda_check.h"
#include "common/dtype.h"

namespace cp::app {

// Owns one device allocation.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& other) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  void* get() const { return ptr_; }
  std::size_t bytes() const { return bytes_; }
  void poison();  // every byte 0xFF: NaN in fp32, fp16 and bf16, so unwritten elements show
  void zero();
  bool all_zero(std::size_t bytes) const;  // its first `bytes` (downloaded): what a kernel must leave zero

 private:
  void* ptr_ = nullptr;
  std::size_t bytes_ = 0;
};

// Host copy of a tensor in its storage type, read and written as float.
class HostTensor {
 public:
  HostTensor(DType dtype, std::size_t n);
  DType dtype() const { return dtype_; }
  std::size_t size() const { return n_; }
  std::size_t bytes() const { return bytes_.size(); }
  float get(std::size_t i) const;
  void set(std::size_t i, float v);
  void* data() { return bytes_.data(); }
  const void* data() const { return bytes_.data(); }
  void fill_uniform(std::mt19937_64& rng, float lo, float hi);
  void upload(const DeviceBuffer& dst) const;
  void download(const DeviceBuffer& src);
  bool same_bytes(const HostTensor& other) const { return bytes_ == other.bytes_; }

 private:
  DType dtype_;
  std::size_t n_;
  std::vector<unsigned char> bytes_;
};

struct Verdict {
  bool passed = false;
  std::string detail;  // e.g. "rel_err=3.1e-08 (tol 1e-05)"
  bool skipped = false;  // not run here (the device or build lacks the kernel): neither passed nor failed
};

// `ref` rounded to `dtype` (through float, as HostTensor::set stores): what a correct kernel's one final rounding
// gives, so the 16-bit checks measure the kernel's own error, not the output format's.
std::vector<double> rounded_to(DType dtype, const std::vector<double>& ref);

// ||a - ref|| / ||ref|| (||a - ref|| where ref is all zero).
double relative_error(const std::vector<double>& a, const std::vector<double>& ref);

// ||out - ref|| / ||ref|| in double; NaN in `out` where `ref` is finite fails the check.
Verdict compare_relative(const HostTensor& out, const std::vector<double>& ref, double tolerance);

class Case {
 public:
  virtual ~Case() = default;
  virtual std::string name() const = 0;    // one line in --test-only output
  virtual std::string kernel() const = 0;  // the kernel family launched (for --list and JSON)
  virtual double bytes_moved() const { return 0; }
  virtual double flops() const { return 0; }
  // Fresh random inputs on the device, outputs poisoned with NaN.
  virtual void prepare(std::mt19937_64& rng) = 0;
  // Exactly one call of the op's host launcher (the same one the Python module calls).
  virtual void launch(cudaStream_t stream) = 0;
  // Outputs poisoned again (inputs and workspace kept), before the launch checked after timing.
  virtual void poison_outputs() = 0;
  // Against the CPU reference; also checks that the inputs are unchanged.
  virtual Verdict verify() = 0;
};

using CaseList = std::vector<std::unique_ptr<Case>>;

// All cases in launch order (defined in cases.cpp).
CaseList all_cases(int device);

// Per-op registration, each in <op>_cases.cpp.
void add_copy_cases(CaseList& cases, int device);
void add_gemm_cases(CaseList& cases, int device);
void add_softmax_cases(CaseList& cases, int device);

}  // namespace cp::app
