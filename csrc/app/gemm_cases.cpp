// Validation cases for the GEMM ladder: every version x supported dtype at odd, tile-multiple
// and 1024-class shapes, row-major operands. The float64 CPU reference is computed once per
// (dtype, shape) per run and shared by the versions (a 1024^3 reference is ~2 GFLOP).
// One kernel launch per case; wgmma_tma splitting K (1024^3: 4 slices) uses tile counters in the
// case's workspace, zeroed once when it is allocated (each launch leaves them zero).
// 100x8456x520 (133 tiles 64 wide) takes wgmma_tma's 128 x 64 tiles on GPUs of up to 147 SMs.
#include <cstdio>
#include <map>
#include <memory>
#include <tuple>

#include "app/harness.h"
#include "gemm/gemm.h"

namespace cp::app {
namespace {

// Relative Frobenius error against the rounded product (GemmProblem::rounded_ref): an fp32 accumulator differs from it
// only where its sum moved a rounding (about 1e-5 in a CPU emulation), a 16-bit one by 1.2e-3 (fp16, K = 1023) and
// 3.5e-3 (bf16, K = 65); the 16-bit bounds leave room for tensor-core accumulation rounding
// (as in tests/gpu_matmul_cases.py).
double tolerance(DType dtype) {
  switch (dtype) {
    case DType::F32: return 1e-5;
    case DType::F16: return 5e-4;
    case DType::BF16: return 2e-3;
  }
  return 0;
}

// Inputs in storage precision and their float64 product, made on first use.
struct GemmProblem {
  DType dtype;
  std::int64_t m, n, k;
  HostTensor a, b;
  std::vector<double> rounded_ref;  // the float64 product rounded to the output dtype (a correct kernel's one rounding)
  bool ready = false;

  GemmProblem(DType t, std::int64_t m_, std::int64_t n_, std::int64_t k_)
      : dtype(t), m(m_), n(n_), k(k_), a(t, static_cast<std::size_t>(m_ * k_)), b(t, static_cast<std::size_t>(k_ * n_)) {}

  void ensure(std::mt19937_64& rng) {
    if (ready) return;
    a.fill_uniform(rng, -1.0f, 1.0f);
    b.fill_uniform(rng, -1.0f, 1.0f);
    std::vector<double> ad(a.size()), bd(b.size());
    for (std::size_t i = 0; i < ad.size(); ++i) ad[i] = a.get(i);
    for (std::size_t i = 0; i < bd.size(); ++i) bd[i] = b.get(i);
    std::vector<double> ref(static_cast<std::size_t>(m * n), 0.0);
    for (std::int64_t i = 0; i < m; ++i)
      for (std::int64_t p = 0; p < k; ++p) {
        const double av = ad[static_cast<std::size_t>(i * k + p)];
        const double* brow = &bd[static_cast<std::size_t>(p * n)];
        double* crow = &ref[static_cast<std::size_t>(i * n)];
        for (std::int64_t j = 0; j < n; ++j) crow[j] += av * brow[j];
      }
    rounded_ref = rounded_to(dtype, ref);
    ready = true;
  }
};

class GemmCase final : public Case {
 public:
  GemmCase(std::string kernel, std::shared_ptr<GemmProblem> problem, int device)
      : kernel_(std::move(kernel)), p_(std::move(problem)), device_(device), c_host_(p_->dtype, 0) {}

  std::string name() const override {
    char buf[128];
    std::snprintf(buf, sizeof buf, "gemm %s %s %lldx%lldx%lld (MxNxK)", kernel_.c_str(), dtype_name(p_->dtype),
                  static_cast<long long>(p_->m), static_cast<long long>(p_->n), static_cast<long long>(p_->k));
    return buf;
  }
  std::string kernel() const override { return "gemm_" + kernel_; }
  double flops() const override { return 2.0 * static_cast<double>(p_->m) * p_->n * p_->k; }

  void prepare(std::mt19937_64& rng) override {
    skip_reason_ = gemm_device_unsupported(kernel_, p_->dtype, device_);
    if (!skip_reason_.empty()) return;
    p_->ensure(rng);
    c_host_ = HostTensor(p_->dtype, static_cast<std::size_t>(p_->m * p_->n));
    a_ = DeviceBuffer(p_->a.bytes());
    b_ = DeviceBuffer(p_->b.bytes());
    c_ = DeviceBuffer(c_host_.bytes());
    p_->a.upload(a_);
    p_->b.upload(b_);
    c_.poison();
    workspace_bytes_ = gemm_workspace_bytes(kernel_, p_->dtype, a_view(), b_view(), device_);
    zeroed_bytes_ = gemm_workspace_zeroed_bytes(kernel_, p_->dtype, a_view(), b_view(), device_);
    workspace_ = DeviceBuffer(workspace_bytes_);
    workspace_.zero();  // once: gemm() leaves the split-K counters zero
  }

  void launch(cudaStream_t stream) override {
    if (!skip_reason_.empty()) return;
    gemm(kernel_, p_->dtype, false, a_view(), b_view(), MatrixView{c_.get(), p_->m, p_->n, p_->n, 1},
         workspace_.get(), workspace_bytes_, stream, device_);
  }

  void poison_outputs() override { c_.poison(); }

  Verdict verify() override {
    if (!skip_reason_.empty()) return {false, "skipped: " + skip_reason_, true};
    HostTensor a_after(p_->dtype, p_->a.size()), b_after(p_->dtype, p_->b.size());
    a_after.download(a_);
    b_after.download(b_);
    if (!a_after.same_bytes(p_->a) || !b_after.same_bytes(p_->b)) return {false, "input was modified"};
    if (!workspace_.all_zero(zeroed_bytes_)) return {false, "the split-K tile counters were left nonzero"};
    c_host_.download(c_);
    return compare_relative(c_host_, p_->rounded_ref, tolerance(p_->dtype));
  }

 private:
  ConstMatrixView a_view() const { return {a_.get(), p_->m, p_->k, p_->k, 1}; }
  ConstMatrixView b_view() const { return {b_.get(), p_->k, p_->n, p_->n, 1}; }

  std::string kernel_;
  std::shared_ptr<GemmProblem> p_;
  int device_;
  std::string skip_reason_;
  HostTensor c_host_;
  DeviceBuffer a_, b_, c_, workspace_;
  std::size_t workspace_bytes_ = 0, zeroed_bytes_ = 0;  // the counters: left zero by every launch
};

}  // namespace

void add_gemm_cases(CaseList& cases, int device) {
  using Shape = std::tuple<std::int64_t, std::int64_t, std::int64_t>;  // M, N, K
  // SIMT versions take any shape; the tensor-core versions need K and N multiples of 8 (16-byte
  // rows for cp.async / TMA) but not of the tile.
  const std::vector<Shape> simt_shapes = {{33, 47, 65}, {129, 257, 1023}, {256, 256, 256}, {1024, 1024, 1024}};
  const std::vector<Shape> tensor_core_shapes = {
      {33, 40, 72}, {129, 264, 1024}, {256, 256, 256}, {1024, 1024, 1024}, {100, 8456, 520}};
  std::map<std::tuple<DType, std::int64_t, std::int64_t, std::int64_t>, std::shared_ptr<GemmProblem>> problems;
  auto problem = [&](DType t, const Shape& s) {
    auto& p = problems[{t, std::get<0>(s), std::get<1>(s), std::get<2>(s)}];
    if (!p) p = std::make_shared<GemmProblem>(t, std::get<0>(s), std::get<1>(s), std::get<2>(s));
    return p;
  };
  for (const std::string& kernel : gemm_kernels()) {
    const bool tensor_cores = kernel == "mma_sync" || kernel == "wgmma_tma";
    for (DType t : {DType::F32, DType::F16, DType::BF16}) {
      if (tensor_cores && t == DType::F32) continue;
      for (const Shape& s : tensor_cores ? tensor_core_shapes : simt_shapes)
        cases.push_back(std::make_unique<GemmCase>(kernel, problem(t, s), device));
    }
  }
}

}  // namespace cp::app
