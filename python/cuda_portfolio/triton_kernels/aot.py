"""Compile the Triton kernels ahead of time for a GPU that need not be present.

Each kernel module exposes `aot_specs(dtype)`: AotSpecs (name, jit function, signature, constexprs, launch options,
specializations) for the configurations worth inspecting. `compile_spec` turns one into Triton's compiled kernel, whose
`.asm` holds every stage (ttir, ttgir, llir, ptx, cubin). Used by the CPU tier and by scripts/inspect_kernel.py. Needs
compiled (not interpreted) kernels: TRITON_INTERPRET unset.
"""
from __future__ import annotations

import importlib
import inspect
from typing import NamedTuple

import torch

from . import LAUNCH_OPTIONS

OP_MODULES = ("copy", "softmax", "matmul",)
TRITON_DTYPES = {torch.float32: "fp32", torch.float16: "fp16", torch.bfloat16: "bf16"}


class AotSpec(NamedTuple):
    name: str
    fn: object
    signature: dict
    constexprs: dict
    options: dict = {}  # launch options the kernel really runs with: num_warps, and num_stages or maxnreg
    # the integer specializations this configuration launches in (compile_spec's `aligned`): both, or only one
    # when the launch picks the configuration by alignment (softmax's EDGES kernels: the unaligned one only)
    specializations: tuple = (False, True)


def parse_arch(arch: str) -> tuple[int, int]:
    """'sm_90a' -> (90, 32): Triton's capability number and warp size for GPUTarget."""
    digits = arch.lower().removeprefix("sm_").rstrip("a")
    if not digits.isdigit():
        raise ValueError(f"arch must look like sm_90a or sm_80, got {arch!r}")
    return int(digits), 32


def integer_args(spec: AotSpec) -> list[int]:
    """Positions of the integer (i32/i64) arguments: sizes, strides, counts."""
    return [i for i, t in enumerate(spec.signature.values()) if t in ("i32", "i64")]


def compile_spec(spec: AotSpec, arch: str = "sm_90a", aligned: bool = False):
    """Triton's compiled kernel for `spec`. aligned=False: integer arguments as unknown values (a row
    stride or length that is not a multiple of 16); aligned=True: every integer argument divisible by
    16, the specialization a launch gets when they all are (e.g. 32768 columns, contiguous rows):
    wider accesses, async copies for 16-bit rows, and different register allocation."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    capability, warp_size = parse_arch(arch)
    # Pointers get the 16-byte alignment a launch with torch tensors specializes on, so the
    # compiled code is what runs (vector loads, pipelining), not a scalar fallback.
    pointer_args = [i for i, t in enumerate(spec.signature.values()) if t.startswith("*")]
    divisible = pointer_args + (integer_args(spec) if aligned else [])
    attrs = {(i,): [["tt.divisibility", 16]] for i in divisible}
    source = ASTSource(fn=spec.fn, signature=spec.signature, constexprs=spec.constexprs, attrs=attrs)
    return triton.compile(source, target=GPUTarget("cuda", capability, warp_size),
                          options={**LAUNCH_OPTIONS, **spec.options})


def ptxas_path(arch: str = "sm_90a") -> str:
    """The ptxas Triton builds `arch`'s cubins with, so spill counts (ptxas -v on the PTX) are those of the cubin:
    Triton 3.6 and later pick it per architecture (3.9 takes its newer one, ptxas-blackwell, from sm_90 on, and its
    PTX needs it), 3.4 has one. TRITON_PTXAS_PATH and the like still apply (Triton's knobs)."""
    from triton.backends.nvidia import compiler

    if inspect.signature(compiler.get_ptxas).parameters:
        return compiler.get_ptxas(parse_arch(arch)[0]).path
    return compiler.get_ptxas().path


def all_specs(dtype: torch.dtype, ops=OP_MODULES) -> list[AotSpec]:
    specs = []
    for op in ops:
        module = importlib.import_module(f"{__package__}.{op}")
        specs.extend(module.aot_specs(dtype))
    return specs
