"""CPU tier: Triton kernels through the interpreter (TRITON_INTERPRET=1, set by conftest.py on
machines without a GPU) at small odd sizes, and compiled ahead of time for sm_90a."""
import ast
import json
import os
import subprocess
import sys
import unittest
from pathlib import Path

import torch
import triton

import cuda_portfolio as cp
from cuda_portfolio._backends import triton_interpreting
from cuda_portfolio.triton_kernels.softmax import aot_specs as softmax_aot_specs

needs_interpreter = unittest.skipUnless(triton_interpreting(), "needs TRITON_INTERPRET=1 (set on machines without a GPU)")


@needs_interpreter
class CopyInterpreterTest(unittest.TestCase):
    def test_copy_odd_shapes_and_views(self):
        for dtype in (torch.float32, torch.float16, torch.bfloat16):
            for x in (torch.randn(1), torch.randn(7), torch.randn(3, 1025), torch.randn(5, 9)[:, 1:8],
                      torch.randn(4, 6).t(), torch.randn(2, 3, 5)):
                x = x.to(dtype)
                before = x.clone()
                y = cp.copy(x, backend="triton")
                self.assertTrue(torch.equal(y, x))
                self.assertTrue(torch.equal(x, before))

    def test_empty_tensor(self):
        y = cp.copy(torch.empty(0, 5), backend="triton")
        self.assertEqual(y.shape, (0, 5))


class TritonSourceTest(unittest.TestCase):
    def test_constexpr_bounds_call_no_builtin_min_or_max(self):
        """Triton 3.4 (the README's floor) takes min() and max() in a kernel for tl.minimum / tl.maximum, so a
        constexpr bound computed with them (`V: tl.constexpr = min(...)`) becomes a tensor and the kernel stops
        compiling there (66 AOT configurations did until session 58); later Triton folds them. Such bounds use
        conditional expressions; min() of run-time values is tl.minimum in every version and stays."""
        kernels = Path(__file__).resolve().parent.parent / "python" / "cuda_portfolio" / "triton_kernels"
        found = []
        for path in sorted(kernels.glob("*.py")):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.AnnAssign) and "constexpr" in ast.unparse(node.annotation) and node.value:
                    found += [f"{path.name}:{node.lineno}" for call in ast.walk(node.value)
                              if isinstance(call, ast.Call) and isinstance(call.func, ast.Name)
                              and call.func.id in ("min", "max")]
        self.assertEqual(found, [], "a constexpr bound computed with min()/max() (Triton 3.4 cannot compile it)")

    def test_every_launch_passes_the_launch_options(self):
        """Every kernel launch (`name_kernel[grid](...)`) passes **LAUNCH_OPTIONS, so none compiles under a Triton
        default the kernels were not measured with (fp contraction: 3.9 warns its default turns off in 3.10)."""
        kernels = Path(__file__).resolve().parent.parent / "python" / "cuda_portfolio" / "triton_kernels"
        launches, missing = 0, []
        for path in sorted(kernels.glob("*.py")):
            for node in ast.walk(ast.parse(path.read_text())):
                if (isinstance(node, ast.Call) and isinstance(node.func, ast.Subscript)
                        and isinstance(node.func.value, ast.Name) and node.func.value.id.endswith("_kernel")):
                    launches += 1
                    if not any(kw.arg is None and ast.unparse(kw.value) == "LAUNCH_OPTIONS" for kw in node.keywords):
                        missing.append(f"{path.name}:{node.lineno}")
        self.assertGreaterEqual(launches, 12)
        self.assertEqual(missing, [], "kernel launches without **LAUNCH_OPTIONS")


AOT_SCRIPT = r"""
import json, sys, torch
from cuda_portfolio.triton_kernels import aot
arch = sys.argv[1]
HOPPER_ONLY_KERNELS = {"matmul_persistent_tma_kernel"}  # the launchers refuse it below sm_90 (matmul's check_kernel)
out = []
for dtype in (torch.float32, torch.float16, torch.bfloat16):
    for spec in aot.all_specs(dtype):
        if arch != "sm_90a" and spec.name in HOPPER_ONLY_KERNELS:
            continue
        k = aot.compile_spec(spec, arch)
        out.append({"name": spec.name, "dtype": str(dtype), "stages": sorted(k.asm),
                    "fp_fusion": k.metadata.enable_fp_fusion,
                    "target": [l for l in k.asm["ptx"].splitlines() if l.startswith(".target")],
                    "cubin_bytes": len(k.asm["cubin"])})
json.dump(out, sys.stdout)
"""


class TritonAheadOfTimeTest(unittest.TestCase):
    def test_every_kernel_compiles_for_sm90a_and_sm80_without_a_gpu(self):
        """sm_90a, what the H200 runs, and sm_80, the oldest GPU the README supports (inline PTX such as
        max.NaN.bf16x2 needs sm_80)."""
        env = dict(os.environ)
        env.pop("TRITON_INTERPRET", None)  # AOT needs compiled kernels, decided at import
        for arch in ("sm_90a", "sm_80"):
            with self.subTest(arch=arch):
                r = subprocess.run([sys.executable, "-c", AOT_SCRIPT, arch], capture_output=True, text=True, env=env,
                                   timeout=900)
                self.assertEqual(r.returncode, 0, r.stderr[-4000:])
                results = json.loads(r.stdout)
                self.assertGreaterEqual(len(results), 3)
                for item in results:
                    self.assertEqual(item["target"], [f".target {arch}"], item["name"])
                    for stage in ("ttir", "ttgir", "llir", "ptx", "cubin"):
                        self.assertIn(stage, item["stages"], item["name"])
                    self.assertGreater(item["cubin_bytes"], 0)
                    self.assertTrue(item["fp_fusion"], item["name"])  # LAUNCH_OPTIONS reached the compiler


SPILL_SCRIPT = r"""
import json, os, re, subprocess, sys, tempfile, torch
from cuda_portfolio.triton_kernels import aot
ptxas = aot.ptxas_path("sm_90a")  # the one Triton builds these cubins with
out = []
for dtype in (torch.float32, torch.float16, torch.bfloat16):
    for spec in aot.all_specs(dtype, ops=("softmax",)):
        for aligned in spec.specializations:
            k = aot.compile_spec(spec, "sm_90a", aligned=aligned)
            with tempfile.NamedTemporaryFile("w", suffix=".ptx", delete=False) as f:
                f.write(k.asm["ptx"])
            r = subprocess.run([ptxas, "-v", "--gpu-name=sm_90a", f.name, "-o", os.devnull], capture_output=True,
                               text=True)
            os.remove(f.name)
            spill = re.search(r"(\d+) bytes spill stores, (\d+) bytes spill loads", r.stdout + r.stderr)
            out.append({"name": spec.name, "held": spec.constexprs.get("HELD", False), "dtype": str(dtype),
                        "aligned": aligned,
                        "spill": [int(spill.group(1)), int(spill.group(2))] if spill else None})
json.dump(out, sys.stdout)
"""

# block_per_row holds whole rows in registers, and its 32768-column tile spills by design (the register caps of 16- and
# 32-warp programs), docs/perf-log.md "Triton softmax": bytes at most per (kernel, dtype) under 3.6. The largest: the
# fp32 backward's EDGES rows at 16 warps 252, the 16-bit backward's rows outside the 16-byte specialization at 16
# warps 128, the 16-bit forward's prefetching form on such rows 76 (its held form: EDGES rows 20, 16-byte rows 0); the
# fp32 forward none. Every other softmax kernel compiles without a spill. block_online's forward, capped at 64
# registers, no longer spills (its 16-bit unaligned specialization spilled 4 bytes before the one-exponential update
# and the ftz exponential).
BLOCK_PER_ROW_SPILL_BYTES = {
    ("softmax_fwd_block_per_row_kernel", "torch.float32"): 0,
    ("softmax_fwd_block_per_row_kernel", "torch.float16"): 76,
    ("softmax_fwd_block_per_row_kernel", "torch.bfloat16"): 76,
    ("softmax_bwd_block_per_row_kernel", "torch.float32"): 252,
    ("softmax_bwd_block_per_row_kernel", "torch.float16"): 128,
    ("softmax_bwd_block_per_row_kernel", "torch.bfloat16"): 128,
}
# split_row's held forward keeps its chunk in 32 registers per thread under its 64-register cap, and ptxas may spill
# a few words, stored before the row exchange and loaded after it: 8-24 bytes with session 27's 64 KiB chunks
# (docs/perf-log.md), 0-12 with the 32 KiB chunks since session 28 (fp32: 16-byte 8, EDGES 12), 0 with the 16-bit
# quarter tiles since session 29, 0 in fp32 too with _body_lanes' masks. More than this bound would be a new spill.
HELD_SPLIT_ROW_FORWARD_SPILL_BYTES = 24
# Spills that Triton releases after 3.6 (the H200's: every result under results/ was measured with it) add in kernels
# 3.6 compiles without one, as {(major, minor): {(kernel, held, dtype, aligned): bytes at most}}. Found in session 62
# (sm_90a, each release's own ptxas) and located in the SASS; none of these builds has run on a GPU.
# - 3.7 (PyTorch 2.12 and 2.13 pin 3.7.0 / 3.7.1): the fp32 plain split_row backward of unaligned rows, 8 bytes from
#   3.7's PTX (3.6's ptxas spills them too): two words stored once per program before the job loop and loaded once
#   per job after the row exchange, outside the tile loops (4 bytes, one word, since warp-poll). Since warp-poll
#   (session 70, 3.7.1's ptxas) the fp32 plain split_row forward of unaligned rows too, 8 bytes: one word stored once
#   per program before the job loop and loaded once per job after pass 1, one loaded and (conditionally) stored once
#   per job around pass 1's block reduction, outside the tile loops; 3.6 compiles it without one.
# - 3.8 and 3.9: the held 16-bit split_row forward of 16-byte rows, 36 bytes (8192-column chunks, 4 warps) and 44
#   (16384, 8 warps), from their PTX under their ptxas (12.9, 13.4); 3.6's ptxas (12.8) compiles the same PTX, and
#   theirs 3.6's PTX, without a spill. About ten words of pass 2, stored and reloaded once per job after the exchange.
_HELD_16BIT_FORWARD_SPILLS = {("softmax_fwd_split_row_kernel", True, dtype, True): 44
                              for dtype in ("torch.float16", "torch.bfloat16")}
NEWER_TRITON_SOFTMAX_SPILLS = {
    (3, 7): {("softmax_bwd_split_row_kernel", False, "torch.float32", False): 8,
             ("softmax_fwd_split_row_kernel", False, "torch.float32", False): 8},
    (3, 8): _HELD_16BIT_FORWARD_SPILLS,
    (3, 9): _HELD_16BIT_FORWARD_SPILLS,
}
# And block_per_row's bounds where a newer release exceeds 3.6's (session 63, each release's ptxas): 3.7 the fp32
# backward's EDGES rows 260; 3.8 and 3.9 the 16-bit forward's held form (a program per row of 16385-32768 columns at
# 16 warps, 64 registers) 68-96 bytes on 16-byte rows and 120-172 on EDGES rows, where 3.6 spills 0 and 20, the 16-bit
# backward up to 136-144, the fp32 backward 264-272, and under 3.9 the fp32 forward's 32768-column EDGES rows 20. What
# that costs the held form's 0.97 of copy (3.6, H200) has not been measured.
NEWER_BLOCK_PER_ROW_SPILL_BYTES = {
    (3, 7): {("softmax_bwd_block_per_row_kernel", "torch.float32"): 260},
    (3, 8): {("softmax_fwd_block_per_row_kernel", "torch.float16"): 124,
             ("softmax_fwd_block_per_row_kernel", "torch.bfloat16"): 172,
             ("softmax_bwd_block_per_row_kernel", "torch.float32"): 272,
             ("softmax_bwd_block_per_row_kernel", "torch.float16"): 140,
             ("softmax_bwd_block_per_row_kernel", "torch.bfloat16"): 136},
    (3, 9): {("softmax_fwd_block_per_row_kernel", "torch.float32"): 20,
             ("softmax_fwd_block_per_row_kernel", "torch.float16"): 124,
             ("softmax_fwd_block_per_row_kernel", "torch.bfloat16"): 120,
             ("softmax_bwd_block_per_row_kernel", "torch.float32"): 264,
             ("softmax_bwd_block_per_row_kernel", "torch.float16"): 144,
             ("softmax_bwd_block_per_row_kernel", "torch.bfloat16"): 144},
}


def triton_release() -> tuple[int, int]:
    """(major, minor) of the installed Triton."""
    major, minor = triton.__version__.split(".")[:2]
    return int(major), int(minor)


class TritonSoftmaxSpillTest(unittest.TestCase):
    def test_softmax_kernels_do_not_spill_in_either_specialization(self):
        """Triton's own ptxas, sm_90a, integer arguments of unknown alignment and divisible by 16 (each
        allocates registers differently: the 16-bit streaming kernels once spilled in one but not the other),
        each configuration in the specializations it launches in (AotSpec.specializations: the pipelined
        backward runs for aligned rows only, unaligned ones take the plain configuration)."""
        env = dict(os.environ)
        env.pop("TRITON_INTERPRET", None)
        r = subprocess.run([sys.executable, "-c", SPILL_SCRIPT], capture_output=True, text=True, env=env, timeout=900)
        self.assertEqual(r.returncode, 0, r.stderr[-4000:])
        results = json.loads(r.stdout)
        self.assertEqual(len(results), sum(len(spec.specializations) for dtype in (torch.float32, torch.float16,
                                                                                    torch.bfloat16)
                                           for spec in softmax_aot_specs(dtype)))
        newer_release_spills = NEWER_TRITON_SOFTMAX_SPILLS.get(triton_release(), {})
        block_per_row_spills = {**BLOCK_PER_ROW_SPILL_BYTES,
                                **NEWER_BLOCK_PER_ROW_SPILL_BYTES.get(triton_release(), {})}
        for item in results:
            with self.subTest(**item):
                self.assertIsNotNone(item["spill"], "no ptxas -v line")
                allowed = newer_release_spills.get((item["name"], item["held"], item["dtype"], item["aligned"]))
                if allowed is not None:
                    self.assertLessEqual(max(item["spill"]), allowed)
                elif item["name"] == "softmax_fwd_split_row_kernel" and item["held"]:
                    self.assertLessEqual(max(item["spill"]), HELD_SPLIT_ROW_FORWARD_SPILL_BYTES)
                elif (item["name"], item["dtype"]) in block_per_row_spills:
                    self.assertLessEqual(max(item["spill"]), block_per_row_spills[item["name"], item["dtype"]])
                else:
                    self.assertEqual(item["spill"], [0, 0])
