"""Triton kernels and their launchers, one op per file. These modules import only triton, torch and
the package's backend helpers (cuda_portfolio._backends)."""
from .._backends import triton_interpreting

if triton_interpreting():
    from .interpreter_fixes import fix_triton_36_interpreter

    fix_triton_36_interpreter()
