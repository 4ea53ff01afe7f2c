#!/usr/bin/env python3
"""Where a kernel's warps stall, per SASS instruction, from Nsight Compute's stall sampling; two kernels side by side.

    ncu --profile-from-start off --clock-control none --kernel-name regex:softmax_parallel \\
        --section WarpStateStats --section SourceCounters --import-source no -o bf16 \\
        python scripts/profile_kernel.py --op softmax --backend cuda --dtype bfloat16 --shape 1024x131072 --iters 1
    ncu --import bf16.ncu-rep --page source --csv --print-source sass > bf16.csv
    python scripts/sass_stalls.py bf16.csv [fp32.csv] [--top 15] [--range 0x27e0-0xb280 ...]

Reads the CSV of ncu's source page (one row per SASS instruction: its address, its text, the warp stall samples
taken on it, how often it executed, and one `stall_<reason>` column per reason; `.csv.gz` too). Prints, per file:
the samples per stall reason, per opcode (the instruction's first word without its modifiers: MUFU, FADD, SYNCS,
...), per loop (a backward branch and the code it jumps back over: iterations, instructions per iteration and the
loop's share of the samples; an outer loop's row includes its inner loops), and the instructions with the most
samples, each with its two largest reasons. Addresses are offsets into the kernel. Each loop and each --range (the
samples of an address span, e.g. an epilogue, per file) also names the landmark opcodes it holds (TMA loads and
stores, wgmma, mbarrier and shared-memory operations, ...): a warp-specialized kernel's producer loop and its
consumers' epilogue sit side by side in the address space, and their samples mean different things (a producer
waiting for a free stage costs the tensor cores nothing). Given two files (two kernels,
or one kernel before and after a change), the reason and opcode shares go side by side: addresses differ between
two builds, opcodes do not. ncu also gives each reason a "(Not Issued)" column, the samples on which no
instruction issued; those are a subset of the reason's samples, so the shares leave them out. Stall samples are
taken at the instruction a warp is waiting to issue, so a wait for a load shows on the first instruction that uses
its result, not on the load. Works without a GPU (the CSV is enough).
"""
from __future__ import annotations

import argparse
import csv
import gzip
import sys
from collections import Counter
from pathlib import Path
from typing import NamedTuple

import _common as common

SAMPLES = "Warp Stall Sampling (All Samples)"
EXECUTED = "Instructions Executed"
REASON_PREFIX = "stall_"
NOT_ISSUED = "(Not Issued)"
# Opcodes that say what a stretch of SASS does, named beside each loop and range.
LANDMARKS = ("HGMMA", "UTMALDG", "UTMASTG", "UBLKCP", "SYNCS", "BAR", "STSM", "STS", "LDS", "LDG", "STG", "MUFU")


class Instruction(NamedTuple):
    address: int  # offset into the kernel
    text: str
    samples: float
    reasons: dict
    executed: float  # warp-level executions (0 when the CSV has no such column)
    target: int | None  # a branch's target, as an offset into the kernel


def number(cell: str) -> float:
    """An ncu CSV cell as a float, 0 where it is empty or 'n/a' (a sample count)."""
    return common.ncu_number(cell) or 0.0


def read_instructions(path: Path) -> list[Instruction]:
    """The rows of an ncu source-page CSV, from its header row on (ncu may print lines before it)."""
    with (gzip.open(path, "rt", newline="") if path.suffix == ".gz" else path.open(newline="")) as f:
        rows = list(csv.reader(f))
    header_at = next((i for i, row in enumerate(rows) if "Address" in row and "Source" in row), None)
    if header_at is None:
        raise ValueError(f"{path}: no header row with 'Address' and 'Source' (is it `ncu --page source --csv "
                         "--print-source sass` output?)")
    header = rows[header_at]
    if SAMPLES not in header:
        raise ValueError(f"{path}: no '{SAMPLES}' column: profile with --section SourceCounters")
    address, text, samples = header.index("Address"), header.index("Source"), header.index(SAMPLES)
    executed = header.index(EXECUTED) if EXECUTED in header else None
    reasons = [(i, name[len(REASON_PREFIX):]) for i, name in enumerate(header)
               if name.startswith(REASON_PREFIX) and NOT_ISSUED not in name]
    body = [row for row in rows[header_at + 1:] if len(row) >= len(header)]  # not trailing notes or blank lines
    base = int(body[0][address], 16) if body else 0

    def target(source: str):
        jump = common.sass_branch_target(source)
        return None if jump is None else jump - base

    return [Instruction(int(row[address], 16) - base, row[text].strip(), number(row[samples]),
                        {name: number(row[i]) for i, name in reasons},
                        number(row[executed]) if executed is not None else 0.0, target(row[text])) for row in body]


def opcode(text: str) -> str:
    """'@!P0 LDS.128 R8, [R24]' -> 'LDS'."""
    words = text.split()
    if words and words[0].startswith("@"):
        words = words[1:]
    return words[0].split(".")[0].rstrip(";") if words else "?"


def shares(counts: Counter) -> dict:
    total = sum(counts.values())
    return {key: 100.0 * value / total for key, value in counts.items()} if total else {}


def reason_counts(instructions: list[Instruction]) -> Counter:
    counts = Counter()
    for ins in instructions:
        counts.update(ins.reasons)
    return counts


def opcode_counts(instructions: list[Instruction]) -> Counter:
    counts = Counter()
    for ins in instructions:
        counts[opcode(ins.text)] += ins.samples
    return counts


def share_table(title: str, columns: list[str], counts: list[Counter], rows: int) -> list[str]:
    """The keys with the largest share in any column, with each column's share in percent."""
    per_column = [shares(c) for c in counts]
    keys = sorted({k for s in per_column for k in s}, key=lambda k: -max(s.get(k, 0.0) for s in per_column))[:rows]
    width = max([14] + [len(c) + 2 for c in columns])
    lines = [f"{title:<24}" + "".join(f"{c:>{width}}" for c in columns)]
    lines += [f"  {k:<22}" + "".join(f"{s.get(k, 0.0):{width - 1}.1f}%" for s in per_column) for k in keys]
    return lines


def landmarks(body: list[Instruction]) -> str:
    """The landmark opcodes in `body` that executed (all of them if the CSV has no execution counts), most frequent
    first, counted as instructions in the code: 'UTMALDGx5 SYNCSx2'."""
    ran = [i for i in body if i.executed] or body
    counts = Counter(op for op in (opcode(i.text) for i in ran) if op in LANDMARKS)
    return " ".join(f"{op}x{n}" for op, n in counts.most_common(4)) or "-"


def parse_range(text: str) -> tuple[int, int]:
    """'0x27e0-0xb280' -> (0x27e0, 0xb280): an inclusive span of offsets into the kernel."""
    low, _, high = text.partition("-")
    try:
        span = int(low, 16), int(high, 16)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not LOW-HIGH in hex (e.g. 0x27e0-0xb280)") from None
    if span[0] > span[1]:
        raise argparse.ArgumentTypeError(f"{text!r}: LOW is past HIGH")
    return span


def range_table(instructions: list[Instruction], spans: list[tuple[int, int]]) -> list[str]:
    """One row per span: its share of all the samples, its three largest opcodes and reasons, its landmarks."""
    total = sum(ins.samples for ins in instructions) or 1.0
    lines = [f"  {'range':<17} {'samples':>8}  top opcodes; top reasons; landmarks"]
    for low, high in spans:
        body = [i for i in instructions if low <= i.address <= high]
        samples = sum(i.samples for i in body)
        n = samples or 1.0
        ops = ", ".join(f"{op} {100.0 * v / n:.0f}%" for op, v in opcode_counts(body).most_common(3) if v)
        why = ", ".join(f"{name} {100.0 * v / n:.0f}%" for name, v in reason_counts(body).most_common(3) if v)
        lines.append(f"  {f'{low:#x}-{high:#x}':<17} {100.0 * samples / total:7.1f}%  "
                     f"{ops or '-'}; {why or '-'}; {landmarks(body)}")
    return lines


def loop_table(instructions: list[Instruction], top: int) -> list[str]:
    """One row per backward branch that executed: the code from its target to it, with its iterations (the
    branch's executions), instructions per iteration and share of the samples, the three largest reasons, and the
    loop's landmark opcodes in brackets."""
    total = sum(ins.samples for ins in instructions) or 1.0
    rows = []
    for branch in instructions:
        if branch.target is None or not branch.executed or not 0 <= branch.target < branch.address:
            continue
        body = [i for i in instructions if branch.target <= i.address <= branch.address]
        reasons = Counter()
        for i in body:
            reasons.update(i.reasons)
        rows.append((sum(i.samples for i in body), branch, sum(i.executed for i in body), reasons, landmarks(body)))
    if not rows:
        return ["  (none: no backward branch executed, or the CSV has no 'Instructions Executed' column)"]
    lines = [f"  {'loop':<17} {'iterations':>12} {'instr/iter':>10} {'samples':>8}  top reasons"]
    for samples, branch, executed, reasons, marks in sorted(rows, key=lambda r: -r[0])[:top]:
        n = sum(reasons.values()) or 1.0
        why = ", ".join(f"{name} {100.0 * v / n:.0f}%" for name, v in reasons.most_common(3) if v)
        span = f"{branch.target:#x}-{branch.address:#x}"
        lines.append(f"  {span:<17} {branch.executed:>12,.0f} {executed / branch.executed:10.1f} "
                     f"{100.0 * samples / total:7.1f}%  {why}  [{marks}]")
    return lines


def top_instructions(instructions: list[Instruction], top: int) -> list[str]:
    total = sum(ins.samples for ins in instructions) or 1.0
    lines = []
    for ins in sorted(instructions, key=lambda i: -i.samples)[:top]:
        main = sorted(ins.reasons.items(), key=lambda kv: -kv[1])[:2]
        why = ", ".join(f"{name} {100.0 * value / (ins.samples or 1.0):.0f}%" for name, value in main if value)
        lines.append(f"  {ins.address:#8x} {100.0 * ins.samples / total:5.1f}%  {ins.text[:60]:<60}  {why}")
    return lines


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("csv", nargs="+", type=Path, help="one or two ncu source-page CSV files")
    parser.add_argument("--top", type=int, default=15, help="instructions and table rows to show (default 15)")
    parser.add_argument("--range", dest="spans", action="append", type=parse_range, default=[], metavar="LOW-HIGH",
                        help="an address span (hex offsets into the kernel, inclusive) whose share of the samples to "
                             "print, per file; repeatable")
    args = parser.parse_args(argv)
    if len(args.csv) > 2:
        parser.error("give one or two CSV files")
    try:
        kernels = [read_instructions(path) for path in args.csv]
    except (OSError, ValueError) as error:
        print(f"sass_stalls.py: {error}", file=sys.stderr)
        return 2
    names = [path.name.removesuffix(".gz").removesuffix(".csv") for path in args.csv]
    for name, instructions in zip(names, kernels):
        print(f"{name}: {len(instructions)} instructions, {sum(i.samples for i in instructions):.0f} stall samples")
    print()
    print("\n".join(share_table("stall reason", names, [reason_counts(k) for k in kernels], args.top)))
    print()
    print("\n".join(share_table("opcode", names, [opcode_counts(k) for k in kernels], args.top)))
    for name, instructions in zip(names, kernels):
        print(f"\n{name}: loops, by share of the stall samples")
        print("\n".join(loop_table(instructions, args.top)))
    if args.spans:
        for name, instructions in zip(names, kernels):
            print(f"\n{name}: address ranges, by share of the stall samples")
            print("\n".join(range_table(instructions, args.spans)))
    for name, instructions in zip(names, kernels):
        print(f"\n{name}: the {args.top} instructions with the most samples (share of all; top reasons)")
        print("\n".join(top_instructions(instructions, args.top)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
