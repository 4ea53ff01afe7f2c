#!/usr/bin/env python3
"""Time the CUDA split_row plan at forced slice counts: the landscape its layout rule is fitted to.

    python scripts/sweep_split_row_slices.py --json results/local/split-row-slices.json --plot slices.png
    python scripts/sweep_split_row_slices.py --replot results/h200/experiments/split-row-slices-c34cae5.json \
        --plot slices.png          (draws a stored sweep; no GPU needed)

For each (shape, dtype, direction) it times the plan's own choice (`rule`) and every count in
--slices twice: cut in whole 16-byte units ("N") and in whole 16 KiB granules as the rule cuts
("Nc", which can land on fewer slices). The count reaches the native layout through
CUDA_PORTFOLIO_SPLIT_ROW_SLICES, read per call (each point's call sets it). The points of a case are
timed as the benchmark times a case's providers (as a user runs them: the workspace is zeroed once per
stream, no memset per call), over their rotation of input copies: --rounds rounds of --samples samples
each, the points in an order rotated by one each round (_common.launch_times_us, the median of each
point's samples), and divided into the benchmark's device-copy ceiling. Every point's output is
checked against float64 PyTorch, and its inputs unchanged. For looking at layouts, not for the
README: the benchmark (python -m cuda_portfolio.bench) is what measures against peers.
"""
from __future__ import annotations

import argparse
import os

import torch

import _common as common

ENV = "CUDA_PORTFOLIO_SPLIT_ROW_SLICES"
DEFAULT_SLICES = {  # every count around what the rule picks, to both sides
    (32, 1 << 20): list(range(4, 67)),
    (4, 1 << 22): list(range(24, 133)),
}


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--shapes", default="32x1048576,4x4194304", help="rows x cols, comma-separated")
    p.add_argument("--dtype", default="fp32,bf16", help="comma-separated dtypes (default fp32,bf16)")
    p.add_argument("--direction", default="fwd,bwd", help="fwd and/or bwd, comma-separated (default fwd,bwd)")
    p.add_argument("--slices", default=None,
                   help="counts to force, comma-separated (default: 4-66 at 32x1048576, 24-132 at 4x4194304; any "
                        "other shape times only the rule)")
    p.add_argument("--samples", type=int, default=5, help="timed samples of each point per round")
    p.add_argument("--rounds", type=int, default=3, help="rounds over the case's points, each in a rotated order")
    p.add_argument("--json", default=None, help="records file, rewritten after every case")
    p.add_argument("--plot", default=None, help="PNG: ratio to copy against the slice count, one panel per case")
    p.add_argument("--replot", default=None, metavar="JSON", help="draw a stored sweep (with --plot) and exit")
    return p.parse_args(argv)


def plot_sweep(doc: dict, path: str) -> None:
    """One panel per (shape, dtype, direction): ratio to copy against the forced count, cut in whole
    units and in whole granules, with the rule's own choice as a dashed line."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cases = {}
    for r in doc["records"]:
        cases.setdefault((tuple(r["shape"]), r["dtype"], r["direction"]), []).append(r)
    shapes = sorted({k[0] for k in cases}, key=lambda s: -s[0])
    columns = sorted({k[1:] for k in cases}, key=lambda c: (c[0] != "fp32", c[1] != "fwd"))
    fig, axes = plt.subplots(len(shapes), len(columns), figsize=(4 * len(columns), 3.2 * len(shapes)),
                             squeeze=False, sharey=True)
    for (shape, dtype, direction), records in cases.items():
        ax = axes[shapes.index(shape)][columns.index((dtype, direction))]
        for cut, style in (("", "o-"), ("c", "s-")):
            points = sorted((int(r["slices"][:-1] if cut else r["slices"]), r["ratio_to_copy"]) for r in records
                            if r["slices"] != "rule" and r["slices"].endswith("c") == bool(cut))
            if points:
                ax.plot(*zip(*points), style, markersize=2.5, linewidth=0.8,
                        label="whole 16 KiB granules (Nc)" if cut else "whole 16-byte units (N)")
        rule = [r["ratio_to_copy"] for r in records if r["slices"] == "rule"]
        if rule:
            ax.axhline(rule[0], color="gray", linestyle="--", linewidth=0.8, label="the layout rule")
        ax.set_title(f"{shape[0]}x{shape[1]} {dtype} {direction}", fontsize=9)
        ax.set_xlabel("slices per row", fontsize=8)
        ax.grid(alpha=0.3)
    for row in axes:
        row[0].set_ylabel("ratio to device copy", fontsize=8)
    axes[0][0].legend(fontsize=7)
    fig.suptitle(f"CUDA split_row at forced slice counts, {doc['gpu']}, commit {doc.get('commit')}", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def make_call(native_softmax, direction, inputs, out, forced):
    """call(i) of split_row at `forced` slices (None: the rule's), which it sets in the environment itself: a graph
    captures the launch once, and the points of a case are timed in turn."""
    def call(i):
        if forced:
            os.environ[ENV] = forced
        else:
            os.environ.pop(ENV, None)
        if direction == "fwd":
            native_softmax.forward(inputs[i][0], out, "split_row")
        else:
            native_softmax.backward(inputs[i][0], inputs[i][1], out, "split_row")
    return call


def main(argv=None) -> int:
    args = parse_args(argv)
    started = common.start_sweep("sweep_split_row_slices.py", args, plot_sweep)
    if started is None:
        return 0
    copy, l2 = started
    from cuda_portfolio.native import softmax as native_softmax

    records = []
    try:
        for shape_text, dname, case in common.softmax_sweep_cases(args, l2):
            rows, cols, direction = case.rows, case.cols, case.direction
            counts = [int(s) for s in args.slices.split(",")] if args.slices else DEFAULT_SLICES.get((rows, cols), [])
            calls = {forced or "rule": make_call(native_softmax, direction, case.inputs, case.out, forced)
                     for forced in [None] + [f"{n}{cut}" for n in counts for cut in ("", "c")]}
            times = common.launch_times_us(calls, case.copies, args.samples, args.rounds)
            for name, us in times.items():
                err, ok = case.check(calls[name])
                rec = {"shape": [rows, cols], "dtype": dname, "direction": direction,
                       "slices": name, "us": us, "tb_per_s": case.bytes_moved / us / 1e6,
                       "ratio_to_copy": case.bytes_moved / us / 1e6 / copy,
                       "vs_rule": times["rule"] / us, "rel_err": err, "ok": ok}
                records.append(rec)
                print(f"{shape_text} {dname} {direction} slices={name:>4} {us:8.2f} us "
                      f"{rec['ratio_to_copy']:.2f} of copy  x{rec['vs_rule']:.3f} vs rule{'' if ok else '  WRONG'}",
                      flush=True)
            if args.json:
                common.write_sweep_json(args.json, args, copy, records)
    finally:
        os.environ.pop(ENV, None)
    common.plot_sweep_records(args, records, plot_sweep)
    return 0 if all(r["ok"] for r in records) else 1


if __name__ == "__main__":
    raise SystemExit(main())
