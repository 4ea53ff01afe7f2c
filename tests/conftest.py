"""pytest setup for the CPU tier.

On a machine without a CUDA device, Triton kernels can only run through the interpreter, and
Triton decides that when a kernel module is imported: set TRITON_INTERPRET=1 before any import.
"""
import os

import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")

# (cuda_portfolio.triton_kernels applies its Triton 3.6 interpreter fixes itself when imported under it.)
