#!/usr/bin/env python3
"""Run every compiled variant once at small shapes, for Compute Sanitizer.

    PYTORCH_NO_CUDA_MEMORY_CACHING=1 compute-sanitizer --tool memcheck python scripts/sanitizer_smoke.py
    PYTORCH_NO_CUDA_MEMORY_CACHING=1 compute-sanitizer --tool racecheck python scripts/sanitizer_smoke.py --op softmax
    PYTORCH_NO_CUDA_MEMORY_CACHING=1 compute-sanitizer --tool memcheck python scripts/sanitizer_smoke.py --negative-control

Both backends, every softmax plan forward and backward, every GEMM kernel (fp32 also with tf32),
every dtype, at each small shape the backend's check_plan/check_kernel accepts (a variant refused at
every small shape prints one SKIP line with the reasons; a variant that runs at some shapes leaves the
others out silently). Each case: fresh random inputs, NaN-poisoned output, one launch, compared
with float64 PyTorch, inputs checked unchanged. One line per case, `N passed, N failed` last; exit 1
on any failure. Without PYTORCH_NO_CUDA_MEMORY_CACHING=1 an out-of-bounds write can land inside
another tensor of the caching allocator's pool and go unseen by memcheck.

--negative-control runs only cuda_portfolio.native.copy.copy_unmasked_negative_control, which writes
past the end of its output on purpose: memcheck must report an invalid __global__ write.
"""
from __future__ import annotations

import argparse
import os
import sys

import torch

import _common as common

# Small, odd shapes: tails, single rows, rows past one block, and a long row for the split plans.
# On Hopper, split_row streams every shape here but 16-bit 5x7 (no whole 16-byte unit), rows of any
# alignment (a head and tail element-wise around whole 16-byte units): 2x70000 and 2x70001 cut each
# row into slices that exchange statistics, 140x9000 gives one slice per row: two chunks (the last
# one partial) in fp32 and in the backward, one partial chunk in the 16-bit forward; odd lengths give
# each row its own head and tail. 5x70000 was chosen to take more tickets than the 132 blocks of an
# H200 (5 x 27 slices in v13's layout), the case where a producer could queue a row's second slice
# behind its first (the v13 deadlock note); since slices are whole 16 KiB granules it takes 90 (fp32)
# or 45 (16-bit) jobs, fewer than the blocks, so this run no longer reaches that case
# (tests/test_split_row_protocol.py models it on the host).
SMALL_SHAPES = {
    "copy": [(3, 1000), (2, 4097)],
    "softmax": [(5, 7), (37, 1000), (3, 4097), (2, 70001), (2, 70000), (5, 70000), (140, 9000)],
    # 33x47x65: no dimension a tile multiple; 192x136x72: 16-byte aligned rows for TMA / cp.async.
    "matmul": [(33, 47, 65), (192, 136, 72)],
}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--op", choices=common.OPS + ("all",), default="all")
    parser.add_argument("--backend", default="both", choices=("cuda", "triton", "both"))
    parser.add_argument("--dtype", default="all", help="float32, float16, bfloat16 or all (default all)")
    parser.add_argument("--negative-control", action="store_true",
                        help="run ONLY the deliberately out-of-bounds copy kernel (memcheck must report it)")
    args = parser.parse_args(argv)
    try:
        dtypes = list(common.DTYPES.values()) if args.dtype == "all" else [common.parse_dtype(args.dtype)]
    except ValueError as exc:
        parser.error(str(exc))
    common.exit_without_gpu("sanitizer_smoke.py")
    if args.negative_control:
        return negative_control()
    if os.environ.get("PYTORCH_NO_CUDA_MEMORY_CACHING") != "1":
        print("note: PYTORCH_NO_CUDA_MEMORY_CACHING=1 is not set; under compute-sanitizer set it, or an "
              "out-of-bounds write inside the caching allocator's pool goes unseen")

    ops = common.OPS if args.op == "all" else (args.op,)
    passed = failed = skipped = 0
    for op in ops:
        for backend in common.backends_arg(args.backend):
            for status, line in run_op(op, backend, dtypes):
                print(line, flush=True)
                passed += status == "PASS"
                failed += status == "FAIL"
                skipped += status == "SKIP"
    print(f"{skipped} skipped")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


def run_op(op, backend, dtypes):
    """(PASS|FAIL|SKIP, line) for every variant x dtype x direction x accepted shape of one backend."""
    unavailable = common.backend_unavailable_reason(backend)
    if unavailable:
        yield "SKIP", f"SKIP {op} {backend}: backend unavailable: {unavailable}"
        return
    try:
        names = common.variant_names(op, backend)
    except common.OpUnavailable as exc:
        yield "SKIP", f"SKIP {op} {backend}: {exc}"
        return
    directions = common.DIRECTIONS if op == "softmax" else ("fwd",)
    for name in names:
        for dtype in dtypes:
            for allow_tf32 in (False, True) if op == "matmul" and dtype == torch.float32 else (False,):
                yield from run_variant(op, backend, name, dtype, allow_tf32, directions)


def run_variant(op, backend, name, dtype, allow_tf32, directions):
    tf32 = " tf32" if allow_tf32 else ""
    refusals = []
    for shape in SMALL_SHAPES[op]:
        reason = common.refusal(op, backend, name, dtype, shape, "cuda", allow_tf32)
        if reason:
            refusals.append(f"{common.shape_text(shape)}: {reason}")
            continue
        for direction in directions:
            case = common.make_case(op, backend, name, direction, dtype, shape, "cuda", allow_tf32)
            try:
                ok, detail = common.run_and_check(case)
            except Exception as exc:  # a launch error is this case's failure, not the end of the run
                ok, detail = False, f"error: {type(exc).__name__}: {exc}"
            yield ("PASS" if ok else "FAIL"), f"{'PASS' if ok else 'FAIL'} {case.label} {detail}"
    if len(refusals) == len(SMALL_SHAPES[op]):
        yield "SKIP", (f"SKIP {op} {backend} {name} {common.dtype_name(dtype)}{tf32}: refuses every small shape: "
                       + "; ".join(refusals))


def negative_control() -> int:
    from cuda_portfolio.native import copy as native_copy

    n = 1000  # not a multiple of the 256-thread block: the last block writes 24 elements past the end
    print(f"negative control: copy_unmasked_negative_control on {n} float32 (grid rounded up to whole blocks)")
    print("expected under compute-sanitizer --tool memcheck: 'Invalid __global__ write of size 4 bytes'")
    if os.environ.get("PYTORCH_NO_CUDA_MEMORY_CACHING") != "1":
        print("note: without PYTORCH_NO_CUDA_MEMORY_CACHING=1 the bad write lands in the allocator's pool "
              "and memcheck may stay silent")
    try:
        tensors = native_copy.copy_unmasked_negative_control(n, torch.device("cuda"))  # kept alive: see its docstring
        torch.cuda.synchronize()
    except RuntimeError as exc:  # memcheck stops the kernel, so the runtime reports an error afterwards
        print(f"negative control: the CUDA runtime reported: {exc}")
    print("negative control finished", flush=True)
    # Under memcheck the launch error is sticky: torch's teardown (freeing the tensors) would abort
    # the process on it. Leave without that teardown.
    os._exit(0)


if __name__ == "__main__":
    sys.exit(main())
