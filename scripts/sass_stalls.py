#!/usr/bin/env python3
"""Where a kernel's warps stall, per SASS instruction, from Nsight Compute's stall sampling; two kernels side by side.

    ncu --profile-from-start off --clock-control none --kernel-name regex:softmax_parallel \\
        --section WarpStateStats --section SourceCounters --import-source no -o bf16 \\
        python scripts/profile_kernel.py --op softmax --backend cuda --dtype bfloat16 --shape 1024x131072 --iters 1
    ncu --import bf16.ncu-rep --page source --csv --print-source sass > bf16.csv
    python scripts/sass_stalls.py bf16.csv [fp32.csv] [--top 15]

Reads the CSV of ncu's source page (one row per SASS instruction: its address, its text, the warp stall samples
taken on it, and one `stall_<reason>` column per reason). Prints, per file: the samples per stall reason, per
opcode (the instruction's first word without its modifiers: MUFU, FADD, SYNCS, ...), and the instructions with
the most samples, each with its two largest reasons. Given two files (two kernels, or one kernel before and after a
change), the reason and opcode shares go side by side: addresses differ between two builds, opcodes do not. Stall
samples are taken at the instruction a warp is waiting to issue, so a wait for a load shows on the first
instruction that uses its result, not on the load. Works without a GPU (the CSV is enough).
"""
from __future__ import annotations

import argparse
import csv
import sys
from collections import Counter
from pathlib import Path
from typing import NamedTuple

SAMPLES = "Warp Stall Sampling (All Samples)"
REASON_PREFIX = "stall_"


class Instruction(NamedTuple):
    address: str
    text: str
    samples: float
    reasons: dict


def number(cell: str) -> float:
    """An ncu CSV number ('1,234', '12.5', '' or 'n/a'), as a float (0 when empty)."""
    cell = (cell or "").replace(",", "").strip()
    try:
        return float(cell)
    except ValueError:
        return 0.0


def read_instructions(path: Path) -> list[Instruction]:
    """The rows of an ncu source-page CSV, from its header row on (ncu may print lines before it)."""
    rows = list(csv.reader(path.open(newline="")))
    header_at = next((i for i, row in enumerate(rows) if "Address" in row and "Source" in row), None)
    if header_at is None:
        raise ValueError(f"{path}: no header row with 'Address' and 'Source' (is it `ncu --page source --csv "
                         "--print-source sass` output?)")
    header = rows[header_at]
    if SAMPLES not in header:
        raise ValueError(f"{path}: no '{SAMPLES}' column: profile with --section SourceCounters")
    address, text, samples = header.index("Address"), header.index("Source"), header.index(SAMPLES)
    reasons = [(i, name[len(REASON_PREFIX):]) for i, name in enumerate(header) if name.startswith(REASON_PREFIX)]
    instructions = []
    for row in rows[header_at + 1:]:
        if len(row) < len(header):
            continue  # a trailing note or a blank line
        instructions.append(Instruction(row[address], row[text].strip(), number(row[samples]),
                                        {name: number(row[i]) for i, name in reasons}))
    return instructions


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
    lines = [f"{title:<24}" + "".join(f"{c:>14}" for c in columns)]
    lines += [f"  {k:<22}" + "".join(f"{s.get(k, 0.0):13.1f}%" for s in per_column) for k in keys]
    return lines


def top_instructions(instructions: list[Instruction], top: int) -> list[str]:
    total = sum(ins.samples for ins in instructions) or 1.0
    lines = []
    for ins in sorted(instructions, key=lambda i: -i.samples)[:top]:
        main = sorted(ins.reasons.items(), key=lambda kv: -kv[1])[:2]
        why = ", ".join(f"{name} {100.0 * value / (ins.samples or 1.0):.0f}%" for name, value in main if value)
        lines.append(f"  {ins.address:>8} {100.0 * ins.samples / total:5.1f}%  {ins.text[:60]:<60}  {why}")
    return lines


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("csv", nargs="+", type=Path, help="one or two ncu source-page CSV files")
    parser.add_argument("--top", type=int, default=15, help="instructions and table rows to show (default 15)")
    args = parser.parse_args(argv)
    if len(args.csv) > 2:
        parser.error("give one or two CSV files")
    try:
        kernels = [read_instructions(path) for path in args.csv]
    except (OSError, ValueError) as error:
        print(f"sass_stalls.py: {error}", file=sys.stderr)
        return 2
    names = [path.stem for path in args.csv]
    for name, instructions in zip(names, kernels):
        print(f"{name}: {len(instructions)} instructions, {sum(i.samples for i in instructions):.0f} stall samples")
    print()
    print("\n".join(share_table("stall reason", names, [reason_counts(k) for k in kernels], args.top)))
    print()
    print("\n".join(share_table("opcode", names, [opcode_counts(k) for k in kernels], args.top)))
    for name, instructions in zip(names, kernels):
        print(f"\n{name}: the {args.top} instructions with the most samples (share of all; top reasons)")
        print("\n".join(top_instructions(instructions, args.top)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
