"""Softmax cases: our plans per backend, torch eager, torch.compile, Liger (when installed), the reference op (an
elementwise op with the same bytes, not validated), A/A.

Our kernels are timed through the backend modules' forward/backward (the interface in
native/softmax.py and triton_kernels/softmax.py), which is what cp.softmax launches without its
autograd bookkeeping; "auto" resolves with the module's choose_plan and the record names the plan.
Backward inputs are y = softmax(x) and a random dy; Liger's backward is reached through autograd
on its own forward, the only entry point it documents.
"""
from __future__ import annotations

import warnings

import torch

from .case import CONTROL, PEER, REFERENCE, Case, Provider, our_providers
from .timing import first_line

BACKEND_MODULES = {"cuda": "cuda_portfolio.native.softmax", "triton": "cuda_portfolio.triton_kernels.softmax"}
TOLERANCE = {"fwd": {torch.float32: 1e-5, torch.float16: 5e-3, torch.bfloat16: 1e-2},
             "bwd": {torch.float32: 1e-4, torch.float16: 5e-3, torch.bfloat16: 1e-2}}


def softmax_bytes(direction: str, rows: int, cols: int, dtype: torch.dtype) -> int:
    """fwd reads x and writes y; bwd reads y and dy and writes dx: each once."""
    tensors = 2 if direction == "fwd" else 3
    return tensors * rows * cols * torch.empty((), dtype=dtype).element_size()


def make_softmax_case(shape, dtype: torch.dtype, direction: str, backends, plans,
                      device: str = "cuda", peers: bool = True) -> Case:
    rows, cols = shape

    def make_inputs(generator):
        x = torch.randn(rows, cols, device=device, dtype=torch.float32, generator=generator).mul_(3.0).to(dtype)
        if direction == "fwd":
            return (x,)
        # y from the stored x, as a provider that takes x (Liger's backward uses the y its own forward saved) gets
        # it: from the fp32 x before rounding, a bf16 y differed from that by about 1% and Liger's correct backward
        # read 1.2-1.5e-2 from the reference, WRONG against the 1e-2 tolerance, in every preset before session 67.
        y = torch.softmax(x.float(), dim=-1).to(dtype)
        dy = torch.randn(rows, cols, device=device, dtype=torch.float32, generator=generator).to(dtype)
        return x, y, dy

    case = Case("softmax", direction, dtype, tuple(shape), make_inputs, _reference(direction),
                TOLERANCE[direction][dtype], bytes=softmax_bytes(direction, rows, cols, dtype), device=device,
                rows_independent=True)
    dev = torch.device(device)
    for backend in backends:
        case.providers += our_providers(
            backend, BACKEND_MODULES[backend], plans, list_names=lambda m: m.plans(),
            choose=lambda m: m.choose_plan(rows, cols, dtype, dev, direction),
            check=lambda m, plan: m.check_plan(plan, rows, cols, dtype, dev),
            bind=lambda m, plan: _bind_ours(m, direction, plan),
            describe=lambda m, plan: _describe_ours(m, direction, plan))
    if peers:
        case.providers += peer_providers(direction)
    return case


def softmax_backward_reference(y: torch.Tensor, dy: torch.Tensor) -> torch.Tensor:
    """dx = y * (dy - sum(y * dy)) over the last dim, in float64."""
    y, dy = y.double(), dy.double()
    return y * (dy - (dy * y).sum(dim=-1, keepdim=True))


def softmax_backward_error_scale(y: torch.Tensor, dy: torch.Tensor) -> float:
    """||y * dy|| + ||y * sum(y * dy)||: the size of the two terms the backward subtracts.

    Relative to ||dx||, the cancellation on short rows moves even a correctly rounded fp32 result
    past 1e-4 (1% of random 1x7 rows); relative to this scale fp32 stays under 2e-7.
    """
    y, dy = y.double(), dy.double()
    return float((y * dy).norm() + (y * (y * dy).sum(dim=-1, keepdim=True)).norm())


def _reference(direction: str):
    def forward(inputs):
        return torch.softmax(inputs[0].double(), dim=-1)

    def backward(inputs):
        return softmax_backward_reference(inputs[1], inputs[2])

    return forward if direction == "fwd" else backward


def _bind_ours(module, direction, plan):
    def bind(inputs):
        if direction == "fwd":
            x = inputs[0]

            def forward():
                y = torch.empty_like(x)
                module.forward(x, y, plan)
                return y
            return forward
        _, y, dy = inputs

        def backward():
            dx = torch.empty_like(y)
            module.backward(y, dy, dx, plan)
            return dx
        return backward
    return bind


def _describe_ours(module, direction, plan):
    """What the backend launched on the case's operands: Triton's warps, tile and tuning; the CUDA split_row's
    layout (the other CUDA plans have one, and the record names the plan)."""
    def describe(inputs):
        return module.describe_launch(inputs[:1] if direction == "fwd" else inputs[1:], plan, direction)
    return describe


def _torch_forward(x):
    return torch.softmax(x, dim=-1)


def _torch_backward(y, dy):
    return torch._softmax_backward_data(dy, y, -1, y.dtype)


def _bind_eager(direction):
    def bind(inputs):
        if direction == "fwd":
            return lambda: _torch_forward(inputs[0])
        return lambda: _torch_backward(inputs[1], inputs[2])
    return bind


def _bind_compiled(direction):
    # A fresh dynamo cache per case: each shape compiles once, specialized, and never hits the
    # recompile limit (past it, dynamo would silently run eager and we would time eager twice).
    torch._dynamo.reset()
    warnings.filterwarnings("ignore", message="Online softmax is disabled")  # inductor's per-compile notice
    compiled = torch.compile(_torch_forward if direction == "fwd" else _torch_backward, dynamic=False)

    def bind(inputs):
        if direction == "fwd":
            return lambda: compiled(inputs[0])
        return lambda: compiled(inputs[1], inputs[2])
    return bind


def _liger_provider(direction) -> Provider:
    try:
        from liger_kernel.ops.softmax import LigerSoftmaxFunction
    except ImportError as exc:
        return Provider("liger", PEER, status="unavailable", reason=f"liger-kernel not installed ({first_line(exc)})")

    return Provider("liger", PEER, bind=bind_through_autograd(LigerSoftmaxFunction.apply, direction))


def bind_through_autograd(softmax, direction):
    """Launches of `softmax` (x -> y) forward, or of its backward through torch.autograd.grad.

    The backward's forward runs once here, on a side stream: autograd launches each backward kernel on its forward's
    stream, and the legacy default stream cannot join a graph capture, so a forward run there made every capture of
    the backward fail (Liger's, session 70; the earlier presets captured it only because a failed capture had left
    its stream current for the rest of the process)."""
    def bind(inputs):
        if direction == "fwd":
            return lambda: softmax(inputs[0])
        x = inputs[0].detach().requires_grad_()
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            y = softmax(x)
        torch.cuda.current_stream().wait_stream(side)
        dy = inputs[2]
        return lambda: torch.autograd.grad(y, x, dy, retain_graph=True)[0]
    return bind


SAME_TRAFFIC = "elementwise (same bytes)"


def _bind_same_traffic(direction):
    """The reference op: torch's elementwise kernel over the case's own operands with the softmax's reads and writes
    (forward: -x, one read and one write; backward: y + dy, two reads and one write), its output allocated per launch
    as ours is. What moving these bytes alone takes at this size, timed in the same rounds: the 1 GiB copy ceiling
    leaves out a launch's fixed costs, which weigh on the small cells (4x4M bf16 moves 64 MiB)."""
    def bind(inputs):
        if direction == "fwd":
            return lambda: torch.neg(inputs[0])
        return lambda: torch.add(inputs[1], inputs[2])
    return bind


def peer_providers(direction) -> list[Provider]:
    return [Provider("torch", PEER, bind=_bind_eager(direction)),
            Provider("torch.compile", PEER, bind=_bind_compiled(direction)),
            _liger_provider(direction),
            Provider(SAME_TRAFFIC, REFERENCE, bind=_bind_same_traffic(direction)),
            Provider("torch (A/A)", CONTROL, bind=_bind_eager(direction), control_of="torch")]
