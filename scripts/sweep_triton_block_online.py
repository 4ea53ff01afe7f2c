#!/usr/bin/env python3
"""Time the Triton block_online plan at forced program shapes: warps per program, programs per SM, tile columns.

    python scripts/sweep_triton_block_online.py --dtype bf16 --direction bwd --json results/local/bo.json --plot bo.png
    python scripts/sweep_triton_block_online.py --replot results/local/bo.json --plot bo.png

block_online reads each row twice (pass 2 from L2), a tile at a time: what an SM has in flight is its programs'
current tiles, and where it idles is each row's end (the last tile's latency, the block reduction, the next
program's start), unless another program on the SM is streaming then. A variant `WxP:T` (--variants) is programs
of W warps, P per SM, the register file split evenly among them (maxnreg; W x P <= 32 leaves each thread 64), over
tiles of T columns (at most the row's next power of two). Its grid is the plan's own rule for P per SM: a program
per row while the rows resident at once fit the L2 budget, else the capped persistent grid (_block_online_programs).
For each (shape, dtype, direction) the sweep times the plan's own choice (`rule`) and each variant in one rotation
(_common.launch_times_us: --rounds rounds of --samples samples each, the benchmark's rotated order), divided into the
benchmark's device-copy ceiling. Every output is checked against float64 PyTorch, inputs unchanged. For choosing
launch_config's block_online rows, not for the README: the benchmark (python -m cuda_portfolio.bench) measures
against peers.
"""
from __future__ import annotations

import _common as common


def parse_args(argv=None):
    p = common.variant_sweep_parser(
        __doc__, "4096x8192,4096x16384,4096x24576,4096x32768,2048x50257,1024x131072", "bf16", "bwd",
        "32x1:4096,32x1:16384,16x2:4096,16x2:8192,8x4:2048",
        "WxP:T: programs of W warps, P per SM (W x P <= 32), tiles of T columns, comma-separated")
    args = p.parse_args(argv)
    args.variant_list = []
    for text in args.variants.split(","):
        try:
            shape, tile = text.split(":")
            warps, per_sm = (int(n) for n in shape.split("x"))
            tile = int(tile)
        except ValueError:
            p.error(f"--variants: expected WxP:T such as 16x2:4096, got {text!r}")
        if warps not in (1, 2, 4, 8, 16, 32) or warps * per_sm > common.REGISTER_FILE_WARPS or per_sm < 1:
            p.error(f"--variants: {warps}x{per_sm} does not fit the register file at 64 registers or more "
                    f"(W a power of two up to 32, W x P <= {common.REGISTER_FILE_WARPS})")
        if tile < 32 * warps or tile & (tile - 1):
            p.error(f"--variants: tiles of {tile} columns: a power of two of at least a column per thread "
                    f"({32 * warps})")
        args.variant_list.append((warps, per_sm, tile))
    return args


def block_online_variants(triton_softmax, args, case, aligned: bool, edges: bool) -> list:
    """The case's forced variants for _common.sweep_triton_variants: each WxP:T is the plan's own launch_config for
    the case (its store streaming and the rest) with the program shape, register cap and tile replaced, and runs on
    the grid the plan's rule gives that shape."""
    import triton

    operands = 1 if case.direction == "fwd" else 2
    bytes_per_row = operands * case.cols * case.dtype.itemsize
    cols_p2 = triton.next_power_of_2(case.cols)
    rule = triton_softmax.launch_config("block_online", case.dtype, cols_p2, case.direction, aligned or edges)
    variants = []
    for warps, per_sm, tile in args.variant_list:
        config = rule._replace(block_n=min(cols_p2, tile), num_warps=warps, per_sm=per_sm,
                               maxnreg=triton_softmax._register_share(warps, per_sm))
        programs = triton_softmax._block_online_programs(case.rows, config, case.out.device, bytes_per_row)
        description = (f"{warps} warps x {per_sm} per SM, {config.block_n}-column tiles, maxnreg {config.maxnreg}, "
                       f"{programs} programs")
        variants.append((f"{warps}x{per_sm}:{tile}", config, description, None))
    return variants


def plot_sweep(doc: dict, path: str) -> None:
    """One panel per (dtype, direction): ratio to copy against the row length, one line per variant and the
    rule's choice."""
    common.plot_variant_sweep(doc, path, "Triton block_online program shapes",
                              lambda v: f"{v} (warps x per SM : tile)")


def main(argv=None) -> int:
    return common.run_triton_variant_sweep("sweep_triton_block_online.py", parse_args(argv), "block_online",
                                           block_online_variants, plot_sweep)


if __name__ == "__main__":
    raise SystemExit(main())
