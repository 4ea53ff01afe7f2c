"""CPU tier: the package installs, imports, reports its backends, and ships the executable."""
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
import unittest
import zipfile
from pathlib import Path

import torch

import cuda_portfolio as cp

EXE = shutil.which("cuda_portfolio")
NVCC = shutil.which("nvcc")


class BuildTest(unittest.TestCase):
    def test_available_backends_reports_every_backend_with_a_reason(self):
        status = cp.available_backends()
        self.assertEqual(set(status), {"cuda", "triton"})
        for name, (ok, reason) in status.items():
            self.assertIsInstance(ok, bool, name)
            self.assertTrue(reason, f"{name} has no reason string")

    @unittest.skipUnless(NVCC, "nvcc not on PATH: the native module is not expected")
    def test_native_module_was_built_and_imports(self):
        from cuda_portfolio import _native

        count, reason = _native.device_count()
        if not torch.cuda.is_available():
            self.assertEqual(count, 0)
            self.assertTrue(reason)
        self.assertGreaterEqual(_native.runtime_version(), 11000)

    @unittest.skipUnless(NVCC, "nvcc not on PATH: the native module is not expected")
    def test_gemm_config_names_the_wgmma_tma_plan_without_a_gpu(self):
        """What the benchmark records beside a wgmma_tma time (docs/perf-log.md: v6's narrow tiles for
        M <= 128, split K for few tiles and long K, v8's tall tiles when only B's lines start off
        32-byte sectors, v12's narrower tiles where 128 x 256 ones end on a mostly idle round); host
        arithmetic, 132 SMs as on the H200."""
        from cuda_portfolio import _native

        if not _native.has_sm90a_kernels:
            self.skipTest("built without sm_90a kernels")
        def config(kernel, m, n, k, b_column_major=False, base=0):
            """Row-major A; B row- or column-major; both at `base` (never dereferenced)."""
            b_strides = (1, k) if b_column_major else (n, 1)
            return _native.gemm_config(kernel, m, n, k, base, k, 1, base, *b_strides, 132)

        # B's rows of 6,000 bytes start off 32-byte sectors and A's of 4,000 or 4,096 bytes on them:
        # 256 x 128 tiles, unless K is split or B is column-major (its lines are then K long too).
        for (m, n, k, b_cm, base), want in {(128, 8192, 8192, False, 0): "128x64x64, 8 stages, split-K 1",
                                            (1024, 1024, 16384, False, 0): "128x128x64, 6 stages, split-K 2",
                                            (4096, 4096, 4096, False, 0): "128x256x64, 4 stages, split-K 1",
                                            (4000, 3000, 2000, False, 0): "256x128x64, 4 stages, split-K 1",
                                            (4096, 3000, 2048, False, 0): "256x128x64, 4 stages, split-K 1",
                                            (4096, 3000, 2048, True, 0): "128x256x64, 4 stages, split-K 1",
                                            (4096, 3072, 2048, False, 16): "128x256x64, 4 stages, split-K 1",
                                            (512, 1000, 8192, False, 0): "128x128x64, 6 stages, split-K 4",
                                            # wave quantization (unsplit_width): 128 x 256 tiles would end on
                                            # a mostly idle round
                                            (3072, 3072, 3072, False, 0): "128x192x64, 4 stages, split-K 1",
                                            (2304, 2304, 2304, True, 0): "128x192x64, 4 stages, split-K 1",
                                            (5120, 5120, 5120, False, 0): "128x128x64, 6 stages, split-K 1",
                                            (8192, 8192, 8192, False, 0): "128x256x64, 4 stages, split-K 1",
                                            (16384, 16384, 1024, False, 0): "128x256x64, 4 stages, split-K 1"}.items():
            with self.subTest(shape=(m, n, k), b_column_major=b_cm, base=base):
                self.assertEqual(config("wgmma_tma", m, n, k, b_cm, base), want)
        self.assertEqual(config("register_blocked", 4096, 4096, 4096), "")

    @unittest.skipUnless(NVCC, "nvcc not on PATH: the native module is not expected")
    def test_softmax_config_without_a_gpu(self):
        """What the benchmark records beside a CUDA softmax time: only split_row has a layout to name (it asks the
        device, so tests/gpu_softmax_cases.py checks its text); every other plan answers '' without touching a
        device, and a direction other than fwd / bwd is refused by name."""
        from cuda_portfolio import _native

        def config(plan, direction="fwd"):
            return _native.softmax_config(plan, "float32", direction, 4, 100, 0, 100, 0, 100, 0, 100, 0)

        for plan in ("warp_per_row", "block_per_row", "block_online", "cluster_split_row"):
            with self.subTest(plan=plan):
                self.assertEqual(config(plan), "")
                self.assertEqual(config(plan, "bwd"), "")
        with self.assertRaisesRegex(ValueError, "direction must be 'fwd' or 'bwd', got 'sideways'"):
            config("block_per_row", "sideways")
        with self.assertRaisesRegex(ValueError, "unknown|plan"):
            config("no_such_plan")

    def test_cuda_backend_unavailable_reason_without_gpu(self):
        if torch.cuda.is_available():
            self.skipTest("a GPU is present")
        ok, reason = cp.available_backends()["cuda"]
        self.assertFalse(ok)
        self.assertRegex(reason, "no CUDA device|nvcc|failed to import")


REPO = Path(__file__).resolve().parent.parent


@unittest.skipUnless(importlib.util.find_spec("scikit_build_core") and importlib.util.find_spec("pybind11"),
                     "needs scikit-build-core and pybind11 installed (an offline build)")
class BuildWithoutNvccTest(unittest.TestCase):
    def test_wheel_without_nvcc_is_triton_only_and_says_why(self):
        """DESIGN: without nvcc the install still succeeds, the native module is absent and
        available_backends() gives the reason (read from the marker the build ships)."""
        with tempfile.TemporaryDirectory() as tmp:
            env = dict(os.environ, CUDACXX=os.path.join(tmp, "no-nvcc-here"),
                       PATH=os.pathsep.join(p for p in os.environ["PATH"].split(os.pathsep)
                                            if not (Path(p) / "nvcc").exists()))
            env.pop("CUDA_PORTFOLIO_REQUIRE_CUDA", None)
            r = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-build-isolation", "--no-deps", "-w", tmp,
                                "--config-settings", f"build-dir={tmp}/build", str(REPO)],
                               capture_output=True, text=True, env=env, timeout=900)
            self.assertEqual(r.returncode, 0, r.stdout[-3000:] + r.stderr[-3000:])
            (wheel,) = Path(tmp).glob("cuda_portfolio-*.whl")
            names = zipfile.ZipFile(wheel).namelist()
            self.assertIn("cuda_portfolio/NATIVE_UNAVAILABLE.txt", names)
            self.assertFalse([n for n in names if "_native" in n], names)
            site = Path(tmp) / "site"
            zipfile.ZipFile(wheel).extractall(site)
            probe = ("import sys; sys.path.insert(0, sys.argv[1]); import cuda_portfolio as cp; "
                     "assert cp.__file__.startswith(sys.argv[1]), cp.__file__; print(cp.available_backends()['cuda'])")
            # -S: no .pth files, so an editable install of the project cannot shadow the wheel.
            site_packages = [p for p in sys.path if p.endswith("site-packages")]
            r = subprocess.run([sys.executable, "-S", "-c", f"import sys; sys.path += {site_packages!r}; " + probe,
                                str(site)], capture_output=True, text=True, timeout=300)
            self.assertEqual(r.returncode, 0, r.stderr[-3000:])
            self.assertIn("(False, 'the package was built without nvcc", r.stdout)


@unittest.skipUnless(EXE, "the cuda_portfolio executable is not on PATH")
class ExecutableCliTest(unittest.TestCase):
    def run_exe(self, *args):
        return subprocess.run([EXE, *args], capture_output=True, text=True, timeout=120)

    def test_help(self):
        r = self.run_exe("--help")
        self.assertEqual(r.returncode, 0)
        for flag in ("--test-only", "--json", "--list", "--negative-control"):
            self.assertIn(flag, r.stdout)

    def test_list_needs_no_gpu_and_is_numbered_in_launch_order(self):
        r = self.run_exe("--list")
        self.assertEqual(r.returncode, 0, r.stderr)
        lines = r.stdout.splitlines()
        self.assertGreaterEqual(len(lines), 6)
        self.assertEqual([int(l.split()[0]) for l in lines], list(range(1, len(lines) + 1)))
        self.assertIn("copy_masked", r.stdout)

    def test_documented_launch_order_for_ncu(self):
        """README / docs/profiling.md: six small softmax_parallel cases, then the 1024x1024 fp32
        forward as the 7th launch, so `--launch-skip 6` selects it with or without the name filter."""
        lines = self.run_exe("--list").stdout.splitlines()
        kernels = [line.split()[1] for line in lines]
        self.assertTrue(all("softmax_parallel" in k and k.endswith("_fwd") for k in kernels[:7]), kernels[:7])
        self.assertIn("float32 1024x1024", lines[6])

    def test_bad_argument_exits_2_with_message(self):
        r = self.run_exe("--no-such-flag")
        self.assertEqual(r.returncode, 2)
        self.assertIn("unknown argument", r.stderr)
        r = self.run_exe("--json")
        self.assertEqual(r.returncode, 2)
        self.assertIn("needs a value", r.stderr)

    @unittest.skipIf(torch.cuda.is_available(), "a GPU is present")
    def test_test_only_refuses_clearly_without_gpu(self):
        r = self.run_exe("--test-only")
        self.assertEqual(r.returncode, 3)
        self.assertIn("no usable CUDA GPU", r.stderr)
        self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
