// The one GEMM host launcher: kernel name -> ladder version, operand checks, dispatch.
// Each version's requirements are checked here, once, so the pybind11 module, the executable
// and gemm_check() all give the same reason for a refusal (the launchers' 32-bit size limits
// aside: gemm.h).
#include "gemm/gemm.h"

#include <cstdint>
#include <stdexcept>

#include "common/cuda_check.h"
#include "common/device.h"
#include "gemm/gemm_versions.h"

namespace cp {
namespace {

enum class Version { Naive, SmemTiled, RegisterBlocked, MmaSync, WgmmaTma };

struct VersionEntry {
  const char* name;
  Version version;
};

constexpr VersionEntry kVersions[] = {
    {"naive", Version::Naive},
    {"smem_tiled", Version::SmemTiled},
    {"register_blocked", Version::RegisterBlocked},
    {"mma_sync", Version::MmaSync},
    {"wgmma_tma", Version::WgmmaTma},
};

bool find_version(const std::string& name, Version& out) {
  for (const auto& v : kVersions) {
    if (name == v.name) {
      out = v.version;
      return true;
    }
  }
  return false;
}

std::string dims(std::int64_t r, std::int64_t c) { return std::to_string(r) + "x" + std::to_string(c); }

bool aligned16(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; }

std::string shape_reason(const ConstMatrixView& a, const ConstMatrixView& b, const MatrixView& c) {
  if (a.cols != b.rows)
    return "inner dimensions differ: A is " + dims(a.rows, a.cols) + ", B is " + dims(b.rows, b.cols);
  if (c.rows != a.rows || c.cols != b.cols)
    return "C is " + dims(c.rows, c.cols) + " but A @ B is " + dims(a.rows, b.cols);
  if (a.rows < 1 || b.cols < 1 || a.cols < 1)
    return "M, N and K must be >= 1 (got M=" + std::to_string(a.rows) + ", N=" + std::to_string(b.cols) +
           ", K=" + std::to_string(a.cols) + "); the caller handles empty products";
  if (c.col_stride != 1 && c.cols > 1) return "C must have unit column stride (row-major output)";
  return "";
}

// mma_sync copies 16-byte chunks of each row with cp.async: rows must be contiguous and every
// row must start on a 16-byte boundary.
std::string row_major_16b_reason(const char* what, const void* data, std::int64_t rows, std::int64_t cols,
                                 std::int64_t row_stride, std::int64_t col_stride, std::size_t esize) {
  if (col_stride != 1 && cols > 1)
    return std::string(what) + " must be row-major (unit column stride) for mma_sync; got strides (" +
           std::to_string(row_stride) + ", " + std::to_string(col_stride) + ")";
  if (!aligned16(data)) return std::string(what) + "'s data pointer is not 16-byte aligned (cp.async)";
  if (rows > 1 && (row_stride * static_cast<std::int64_t>(esize)) % 16 != 0)
    return std::string(what) + "'s row stride (" + std::to_string(row_stride) +
           " elements) is not a multiple of 16 bytes (cp.async); e.g. K or N not a multiple of 8";
  return "";
}

// TMA reads a tile through a tensor map: one unit stride, the other a multiple of 16 bytes,
// base address 16-byte aligned.
std::string tma_operand_reason(const char* what, const void* data, std::int64_t row_stride,
                               std::int64_t col_stride, std::size_t esize) {
  if (row_stride != 1 && col_stride != 1)
    return std::string(what) + " needs a unit stride in one dimension for TMA; got strides (" +
           std::to_string(row_stride) + ", " + std::to_string(col_stride) + ")";
  const std::int64_t leading = col_stride == 1 ? row_stride : col_stride;
  if ((leading * static_cast<std::int64_t>(esize)) % 16 != 0)
    return std::string(what) + "'s leading stride (" + std::to_string(leading) +
           " elements) is not a multiple of 16 bytes (TMA); e.g. K, M or N not a multiple of 8";
  if (!aligned16(data)) return std::string(what) + "'s data pointer is not 16-byte aligned (TMA)";
  return "";
}

// What the build, the device and the dtype allow, whatever the operands: "" or the reason.
std::string device_reason(Version v, DType dtype, int device) {
  switch (v) {
    case Version::Naive:
    case Version::SmemTiled:
    case Version::RegisterBlocked:
      return "";
    case Version::MmaSync: {
      if (dtype == DType::F32) return "mma_sync supports float16 and bfloat16, not float32";
      const ComputeCapability cc = compute_capability(device);
      if (cc.major < 8)
        return "mma_sync needs sm_80 or newer (bf16 mma.sync, cp.async); device is sm_" + std::to_string(cc.major) +
               std::to_string(cc.minor);
      return "";
    }
    case Version::WgmmaTma: {
#ifndef CUDA_PORTFOLIO_HAS_SM90A
      (void)dtype, (void)device;
      return "wgmma_tma is not in this build (built without the sm_90a kernels: CUDA_PORTFOLIO_HOPPER=OFF or "
             "nvcc older than 12.0)";
#else
      if (dtype == DType::F32) return "wgmma_tma supports float16 and bfloat16, not float32";
      const ComputeCapability cc = compute_capability(device);
      if (cc.major != 9)
        return "wgmma_tma needs an sm_90 GPU (Hopper: wgmma, TMA); device is sm_" + std::to_string(cc.major) +
               std::to_string(cc.minor);
      return "";
#endif
    }
  }
  return "unhandled version";
}

std::string version_reason(Version v, DType dtype, const ConstMatrixView& a, const ConstMatrixView& b, int device) {
  if (std::string r = device_reason(v, dtype, device); !r.empty()) return r;
  const std::size_t es = dtype_size(dtype);
  std::string r;
  if (v == Version::MmaSync) {  // cp.async rows: 16-byte aligned, row-major
    r = row_major_16b_reason("A", a.data, a.rows, a.cols, a.row_stride, a.col_stride, es);
    if (r.empty()) r = row_major_16b_reason("B", b.data, b.rows, b.cols, b.row_stride, b.col_stride, es);
  }
#ifdef CUDA_PORTFOLIO_HAS_SM90A
  if (v == Version::WgmmaTma) {  // TMA descriptors
    r = tma_operand_reason("A", a.data, a.row_stride, a.col_stride, es);
    if (r.empty()) r = tma_operand_reason("B", b.data, b.row_stride, b.col_stride, es);
  }
#endif
  return r;
}

}  // namespace

const std::vector<std::string>& gemm_kernels() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const auto& v : kVersions) out.emplace_back(v.name);
    return out;
  }();
  return names;
}

std::string gemm_check(const std::string& kernel, DType dtype, bool /*allow_tf32*/, const ConstMatrixView& a,
                       const ConstMatrixView& b, const MatrixView& c, int device) {
  Version v;
  if (!find_version(kernel, v)) {
    std::string known;
    for (const auto& e : kVersions) known += (known.empty() ? "" : ", ") + std::string(e.name);
    return "unknown gemm kernel '" + kernel + "'; kernels: " + known;
  }
  std::string r = shape_reason(a, b, c);
  if (r.empty()) r = version_reason(v, dtype, a, b, device);
  return r;
}

std::string gemm_device_unsupported(const std::string& kernel, DType dtype, int device) {
  Version v;
  if (!find_version(kernel, v)) return "unknown gemm kernel '" + kernel + "'";
  return device_reason(v, dtype, device);
}

std::size_t gemm_workspace_bytes(const std::string& kernel, DType dtype, const ConstMatrixView& a,
                                 const ConstMatrixView& b, int device) {
  (void)dtype;
#ifdef CUDA_PORTFOLIO_HAS_SM90A
  Version v;
  if (find_version(kernel, v) && v == Version::WgmmaTma)
    return gemm_versions::wgmma_tma_workspace_bytes(a.rows, b.cols, a.cols, sm_count(device));
#else
  (void)kernel, (void)a, (void)b, (void)device;
#endif
  return 0;
}

std::size_t gemm_workspace_zeroed_bytes(const std::string& kernel, DType dtype, const ConstMatrixView& a,
                                        const ConstMatrixView& b, int device) {
#ifdef CUDA_PORTFOLIO_HAS_SM90A
  if (gemm_workspace_bytes(kernel, dtype, a, b, device) > 0)
    return gemm_versions::wgmma_tma_counter_bytes(sm_count(device));
#else
  (void)kernel, (void)dtype, (void)a, (void)b, (void)device;
#endif
  return 0;
}

std::string gemm_config(const std::string& kernel, const ConstMatrixView& a, const ConstMatrixView& b, int sm_count) {
#ifdef CUDA_PORTFOLIO_HAS_SM90A
  Version v;
  if (find_version(kernel, v) && v == Version::WgmmaTma) return gemm_versions::wgmma_tma_config(a, b, sm_count);
#else
  (void)kernel, (void)a, (void)b, (void)sm_count;
#endif
  return "";
}

void gemm(const std::string& kernel, DType dtype, bool allow_tf32, const ConstMatrixView& a,
          const ConstMatrixView& b, const MatrixView& c, void* workspace, std::size_t workspace_bytes,
          cudaStream_t stream, int device) {
  (void)allow_tf32;  // no version has a tf32 path yet: fp32 runs in fp32
  DeviceGuard guard(device);
  const std::string reason = gemm_check(kernel, dtype, allow_tf32, a, b, c, device);
  if (!reason.empty()) throw std::invalid_argument("gemm(" + kernel + "): " + reason);
  Version v{};
  find_version(kernel, v);  // found: gemm_check passed
  switch (v) {
    case Version::Naive: gemm_versions::naive(dtype, a, b, c, stream); break;
    case Version::SmemTiled: gemm_versions::smem_tiled(dtype, a, b, c, stream); break;
    case Version::RegisterBlocked: gemm_versions::register_blocked(dtype, a, b, c, stream); break;
    case Version::MmaSync: gemm_versions::mma_sync(dtype, a, b, c, stream); break;
    case Version::WgmmaTma: {
#ifdef CUDA_PORTFOLIO_HAS_SM90A
      const int sms = sm_count(device);
      const std::size_t need = gemm_versions::wgmma_tma_workspace_bytes(a.rows, b.cols, a.cols, sms);
      // Split K: the workspace holds the tile counters and the fp32 partial tiles (16-byte accesses).
      if (workspace_bytes < need || (need > 0 && workspace == nullptr))
        throw std::invalid_argument("gemm(wgmma_tma): needs " + std::to_string(need) +
                                    " bytes of workspace (gemm_workspace_bytes), got " +
                                    std::to_string(workspace_bytes));
      if (need > 0 && !aligned16(workspace))
        throw std::invalid_argument("gemm(wgmma_tma): the workspace must be 16-byte aligned");
      gemm_versions::wgmma_tma(dtype, a, b, c, workspace, workspace_bytes, sms, stream);
#else
      (void)workspace, (void)workspace_bytes;
#endif
      break;
    }
  }
}

}  // namespace cp
