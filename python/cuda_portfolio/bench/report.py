"""The readable table printed after a run (also from a stored JSON: python -m cuda_portfolio.bench.report F),
and the README's markdown tables from a stored JSON (python -m cuda_portfolio.bench.report --markdown F)."""
from __future__ import annotations

import argparse
import itertools
import json
import re
import statistics
import sys

from . import run_cli


def format_time(ms: float) -> str:
    """A time in ms as '  123.4 us' below 1 ms, else '   1.234 ms' (fixed width, for columns)."""
    return f"{ms * 1e3:8.1f} us" if ms < 1.0 else f"{ms:8.3f} ms"


# Round medians further apart than this (slowest / fastest) get a line under the record: a provider that
# switches between speeds from round to round, whose median then stands for neither.
ROUND_SPREAD_NOTED = 1.05


def round_spread_line(t: dict) -> str | None:
    """'rounds: a .. b (+x%)' when the record's round medians differ by more than ROUND_SPREAD_NOTED."""
    rounds = t.get("round_medians") or []
    if len(rounds) < 2 or max(rounds) <= ROUND_SPREAD_NOTED * min(rounds):
        return None
    return (f"rounds: {format_time(min(rounds)).strip()} .. {format_time(max(rounds)).strip()} "
            f"(+{100 * (max(rounds) / min(rounds) - 1):.0f}%; round medians in order: "
            f"{', '.join(format_time(v).strip() for v in rounds)})")


def provider_label(r: dict) -> str:
    if r["plan"] is None:
        return r["provider"]
    plan = r["plan"] if r.get("resolved_plan") in (None, r["plan"]) else f"{r['plan']}->{r['resolved_plan']}"
    return f"{r['provider']} [{plan}]"


def case_key(r: dict) -> tuple:
    return r["op"], r["direction"], r["dtype"], tuple(r["shape"])


def case_title(r: dict) -> str:
    direction = f" {r['direction']}" if r["op"] == "softmax" else ""
    return f"{r['op']}{direction} {r['dtype']} {'x'.join(map(str, r['shape']))}"


def render_table(doc: dict) -> str:
    env, ceilings = doc["env"], doc["ceilings"]
    lines = [f"{env['gpu']} ({env['sm_count']} SMs), torch {env['torch']}, triton {env['triton']}, "
             f"CUDA {env['cuda']}, commit {(env['git_commit'] or 'unknown')[:12]}"
             f"{' (dirty)' if env['git_dirty'] else ''}, timing: {env['timing_method']}"
             f"{' (' + env['timing_method_reason'] + ')' if env['timing_method_reason'] else ''}"]
    copy = ceilings.get("device_copy")
    if copy:
        lines.append(f"ceiling: device copy {copy['tb_per_s']:.2f} TB/s (bytes read + written); "
                     "GEMM ceiling: cuBLAS on the same shape")
    lines.append("ratios between providers (xcuBLAS, vs peers) as the run stored them: runs from commit 45537f2 on "
                 "store the median of per-round time ratios, which can differ from the ratio of the medians")
    label_width = max([len(provider_label(r)) for r in doc["records"]] +
                      [len(case_title(r)) - 2 for r in doc["records"]] + [20])
    for key, group in itertools.groupby(doc["records"], key=case_key):
        group = list(group)
        rate_unit, ceiling_name = ("TB/s", "xcopy") if key[0] == "softmax" else ("TFLOP/s", "xcuBLAS")
        lines.append("")
        lines.append(f"{case_title(group[0]):<{label_width + 2}} method    median      IQR  {rate_unit:>8} "
                     f"{ceiling_name:>8}  vs peers (peer time / this time)")
        for r in group:
            label = f"  {provider_label(r):<{label_width}}"
            if r["status"] != "ok":
                lines.append(f"{label} {r['status']}: {r['reason']}")
                continue
            t = r["time_ms"]
            rate = r["tb_per_s"] if key[0] == "softmax" else r["tflop_per_s"]
            ceiling = f"{r['ratio_to_ceiling']:8.2f}" if r["ratio_to_ceiling"] is not None else "       -"
            peers = "  ".join(f"{name} {ratio:.2f}x" for name, ratio in r["ratio_to_peers"].items())
            lines.append(f"{label} {r['method']:<6} {format_time(t['median'])} {100 * t['iqr'] / t['median']:6.1f}%  "
                         f"{rate:8.2f} {ceiling}  {peers}")
            if r.get("config"):
                lines.append(f"  {'':<{label_width}} config: {r['config']}")
            spread = round_spread_line(t)
            if spread:
                lines.append(f"  {'':<{label_width}} {spread}")
    lines.append("")
    lines += summary_lines(doc["records"])
    return "\n".join(lines)


def time_ratio(numerator: dict, denominator: dict) -> float:
    """numerator's time / denominator's time, paired by round: the median of the per-round ratios of the
    two records' round medians (every provider of a case is timed once per round, rounds interleaved).
    The H200 changes speed between rounds for every provider alike (128x8192^2 GEMM: all four providers,
    cuBLAS included, ran 8-15% slower after the first 2-3 rounds, results/h200 matmul files of session 13),
    so a ratio of overall medians could compare one provider's fast rounds with another's slow ones; the
    paired ratio cancels the shared change. Falls back to the ratio of the medians when the two records do
    not hold the same number of rounds (one failed mid-run)."""
    ratios = round_ratios(numerator, denominator)
    if ratios:
        return statistics.median(ratios)
    return numerator["time_ms"]["median"] / denominator["time_ms"]["median"]


def round_ratios(numerator: dict, denominator: dict) -> list[float]:
    """numerator's time / denominator's time in each round, or [] when the two records do not hold the same
    number of round medians."""
    a, b = numerator["time_ms"].get("round_medians"), denominator["time_ms"].get("round_medians")
    return [x / y for x, y in zip(a, b)] if a and b and len(a) == len(b) else []


def aa_ratios(records: list[dict]) -> list[float]:
    """Time ratio of each A/A control (a peer timed a second time) to the peer it repeats."""
    return [r["ratio_to_peers"][r["control_of"]] for r in records
            if r["kind"] == "control" and r["status"] == "ok" and r["control_of"] in r["ratio_to_peers"]]


def aa_band(records: list[dict]) -> tuple[float, float] | None:
    """The noise band of a run: (lowest, highest) A/A ratio of its controls, each taken both ways (a control and its
    peer are two timings of one op: which is which is arbitrary, and a gain is a speed ratio where the A/A ratio is
    a time ratio), so the band always holds 1; None when the run has none. Raw (min, max) collapsed to a point for
    one control and could leave 1 out, when an unchanged kernel read faster or slower (bench.compare)."""
    ratios = aa_ratios(records)
    both_ways = ratios + [1.0 / r for r in ratios]
    return (min(both_ways), max(both_ways)) if ratios else None


def summary_lines(records: list[dict]) -> list[str]:
    """The noise floor from the A/A controls, and the count of each status."""
    aa = aa_ratios(records)
    lines = []
    if aa:
        lines.append(f"A/A control (same peer timed twice): time ratio {min(aa):.3f}..{max(aa):.3f} over {len(aa)} "
                     f"case(s); differences inside that band are noise, not wins")
    counts = {}
    for r in records:
        counts[r["status"]] = counts.get(r["status"], 0) + 1
    lines.append("records: " + ", ".join(f"{n} {status}" for status, n in counts.items()))
    wrong = [f"{case_title(r)} {provider_label(r)}" for r in records if r["status"] == "WRONG"]
    if wrong:
        lines.append("WRONG (computed the wrong result; not timed as fast): " + "; ".join(wrong))
    return lines


SHORT_DTYPE = {"float32": "fp32", "bfloat16": "bf16", "float16": "fp16"}


def unique(values) -> list:
    """The distinct values in the order they first appear."""
    return list(dict.fromkeys(values))


def first_of_each(records: list[dict], key) -> dict:
    """key(r) -> the first record with that key (a case's "auto" provider comes before pinned plans)."""
    found = {}
    for r in records:
        found.setdefault(key(r), r)
    return found


def shape_cross(shape) -> str:
    """4096×4096: the shape written with ×."""
    return "×".join(map(str, shape))


def shape_cube(shape) -> str:
    """4096³ for a cube, else the shape written with ×."""
    return f"{shape[0]}³" if len(set(shape)) == 1 and len(shape) == 3 else shape_cross(shape)


def markdown_table(header: list[str], rows: list[list[str]]) -> str:
    """A markdown table: the header line, the |---| line, one line per row."""
    def line(cells):
        return "| " + " | ".join(cells) + " |"
    return "\n".join([line(header), "|" + "---|" * len(header)] + [line(row) for row in rows])


def peer_title(name: str, env: dict) -> str:
    """The column title of a peer: Liger with its version, cuBLAS capitalised, others as recorded."""
    if name == "liger":
        return " ".join(filter(None, ["Liger", env.get("liger_kernel")]))
    return {"cublas": "cuBLAS"}.get(name, name)


def supported_dtypes(reason: str) -> str | None:
    """'fp16/bf16' from a refusal like 'mma_sync supports float16 and bfloat16, not float32', else None."""
    match = re.search(r"supports (\w+(?:, \w+)*(?:,? and \w+)?), not ", reason)
    if not match:
        return None
    return "/".join(SHORT_DTYPE.get(name, name) for name in re.split(r",? and |, ", match.group(1)))


def status_cell(r: dict | None) -> str:
    """The cell of a record that did not run: 'refuses' (naming the dtypes it takes, when its reason says),
    else its status (WRONG, unavailable, error); '-' where the file has no record."""
    if r is None:
        return "-"
    if r["status"] != "refused":
        return r["status"]
    dtypes = supported_dtypes(r["reason"])
    return f"refuses ({dtypes} only)" if dtypes else "refuses"


def ratio_cell(r: dict | None, run_method: str | None = None) -> str:
    """The ratio to the ceiling (copy bandwidth or cuBLAS), 2 decimals, or why there is none; with the record's timing
    method in brackets where it is not the run's (a provider whose capture failed, timed by events: no ratio to the
    others is taken across methods, and its cell is not like theirs)."""
    if r is None or r["status"] != "ok":
        return status_cell(r)
    if r["ratio_to_ceiling"] is None:
        return "-"
    method = f" ({r['method']})" if run_method and r.get("method") and r["method"] != run_method else ""
    return f"{r['ratio_to_ceiling']:.2f}{method}"


def tflops_cell(r: dict | None, decimals: int) -> str:
    """TFLOP/s with that many decimals, or why there is none."""
    if r is None or r["status"] != "ok":
        return status_cell(r)
    return f"{r['tflop_per_s']:.{decimals}f}"


def plan_of(r: dict | None) -> str:
    """The plan or kernel that ran (what "auto" resolved to)."""
    return "-" if r is None else r["resolved_plan"] or r["plan"] or "-"


def softmax_table(records: list[dict], env: dict) -> str:
    """One dtype's softmax table: a row per shape, the directions' copy ratios joined by ' / ' in each cell;
    the first of our backends gets a plan column, the others name their plans in brackets (both directions' when they
    differ, joined by ' / ' as in the plan column)."""
    directions = unique(r["direction"] for r in records)
    ours = unique(r["provider"] for r in records if r["kind"] == "ours")
    peers = unique(r["provider"] for r in records if r["kind"] in ("peer", "reference"))  # the reference op last
    by_case = first_of_each(records, lambda r: (tuple(r["shape"]), r["provider"], r["direction"]))
    both = " / ".join(directions)
    header = [f"{SHORT_DTYPE[records[0]['dtype']]} softmax, {both}", f"{ours[0]} plan ({both})", *ours,
              *(peer_title(p, env) for p in peers)]
    rows = []
    for shape in unique(tuple(r["shape"]) for r in records):
        cases = {p: [by_case.get((shape, p, d)) for d in directions] for p in ours + peers}
        ratios = {p: " / ".join(ratio_cell(r, env.get("timing_method")) for r in cases[p]) for p in ours + peers}
        plans = {p: " / ".join(unique(plan_of(r) for r in cases[p])) for p in ours}
        rows.append([shape_cross(shape), plans[ours[0]], ratios[ours[0]],
                     *(f"{ratios[p]} ({plans[p]})" for p in ours[1:]), *(ratios[p] for p in peers)])
    return markdown_table(header, rows)


def gemm_table(records: list[dict], env: dict) -> str:
    """The GEMM table: a row per dtype and shape, our backends' ratio to cuBLAS with the kernel that ran,
    then each peer's TFLOP/s."""
    ours = unique(r["provider"] for r in records if r["kind"] == "ours")
    peers = unique(r["provider"] for r in records if r["kind"] == "peer")
    by_case = first_of_each(records, lambda r: (r["dtype"], tuple(r["shape"]), r["provider"]))
    header = ["GEMM", *(f"{p} (kernel)" for p in ours), *(f"{peer_title(p, env)} TFLOP/s" for p in peers)]
    rows = []
    for dtype, shape in unique((r["dtype"], tuple(r["shape"])) for r in records):
        cells = {p: by_case.get((dtype, shape, p)) for p in ours + peers}
        rows.append([f"{SHORT_DTYPE[dtype]} {shape_cross(shape)}",
                     *(f"{ratio_cell(cells[p], env.get('timing_method'))} ({plan_of(cells[p])})" for p in ours),
                     *(tflops_cell(cells[p], 0) for p in peers)])
    return markdown_table(header, rows)


def ladder_cells(r: dict | None) -> list[str]:
    """TFLOP/s (1 decimal) and ratio to cuBLAS of one kernel version, or why it did not run and an empty cell."""
    ran = r is not None and r["status"] == "ok"
    return [tflops_cell(r, 1), ratio_cell(r) if ran else ""]


def version_label(r: dict) -> str:
    """'cuda naive' for a kernel version pinned by name, the provider alone for a peer."""
    return " ".join(filter(None, [r["provider"], r["plan"]]))


def ladder_table(records: list[dict]) -> str:
    """One shape's GEMM ladder: a row per provider and kernel version, two columns per dtype."""
    dtypes = unique(r["dtype"] for r in records)
    by_row = first_of_each(records, lambda r: (version_label(r), r["dtype"]))
    header = [f"GEMM ladder, {shape_cube(records[0]['shape'])}"]
    for dtype in dtypes:
        header += [f"{SHORT_DTYPE[dtype]} TFLOP/s", f"{SHORT_DTYPE[dtype]} × cuBLAS"]
    rows = [[label] + [cell for dtype in dtypes for cell in ladder_cells(by_row.get((label, dtype)))]
            for label in unique(label for label, _ in by_row)]
    return markdown_table(header, rows)


def is_ladder(records: list[dict]) -> bool:
    """Whether one of our backends ran several kernel versions on one case (a --plans all run)."""
    cases = [(r["dtype"], tuple(r["shape"]), r["provider"]) for r in records if r["kind"] == "ours"]
    return len(cases) > len(set(cases))


def render_markdown(doc: dict) -> str:
    """The README's tables for a results file: one softmax table per dtype, then the GEMM table (or one
    ladder table per shape when the file holds several kernel versions), separated by blank lines.
    A/A controls are left out."""
    records = [r for r in doc["records"] if r["kind"] != "control"]
    softmax = [r for r in records if r["op"] == "softmax"]
    matmul = [r for r in records if r["op"] == "matmul"]
    tables = [softmax_table([r for r in softmax if r["dtype"] == dtype], doc["env"])
              for dtype in unique(r["dtype"] for r in softmax)]
    if matmul and is_ladder(matmul):
        tables += [ladder_table([r for r in matmul if tuple(r["shape"]) == shape])
                   for shape in unique(tuple(r["shape"]) for r in matmul)]
    elif matmul:
        tables.append(gemm_table(matmul, doc["env"]))
    return "\n\n".join(tables)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m cuda_portfolio.bench.report",
                                     description="Print the table of a benchmark results file.")
    parser.add_argument("results", type=argparse.FileType("r"), help="a results JSON file (--json of the benchmark)")
    parser.add_argument("--markdown", action="store_true",
                        help="print the README's markdown tables (ratios to the ceiling) instead")
    args = parser.parse_args(argv)
    with args.results as f:
        doc = json.load(f)
    print(render_markdown(doc) if args.markdown else render_table(doc))
    return 0


if __name__ == "__main__":
    sys.exit(run_cli(main))
