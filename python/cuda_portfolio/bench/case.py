"""What one benchmark case is: inputs, a float64 reference, the work it counts, and its providers.

A case is one (op, direction, dtype, shape). Its providers are our kernels (one per backend and
plan/kernel), the peers (torch eager, torch.compile, Liger, cuBLAS), an A/A control (a peer
timed a second time under another name, so the report shows how far two identical providers land
apart) and, for softmax, a reference op: an elementwise torch op with the case's own reads and writes,
which computes something else (it is not validated) and says what a kernel that only moves those bytes
takes at this size, in the same rounds. Every provider of a case reads the same input copies, and every
one but the reference op is checked against the same reference.
"""
from __future__ import annotations

import importlib
import math
from dataclasses import dataclass, field
from typing import Callable, Optional

import torch

Inputs = tuple  # tuple[torch.Tensor, ...]

OURS, PEER, CONTROL, REFERENCE = "ours", "peer", "control", "reference"


@dataclass
class Provider:
    name: str                                   # "cuda", "triton", "torch", "torch.compile", "liger", "cublas", ...
    kind: str                                   # OURS, PEER, CONTROL or REFERENCE
    bind: Optional[Callable[[Inputs], Callable[[], torch.Tensor]]] = None  # inputs -> one launch
    plan: Optional[str] = None                  # requested plan / kernel name (ours), else None
    resolved_plan: Optional[str] = None         # what "auto" picked (ours), else None
    status: str = "ok"                          # "refused" / "unavailable" when it cannot run here, "error"
    # when our backend module failed
    reason: str = ""                            # why not, when status is not "ok"
    control_of: Optional[str] = None            # CONTROL: the provider it repeats
    describe: Optional[Callable[[Inputs], Optional[str]]] = None  # inputs -> what ran (e.g. a tuned config)


@dataclass
class Case:
    op: str                                     # "softmax" or "matmul"
    direction: str                              # "fwd" or "bwd" ("fwd" for matmul)
    dtype: torch.dtype
    shape: tuple
    make_inputs: Callable[[torch.Generator], Inputs]  # fresh random inputs on `device` from this generator
    reference: Callable[[Inputs], torch.Tensor]  # float64 result for one input set
    tolerance: float                            # max ||out - ref|| / ||ref||
    bytes: Optional[int] = None                 # softmax: bytes read + written once
    flops: Optional[int] = None                 # matmul: 2*M*N*K
    providers: list = field(default_factory=list)
    device: str = "cuda"
    # Rows i..j of every input give rows i..j of the reference (softmax): validated a block of rows at a time.
    rows_independent: bool = False

    @property
    def working_set_bytes(self) -> int:
        if self.bytes is not None:
            return self.bytes
        m, n, k = self.shape
        return (m * k + k * n + m * n) * torch.empty((), dtype=self.dtype).element_size()


def relative_error(out: torch.Tensor, ref64: torch.Tensor) -> tuple[float, str]:
    """(||out - ref|| / ||ref|| in float64, problem text or ''); non-finite output is a problem."""
    return _combined(*_error_sums(out, ref64))


# float64 bytes of one block of rows in blockwise_relative_error: small beside what a case's graphs hold.
VALIDATION_BLOCK_BYTES = 64 << 20


def blockwise_relative_error(out: torch.Tensor, reference: Callable[[Inputs], torch.Tensor],
                             inputs: Inputs) -> tuple[float, str]:
    """relative_error against reference(inputs), a block of rows at a time (a rows_independent case): no float64
    copy of the whole output exists. Whole, the vocab preset's fp32 4096x151936 backward needs 4.6 GiB a copy (the
    reference, the output's and their difference) on top of what its providers' graphs hold; a block, 64 MiB."""
    rows = inputs[0].shape[0]
    if not isinstance(out, torch.Tensor) or out.dim() == 0 or out.shape[0] != rows:
        got = tuple(out.shape) if isinstance(out, torch.Tensor) else type(out).__name__
        return float("inf"), f"output shape {got} does not have the inputs' {rows} rows"
    block = max(1, VALIDATION_BLOCK_BYTES // max(1, 8 * out[0].numel()))
    diff2 = ref2 = 0.0
    bad = 0
    for start in range(0, rows, block):
        rows_here = slice(start, start + block)
        part = _error_sums(out[rows_here], reference(tuple(t[rows_here] for t in inputs)))
        if part[3]:
            return _combined(*part)
        diff2, ref2, bad = diff2 + part[0], ref2 + part[1], bad + part[2]
    return _combined(diff2, ref2, bad, "")


def _error_sums(out: torch.Tensor, ref64: torch.Tensor) -> tuple[float, float, int, str]:
    """(||out - ref||^2, ||ref||^2, outputs non-finite where the reference is finite, shape problem or '')."""
    if not isinstance(out, torch.Tensor) or tuple(out.shape) != tuple(ref64.shape):
        got = tuple(out.shape) if isinstance(out, torch.Tensor) else type(out).__name__
        return 0.0, 0.0, 0, f"output shape {got} != reference shape {tuple(ref64.shape)}"
    out64 = out.double()
    bad = int((~torch.isfinite(out64) & torch.isfinite(ref64)).sum())
    return float((out64 - ref64).norm()) ** 2, float(ref64.norm()) ** 2, bad, ""


def _combined(diff2: float, ref2: float, bad: int, problem: str) -> tuple[float, str]:
    if problem:
        return float("inf"), problem
    if bad:
        return float("inf"), f"{bad} non-finite (NaN/inf or unwritten) outputs where the reference is finite"
    diff, norm = math.sqrt(diff2), math.sqrt(ref2)
    return (diff / norm if norm > 0 else diff), ""


def selected_names(plans, listed) -> list[str]:
    """The plan/kernel names timed for one backend: ["auto"] for plans "auto", every listed name for "all", else
    the requested names (a tuple) that this backend lists, in the given order, after "auto" when requested (the
    report takes a case's first record of a backend as its auto pick)."""
    if plans == "auto":
        return ["auto"]
    if plans == "all":
        return list(listed)
    return ["auto"] * ("auto" in plans) + [name for name in plans if name != "auto" and name in listed]


def our_providers(backend: str, module_path: str, plans, list_names, choose, check, bind,
                  describe=None) -> list:
    """One provider per selected plan/kernel name of `backend` (plans: "auto", "all" or a tuple of names; see
    selected_names).

    list_names(module) -> names; choose(module) -> the name "auto" picks; check(module, name) raises
    ValueError when that name cannot run this case; bind(module, name) -> Provider.bind;
    describe(module, name) -> Provider.describe (optional).
    """
    import cuda_portfolio as cp

    wanted = plans if isinstance(plans, str) else ",".join(plans)
    ok, reason = cp.available_backends()[backend]
    if not ok:
        return [Provider(backend, OURS, plan=wanted, status="unavailable", reason=reason)]
    try:
        module = importlib.import_module(module_path)
    except ImportError as exc:
        return [Provider(backend, OURS, plan=wanted, status="unavailable", reason=f"{module_path}: {exc}")]
    providers = []
    for name in selected_names(plans, [] if plans == "auto" else list_names(module)):
        resolved = None if name == "auto" else name
        try:
            resolved = resolved or choose(module)
            check(module, resolved)
        except ValueError as exc:  # this plan/kernel cannot run this case here: say why
            providers.append(Provider(backend, OURS, plan=name, resolved_plan=resolved, status="refused",
                                      reason=str(exc)))
            continue
        except Exception as exc:  # the backend module broke its interface: report it, keep going
            providers.append(Provider(backend, OURS, plan=name, resolved_plan=resolved, status="error",
                                      reason=f"{type(exc).__name__}: {exc}"))
            continue
        providers.append(Provider(backend, OURS, bind=bind(module, resolved), plan=name, resolved_plan=resolved,
                                  describe=describe(module, resolved) if describe else None))
    return providers
