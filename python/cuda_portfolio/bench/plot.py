"""Plots of a results file (matplotlib, optional: the `bench` extra).

    python -m cuda_portfolio.bench.plot results.json out.png
    python -m cuda_portfolio.bench.plot results.json out.png --rounds [--case "bfloat16 4096x4096x4096"]

(`python -m cuda_portfolio.bench.targets ... --plot out.png` draws the targets' grid, render_targets below.)
Softmax: TB/s against row length (log x), one line per provider (and plan), forward solid and
backward dashed, the measured device-copy ceiling as a horizontal line; one panel per dtype.
GEMM: TFLOP/s per kernel against cuBLAS as grouped bars per shape; one panel per dtype.
--rounds: per case, each provider's median in every round (providers interleaved, rotated each round), and below
it the ratio to the reference peer (cuBLAS, or torch for softmax) round by round, beside the paired ratio the
tables print (the median of those) and the ratio of overall medians: where the GPU changes speed mid-run, this
shows whether every provider moved together (render_rounds).
Only records with status ok are drawn: every output validated, but for softmax's reference op (an elementwise op
with the case's traffic that computes something else, drawn as what moving the bytes takes); the plain plot leaves
the A/A control to the table (--rounds draws it, and its per-round ratio, beside ours).
"""
from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

from .report import SHORT_DTYPE, case_key, case_title, provider_label, round_ratios, shape_cube, time_ratio


def _pyplot():
    try:
        import matplotlib
    except ImportError as exc:
        raise RuntimeError(f"plotting needs matplotlib (pip install matplotlib): {exc}") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def series_label(r: dict) -> str:
    """Provider, plus the plan/kernel when one was asked for by name ("auto" may resolve differently per shape)."""
    return r["provider"] if r["plan"] in (None, "auto") else f"{r['provider']} [{r['plan']}]"


def _softmax_panel(ax, records, dtype, copy_tbs):
    series = {}
    for r in records:
        series.setdefault(series_label(r), {}).setdefault(r["direction"], []).append((r["shape"][1], r["tb_per_s"]))
    colors = plt_colors(len(series))
    for color, (label, by_direction) in zip(colors, sorted(series.items())):
        for direction, points in sorted(by_direction.items(), reverse=True):  # fwd before bwd
            points.sort()
            ax.plot([p[0] for p in points], [p[1] for p in points], marker="o" if direction == "fwd" else "s",
                    linestyle="-" if direction == "fwd" else "--", color=color, label=f"{label} {direction}")
    if copy_tbs:
        ax.axhline(copy_tbs, color="black", linewidth=1, linestyle=":", label=f"device copy {copy_tbs:.2f} TB/s")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("row length (columns)")
    ax.set_ylabel("TB/s (bytes read + written once)")
    ax.set_title(f"softmax {dtype} (solid: forward, dashed: backward)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)


def _matmul_panel(ax, records, dtype):
    shapes = list(dict.fromkeys(tuple(r["shape"]) for r in records))
    # Run order (each backend's kernels as matmul_kernels() lists them: the ladder), cuBLAS last.
    labels = sorted(dict.fromkeys(series_label(r) for r in records), key=lambda s: s == "cublas")
    width = 0.8 / max(1, len(labels))
    for j, (color, label) in enumerate(zip(plt_colors(len(labels)), labels)):
        values = {tuple(r["shape"]): r["tflop_per_s"] for r in records if series_label(r) == label}
        xs = [i + (j - (len(labels) - 1) / 2) * width for i in range(len(shapes))]
        ax.bar(xs, [values.get(s, 0.0) for s in shapes], width=width, label=label, color=color)
    ax.set_xticks(range(len(shapes)))
    ax.set_xticklabels(["x".join(map(str, s)) for s in shapes], rotation=20, fontsize=8)
    ax.set_ylabel("TFLOP/s (2*M*N*K)")
    ax.set_title(f"GEMM {dtype}")
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize=7)


def plt_colors(n: int) -> list:
    import matplotlib

    cmap = matplotlib.colormaps["tab10" if n <= 10 else "tab20"]
    return [cmap(i % cmap.N) for i in range(n)]


def _save(plt, fig, path: str) -> None:
    """Lay out, write (creating the folders above `path`) and close a figure."""
    fig.tight_layout()
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def render_plot(doc: dict, path: str) -> None:
    """One PNG: a row of softmax panels and/or a row of GEMM panels, one panel per dtype."""
    plt = _pyplot()
    ok = [r for r in doc["records"] if r["status"] == "ok" and r["kind"] != "control"]  # A/A: the table's job
    panels = []
    for op in ("softmax", "matmul"):
        dtypes = sorted({r["dtype"] for r in ok if r["op"] == op})
        if dtypes:
            panels.append((op, dtypes))
    if not panels:
        raise ValueError("nothing to plot: no record in the results file has status ok")
    columns = max(len(d) for _, d in panels)
    fig, axes = plt.subplots(len(panels), columns, figsize=(6.5 * columns, 4.8 * len(panels)), squeeze=False)
    copy_tbs = (doc["ceilings"].get("device_copy") or {}).get("tb_per_s")
    for row, (op, dtypes) in enumerate(panels):
        for col in range(columns):
            ax = axes[row][col]
            if col >= len(dtypes):
                ax.axis("off")
                continue
            selected = [r for r in ok if r["op"] == op and r["dtype"] == dtypes[col]]
            if op == "softmax":
                _softmax_panel(ax, selected, dtypes[col], copy_tbs)
            else:
                _matmul_panel(ax, selected, dtypes[col])
    env = doc["env"]
    fig.suptitle(f"{env['gpu']} - torch {env['torch']}, triton {env['triton']} - {env['date']}", fontsize=10)
    _save(plt, fig, path)


# More cases than this in one --rounds figure would leave each panel too small to read.
MAX_ROUND_CASES = 6
# The peer each case's per-round ratios are read against.
ROUND_REFERENCE = {"matmul": "cublas", "softmax": "torch"}
LINE_STYLE = {"ours": "-", "peer": "--", "control": ":", "reference": "-."}


def round_cases(doc: dict, match: str | None = None) -> list[tuple[str, list[dict]]]:
    """(title, records) of each case whose ok records hold two or more round medians, in run order; `match` keeps
    the cases whose title (as the table prints it, e.g. "matmul bfloat16 4096x4096x4096") contains it."""
    cases = {}
    for r in doc["records"]:
        if r["status"] == "ok" and len((r["time_ms"] or {}).get("round_medians") or []) >= 2:
            cases.setdefault(case_key(r), []).append(r)
    found = [(case_title(records[0]), records) for records in cases.values()]
    return [(title, records) for title, records in found if match is None or match in title]


def render_rounds(doc: dict, path: str, match: str | None = None) -> None:
    """Per case, two panels: each provider's median time in every round, and each of ours (and the A/A control)
    against the reference peer round by round, with the paired ratio and the ratio of overall medians."""
    plt = _pyplot()
    cases = round_cases(doc, match)
    where = f" matching {match!r}" if match else ""
    if not cases:
        raise ValueError(f"no case{where} holds round medians of two or more rounds (--rounds 2+ when benchmarking)")
    if len(cases) > MAX_ROUND_CASES:
        raise ValueError(f"{len(cases)} cases{where} hold round medians; pick at most {MAX_ROUND_CASES} with --case, "
                         f"e.g. --case {cases[0][0].split(' ', 1)[1]!r}")
    from matplotlib.ticker import MaxNLocator

    fig, axes = plt.subplots(2, len(cases), figsize=(6.5 * len(cases), 7.5), squeeze=False,
                             gridspec_kw={"height_ratios": [3, 2]})
    for col, (title, records) in enumerate(cases):
        top, bottom = axes[0][col], axes[1][col]
        for ax in (top, bottom):
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        colors = dict(zip((provider_label(r) for r in records), plt_colors(len(records))))
        for r in records:
            rounds = r["time_ms"]["round_medians"]
            top.plot(range(1, len(rounds) + 1), [ms * 1e3 for ms in rounds], marker="o", markersize=3,
                     linestyle=LINE_STYLE.get(r["kind"], "-"), color=colors[provider_label(r)],
                     label=provider_label(r))
        top.set_title(title, fontsize=10)
        top.set_ylabel("median µs in the round")
        top.grid(True, alpha=0.3)
        top.legend(fontsize=7)
        reference = next((r for r in records if r["provider"] == ROUND_REFERENCE.get(r["op"])), None)
        compared = [r for r in records if r is not reference and r["kind"] in ("ours", "control")]
        if reference is None or not compared:
            bottom.text(0.5, 0.5, f"no {ROUND_REFERENCE.get(records[0]['op'])} record to pair with", ha="center",
                        va="center", transform=bottom.transAxes)
            bottom.axis("off")
            continue
        for r in compared:
            ratios = round_ratios(reference, r)
            if not ratios:
                continue
            color = colors[provider_label(r)]
            paired, of_medians = time_ratio(reference, r), reference["time_ms"]["median"] / r["time_ms"]["median"]
            bottom.plot(range(1, len(ratios) + 1), ratios, marker="o", markersize=3, color=color,
                        linestyle=LINE_STYLE.get(r["kind"], "-"),
                        label=f"{provider_label(r)}: paired {paired:.3f}x, of medians {of_medians:.3f}x")
            bottom.axhline(paired, color=color, linewidth=0.8, alpha=0.6)
        bottom.axhline(1.0, color="black", linewidth=0.8, linestyle=":")
        bottom.set_ylabel(f"x {reference['provider']} in the round")
        bottom.set_xlabel("round (every provider timed once per round, order rotated)")
        bottom.grid(True, alpha=0.3)
        bottom.legend(fontsize=7)
    env = doc["env"]
    fig.suptitle(f"{env['gpu']} - commit {(env['git_commit'] or 'unknown')[:12]} - {env['date']}", fontsize=10)
    _save(plt, fig, path)


DTYPE_ORDER = ("float32", "bfloat16", "float16")


def target_column(r: dict) -> tuple:
    """A grid column: provider (and the kernel pinned by name), dtype, direction; ordered with the pinned kernels
    last, forward before backward, then by dtype and provider."""
    direction = r["direction"] if r["op"] == "softmax" else ""
    label = " ".join(part for part in (series_label(r), SHORT_DTYPE.get(r["dtype"], r["dtype"]), direction) if part)
    dtype_rank = DTYPE_ORDER.index(r["dtype"]) if r["dtype"] in DTYPE_ORDER else len(DTYPE_ORDER)
    return (r["plan"] not in (None, "auto"), direction == "bwd", dtype_rank, series_label(r)), label


def target_grids(found: list) -> list[tuple[str, list[str], list[str], dict]]:
    """The verdicts (bench.targets.Verdict) as one grid per (op, measure), in the order they first appear:
    (title, row labels = shapes in run order, column labels, {(row, column): verdict})."""
    grids = {}
    for v in found:
        title = f"{v.record['op']}: {v.measure.removeprefix('x ')} ratio"
        rows, columns, cells = grids.setdefault(title, ({}, {}, {}))
        row = shape_cube(v.record["shape"])
        rows.setdefault(row, len(rows))
        order, column = target_column(v.record)
        columns.setdefault(column, order)
        cells[row, column] = v
    return [(title, list(rows), sorted(columns, key=columns.get), cells) for title, (rows, columns, cells) in
            grids.items()]


def value_text(value: float, bar: float, measure: str) -> str:
    """The value at 2 decimals for copy ratios and 3 for time ratios, with more where rounding would lift a value
    under its bar to it (0.9996x cuBLAS reads 0.9996, not 1.000). NaN (a kernel that was WRONG or errored, or a run
    without a valid ceiling: targets.verdicts) reads "failed"."""
    if math.isnan(value):
        return "failed"
    digits = 2 if measure == "x copy" else 3
    while value < bar and float(f"{value:.{digits}f}") >= bar and digits < 6:
        digits += 1
    return f"{value:.{digits}f}"


def render_targets(found: list, path: str, title: str) -> None:
    """Every cell with a target as a colored grid, one panel per (op, measure): the color is the value over its bar
    on a red-yellow-green scale (red at 0.6x, yellow at the bar, green at 1.1x and above), the text the value and the
    bar, and an outline marks a cell not met."""
    plt = _pyplot()
    from matplotlib.colors import TwoSlopeNorm
    from matplotlib.patches import Rectangle

    grids = target_grids(found)
    if not grids:
        raise ValueError("nothing to plot: no record of ours has a target in these files")
    fig, axes = plt.subplots(len(grids), 1, squeeze=False, figsize=(12, 1.2 + sum(0.42 * len(g[1]) + 1.3
                                                                                      for g in grids)),
                             gridspec_kw={"height_ratios": [len(g[1]) + 3 for g in grids]})
    norm = TwoSlopeNorm(vmin=0.6, vcenter=1.0, vmax=1.1)
    cmap = plt.get_cmap("RdYlGn")
    for ax, (panel, rows, columns, cells) in zip(axes[:, 0], grids):
        for (row, column), v in cells.items():
            y, x = rows.index(row), columns.index(column)
            ax.add_patch(Rectangle((x - 0.5, y - 0.5), 1, 1, alpha=0.75,
                                   color=cmap(norm(0.6 if math.isnan(v.value) else
                                                   min(max(v.value / v.bar, 0.6), 1.1)))))
            ax.text(x, y, f"{value_text(v.value, v.bar, v.measure)}\n≥ {v.bar:.2f}", ha="center", va="center", fontsize=7,
                    fontweight="normal" if v.met else "bold")
            if not v.met:
                ax.add_patch(Rectangle((x - 0.46, y - 0.46), 0.92, 0.92, fill=False, linewidth=1.6, color="black"))
        ax.set_xlim(-0.5, len(columns) - 0.5)
        ax.set_ylim(len(rows) - 0.5, -0.5)
        ax.set_xticks(range(len(columns)))
        ax.set_xticklabels(columns, rotation=25, ha="right", fontsize=8)
        ax.set_yticks(range(len(rows)))
        ax.set_yticklabels(rows, fontsize=8)
        met = sum(v.met for v in cells.values())
        ax.set_title(f"{panel}: {met} met, {len(cells) - met} not met (outlined) of {len(cells)}", fontsize=9)
    fig.suptitle(title, fontsize=10)
    _save(plt, fig, path)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m cuda_portfolio.bench.plot",
                                     description="Render the plot of a benchmark results file.")
    parser.add_argument("results", type=argparse.FileType("r"), help="a results JSON file (--json of the benchmark)")
    parser.add_argument("out", help="the image to write (.png, .svg, .pdf)")
    parser.add_argument("--rounds", action="store_true",
                        help="draw each case's round medians and per-round ratios instead (runs with --rounds 2+)")
    parser.add_argument("--case", metavar="TEXT", default=None,
                        help="with --rounds: only the cases whose title contains TEXT, e.g. 'bfloat16 4096x4096x4096'")
    args = parser.parse_args(argv)
    if args.case is not None and not args.rounds:
        parser.error("--case selects cases for --rounds")
    with args.results as f:
        doc = json.load(f)
    try:
        if args.rounds:
            render_rounds(doc, args.out, args.case)
        else:
            render_plot(doc, args.out)
    except (RuntimeError, ValueError) as exc:
        print(f"plot: {exc}", file=sys.stderr)
        return 1
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
