#include <pybind11/stl.h>

#include "bindings/bindings.h"
#include "gemm/gemm.h"

namespace py = pybind11;

namespace cp {

void bind_gemm(py::module_& m) {
  m.def("gemm_kernels", &gemm_kernels, "GEMM kernel names in ladder order.");
  m.def(
      "gemm_check",
      [](const std::string& kernel, const std::string& dtype, bool allow_tf32, std::int64_t m_, std::int64_t n,
         std::int64_t k, std::uintptr_t a, std::int64_t a_row_stride, std::int64_t a_col_stride, std::uintptr_t b,
         std::int64_t b_row_stride, std::int64_t b_col_stride, std::uintptr_t c, std::int64_t c_row_stride,
         int device) {
        return gemm_check(kernel, parse_dtype(dtype), allow_tf32,
                          ConstMatrixView{as_ptr<const void>(a), m_, k, a_row_stride, a_col_stride},
                          ConstMatrixView{as_ptr<const void>(b), k, n, b_row_stride, b_col_stride},
                          MatrixView{as_ptr(c), m_, n, c_row_stride, 1}, device);
      },
      py::arg("kernel"), py::arg("dtype"), py::arg("allow_tf32"), py::arg("m"), py::arg("n"), py::arg("k"),
      py::arg("a"), py::arg("a_row_stride"), py::arg("a_col_stride"), py::arg("b"), py::arg("b_row_stride"),
      py::arg("b_col_stride"), py::arg("c"), py::arg("c_row_stride"), py::arg("device"),
      "'' when the kernel can run these operands on the device, else the reason (the launchers' 32-bit size "
      "limits aside: gemm() alone enforces them, gemm.h).");
  m.def(
      "gemm_workspace_bytes",
      [](const std::string& kernel, const std::string& dtype, std::int64_t m_, std::int64_t n, std::int64_t k,
         int device) {
        return gemm_workspace_bytes(kernel, parse_dtype(dtype), ConstMatrixView{nullptr, m_, k, k, 1},
                                    ConstMatrixView{nullptr, k, n, n, 1}, device);
      },
      py::arg("kernel"), py::arg("dtype"), py::arg("m"), py::arg("n"), py::arg("k"), py::arg("device"));
  m.def(
      "gemm_config",
      [](const std::string& kernel, std::int64_t m_, std::int64_t n, std::int64_t k, std::uintptr_t a,
         std::int64_t a_row_stride, std::int64_t a_col_stride, std::uintptr_t b, std::int64_t b_row_stride,
         std::int64_t b_col_stride, int sm_count) {
        return gemm_config(kernel, ConstMatrixView{as_ptr<const void>(a), m_, k, a_row_stride, a_col_stride},
                           ConstMatrixView{as_ptr<const void>(b), k, n, b_row_stride, b_col_stride}, sm_count);
      },
      py::arg("kernel"), py::arg("m"), py::arg("n"), py::arg("k"), py::arg("a"), py::arg("a_row_stride"),
      py::arg("a_col_stride"), py::arg("b"), py::arg("b_row_stride"), py::arg("b_col_stride"), py::arg("sm_count"),
      "The tile configuration the kernel takes for these operands on sm_count SMs ('' when it has one tile).");
  m.def(
      "gemm",
      [](const std::string& kernel, const std::string& dtype, bool allow_tf32, std::int64_t m_, std::int64_t n,
         std::int64_t k, std::uintptr_t a, std::int64_t a_row_stride, std::int64_t a_col_stride, std::uintptr_t b,
         std::int64_t b_row_stride, std::int64_t b_col_stride, std::uintptr_t c, std::int64_t c_row_stride,
         std::uintptr_t workspace, std::size_t workspace_bytes, std::uintptr_t stream, int device) {
        // std::invalid_argument (a refused operand) reaches Python as ValueError.
        gemm(kernel, parse_dtype(dtype), allow_tf32,
             ConstMatrixView{as_ptr<const void>(a), m_, k, a_row_stride, a_col_stride},
             ConstMatrixView{as_ptr<const void>(b), k, n, b_row_stride, b_col_stride},
             MatrixView{as_ptr(c), m_, n, c_row_stride, 1}, as_ptr(workspace), workspace_bytes, as_stream(stream),
             device);
      },
      py::arg("kernel"), py::arg("dtype"), py::arg("allow_tf32"), py::arg("m"), py::arg("n"), py::arg("k"),
      py::arg("a"), py::arg("a_row_stride"), py::arg("a_col_stride"), py::arg("b"), py::arg("b_row_stride"),
      py::arg("b_col_stride"), py::arg("c"), py::arg("c_row_stride"), py::arg("workspace"),
      py::arg("workspace_bytes"), py::arg("stream"), py::arg("device"));
}

}  // namespace cp
