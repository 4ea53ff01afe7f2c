"""CPU tier: the package installs, imports, reports its backends, and ships the executable."""
import shutil
import subprocess
import unittest

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

    def test_cuda_backend_unavailable_reason_without_gpu(self):
        if torch.cuda.is_available():
            self.skipTest("a GPU is present")
        ok, reason = cp.available_backends()["cuda"]
        self.assertFalse(ok)
        self.assertRegex(reason, "no CUDA device|nvcc|failed to import")


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
