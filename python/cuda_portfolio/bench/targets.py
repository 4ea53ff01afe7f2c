"""The project's performance targets, checked against benchmark results files: which cells meet their bar.

    python -m cuda_portfolio.bench.targets results/h200/softmax.json results/h200/matmul.json \
        results/h200/matmul-ladder.json [--not-met] [--plot targets.png]

The bars are the issues' (softmax #3, GEMM #4), applied to the records of our backends (provider cuda or
triton) in each file, with the ratios the run stored (to the copy ceiling or to cuBLAS measured in the same
run; to a peer: the median of per-round time ratios):
- softmax forward, plan auto: >= 0.90x copy where the forward moves >= 256 MiB (read + written), >= 0.80x at
  64-256 MiB; >= 0.85x at 32x1048576 and 4x4194304. Where two bars apply, the higher one (the strict reading).
- softmax backward, plan auto: >= 0.85x copy on every shape.
- softmax, both directions: >= 1.0x Liger where Liger ran and computed the right result.
- GEMM, plan auto, fp16/bf16, on the six target shapes: the CUDA Hopper kernel (wgmma_tma) >= 1.00x cuBLAS at
  4096^3 and 8192^3 and >= 0.90x on the other four; Triton >= 0.90x on all six.
- GEMM versions pinned by name (the ladder run): register_blocked fp32 >= 0.85x cuBLAS, mma_sync >= 0.60x.
A cell below its bar by less than the run's A/A band (a peer timed twice) is still NOT MET; the line says so.
"""
from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import NamedTuple

from . import run_cli
from .report import aa_band, case_title, provider_label
from .schema import validate_results

MiB = 1 << 20
OURS = ("cuda", "triton")
SPLIT_ROW_SHAPES = ((32, 1 << 20), (4, 1 << 22))
GEMM_SHAPES = ((4096, 4096, 4096), (8192, 8192, 8192), (16384, 16384, 1024), (1024, 1024, 16384),
               (4000, 3000, 2000), (128, 8192, 8192))
GEMM_CUBES = ((4096, 4096, 4096), (8192, 8192, 8192))


class Verdict(NamedTuple):
    record: dict
    measure: str      # what is compared: "x copy", "x cuBLAS" or "x Liger"
    value: float
    bar: float
    rule: str

    @property
    def met(self) -> bool:
        return self.value >= self.bar


def softmax_forward_bar(r: dict) -> tuple[float, str] | None:
    bars = []
    if r["bytes"] >= 256 * MiB:
        bars.append((0.90, "forward moving >= 256 MiB"))
    elif r["bytes"] >= 64 * MiB:
        bars.append((0.80, "forward moving 64-256 MiB"))
    if tuple(r["shape"]) in SPLIT_ROW_SHAPES:
        bars.append((0.85, "32x1M / 4x4M"))
    return max(bars) if bars else None


def gemm_bar(r: dict) -> tuple[float, str] | None:
    shape = tuple(r["shape"])
    if r["plan"] == "auto":
        if r["dtype"] not in ("float16", "bfloat16") or shape not in GEMM_SHAPES:
            return None
        if r["provider"] == "triton":
            return 0.90, "Triton GEMM"
        if r["resolved_plan"] != "wgmma_tma":
            return None
        return (1.00, "Hopper kernel at 4096^3 / 8192^3") if shape in GEMM_CUBES else (0.90, "Hopper kernel")
    if r["provider"] == "cuda" and r["plan"] == "register_blocked" and r["dtype"] == "float32":
        return 0.85, "SIMT fp32 (register_blocked)"
    if r["provider"] == "cuda" and r["plan"] == "mma_sync":
        return 0.60, "tensor cores through mma.sync"
    return None


# Our records that ran and failed: a cell with a bar whose kernel was WRONG or errored is not met (it is not left out
# of the count); one the plan or kernel refused (a dtype it does not take) or that could not run here has no cell.
FAILED = ("WRONG", "error")


def _measured(r: dict) -> tuple[float, str]:
    """(ratio to the ceiling, or NaN, which meets no bar; why there is none)."""
    if r["status"] in FAILED:
        return math.nan, f" ({r['status']})"
    if r["ratio_to_ceiling"] is None:
        return math.nan, " (unmeasured: no valid ceiling in the run)"
    return r["ratio_to_ceiling"], ""


def verdicts(doc: dict) -> list[Verdict]:
    out = []
    for r in doc["records"]:
        if r["provider"] not in OURS or r["status"] not in ("ok",) + FAILED:
            continue
        value, why = _measured(r)
        if r["op"] == "matmul":
            bar = gemm_bar(r)
            if bar:
                out.append(Verdict(r, "x cuBLAS", value, bar[0], bar[1] + why))
            continue
        if r["plan"] != "auto":
            continue
        bar = softmax_forward_bar(r) if r["direction"] == "fwd" else (0.85, "backward")
        if bar:
            out.append(Verdict(r, "x copy", value, bar[0], bar[1] + why))
        liger = r["ratio_to_peers"].get("liger") if r["status"] == "ok" else None
        if liger is not None:
            out.append(Verdict(r, "x Liger", liger, 1.0, "Liger, time ratio"))
    return out


def render(doc: dict, name: str, only_not_met: bool = False) -> list[str]:
    env, found = doc["env"], verdicts(doc)
    band = aa_band(doc["records"])
    lines = [f"{name}: commit {(env.get('git_commit') or 'unknown')[:12]}, {env['gpu']}"
             + (f", A/A band {band[0]:.3f}..{band[1]:.3f}" if band else "")]
    for v in found:
        if only_not_met and v.met:
            continue
        within = "" if v.met or band is None or v.value < v.bar * band[0] else "  (within the A/A band of the bar)"
        lines.append(f"  {'met    ' if v.met else 'NOT MET'}  {case_title(v.record):<36} "
                     f"{provider_label(v.record):<32} {v.value:6.3f} {v.measure:<8} bar {v.bar:.2f}  {v.rule}{within}")
    met = sum(v.met for v in found)
    lines.append(f"  {met} met, {len(found) - met} not met, of {len(found)} cells with a target")
    return lines


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m cuda_portfolio.bench.targets", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("results", nargs="+", help="results JSON files (--json of the benchmark)")
    parser.add_argument("--not-met", action="store_true", help="print only the cells under their bar")
    parser.add_argument("--plot", metavar="PATH",
                        help="also draw every cell of all the files as one grid per op and measure (.png, .svg)")
    args = parser.parse_args(argv)
    found, commits = [], []
    for path in args.results:
        with open(path) as f:
            doc = json.load(f)
        problems = validate_results(doc)
        if problems:
            print(f"targets: {path} is not a benchmark results file: {problems[0]}", file=sys.stderr)
            return 2
        print("\n".join(render(doc, path, args.not_met)))
        found += verdicts(doc)
        commits.append(f"{Path(path).name} at {(doc['env'].get('git_commit') or 'unknown')[:12]}")
    if args.plot:
        from .plot import render_targets
        try:
            render_targets(found, args.plot, f"{doc['env']['gpu']}: ours against the issues' bars ({', '.join(commits)})")
        except (RuntimeError, ValueError) as exc:
            print(f"targets: {exc}", file=sys.stderr)
            return 1
        print(f"wrote {args.plot}")
    return 0


if __name__ == "__main__":
    sys.exit(run_cli(main))
