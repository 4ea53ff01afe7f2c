// Validation cases for softmax (every plan x dtype, forward and backward) against a float64 CPU
// reference computed from the same stored (rounded) inputs.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "app/harness.h"
#include "softmax/softmax.h"

namespace cp::app {
namespace {

// Relative Frobenius error against the float64 reference, allowed 1.1x the output format's own error on the case
// (the reference rounded to the dtype) plus fp32's 1e-5. A kernel computing in fp32 reads that format error to within
// the near-tie roundings its fp32 error moves (CPU emulation of the kernels' fp32 arithmetic on these cases' inputs,
// three seeds: within 0.91 of this bound; fp16 1M-column outputs are subnormals, 4.5e-3 of format error). Not a
// fixed 16-bit bound: against the rounded reference, bf16 inputs near 100 fall in 33 values a row, so one near-tie
// flips a whole value class (1.1e-3 on an H100, 2x50257), and a fixed bound against the unrounded one must cover
// fp16's subnormal rows on every shape (1e-2 until session 68).
double tolerance(DType dtype, const std::vector<double>& ref) {
  return 1.1 * relative_error(rounded_to(dtype, ref), ref) + 1e-5;
}

class SoftmaxCase final : public Case {
 public:
  // row_pad > 0 pads the row stride, so rows after the first start off 16-byte boundaries unless the padded
  // stride is a multiple of 16 bytes (fp32 2x131075 is): the kernels' misaligned tiles, whole units as 16-byte
  // accesses and the edges element by element. name() says which.
  SoftmaxCase(SoftmaxPlan plan, DType dtype, bool backward, std::int64_t rows, std::int64_t cols,
              std::int64_t row_pad, int device)
      : plan_(plan), dtype_(dtype), backward_(backward), rows_(rows), cols_(cols), stride_(cols + row_pad),
        device_(device), a_host_(dtype, 0), b_host_(dtype, 0), out_host_(dtype, 0) {}

  std::string name() const override {
    char buf[160];
    std::snprintf(buf, sizeof buf, "softmax %s %s %s %lldx%lld%s", backward_ ? "bwd" : "fwd",
                  softmax_plan_name(plan_), dtype_name(dtype_), static_cast<long long>(rows_),
                  static_cast<long long>(cols_), rows_misaligned() ? " (misaligned rows)" : "");
    return buf;
  }
  std::string kernel() const override {
    return std::string("softmax_parallel_") + softmax_plan_name(plan_) + (backward_ ? "_bwd" : "_fwd");
  }
  double bytes_moved() const override {
    return (backward_ ? 3.0 : 2.0) * static_cast<double>(rows_ * cols_) * dtype_size(dtype_);
  }

  void prepare(std::mt19937_64& rng) override {
    skip_reason_ = softmax_plan_unsupported(plan_, dtype_, rows_, cols_, device_);
    if (!skip_reason_.empty()) return;
    const std::size_t n = static_cast<std::size_t>(rows_ * stride_);
    a_host_ = HostTensor(dtype_, n);
    b_host_ = HostTensor(dtype_, n);
    out_host_ = HostTensor(dtype_, n);
    if (backward_) {
      // y: uniform, each row scaled to a mean of 1/cols (a distribution, as a softmax output is)
      // or, in fp16, 2^-10 (1/cols would be subnormal past ~16K columns). Unscaled uniform [0, 1)
      // rows made sum(y * dy) a random walk of ~sqrt(cols) against sum |y * dy| ~ cols/4: the
      // fp32 rounding of the dot then exceeded the tolerance on some seeds (2x131075: 4.5e-5).
      a_host_.fill_uniform(rng, 0.0f, 1.0f);
      const double mean = std::min(0.5, dtype_ == DType::F16 ? 1.0 / 1024 : 1.0 / static_cast<double>(cols_));
      for (std::int64_t r = 0; r < rows_; ++r) {
        const std::size_t row = static_cast<std::size_t>(r * stride_);
        double sum = 0.0;
        for (std::int64_t c = 0; c < cols_; ++c) sum += a_host_.get(row + c);
        const double scale = sum > 0.0 ? mean * static_cast<double>(cols_) / sum : 1.0;
        for (std::int64_t c = 0; c < cols_; ++c) a_host_.set(row + c, static_cast<float>(a_host_.get(row + c) * scale));
      }
      // dy, off zero-mean so that sum(y * dy) is about 0.25: a backward that drops or mis-exchanges the dot
      // is off by ~40% (with dy in [-1, 1] the dot was ~0.67 / sqrt(cols), under the 16-bit tolerance).
      b_host_.fill_uniform(rng, -0.75f, 1.25f);
    } else {
      // x; every other row 100 higher, where exp(x) without the row max overflows fp32: a kernel that skips
      // or mis-exchanges the max writes inf / NaN there (softmax is shift-invariant, so no other input shows it).
      a_host_.fill_uniform(rng, -8.0f, 8.0f);
      for (std::int64_t r = 1; r < rows_; r += 2)
        for (std::int64_t c = 0; c < cols_; ++c) {
          const std::size_t i = static_cast<std::size_t>(r * stride_ + c);
          a_host_.set(i, a_host_.get(i) + 100.0f);
        }
    }
    a_ = DeviceBuffer(a_host_.bytes());
    b_ = DeviceBuffer(backward_ ? b_host_.bytes() : 0);
    out_ = DeviceBuffer(out_host_.bytes());
    a_host_.upload(a_);
    if (backward_) b_host_.upload(b_);
    out_.poison();
    workspace_ = DeviceBuffer(softmax_workspace_bytes(plan_, dtype_, rows_, cols_, device_));
    workspace_.zero();  // once: split_row leaves its workspace zero after every launch
  }

  void launch(cudaStream_t stream) override {
    if (!skip_reason_.empty()) return;
    const RowsView out{out_.get(), rows_, cols_, stride_};
    if (backward_)
      softmax_backward(plan_, dtype_, ConstRowsView{a_.get(), rows_, cols_, stride_},
                       ConstRowsView{b_.get(), rows_, cols_, stride_}, out, workspace_.get(), workspace_.bytes(),
                       stream, device_);
    else
      softmax_forward(plan_, dtype_, ConstRowsView{a_.get(), rows_, cols_, stride_}, out, workspace_.get(),
                      workspace_.bytes(), stream, device_);
  }

  void poison_outputs() override { out_.poison(); }

  Verdict verify() override {
    if (!skip_reason_.empty()) return {false, "skipped: plan " + skip_reason_, true};
    HostTensor a_after(dtype_, a_host_.size());
    a_after.download(a_);
    if (!a_after.same_bytes(a_host_)) return {false, "input was modified"};
    if (backward_) {
      HostTensor b_after(dtype_, b_host_.size());
      b_after.download(b_);
      if (!b_after.same_bytes(b_host_)) return {false, "input dy was modified"};
    }
    if (!workspace_.all_zero(workspace_.bytes())) return {false, "the split_row workspace was left nonzero"};
    out_host_.download(out_);
    HostTensor out_rows(dtype_, static_cast<std::size_t>(rows_ * cols_));
    std::vector<double> ref(static_cast<std::size_t>(rows_ * cols_));
    for (std::int64_t r = 0; r < rows_; ++r) {
      const std::size_t in = static_cast<std::size_t>(r * stride_), o = static_cast<std::size_t>(r * cols_);
      for (std::int64_t c = 0; c < cols_; ++c) out_rows.set(o + c, out_host_.get(in + c));
      backward_ ? reference_backward(in, &ref[o]) : reference_forward(in, &ref[o]);
    }
    return compare_relative(out_rows, ref, tolerance(dtype_, ref));
  }

 private:
  bool rows_misaligned() const {
    return rows_ > 1 && stride_ * static_cast<std::int64_t>(dtype_size(dtype_)) % 16 != 0;
  }
  void reference_forward(std::size_t in, double* out) const {
    double m = -INFINITY, s = 0;
    for (std::int64_t c = 0; c < cols_; ++c) m = std::fmax(m, a_host_.get(in + c));
    for (std::int64_t c = 0; c < cols_; ++c) s += out[c] = std::exp(a_host_.get(in + c) - m);
    for (std::int64_t c = 0; c < cols_; ++c) out[c] /= s;
  }
  void reference_backward(std::size_t in, double* out) const {
    double dot = 0;
    for (std::int64_t c = 0; c < cols_; ++c) dot += double(a_host_.get(in + c)) * b_host_.get(in + c);
    for (std::int64_t c = 0; c < cols_; ++c) out[c] = a_host_.get(in + c) * (b_host_.get(in + c) - dot);
  }

  SoftmaxPlan plan_;
  DType dtype_;
  bool backward_;
  std::int64_t rows_, cols_, stride_;
  int device_;
  std::string skip_reason_;
  HostTensor a_host_, b_host_, out_host_;
  DeviceBuffer a_, b_, out_, workspace_;
};

struct Shape {
  std::int64_t rows, cols, row_pad;
};

// Odd column counts cover ragged ends; each plan also gets the long rows it exists for.
std::vector<Shape> shapes_for(SoftmaxPlan plan) {
  switch (plan) {
    case SoftmaxPlan::WarpPerRow: return {{37, 7, 0}, {300, 1000, 1}, {65, 1024, 0}};
    case SoftmaxPlan::BlockPerRow: return {{3, 1, 0}, {33, 1025, 1}, {8, 4097, 0}, {4, 32768, 0}};
    case SoftmaxPlan::BlockOnline: return {{3, 1, 0}, {5, 50257, 0}, {2, 131075, 1}};
    case SoftmaxPlan::SplitRow: return {{3, 7, 0}, {2, 50257, 1}, {4, 1 << 20, 0}};
    case SoftmaxPlan::ClusterSplitRow: return {{3, 7, 0}, {4, 50257, 1}, {2, 262147, 0}, {2, 1 << 20, 0}};
  }
  return {};
}

}  // namespace

void add_softmax_cases(CaseList& cases, int device) {
  auto add = [&](SoftmaxPlan plan, DType dtype, bool backward, Shape s) {
    cases.push_back(std::make_unique<SoftmaxCase>(plan, dtype, backward, s.rows, s.cols, s.row_pad, device));
  };
  // 1-6: small forward validations, one launch each.
  add(SoftmaxPlan::WarpPerRow, DType::F32, false, {5, 7, 0});
  add(SoftmaxPlan::WarpPerRow, DType::BF16, false, {3, 100, 0});
  add(SoftmaxPlan::BlockPerRow, DType::F32, false, {4, 1025, 0});
  add(SoftmaxPlan::BlockPerRow, DType::BF16, false, {2, 4097, 0});
  add(SoftmaxPlan::WarpPerRow, DType::F16, false, {37, 1, 0});
  add(SoftmaxPlan::BlockPerRow, DType::F32, false, {3, 1000, 3});
  // 7: the profiling target (ncu --launch-skip 6 --launch-count 1).
  add(SoftmaxPlan::WarpPerRow, DType::F32, false, {1024, 1024, 0});
  // 8..: every plan x dtype, forward and backward.
  for (const std::string& name : softmax_plan_names())
    for (DType dtype : {DType::F32, DType::F16, DType::BF16})
      for (bool backward : {false, true})
        for (const Shape& s : shapes_for(parse_softmax_plan(name))) add(parse_softmax_plan(name), dtype, backward, s);
}

}  // namespace cp::app
