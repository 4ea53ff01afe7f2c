#!/usr/bin/env python3
"""Time the Triton split_row plan's held form at forced program shapes: the landscape SPLIT_ROW_HELD is picked from.

    python scripts/sweep_triton_held_tiles.py --json results/local/held-tiles.json --plot held-tiles.png
    python scripts/sweep_triton_held_tiles.py --replot results/local/held-tiles.json --plot held-tiles.png

A held program keeps its chunk in registers through the row exchange: 32 words a thread at 64 registers (fp32
values, or 16-bit pairs; the backward 16 of y and 16 of dy), so a program of W warps holds a tile of W x 1024 words,
and the register file fits P such programs per SM while W x P <= 32. Each variant `WxP` (--variants) is that
program at P per SM; its chunks are the fewest that fit its tile, of equal length (the rule's _held_chunk_cols). For
each (shape, dtype, direction) the sweep times the plan's own choice (`rule`: held or streamed by split_row_config)
and each variant as the benchmark times a case's providers, over their rotation of input copies: --rounds rounds of
--samples samples each, the variants in an order rotated by one each round (_common.launch_times_us, the median of
each variant's samples), divided into the benchmark's device-copy ceiling. A variant whose row has more chunks
than the grid has resident programs would wait forever at its first exchange, so it is listed as skipped, not run.
Every point's output is checked against float64 PyTorch, and its inputs unchanged. For choosing the table, not for
the README: the benchmark (python -m cuda_portfolio.bench) measures against peers.
"""
from __future__ import annotations

import argparse
import functools

import torch

import _common as common

REGISTER_FILE_WARPS = 32  # 65536 registers / (64 registers x 32 threads): warps x programs per SM at 64 registers
HELD_WORDS = 32  # per thread, the whole held chunk (both operands of the backward)


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--shapes", default="2048x20000,2048x32768,2048x50257,1024x65536,1024x100000,1024x131072,"
                   "256x262144", help="rows x cols, comma-separated")
    p.add_argument("--dtype", default="fp32,bf16")
    p.add_argument("--direction", default="fwd")
    p.add_argument("--variants", default="16x2,8x4,4x8",
                   help="WxP: programs of W warps, P per SM (W x P <= 32), comma-separated")
    p.add_argument("--samples", type=int, default=5, help="timed samples of each variant per round")
    p.add_argument("--rounds", type=int, default=3, help="rounds over the case's variants, each in a rotated order")
    p.add_argument("--json", default=None)
    p.add_argument("--plot", default=None, help="PNG: ratio to copy against the row length, one panel per case")
    p.add_argument("--replot", default=None, metavar="JSON", help="draw a stored sweep (with --plot) and exit")
    args = p.parse_args(argv)
    try:
        args.variant_list = [tuple(int(n) for n in v.split("x")) for v in args.variants.split(",")]
    except ValueError:
        p.error(f"--variants: expected WxP pairs such as 8x4, got {args.variants!r}")
    for warps, per_sm in args.variant_list:
        if warps * per_sm > REGISTER_FILE_WARPS or warps not in (1, 2, 4, 8, 16, 32):
            p.error(f"--variants: {warps}x{per_sm} does not fit the register file at 64 registers "
                    f"(W a power of two, W x P <= {REGISTER_FILE_WARPS})")
    return args


def variant_config(triton_softmax, warps: int, per_sm: int, dtype: torch.dtype, direction: str):
    """The held LaunchConfig of `warps`-warp programs, `per_sm` per SM: a tile of HELD_WORDS words a thread."""
    operands = 1 if direction == "fwd" else 2
    block_n = warps * 32 * HELD_WORDS // operands * (4 // dtype.itemsize)
    return triton_softmax.LaunchConfig(block_n, warps, 1, per_sm=per_sm, maxnreg=64, held=True)


def plot_sweep(doc: dict, path: str) -> None:
    """One panel per (dtype, direction): ratio to copy against the row length, one line per variant and the
    rule's choice, marked where the rule held its chunks."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = sorted({(r["dtype"], r["direction"]) for r in doc["records"]})
    fig, axes = plt.subplots(1, len(panels), figsize=(5 * len(panels), 3.6), squeeze=False, sharey=True)
    for ax, (dtype, direction) in zip(axes[0], panels):
        records = [r for r in doc["records"] if (r["dtype"], r["direction"]) == (dtype, direction) and "us" in r]
        for variant in dict.fromkeys(r["variant"] for r in records):
            points = sorted((r["shape"][1], r["ratio_to_copy"]) for r in records if r["variant"] == variant)
            ax.plot(*zip(*points), "k--" if variant == "rule" else "o-", markersize=3, linewidth=0.9,
                    label="the rule's choice" if variant == "rule" else f"held, {variant} (warps x per SM)")
        ax.set_xscale("log", base=2)
        ax.set_title(f"{dtype} {direction}", fontsize=9)
        ax.set_xlabel("columns", fontsize=8)
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel("ratio to device copy", fontsize=8)
    axes[0][0].legend(fontsize=7)
    fig.suptitle(f"Triton split_row held tiles, {doc['gpu']}, commit {doc.get('commit')}", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main(argv=None) -> int:
    args = parse_args(argv)
    started = common.start_sweep("sweep_triton_held_tiles.py", args, plot_sweep)
    if started is None:
        return 0
    copy, l2 = started
    from cuda_portfolio.triton_kernels import softmax as triton_softmax

    records = []
    for shape_text, dname, case in common.softmax_sweep_cases(args, l2):
        rows, cols, dtype, direction = case.rows, case.cols, case.dtype, case.direction
        tensors = case.inputs[-1][:1 if direction == "fwd" else 2] + (case.out,)
        aligned, edges = triton_softmax._alignment("split_row", tensors, cols)
        rule = triton_softmax.kernel_config(case.inputs[-1][0], "split_row", direction, aligned or edges)

        def call_with(config, i):
            if direction == "fwd":
                triton_softmax._launch_forward(case.inputs[i][0], case.out, "split_row", config, edges)
            else:
                triton_softmax._launch_backward(*case.inputs[i], case.out, "split_row", config, edges)

        def rule_call(i):
            if direction == "fwd":
                triton_softmax.forward(case.inputs[i][0], case.out, "split_row")
            else:
                triton_softmax.backward(*case.inputs[i], case.out, "split_row")

        calls, case_records = {}, []
        for variant in [None] + args.variant_list:
            name = "rule" if variant is None else "x".join(map(str, variant))
            rec = {"shape": [rows, cols], "dtype": dname, "direction": direction, "variant": name}
            case_records.append(rec)
            if variant is None:
                calls[name], rec["config"] = rule_call, rule
                continue
            config = variant_config(triton_softmax, *variant, dtype, direction)
            chunks, chunk_cols, programs = triton_softmax._split_geometry(rows, cols, dtype.itemsize, config,
                                                                          case.out.device)
            rec["config"] = (f"{config.num_warps} warps, {config.block_n}-column tiles, {chunks} chunks "
                             f"of {chunk_cols}, {programs} programs")
            if not (aligned or edges) or chunks > programs:
                rec["skipped"] = ("rows not moved in whole 16-byte units" if not (aligned or edges)
                                  else "more chunks per row than resident programs")
                continue
            calls[name] = functools.partial(call_with, config)
        times = common.launch_times_us(calls, case.copies, args.samples, args.rounds)
        for rec in case_records:
            name = rec["variant"]
            records.append(rec)
            if name not in times:
                print(f"{shape_text} {dname} {direction} {name:>5}  skipped: {rec['skipped']}")
                continue
            us = times[name]
            err, ok = case.check(calls[name])
            rec.update({"us": us, "tb_per_s": case.bytes_moved / us / 1e6,
                        "ratio_to_copy": case.bytes_moved / us / 1e6 / copy, "vs_rule": times["rule"] / us,
                        "rel_err": err, "ok": ok})
            print(f"{shape_text} {dname} {direction} {name:>5} {us:9.2f} us {rec['ratio_to_copy']:.2f} of copy "
                  f" x{rec['vs_rule']:.3f} vs rule  ({rec['config']}){'' if ok else '  WRONG'}", flush=True)
        if args.json:
            common.write_sweep_json(args.json, args, copy, records)
    common.plot_sweep_records(args, records, plot_sweep)
    return 0 if all(r.get("ok", True) for r in records) else 1


if __name__ == "__main__":
    raise SystemExit(main())
