"""cp.softmax: softmax over any dim, differentiable, in the native (cuda) or Triton backend.

The kernels run as torch.library custom ops (cuda_portfolio::softmax_fwd / softmax_bwd) with fake
(meta) implementations, so torch.compile(fullgraph=True) traces a call as one opaque node and a
CUDA graph can capture it. Backward runs in the forward's backend with its plan argument: an explicit plan is
reused, "auto" is resolved again for the backward (choose_plan(..., "bwd")). Both backends expose
the same interface (plans, choose_plan, check_plan, forward, backward) over (rows, cols) views.
"""
from __future__ import annotations

import torch

from ._backends import BACKENDS, resolve_backend
from ._tensors import as_rows, batch_first, check_float_tensor, check_name, device_guard


def _backend_module(backend: str):
    if backend == "cuda":
        from .native import softmax as module
    else:
        from .triton_kernels import softmax as module
    return module


def softmax_plans(backend: str) -> list[str]:
    """The plan names that `softmax(..., backend=backend, plan=...)` accepts besides "auto"."""
    if backend not in BACKENDS:
        raise ValueError(f"softmax_plans: unknown backend {backend!r}; choose one of {', '.join(BACKENDS)}")
    return _backend_module(backend).plans()


def choose_backend(x: torch.Tensor) -> str:
    """backend="auto": the native backend where it can run, else Triton (resolve_backend's order).

    From results/h200/softmax.json (H200, eb352bd, both backends' auto plans in one run, 20 cells per dtype):
    Triton's time over the native one's is 1.028 (fp32) and 1.025 (bf16) as a geometric mean; the native backend is
    1.09-1.17x faster at 4x4M, 32x1M (fp32 backward, bf16 forward), 2048x50257 (fp32 forward, bf16 backward) and
    bf16 4096x32768 forward, Triton 1.09x faster at bf16 256x262144 forward and at most 1.04x anywhere else.
    (Session 1's run had sent 16-bit types to Triton, when the native 16-bit kernels read 0.38-0.52x of copy.) fp16
    runs the bf16 code paths and was not in that run. Re-measure and revisit when either backend's kernels
    change."""
    return resolve_backend("auto", x, "softmax")


def _kernel_rows(t: torch.Tensor) -> torch.Tensor:
    """as_rows, made contiguous when rows overlap (an expanded tensor has row stride 0)."""
    rows2d = as_rows(t)
    if rows2d.shape[0] > 1 and rows2d.stride(0) < rows2d.shape[1]:
        return rows2d.contiguous()
    return rows2d


@torch.library.custom_op("cuda_portfolio::softmax_fwd", mutates_args=())
def softmax_fwd(x: torch.Tensor, backend: str, plan: str) -> torch.Tensor:
    """Softmax over the last dim of `x` (at least 1-d) into a new contiguous tensor."""
    y = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    plan = _resolve_plan(backend, plan, x, "fwd")
    if x.numel() > 0:
        with device_guard(x):
            _backend_module(backend).forward(_kernel_rows(x), y.view(-1, x.shape[-1]), plan)
    return y


@softmax_fwd.register_fake
def _softmax_fwd_fake(x, backend, plan):
    return torch.empty(x.shape, dtype=x.dtype, device=x.device)


@torch.library.custom_op("cuda_portfolio::softmax_bwd", mutates_args=())
def softmax_bwd(y: torch.Tensor, dy: torch.Tensor, backend: str, plan: str) -> torch.Tensor:
    """dx = y * (dy - sum(y * dy)) over the last dim, into a new contiguous tensor."""
    dx = torch.empty(y.shape, dtype=y.dtype, device=y.device)
    plan = _resolve_plan(backend, plan, y, "bwd")
    if y.numel() > 0:
        with device_guard(y):
            _backend_module(backend).backward(_kernel_rows(y), _kernel_rows(dy.to(y.dtype)),
                                              dx.view(-1, y.shape[-1]), plan)
    return dx


@softmax_bwd.register_fake
def _softmax_bwd_fake(y, dy, backend, plan):
    return torch.empty(y.shape, dtype=y.dtype, device=y.device)


def _save_for_backward(ctx, inputs, output):
    _, ctx.backend, ctx.plan = inputs
    ctx.save_for_backward(output)


def _softmax_fwd_backward(ctx, dy):
    (y,) = ctx.saved_tensors
    return softmax_bwd(y, dy, ctx.backend, ctx.plan), None, None


softmax_fwd.register_autograd(_softmax_fwd_backward, setup_context=_save_for_backward)


def _save_bwd_inputs(ctx, inputs, output):
    y, dy, ctx.backend, ctx.plan = inputs
    ctx.save_for_backward(y, dy)


def _softmax_bwd_backward(ctx, g):
    """Second order (double backward: Hessian-vector products, gradient penalties), for dx = y * (dy - s) with
    s = sum(y * dy) over the row: d/d(dy) = y * (g - sum(g * y)), which is the first-order kernel on (y, g), and
    d/dy = g * (dy - s) - sum(g * y) * dy, a few row-wise ops left to PyTorch in fp32 (not a kernel of ours)."""
    y, dy = ctx.saved_tensors
    grad_y = grad_dy = None
    if ctx.needs_input_grad[0]:
        y32, dy32, g32 = y.float(), dy.float(), g.float()
        s = (y32 * dy32).sum(-1, keepdim=True)
        t = (y32 * g32).sum(-1, keepdim=True)
        grad_y = (g32 * (dy32 - s) - t * dy32).to(y.dtype)
    if ctx.needs_input_grad[1]:
        grad_dy = softmax_bwd(y, g, ctx.backend, ctx.plan).to(dy.dtype)
    return grad_y, grad_dy, None, None


softmax_bwd.register_autograd(_softmax_bwd_backward, setup_context=_save_bwd_inputs)


def _softmax_fwd_vmap(info, in_dims, x, backend, plan):
    # The ops work on the last dim of a tensor of any rank, so a batch is more rows: one launch for the whole batch
    # where torch's default vmap rule would launch once per sample.
    return softmax_fwd(batch_first(x, in_dims[0], info.batch_size), backend, plan), 0


def _softmax_bwd_vmap(info, in_dims, y, dy, backend, plan):
    y, dy = (batch_first(t, bdim, info.batch_size) for t, bdim in zip((y, dy), in_dims[:2]))
    return softmax_bwd(y, dy, backend, plan), 0


if hasattr(softmax_fwd, "register_vmap"):  # torch >= 2.5
    softmax_fwd.register_vmap(_softmax_fwd_vmap)
    softmax_bwd.register_vmap(_softmax_bwd_vmap)


def _resolve_plan(backend: str, plan: str, x: torch.Tensor, direction: str) -> str:
    """The concrete plan for rows over the last dim of `x`, or a ValueError. Runs inside the custom
    ops, so torch.compile never traces the backends' (native) plan queries."""
    module = _backend_module(backend)
    cols = x.shape[-1]
    rows = x.numel() // cols if cols else 0
    if plan == "auto":
        return module.choose_plan(rows, cols, x.dtype, x.device, direction) if rows * cols > 0 else plan
    if plan not in module.plans():
        raise ValueError(f"softmax: unknown plan {plan!r} for backend {backend!r}; choose 'auto' or one of "
                         f"{', '.join(module.plans())}")
    if rows * cols > 0:
        module.check_plan(plan, rows, cols, x.dtype, x.device)
    return plan


def softmax(x: torch.Tensor, dim: int = -1, *, backend: str = "auto", plan: str = "auto") -> torch.Tensor:
    """torch.softmax(x, dim) computed by our kernels; differentiable; output dtype = x.dtype.

    backend: "cuda", "triton" or "auto" (see choose_backend); plan: "auto" or one of
    softmax_plans(backend). `x` is never modified; any layout is accepted (non-contiguous inputs
    are read through a strided view when the leading dims collapse, else copied).
    """
    check_float_tensor(x, "x", "softmax")
    check_name(plan, "plan", "softmax", "'auto' or a name from softmax_plans(backend)")
    if isinstance(dim, bool) or not isinstance(dim, int):
        raise TypeError(f"softmax: dim must be an int, got {dim!r} of type {type(dim).__name__}")
    ndim = max(x.dim(), 1)  # like torch, a 0-d tensor takes dim 0 or -1
    if not -ndim <= dim < ndim:
        raise IndexError(f"softmax: dim {dim!r} is out of range for a tensor with ndim {x.dim()} "
                         f"(expected a dim in [{-ndim}, {ndim - 1}])")
    chosen = choose_backend(x) if backend == "auto" else resolve_backend(backend, x, "softmax")
    rows_last = x.reshape(1) if x.dim() == 0 else x.movedim(dim, -1)
    y = softmax_fwd(rows_last, chosen, plan)
    return y.reshape(()) if x.dim() == 0 else y.movedim(-1, dim)
