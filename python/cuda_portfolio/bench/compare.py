"""Two benchmark results files side by side: what moved between a BEFORE and an AFTER run.

    python -m cuda_portfolio.bench.compare results/h200/softmax.json results/local/softmax.json
    python -m cuda_portfolio.bench.compare BEFORE.json AFTER.json --peers --changed
    python -m cuda_portfolio.bench.compare BEFORE.json AFTER.json --repeat BEFORE-AGAIN.json

Each run is compared through its own ceiling (ratio to the device copy for softmax, to cuBLAS for
GEMM, both measured in that run), so a GPU that runs warmer or a cuBLAS that tuned differently does
not read as a kernel change. A record is matched by (op, direction, dtype, shape, provider, plan
asked for); the plan that ran is printed when it differs. The verdict uses the A/A controls of the
runs (the --repeat run's too): a change inside the span of their bands (lowest low to highest high; a band is
the time ratio of a peer timed twice) is noise ("="),
outside it faster ("+") or slower ("-"). The bands measure noise within a run; two runs hours or
boots apart drift more, so read a mark just outside the band as a lead to rerun, not a result. Each line
also gives the two runs' median times per launch (raw, not through the ceilings).

--repeat names a second run of BEFORE's build in another process (scripts/ab_patch.sh makes one). Our
kernels can move between processes by more than the A/A band shows (docs/perf-log.md, "Session 35"):
the repeat's largest drift from BEFORE over our records, s, widens the band to at least 1-s..1+s, and
each line shows its cell's own drift.

Runs on different GPUs (env.gpu_uuid, where both files record it) are flagged: one kernel and launch
layout ran 12% apart on two H200s of one pool (docs/perf-log.md, "Session 36"), more than any band here.
"""
from __future__ import annotations

import argparse
import json
import sys

from . import run_cli
from .report import aa_band, case_key, case_title, format_time, provider_label
from .schema import validate_results


def _key(r: dict) -> tuple:
    return case_key(r) + (r["provider"], r["plan"])


def _cell(r: dict | None) -> str:
    if r is None:
        return "absent"
    if r["status"] != "ok":
        return r["status"]
    if r["ratio_to_ceiling"] is None:
        return "no ceiling"
    return f"{r['ratio_to_ceiling']:.2f}"


def verdict(gain: float, band: tuple[float, float] | None) -> str:
    """'+' / '-' / '=' for AFTER's ratio to ceiling over BEFORE's (> 1: faster), against the A/A band."""
    low, high = band if band else (1.0, 1.0)
    if gain > high:
        return "+"
    if gain < low:
        return "-"
    return "="


def _ok(r: dict | None) -> bool:
    """Comparable: ran, right, and measured against a ceiling of its run (a GEMM case whose cuBLAS failed has none)."""
    return r is not None and r["status"] == "ok" and r["ratio_to_ceiling"] is not None


def repeat_drift(before: dict, repeat: dict) -> dict:
    """{key: repeat's ratio to ceiling / before's} for our records ok in both runs."""
    old = {_key(r): r for r in before["records"] if r["kind"] == "ours"}
    return {_key(r): r["ratio_to_ceiling"] / old[_key(r)]["ratio_to_ceiling"]
            for r in repeat["records"] if r["kind"] == "ours" and _ok(r) and _ok(old.get(_key(r)))}


def compare_lines(before: dict, after: dict, peers: bool = False, changed_only: bool = False,
                  repeat: dict | None = None) -> list[str]:
    """The comparison as printable lines: a header per run, one line per matched record, a summary. With
    `repeat` (BEFORE's build run again), the band is widened by the repeat's largest drift from BEFORE."""
    kinds = ("ours", "peer") if peers else ("ours",)
    old = {_key(r): r for r in before["records"] if r["kind"] in kinds}
    new = {_key(r): r for r in after["records"] if r["kind"] in kinds}
    runs = [("before", before), ("after", after)] + ([("repeat", repeat)] if repeat else [])
    bands = [aa_band(doc["records"]) for _, doc in runs]
    known = [b for b in bands if b]
    band = (min(b[0] for b in known), max(b[1] for b in known)) if known else None
    drift = repeat_drift(before, repeat) if repeat else {}
    spread = max((abs(d - 1.0) for d in drift.values()), default=0.0)
    if drift:
        band = (min(band[0] if band else 1.0, 1.0 - spread), max(band[1] if band else 1.0, 1.0 + spread))

    lines = []
    for (name, doc), b in zip(runs, bands):
        env = doc["env"]
        aa = f"A/A {b[0]:.3f}..{b[1]:.3f}" if b else "no A/A control"
        unit = f" {env['gpu_uuid'][:13]}" if env.get("gpu_uuid") else ""
        lines.append(f"{name}: commit {(env['git_commit'] or 'unknown')[:12]}{' (dirty)' if env['git_dirty'] else ''}, "
                     f"{env['date']}, {env['gpu']}{unit}, {aa}")
    uuids = {doc["env"].get("gpu_uuid") for _, doc in runs}
    if len(uuids) > 1 and None not in uuids:
        lines.append("these runs ran on different GPUs: a kernel can move between GPUs of one model by more than "
                     "the band below; compare runs from one machine (scripts/ab_patch.sh)")
    if repeat:
        lines.append(f"repeat against before: {min(drift.values()):.3f}..{max(drift.values()):.3f} over {len(drift)} "
                     "records of ours" if drift else "repeat against before: no record of ours in both")
    widened = f", widened to the repeat's drift (±{spread:.3f})" if drift else ""
    lines.append("noise band: " + (f"{band[0]:.3f}..{band[1]:.3f} (time ratio{widened})" if band else
                                   "none (no A/A control in either run): every change is marked"))
    lines.append("ratio to the run's ceiling (x copy for softmax, x cuBLAS for GEMM), before -> after; "
                 "gain = after / before; then the median time per launch, before -> after (raw: the gain "
                 "goes through each run's own ceiling)")

    counts = {"+": 0, "-": 0, "=": 0, "?": 0}
    for key in sorted(old.keys() | new.keys(), key=lambda k: tuple(map(str, k))):
        a, b = old.get(key), new.get(key)
        record = b or a
        label = provider_label(record)
        plans = ""
        if a and b and a.get("resolved_plan") != b.get("resolved_plan"):
            plans = f"  (ran {a.get('resolved_plan')} -> {b.get('resolved_plan')})"
        if _ok(a) and _ok(b):
            gain = b["ratio_to_ceiling"] / a["ratio_to_ceiling"]
            mark = verdict(gain, band)
            counts[mark] += 1
            own = f"  repeat {drift[key]:5.3f}" if key in drift else ""
            if not (changed_only and mark == "="):
                lines.append(f"{mark} {case_title(record):34} {label:30} {_cell(a):>7} -> {_cell(b):<7} "
                             f"gain {gain:5.3f}{own}  {format_time(a['time_ms']['median'])} -> "
                             f"{format_time(b['time_ms']['median']).strip()}{plans}")
        else:
            counts["?"] += 1
            lines.append(f"? {case_title(record):34} {label:30} {_cell(a):>7} -> {_cell(b):<7}{plans}")
    lines.append(f"{counts['+']} faster, {counts['-']} slower, {counts['=']} within noise"
                 + (f", {counts['?']} not comparable (?: absent from one run or not ok)" if counts["?"] else ""))
    return lines


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m cuda_portfolio.bench.compare", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("before", type=argparse.FileType("r"), help="results JSON of the earlier run")
    parser.add_argument("after", type=argparse.FileType("r"), help="results JSON of the later run")
    parser.add_argument("--peers", action="store_true", help="compare the peers' records too (torch, cuBLAS, ...)")
    parser.add_argument("--changed", action="store_true",
                        help="print only the records outside the noise band and the ones not comparable (?)")
    parser.add_argument("--repeat", type=argparse.FileType("r"), metavar="JSON",
                        help="BEFORE's build run again in another process: its drift widens the noise band")
    args = parser.parse_args(argv)
    docs = []
    for f in [args.before, args.after] + ([args.repeat] if args.repeat else []):
        with f:
            doc = json.load(f)
        problems = validate_results(doc)
        if problems:
            print(f"compare: {f.name} is not a benchmark results file: {problems[0]}", file=sys.stderr)
            return 2
        docs.append(doc)
    print("\n".join(compare_lines(docs[0], docs[1], peers=args.peers, changed_only=args.changed,
                                  repeat=docs[2] if args.repeat else None)))
    return 0


if __name__ == "__main__":
    sys.exit(run_cli(main))
