"""Native softmax launches (csrc/softmax/): the plan functions shared with the Triton backend.

Tensors are (rows, cols) views with unit column stride and any row stride >= cols; base pointers
need not be 16-byte aligned (the kernels fall back to element accesses). Scratch memory (the
split_row plan's counters and partials) is a buffer per (device, stream), zeroed once when made
(native/_workspace.py): every launch leaves it zero, so no call pays a memset; calls stay CUDA-graph
capturable and never synchronize the host.
"""
from __future__ import annotations

import torch

from . import DTYPE_NAMES, native_module, row_stride, stream_and_device
from ._workspace import Pools, zeroed_workspace

# split_row scratch, per (device, stream): the softmax's own pools (it needs all of it zero, and the
# GEMM leaves partial tiles in its own).
_WORKSPACES: Pools = {}


def plans() -> list[str]:
    """Every native plan name (cluster_split_row included; check_plan says where it cannot run)."""
    return list(native_module().softmax_plans())


def _dtype_name(dtype: torch.dtype) -> str:
    if dtype not in DTYPE_NAMES:
        raise TypeError(f"softmax: unsupported dtype {dtype}; supported: {', '.join(map(str, DTYPE_NAMES))}")
    return DTYPE_NAMES[dtype]


def _device_index(device: torch.device) -> int:
    device = torch.device(device)
    if device.type != "cuda":
        raise ValueError(f"softmax: the cuda backend needs a CUDA device, got {device}")
    return device.index if device.index is not None else torch.cuda.current_device()


def choose_plan(rows: int, cols: int, dtype: torch.dtype, device: torch.device, direction: str = "fwd") -> str:
    """The plan the native backend expects to be fastest for this shape and direction ("fwd" or "bwd";
    what plan='auto' runs). The choice differs by direction at several row lengths (16-bit rows of 513-1024
    columns, 16-bit backward rows up to 16384, long rows); csrc/softmax/softmax.cu says why."""
    return native_module().softmax_choose_plan(_dtype_name(dtype), rows, cols, _device_index(device), direction)


def check_plan(plan: str, rows: int, cols: int, dtype: torch.dtype, device: torch.device) -> None:
    """ValueError saying why `plan` cannot run this shape on `device` (forward and backward)."""
    known = plans()
    if plan not in known:
        raise ValueError(f"softmax: unknown plan {plan!r} for the cuda backend; plans: {', '.join(known)}")
    why = native_module().softmax_check_plan(plan, _dtype_name(dtype), rows, cols, _device_index(device))
    if why:
        raise ValueError(f"softmax: plan {plan!r} {why}")


def _resolve(plan: str, t: torch.Tensor, direction: str) -> str:
    if plan == "auto":
        return choose_plan(t.shape[0], t.shape[1], t.dtype, t.device, direction)
    check_plan(plan, t.shape[0], t.shape[1], t.dtype, t.device)
    return plan


def _workspace(plan: str, t: torch.Tensor, device: int, stream: int) -> tuple[int, int, torch.Tensor | None]:
    nbytes = native_module().softmax_workspace_bytes(plan, DTYPE_NAMES[t.dtype], t.shape[0], t.shape[1], device)
    if nbytes == 0:
        return 0, 0, None
    buf = zeroed_workspace(_WORKSPACES, nbytes, device, stream)
    return buf.data_ptr(), nbytes, buf


def describe_launch(operands, plan: str, direction: str) -> str | None:
    """What `plan` launches on these operands ((x,) forward, (y, dy) backward) into an output as torch.empty_like
    makes it (contiguous, aligned), as the benchmark records it: split_row's layout (streamed or portable, slices
    per row, ...), None for the plans that have one layout."""
    first = operands[0]
    plan = _resolve(plan, first, direction)
    second = operands[1] if direction == "bwd" else None
    text = native_module().softmax_config(
        plan, _dtype_name(first.dtype), direction, first.shape[0], first.shape[1], first.data_ptr(), row_stride(first),
        second.data_ptr() if second is not None else 0, row_stride(second) if second is not None else 0,
        0, first.shape[1], _device_index(first.device))
    return text or None


def forward(x2d: torch.Tensor, y2d: torch.Tensor, plan: str) -> None:
    """y2d = softmax(x2d) over each row, with the named plan (or 'auto')."""
    if x2d.numel() == 0:
        return
    plan = _resolve(plan, x2d, "fwd")
    stream, device = stream_and_device(x2d)
    ws_ptr, ws_bytes, _ws = _workspace(plan, x2d, device, stream)  # pooled; or, made in a capture, freed stream-ordered
    native_module().softmax_forward(plan, DTYPE_NAMES[x2d.dtype], x2d.shape[0], x2d.shape[1], x2d.data_ptr(),
                                    row_stride(x2d), y2d.data_ptr(), row_stride(y2d), ws_ptr, ws_bytes, stream,
                                    device)


def backward(y2d: torch.Tensor, dy2d: torch.Tensor, dx2d: torch.Tensor, plan: str) -> None:
    """dx2d = y2d * (dy2d - sum(y2d * dy2d)) over each row, with the named plan (or 'auto')."""
    if y2d.numel() == 0:
        return
    plan = _resolve(plan, y2d, "bwd")
    stream, device = stream_and_device(y2d)
    ws_ptr, ws_bytes, _ws = _workspace(plan, y2d, device, stream)
    native_module().softmax_backward(plan, DTYPE_NAMES[y2d.dtype], y2d.shape[0], y2d.shape[1], y2d.data_ptr(),
                                     row_stride(y2d), dy2d.data_ptr(), row_stride(dy2d), dx2d.data_ptr(),
                                     row_stride(dx2d), ws_ptr, ws_bytes, stream, device)
