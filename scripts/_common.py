"""Helpers shared by the scripts in this folder (inspect_kernel, triton_census, profile_kernel, sanitizer_smoke,
sass_stalls, compare_backends, the sweeps). The package never imports this module; it only uses the package.

What runs is discovered, never listed here: plan/kernel names come from the public API
(cp.softmax_plans / cp.matmul_kernels), shape limits from each backend's check_plan/check_kernel.
A `Case` is one launchable variant (op, backend, plan or kernel, direction, dtype, shape) with its
inputs, a NaN-poisoned output and a float64 PyTorch reference.
"""
from __future__ import annotations

import argparse
import contextlib
import functools
import importlib
import json
import math
import os
import re
import shutil
import statistics
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import torch

from cuda_portfolio._backends import compiled_gpu_unavailable
from cuda_portfolio.bench.softmax_cases import softmax_backward_error_scale, softmax_backward_reference

REPO_ROOT = Path(__file__).resolve().parent.parent
RESULTS_LOCAL = REPO_ROOT / "results" / "local"
OPS = ("copy", "softmax", "matmul")
BACKENDS = ("cuda", "triton")
DIRECTIONS = ("fwd", "bwd")
DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}
DTYPE_ALIASES = {"fp32": "float32", "f32": "float32", "fp16": "float16", "half": "float16", "bf16": "bfloat16"}
DEFAULT_SHAPES = {"copy": (1024, 1024), "softmax": (1024, 1024), "matmul": (1024, 1024, 1024)}
# ||out - ref|| / ||ref|| in float64 (Case.check; softmax backward over softmax_backward_error_scale instead of
# ||ref||), and SoftmaxSweepCase.check holds max|out - ref| / max|ref| to the same bounds; "tf32" is fp32 GEMM on
# tensor cores. A sanity check for the scripts' runs, looser than the GPU tier's 16-bit checks (the softmax sweep's
# format_tolerance; the GEMM against the product rounded to its dtype, fp16 5e-4 / bf16 2e-3: tests/gpu_*_cases.py).
TOLERANCE = {"copy": {torch.float32: 0.0, torch.float16: 0.0, torch.bfloat16: 0.0},
             "softmax": {torch.float32: 1e-5, torch.float16: 5e-3, torch.bfloat16: 1e-2},
             "matmul": {torch.float32: 1e-5, "tf32": 3e-3, torch.float16: 1e-2, torch.bfloat16: 1e-2}}
EXIT_NO_GPU = 3
REGISTER_FILE_WARPS = 32  # 65536 registers / (64 registers x 32 threads): warps x programs per SM at 64 registers


class OpUnavailable(RuntimeError):
    """An op or backend that this build (or this machine) cannot provide; the message says why."""


# ----------------------------------------------------------------------------- arguments

def add_case_arguments(parser) -> None:
    """--op, --dtype and --shape, the same in every script that runs one case."""
    parser.add_argument("--op", required=True, choices=OPS)
    parser.add_argument("--dtype", default="float32", help="float32, float16 or bfloat16 (default float32)")
    parser.add_argument("--shape", help="ROWSxCOLS (copy, softmax) or MxNxK (matmul); default 1024x1024(x1024)")


def case_dtype_and_shape(parser, args) -> tuple[torch.dtype, tuple[int, ...]]:
    """The parsed --dtype and --shape (the op's default shape when none is given); bad values end
    the script through parser.error."""
    try:
        dtype = parse_dtype(args.dtype)
        shape = parse_shape(args.shape, args.op) if args.shape else DEFAULT_SHAPES[args.op]
    except ValueError as exc:
        parser.error(str(exc))
    return dtype, shape


def parse_dtype(name: str) -> torch.dtype:
    key = DTYPE_ALIASES.get(name.lower(), name.lower())
    if key not in DTYPES:
        raise ValueError(f"unsupported dtype {name!r}; choose one of {', '.join(DTYPES)} (or fp32/fp16/bf16)")
    return DTYPES[key]


def dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def parse_shape(text: str, op: str) -> tuple[int, ...]:
    """'1024x1024' -> (1024, 1024): rows x cols for copy/softmax, M x N x K for matmul."""
    want = 3 if op == "matmul" else 2
    try:
        dims = tuple(int(d) for d in text.lower().split("x"))
    except ValueError:
        dims = ()
    if len(dims) != want or min(dims) < 1:
        form = "MxNxK" if op == "matmul" else "ROWSxCOLS"
        raise ValueError(f"--shape for {op} must be {form} with positive integers, got {text!r}")
    return dims


def shape_text(shape) -> str:
    return "x".join(str(d) for d in shape)


def backends_arg(value: str) -> tuple[str, ...]:
    return BACKENDS if value == "both" else (value,)


# ----------------------------------------------------------------------------- environment

def gpu_unavailable_reason() -> str | None:
    return compiled_gpu_unavailable("profiling and sanitizing")


def exit_without_gpu(script: str) -> None:
    """One clear line on stderr and exit code 3 when there is no usable GPU."""
    reason = gpu_unavailable_reason()
    if reason is not None:
        print(f"{script}: needs a CUDA GPU: {reason}", file=sys.stderr)
        sys.exit(EXIT_NO_GPU)


def find_tool(name: str) -> str | None:
    """An NVIDIA tool from PATH, the CUDA toolkit, or (ptxas/cuobjdump/nvdisasm) Triton's wheel."""
    found = shutil.which(name)
    if found:
        return found
    homes = [os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"]
    for home in filter(None, homes):
        candidate = Path(home) / "bin" / name
        if candidate.exists():
            return str(candidate)
    try:
        import triton
    except ImportError:
        return None
    candidate = Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / name
    return str(candidate) if candidate.exists() else None


def sass_branch_target(instruction: str) -> int | None:
    """The address a SASS branch jumps to ('@!P0 BRA 0x1a20', 'BRA !P2, 0x30c0', 'BRA.U !UP2, 0x...'); None for any
    other instruction. Offsets or absolute addresses, as the listing gives them."""
    branch = re.search(r"\bBRA(?:\.\w+)*\s+(?:!?U?P\w+,\s*)?(0x[0-9a-fA-F]+)", instruction)
    return int(branch.group(1), 16) if branch else None


def ncu_number(cell: str | None) -> float | None:
    """A number from ncu's CSV ('1,234', '12.5'); None for an empty or non-numeric cell ('', 'n/a')."""
    try:
        return float((cell or "").replace(",", "").strip())
    except ValueError:
        return None


@contextlib.contextmanager
def nvtx_range(message: str):
    """A named NVTX range: the `nvtx` package when importable, else torch.cuda.nvtx."""
    try:
        import nvtx
    except ImportError:
        with torch.cuda.nvtx.range(message):
            yield
        return
    with nvtx.annotate(message, domain="cuda_portfolio"):
        yield


def launch_time_us(call, copies: int, samples: int) -> float:
    """Microseconds per call of call(i), i cycling over `copies` input sets: launch_times_us of one call, one round."""
    return launch_times_us({"call": call}, copies, samples, rounds=1)["call"]


def launch_times_us(calls: dict, copies: int, samples: int, rounds: int = 3) -> dict:
    """Microseconds per call for each named call(i), i cycling over `copies` input sets, timed as the benchmark
    times a case's providers (cuda_portfolio.bench.timing.LaunchTimer: warm-up, then CUDA-graph replay of ~2 ms of
    calls, or events with PYTORCH_NO_CUDA_MEMORY_CACHING=1): every call's timer is prepared first, then `rounds`
    rounds take `samples` samples of each, in the benchmark's rotated order (runner.rotated_rounds), so no call is
    always the first timed (the first timed read cold, up to 6% slow, when each call was timed alone in turn); the
    median of each call's samples. A call prepared in a graph is captured once: whatever it reads at launch (an
    environment override) must be set by the call itself. For the sweep scripts; the benchmark itself adds peers and
    an A/A control."""
    from cuda_portfolio.bench.runner import rotated_rounds
    from cuda_portfolio.bench.timing import LaunchTimer, TimingSettings, default_method, l2_bytes

    method, reason = default_method()
    settings = TimingSettings(method=method, method_reason=reason, l2_bytes=l2_bytes())
    timers = {name: LaunchTimer([functools.partial(call, i) for i in range(copies)], settings)
              for name, call in calls.items()}
    times = {name: [] for name in timers}
    try:
        for timer in timers.values():
            timer.prepare()
        for order in rotated_rounds(list(timers), rounds):
            for name in order:
                times[name] += timers[name].sample(samples)
        return {name: statistics.median(t) * 1e3 for name, t in times.items()}
    finally:
        for timer in timers.values():
            timer.close()


def start_sweep(script: str, args, plot) -> tuple[float, int] | None:
    """A softmax sweep's start. With --replot: draw the stored sweep (plot(doc, args.plot)) and return None. Else
    exit without a GPU (exit_without_gpu), then measure the benchmark's device-copy ceiling as the benchmark does,
    print it, and return (ceiling in TB/s, the L2's bytes): every point is divided into the same ceiling."""
    if args.replot:
        if not args.plot:
            raise SystemExit(f"{script}: --replot needs --plot OUT.png")
        with open(args.replot) as f:
            plot(json.load(f), args.plot)
        return None
    exit_without_gpu(script)
    from cuda_portfolio.bench.timing import TimingSettings, default_method, device_copy_ceiling, l2_bytes

    method, reason = default_method()
    l2 = l2_bytes()
    copy = device_copy_ceiling(TimingSettings(method=method, method_reason=reason, l2_bytes=l2))["tb_per_s"]
    print(f"device copy {copy:.2f} TB/s (the benchmark's ceiling)")
    return copy, l2


def softmax_sweep_cases(args, l2: int):
    """A sweep's cases in order, --shapes x --dtype x --direction: (shape text, dtype name, SoftmaxSweepCase), each
    case's tensors made when it is reached."""
    for shape_text in args.shapes.split(","):
        rows, cols = parse_shape(shape_text, "softmax")
        for dname in args.dtype.split(","):
            dtype = parse_dtype(dname)
            for direction in args.direction.split(","):
                yield shape_text, dname, SoftmaxSweepCase(rows, cols, dtype, direction, l2)


def variant_sweep_parser(doc: str, shapes: str, dtype: str, direction: str, variants: str,
                         variants_help: str) -> argparse.ArgumentParser:
    """The arguments the Triton variant sweeps share, with each sweep's defaults: --shapes, --dtype, --direction,
    --variants, --samples, --rounds, --json, --plot, --replot."""
    p = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--shapes", default=shapes, help="rows x cols, comma-separated")
    p.add_argument("--dtype", default=dtype, help=f"comma-separated dtypes (default {dtype})")
    p.add_argument("--direction", default=direction, help=f"fwd and/or bwd, comma-separated (default {direction})")
    p.add_argument("--variants", default=variants, help=variants_help)
    p.add_argument("--samples", type=int, default=5, help="timed samples of each variant per round")
    p.add_argument("--rounds", type=int, default=3, help="rounds over the case's variants, each in a rotated order")
    p.add_argument("--json", default=None, help="records file, rewritten after every case")
    p.add_argument("--plot", default=None,
                   help="PNG: ratio to copy against the row length, one panel per dtype and direction, one line per "
                        "variant")
    p.add_argument("--replot", default=None, metavar="JSON", help="draw a stored sweep (with --plot) and exit")
    return p


def sweep_triton_variants(shape_text: str, dname: str, case, plan: str, variants_for, samples: int, rounds: int,
                          copy: float) -> list[dict]:
    """One case of a Triton softmax sweep: `plan` as its own rule configures it ("rule") beside each forced
    configuration variants_for(aligned, edges) returns, as (name, LaunchConfig, description, why it is skipped or
    None), all timed in one rotation (launch_times_us) and each output checked against float64 (case.check).
    Prints a line per variant and returns the case's records: shape, dtype, direction, variant, config, then us,
    tb_per_s, ratio_to_copy, vs_rule (the rule's time over the variant's), rel_err and ok, or skipped."""
    from cuda_portfolio.triton_kernels import softmax as triton_softmax

    direction = case.direction
    tensors = case.inputs[-1][:1 if direction == "fwd" else 2] + (case.out,)
    aligned, edges = triton_softmax._alignment(plan, tensors, case.cols)

    def call_with(config, i):
        if direction == "fwd":
            triton_softmax._launch_forward(case.inputs[i][0], case.out, plan, config, edges)
        else:
            triton_softmax._launch_backward(*case.inputs[i], case.out, plan, config, edges)

    def rule_call(i):
        if direction == "fwd":
            triton_softmax.forward(case.inputs[i][0], case.out, plan)
        else:
            triton_softmax.backward(*case.inputs[i], case.out, plan)

    base = {"shape": [case.rows, case.cols], "dtype": dname, "direction": direction}
    rule = triton_softmax.kernel_config(case.inputs[-1][0], plan, direction, (aligned, edges))
    records, calls = [dict(base, variant="rule", config=rule)], {"rule": rule_call}
    for name, config, description, skipped in variants_for(aligned, edges):
        records.append(dict(base, variant=name, config=description))
        if skipped:
            records[-1]["skipped"] = skipped
        else:
            calls[name] = functools.partial(call_with, config)
    times = launch_times_us(calls, case.copies, samples, rounds)
    width = max(len(rec["variant"]) for rec in records)
    for rec in records:
        name = rec["variant"]
        if name not in times:
            print(f"{shape_text} {dname} {direction} {name:>{width}}  skipped: {rec['skipped']}")
            continue
        us = times[name]
        err, ok = case.check(calls[name])
        rec.update({"us": us, "tb_per_s": case.bytes_moved / us / 1e6,
                    "ratio_to_copy": case.bytes_moved / us / 1e6 / copy, "vs_rule": times["rule"] / us,
                    "rel_err": err, "ok": ok})
        print(f"{shape_text} {dname} {direction} {name:>{width}} {us:9.2f} us {rec['ratio_to_copy']:.2f} of copy "
              f" x{rec['vs_rule']:.3f} vs rule  ({rec['config']}){'' if ok else '  WRONG'}", flush=True)
    return records


def run_triton_variant_sweep(script: str, args, plan: str, variants_for, plot) -> int:
    """A Triton variant sweep from start to end: start_sweep (replot, or the GPU check and the copy ceiling), then
    each case of softmax_sweep_cases through sweep_triton_variants with variants_for(triton_softmax, args, case,
    aligned, edges), the JSON rewritten after every case (--json) and the plot at the end (--plot). Exit status 1
    when any output was wrong."""
    started = start_sweep(script, args, plot)
    if started is None:
        return 0
    copy, l2 = started
    from cuda_portfolio.triton_kernels import softmax as triton_softmax

    records = []
    for shape_text, dname, case in softmax_sweep_cases(args, l2):
        case_variants = functools.partial(variants_for, triton_softmax, args, case)
        records += sweep_triton_variants(shape_text, dname, case, plan, case_variants, args.samples, args.rounds, copy)
        if args.json:
            write_sweep_json(args.json, args, copy, records)
    plot_sweep_records(args, records, plot)
    return 0 if all(r.get("ok", True) for r in records) else 1


def plot_variant_sweep(doc: dict, path: str, title: str, variant_label) -> None:
    """A Triton variant sweep's plot: one panel per (dtype, direction), ratio to copy against the row length, one
    line per variant (labelled variant_label(name)) and a dashed one for the rule's choice."""
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
                    label="the rule's choice" if variant == "rule" else variant_label(variant))
        ax.set_xscale("log", base=2)
        ax.set_title(f"{dtype} {direction}", fontsize=9)
        ax.set_xlabel("columns", fontsize=8)
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel("ratio to device copy", fontsize=8)
    axes[0][0].legend(fontsize=7)
    fig.suptitle(f"{title}, {doc['gpu']}, commit {doc.get('commit')}", fontsize=10)
    fig.tight_layout()
    fig.savefig(with_folder(path), dpi=120)


def plot_sweep_records(args, records: list, plot) -> None:
    """With --plot, draw this run's records (plot(doc, args.plot)) under the GPU's name and the commit."""
    if args.plot:
        plot({"gpu": torch.cuda.get_device_name(0), "commit": os.environ.get("CUDA_PORTFOLIO_GIT_COMMIT"),
              "records": records}, args.plot)


def with_folder(path: str) -> str:
    """path, after creating the folders above it: an output path never fails a run at its end."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    return path


def write_sweep_json(path: str, args, copy: float, records: list) -> None:
    """A sweep's records with its GPU, torch, commit, arguments and copy ceiling; called after every case, so a run
    cut short still leaves what it measured."""
    with open(with_folder(path), "w") as f:
        json.dump({"gpu": torch.cuda.get_device_name(0), "torch": torch.__version__,
                   "commit": os.environ.get("CUDA_PORTFOLIO_GIT_COMMIT"), "args": vars(args), "copy_tb_per_s": copy,
                   "records": records}, f, indent=1)


class SoftmaxSweepCase:
    """One softmax shape, dtype and direction as the sweep scripts time it: a rotation of input copies (as many
    as the benchmark rotates, input_copies_for), an output buffer, and check(call), which NaN-poisons the output,
    runs call on the last copy and compares with float64 PyTorch, inputs unchanged."""

    def __init__(self, rows: int, cols: int, dtype: torch.dtype, direction: str, l2: int):
        from cuda_portfolio.bench.timing import input_copies_for

        operands = 1 if direction == "fwd" else 2
        self.rows, self.cols, self.dtype, self.direction = rows, cols, dtype, direction
        self.bytes_moved = rows * cols * dtype.itemsize * (operands + 1)
        self.copies = input_copies_for(self.bytes_moved, l2)
        gen = torch.Generator(device="cuda").manual_seed(rows + cols)
        self.inputs = []
        for _ in range(self.copies):
            x = torch.randn(rows, cols, device="cuda", dtype=dtype, generator=gen) * 3
            dy = torch.randn(rows, cols, device="cuda", dtype=dtype, generator=gen)
            self.inputs.append((x if direction == "fwd" else torch.softmax(x.float(), 1).to(dtype), dy))
        self.kept = tuple(t.clone() for t in self.inputs[-1])
        self.want = (torch.softmax(self.inputs[-1][0].double(), dim=1) if direction == "fwd"
                     else softmax_backward_reference(*self.inputs[-1]))
        self.out = torch.empty(rows, cols, device="cuda", dtype=dtype)

    def check(self, call) -> tuple[float, bool]:
        """(max|out - ref| / max|ref|, ok) of call(self.copies - 1)'s output: ok also needs the inputs unchanged."""
        self.out.fill_(float("nan"))
        call(self.copies - 1)
        err = ((self.out.double() - self.want).abs().max() / self.want.abs().max()).item()
        unchanged = all(torch.equal(a, b) for a, b in zip(self.kept, self.inputs[-1]))
        return err, math.isfinite(err) and err <= TOLERANCE["softmax"][self.dtype] and unchanged


# ----------------------------------------------------------------------------- discovery

def backend_module(op: str, backend: str):
    """The backend's module for `op`: cuda_portfolio.native.<op> or cuda_portfolio.triton_kernels.<op>."""
    package = "cuda_portfolio.native" if backend == "cuda" else "cuda_portfolio.triton_kernels"
    try:
        return importlib.import_module(f"{package}.{op}")
    except ImportError as exc:
        raise OpUnavailable(f"{package}.{op} cannot be imported ({exc})") from exc


def variant_names(op: str, backend: str) -> list[str]:
    """Every plan (softmax) or kernel (matmul) the public API accepts for `backend`."""
    if op == "copy":
        return ["copy_rows"]
    import cuda_portfolio as cp

    lister = {"softmax": "softmax_plans", "matmul": "matmul_kernels"}[op]
    if not hasattr(cp, lister):
        raise OpUnavailable(f"cuda_portfolio.{lister} is not in this build of the package")
    return list(getattr(cp, lister)(backend))


def backend_unavailable_reason(backend: str) -> str | None:
    import cuda_portfolio as cp

    ok, reason = cp.available_backends()[backend]
    return None if ok else reason


# ----------------------------------------------------------------------------- cases

@dataclass
class Case:
    """One launch of one variant, with inputs, a poisoned output and its float64 reference."""
    op: str
    backend: str
    name: str  # plan or kernel ("copy_rows" for copy)
    direction: str  # "fwd" or "bwd" (copy and matmul: "fwd")
    dtype: torch.dtype
    shape: tuple
    allow_tf32: bool = False
    inputs: list = field(default_factory=list)
    output: torch.Tensor | None = None
    reference: torch.Tensor | None = None
    scale: float | None = None  # what the error is divided by, when not ||reference||
    _launch: object = None

    @property
    def label(self) -> str:
        tf32 = " tf32" if self.allow_tf32 else ""
        return (f"{self.op} {self.backend} {self.name} {self.direction} {dtype_name(self.dtype)}{tf32} "
                f"{shape_text(self.shape)}")

    @property
    def tolerance(self) -> float:
        return TOLERANCE[self.op]["tf32" if self.allow_tf32 else self.dtype]

    def launch(self) -> None:
        self._launch()

    def check(self) -> tuple[bool, str]:
        """(passed, detail): inputs unchanged, every output written, rel. error within tolerance."""
        for tensor, before in self.inputs:
            if not torch.equal(tensor, before):
                return False, "input was modified"
        out64, ref64 = self.output.double().cpu(), self.reference.cpu()
        unwritten = torch.isnan(out64) & ~torch.isnan(ref64)
        if bool(unwritten.any()):
            return False, f"{int(unwritten.sum())} outputs NaN/unwritten where the reference is finite"
        if not bool((torch.isnan(out64) == torch.isnan(ref64)).all()):
            return False, "NaN pattern differs from the reference"
        finite = ~torch.isnan(ref64)
        diff = (out64[finite] - ref64[finite]).norm()
        norm = ref64[finite].norm() if self.scale is None else self.scale
        rel = float(diff / norm) if norm > 0 else float(diff)
        passed = rel <= self.tolerance
        return passed, f"rel_err={rel:.2e} (tol {self.tolerance:.0e})"


def resolve_name(op: str, backend: str, name: str, dtype: torch.dtype, shape: tuple, device, allow_tf32=False,
                 direction="fwd") -> str:
    """'auto' -> the plan/kernel the backend would pick for this shape (and softmax direction); other
    names unchanged."""
    if name != "auto" or op == "copy":
        return "copy_rows" if op == "copy" else name
    module = backend_module(op, backend)
    if op == "softmax":
        return module.choose_plan(shape[0], shape[1], dtype, torch.device(device), direction)
    a, b = _matmul_operands(shape, dtype, device)
    return module.choose_kernel(a, b, allow_tf32)


def refusal(op: str, backend: str, name: str, dtype: torch.dtype, shape: tuple, device, allow_tf32=False):
    """None when the backend accepts this variant and shape, else its reason (check_plan/check_kernel)."""
    module = backend_module(op, backend)
    try:
        if op == "softmax":
            module.check_plan(name, shape[0], shape[1], dtype, torch.device(device))
        elif op == "matmul":
            a, b = _matmul_operands(shape, dtype, device, empty=True)
            module.check_kernel(name, a, b, allow_tf32)
    except ValueError as exc:
        return str(exc)
    return None


def make_case(op: str, backend: str, name: str, direction: str, dtype: torch.dtype, shape: tuple, device,
              allow_tf32: bool = False) -> Case:
    """Fresh random inputs (never zeros), a NaN-filled output and the float64 reference."""
    module = backend_module(op, backend)
    case = Case(op, backend, name, direction, dtype, tuple(shape), allow_tf32)
    if op == "copy":
        src = torch.randn(shape, device=device).to(dtype)
        case.output = torch.full_like(src, float("nan"))
        case.reference = src.double()
        case.inputs = [(src, src.clone())]
        if backend == "cuda":
            case._launch = lambda: module.copy_rows(src, case.output)
        else:
            case._launch = lambda: module.copy_rows(src, case.output, src.stride(0), case.output.stride(0))
    elif op == "softmax":
        x = (torch.randn(shape, device=device) * 3).to(dtype)
        case.output = torch.full_like(x, float("nan"))
        if direction == "fwd":
            case.reference = torch.softmax(x.double(), dim=-1)
            case.inputs = [(x, x.clone())]
            case._launch = lambda: module.forward(x, case.output, name)
        else:
            y = torch.softmax(x.float(), dim=-1).to(dtype)
            dy = torch.randn(shape, device=device).to(dtype)
            case.reference = softmax_backward_reference(y, dy)
            case.scale = softmax_backward_error_scale(y, dy)  # the error against the subtracted terms
            case.inputs = [(y, y.clone()), (dy, dy.clone())]
            case._launch = lambda: module.backward(y, dy, case.output, name)
    else:
        a, b = _matmul_operands(shape, dtype, device)
        case.output = torch.full((shape[0], shape[1]), float("nan"), dtype=dtype, device=device)
        case.reference = a.double() @ b.double()
        case.inputs = [(a, a.clone()), (b, b.clone())]
        case._launch = lambda: module.matmul(a, b, case.output, name, allow_tf32)
    return case


def _matmul_operands(shape, dtype, device, empty=False):
    m, n, k = shape
    if empty:  # shapes only (refusal checks): allocated in dtype, so no conversion kernel reads unset memory
        return torch.empty(m, k, dtype=dtype, device=device), torch.empty(k, n, dtype=dtype, device=device)
    return torch.randn(m, k, device=device).to(dtype), torch.randn(k, n, device=device).to(dtype)


def run_and_check(case: Case) -> tuple[bool, str]:
    case.launch()
    if case.output.is_cuda:
        torch.cuda.synchronize()
    return case.check()


def validate_line(op: str, backend: str, name: str, dtype: torch.dtype, shape: tuple, device) -> str:
    """One line: the variant that `name` resolves to, run once at `shape` and compared with float64 torch."""
    try:
        unavailable = backend_unavailable_reason(backend)
        if unavailable:
            return f"{backend}: not validated: the backend is unavailable: {unavailable}"
        name = resolve_name(op, backend, name, dtype, shape, device)
        refused = refusal(op, backend, name, dtype, shape, device)
        if refused:
            return f"{backend}: not validated: {name} refuses {shape_text(shape)}: {refused}"
        case = make_case(op, backend, name, "fwd", dtype, shape, device)
        passed, detail = run_and_check(case)
    except OpUnavailable as exc:
        return f"{backend}: not validated: {exc}"
    where = torch.cuda.get_device_name() if str(device).startswith("cuda") else "CPU"
    return f"{backend}: {'validated' if passed else 'WRONG RESULT'} on {where}: {case.label} {detail}"


def sass_functions(text: str) -> dict:
    """{function: [(offset, instruction)]} from cuobjdump -sass output (predicates kept, encodings dropped)."""
    functions, current = {}, None
    for line in text.splitlines():
        header = re.match(r"\s*Function : (\S+)", line)
        if header:
            current = functions.setdefault(header.group(1), [])
            continue
        instruction = re.search(r"/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;", line)
        if current is not None and instruction:
            current.append((int(instruction.group(1), 16), instruction.group(2)))
    return functions


def cubin_resources(cubin: Path) -> dict:
    """{function: {"REG": n, "SHARED": bytes, "LOCAL": bytes, "STACK": bytes}} from cuobjdump -res-usage."""
    tool = find_tool("cuobjdump")
    if tool is None:
        return {}
    text = subprocess.run([tool, "-res-usage", str(cubin)], capture_output=True, text=True).stdout
    found, current = {}, None
    for line in text.splitlines():
        header = re.match(r"\s*Function (\S+):", line)
        if header:
            current = header.group(1)
            continue
        if current and "REG:" in line:
            found[current] = {k: int(v) for k, v in re.findall(r"(\w+):(\d+)", line)}
            current = None
    return found
