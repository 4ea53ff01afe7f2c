"""Input validation and the (rows, cols) view that every row-wise kernel takes."""
from __future__ import annotations

import contextlib

import torch

FLOAT_DTYPES = (torch.float32, torch.float16, torch.bfloat16)
DTYPE_NAMES = {torch.float32: "float32", torch.float16: "float16", torch.bfloat16: "bfloat16"}


def check_float_tensor(x, name: str, op: str) -> None:
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{op}: {name} must be a torch.Tensor, got {type(x).__name__}")
    if x.dtype not in FLOAT_DTYPES:
        supported = ", ".join(str(d) for d in FLOAT_DTYPES)
        raise TypeError(f"{op}: unsupported dtype {x.dtype} for {name}; supported: {supported}")


def check_name(value, name: str, op: str, choices: str) -> None:
    """A plan or kernel name must be a str: the custom ops' schemas would refuse anything else with a message about
    their own argument positions."""
    if not isinstance(value, str):
        raise TypeError(f"{op}: {name} must be a str ({choices}), got {value!r} of type {type(value).__name__}")


def batch_first(t: torch.Tensor, bdim: int | None, batch_size: int) -> torch.Tensor:
    """For a vmap rule: an operand with its batch dim first; an unbatched one expanded to the batch (stride 0, no
    copy until a kernel needs one)."""
    return t.movedim(bdim, 0) if bdim is not None else t.expand(batch_size, *t.shape)


def as_rows(x: torch.Tensor) -> torch.Tensor:
    """A 2-D (rows, cols) view of `x` over its last dim with unit column stride.

    A view when the leading dims collapse into one stride (contiguous, sliced rows, ...);
    otherwise a contiguous copy. `x` must have at least one element.
    """
    if x.dim() == 0:
        x = x.reshape(1)
    cols = x.shape[-1]
    if x.stride(-1) != 1 and cols > 1:
        x = x.contiguous()
    try:
        return x.view(-1, cols)
    except RuntimeError:
        return x.reshape(-1, cols)


def row_stride(x2d: torch.Tensor) -> int:
    """Elements between consecutive rows of a (rows, cols) view (any value works for one row)."""
    return x2d.stride(0) if x2d.shape[0] > 1 else x2d.shape[1]


def device_guard(x: torch.Tensor):
    """torch's device guard for a CUDA tensor (so allocations and streams use its device)."""
    return torch.cuda.device(x.device) if x.is_cuda else contextlib.nullcontext()
