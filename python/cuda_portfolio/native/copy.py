"""Native copy launches (csrc/copy/)."""
from __future__ import annotations

import torch

from . import DTYPE_NAMES, native_module, row_stride, stream_and_device


def copy_rows(src: torch.Tensor, dst: torch.Tensor) -> None:
    """dst[:] = src[:] for (rows, cols) views with unit column stride."""
    stream, device = stream_and_device(src)
    native_module().copy_rows(DTYPE_NAMES[src.dtype], src.shape[0], src.shape[1], src.data_ptr(), row_stride(src),
                              dst.data_ptr(), row_stride(dst), stream, device)


def copy_unmasked_negative_control(n: int, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    """DELIBERATELY BROKEN: the unmasked copy of n random float32 values that writes past the end of its output
    when n is not a multiple of the 256-thread block (n = 1000 writes 24 elements past it).

    Exists only so that compute-sanitizer memcheck has an error to find (scripts/sanitizer_smoke.py
    --negative-control). Never use it for real work. Returns (src, dst) without synchronizing: the
    caller keeps both alive until it has seen the error, because under memcheck the error is sticky
    and freeing either tensor (cudaFree, with the allocator cache off) would raise it inside a
    destructor, which aborts the process.
    """
    # src is padded to whole blocks so the unmasked reads stay in bounds: the write past the end
    # of dst is the one error.
    src = torch.randn(native_module().copy_negative_control_padded(n), dtype=torch.float32, device=device)
    dst = torch.empty(n, dtype=torch.float32, device=device)
    stream, device_index = stream_and_device(src)
    native_module().copy_unmasked_negative_control(DTYPE_NAMES[src.dtype], src.data_ptr(), dst.data_ptr(), n,
                                                   stream, device_index)
    return src, dst
