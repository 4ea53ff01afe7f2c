"""Triton kernels and their launchers, one op per file. These modules import triton, torch, numpy
(interpreter_fixes) and the package's own helpers (cuda_portfolio._backends, .tuning)."""
from .._backends import triton_interpreting

# Options every launch passes (and aot.compile_spec): floating-point contraction (a * b + c as one FFMA, e.g. the
# exponentials' scale and shift) asked for explicitly. It has been Triton's default, the kernels were measured with it,
# and Triton 3.9 warns that its default turns off in 3.10 (ptxas then runs with --fmad=false). With it given, 3.6
# compiles every AOT configuration to the same cubin as without (session 62).
LAUNCH_OPTIONS = {"enable_fp_fusion": True}

if triton_interpreting():
    from .interpreter_fixes import fix_triton_36_interpreter

    fix_triton_36_interpreter()
