"""The results-file schema (documented in results/README.md) and a checker for it.

    problems = validate_results(json.load(open(path)))   # [] when the file is well formed
    python -m cuda_portfolio.bench.schema results.json    # prints the problems, exit 1 if any
"""
from __future__ import annotations

import argparse
import json
import math
import sys

SCHEMA = "cuda_portfolio.bench/1"
OPS = {"softmax": 2, "matmul": 3}
DIRECTIONS = {"softmax": ("fwd", "bwd"), "matmul": ("fwd",)}
DTYPES = ("float32", "float16", "bfloat16")
KINDS = ("ours", "peer", "control", "reference")
STATUSES = ("ok", "WRONG", "refused", "unavailable", "error")
METHODS = ("graph", "events")
ENV_KEYS = {"gpu": str, "sm_count": int, "compute_capability": str, "driver": (str, type(None)),
            "cuda": (str, type(None)), "torch": str, "triton": (str, type(None)), "nvcc": (str, type(None)),
            "git_commit": (str, type(None)), "git_dirty": (bool, type(None)), "allow_tf32": bool,
            "timing_method": str, "timing_method_reason": str, "date": str, "command": str}
TIME_KEYS = ("median", "min", "max", "q1", "q3", "iqr", "samples")


def _positive(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value > 0


def _check_time(t, where: str) -> list[str]:
    if not isinstance(t, dict):
        return [f"{where}: time_ms must be an object with {', '.join(TIME_KEYS)}"]
    problems = [f"{where}: time_ms.{k} missing" for k in TIME_KEYS if k not in t]
    if problems:
        return problems
    if not all(_positive(t[k]) for k in ("median", "min", "max", "q1", "q3")):
        problems.append(f"{where}: time_ms median/min/max/q1/q3 must be positive numbers")
    elif not t["min"] <= t["q1"] <= t["median"] <= t["q3"] <= t["max"]:
        problems.append(f"{where}: time_ms must satisfy min <= q1 <= median <= q3 <= max")
    if not isinstance(t["samples"], int) or t["samples"] < 1:
        problems.append(f"{where}: time_ms.samples must be a positive integer")
    rounds = t.get("round_medians")  # absent in files written before it was recorded
    if rounds is not None and not (isinstance(rounds, list) and rounds and all(_positive(v) for v in rounds)):
        problems.append(f"{where}: time_ms.round_medians must be a non-empty list of positive numbers")
    return problems


def _check_record(r, i: int) -> list[str]:
    where = f"records[{i}]"
    if not isinstance(r, dict):
        return [f"{where}: must be an object"]
    problems = []
    for key in ("op", "direction", "dtype", "shape", "provider", "kind", "status", "reason", "time_ms",
                "ratio_to_peers", "validation", "method"):
        if key not in r:
            problems.append(f"{where}: missing {key!r}")
    if problems:
        return problems
    op = r["op"]
    if op not in OPS:
        return [f"{where}: op {op!r} is not one of {sorted(OPS)}"]
    where = f"{where} ({op} {r.get('provider')} {r.get('dtype')} {r.get('shape')})"
    if r["direction"] not in DIRECTIONS[op]:
        problems.append(f"{where}: direction {r['direction']!r} not in {DIRECTIONS[op]}")
    if r["dtype"] not in DTYPES:
        problems.append(f"{where}: dtype {r['dtype']!r} not in {DTYPES}")
    shape = r["shape"]
    if not (isinstance(shape, list) and len(shape) == OPS[op] and all(isinstance(s, int) and s > 0 for s in shape)):
        problems.append(f"{where}: shape must be {OPS[op]} positive integers")
    if r["kind"] not in KINDS:
        problems.append(f"{where}: kind {r['kind']!r} not in {KINDS}")
    if not isinstance(r.get("config"), (str, type(None))):
        problems.append(f"{where}: config must be text or null")
    if r["kind"] == "control" and not r.get("control_of"):
        problems.append(f"{where}: a control record names the provider it repeats in control_of")
    status = r["status"]
    if status not in STATUSES:
        return problems + [f"{where}: status {status!r} not in {STATUSES}"]
    if status != "ok" and not r["reason"]:
        problems.append(f"{where}: status {status} needs a reason")
    work_key, rate_key = ("bytes", "tb_per_s") if op == "softmax" else ("flops", "tflop_per_s")
    if not _positive(r.get(work_key)):
        problems.append(f"{where}: {work_key} must be a positive number")
    validation = r["validation"]
    if not isinstance(validation, dict) or not _positive(validation.get("tolerance")):
        problems.append(f"{where}: validation needs a positive tolerance")
        validation = {}
    if status in ("ok", "WRONG"):
        if r["method"] not in METHODS:
            problems.append(f"{where}: method {r['method']!r} not in {METHODS}")
        problems += _check_time(r["time_ms"], where)
    if status == "ok":
        rel_err = validation.get("rel_err")
        if r["kind"] == "reference":  # an op with the case's traffic that computes something else: never validated
            if rel_err is not None:
                problems.append(f"{where}: a reference record has no validation.rel_err (null)")
        elif not isinstance(rel_err, (int, float)) or rel_err < 0 or rel_err > validation.get("tolerance", 0):
            problems.append(f"{where}: status ok needs validation.rel_err within tolerance, got {rel_err!r}")
        if not _positive(r.get(rate_key)):
            problems.append(f"{where}: status ok needs a positive {rate_key}")
        ratios = r["ratio_to_peers"]
        if not isinstance(ratios, dict) or not all(_positive(v) for v in ratios.values()):
            problems.append(f"{where}: ratio_to_peers must map peer names to positive numbers")
        if r.get("ratio_to_ceiling") is not None and not _positive(r["ratio_to_ceiling"]):
            problems.append(f"{where}: ratio_to_ceiling must be positive or null")
    elif r.get(rate_key) is not None or r["ratio_to_peers"] or r.get("ratio_to_ceiling") is not None:
        problems.append(f"{where}: a {status} record carries no throughput or ratios")
    return problems


def validate_results(doc) -> list[str]:
    """Every way `doc` departs from the schema, as readable lines; [] when it conforms."""
    if not isinstance(doc, dict):
        return ["the results file must hold a JSON object"]
    problems = []
    if doc.get("schema") != SCHEMA:
        problems.append(f"schema must be {SCHEMA!r}, got {doc.get('schema')!r}")
    env = doc.get("env")
    if not isinstance(env, dict):
        problems.append("env block missing")
    else:
        for key, types in ENV_KEYS.items():
            if key not in env:
                problems.append(f"env.{key} missing")
            elif not isinstance(env[key], types) or (types is int and isinstance(env[key], bool)):
                problems.append(f"env.{key} has the wrong type ({type(env[key]).__name__})")
        if env.get("timing_method") not in METHODS:
            problems.append(f"env.timing_method must be one of {METHODS}")
    ceilings = doc.get("ceilings")
    if not isinstance(ceilings, dict):
        problems.append("ceilings block missing")
    else:
        copy = ceilings.get("device_copy")
        if copy is not None and not (isinstance(copy, dict) and _positive(copy.get("tb_per_s"))
                                     and _positive(copy.get("bytes"))):
            problems.append("ceilings.device_copy needs positive bytes and tb_per_s")
        elif copy is not None and copy.get("status", "ok") != "ok":
            problems.append(f"ceilings.device_copy is {copy.get('status')}: its copy failed its check, so no ratio "
                            "to copy in this run can be trusted")
        for j, entry in enumerate(ceilings.get("cublas", [])):
            if not (isinstance(entry, dict) and entry.get("dtype") in DTYPES and _positive(entry.get("tflop_per_s"))
                    and isinstance(entry.get("shape"), list) and len(entry["shape"]) == 3):
                problems.append(f"ceilings.cublas[{j}] needs dtype, shape [M, N, K] and a positive tflop_per_s")
    records = doc.get("records")
    if not isinstance(records, list):
        return problems + ["records must be a list"]
    for i, record in enumerate(records):
        problems += _check_record(record, i)
    return problems


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m cuda_portfolio.bench.schema",
                                     description="Check a benchmark results file against the schema "
                                                 "(exit 1 and one line per problem if it does not match).")
    parser.add_argument("results", type=argparse.FileType("r"), help="a results JSON file (--json of the benchmark)")
    args = parser.parse_args(argv)
    with args.results as f:
        problems = validate_results(json.load(f))
    for line in problems:
        print(line)
    print(f"{args.results.name}: {'OK' if not problems else f'{len(problems)} problem(s)'}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
