"""Thin wrapper over the pybind11 module: tensors in, pointers + sizes + strides + stream out.

One file per op (copy.py, softmax.py, matmul.py); this file holds the stream, device and dtype helpers they share,
_workspace.py the zeroed scratch pools of matmul and softmax.

Launches go on torch's current stream for the tensor's device; the native side makes that
device current for the launch (it links its own static CUDA runtime).
"""
from __future__ import annotations

import torch

from .._backends import native_module
from .._tensors import DTYPE_NAMES, row_stride


def stream_and_device(t: torch.Tensor) -> tuple[int, int]:
    device = t.device.index if t.device.index is not None else torch.cuda.current_device()
    return torch.cuda.current_stream(device).cuda_stream, device


__all__ = ["DTYPE_NAMES", "native_module", "row_stride", "stream_and_device"]
