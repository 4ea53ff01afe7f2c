"""cp.matmul: differentiable (M, K) @ (K, N) and batched (B, M, K) @ (B, K, N) in both backends.

The public function validates (trace-friendly checks only, so torch.compile(fullgraph=True) sees
through it) and calls the custom op "cuda_portfolio::matmul", which resolves the backend and kernel
at run time and loops over the batch. Backward reuses the same op on transposed views:
dA = dY @ B^T, dB = A^T @ dY (Triton, the SIMT CUDA versions and wgmma_tma take strides, so the
transposes are not copied; CUDA's mma_sync copies an operand that is not row-major: native/matmul.py).
"""
from __future__ import annotations

import torch

from ._backends import BACKENDS, available_backends, resolve_backend
from ._tensors import batch_first, check_float_tensor, check_name, device_guard

OP = "matmul"


def _backend_module(backend: str):
    if backend == "cuda":
        from .native import matmul as module
    elif backend == "triton":
        from .triton_kernels import matmul as module
    else:
        raise ValueError(f"{OP}: unknown backend {backend!r}; choose one of {', '.join(BACKENDS)}")
    return module


def matmul_kernels(backend: str) -> list[str]:
    """Kernel names accepted by matmul(..., backend=backend, kernel=...) besides "auto"."""
    return _backend_module(backend).kernels()


def auto_backend(a: torch.Tensor, allow_tf32: bool) -> str:
    """The backend backend="auto" runs a @ b on: Triton where it can run (its autotuned kernels are
    the ones held to the cuBLAS targets), else the first available one. Exception: fp32 without tf32
    runs on CUDA's register_blocked when it can. Without tensor cores the Triton dot is unrolled FMAs,
    slower (43.4 against 47.4 TFLOP/s at 4096^3, results/h200/matmul-ladder.json), and its autotune
    compiles every such tile for each new problem class (16.5 s before the first 8192x1024x256 result on
    the H200, results/h200/gpu-tier.txt)."""
    statuses = available_backends()
    if a.is_cuda and a.dtype == torch.float32 and not allow_tf32 and statuses["cuda"][0]:
        return "cuda"
    if a.is_cuda and statuses["triton"][0]:
        return "triton"
    return resolve_backend("auto", a, OP)


def _unit_stride(t: torch.Tensor) -> torch.Tensor:
    """t itself when one of its last two dims has unit stride (every kernel path takes strides), else a copy."""
    if t.stride(-1) == 1 or t.stride(-2) == 1 or t.shape[-1] == 1 or t.shape[-2] == 1:
        return t
    return t.contiguous()


@torch.library.custom_op("cuda_portfolio::matmul", mutates_args=())
def _matmul_op(a: torch.Tensor, b: torch.Tensor, backend: str, kernel: str, allow_tf32: bool) -> torch.Tensor:
    chosen = auto_backend(a, allow_tf32) if backend == "auto" else resolve_backend(backend, a, OP)
    module = _backend_module(chosen)
    if kernel != "auto" and kernel not in module.kernels():
        raise ValueError(f"{OP}: unknown kernel {kernel!r} for backend {chosen!r}; "
                         f"choose 'auto' or one of {module.kernels()}")
    m, k, n = a.shape[-2], a.shape[-1], b.shape[-1]
    out_shape = a.shape[:-1] + (n,)
    if m == 0 or n == 0 or k == 0:
        return torch.zeros(out_shape, dtype=a.dtype, device=a.device)
    out = torch.empty(out_shape, dtype=a.dtype, device=a.device)
    a, b = _unit_stride(a), _unit_stride(b)
    pairs = [(a, b, out)] if a.dim() == 2 else list(zip(a, b, out))
    with device_guard(a):
        for a2, b2, out2 in pairs:
            # Chosen per batch element: alignment (TMA) can differ between slices.
            name = module.choose_kernel(a2, b2, allow_tf32) if kernel == "auto" else kernel
            module.check_kernel(name, a2, b2, allow_tf32)
            module.matmul(a2, b2, out2, name, allow_tf32)
    return out


@_matmul_op.register_fake
def _(a, b, backend, kernel, allow_tf32):
    return a.new_empty(a.shape[:-1] + (b.shape[-1],))


def _matmul_vmap(info, in_dims, a, b, backend, kernel, allow_tf32):
    """torch.func.vmap: samples of a against one b are the rows of one GEMM (one launch where torch's default rule
    launched once per sample); otherwise the batch joins the op's own batch dim (a launch per slice, as for 3-D)."""
    a_bdim, b_bdim = in_dims[:2]
    if b_bdim is None and b.dim() == 2:
        a = a.movedim(a_bdim, 0)
        out = _matmul_op(a.reshape(-1, a.shape[-1]), b, backend, kernel, allow_tf32)
        return out.view(*a.shape[:-1], out.shape[-1]), 0
    a, b = batch_first(a, a_bdim, info.batch_size), batch_first(b, b_bdim, info.batch_size)
    out = _matmul_op(a.reshape(-1, *a.shape[-2:]), b.reshape(-1, *b.shape[-2:]), backend, kernel, allow_tf32)
    return out.view(*a.shape[:-1], out.shape[-1]), 0


def _setup_context(ctx, inputs, output):
    a, b, backend, kernel, allow_tf32 = inputs
    ctx.save_for_backward(a, b)
    ctx.config = (backend, kernel, allow_tf32)


def _backward(ctx, grad):
    a, b = ctx.saved_tensors
    grad = _unit_stride(grad)  # e.g. the stride-0 gradient of out.sum()
    da = db = None
    if ctx.needs_input_grad[0]:
        da = _matmul_op(grad, b.transpose(-1, -2), *ctx.config)
    if ctx.needs_input_grad[1]:
        db = _matmul_op(a.transpose(-1, -2), grad, *ctx.config)
    return da, db, None, None, None


_matmul_op.register_autograd(_backward, setup_context=_setup_context)
if hasattr(_matmul_op, "register_vmap"):  # torch >= 2.5
    _matmul_op.register_vmap(_matmul_vmap)


def _check_operands(a, b) -> None:
    """Shapes, devices and one dtype; each operand's own dtype is checked before autocast (matmul)."""
    if a.dtype != b.dtype:
        raise TypeError(f"{OP}: a and b must have the same dtype, got a {a.dtype} and b {b.dtype}")
    if a.dim() not in (2, 3) or b.dim() != a.dim():
        raise ValueError(f"{OP}: expects 2-D (M, K) @ (K, N) or 3-D (B, M, K) @ (B, K, N), "
                         f"got a of shape {tuple(a.shape)} and b of shape {tuple(b.shape)}")
    if a.shape[-1] != b.shape[-2]:
        raise ValueError(f"{OP}: inner dimensions differ: a {tuple(a.shape)} has K={a.shape[-1]}, "
                         f"b {tuple(b.shape)} has K={b.shape[-2]}")
    if a.dim() == 3 and a.shape[0] != b.shape[0]:
        raise ValueError(f"{OP}: batch sizes differ: a {tuple(a.shape)}, b {tuple(b.shape)}")
    if a.device != b.device:
        raise ValueError(f"{OP}: a is on {a.device} but b is on {b.device}")


def _autocast(a: torch.Tensor, b: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """torch.matmul's autocast: inside an autocast region of the operands' device type, both run in the region's
    dtype (cast before the op, so autograd casts the gradients back)."""
    device_type = a.device.type
    if torch.is_autocast_enabled(device_type):
        dtype = torch.get_autocast_dtype(device_type)
        return a.to(dtype), b.to(dtype)
    return a, b


def matmul(a: torch.Tensor, b: torch.Tensor, *, backend: str = "auto", kernel: str = "auto") -> torch.Tensor:
    """a @ b for 2-D (M, K) @ (K, N) or batched 3-D (B, M, K) @ (B, K, N), differentiable.

    backend: "cuda", "triton" or "auto"; kernel: one of matmul_kernels(backend) or "auto" (the
    fastest correct kernel for the device, dtype and shape). fp32 inputs use tf32 tensor cores
    when torch.backends.cuda.matmul.allow_tf32 is set at call time and the backend is Triton ("auto"
    then picks it); the CUDA kernels compute fp32 in fp32. Output dtype = input dtype, or inside a
    torch.autocast region the region's dtype, as torch.matmul.
    """
    check_float_tensor(a, "a", OP)
    check_float_tensor(b, "b", OP)
    a, b = _autocast(a, b)
    _check_operands(a, b)
    check_name(kernel, "kernel", OP, "'auto' or a name from matmul_kernels(backend)")
    if backend not in ("auto",) + BACKENDS:
        raise ValueError(f"{OP}: unknown backend {backend!r}; choose one of 'auto', 'cuda', 'triton'")
    return _matmul_op(a, b, backend, kernel, torch.backends.cuda.matmul.allow_tf32)
