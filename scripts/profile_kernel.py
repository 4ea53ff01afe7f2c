#!/usr/bin/env python3
"""Launch an op's kernels inside a profiler capture range, one named NVTX range per variant.

    nsys profile --capture-range=cudaProfilerApi -o softmax python scripts/profile_kernel.py --op softmax
    ncu --profile-from-start off --nvtx python scripts/profile_kernel.py --op matmul --iters 1
    ncu --profile-from-start off python scripts/profile_kernel.py --op matmul --dtype bf16 --shape 128x8192x8192 \
        --backend cuda --with-torch --iters 1     (our kernel beside cuBLAS's: ncu names cuBLAS's tile config)

Correctness first: every variant is validated against float64 PyTorch, then launched twice more so
that Triton compiles and autotunes, all before torch.cuda.profiler.start(); only the launches under
test are inside the capture range (cudaProfilerStart/Stop). These runs are for looking, not timing.
Under ncu, name the kernel (--plan persistent_tma, not auto) for Triton matmul: its tuner times the
candidates with CUDA events inside the profiled process and can pick another kernel than a benchmark
run does (at 128x8192x8192 it picked tiled, 47 us, over persistent_tma, 37 us; docs/perf-log.md).
"""
from __future__ import annotations

import argparse
import sys
from types import SimpleNamespace

import torch

import _common as common


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    common.add_case_arguments(parser)
    parser.add_argument("--backend", default="both", choices=("cuda", "triton", "both"))
    parser.add_argument("--plan", default="auto",
                        help="softmax plan / matmul kernel: a name, 'auto' (the backend's choice) or 'all'")
    parser.add_argument("--direction", default="fwd", choices=("fwd", "bwd", "both"), help="softmax only")
    parser.add_argument("--iters", type=int, default=10, help="launches per variant inside the range (default 10)")
    parser.add_argument("--with-torch", action="store_true",
                        help="also profile the torch op on its own inputs (torch.matmul: cuBLAS; torch.softmax)")
    args = parser.parse_args(argv)
    dtype, shape = common.case_dtype_and_shape(parser, args)
    if args.iters < 1:
        parser.error("--iters must be >= 1")
    common.exit_without_gpu("profile_kernel.py")

    directions = common.DIRECTIONS if args.direction == "both" else (args.direction,)
    if args.op != "softmax":
        directions = ("fwd",)
    cases, failed = validated_cases(args.op, args.backend, args.plan, directions, dtype, shape)
    if args.with_torch and args.op == "copy":
        print("skip --with-torch: copy has no torch peer kernel to profile", flush=True)
    elif args.with_torch:
        for direction in directions:
            peer = torch_peer(args.op, direction, dtype, shape)
            peer.launch()
            peer.launch()
            cases.append(peer)
    torch.cuda.synchronize()
    if not cases:
        print("profile_kernel.py: nothing to profile", file=sys.stderr)
        return 1

    torch.cuda.profiler.start()
    for case in cases:
        with common.nvtx_range(case.label):
            for _ in range(args.iters):
                case.launch()
        torch.cuda.synchronize()
    torch.cuda.profiler.stop()
    print(f"profiled {len(cases)} variant(s) x {args.iters} launch(es) between cudaProfilerStart/Stop"
          + (f"; {failed} failed validation and were left out" if failed else ""))
    return 1 if failed else 0


def torch_peer(op, direction, dtype, shape):
    """The torch op itself on fresh inputs, with a label and launch() like a case (the reference, so not
    validated): torch.matmul (cuBLAS), torch.softmax or its backward."""
    if op == "matmul":
        m, n, k = shape
        a, b = torch.randn(m, k, device="cuda").to(dtype), torch.randn(k, n, device="cuda").to(dtype)
        return SimpleNamespace(label=f"torch.matmul {m}x{n}x{k}", launch=lambda: torch.matmul(a, b))
    x = torch.randn(shape, device="cuda").to(dtype)
    if direction == "fwd":
        return SimpleNamespace(label=f"torch.softmax fwd {shape[0]}x{shape[1]}", launch=lambda: torch.softmax(x, -1))
    y, dy = torch.softmax(x, -1), torch.randn(shape, device="cuda").to(dtype)
    return SimpleNamespace(label=f"torch.softmax bwd {shape[0]}x{shape[1]}",
                           launch=lambda: torch._softmax_backward_data(dy, y, -1, dtype))


def validated_cases(op, backends, plan, directions, dtype, shape):
    """(cases, number that failed): build_cases' variants for each backend in --backend's `backends`, each validated
    against float64 PyTorch (a wrong kernel is not worth profiling: left out and counted) and launched twice more,
    so that compilation and autotuning stay out of what follows. Prints a line per variant."""
    cases, failed = [], 0
    for backend in common.backends_arg(backends):
        for case, line in build_cases(op, backend, plan, directions, dtype, shape):
            print(line, flush=True)
            if case is None:
                continue
            passed, detail = common.run_and_check(case)
            print(f"  {'validated' if passed else 'WRONG'}: {detail}", flush=True)
            if not passed:
                failed += 1
                continue
            case.launch()
            case.launch()
            cases.append(case)
    return cases, failed


def build_cases(op, backend, plan, directions, dtype, shape):
    """(case or None, line to print) for each requested variant; None with the reason when it cannot run."""
    unavailable = common.backend_unavailable_reason(backend)
    if unavailable:
        yield None, f"skip {op} {backend}: backend unavailable: {unavailable}"
        return
    try:
        for direction in directions:  # "auto" may pick a different plan per direction
            names = common.variant_names(op, backend) if plan == "all" else [
                common.resolve_name(op, backend, plan, dtype, shape, "cuda", direction=direction)]
            for name in names:
                refused = common.refusal(op, backend, name, dtype, shape, "cuda")
                if refused:
                    yield None, f"skip {op} {backend} {name} {direction}: {refused}"
                else:
                    case = common.make_case(op, backend, name, direction, dtype, shape, "cuda")
                    yield case, f"case {case.label}"
    except common.OpUnavailable as exc:
        yield None, f"skip {op} {backend}: {exc}"


if __name__ == "__main__":
    sys.exit(main())
