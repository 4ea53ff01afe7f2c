"""Native GEMM launches (csrc/gemm/): the CUDA ladder naive -> smem_tiled -> register_blocked ->
mma_sync -> wgmma_tma, each selectable by name, behind the matmul interface shared with
triton_kernels/matmul.py: kernels(), choose_kernel(), check_kernel(), kernel_config(), matmul().

Operands go to the native module as pointer + strides. Versions 1-3 read any strides; mma_sync
needs row-major operands and wgmma_tma one unit stride per operand, so for those the wrapper
makes a contiguous copy of an operand whose layout they cannot read. Alignment is not fixed by a
copy: a base pointer or row stride off 16 bytes, or K, M or N not a multiple of 8 where the kernel needs
it, is refused with the reason (and "auto" takes a version that can run it).
"""
from __future__ import annotations

import torch

from . import DTYPE_NAMES, native_module, stream_and_device
from ._workspace import Pools, zeroed_workspace

# Layout each version reads without a copy: "any" strides, "row" (unit column stride) or
# "unit" (a unit stride in either dimension).
_LAYOUT = {"naive": "any", "smem_tiled": "any", "register_blocked": "any", "mma_sync": "row", "wgmma_tma": "unit"}


# Split-K scratch (wgmma_tma), per (device, stream), zeroed once when made (native/_workspace.py): gemm()
# needs its tile counters zero at launch and leaves them zero, so no launch pays a memset. The GEMM's own
# pools: it leaves its partial tiles in the scratch, which the softmax's contract (all zero) forbids.
_WORKSPACES: Pools = {}


def kernels() -> list[str]:
    return list(native_module().gemm_kernels())


def _strides(x: torch.Tensor) -> tuple[int, int]:
    """(row, col) strides in elements; a size-1 dimension gets the stride a contiguous tensor has."""
    rows, cols = x.shape
    return (x.stride(0) if rows > 1 else cols), (x.stride(1) if cols > 1 else 1)


def _readable(x: torch.Tensor, layout: str) -> bool:
    row, col = _strides(x)
    if layout == "row":
        return col == 1
    if layout == "unit":
        return col == 1 or row == 1
    return True


def _operand(x: torch.Tensor, kernel: str) -> torch.Tensor:
    return x if _readable(x, _LAYOUT.get(kernel, "any")) else x.contiguous()


def _operand_args(kernel: str, a: torch.Tensor, b: torch.Tensor) -> list:
    """(pointer, row stride, col stride) of a, then of b, as matmul() would pass them (a copy
    counts as contiguous and aligned, without making it)."""
    layout = _LAYOUT.get(kernel, "any")
    args = []
    for x in (a, b):
        if _readable(x, layout):
            args += [x.data_ptr(), *_strides(x)]
        else:
            args += [0, x.shape[1], 1]  # a fresh contiguous copy: aligned allocation
    return args


def _check_args(kernel: str, a: torch.Tensor, b: torch.Tensor, allow_tf32: bool) -> tuple:
    """gemm_check's arguments for the operands as matmul() would pass them."""
    m, k = a.shape
    n = b.shape[1]
    device = a.device.index if a.device.index is not None else torch.cuda.current_device()
    return (kernel, DTYPE_NAMES[a.dtype], allow_tf32, m, n, k, *_operand_args(kernel, a, b), 0, n, device)


def check_kernel(kernel: str, a: torch.Tensor, b: torch.Tensor, allow_tf32: bool) -> None:
    """ValueError saying why `kernel` cannot compute a @ b here; None when gemm_check accepts it (the launchers'
    32-bit size limits are gemm()'s alone: csrc/gemm/gemm.h)."""
    names = kernels()
    if kernel not in names:
        raise ValueError(f"unknown cuda matmul kernel {kernel!r}; kernels: {', '.join(names)}")
    reason = native_module().gemm_check(*_check_args(kernel, a, b, allow_tf32))
    if reason:
        raise ValueError(f"cuda matmul kernel {kernel!r} cannot run {tuple(a.shape)} @ {tuple(b.shape)} "
                         f"{a.dtype}: {reason}")


def choose_kernel(a: torch.Tensor, b: torch.Tensor, allow_tf32: bool) -> str:
    """The fastest version that can run these operands: wgmma_tma on Hopper, then mma_sync,
    with register_blocked (any dtype, shape and strides) as the fallback."""
    module = native_module()
    for kernel in ("wgmma_tma", "mma_sync"):
        if not module.gemm_check(*_check_args(kernel, a, b, allow_tf32)):
            return kernel
    return "register_blocked"


def kernel_config(a: torch.Tensor, b: torch.Tensor, kernel: str, allow_tf32: bool) -> str | None:
    """The tile configuration `kernel` takes for these operands (wgmma_tma: tile, stages, split K,
    from the shape and the operands' alignment), as the benchmark records it; None for kernels with
    one fixed tile."""
    sms = torch.cuda.get_device_properties(a.device).multi_processor_count
    return native_module().gemm_config(kernel, a.shape[0], b.shape[1], a.shape[1], *_operand_args(kernel, a, b),
                                       sms) or None


def matmul(a: torch.Tensor, b: torch.Tensor, out: torch.Tensor, kernel: str, allow_tf32: bool) -> None:
    """out = a @ b for 2-D CUDA tensors a (M, K), b (K, N) of one dtype, out contiguous (M, N)."""
    check_kernel(kernel, a, b, allow_tf32)
    a, b = _operand(a, kernel), _operand(b, kernel)
    m, k = a.shape
    n = b.shape[1]
    stream, device = stream_and_device(a)
    module = native_module()
    dtype = DTYPE_NAMES[a.dtype]
    workspace_bytes = module.gemm_workspace_bytes(kernel, dtype, m, n, k, device)
    workspace = zeroed_workspace(_WORKSPACES, workspace_bytes, device, stream) if workspace_bytes else None
    module.gemm(kernel, dtype, allow_tf32, m, n, k, a.data_ptr(), *_strides(a), b.data_ptr(), *_strides(b),
                out.data_ptr(), n, workspace.data_ptr() if workspace is not None else 0, workspace_bytes, stream,
                device)
