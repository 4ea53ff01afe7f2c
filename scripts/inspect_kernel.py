#!/usr/bin/env python3
"""Save every compiler stage of an op's kernels and a resource table, for both backends.

    python scripts/inspect_kernel.py --op softmax --output results/local/inspect-softmax
    python scripts/inspect_kernel.py --op matmul --backend cuda --arch sm_80 --output /tmp/gemm80

Triton: TTIR, TTGIR, LLVM IR, PTX, cubin and SASS of the configuration that runs. On a GPU that is the forward
launch's autotuned choice for --shape (the kernel cache is emptied after warm-up and one more launch
recompiles exactly the kernels that run; backward kernels only through the ahead-of-time path); without a GPU,
the kernels of triton_kernels/aot.py compiled ahead of time for --arch, in the integer specializations each
configuration launches in (AotSpec.specializations): for most both, of unknown alignment and divisible by 16
("ints%16", what a launch gets when sizes and strides all are; it allocates registers differently, so its
spills can differ), for EDGES kernels only the first. CUDA: the op's csrc/ files compiled with nvcc for --arch
into PTX, cubin and SASS, with the ptxas -v log. Registers, local memory (spills), shared memory and threads
per block of every kernel go into a side-by-side table and DIR/resources.json, and for kernels that issue
wgmma, the size of the innermost loop around it (instructions and HGMMAs in its SASS: what a K block costs
beside its MMAs). Works without a GPU.
"""
from __future__ import annotations

import os

# Ahead-of-time compilation needs compiled (not interpreted) Triton kernels, and Triton decides that
# when a kernel module is imported: validation under the interpreter runs in a child process instead.
os.environ.pop("TRITON_INTERPRET", None)

import argparse  # noqa: E402
import concurrent.futures  # noqa: E402
import json  # noqa: E402
import re  # noqa: E402
import shutil  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
from pathlib import Path  # noqa: E402

import torch  # noqa: E402

import _common as common  # noqa: E402

ALIGNED = "ints%16"  # Triton specialization: every integer argument divisible by 16
CSRC_DIRS = {"copy": "copy", "softmax": "softmax", "matmul": "gemm"}
TRITON_STAGES = ("ttir", "ttgir", "llir", "ptx", "cubin")
# Template arguments that name a storage dtype in demangled CUDA kernel names.
CUDA_DTYPE_TOKENS = {torch.float32: "float", torch.float16: "__half", torch.bfloat16: "__nv_bfloat16"}

GUIDE = """\
What to look for (PTX is virtual ISA; SASS is what the GPU runs):
  *.ttir   Triton IR, one program's view: tl.load/tl.store with their masks (the tail handling), the
           reductions (tt.reduce: max and sum of softmax), tt.dot for GEMM, 64-bit offset arithmetic.
  *.ttgir  the same after layout assignment: #blocked layouts (sizePerThread x threadsPerWarp x
           warpsPerCTA) decide the vector width of each load; #mma/#nvidia_mma and shared-memory
           (#shared, async copies, pipelining stages) show how a dot is fed.
  *.llir   LLVM IR: inline asm for loads/stores, shuffles of the warp reductions.
  *.ptx    ld.global.v4 / st.global.v4 (16-byte accesses) vs scalar ld.global; ex2.approx for exp;
           mma.sync / wgmma.mma_async; cp.async / cp.async.bulk.tensor (TMA); .maxntid.
  *.sass   LDG.E.128 / STG.E.128 (vector width that survived), SHFL.BFLY (warp reductions),
           MUFU.EX2, HGMMA (Hopper wgmma) vs HMMA (mma.sync) vs FFMA (SIMT), LDGSTS (cp.async),
           UTMALDG (TMA), LDL/STL (local memory: register spills).
  wgmma loop  the innermost SASS loop around the HGMMAs: its instructions and HGMMAs per pass. What is not
           HGMMA there (descriptor arithmetic, barrier waits) is issued once per K block beside the MMAs.
  resources.json / table: registers per thread (occupancy: 65536 / (regs x threads) blocks per SM),
           local memory bytes (> 0 = spills or stack), shared memory per block.
"""


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    common.add_case_arguments(parser)
    parser.add_argument("--output", required=True, type=Path, help="folder for every stage and resources.json")
    parser.add_argument("--backend", default="both", choices=("cuda", "triton", "both"))
    parser.add_argument("--arch", default="sm_90a", help="target for compiling ahead of time (default sm_90a)")
    parser.add_argument("--plan", default="auto", help="softmax plan / matmul kernel to validate and (on a GPU) "
                        "inspect for Triton; default: the one the backend picks for --shape")
    args = parser.parse_args(argv)
    dtype, shape = common.case_dtype_and_shape(parser, args)
    try:
        arch_digits, _ = parse_arch(args.arch)
    except ValueError as exc:
        parser.error(str(exc))
    backends = common.backends_arg(args.backend)
    out = args.output
    out.mkdir(parents=True, exist_ok=True)
    on_gpu = common.gpu_unavailable_reason() is None

    print(f"inspect_kernel: op={args.op} dtype={common.dtype_name(dtype)} shape={common.shape_text(shape)} "
          f"arch={args.arch} -> {out}")
    notes = [validate(args.op, backend, args.plan, dtype, shape, on_gpu) for backend in backends]
    for line in notes:
        print(f"  {line}")

    kernels, problems = [], []
    if "triton" in backends:
        found, why = inspect_triton(args.op, args.plan, dtype, shape, args.arch, out / "triton", on_gpu)
        kernels += found
        problems += why
    if "cuda" in backends:
        found, why = inspect_cuda(args.op, dtype, args.arch, arch_digits, out / "cuda")
        kernels += found
        problems += why

    report = {"op": args.op, "dtype": common.dtype_name(dtype), "shape": list(shape), "arch": args.arch,
              "validation": notes, "problems": problems, "kernels": kernels}
    (out / "resources.json").write_text(json.dumps(report, indent=2) + "\n")
    (out / "GUIDE.txt").write_text(GUIDE)
    print()
    print(resource_table(kernels))
    for problem in problems:
        print(f"  ! {problem}")
    print()
    print(GUIDE)
    print(f"wrote {out / 'resources.json'}")
    return 1 if any(p.startswith("FAILED") for p in problems) else 0


def parse_arch(arch: str) -> tuple[str, bool]:
    """'sm_90a' -> ('90a', True); 'sm_80' -> ('80', False)."""
    match = re.fullmatch(r"sm_(\d+)(a?)", arch.lower())
    if not match:
        raise ValueError(f"--arch must look like sm_90a or sm_80, got {arch!r}")
    return match.group(1) + match.group(2), match.group(2) == "a"


# ----------------------------------------------------------------------------- validation

VALIDATE_IN_INTERPRETER = r"""
import sys
sys.path.insert(0, sys.argv[1])
import _common as common
op, backend, name, dtype, shape = sys.argv[2], sys.argv[3], sys.argv[4], common.parse_dtype(sys.argv[5]), \
    common.parse_shape(sys.argv[6], sys.argv[2])
print(common.validate_line(op, backend, name, dtype, shape, "cpu"))
"""


def validate(op, backend, plan, dtype, shape, on_gpu) -> str:
    """One line saying whether (and how) the kernel's result was checked before inspecting it."""
    if on_gpu:
        return common.validate_line(op, backend, plan, dtype, shape, "cuda")
    if backend == "cuda":
        return "cuda: not validated: no GPU; compiled ahead of time only"
    env = dict(os.environ, TRITON_INTERPRET="1")
    cmd = [sys.executable, "-c", VALIDATE_IN_INTERPRETER, str(Path(__file__).parent), op, backend, plan,
           common.dtype_name(dtype), common.shape_text(shape)]
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    except subprocess.TimeoutExpired:
        return "triton: not validated: the interpreter run took over 10 minutes (try a smaller --shape)"
    if r.returncode != 0:
        return f"triton: not validated: the interpreter run failed: {(r.stderr.strip().splitlines() or ['?'])[-1]}"
    return (r.stdout.strip().splitlines()[-1] + " [Triton interpreter on CPU: checks the kernel's logic; the "
            "code below is compiled ahead of time, not what ran]")


# ----------------------------------------------------------------------------- Triton

def inspect_triton(op, plan, dtype, shape, arch, out: Path, on_gpu):
    """(kernel records, problems) for the Triton kernels of `op`."""
    try:
        import triton  # noqa: F401
    except ImportError as exc:
        return [], [f"triton part skipped: triton is not installed ({exc})"]
    if on_gpu:
        compiled, problems = compiled_on_gpu(op, plan, dtype, shape)
        source = f"ran on {torch.cuda.get_device_name()} at {common.shape_text(shape)}"
    else:
        compiled, problems = compiled_ahead_of_time(op, dtype, arch)
        source = f"ahead of time for {arch}"
    if not compiled:
        return [], problems
    out.mkdir(parents=True, exist_ok=True)
    records, used = [], {}
    for kernel, config, specialization in compiled:
        name = kernel.name + ("_ints16" if specialization == ALIGNED else "")
        base = name if name not in used else f"{name}_{used[name]}"
        used[name] = used.get(name, 0) + 1
        for stage in TRITON_STAGES:
            data = kernel.asm[stage]
            path = out / f"{base}.{stage}"
            path.write_bytes(data) if isinstance(data, bytes) else path.write_text(data)
        cubin = out / f"{base}.cubin"
        problems += write_sass(cubin, out / f"{base}.sass")
        resources = common.cubin_resources(cubin).get(kernel.name, {})
        loops = sass_mma_loops(out / f"{base}.sass")
        spills = ptxas_spills(out / f"{base}.ptx", arch)
        meta = kernel.metadata
        records.append({
            "backend": "triton", "kernel": kernel.name, "specialization": specialization,
            "file": str(cubin.with_suffix("")), "source": source,
            "config": config or f"num_warps={meta.num_warps}, num_stages={meta.num_stages}",
            "registers": resources.get("REG"), "local_bytes": local_bytes(resources),
            "spill_stores": spills.get(kernel.name, {}).get("spill_stores"),
            "spill_loads": spills.get(kernel.name, {}).get("spill_loads"),
            "smem_static": resources.get("SHARED"), "smem_dynamic": meta.shared,
            "threads_per_block": meta.num_warps * 32, "wgmma_loop": loops.get(kernel.name),
        })
    return records, problems


def compiled_ahead_of_time(op, dtype, arch):
    from cuda_portfolio.triton_kernels import aot

    if op not in aot.OP_MODULES:
        return [], [f"triton part skipped: '{op}' is not in triton_kernels/aot.py OP_MODULES (no aot_specs yet)"]
    compiled, problems = [], []
    for spec in aot.all_specs(dtype, ops=(op,)):
        for aligned in spec.specializations if aot.integer_args(spec) else (False,):
            try:
                kernel = aot.compile_spec(spec, arch, aligned=aligned)
            except Exception as exc:  # one kernel failing to compile must not hide the others
                problems.append(f"FAILED: Triton {spec.name} ({'ints%16' if aligned else 'ints any'}) did not "
                                f"compile for {arch}: {exc}")
                continue
            options = "".join(f", {k}={v}" for k, v in spec.options.items())
            compiled.append((kernel, f"aot_specs: {spec.constexprs}{options}", ALIGNED if aligned else ""))
    return compiled, problems


def compiled_on_gpu(op, plan, dtype, shape):
    """The compiled kernels one launch at `shape` uses, after warm-up and autotuning."""
    try:
        module = common.backend_module(op, "triton")
        name = common.resolve_name(op, "triton", plan, dtype, shape, "cuda")
    except common.OpUnavailable as exc:
        return [], [f"triton part skipped: {exc}"]
    refused = common.refusal(op, "triton", name, dtype, shape, "cuda")  # e.g. a CUDA-only --plan with --backend both
    if refused:
        return [], [f"triton part skipped: {name} refuses {common.shape_text(shape)}: {refused}"]
    functions = triton_functions(module)
    case = common.make_case(op, "triton", name, "fwd", dtype, shape, "cuda")
    case.launch()  # compiles and autotunes (the autotuner keeps its choice in its own cache)
    torch.cuda.synchronize()
    before = {fn: cached_kernels(fn) for fn in functions}
    for fn in functions:
        fn.device_caches.clear()
    case.launch()  # recompiles (from Triton's disk cache) exactly the kernels that run
    torch.cuda.synchronize()
    compiled = [(k, best_configs(tuner), "") for fn, tuner in functions.items() for k in cached_kernels(fn)]
    if compiled:
        return compiled, []
    everything = [(k, best_configs(functions[fn]), "") for fn, kernels in before.items() for k in kernels]
    return everything, ["could not isolate the launched configuration (the module keeps its own kernel handles): "
                        "saved every compiled variant"]


def triton_functions(module) -> dict:
    """{JITFunction: its Autotuner or None} for the kernels a Triton module defines."""
    from triton.runtime.autotuner import Autotuner
    from triton.runtime.jit import JITFunction

    functions = {}
    for value in vars(module).values():
        tuner = None
        while not isinstance(value, JITFunction) and hasattr(value, "fn"):
            tuner = value if isinstance(value, Autotuner) else tuner
            value = value.fn
        if isinstance(value, JITFunction) and functions.get(value) is None:
            functions[value] = tuner
    return functions


def cached_kernels(fn) -> list:
    return [kernel for kernel_cache, *_ in fn.device_caches.values() for kernel in kernel_cache.values()]


def best_configs(tuner) -> str:
    """The autotuner's choice per tuning key ('' for kernels without an autotuner)."""
    return "" if tuner is None else "; ".join(f"best for {key}: {config}" for key, config in tuner.cache.items())


def ptxas_spills(ptx: Path, arch: str) -> dict:
    """Spill stores/loads per kernel from ptxas -v on Triton's PTX (the cubin itself has no such record),
    with the ptxas Triton compiles with (its bundled one unless TRITON_PTXAS_PATH says otherwise): another
    version allocates registers differently, so its spills need not be those of the cubin."""
    try:
        from cuda_portfolio.triton_kernels import aot
        ptxas = aot.ptxas_path(arch)
    except Exception:  # no Triton NVIDIA backend: the toolkit's
        ptxas = common.find_tool("ptxas")
    if ptxas is None:
        return {}
    r = subprocess.run([ptxas, "-v", f"--gpu-name={arch}", str(ptx), "-o", os.devnull],
                       capture_output=True, text=True)
    return parse_ptxas_verbose(r.stdout + r.stderr)


# ----------------------------------------------------------------------------- CUDA

def inspect_cuda(op, dtype, arch, arch_digits, out: Path):
    nvcc = common.find_tool("nvcc")
    if nvcc is None:
        return [], ["CUDA part skipped: nvcc not found on PATH (nor in CUDA_HOME/bin)"]
    sources = sorted((common.REPO_ROOT / "csrc" / CSRC_DIRS[op]).glob("*.cu"))
    problems = []
    if not arch.endswith("a"):
        hopper_only = [s.name for s in sources if s.name.endswith("_sm90a.cu")]
        sources = [s for s in sources if not s.name.endswith("_sm90a.cu")]
        if hopper_only:
            problems.append(f"skipped (sm_90a only): {', '.join(hopper_only)}")
    if not sources:
        return [], problems + [f"CUDA part: no .cu files in csrc/{CSRC_DIRS[op]}/"]
    out.mkdir(parents=True, exist_ok=True)
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        results = list(pool.map(lambda s: compile_cuda(nvcc, s, arch, arch_digits, out), sources))
    records = []
    for source, ok in zip(sources, results):
        if not ok:
            problems.append(f"FAILED: nvcc could not compile {source.name} for {arch}; see "
                            f"{out / (source.stem + '.ptxas.txt')}")
            continue
        cubin = out / f"{source.stem}.cubin"
        problems += write_sass(cubin, out / f"{source.stem}.sass")
        spills = parse_ptxas_verbose((out / f"{source.stem}.ptxas.txt").read_text())
        loops = sass_mma_loops(out / f"{source.stem}.sass")
        threads = ptx_threads_per_block((out / f"{source.stem}.ptx").read_text())
        for mangled, res in common.cubin_resources(cubin).items():
            readable = demangle(mangled)
            if not mentions_dtype(short_name(readable), dtype):
                continue
            records.append({
                "backend": "cuda", "kernel": short_name(readable), "signature": readable, "mangled": mangled,
                "file": str(cubin.with_suffix("")), "source": f"nvcc {source.name} for {arch}",
                "registers": res.get("REG"), "local_bytes": local_bytes(res),
                "spill_stores": spills.get(mangled, {}).get("spill_stores"),
                "spill_loads": spills.get(mangled, {}).get("spill_loads"),
                "smem_static": res.get("SHARED"), "smem_dynamic": None,
                "threads_per_block": threads.get(mangled), "wgmma_loop": loops.get(mangled),
            })
    return records, problems


def compile_cuda(nvcc, source: Path, arch, arch_digits, out: Path, csrc: Path = common.REPO_ROOT / "csrc") -> bool:
    """nvcc -cubin with -Xptxas -v, keeping the PTX it goes through; the log goes to <stem>.ptxas.txt. `csrc`: the
    include root (another tree's, such as a patched copy's)."""
    defines = ["-DCUDA_PORTFOLIO_HAS_SM90A=1"] if arch_digits.endswith("a") else []
    with tempfile.TemporaryDirectory(prefix="inspect_nvcc_") as keep:
        cmd = [nvcc, "-cubin", "-std=c++17", "--expt-relaxed-constexpr", "-lineinfo",
               f"-gencode=arch=compute_{arch_digits},code=sm_{arch_digits}", "-Xptxas", "-v", "--keep",
               "--keep-dir", keep, f"-I{csrc}", *defines, str(source),
               "-o", str(out / f"{source.stem}.cubin")]
        r = subprocess.run(cmd, capture_output=True, text=True)
        (out / f"{source.stem}.ptxas.txt").write_text(" ".join(cmd) + "\n" + r.stdout + r.stderr)
        ptx = Path(keep) / f"{source.stem}.ptx"
        if r.returncode != 0 or not ptx.exists():
            return False
        shutil.copy(ptx, out / f"{source.stem}.ptx")
    return True


def demangle(name: str) -> str:
    cxxfilt = shutil.which("cu++filt") or common.find_tool("cu++filt") or shutil.which("c++filt")
    if cxxfilt is None:
        return name
    return subprocess.run([cxxfilt, name], capture_output=True, text=True).stdout.strip() or name


def short_name(demangled: str) -> str:
    """'void cp::(anonymous namespace)::copy_masked_kernel<float>(...)' -> 'copy_masked_kernel<float>'."""
    head = demangled.replace("(anonymous namespace)::", "").split("(")[0].removeprefix("void ")
    name, bracket, template_args = head.partition("<")
    return name.rsplit("::", 1)[-1] + bracket + template_args


def mentions_dtype(kernel: str, dtype: torch.dtype) -> bool:
    """Keep the instantiations for `dtype` and kernels that are not templated on a dtype."""
    tokens = [t for t in CUDA_DTYPE_TOKENS.values() if re.search(rf"\b{re.escape(t)}\b", kernel)]
    return not tokens or CUDA_DTYPE_TOKENS[dtype] in tokens


def ptx_threads_per_block(ptx: str) -> dict:
    """Per .entry: threads from .reqntid / .maxntid (__launch_bounds__); absent: chosen at launch."""
    threads = {}
    for match in re.finditer(r"\.entry\s+(\S+?)\s*\((.*?)\)\s*((?:\.\w+[^{]*?)*)\{", ptx, re.S):
        bounds = re.search(r"\.(?:reqntid|maxntid)\s+(\d+)(?:,\s*(\d+))?(?:,\s*(\d+))?", match.group(3))
        if bounds:
            dims = [int(d) for d in bounds.groups() if d]
            total = 1
            for d in dims:
                total *= d
            threads[match.group(1)] = total
    return threads


# ----------------------------------------------------------------------------- shared by both backends

def write_sass(cubin: Path, sass: Path) -> list[str]:
    """SASS with cuobjdump -sass (nvdisasm as fallback); [] on success, else the problem."""
    for tool, flags in (("cuobjdump", ["-sass"]), ("nvdisasm", ["-c"])):
        path = common.find_tool(tool)
        if path is None:
            continue
        r = subprocess.run([path, *flags, str(cubin)], capture_output=True, text=True)
        if r.returncode == 0 and r.stdout.strip():
            sass.write_text(r.stdout)
            return []
    return [f"no SASS for {cubin.name}: neither cuobjdump nor nvdisasm found or worked"]


def mma_loop(instructions: list) -> dict | None:
    """The innermost loop (a backward branch and the code it jumps back over) holding an HGMMA: its span, its
    instructions and its HGMMAs; None where no loop holds one."""
    best = None
    for address, text in instructions:
        target = common.sass_branch_target(text)
        if target is None or target >= address:
            continue
        body = [t for a, t in instructions if target <= a <= address]
        hgmma = sum(re.search(r"\bHGMMA\b", t) is not None for t in body)
        if hgmma and (best is None or len(body) < best["instructions"]):
            best = {"span": f"{target:#x}-{address:#x}", "instructions": len(body), "hgmma": hgmma}
    return best


def sass_mma_loops(sass: Path) -> dict:
    """{function: mma_loop} for the functions of a SASS file that loop around wgmma ({} without the file)."""
    if not sass.exists():
        return {}
    loops = {name: mma_loop(body) for name, body in common.sass_functions(sass.read_text()).items()}
    return {name: loop for name, loop in loops.items() if loop}


def local_bytes(resources: dict):
    """Per-thread local memory: the stack frame (where spills go) plus explicit local arrays."""
    if "STACK" not in resources:
        return None
    return resources["STACK"] + resources.get("LOCAL", 0)


def parse_ptxas_verbose(text: str) -> dict:
    """{function: {"spill_stores", "spill_loads", "stack_bytes"}} from `ptxas -v` output."""
    found = {}
    for match in re.finditer(r"Function properties for (\S+)\s*\n\s*(\d+) bytes stack frame, (\d+) bytes spill "
                             r"stores, (\d+) bytes spill loads", text):
        found[match.group(1)] = {"stack_bytes": int(match.group(2)), "spill_stores": int(match.group(3)),
                                 "spill_loads": int(match.group(4))}
    return found


def resource_table(kernels: list[dict]) -> str:
    def cell(value, unknown="-"):
        return unknown if value is None else str(value)

    header = ("backend", "kernel", "regs", "local B (spill st/ld)", "smem static", "smem dyn", "threads",
              "wgmma loop")
    rows = [header]
    for k in kernels:
        spill = f"{cell(k['local_bytes'])} ({cell(k['spill_stores'])}/{cell(k['spill_loads'])})"
        name = k["kernel"][:60] + (f" [{k['specialization']}]" if k.get("specialization") else "")
        loop = k.get("wgmma_loop")
        rows.append((k["backend"], name, cell(k["registers"]), spill, cell(k["smem_static"]),
                     cell(k["smem_dynamic"], "at launch"), cell(k["threads_per_block"], "at launch"),
                     f"{loop['instructions']} instr / {loop['hgmma']} HGMMA" if loop else "-"))
    if len(rows) == 1:
        return "no kernels inspected"
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows)


if __name__ == "__main__":
    sys.exit(main())
