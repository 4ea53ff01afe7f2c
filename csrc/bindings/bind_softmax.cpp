#include <pybind11/stl.h>

#include "bindings/bindings.h"
#include "softmax/softmax.h"

namespace py = pybind11;

namespace cp {

void bind_softmax(py::module_& m) {
  m.def("softmax_plans", &softmax_plan_names, "Every native softmax plan name (on any GPU).");
  m.def(
      "softmax_choose_plan",
      [](const std::string& dtype, std::int64_t rows, std::int64_t cols, int device, const std::string& direction) {
        if (direction != "fwd" && direction != "bwd")
          throw std::invalid_argument("softmax_choose_plan: direction must be 'fwd' or 'bwd', got '" + direction + "'");
        const auto dir = direction == "fwd" ? SoftmaxDirection::Forward : SoftmaxDirection::Backward;
        return std::string(softmax_plan_name(softmax_choose_plan(parse_dtype(dtype), rows, cols, device, dir)));
      },
      py::arg("dtype"), py::arg("rows"), py::arg("cols"), py::arg("device"), py::arg("direction"),
      "The plan plan='auto' runs for this shape and direction ('fwd' or 'bwd').");
  m.def(
      "softmax_check_plan",
      [](const std::string& plan, const std::string& dtype, std::int64_t rows, std::int64_t cols, int device) {
        return softmax_plan_unsupported(parse_softmax_plan(plan), parse_dtype(dtype), rows, cols, device);
      },
      py::arg("plan"), py::arg("dtype"), py::arg("rows"), py::arg("cols"), py::arg("device"),
      "'' when the plan can run this shape on the device (forward and backward), else the reason.");
  m.def(
      "softmax_config",
      [](const std::string& plan, const std::string& dtype, const std::string& direction, std::int64_t rows,
         std::int64_t cols, std::uintptr_t in0, std::int64_t in0_row_stride, std::uintptr_t in1,
         std::int64_t in1_row_stride, std::uintptr_t out, std::int64_t out_row_stride, int device) {
        if (direction != "fwd" && direction != "bwd")
          throw std::invalid_argument("softmax_config: direction must be 'fwd' or 'bwd', got '" + direction + "'");
        const auto dir = direction == "fwd" ? SoftmaxDirection::Forward : SoftmaxDirection::Backward;
        return softmax_config(parse_softmax_plan(plan), parse_dtype(dtype),
                              ConstRowsView{as_ptr<const void>(in0), rows, cols, in0_row_stride},
                              ConstRowsView{as_ptr<const void>(in1), rows, cols, in1_row_stride},
                              ConstRowsView{as_ptr<const void>(out), rows, cols, out_row_stride}, dir, device);
      },
      py::arg("plan"), py::arg("dtype"), py::arg("direction"), py::arg("rows"), py::arg("cols"), py::arg("in0"),
      py::arg("in0_row_stride"), py::arg("in1"), py::arg("in1_row_stride"), py::arg("out"), py::arg("out_row_stride"),
      py::arg("device"),
      "What the plan launches for these operands ('' for plans with one layout): split_row's layout.");
  m.def(
      "softmax_workspace_bytes",
      [](const std::string& plan, const std::string& dtype, std::int64_t rows, std::int64_t cols, int device) {
        return softmax_workspace_bytes(parse_softmax_plan(plan), parse_dtype(dtype), rows, cols, device);
      },
      py::arg("plan"), py::arg("dtype"), py::arg("rows"), py::arg("cols"), py::arg("device"));
  m.def(
      "softmax_forward",
      [](const std::string& plan, const std::string& dtype, std::int64_t rows, std::int64_t cols, std::uintptr_t x,
         std::int64_t x_row_stride, std::uintptr_t y, std::int64_t y_row_stride, std::uintptr_t workspace,
         std::size_t workspace_bytes, std::uintptr_t stream, int device) {
        softmax_forward(parse_softmax_plan(plan), parse_dtype(dtype),
                        ConstRowsView{as_ptr<const void>(x), rows, cols, x_row_stride},
                        RowsView{as_ptr(y), rows, cols, y_row_stride}, as_ptr(workspace), workspace_bytes,
                        as_stream(stream), device);
      },
      py::arg("plan"), py::arg("dtype"), py::arg("rows"), py::arg("cols"), py::arg("x"), py::arg("x_row_stride"),
      py::arg("y"), py::arg("y_row_stride"), py::arg("workspace"), py::arg("workspace_bytes"), py::arg("stream"),
      py::arg("device"));
  m.def(
      "softmax_backward",
      [](const std::string& plan, const std::string& dtype, std::int64_t rows, std::int64_t cols, std::uintptr_t y,
         std::int64_t y_row_stride, std::uintptr_t dy, std::int64_t dy_row_stride, std::uintptr_t dx,
         std::int64_t dx_row_stride, std::uintptr_t workspace, std::size_t workspace_bytes, std::uintptr_t stream,
         int device) {
        softmax_backward(parse_softmax_plan(plan), parse_dtype(dtype),
                         ConstRowsView{as_ptr<const void>(y), rows, cols, y_row_stride},
                         ConstRowsView{as_ptr<const void>(dy), rows, cols, dy_row_stride},
                         RowsView{as_ptr(dx), rows, cols, dx_row_stride}, as_ptr(workspace), workspace_bytes,
                         as_stream(stream), device);
      },
      py::arg("plan"), py::arg("dtype"), py::arg("rows"), py::arg("cols"), py::arg("y"), py::arg("y_row_stride"),
      py::arg("dy"), py::arg("dy_row_stride"), py::arg("dx"), py::arg("dx_row_stride"), py::arg("workspace"),
      py::arg("workspace_bytes"), py::arg("stream"), py::arg("device"));
}

}  // namespace cp
