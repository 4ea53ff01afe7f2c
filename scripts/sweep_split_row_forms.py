#!/usr/bin/env python3
"""Time the CUDA split_row plan's forms on the same inputs: its held form and the streamed (or portable) kernels,
forced per point, beside its own rule's pick and the Triton backend's split_row: what the held form's rule is
fitted to (csrc/softmax/softmax_split_row.cu, held_plan()).

    python scripts/sweep_split_row_forms.py --json results/local/split-row-forms.json
    python scripts/sweep_split_row_forms.py --shapes 256x262144,4x4194304 --dtype bf16 --direction fwd,bwd

Points of a case: `streamed` (CUDA_PORTFOLIO_SPLIT_ROW_IN_REGISTERS=0: the streamed kernel on Hopper, the portable one
elsewhere), `held` (=1: the held form, where it can run: rows of whole 16-byte units in one-tile slices; elsewhere
the same kernel as `streamed`), `rule` (unset) and `triton`. Each point's call sets the variable itself (a graph
captures the launch once). They are timed as the benchmark times a case's providers (_common.launch_times_us: the
benchmark's input rotation, rounds in a rotated order, the median of each point's samples) and divided into the
benchmark's device-copy ceiling; every point's output is checked against float64 PyTorch, inputs unchanged. Each
record names the layout the CUDA points ran (describe_launch). For looking at layouts, not for the README: the
benchmark (python -m cuda_portfolio.bench) is what measures against peers.
"""
from __future__ import annotations

import argparse
import os

import _common as common

ENV = "CUDA_PORTFOLIO_SPLIT_ROW_IN_REGISTERS"
FORMS = {"streamed": "0", "held": "1", "rule": None}


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--shapes", default="256x262144,1024x131072,32x1048576,4x4194304",
                   help="rows x cols, comma-separated")
    p.add_argument("--dtype", default="fp32,bf16", help="comma-separated dtypes (default fp32,bf16)")
    p.add_argument("--direction", default="fwd,bwd", help="fwd and/or bwd, comma-separated (default fwd,bwd)")
    p.add_argument("--samples", type=int, default=5, help="timed samples of each point per round")
    p.add_argument("--rounds", type=int, default=3, help="rounds over the case's points, each in a rotated order")
    p.add_argument("--json", default=None, help="records file, rewritten after every case")
    p.set_defaults(replot=None, plot=None)
    return p.parse_args(argv)


def run(module, case, i) -> None:
    """`module`'s split_row on the case's i-th inputs into its output."""
    if case.direction == "fwd":
        module.forward(case.inputs[i][0], case.out, "split_row")
    else:
        module.backward(case.inputs[i][0], case.inputs[i][1], case.out, "split_row")


def set_form(form) -> None:
    """The override as a point asks (None: unset)."""
    if form is None:
        os.environ.pop(ENV, None)
    else:
        os.environ[ENV] = form


def native_call(module, case, form):
    def call(i):
        set_form(form)
        run(module, case, i)
    return call


def main(argv=None) -> int:
    args = parse_args(argv)
    copy, l2 = common.start_sweep("sweep_split_row_forms.py", args, None)
    from cuda_portfolio.native import softmax as native_softmax
    from cuda_portfolio.triton_kernels import softmax as triton_softmax

    records = []
    try:
        for shape_text, dname, case in common.softmax_sweep_cases(args, l2):
            operands = case.inputs[0][:1 if case.direction == "fwd" else 2]
            calls, layouts = {}, {}
            for name, form in FORMS.items():
                calls[name] = native_call(native_softmax, case, form)
                set_form(form)
                layouts[name] = native_softmax.describe_launch(operands, "split_row", case.direction)
            calls["triton"] = lambda i, case=case: run(triton_softmax, case, i)
            times = common.launch_times_us(calls, case.copies, args.samples, args.rounds)
            line = f"{shape_text} {dname} {case.direction}"
            for name, us in times.items():
                err, ok = case.check(calls[name])
                ratio = case.bytes_moved / us / 1e6 / copy
                records.append({"shape": [case.rows, case.cols], "dtype": dname, "direction": case.direction,
                                "form": name, "layout": layouts.get(name), "us": us, "ratio_to_copy": ratio,
                                "vs_streamed": times["streamed"] / us, "rel_err": err, "ok": ok})
                line += f"  {name} {us:.2f} us {ratio:.3f}{'' if ok else ' WRONG'}"
            print(f"{line}  held x{times['streamed'] / times['held']:.3f} vs streamed; rule: "
                  f"{(layouts['rule'] or '').split(':')[0]}", flush=True)
            if args.json:
                common.write_sweep_json(args.json, args, copy, records)
    finally:
        os.environ.pop(ENV, None)
    return 0 if all(r["ok"] for r in records) else 1


if __name__ == "__main__":
    raise SystemExit(main())
