"""Triton kernels and their launchers, one op per file. These modules import only triton and torch."""
import os

if os.environ.get("TRITON_INTERPRET", "0") == "1":
    from .interpreter_fixes import fix_triton_36_interpreter

    fix_triton_36_interpreter()
