"""cp.copy: a bounds-checked elementwise copy in both backends (the foundation's end-to-end op)."""
from __future__ import annotations

import torch

from ._backends import resolve_backend
from ._tensors import as_rows, check_float_tensor, device_guard, row_stride


def copy(x: torch.Tensor, *, backend: str = "auto") -> torch.Tensor:
    """A new contiguous tensor equal to `x` (same shape and dtype), copied by our kernels."""
    check_float_tensor(x, "x", "copy")
    chosen = resolve_backend(backend, x, "copy")
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    if x.numel() == 0:
        return out
    src, dst = as_rows(x), out.view(-1, x.shape[-1] if x.dim() else 1)
    with device_guard(x):
        if chosen == "cuda":
            from .native import copy as native_copy
            native_copy.copy_rows(src, dst)
        else:
            from .triton_kernels import copy as triton_copy
            triton_copy.copy_rows(src, dst, row_stride(src), row_stride(dst))
    return out

