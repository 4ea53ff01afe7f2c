#!/usr/bin/env python3
"""What a Triton release does to the Triton kernels' machine code: a census under the installed Triton, and the
comparison of two.

    python scripts/triton_census.py --output results/local/census-3.6.json          # in one environment
    python scripts/triton_census.py --output results/local/census-3.7.1.json        # in another Triton's
    python scripts/triton_census.py --compare results/local/census-3.6.json results/local/census-3.7.1.json

Every ahead-of-time configuration (triton_kernels/aot.py: the launch options and tiles the launchers use) in each
integer specialization it launches in, compiled for --arch with that Triton's own ptxas: registers, local memory
(spills, stack), SASS instructions and the counts of MUFU, FFMA, LDG, STG and HGMMA. The comparison gives the ratio of
SASS instructions (median, extremes, the largest changes), which counts moved, and the configurations whose resident
warps per SM (registers, 64 warps an SM) change with it. A census says what the compiler made, not how fast it runs:
only the benchmark on a GPU says that. Works without a GPU.
"""
from __future__ import annotations

import os

os.environ.pop("TRITON_INTERPRET", None)  # compiled kernels: Triton decides that when a kernel module is imported

import argparse  # noqa: E402
import json  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
from pathlib import Path  # noqa: E402

import torch  # noqa: E402

import _common as common  # noqa: E402

COUNTED = ("MUFU", "FFMA", "LDG", "STG", "HGMMA")
REGISTERS_PER_SM, WARPS_PER_SM = 65536, 64
LISTED_ONE_BY_ONE = ("local_bytes", "mufu", "ldg", "stg", "hgmma")  # rare changes, each worth reading


def census(arch: str, ops) -> dict:
    import triton
    from cuda_portfolio.triton_kernels import aot

    cuobjdump = common.find_tool("cuobjdump")
    if cuobjdump is None:
        raise SystemExit("cuobjdump not found (PATH, the CUDA toolkit or Triton's wheel)")
    kernels = []
    with tempfile.TemporaryDirectory() as tmp:
        cubin = Path(tmp) / "kernel.cubin"
        for dtype in aot.TRITON_DTYPES:
            for index, spec in enumerate(aot.all_specs(dtype, ops=ops)):
                for aligned in spec.specializations:
                    compiled = aot.compile_spec(spec, arch, aligned=aligned)
                    cubin.write_bytes(compiled.asm["cubin"])
                    sass = subprocess.run([cuobjdump, "-sass", str(cubin)], capture_output=True, text=True).stdout
                    instructions = [text for body in common.sass_functions(sass).values() for _, text in body]
                    opcodes = [text.split()[1] if text.startswith("@") else text.split()[0] for text in instructions]
                    resources = next(iter(common.cubin_resources(cubin).values()), {})
                    kernels.append({
                        # the spec's place in aot.all_specs: two configurations of one kernel differ in it
                        "key": f"{spec.name}|{aot.TRITON_DTYPES[dtype]}|{index}|{'ints%16' if aligned else 'ints'}",
                        "warps": spec.options.get("num_warps", 4), "maxnreg": spec.options.get("maxnreg"),
                        "registers": resources.get("REG"), "local_bytes": resources.get("LOCAL", 0)
                        + resources.get("STACK", 0), "instructions": len(instructions),
                        **{op.lower(): sum(o.split(".")[0] == op for o in opcodes) for op in COUNTED}})
    return {"triton": triton.__version__, "arch": arch, "ops": list(ops), "kernels": kernels}


def resident_warps(registers: int, warps: int) -> int:
    """Warps per SM that programs of `warps` warps at `registers` per thread (allocated in 8s) leave room for."""
    per_thread = -(-registers // 8) * 8
    return min(REGISTERS_PER_SM // (per_thread * 32 * warps), WARPS_PER_SM // warps) * warps


def compare(before: dict, after: dict, top: int = 12) -> str:
    old = {k["key"]: k for k in before["kernels"]}
    new = {k["key"]: k for k in after["kernels"]}
    common_keys = [key for key in old if key in new]
    if not common_keys:
        return "no configuration in common: were both censuses taken from the same commit's aot.py?"
    ratios = {key: new[key]["instructions"] / old[key]["instructions"] for key in common_keys}
    values = list(ratios.values())
    lines = [f"Triton {before['triton']} -> {after['triton']} ({before['arch']}): {len(common_keys)} configurations "
             f"in both; SASS instructions, ratio median {statistics.median(values):.3f}, min {min(values):.3f}, max "
             f"{max(values):.3f}; within 2%: {sum(abs(v - 1) <= 0.02 for v in values)}"]
    for field in [op.lower() for op in COUNTED] + ["registers", "local_bytes"]:
        moved = [key for key in common_keys if old[key][field] != new[key][field]]
        lines.append(f"  {field}: differs in {len(moved)}")
        if field in LISTED_ONE_BY_ONE:
            lines += [f"    {key}: {old[key][field]} -> {new[key][field]}" for key in moved]
    lines.append("  resident warps per SM that change:")
    for key in common_keys:
        a, b = old[key], new[key]
        warps_a, warps_b = resident_warps(a["registers"], a["warps"]), resident_warps(b["registers"], b["warps"])
        if warps_a != warps_b:
            lines.append(f"    {key}: {a['warps']} warps, registers {a['registers']} -> {b['registers']}, "
                         f"{warps_a} -> {warps_b}")
    lines.append("  largest instruction changes:")
    for key in sorted(common_keys, key=lambda k: abs(ratios[k] - 1), reverse=True)[:top]:
        lines.append(f"    {ratios[key]:.3f} {key}: {old[key]['instructions']} -> {new[key]['instructions']}, "
                     f"registers {old[key]['registers']} -> {new[key]['registers']}")
    only = sorted(set(old) ^ set(new))
    if only:
        lines.append(f"  in one census only: {len(only)} ({', '.join(only[:4])}{', ...' if len(only) > 4 else ''})")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--output", type=Path, help="write the census of the installed Triton here (JSON)")
    parser.add_argument("--compare", nargs=2, type=Path, metavar=("BEFORE", "AFTER"), help="compare two censuses")
    parser.add_argument("--arch", default="sm_90a", help="compile for this architecture (default sm_90a)")
    parser.add_argument("--op", default="softmax,matmul,copy", help="comma-separated ops (default all)")
    args = parser.parse_args(argv)
    if bool(args.output) == bool(args.compare):
        parser.error("give --output (take a census) or --compare BEFORE AFTER")
    if args.compare:
        print(compare(*(json.loads(path.read_text()) for path in args.compare)))
        return 0
    from cuda_portfolio.triton_kernels import aot

    ops = tuple(args.op.split(","))
    unknown = [op for op in ops if op not in aot.OP_MODULES]
    if unknown:
        parser.error(f"unknown op(s) {unknown}; choose from {list(aot.OP_MODULES)}")
    try:
        aot.parse_arch(args.arch)
    except ValueError as exc:
        parser.error(str(exc))
    result = census(args.arch, ops)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(result, indent=1))
    print(f"{len(result['kernels'])} configurations under Triton {result['triton']} ({args.arch}) -> {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
