#!/usr/bin/env python3
"""Nsight Compute counters for both backends of one op at one shape, side by side.

    python scripts/compare_backends.py --op softmax --shape 4096x4096 --dtype bfloat16
    python scripts/compare_backends.py --op matmul --shape 4096x4096x4096 --dtype float16

For each backend, ncu (--clock-control none, --profile-from-start off) runs
`scripts/profile_kernel.py --iters 1` as a child: validation, compilation and autotuning happen before
cudaProfilerStart, so only the launches under test are measured. Reports (.ncu-rep), raw CSV and logs
go to results/local/; the table shows time, DRAM throughput and bytes, achieved occupancy, registers,
shared memory, L2 hit rate and the top warp stall reasons per kernel. Below it, each backend's DRAM bytes
(summed over its kernels) against the op's floor: every input read once and the output written once
(softmax forward: x read, y written; backward: y and dy read, dx written; matmul: A and B read, C
written). Reads above 1.00x the floor are second reads that missed L2; writes can read below it, as
lines still in L2 when the kernel ends are not written yet. Counter runs replay each kernel
many times: never use them as timings (scripts/benchmark.py times).

If ncu is missing or refuses the counters (ERR_NVGPUCTRPERM: needs admin rights or
NVreg_RestrictProfilingToAdminUsers=0), the diagnostic is saved and no counter result is claimed
(exit code 2).
"""
from __future__ import annotations

import argparse
import csv
import io
import math
import re
import subprocess
import sys
import time
from pathlib import Path

import torch

import _common as common
from cuda_portfolio.bench.softmax_cases import softmax_bytes

METRICS = (
    ("gpu__time_duration.sum", "time (ns)"),
    ("sm__throughput.avg.pct_of_peak_sustained_elapsed", "SM throughput (% of peak)"),
    ("dram__throughput.avg.pct_of_peak_sustained_elapsed", "DRAM throughput (% of peak)"),
    ("lts__throughput.avg.pct_of_peak_sustained_elapsed", "L2 throughput (% of peak)"),
    ("dram__bytes_read.sum", "DRAM bytes read"),
    ("dram__bytes_write.sum", "DRAM bytes written"),
    ("sm__warps_active.avg.pct_of_peak_sustained_active", "achieved occupancy (%)"),
    ("launch__registers_per_thread", "registers / thread"),
    ("launch__shared_mem_per_block_static", "smem static (B)"),
    ("launch__shared_mem_per_block_dynamic", "smem dynamic (B)"),
    ("launch__block_size", "threads / block"),
    ("launch__grid_size", "blocks"),
    ("lts__t_sector_hit_rate.pct", "L2 hit rate (%)"),
)
# The WarpStateStats section adds the stall-reason breakdown (names differ between ncu versions).
STALL_PATTERNS = (re.compile(r"smsp__average_warp_latency_issue_stalled_(\w+?)(?:\.ratio)?$"),
                  re.compile(r"smsp__average_warps_issue_stalled_(\w+)_per_issue_active\.ratio$"),
                  re.compile(r"smsp__pcsamp_warps_issue_stalled_(\w+)$"))
REFUSALS = ("ERR_NVGPUCTRPERM", "permission to access NVIDIA GPU Performance Counters", "==ERROR==")
PROFILE_SCRIPT = Path(__file__).resolve().parent / "profile_kernel.py"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    common.add_case_arguments(parser)
    parser.add_argument("--plan", default="auto",
                        help="softmax plan / matmul kernel that both backends accept (the matmul kernel names differ: "
                             "leave auto for matmul); default: each backend's choice")
    parser.add_argument("--direction", default="fwd", choices=common.DIRECTIONS, help="softmax only")
    parser.add_argument("--ncu", help="path of ncu (default: found on PATH or in CUDA_HOME/bin)")
    parser.add_argument("--results-dir", type=Path, default=common.RESULTS_LOCAL,
                        help="where reports, CSV and diagnostics go (default results/local)")
    args = parser.parse_args(argv)
    dtype, shape = common.case_dtype_and_shape(parser, args)
    args.results_dir.mkdir(parents=True, exist_ok=True)
    stem = (f"compare-{args.op}-{args.direction}-{common.dtype_name(dtype)}-{common.shape_text(shape)}-"
            f"{time.strftime('%Y%m%d-%H%M%S')}")
    base = args.results_dir / stem

    ncu = args.ncu or common.find_tool("ncu")
    if ncu is None or not Path(ncu).exists():
        return refuse(base, f"ncu not found ({args.ncu or 'not on PATH nor in CUDA_HOME/bin'}); install Nsight "
                            "Compute or pass --ncu PATH")
    columns, problems = [], []
    for backend in common.BACKENDS:
        child = [sys.executable, str(PROFILE_SCRIPT), "--op", args.op, "--backend", backend, "--dtype",
                 common.dtype_name(dtype), "--shape", common.shape_text(shape), "--plan", args.plan,
                 "--direction", args.direction, "--iters", "1"]
        kernels, problem = profile_backend(ncu, child, Path(f"{base}-{backend}"))
        columns += [(backend, k) for k in kernels]
        if problem:
            problems.append(f"{backend}: {problem}")
    if problems:
        return refuse(base, "\n".join(problems))
    print(side_by_side(columns))
    floor = floor_bytes(args.op, args.direction, dtype, shape)
    print(f"\nDRAM bytes against the floor (each input read once, the output written once: read {floor[0]:,}, "
          f"written {floor[1]:,})")
    for backend in common.BACKENDS:
        print(bytes_line(backend, [row for b, row in columns if b == backend], floor))
    print(f"\nreports, CSV and logs: {base}-*  (open the .ncu-rep files in Nsight Compute for the details)")
    return 0


def profile_backend(ncu: str, child: list[str], base: Path):
    """(kernel rows, problem or None) for one backend: ncu --export, then the raw page as CSV."""
    report = base.with_suffix(".ncu-rep")
    cmd = [ncu, "--profile-from-start", "off", "--clock-control", "none", "--section", "WarpStateStats",
           "--metrics", ",".join(m for m, _ in METRICS), "--export", str(report), "--force-overwrite", *child]
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
    except subprocess.TimeoutExpired:
        return [], "ncu ran past 30 minutes"
    log = " ".join(cmd) + f"\nexit code {r.returncode}\n--- stdout\n{r.stdout}\n--- stderr\n{r.stderr}"
    base.with_suffix(".log").write_text(log)
    refused = [marker for marker in REFUSALS if marker in r.stdout + r.stderr]
    if r.returncode != 0 or refused or not report.exists():
        tail = "\n".join((r.stdout + r.stderr).strip().splitlines()[-8:])
        return [], f"ncu exit code {r.returncode}{' (' + ', '.join(refused) + ')' if refused else ''}:\n{tail}"
    page = subprocess.run([ncu, "--import", str(report), "--page", "raw", "--csv", "--print-units", "base"],
                          capture_output=True, text=True)
    base.with_suffix(".csv").write_text(page.stdout)
    kernels = parse_raw_csv(page.stdout)
    if not kernels:
        return [], f"ncu collected no kernels (see {base.with_suffix('.log')})"
    return kernels, None


def floor_bytes(op: str, direction: str, dtype: torch.dtype, shape: tuple) -> tuple[int, int]:
    """(read, written): the fewest DRAM bytes the op moves, each input read once and the output written once (for
    softmax the benchmark's softmax_bytes, split into its reads and its one written tensor)."""
    if op == "matmul":
        m, n, k = shape
        return (m * k + k * n) * dtype.itemsize, m * n * dtype.itemsize
    written = math.prod(shape) * dtype.itemsize
    return softmax_bytes(direction, *shape, dtype) - written, written


def bytes_line(backend: str, kernels: list[dict], floor: tuple[int, int]) -> str:
    """A backend's DRAM bytes read and written, summed over its kernels, as multiples of the floor."""
    read = sum(common.ncu_number(k.get("dram__bytes_read.sum")) or 0.0 for k in kernels)
    written = sum(common.ncu_number(k.get("dram__bytes_write.sum")) or 0.0 for k in kernels)
    return (f"  {backend}: read {read:,.0f} ({read / floor[0]:.3f}x), written {written:,.0f} "
            f"({written / floor[1]:.3f}x), over {len(kernels)} kernel(s)")


def parse_raw_csv(text: str) -> list[dict]:
    """One dict per profiled kernel from `ncu --page raw --csv` (header row, units row, data rows)."""
    lines = [line for line in text.splitlines() if line.startswith('"')]
    rows = list(csv.DictReader(io.StringIO("\n".join(lines))))
    return [row for row in rows if row.get("ID", "").strip().isdigit()]


def top_stalls(row: dict, count: int = 3) -> str:
    stalls = {}
    for column, value in row.items():
        for pattern in STALL_PATTERNS:
            match = pattern.match(column or "")
            if match and not match.group(1).endswith("not_issued") and common.ncu_number(value) is not None:
                stalls.setdefault(match.group(1), common.ncu_number(value))
    ranked = sorted(stalls.items(), key=lambda kv: -kv[1])[:count]
    return ", ".join(f"{name} {value:.3g}" for name, value in ranked) or "-"


def side_by_side(columns: list[tuple[str, dict]]) -> str:
    headers = [f"{backend}: {row.get('Kernel Name', '?')}"[:40] for backend, row in columns]
    table = [["metric", *headers]]
    for metric, label in METRICS:
        table.append([label, *(fmt(common.ncu_number(row.get(metric))) for _, row in columns)])
    table.append(["top warp stalls", *(top_stalls(row) for _, row in columns)])
    widths = [max(len(r[i]) for r in table) for i in range(len(table[0]))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in table)


def fmt(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:,.0f}" if value >= 100 else f"{value:.3g}"


def refuse(base: Path, reason: str) -> int:
    diagnostic = base.with_name(base.name + "-diagnostic.txt")
    diagnostic.write_text(reason + "\n")
    print(f"compare_backends.py: NO COUNTER RESULTS ARE CLAIMED: {reason.splitlines()[0]}", file=sys.stderr)
    print(f"compare_backends.py: diagnostic saved to {diagnostic}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
