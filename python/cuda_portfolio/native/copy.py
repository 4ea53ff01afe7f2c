"""Native copy launches (csrc/copy/)."""
from __future__ import annotations

import torch

from . import DTYPE_NAMES, native_module, row_stride, stream_and_device


def copy_rows(src: torch.Tensor, dst: torch.Tensor) -> None:
    """dst[:] = src[:] for (rows, cols) views with unit column stride."""
    stream, device = stream_and_device(src)
    native_module().copy_rows(DTYPE_NAMES[src.dtype], src.shape[0], src.shape[1], src.data_ptr(), row_stride(src),
                              dst.data_ptr(), row_stride(dst), stream, device)


def copy_unmasked_negative_control(src: torch.Tensor) -> torch.Tensor:
    """DELIBERATELY BROKEN: the unmasked copy that writes past the end of its output.

    Exists only so that compute-sanitizer memcheck has an error to find (scripts/sanitizer_smoke.py
    --negative-control). Never use it for real work.
    """
    flat = src.reshape(-1)
    n = flat.numel()
    padded = torch.empty(native_module().copy_negative_control_padded(n), dtype=src.dtype, device=src.device)
    padded[:n] = flat  # the read stays in bounds: the write past the end of dst is the one error
    dst = torch.empty(n, dtype=src.dtype, device=src.device)
    stream, device = stream_and_device(src)
    native_module().copy_unmasked_negative_control(DTYPE_NAMES[src.dtype], padded.data_ptr(), dst.data_ptr(), n,
                                                   stream, device)
    return dst
