"""The readable table printed after a run (also from a stored JSON: python -m cuda_portfolio.bench.report F)."""
from __future__ import annotations

import argparse
import itertools
import json
import sys


def _time(ms: float) -> str:
    return f"{ms * 1e3:8.1f} us" if ms < 1.0 else f"{ms:8.3f} ms"


# Round medians further apart than this (slowest / fastest) get a line under the record: a provider that
# switches between speeds from round to round, whose median then stands for neither.
ROUND_SPREAD_NOTED = 1.05


def round_spread_line(t: dict) -> str | None:
    """'rounds: a .. b (+x%)' when the record's round medians differ by more than ROUND_SPREAD_NOTED."""
    rounds = t.get("round_medians") or []
    if len(rounds) < 2 or max(rounds) <= ROUND_SPREAD_NOTED * min(rounds):
        return None
    return (f"rounds: {_time(min(rounds)).strip()} .. {_time(max(rounds)).strip()} "
            f"(+{100 * (max(rounds) / min(rounds) - 1):.0f}%; round medians in order: "
            f"{', '.join(_time(v).strip() for v in rounds)})")


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
            lines.append(f"{label} {r['method']:<6} {_time(t['median'])} {100 * t['iqr'] / t['median']:6.1f}%  "
                         f"{rate:8.2f} {ceiling}  {peers}")
            if r.get("config"):
                lines.append(f"  {'':<{label_width}} config: {r['config']}")
            spread = round_spread_line(t)
            if spread:
                lines.append(f"  {'':<{label_width}} {spread}")
    lines.append("")
    lines += summary_lines(doc["records"])
    return "\n".join(lines)


def aa_ratios(records: list[dict]) -> list[float]:
    """Time ratio of each A/A control (a peer timed a second time) to the peer it repeats."""
    return [r["ratio_to_peers"][r["control_of"]] for r in records
            if r["kind"] == "control" and r["status"] == "ok" and r["control_of"] in r["ratio_to_peers"]]


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


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m cuda_portfolio.bench.report",
                                     description="Print the table of a benchmark results file.")
    parser.add_argument("results", type=argparse.FileType("r"), help="a results JSON file (--json of the benchmark)")
    args = parser.parse_args(argv)
    with args.results as f:
        print(render_table(json.load(f)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
