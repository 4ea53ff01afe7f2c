#include "copy/copy.h"

#include "bindings/bindings.h"

namespace py = pybind11;

namespace cp {

void bind_copy(py::module_& m) {
  m.def(
      "copy_rows",
      [](const std::string& dtype, std::int64_t rows, std::int64_t cols, std::uintptr_t src,
         std::int64_t src_row_stride, std::uintptr_t dst, std::int64_t dst_row_stride, std::uintptr_t stream,
         int device) {
        copy_rows(parse_dtype(dtype), ConstRowsView{as_ptr<const void>(src), rows, cols, src_row_stride},
                  RowsView{as_ptr(dst), rows, cols, dst_row_stride}, as_stream(stream), device);
      },
      py::arg("dtype"), py::arg("rows"), py::arg("cols"), py::arg("src"), py::arg("src_row_stride"), py::arg("dst"),
      py::arg("dst_row_stride"), py::arg("stream"), py::arg("device"));
  m.def(
      "copy_unmasked_negative_control",
      [](const std::string& dtype, std::uintptr_t src, std::uintptr_t dst, std::int64_t n, std::uintptr_t stream,
         int device) {
        copy_unmasked_negative_control(parse_dtype(dtype), as_ptr<const void>(src), as_ptr(dst), n,
                                       as_stream(stream), device);
      },
      py::arg("dtype"), py::arg("src"), py::arg("dst"), py::arg("n"), py::arg("stream"), py::arg("device"),
      "DELIBERATELY BROKEN (no bounds check): the Compute Sanitizer negative control. Never use for real work.");
  m.def("copy_negative_control_padded", &copy_negative_control_padded, py::arg("n"),
        "Elements the negative control's source must hold (n rounded up to whole blocks).");
}

}  // namespace cp
