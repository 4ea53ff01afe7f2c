"""CPU tier: the profiling and inspection scripts (scripts/*.py) work without a GPU.

inspect_kernel.py must produce every compiler stage and the resource table (Triton ahead of time
for sm_90a; CUDA through nvcc when it is on PATH); the GPU-only scripts must refuse in one clear
line; compare_backends.py must say that it claims no counter results when ncu is missing; sass_stalls.py must read
ncu's source-page CSV.
"""
import ast
import contextlib
import gzip
import importlib.util
import io
import json
import re
import os
import shutil
import subprocess
import sys
import tempfile
import types
import unittest
from pathlib import Path
from unittest import mock

import torch

SCRIPTS = Path(__file__).resolve().parent.parent / "scripts"
NVCC = shutil.which("nvcc")
TRITON_STAGES = ("ttir", "ttgir", "llir", "ptx", "cubin", "sass")
# Kernels known to spill, each with its entry in docs/perf-log.md; any other spill fails the test.
KNOWN_SOFTMAX_SPILLS = {
    # 32 fp32 values per thread at the 64-register cap of 1024-thread blocks (perf log, session 2)
    "softmax_parallel_cluster_split_row_fwd<float, 8>",
    # 4 raw units each of y and dy at the same cap, with edge slots: 28-34 bytes (perf log, session 56, "4-unit
    # tiles"); the form for rows of whole units (`true`) fits in 63 registers (session 71)
    "softmax_parallel_block_per_row_bwd<__nv_bfloat16, 4, false>",
    "softmax_parallel_block_per_row_bwd<__half, 4, false>",
}
# Small shapes keep the interpreter validation quick.
SMALL_SHAPES = {"copy": "5x1000", "softmax": "3x1000", "matmul": "33x47x65"}


def run_script(name, *args, timeout=600):
    env = dict(os.environ)
    env.pop("TRITON_INTERPRET", None)  # the scripts decide for themselves
    return subprocess.run([sys.executable, str(SCRIPTS / name), *args], capture_output=True, text=True,
                          env=env, timeout=timeout)


def max_loads_in_one_block(sass: str) -> int:
    """The most LDG.E.128 between two control-flow instructions in one function's SASS."""
    best = run = 0
    for line in sass.splitlines():
        if re.search(r"\b(BRA|BSYNC|EXIT|RET)\b", line):
            run = 0
        elif "LDG.E.128" in line:
            run += 1
            best = max(best, run)
    return best


def unfenced_stage_releases(sass: str) -> list[str]:
    """Addresses of mbarrier arrives (SYNCS.ARRIVE) reached in program order from a 16-byte shared-memory read
    (LDS.128) with no proxy fence (FENCE.VIEW.ASYNC.S) between them. A BAR.SYNC ends a run of reads: the ones
    before it (consumers_reduce's) are not a ring stage's."""
    unfenced, read = [], False
    for line in sass.splitlines():
        if "LDS.128" in line:
            read = True
        elif "FENCE.VIEW.ASYNC.S" in line or "BAR.SYNC" in line:
            read = False
        elif "SYNCS.ARRIVE" in line and read:
            unfenced.append(line.split("*/")[0].strip(" /*"))
            read = False
    return unfenced


def triton_op_compiles_ahead_of_time(op):
    if importlib.util.find_spec(f"cuda_portfolio.triton_kernels.{op}") is None:
        return False
    from cuda_portfolio.triton_kernels import aot

    return op in aot.OP_MODULES


class ScriptHelpTest(unittest.TestCase):
    def test_every_script_has_help_without_a_gpu(self):
        for script in ("inspect_kernel.py", "profile_kernel.py", "sanitizer_smoke.py", "compare_backends.py",
                       "sass_stalls.py", "clock_under_load.py", "triton_census.py"):
            with self.subTest(script=script):
                r = run_script(script, "--help", timeout=120)
                self.assertEqual(r.returncode, 0, r.stderr)
                self.assertIn("usage:", r.stdout)
                self.assertIn("--op", r.stdout)

    def test_bad_shape_is_a_usage_error(self):
        r = run_script("profile_kernel.py", "--op", "matmul", "--shape", "10x10", timeout=120)
        self.assertEqual(r.returncode, 2)
        self.assertIn("MxNxK", r.stderr)


class TritonCensusTest(unittest.TestCase):
    def test_census_of_the_copy_kernel_and_its_comparison(self):
        """Each configuration in each specialization it launches in, with its resources and opcode counts (the copy
        kernel's 16-byte specialization moves whole units: fewer loads than the other); a census compared with itself
        changes nothing."""
        out = Path(tempfile.mkdtemp(prefix="census_"))
        self.addCleanup(shutil.rmtree, out, ignore_errors=True)
        r = run_script("triton_census.py", "--op", "copy", "--output", str(out / "census.json"))
        self.assertEqual(r.returncode, 0, r.stderr[-3000:])
        census = json.loads((out / "census.json").read_text())
        self.assertEqual(census["arch"], "sm_90a")
        kernels = {k["key"]: k for k in census["kernels"]}
        self.assertEqual(len(kernels), 6)  # three dtypes, two specializations
        for kernel in kernels.values():
            self.assertGreater(kernel["registers"], 0, kernel)
            self.assertGreater(kernel["instructions"], kernel["ldg"] + kernel["stg"], kernel)
            self.assertEqual(kernel["hgmma"], 0)
        self.assertLess(kernels["copy_rows_kernel|fp32|0|ints%16"]["ldg"],
                        kernels["copy_rows_kernel|fp32|0|ints"]["ldg"])
        r = run_script("triton_census.py", "--compare", str(out / "census.json"), str(out / "census.json"))
        self.assertEqual(r.returncode, 0, r.stderr[-3000:])
        self.assertIn("ratio median 1.000, min 1.000, max 1.000; within 2%: 6", r.stdout)
        self.assertIn("registers: differs in 0", r.stdout)

    def test_resident_warps_count_registers_in_eights(self):
        census = load_script("triton_census.py")
        self.assertEqual(census.resident_warps(48, 8), 40)  # 48 x 256 = 12288 registers a program: five
        self.assertEqual(census.resident_warps(64, 8), 32)
        self.assertEqual(census.resident_warps(57, 8), 32)  # allocated as 64 a thread: four programs
        self.assertEqual(census.resident_warps(16, 8), 64)  # the 64-warp limit

    def test_needs_one_mode(self):
        r = run_script("triton_census.py", timeout=120)
        self.assertEqual(r.returncode, 2)
        self.assertIn("--output", r.stderr)


class InspectKernelTest(unittest.TestCase):
    def inspect(self, op, backend, dtype="float32"):
        out = Path(tempfile.mkdtemp(prefix=f"inspect_{op}_"))
        self.addCleanup(shutil.rmtree, out, ignore_errors=True)
        r = run_script("inspect_kernel.py", "--op", op, "--backend", backend, "--arch", "sm_90a", "--shape",
                       SMALL_SHAPES[op], "--dtype", dtype, "--output", str(out))
        self.assertEqual(r.returncode, 0, r.stdout[-3000:] + r.stderr[-3000:])
        report = json.loads((out / "resources.json").read_text())
        return out, report, r.stdout

    def assert_triton_stages(self, out, report):
        kernels = [k for k in report["kernels"] if k["backend"] == "triton"]
        self.assertTrue(kernels, report["problems"])
        for k in kernels:
            for stage in TRITON_STAGES:
                path = Path(k["file"] + "." + stage)
                self.assertTrue(path.exists() and path.stat().st_size > 0, f"{path} missing or empty")
            ptx = Path(k["file"] + ".ptx").read_text()
            self.assertIn(".target sm_90a", ptx)
            self.assertIsInstance(k["registers"], int, k)
            self.assertGreater(k["registers"], 0, k)
            self.assertIsInstance(k["local_bytes"], int, k)
            self.assertGreater(k["threads_per_block"], 0, k)
        self.assertTrue(Path(out / "triton").is_dir())

    def test_copy_triton_every_stage_and_the_table(self):
        out, report, stdout = self.inspect("copy", "triton")
        self.assert_triton_stages(out, report)
        self.assertIn("copy_rows_kernel", stdout)
        self.assertIn("regs", stdout)
        self.assertIn("HGMMA", stdout)  # the guide
        if not torch.cuda.is_available():
            self.assertRegex(report["validation"][0], r"^triton: validated on CPU: .*rel_err=0\.00e\+00")

    @unittest.skipUnless(NVCC, "nvcc not on PATH: the CUDA part is skipped by design")
    def test_copy_cuda_ptx_sass_and_ptxas_resources(self):
        out, report, stdout = self.inspect("copy", "cuda")
        kernels = {k["kernel"]: k for k in report["kernels"] if k["backend"] == "cuda"}
        self.assertIn("copy_masked_kernel<float>", kernels, list(kernels))
        k = kernels["copy_masked_kernel<float>"]
        self.assertGreater(k["registers"], 0)
        self.assertEqual(k["spill_stores"], 0)
        for suffix in (".ptx", ".cubin", ".sass", ".ptxas.txt"):
            self.assertTrue(Path(k["file"] + suffix).exists(), suffix)
        self.assertIn("copy_masked_kernel", Path(k["file"] + ".sass").read_text())
        if not torch.cuda.is_available():
            self.assertIn("cuda: not validated: no GPU; compiled ahead of time only", report["validation"])
        self.assertIn("cuda", stdout)

    @unittest.skipUnless(NVCC, "nvcc not on PATH: the CUDA part is skipped by design")
    def test_softmax_cuda_every_stage_and_16_byte_stores(self):
        out, report, _ = self.inspect("softmax", "cuda")
        kernels = [k for k in report["kernels"] if k["backend"] == "cuda"]
        names = {k["kernel"].split("<")[0] for k in kernels}
        for plan in ("warp_per_row", "block_per_row", "block_online", "split_row", "split_row_stream",
                     "cluster_split_row"):
            for direction in ("fwd", "bwd"):
                self.assertIn(f"softmax_parallel_{plan}_{direction}", names)
        for k in kernels:
            for suffix in (".ptx", ".cubin", ".sass", ".ptxas.txt"):
                self.assertTrue(Path(k["file"] + suffix).exists(), k["file"] + suffix)
        # Spills of every instantiation, every dtype: the ptxas logs hold them all (the table keeps float32's).
        inspect_kernel = load_script("inspect_kernel.py")
        spilling = set()
        for log in sorted((out / "cuda").glob("softmax*.ptxas.txt")):
            for mangled, props in inspect_kernel.parse_ptxas_verbose(log.read_text()).items():
                if props["spill_stores"]:
                    spilling.add(inspect_kernel.short_name(inspect_kernel.demangle(mangled)))
        self.assertEqual(spilling - KNOWN_SOFTMAX_SPILLS, set())
        self.assertEqual(KNOWN_SOFTMAX_SPILLS - spilling, set(), "a known spill is gone: drop it from the list")
        # Every plan file keeps its 16-byte stores (plain or evict-first): the compiler once split
        # them into element stores (8 x st.global.u16 per bf16 unit), which halved the 16-bit throughput.
        for ptx in sorted((out / "cuda").glob("softmax_*.ptx")):
            with self.subTest(ptx=ptx.name):
                self.assertRegex(ptx.read_text(), r"st\.global(\.cs)?\.v4\.b32")
                self.assertRegex(ptx.with_suffix(".sass").read_text(), r"STG\.E(\.EF)?\.128")
        # The streamed split_row feeds its ring with bulk copies (TMA) and reads it 16 bytes at a time.
        stream_sass = (out / "cuda" / "softmax_split_row_stream_sm90a.sass").read_text()
        for instruction in ("UBLKCP.S.G", "LDS.128", "STG.E.EF.128"):
            self.assertIn(instruction, stream_sass)
        # A consumer releases its ring stage only after a proxy fence: its reads are generic-proxy loads and the
        # bulk copy that refills the stage writes through the async proxy (without the fence, repeated launches
        # differed bit for bit, docs/perf-log.md, session 21).
        for chunk in stream_sass.split("Function : ")[1:]:
            with self.subTest(kernel=chunk.split()[0]):
                self.assertEqual(unfenced_stage_releases(chunk), [])
        # 16-bit kernels issue a thread's 16-byte loads together: at least two LDG.E.128 in one
        # basic block. Before Tile::load's whole-unit path each load sat behind its own branch
        # and reused one destination register, so each waited for the one before.
        checked = 0
        for sass in sorted((out / "cuda").glob("softmax_*.sass")):
            for chunk in sass.read_text().split("Function : ")[1:]:
                mangled = chunk.split()[0]
                # <bf16 or half, depth (block_online: block size), ...>
                depth = re.search(r"I(?:13__nv_bfloat16|6__half)Li(\d+)E", mangled)
                if depth and int(depth.group(1)) >= 2:
                    checked += 1
                    with self.subTest(kernel=mangled):
                        self.assertGreaterEqual(max_loads_in_one_block(chunk), 2)
        self.assertGreater(checked, 0, "no 16-bit kernel with two or more units per thread found")

    @unittest.skipUnless(NVCC, "nvcc not on PATH: the CUDA part is skipped by design")
    def test_matmul_cuda_every_version_and_the_hopper_instructions(self):
        out, report, _ = self.inspect("matmul", "cuda", "bfloat16")  # every version takes bf16
        kernels = {k["kernel"].split("<")[0]: k for k in report["kernels"] if k["backend"] == "cuda"}
        for name in ("gemm_naive_kernel", "gemm_smem_tiled_kernel", "gemm_register_blocked_kernel",
                     "gemm_mma_sync_kernel", "gemm_wgmma_tma_kernel"):
            self.assertIn(name, kernels)
            self.assertEqual(kernels[name]["spill_stores"], 0, kernels[name])
        sass = (out / "cuda" / "gemm_05_wgmma_tma_sm90a.sass").read_text()
        # wgmma of every tile width (128x256, 128x192, 128x128, and 128x64 for small M), TMA loads,
        # TMA-store epilogue
        for instruction in ("HGMMA.64x256x16", "HGMMA.64x192x16", "HGMMA.64x128x16", "HGMMA.64x64x16", "UTMALDG.2D",
                            "UTMASTG.2D"):
            self.assertIn(instruction, sass)
        self.assertIn("HMMA.16816", (out / "cuda" / "gemm_04_mma_sync.sass").read_text())
        # every wgmma_tma instantiation loops around its HGMMAs; mma_sync has none of them
        wgmma = [k for k in report["kernels"] if k["kernel"].startswith("gemm_wgmma_tma_kernel")]
        self.assertTrue(wgmma)
        for k in wgmma:
            self.assertGreaterEqual(k["wgmma_loop"]["hgmma"], 4, k)
            self.assertGreater(k["wgmma_loop"]["instructions"], k["wgmma_loop"]["hgmma"], k)
        self.assertIsNone(kernels["gemm_mma_sync_kernel"]["wgmma_loop"])

    def test_wgmma_loop_from_sass(self):
        """The innermost loop around an HGMMA, from cuobjdump -sass text: the branch at 0x60 jumps back to 0x20 over
        an HGMMA (5 instructions, 1 HGMMA); the outer loop (0x0-0x80) holds it too but is not the innermost; a
        function without HGMMA has none."""
        inspect = load_script("inspect_kernel.py")
        sass = """
        Function : kernel_a
        /*0000*/                   MOV R1, c[0x0][0x28] ;    /* 0x00000a00ff017b82 */
        /*0010*/                   NOP ;
        /*0020*/                   SYNCS.PHASECHK.TRANS64.TRYWAIT P0, [UR4], R2 ;
        /*0030*/                   HGMMA.64x256x16.F32.BF16 R24, gdesc[UR20].tnspB, R24, gsb0 ;
        /*0040*/                   WARPGROUP.DEPBAR.LE gsb0, 0x1 ;
        /*0050*/                   UIADD3 UR20, UR20, 0x2, URZ ;
        /*0060*/               @P1 BRA 0x20 ;
        /*0070*/                   NOP ;
        /*0080*/                   BRA !P2, 0x0 ;
        /*0090*/                   EXIT ;
        Function : kernel_b
        /*0000*/                   FFMA R0, R1, R2, R3 ;
        /*0010*/               @P0 BRA 0x0 ;
        """
        functions = load_script("_common.py").sass_functions(sass)
        self.assertEqual(sorted(functions), ["kernel_a", "kernel_b"])
        self.assertEqual(len(functions["kernel_a"]), 10)
        self.assertEqual(inspect.mma_loop(functions["kernel_a"]), {"span": "0x20-0x60", "instructions": 5, "hgmma": 1})
        self.assertIsNone(inspect.mma_loop(functions["kernel_b"]))

    def test_softmax_and_matmul_triton_when_registered(self):
        ops = [op for op in ("softmax", "matmul") if triton_op_compiles_ahead_of_time(op)]
        if not ops:
            self.skipTest("neither triton_kernels.softmax nor triton_kernels.matmul is in aot.OP_MODULES yet")
        for op in ops:
            with self.subTest(op=op):
                out, report, _ = self.inspect(op, "triton")
                self.assert_triton_stages(out, report)

    def test_bad_arch_is_a_usage_error(self):
        r = run_script("inspect_kernel.py", "--op", "copy", "--arch", "hopper", "--output", tempfile.gettempdir())
        self.assertEqual(r.returncode, 2)
        self.assertIn("sm_90a", r.stderr)


@unittest.skipIf(torch.cuda.is_available(), "a GPU is present")
class GpuScriptsRefuseWithoutGpuTest(unittest.TestCase):
    def assert_one_line_refusal(self, r, script):
        self.assertEqual(r.returncode, 3, r.stdout + r.stderr)
        self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
        self.assertIn(f"{script}: needs a CUDA GPU", r.stderr)

    def test_profile_kernel(self):
        self.assert_one_line_refusal(run_script("profile_kernel.py", "--op", "softmax", timeout=120),
                                     "profile_kernel.py")

    def test_clock_under_load(self):
        self.assert_one_line_refusal(run_script("clock_under_load.py", "--op", "matmul", "--with-torch", timeout=120),
                                     "clock_under_load.py")

    def test_sweep_split_row_slices(self):
        self.assert_one_line_refusal(run_script("sweep_split_row_slices.py", "--shapes", "4x4194304", timeout=120),
                                     "sweep_split_row_slices.py")

    def test_sweep_split_row_forms(self):
        self.assert_one_line_refusal(run_script("sweep_split_row_forms.py", "--shapes", "4x4194304", timeout=120),
                                     "sweep_split_row_forms.py")

    def test_sweep_triton_matmul_configs(self):
        self.assert_one_line_refusal(run_script("sweep_triton_matmul_configs.py", "--shapes", "128x8192x8192",
                                                timeout=120), "sweep_triton_matmul_configs.py")

    def test_sweep_matmul_layouts(self):
        self.assert_one_line_refusal(run_script("sweep_matmul_layouts.py", timeout=120), "sweep_matmul_layouts.py")

    def test_sweep_triton_held_tiles(self):
        self.assert_one_line_refusal(run_script("sweep_triton_held_tiles.py", "--shapes", "1024x131072", timeout=120),
                                     "sweep_triton_held_tiles.py")

    def test_sweep_triton_block_online(self):
        self.assert_one_line_refusal(run_script("sweep_triton_block_online.py", "--shapes", "4096x32768",
                                                timeout=120), "sweep_triton_block_online.py")

    def test_sanitizer_smoke_and_its_negative_control(self):
        self.assert_one_line_refusal(run_script("sanitizer_smoke.py", timeout=120), "sanitizer_smoke.py")
        self.assert_one_line_refusal(run_script("sanitizer_smoke.py", "--negative-control", timeout=120),
                                     "sanitizer_smoke.py")


@unittest.skipUnless(importlib.util.find_spec("matplotlib"), "matplotlib not installed")
class SweepReplotTest(unittest.TestCase):
    def test_replots_a_stored_sweep_without_a_gpu(self):
        stored = SCRIPTS.parent / "results" / "h200" / "experiments" / "split-row-slices-c34cae5.json"
        out = Path(tempfile.mkdtemp(prefix="sweep_plot_")) / "slices.png"
        self.addCleanup(shutil.rmtree, out.parent, ignore_errors=True)
        r = run_script("sweep_split_row_slices.py", "--replot", str(stored), "--plot", str(out), timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertGreater(out.stat().st_size, 10000)

    def test_replots_a_triton_variant_sweep_without_a_gpu(self):
        """A stored Triton variant sweep (held tiles, block_online program shapes), skipped variants included, draws
        one panel per dtype and direction."""
        for script, variants in (("sweep_triton_held_tiles.py", ("16x2", "8x4")),
                                 ("sweep_triton_block_online.py", ("32x1:4096", "16x2:4096"))):
            records = [{"shape": [rows, cols], "dtype": dtype, "direction": "fwd", "variant": variant,
                        "ratio_to_copy": 0.5 + cols / 1e6 + 0.01 * i, "us": 100.0}
                       for dtype in ("fp32", "bf16") for rows, cols in ((2048, 50257), (1024, 131072))
                       for i, variant in enumerate(("rule",) + variants)]
            records.append({"shape": [4, 4194304], "dtype": "fp32", "direction": "fwd", "variant": variants[-1],
                            "skipped": "more chunks per row than resident programs"})
            work = Path(tempfile.mkdtemp(prefix="variant_plot_"))
            self.addCleanup(shutil.rmtree, work, ignore_errors=True)
            (work / "sweep.json").write_text(json.dumps({"gpu": "NVIDIA H200", "commit": "abc1234",
                                                         "records": records}))
            with self.subTest(script=script):
                r = run_script(script, "--replot", str(work / "sweep.json"), "--plot", str(work / "sweep.png"),
                               timeout=120)
                self.assertEqual(r.returncode, 0, r.stderr)
                self.assertGreater((work / "sweep.png").stat().st_size, 10000)


class BlockOnlineSweepVariantsTest(unittest.TestCase):
    def test_variants_parse_and_configure_as_the_plan_launches(self):
        """--variants WxP:T: W warps, P programs per SM splitting the register file (maxnreg), tiles of T columns at
        most the row's next power of two, the grid of block_online's own rule for P per SM; shapes that do not fit
        the register file, and tiles that are not powers of two or have fewer columns than threads, are refused."""
        from cuda_portfolio.triton_kernels import softmax as triton_softmax

        script = load_script("sweep_triton_block_online.py")
        args = script.parse_args(["--variants", "32x1:4096,16x2:8192,8x4:2048"])
        self.assertEqual(args.variant_list, [(32, 1, 4096), (16, 2, 8192), (8, 4, 2048)])
        for bad in ("16x4:4096", "16x2:3000", "32x1:512", "16x2", "a"):
            with self.subTest(bad=bad), self.assertRaises(SystemExit), contextlib.redirect_stderr(io.StringIO()):
                script.parse_args(["--variants", bad])
        case = types.SimpleNamespace(rows=1000, cols=5000, dtype=torch.bfloat16, direction="bwd",
                                     out=torch.empty(0))
        variants = script.block_online_variants(triton_softmax, args, case, True, False)
        self.assertEqual([v[0] for v in variants], ["32x1:4096", "16x2:8192", "8x4:2048"])
        for (name, config, description, skipped), (warps, per_sm, tile) in zip(variants, args.variant_list):
            self.assertIsNone(skipped)
            self.assertEqual((config.num_warps, config.per_sm, config.block_n), (warps, per_sm, min(tile, 8192)))
            self.assertEqual(config.maxnreg, 64)
            self.assertTrue(config.stream_stores)
            programs = triton_softmax._block_online_programs(1000, config, case.out.device, 2 * 5000 * 2)
            self.assertIn(f"{programs} programs", description)
        # rows in whole 16-byte units through EDGES stream their stores too, as the plan's launch_config has them
        self.assertTrue(all(v[1].stream_stores for v in script.block_online_variants(triton_softmax, args, case,
                                                                                      False, True)))
        forward = types.SimpleNamespace(**dict(vars(case), direction="fwd"))
        self.assertFalse(any(v[1].stream_stores for v in script.block_online_variants(triton_softmax, args, forward,
                                                                                       True, False)))


class SweepTimingOrderTest(unittest.TestCase):
    def test_every_timer_prepared_first_then_rounds_in_rotated_order(self):
        """_common.launch_times_us: all timers prepared (warm-up, capture) before any sample, then each round samples
        every call once, starting one further along each round, and each call's median is over all its rounds."""
        from cuda_portfolio.bench import timing

        common = load_script("sweep_triton_held_tiles.py").common
        events = []

        class FakeTimer:
            def __init__(self, launches, settings):
                self.name = launches[0].func.__name__  # functools.partial(call, i)
                self.launches = launches

            def prepare(self):
                events.append(("prepare", self.name))

            def sample(self, count):
                events.append(("sample", self.name))
                return [{"a": 0.001, "b": 0.002, "c": 0.003}[self.name]] * count

            def close(self):
                events.append(("close", self.name))

        with mock.patch.object(timing, "LaunchTimer", FakeTimer), \
                mock.patch.object(timing, "default_method", lambda: ("graph", "test")), \
                mock.patch.object(timing, "l2_bytes", lambda: 1 << 20):
            def a(i): pass
            def b(i): pass
            def c(i): pass
            times = common.launch_times_us({"a": a, "b": b, "c": c}, copies=2, samples=4, rounds=3)
        self.assertEqual(times, {"a": 1.0, "b": 2.0, "c": 3.0})
        self.assertEqual([e for e in events if e[0] == "prepare"], [("prepare", n) for n in "abc"])
        self.assertEqual(events.index(("prepare", "c")), 2)  # before the first sample
        order = "".join(name for kind, name in events if kind == "sample")
        self.assertEqual(order, "abc" + "bca" + "cab")
        self.assertEqual(sorted(name for kind, name in events if kind == "close"), list("abc"))


class HeldTileSweepModelTest(unittest.TestCase):
    def test_variants_are_the_tables_program_shapes(self):
        """The sweep's WxP programs hold 32 words a thread, as SPLIT_ROW_HELD's, HELD_QUARTER_FWD's and HELD_HALF_BWD's
        do: the table's entries are points of the sweep (so a sweep result can be written back into the table as it
        is)."""
        from cuda_portfolio.triton_kernels import softmax as triton_softmax

        sweep = load_script("sweep_triton_held_tiles.py")
        for itemsize, dtype in ((4, torch.float32), (2, torch.bfloat16)):
            table = list(triton_softmax.SPLIT_ROW_HELD[itemsize].items())
            table.append(("bwd", triton_softmax.HELD_HALF_BWD[itemsize]))
            if itemsize == 2:
                table.append(("fwd", triton_softmax.HELD_QUARTER_FWD))
            for direction, held in table:
                with self.subTest(dtype=dtype, direction=direction, warps=held.num_warps):
                    config = sweep.variant_config(triton_softmax, held.num_warps, held.per_sm, dtype, direction)
                    self.assertEqual(config, held)
        self.assertEqual(sweep.variant_config(triton_softmax, 4, 8, torch.float32, "fwd").block_n, 4096)
        self.assertEqual(sweep.variant_config(triton_softmax, 16, 2, torch.bfloat16, "fwd").block_n, 32768)
        with self.assertRaises(SystemExit):
            sweep.parse_args(["--variants", "16x4"])  # 64 warps per SM: over the register file at 64 registers


class CompareBackendsTest(unittest.TestCase):
    def test_missing_ncu_saves_a_diagnostic_and_claims_nothing(self):
        results = Path(tempfile.mkdtemp(prefix="compare_"))
        self.addCleanup(shutil.rmtree, results, ignore_errors=True)
        r = run_script("compare_backends.py", "--op", "softmax", "--ncu", str(results / "no-such-ncu"),
                       "--results-dir", str(results), timeout=120)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("NO COUNTER RESULTS ARE CLAIMED", r.stderr)
        diagnostics = list(results.glob("*-diagnostic.txt"))
        self.assertEqual(len(diagnostics), 1, list(results.iterdir()))
        self.assertIn("ncu not found", diagnostics[0].read_text())


# ncu --page source --csv --print-source sass, shortened: a line before the header (ncu prints the kernel's name),
# numbers with thousands separators, a predicated instruction, and a note after the rows.
SASS_CSV = """\
"Kernel Name","softmax_parallel_split_row_stream_fwd"
"Address","Source","Instructions Executed","Warp Stall Sampling (All Samples)","stall_wait","stall_long_sb","stall_math","stall_long_sb (Not Issued)"
"0x7f0000000100","@!P0 LDS.128 R8, [R24] ;","1,024","100","10","90","0","80"
"0x7f0000000110","MUFU.EX2 R8, R8 ;","2,048","300","60","0","240","0"
"0x7f0000000120","FADD R25, R25, R12 ;","2,048","600","600","0","0","0"
"0x7f0000000130","@!P1 BRA 0x7f0000000110 ;","1,024","0","0","0","0","0"
"0x7f0000000140","SYNCS.PHASECHK.TRANS64 P0, [R2+URZ], R3 ;","512","1,000","0","1,000","0","900"
"note: collected with SourceCounters"
"""


def load_script(name):
    """A script under scripts/ as a module (its own imports, such as _common, resolve from there). The environment
    is put back after: inspect_kernel.py drops TRITON_INTERPRET when imported (it compiles ahead of time), and the
    tests after it in this process run under the interpreter."""
    sys.path.insert(0, str(SCRIPTS))
    try:
        with mock.patch.dict(os.environ):
            spec = importlib.util.spec_from_file_location(name.removesuffix(".py"), SCRIPTS / name)
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(SCRIPTS))


RAW_CSV = """\
"ID","Kernel Name","dram__bytes_read.sum","dram__bytes_write.sum"
"","","byte","byte"
"0","softmax_parallel_split_row_stream_fwd","306,686,464","241,784,320"
"1","a_second_kernel","1,000","2,000"
"""


class CompareBackendsBytesTest(unittest.TestCase):
    """compare_backends.py's DRAM bytes against the op's floor (each input read once, the output written once)."""

    def test_floor_bytes(self):
        import torch

        cb = load_script("compare_backends.py")
        self.assertEqual(cb.floor_bytes("softmax", "fwd", torch.bfloat16, (1024, 131072)), (1 << 28, 1 << 28))
        self.assertEqual(cb.floor_bytes("softmax", "bwd", torch.float32, (1024, 131072)), (1 << 30, 1 << 29))
        self.assertEqual(cb.floor_bytes("matmul", "fwd", torch.float16, (128, 8192, 4096)),
                         ((128 * 4096 + 4096 * 8192) * 2, 128 * 8192 * 2))

    def test_bytes_summed_over_kernels_as_multiples_of_the_floor(self):
        cb = load_script("compare_backends.py")
        kernels = cb.parse_raw_csv(RAW_CSV)
        self.assertEqual(len(kernels), 2)  # the units row is not a kernel
        line = cb.bytes_line("cuda", kernels, (1 << 28, 1 << 28))
        # session 23's streamed split_row, bf16 1024x131072 forward: (306,686,464 + 1,000) / 2^28 = 1.14249
        self.assertIn("read 306,687,464 (1.142x)", line)
        self.assertIn("written 241,786,320 (0.901x)", line)
        self.assertIn("over 2 kernel(s)", line)


STUB_PYTHON = """#!/usr/bin/env bash
# Stands in for python3 in ab_patch.sh's test: records what each step saw instead of building or timing.
case "$2" in
  pip) echo "install $CUDA_PORTFOLIO_GIT_COMMIT dirty=$CUDA_PORTFOLIO_GIT_DIRTY kernel=$(cat "$KERNEL_FILE")" >> steps.log ;;
  cuda_portfolio.bench)
    while [ $# -gt 0 ]; do [ "$1" = --json ] && json=$2; shift; done
    echo "bench kernel=$(cat "$KERNEL_FILE")" >> steps.log
    echo "{\\"kernel\\": \\"$(cat "$KERNEL_FILE")\\"}" > "$json" ;;
  cuda_portfolio.bench.compare) echo "compare: $(cat "$3") -> $(cat "$4")${6:+ repeat $(cat "$6")}" ;;
  unittest) echo "tests kernel=$(cat "$KERNEL_FILE")" >> steps.log; echo "Ran 1 test"; echo OK ;;
esac
"""


class AbPatchTest(unittest.TestCase):
    """scripts/ab_patch.sh in a scratch repository, with a stub for python: the patch is off for the first build
    and bench, on for the second and the tests, and reversed and rebuilt away at the end, where the tree as it was
    is timed again (the repeat) unless REPEAT=0."""

    def test_before_after_repeat_and_the_tree_restored(self):
        r, steps, files = self.run_ab({})
        self.assertIn('compare: {"kernel": "A"} -> {"kernel": "B"} repeat {"kernel": "A"}', r.stdout)
        # the repeat's install rebuilds the tree as it was: the installed module is not left the patched build
        self.assertEqual(steps, ["install abc1234 dirty=0 kernel=A", "bench kernel=A",
                                 "install abc1234+change dirty=1 kernel=B", "bench kernel=B", "tests kernel=B",
                                 "install abc1234 dirty=0 kernel=A", "bench kernel=A"])
        self.assertLessEqual({"before.json", "after.json", "repeat.json", "compare.txt"}, files)

    def test_without_the_repeat_the_tree_is_still_restored(self):
        r, steps, files = self.run_ab({"REPEAT": "0"})
        self.assertIn('compare: {"kernel": "A"} -> {"kernel": "B"}\n', r.stdout)
        self.assertNotIn("repeat.json", files)
        self.assertEqual(steps, ["install abc1234 dirty=0 kernel=A", "bench kernel=A",
                                 "install abc1234+change dirty=1 kernel=B", "bench kernel=B", "tests kernel=B",
                                 "install abc1234 dirty=0 kernel=A"])

    def test_a_patch_of_python_files_only_is_timed_without_rebuilding(self):
        """The editable install imports python/ from the tree: only the first build runs, and the patched Python is
        timed and tested as it is."""
        r, steps, files = self.run_ab({}, "python/kernel.txt")
        self.assertIn('compare: {"kernel": "A"} -> {"kernel": "B"} repeat {"kernel": "A"}', r.stdout)
        self.assertEqual(steps, ["install abc1234 dirty=0 kernel=A", "bench kernel=A", "bench kernel=B",
                                 "tests kernel=B", "bench kernel=A"])
        self.assertNotIn("rebuilt the tree", r.stdout)

    def run_ab(self, extra_env: dict, kernel_file: str = "kernel.txt"):
        """(completed process, the stub's steps, the names of the files it wrote) of one ab_patch.sh run whose patch
        changes kernel_file from A to B; checks that it passed and left the patch reversed."""
        with tempfile.TemporaryDirectory() as d:
            repo = Path(d)
            (repo / "scripts").mkdir()
            shutil.copy(SCRIPTS / "ab_patch.sh", repo / "scripts" / "ab_patch.sh")
            (repo / kernel_file).parent.mkdir(exist_ok=True)
            (repo / kernel_file).write_text("A\n")
            git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-C", str(repo)]
            subprocess.run(git[:5] + ["init", "-q", str(repo)], check=True)
            subprocess.run(git + ["add", "-A"], check=True)
            subprocess.run(git + ["commit", "-qm", "base"], check=True)
            (repo / kernel_file).write_text("B\n")
            diff = subprocess.run(git + ["diff"], check=True, capture_output=True, text=True).stdout
            subprocess.run(git + ["checkout", "-q", kernel_file], check=True)
            (repo / "change.patch").write_text(diff)
            stub = repo / "stub-python"
            stub.write_text(STUB_PYTHON)
            stub.chmod(0o755)
            env = dict(os.environ, PYTHON=str(stub), CUDA_PORTFOLIO_GIT_COMMIT="abc1234", KERNEL_FILE=kernel_file,
                       **extra_env)
            r = subprocess.run(["bash", str(repo / "scripts" / "ab_patch.sh"), str(repo / "change.patch")],
                               cwd=repo, env=env, capture_output=True, text=True, timeout=60)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            self.assertEqual((repo / kernel_file).read_text(), "A\n")  # the patch is reversed
            files = {p.name for p in (repo / "results" / "local" / "ab-change").iterdir()}
            return r, (repo / "steps.log").read_text().splitlines(), files


class SassStallsTest(unittest.TestCase):
    def write(self, directory, name, text):
        path = Path(directory) / name
        path.write_text(text)
        return path

    def test_shares_by_reason_and_opcode_and_the_top_instructions(self):
        with tempfile.TemporaryDirectory() as d:
            r = run_script("sass_stalls.py", str(self.write(d, "bf16.csv", SASS_CSV)), "--top", "2", timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        out = r.stdout
        self.assertIn("bf16: 5 instructions, 2000 stall samples", out)
        lines = out.splitlines()
        # reasons: long_sb 1090, wait 670, math 240 of 2000 samples (the "(Not Issued)" subset not added on top);
        # opcodes: SYNCS 1000, FADD 600 (top 2 only)
        self.assertIn(["long_sb", "54.5%"], [line.split() for line in lines])
        self.assertNotIn("Not Issued", out)
        self.assertIn(["wait", "33.5%"], [line.split() for line in lines])
        self.assertIn(["SYNCS", "50.0%"], [line.split() for line in lines])
        self.assertIn(["FADD", "30.0%"], [line.split() for line in lines])
        self.assertNotIn("MUFU", out.split("opcode")[1].split("loops, by share")[0])  # --top 2 rows
        top = out.split("instructions with the most samples")[1].splitlines()[1:]
        self.assertTrue(top[0].split()[0] == "0x40" and "long_sb 100%" in top[0], top)  # offsets into the kernel
        self.assertTrue(top[1].split()[0] == "0x20" and "wait 100%" in top[1], top)

    def test_loops_and_gzip(self):
        """The backward branch at 0x30 closes a loop over 0x10-0x30: 1,024 iterations of (2,048 + 2,048 + 1,024) /
        1,024 = 5 instructions, holding 900 of 2,000 samples; a .csv.gz reads as its CSV."""
        with tempfile.TemporaryDirectory() as d:
            path = Path(d) / "bf16.csv.gz"
            with gzip.open(path, "wt") as f:
                f.write(SASS_CSV)
            r = run_script("sass_stalls.py", str(path), timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        loops = r.stdout.split("loops, by share")[1].split("instructions with")[0].splitlines()
        self.assertEqual(loops[2].split()[:4], ["0x10-0x30", "1,024", "5.0", "45.0%"], loops)
        self.assertIn("math 27%", loops[2])  # 240 of the loop's 900 samples

    def test_address_ranges_and_landmarks(self):
        """--range sums the samples of an address span (0x10-0x30: MUFU 300 + FADD 600 + BRA 0 of 2,000) and names the
        landmark opcodes it holds; the loop over the same span names them too; a reversed span is refused."""
        with tempfile.TemporaryDirectory() as d:
            path = str(self.write(d, "bf16.csv", SASS_CSV))
            r = run_script("sass_stalls.py", path, "--range", "0x10-0x30", "--range", "0x40-0x40", timeout=60)
            bad = run_script("sass_stalls.py", path, "--range", "0x40-0x10", timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        spans = r.stdout.split("address ranges, by share")[1].split("instructions with")[0].splitlines()
        self.assertEqual(spans[2].split()[:2], ["0x10-0x30", "45.0%"], spans)
        self.assertTrue(spans[2].endswith("; MUFUx1") and "FADD 67%" in spans[2], spans)  # 600 of the span's 900
        self.assertEqual(spans[3].split()[:2], ["0x40-0x40", "50.0%"], spans)
        self.assertTrue(spans[3].endswith("; SYNCSx1"), spans)
        loops = r.stdout.split("loops, by share")[1].split("address ranges")[0].splitlines()
        self.assertTrue(loops[2].endswith("[MUFUx1]"), loops)
        self.assertEqual(bad.returncode, 2)
        self.assertIn("LOW is past HIGH", bad.stderr)

    def test_two_kernels_side_by_side(self):
        fp32 = SASS_CSV.replace('"600","600","0","0"', '"100","100","0","0"')
        with tempfile.TemporaryDirectory() as d:
            r = run_script("sass_stalls.py", str(self.write(d, "bf16.csv", SASS_CSV)),
                           str(self.write(d, "fp32.csv", fp32)), timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        rows = {line.split()[0]: line.split()[1:] for line in r.stdout.splitlines() if line.startswith("  ")}
        self.assertEqual(rows["FADD"], ["30.0%", "6.7%"])  # 600 of 2000 against 100 of 1500
        self.assertEqual(rows["wait"], ["33.5%", "11.3%"])  # 670 of 2000 against 170 of 1500

    def test_a_csv_without_stall_sampling_is_refused_clearly(self):
        no_samples = SASS_CSV.replace("Warp Stall Sampling (All Samples)", "Something Else")
        with tempfile.TemporaryDirectory() as d:
            r = run_script("sass_stalls.py", str(self.write(d, "x.csv", no_samples)), timeout=60)
            r2 = run_script("sass_stalls.py", str(self.write(d, "y.csv", "a,b\n1,2\n")), timeout=60)
        self.assertEqual(r.returncode, 2)
        self.assertIn("--section SourceCounters", r.stderr)
        self.assertEqual(r2.returncode, 2)
        self.assertIn("--print-source sass", r2.stderr)


class ClockUnderLoadTest(unittest.TestCase):
    """The parts of clock_under_load.py that need no GPU: nvidia-smi's lines read back, and samples sorted into the
    phases they fall in (after each phase's settling time)."""

    SMI_LINES = ["2026/12/02 03:20:00.000, 1980, 3201, 150.10, 40, 0x0000000000000000",
                 "2026/12/02 03:20:00.100, 1755, 3201, 690.00, 55, 0x0000000000000004",  # phase A, settling
                 "2026/12/02 03:20:00.500, 1590, 3201, 699.50, 60, 0x0000000000000004",  # phase A
                 "2026/12/02 03:20:00.600, 1580, 3201, 700.50, 61, 0x0000000000000204",  # phase A
                 "2026/12/02 03:20:00.700, [N/A], 3201, 700.00, 61, 0x0000000000000004",  # unreadable: skipped
                 "2026/12/02 03:20:01.500, 1610, 3201, 698.00, 59, 0x0000000000000000",  # phase B
                 "2026/12/02 03:20:02.500, 1200, 3201, 300.00, 50, 0x0000000000000001"]  # after both

    def test_samples_and_phases(self):
        script = load_script("clock_under_load.py")
        samples = script.parse_samples(self.SMI_LINES)
        self.assertEqual([s.sm_mhz for s in samples], [1980, 1755, 1590, 1580, 1610, 1200])
        t0 = samples[0].time
        phases = [script.Phase("A", t0 + 0.05, t0 + 0.65, 3), script.Phase("B", t0 + 1.1, t0 + 1.6, 5),
                  script.Phase("A", t0 + 2.0, t0 + 2.4, 4)]
        rows = {row["label"]: row for row in script.summarize(samples, phases, settle_s=0.3)}
        a, b = rows["A"], rows["B"]
        self.assertEqual((a["phases"], a["samples"], a["sm_mhz"], a["power_w"], a["max_temp_c"]),
                         (2, 2, 1585, 700.0, 61))
        self.assertEqual(a["reasons"], ["sw_power_cap", "0x200"])
        self.assertAlmostEqual(a["us_per_launch"], 150_000, delta=0.1)  # median of 200,000 and 100,000
        self.assertAlmostEqual(a["kcycles_per_launch"], 150_000 * 1585 / 1e3, delta=0.1)
        self.assertAlmostEqual(a["mj_per_launch"], 150_000 * 700.0 / 1e3, delta=0.1)  # 0.15 s at 700 W
        self.assertEqual((b["samples"], b["sm_mhz"], b["reasons"]), (1, 1610, []))
        table = script.format_rows(list(rows.values()))
        self.assertIn("sw_power_cap, 0x200", table)
        self.assertEqual(len(table.splitlines()), 3)


class SanitizerGroupTest(unittest.TestCase):
    def test_memcheck_steps_cover_every_softmax_test_method_once(self):
        """reproduce_results.sh runs the softmax sweep per backend and lists the module's other
        methods by -k pattern; a method added to the module must not fall out of the memcheck run."""
        tests_file = Path(__file__).resolve().parent / "gpu_softmax_cases.py"
        methods = [node.name for node in ast.walk(ast.parse(tests_file.read_text()))
                   if isinstance(node, ast.FunctionDef) and node.name.startswith("test_")]
        script = (SCRIPTS / "reproduce_results.sh").read_text()
        rest_step = script[script.index('step "memcheck-gpu_softmax_cases-rest"'):]
        rest_step = rest_step[:rest_step.index("&\n")]
        patterns = re.findall(r"-k (\S+)", rest_step)
        sweep = "test_every_backend_plan_dtype_shape_forward_backward"
        self.assertIn(f"SoftmaxGpuTest.{sweep}", script)
        for name in methods:
            matched = [k for k in patterns if k in name]
            if name == sweep:
                self.assertEqual(matched, [], "the sweep runs in its own per-backend steps")
            else:
                self.assertTrue(matched, f"{name} is missing from the memcheck-gpu_softmax_cases-rest step")


if __name__ == "__main__":
    unittest.main()
