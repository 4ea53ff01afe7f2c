"""cuda_portfolio: row-wise softmax and GEMM for PyTorch in native CUDA and Triton.

    import cuda_portfolio as cp
    cp.available_backends()                            # {"cuda": (bool, reason), "triton": (bool, reason)}
    cp.softmax(x, dim=-1, backend="auto", plan="auto")  # differentiable; cp.softmax_plans(backend)
    cp.matmul(a, b, backend="auto", kernel="auto")      # differentiable; cp.matmul_kernels(backend)
    cp.copy(x, backend="auto")                         # the bounds-checked copy (the first op wired end to end)
"""
from ._backends import available_backends
from .copy import copy
from .softmax import softmax, softmax_plans
from .matmul import matmul, matmul_kernels

__version__ = "0.1.0"

__all__ = ["available_backends", "copy", "softmax", "softmax_plans", "matmul", "matmul_kernels", "__version__"]
