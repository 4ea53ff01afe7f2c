"""GEMM cases: our kernels per backend, cuBLAS (torch.matmul) as peer and ceiling, cuBLAS A/A.

Our kernels are timed through the backend modules' matmul(a, b, out, kernel, allow_tf32) (the
interface in native/matmul.py and triton_kernels/matmul.py); "auto" resolves with the module's
choose_kernel and the record names the kernel. fp32 passes
torch.backends.cuda.matmul.allow_tf32 to every provider (--allow-tf32): Triton and cuBLAS then use tf32, the CUDA
ladder has no tf32 path and stays fp32; all are held to TF32_TOLERANCE then.
"""
from __future__ import annotations

import torch

from .case import CONTROL, PEER, Case, Provider, our_providers

BACKEND_MODULES = {"cuda": "cuda_portfolio.native.matmul", "triton": "cuda_portfolio.triton_kernels.matmul"}
TOLERANCE = {torch.float32: 1e-4, torch.float16: 1e-2, torch.bfloat16: 1e-2}
TF32_TOLERANCE = 5e-3


def make_matmul_case(shape, dtype: torch.dtype, backends, kernels, device: str = "cuda",
                     peers: bool = True) -> Case:
    m, n, k = shape
    allow_tf32 = bool(torch.backends.cuda.matmul.allow_tf32)

    def make_inputs(generator):
        a = torch.randn(m, k, device=device, dtype=torch.float32, generator=generator).to(dtype)
        b = torch.randn(k, n, device=device, dtype=torch.float32, generator=generator).to(dtype)
        return a, b

    def reference(inputs):
        return inputs[0].double() @ inputs[1].double()

    tolerance = TF32_TOLERANCE if dtype == torch.float32 and allow_tf32 else TOLERANCE[dtype]
    case = Case("matmul", "fwd", dtype, tuple(shape), make_inputs, reference, tolerance, flops=2 * m * n * k,
                device=device)
    # choose_kernel / check_kernel decide from the operands' shapes, dtype, strides and alignment (fresh allocations
    # are aligned as make_inputs' are); Triton's choose_kernel also times both kernels on them, once per class.
    a = torch.empty(m, k, device=device, dtype=dtype)
    b = torch.empty(k, n, device=device, dtype=dtype)
    for backend in backends:
        case.providers += our_providers(
            backend, BACKEND_MODULES[backend], kernels, list_names=lambda m: m.kernels(),
            choose=lambda m: m.choose_kernel(a, b, allow_tf32),
            check=lambda m, kernel: m.check_kernel(kernel, a, b, allow_tf32),
            bind=lambda m, kernel: _bind_ours(m, kernel, allow_tf32),
            describe=lambda m, kernel: _describe_ours(m, kernel, allow_tf32))
    if peers:
        case.providers += [Provider("cublas", PEER, bind=_bind_cublas),
                           Provider("cublas (A/A)", CONTROL, bind=_bind_cublas, control_of="cublas")]
    return case


def _bind_cublas(inputs):
    a, b = inputs
    return lambda: torch.matmul(a, b)


def _describe_ours(module, kernel, allow_tf32):
    """Which tile configuration ran, not only which kernel: Triton's autotuned pick, the CUDA
    wgmma_tma plan (tile, stages, split K)."""
    return lambda inputs: module.kernel_config(inputs[0], inputs[1], kernel, allow_tf32)


def _bind_ours(module, kernel, allow_tf32):
    def bind(inputs):
        a, b = inputs

        def launch():
            out = torch.empty(a.shape[0], b.shape[1], device=a.device, dtype=a.dtype)
            module.matmul(a, b, out, kernel, allow_tf32)
            return out
        return launch
    return bind
