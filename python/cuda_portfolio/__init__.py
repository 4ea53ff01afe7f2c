"""cuda_portfolio: row-wise softmax and GEMM for PyTorch in native CUDA and Triton.

    import cuda_portfolio as cp
    cp.available_backends()   # {"cuda": (bool, reason), "triton": (bool, reason)}
    cp.copy(x, backend="auto")
"""
from ._backends import available_backends
from .copy import copy

__version__ = "0.1.0"

__all__ = ["available_backends", "copy", "__version__"]
