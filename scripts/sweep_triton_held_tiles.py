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

import torch

import _common as common

HELD_WORDS = 32  # per thread, the whole held chunk (both operands of the backward)


def parse_args(argv=None):
    p = common.variant_sweep_parser(
        __doc__, "2048x20000,2048x32768,2048x50257,1024x65536,1024x100000,1024x131072,256x262144", "fp32,bf16", "fwd",
        "16x2,8x4,4x8", "WxP: programs of W warps, P per SM (W x P <= 32), comma-separated")
    args = p.parse_args(argv)
    try:
        args.variant_list = [tuple(int(n) for n in v.split("x")) for v in args.variants.split(",")]
    except ValueError:
        p.error(f"--variants: expected WxP pairs such as 8x4, got {args.variants!r}")
    for warps, per_sm in args.variant_list:
        if warps * per_sm > common.REGISTER_FILE_WARPS or warps not in (1, 2, 4, 8, 16, 32):
            p.error(f"--variants: {warps}x{per_sm} does not fit the register file at 64 registers "
                    f"(W a power of two, W x P <= {common.REGISTER_FILE_WARPS})")
    return args


def variant_config(triton_softmax, warps: int, per_sm: int, dtype: torch.dtype, direction: str):
    """The held LaunchConfig of `warps`-warp programs, `per_sm` per SM: a tile of HELD_WORDS words a thread."""
    operands = 1 if direction == "fwd" else 2
    block_n = warps * 32 * HELD_WORDS // operands * (4 // dtype.itemsize)
    return triton_softmax.LaunchConfig(block_n, warps, 1, per_sm=per_sm, maxnreg=64, held=True)


def held_variants(triton_softmax, args, case, aligned: bool, edges: bool) -> list:
    """The case's forced variants for _common.sweep_triton_variants: each WxP's held config, its chunk geometry,
    and why it cannot run, if it cannot (a row with more chunks than the grid has resident programs would wait
    forever at its first exchange)."""
    variants = []
    for warps, per_sm in args.variant_list:
        config = variant_config(triton_softmax, warps, per_sm, case.dtype, case.direction)
        chunks, chunk_cols, programs = triton_softmax._split_geometry(case.rows, case.cols, case.dtype.itemsize, config,
                                                                      case.out.device)
        description = (f"{config.num_warps} warps, {config.block_n}-column tiles, {chunks} chunks of {chunk_cols}, "
                       f"{programs} programs")
        skipped = ("rows not moved in whole 16-byte units" if not (aligned or edges)
                   else "more chunks per row than resident programs" if chunks > programs else None)
        variants.append((f"{warps}x{per_sm}", config, description, skipped))
    return variants


def plot_sweep(doc: dict, path: str) -> None:
    """One panel per (dtype, direction): ratio to copy against the row length, one line per variant and the
    rule's choice."""
    common.plot_variant_sweep(doc, path, "Triton split_row held tiles", lambda v: f"held, {v} (warps x per SM)")


def main(argv=None) -> int:
    return common.run_triton_variant_sweep("sweep_triton_held_tiles.py", parse_args(argv), "split_row", held_variants,
                                           plot_sweep)


if __name__ == "__main__":
    raise SystemExit(main())
