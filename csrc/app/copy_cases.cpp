// Validation cases for the copy op: the CPU reference is the input itself (a copy is exact).
#include <cstdio>

#include "app/harness.h"
#include "copy/copy.h"

namespace cp::app {
namespace {

class CopyCase final : public Case {
 public:
  CopyCase(DType dtype, std::int64_t rows, std::int64_t cols, std::int64_t src_row_stride, int device)
      : dtype_(dtype), rows_(rows), cols_(cols), src_stride_(src_row_stride), device_(device),
        src_host_(dtype, 0), dst_host_(dtype, 0) {}

  std::string name() const override {
    char buf[128];
    std::snprintf(buf, sizeof buf, "copy_masked %s %lldx%lld (src row stride %lld)", dtype_name(dtype_),
                  static_cast<long long>(rows_), static_cast<long long>(cols_), static_cast<long long>(src_stride_));
    return buf;
  }
  std::string kernel() const override { return "copy_masked"; }
  double bytes_moved() const override { return 2.0 * static_cast<double>(rows_ * cols_) * dtype_size(dtype_); }

  void prepare(std::mt19937_64& rng) override {
    src_host_ = HostTensor(dtype_, static_cast<std::size_t>(rows_ * src_stride_));
    dst_host_ = HostTensor(dtype_, static_cast<std::size_t>(rows_ * cols_));
    src_host_.fill_uniform(rng, -4.0f, 4.0f);
    src_ = DeviceBuffer(src_host_.bytes());
    dst_ = DeviceBuffer(dst_host_.bytes());
    src_host_.upload(src_);
    dst_.poison();
  }

  void launch(cudaStream_t stream) override {
    copy_rows(dtype_, ConstRowsView{src_.get(), rows_, cols_, src_stride_}, RowsView{dst_.get(), rows_, cols_, cols_},
              stream, device_);
  }

  void poison_outputs() override { dst_.poison(); }

  Verdict verify() override {
    HostTensor src_after(dtype_, src_host_.size());
    src_after.download(src_);
    if (!src_after.same_bytes(src_host_)) return {false, "input was modified"};
    dst_host_.download(dst_);
    std::vector<double> ref(static_cast<std::size_t>(rows_ * cols_));
    for (std::int64_t r = 0; r < rows_; ++r)
      for (std::int64_t c = 0; c < cols_; ++c)
        ref[static_cast<std::size_t>(r * cols_ + c)] = src_host_.get(static_cast<std::size_t>(r * src_stride_ + c));
    return compare_relative(dst_host_, ref, 0.0);
  }

 private:
  DType dtype_;
  std::int64_t rows_, cols_, src_stride_;
  int device_;
  HostTensor src_host_, dst_host_;
  DeviceBuffer src_, dst_;
};

}  // namespace

void add_copy_cases(CaseList& cases, int device) {
  for (DType dtype : {DType::F32, DType::BF16}) {
    cases.push_back(std::make_unique<CopyCase>(dtype, 1, 1, 1, device));
    cases.push_back(std::make_unique<CopyCase>(dtype, 37, 1000, 1003, device));
    cases.push_back(std::make_unique<CopyCase>(dtype, 1, (1 << 24) + 3, (1 << 24) + 3, device));
  }
}

}  // namespace cp::app
