#!/usr/bin/env python3
"""The SM clock, board power and clock-event reasons while each kernel runs alone, back to back, for seconds.

    python scripts/clock_under_load.py --op matmul --backend cuda --plan wgmma_tma --dtype bf16 \\
        --shape 4096x4096x4096 --with-torch --seconds 2 --rounds 3

ncu reports the clock of one launch; the H200 sets its clock by power over tens of milliseconds, so two kernels
that do the same work can run at different clocks if one draws more power. This script loops each variant
(validated against float64 PyTorch first, as profile_kernel.py does) for --seconds, in --rounds interleaved rounds,
while nvidia-smi samples the GPU every --interval-ms. Per variant it prints the time per launch in the loop, the
median SM clock and power of the samples inside its phases (the first --settle-s of each phase left out), the
highest temperature and every clock-event reason seen (for example "sw_power_cap"), and from those medians the SM
cycles and the board energy per launch: at a power cap the clock settles where the power fits, so two kernels that
take the same cycles can differ in time by their energy per launch. Not a benchmark: launches
run back to back on warm caches, with no CUDA graph (a kernel shorter than its launch shows the launch rate).
--csv keeps the raw samples, --json the summary.
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from typing import NamedTuple

import torch

import _common as common
import profile_kernel

QUERY = "timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,{reasons}"
# nvidia-smi renamed clocks_throttle_reasons to clocks_event_reasons (driver 535); the old name still answers
# on some drivers, so the script asks for the new one first.
REASON_FIELDS = ("clocks_event_reasons.active", "clocks_throttle_reasons.active")
# NVML's clock-event reason bits (nvmlClocksEventReason*).
REASON_BITS = {0x1: "gpu_idle", 0x2: "applications_clocks", 0x4: "sw_power_cap", 0x8: "hw_slowdown",
               0x10: "sync_boost", 0x20: "sw_thermal", 0x40: "hw_thermal", 0x80: "hw_power_brake",
               0x100: "display_clocks"}
TIMESTAMP_FORMAT = "%Y/%m/%d %H:%M:%S.%f"


class Sample(NamedTuple):
    time: float  # seconds since the epoch, local clock
    sm_mhz: float
    mem_mhz: float
    power_w: float
    temp_c: float
    reasons: int


class Phase(NamedTuple):
    label: str
    start: float
    end: float
    launches: int


def decode_reasons(mask: int) -> list[str]:
    names = [name for bit, name in REASON_BITS.items() if mask & bit]
    rest = mask & ~sum(REASON_BITS)
    return names + ([hex(rest)] if rest else [])


def parse_samples(lines) -> list[Sample]:
    """nvidia-smi's --format=csv,noheader,nounits lines of QUERY; lines it could not fill ([N/A]) are skipped."""
    samples = []
    for line in lines:
        cells = [cell.strip() for cell in line.split(",")]
        if len(cells) != 6:
            continue
        try:
            when = datetime.strptime(cells[0], TIMESTAMP_FORMAT).timestamp()
            sm, mem, power, temp = (float(cell) for cell in cells[1:5])
            reasons = int(cells[5], 16)
        except ValueError:
            continue
        samples.append(Sample(when, sm, mem, power, temp, reasons))
    return samples


def summarize(samples: list[Sample], phases: list[Phase], settle_s: float) -> list[dict]:
    """One row per label, over all its phases: time per launch (median over phases), the median SM clock and power
    of the samples between each phase's start + settle_s and its end, the highest temperature, the reasons seen."""
    rows = []
    for label in dict.fromkeys(phase.label for phase in phases):
        mine = [phase for phase in phases if phase.label == label]
        inside = [s for s in samples for phase in mine if phase.start + settle_s <= s.time <= phase.end]
        reasons = 0
        for sample in inside:
            reasons |= sample.reasons
        us = statistics.median((p.end - p.start) / p.launches * 1e6 for p in mine)
        sm_mhz = statistics.median(s.sm_mhz for s in inside) if inside else None
        power_w = statistics.median(s.power_w for s in inside) if inside else None
        rows.append({
            "label": label,
            "phases": len(mine),
            "us_per_launch": us,
            "samples": len(inside),
            "sm_mhz": sm_mhz,
            "mem_mhz": statistics.median(s.mem_mhz for s in inside) if inside else None,
            "power_w": power_w,
            "kcycles_per_launch": us * sm_mhz / 1e3 if inside else None,  # µs x MHz = cycles
            "mj_per_launch": us * power_w / 1e3 if inside else None,  # µs x W = µJ
            "max_temp_c": max((s.temp_c for s in inside), default=None),
            "reasons": decode_reasons(reasons),
        })
    return rows


def format_rows(rows: list[dict]) -> str:
    def cell(value, fmt):
        return "n/a" if value is None else format(value, fmt)

    lines = [f"{'variant':48s} {'us/launch':>10s} {'SM MHz':>7s} {'W':>6s} {'kcycles':>8s} {'mJ':>8s} {'max C':>6s} "
             f"{'samples':>7s}  reasons"]
    for row in rows:
        lines.append(f"{row['label'][:48]:48s} {row['us_per_launch']:10.1f} {cell(row['sm_mhz'], '7.0f')} "
                     f"{cell(row['power_w'], '6.1f')} {cell(row['kcycles_per_launch'], '8.1f')} "
                     f"{cell(row['mj_per_launch'], '8.2f')} {cell(row['max_temp_c'], '6.0f')} {row['samples']:7d}  "
                     f"{', '.join(row['reasons']) or '-'}")
    return "\n".join(lines)


def smi_device() -> str:
    """nvidia-smi's -i for torch's current device: its PCI address (CUDA and nvidia-smi may number GPUs apart)."""
    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    if all(hasattr(props, name) for name in ("pci_domain_id", "pci_bus_id", "pci_device_id")):
        return f"{props.pci_domain_id:08X}:{props.pci_bus_id:02X}:{props.pci_device_id:02X}.0"
    return str(torch.cuda.current_device())


def start_sampler(smi: str, interval_ms: int, out, err):
    """nvidia-smi sampling into `out` (its complaints into `err`, a file, so a long run cannot fill a pipe); the first
    reason field this driver accepts."""
    for field in REASON_FIELDS:
        proc = subprocess.Popen([smi, "-i", smi_device(), f"--query-gpu={QUERY.format(reasons=field)}",
                                 "--format=csv,noheader,nounits", "-lms", str(interval_ms)],
                                stdout=out, stderr=err, text=True)
        time.sleep(0.5)
        if proc.poll() is None:
            return proc
    err.seek(0)
    raise SystemExit(f"clock_under_load.py: nvidia-smi refused the query: {err.read().strip()}")


def loop_for(case, seconds: float) -> Phase:
    """Launch back to back for `seconds`, synchronizing after batches that double until one takes 20 ms."""
    torch.cuda.synchronize()
    start = time.time()
    launches, batch = 0, 1
    while (batch_start := time.time()) - start < seconds:
        for _ in range(batch):
            case.launch()
        torch.cuda.synchronize()
        launches += batch
        if time.time() - batch_start < 0.02:
            batch *= 2
    return Phase(case.label, start, time.time(), launches)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    common.add_case_arguments(parser)
    parser.add_argument("--backend", default="cuda", choices=("cuda", "triton", "both"),
                        help="cuda, triton or both (default cuda)")
    parser.add_argument("--plan", default="auto", help="softmax plan / matmul kernel, or 'auto'")
    parser.add_argument("--direction", default="fwd", choices=("fwd", "bwd"), help="softmax only")
    parser.add_argument("--with-torch", action="store_true", help="also loop the torch op (torch.matmul: cuBLAS)")
    parser.add_argument("--seconds", type=float, default=2.0, help="per variant and round (default 2)")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds (default 3)")
    parser.add_argument("--rest-s", type=float, default=0.5, help="idle time between phases (default 0.5)")
    parser.add_argument("--settle-s", type=float, default=0.3, help="start of each phase left out (default 0.3)")
    parser.add_argument("--interval-ms", type=int, default=50, help="nvidia-smi's sampling interval (default 50)")
    parser.add_argument("--csv", help="write nvidia-smi's raw samples here")
    parser.add_argument("--json", help="write the summary and the phases here")
    args = parser.parse_args(argv)
    dtype, shape = common.case_dtype_and_shape(parser, args)
    if args.seconds <= args.settle_s or args.rounds < 1:
        parser.error("--seconds must exceed --settle-s, and --rounds must be >= 1")
    if args.with_torch and args.op == "copy":
        parser.error("--with-torch: copy has no torch peer kernel")
    common.exit_without_gpu("clock_under_load.py")
    smi = common.find_tool("nvidia-smi")
    if smi is None:
        print("clock_under_load.py: nvidia-smi not found", file=sys.stderr)
        return common.EXIT_NO_GPU

    cases, failed = profile_kernel.validated_cases(args.op, args.backend, args.plan, (args.direction,), dtype, shape)
    if failed:
        return 1
    if args.with_torch:
        peer = profile_kernel.torch_peer(args.op, args.direction, dtype, shape)
        peer.launch()
        cases.append(peer)
    if not cases:
        print("clock_under_load.py: nothing to run", file=sys.stderr)
        return 1
    torch.cuda.synchronize()

    phases = []
    with tempfile.TemporaryFile("w+") as raw, tempfile.TemporaryFile("w+") as complaints:
        sampler = start_sampler(smi, args.interval_ms, raw, complaints)
        try:
            time.sleep(args.rest_s)
            for _ in range(args.rounds):
                for case in cases:
                    phases.append(loop_for(case, args.seconds))
                    time.sleep(args.rest_s)
        finally:
            sampler.terminate()
            sampler.wait()
        raw.seek(0)
        text = raw.read()
    if args.csv:
        with open(common.with_folder(args.csv), "w") as f:
            f.write(text)
    rows = summarize(parse_samples(text.splitlines()), phases, args.settle_s)
    print(format_rows(rows))
    if args.json:
        with open(common.with_folder(args.json), "w") as f:
            json.dump({"command": " ".join(sys.argv), "gpu": torch.cuda.get_device_name(), "summary": rows,
                       "phases": [p._asdict() for p in phases]}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
