"""Which backends can run here, and which one a call gets.

`available_backends()` never raises: every missing piece becomes a reason string, so a user on a
machine without nvcc, without a GPU or without Triton sees why instead of a traceback.
"""
from __future__ import annotations

import functools
import importlib
import os
from pathlib import Path

import torch

BACKENDS = ("cuda", "triton")
_PACKAGE_DIR = Path(__file__).resolve().parent


def triton_interpreting() -> bool:
    """True when Triton kernels run through its CPU interpreter (TRITON_INTERPRET=1)."""
    return os.environ.get("TRITON_INTERPRET", "0") == "1"


def compiled_gpu_unavailable(purpose: str) -> str | None:
    """Why this process cannot run compiled kernels on a GPU, or None. `purpose` names what
    needs them ("benchmarks", "the GPU tier", ...) for the message."""
    if triton_interpreting():
        return f"TRITON_INTERPRET=1 is set: {purpose} need compiled kernels on a GPU; unset it"
    if not torch.cuda.is_available():
        return (f"no CUDA device visible to torch {torch.__version__} (CUDA {torch.version.cuda}); "
                f"{purpose} need a GPU")
    return None


@functools.lru_cache(maxsize=None)
def _native_import():
    """(module or None, reason)."""
    marker = _PACKAGE_DIR / "NATIVE_UNAVAILABLE.txt"
    try:
        return importlib.import_module("cuda_portfolio._native"), ""
    except ImportError as exc:
        if marker.exists():
            return None, marker.read_text().strip()
        return None, f"cuda_portfolio._native failed to import ({exc}); reinstall with nvcc on the PATH"


def native_module():
    """The pybind11 module, or a RuntimeError saying why it is missing."""
    module, reason = _native_import()
    if module is None:
        raise RuntimeError(f"the cuda backend is unavailable: {reason}")
    return module


# Backend resolution runs on every op call, inside CUDA-graph capture and under torch.compile:
# the statuses are computed once per process, and torch.compile takes them as constants instead
# of tracing into module imports and CUDA queries.
@torch._dynamo.assume_constant_result
def _cuda_status() -> tuple[bool, str]:
    return _cuda_status_cached()


@torch._dynamo.assume_constant_result
def _triton_status() -> tuple[bool, str]:
    return _triton_status_cached(triton_interpreting())


@functools.lru_cache(maxsize=None)
def _cuda_status_cached() -> tuple[bool, str]:
    module, reason = _native_import()
    if module is None:
        return False, reason
    if not torch.cuda.is_available():
        return False, f"torch {torch.__version__} sees no CUDA device (torch built with CUDA {torch.version.cuda})"
    count, why = module.device_count()
    if count == 0:
        return False, f"the native module's CUDA runtime sees no device: {why}"
    major, minor = module.compute_capability(torch.cuda.current_device())
    hopper = "with" if module.has_sm90a_kernels else "without"
    return True, f"native module on sm_{major}{minor}, built {hopper} the sm_90a kernels"


@functools.lru_cache(maxsize=None)
def _triton_status_cached(interpreting: bool) -> tuple[bool, str]:
    try:
        import triton
    except ImportError as exc:
        return False, f"triton is not installed ({exc})"
    if interpreting:
        return True, f"triton {triton.__version__} interpreter (TRITON_INTERPRET=1): CPU tensors, slow, for testing"
    if not torch.cuda.is_available():
        return False, ("no CUDA device for Triton; set TRITON_INTERPRET=1 to run the Triton kernels on CPU "
                       "tensors through the interpreter")
    return True, f"triton {triton.__version__} on {torch.cuda.get_device_name()}"


def available_backends() -> dict[str, tuple[bool, str]]:
    """{"cuda": (available, reason), "triton": (available, reason)}."""
    return {"cuda": _cuda_status(), "triton": _triton_status()}


def resolve_backend(backend: str, x: torch.Tensor, op: str) -> str:
    """The concrete backend ("cuda" or "triton") for running `op` on `x`, or a clear error."""
    if backend not in ("auto",) + BACKENDS:
        raise ValueError(f"{op}: unknown backend {backend!r}; choose one of 'auto', 'cuda', 'triton'")
    if backend == "cuda":
        if x.device.type != "cuda":
            raise ValueError(f"{op}: backend='cuda' needs a CUDA tensor, got a tensor on {x.device}")
        ok, reason = _cuda_status()
        if not ok:
            raise RuntimeError(f"{op}: the cuda backend is unavailable: {reason}")
        return "cuda"
    if backend == "triton":
        ok, reason = _triton_status()
        if not ok:
            raise RuntimeError(f"{op}: the triton backend is unavailable: {reason}")
        if x.device.type == "cpu" and not triton_interpreting():
            raise ValueError(f"{op}: backend='triton' got a CPU tensor; CPU tensors run only under TRITON_INTERPRET=1")
        if x.device.type not in ("cpu", "cuda"):
            raise ValueError(f"{op}: backend='triton' needs a CUDA tensor, got a tensor on {x.device}")
        return "triton"
    # auto
    if x.device.type == "cuda":
        statuses = available_backends()
        for name in BACKENDS:
            if statuses[name][0]:
                return name
        raise RuntimeError(f"{op}: no backend can run here: " +
                           "; ".join(f"{n}: {r}" for n, (_, r) in statuses.items()))
    if x.device.type == "cpu" and triton_interpreting():
        return resolve_backend("triton", x, op)
    raise ValueError(f"{op}: cuda_portfolio runs on CUDA tensors, got a tensor on {x.device} "
                     "(set TRITON_INTERPRET=1 to run the Triton kernels on CPU tensors through the interpreter)")
