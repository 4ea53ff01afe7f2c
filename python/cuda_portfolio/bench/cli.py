"""The benchmark command line: python -m cuda_portfolio.bench (and scripts/benchmark.py).

Parsing and --help need no GPU and never initialize CUDA; a run without a GPU exits 3 with a
one-line reason. Exit status 1 when one of OUR providers computed a WRONG result or failed with an
error (a peer's WRONG result is reported in the table but is not our failure), or the written file
fails the schema check; 2 on a bad argument (a --plans name no selected backend lists); 4 when a case
runs past --case-timeout (the finished cases are written next to the JSON path, .partial.json, as they are
when a case raises: out of GPU memory, Ctrl-C).
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import shlex
import sys
import threading
from pathlib import Path

import torch

from .._backends import compiled_gpu_unavailable
from .case import OURS
from .shapes import parse_dtypes, shape_text, shapes_for

EPILOG = """examples:
  %(prog)s --op all --shapes quick                    both ops, both backends, a few shapes (~2-3 min on H200)
  %(prog)s --op softmax --shapes full --plans all     every softmax plan on the full preset
  %(prog)s --op softmax --shapes vocab                LM logits: 4096 tokens x six tokenizers' vocabularies
  %(prog)s --op softmax --shapes 16384x1024 --plans auto,warp_per_row,block_per_row   two plans beside auto's pick
  %(prog)s --op matmul --shapes 4096x4096x4096,4000x3000x2000 --dtype bf16 --plot gemm.png
  %(prog)s --op softmax --shapes 4096x4096 --direction bwd --dtype fp32,bf16

timing: CUDA graph replay (set PYTORCH_NO_CUDA_MEMORY_CACHING=1 for CUDA events); see results/README.md"""


def build_parser(prog: str = "cuda_portfolio.bench") -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=prog, description="Time cuda_portfolio's softmax and GEMM kernels against "
                                "peers and ceilings measured in the same run; validate every output.",
                                epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--op", choices=("softmax", "matmul", "all"), default="all")
    p.add_argument("--backend", choices=("cuda", "triton", "all"), default="all", help="our backend(s) to time")
    p.add_argument("--dtype", default=None, help="comma list of float32/float16/bfloat16 (fp32/fp16/bf16); "
                   "default: softmax float32,bfloat16; matmul bfloat16,float16")
    p.add_argument("--direction", choices=("fwd", "bwd", "both"), default="both", help="softmax direction(s)")
    p.add_argument("--shapes", default="quick", help="quick | full | vocab (softmax only: 4096 tokens over common "
                   "LM vocabularies) | comma list of MxN (softmax) and MxNxK (matmul)")
    p.add_argument("--plans", default="auto",
                   help="auto: the plan/kernel 'auto' picks; all: every softmax plan and GEMM kernel; or a comma "
                   "list of names (for example auto,warp_per_row,block_per_row), each timed on the backends that "
                   "have it")
    p.add_argument("--json", dest="json_path", default=None,
                   help="results file (default results/local/bench-<op>-<date>.json)")
    p.add_argument("--plot", dest="plot_path", default=None, help="also write a PNG plot here (needs matplotlib)")
    p.add_argument("--rounds", type=int, default=5, help="interleaved rounds over all providers of a case")
    p.add_argument("--samples", type=int, default=10,
                   help="at most this many timed samples per provider per round (fewer, at least 2, when a round's "
                        "samples would take over 400 ms)")
    p.add_argument("--allow-tf32", action="store_true",
                   help="fp32 GEMM may use tf32 (Triton and cuBLAS; the CUDA ladder has no tf32 path and "
                        "computes fp32)")
    p.add_argument("--copy-mib", type=int, default=1024,
                   help="buffer size of the device-copy ceiling, MiB (a small one rotates over buffer pairs covering "
                        "2x L2, so the copy is never timed from cache)")
    p.add_argument("--case-timeout", type=float, default=600.0,
                   help="seconds one case may take before the run stops, naming the case and writing the "
                        "finished cases to JSON_PATH.partial.json (a kernel that never returns cannot be "
                        "interrupted any other way; default 600)")
    return p


def parse_args(argv, prog: str = "cuda_portfolio.bench") -> argparse.Namespace:
    """Parsed arguments with .ops, .backends, .directions, .dtypes {op: [...]}, .shape_lists {op: [...]},
    .plan_selection ("auto", "all" or a tuple of --plans names)."""
    parser = build_parser(prog)
    args = parser.parse_args(argv)
    if args.rounds < 1 or args.samples < 1 or args.copy_mib < 1:
        parser.error("--rounds, --samples and --copy-mib must be at least 1")
    if not args.case_timeout > 0:
        parser.error("--case-timeout must be a positive number of seconds")
    if args.plans in ("auto", "all"):
        args.plan_selection = args.plans
    else:
        args.plan_selection = tuple(dict.fromkeys(name.strip() for name in args.plans.split(",") if name.strip()))
        if not args.plan_selection:
            parser.error(f"--plans {args.plans!r} names no plan")
    args.ops = ["softmax", "matmul"] if args.op == "all" else [args.op]
    args.backends = ["cuda", "triton"] if args.backend == "all" else [args.backend]
    args.directions = ["fwd", "bwd"] if args.direction == "both" else [args.direction]
    try:
        args.dtypes = {op: parse_dtypes(args.dtype, op) for op in args.ops}
        args.shape_lists = {op: shapes_for(op, args.shapes) for op in args.ops}
    except ValueError as exc:
        parser.error(str(exc))
    if not any(args.shape_lists.values()):
        parser.error(f"--shapes {args.shapes!r} gives no shape for --op {args.op} "
                     "(softmax takes MxN, matmul takes MxNxK; the vocab preset is softmax's)")
    return args


def unknown_plan_names(args) -> tuple[list[str], list[str]]:
    """(the --plans names no selected backend of a selected op lists, the names they do list). A backend that
    cannot load here lists nothing: its providers say why when the run reaches them."""
    if isinstance(args.plan_selection, str):
        return [], []
    import cuda_portfolio as cp

    listers = {"softmax": cp.softmax_plans, "matmul": cp.matmul_kernels}
    known = {}
    for op in args.ops:
        for backend in args.backends:
            try:
                known.update(dict.fromkeys(listers[op](backend)))
            except Exception:  # an unavailable backend (no native build, no Triton)
                continue
    return [name for name in args.plan_selection if name != "auto" and name not in known], list(known)


def case_specs(args) -> list[tuple]:
    """(op, dtype, direction, shape) in run order."""
    specs = []
    for op in args.ops:
        for dtype in args.dtypes[op]:
            for direction in (args.directions if op == "softmax" else ["fwd"]):
                specs += [(op, dtype, direction, shape) for shape in args.shape_lists[op]]
    return specs


def _progress(specs):
    """Each (op, dtype, direction, shape) spec in turn, with a tqdm bar when tqdm is installed, else one stderr line
    per case."""
    try:
        from tqdm import tqdm
    except ImportError:
        for i, spec in enumerate(specs):
            print(f"[{i + 1}/{len(specs)}] {spec[0]} {spec[2]} {spec[1]} {shape_text(spec[3])}", file=sys.stderr,
                  flush=True)
            yield spec
        return
    bar = tqdm(specs, desc="bench", unit="case", file=sys.stderr)
    for spec in bar:
        bar.set_postfix_str(f"{spec[0]} {spec[2]} {str(spec[1]).removeprefix('torch.')} {shape_text(spec[3])}")
        yield spec


class CaseWatchdog:
    """Calls on_timeout(label) from a timer thread when a case runs past `seconds`.

    A hung kernel blocks the main thread inside CUDA, where no Python exception reaches it; the
    default on_timeout (in run) writes what finished and ends the process."""

    def __init__(self, seconds: float, on_timeout):
        self.seconds, self.on_timeout, self._timer = seconds, on_timeout, None

    def start(self, label: str) -> None:
        self.stop()
        self._timer = threading.Timer(self.seconds, self.on_timeout, args=(label,))
        self._timer.daemon = True
        self._timer.start()

    def stop(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None


def default_json_path(op: str) -> Path:
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    return Path("results") / "local" / f"bench-{op}-{stamp}.json"


def run(args, command: str, json_path: Path) -> dict:
    """Every case of `args`, returned as the results document (main writes it to json_path). Sets allow_tf32 for the
    process when asked, measures the copy ceiling first, and arms a watchdog: a case past --case-timeout writes the
    finished cases to JSON_PATH.partial.json and ends the process with status 4; a case that raises (out of GPU
    memory, Ctrl-C) writes them there too before the exception goes on."""
    from .env import env_block
    from .matmul_cases import make_matmul_case
    from .runner import run_case
    from .softmax_cases import make_softmax_case
    from .timing import TimingSettings, default_method, device_copy_ceiling, l2_bytes

    if args.allow_tf32:
        torch.backends.cuda.matmul.allow_tf32 = True
    method, reason = default_method()
    settings = TimingSettings(rounds=args.rounds, samples_per_round=args.samples, method=method,
                              method_reason=reason, l2_bytes=l2_bytes())
    ceilings = {"device_copy": device_copy_ceiling(settings, args.copy_mib << 20), "cublas": []}
    from .schema import SCHEMA
    records = []
    env = env_block(method, reason, command)  # up front: the watchdog must not query a hung device

    def document() -> dict:
        return {"schema": SCHEMA, "env": env,
                "settings": {"rounds": args.rounds, "samples_per_round": args.samples, "shapes": args.shapes,
                             "plans": args.plans, "backends": args.backends},
                "ceilings": ceilings, "records": records}

    def save_partial() -> Path:
        partial = json_path.with_name(json_path.name + ".partial.json")
        partial.parent.mkdir(parents=True, exist_ok=True)
        partial.write_text(json.dumps(document(), indent=1) + "\n")
        return partial

    def give_up(label: str) -> None:
        print(f"\nbench: case {label} did not finish within {args.case_timeout:g} s (a kernel that never "
              f"returns?); the {len(records)} records of the cases before it are in {save_partial()}",
              file=sys.stderr, flush=True)
        os._exit(4)

    watchdog = CaseWatchdog(args.case_timeout, give_up)
    for op, dtype, direction, shape in _progress(case_specs(args)):
        label = f"{op} {direction} {str(dtype).removeprefix('torch.')} {shape_text(shape)}"
        watchdog.start(label)
        try:
            if op == "softmax":
                case = make_softmax_case(shape, dtype, direction, args.backends, args.plan_selection)
            else:
                case = make_matmul_case(shape, dtype, args.backends, args.plan_selection)
            records += run_case(case, settings, ceilings)
        except BaseException as exc:  # out of GPU memory, Ctrl-C, a bug: the finished cases are kept
            watchdog.stop()
            print(f"\nbench: case {label} raised {type(exc).__name__}; the {len(records)} records of the cases "
                  f"before it are in {save_partial()}", file=sys.stderr, flush=True)
            raise
        del case
        torch.cuda.empty_cache()  # the next case may need the memory this one's graphs and copies held
        watchdog.stop()
    return document()


def main(argv=None, prog: str = "cuda_portfolio.bench") -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parse_args(argv, prog)
    refusal = compiled_gpu_unavailable("benchmarks")
    if refusal is not None:
        print(f"benchmark: {refusal}", file=sys.stderr)
        return 3
    unknown, known = unknown_plan_names(args)
    if unknown:
        print(f"benchmark: --plans {', '.join(unknown)}: no {' or '.join(args.backends)} {' or '.join(args.ops)} "
              f"plan or kernel has that name; known here: {', '.join(known) or 'none'}", file=sys.stderr)
        return 2
    path = Path(args.json_path) if args.json_path else default_json_path(args.op)
    doc = run(args, f"{prog} {shlex.join(argv)}".strip(), path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=1) + "\n")

    from .report import render_table
    from .schema import validate_results

    print(render_table(doc))
    if args.plot_path:
        from .plot import render_plot
        try:
            render_plot(doc, args.plot_path)
            print(f"plot: {args.plot_path}")
        except (RuntimeError, ValueError) as exc:
            print(f"plot not written: {exc}", file=sys.stderr)
    problems = validate_results(doc)
    for line in problems:
        print(f"schema problem: {line}", file=sys.stderr)
    failed = [r for r in doc["records"] if r["status"] in ("WRONG", "error")]
    ours_failed = [r for r in failed if r["kind"] == OURS]
    print(f"results: {path} ({len(doc['records'])} records, {len(failed)} WRONG/error, "
          f"{len(ours_failed)} of them ours)")
    return 1 if ours_failed or problems else 0
