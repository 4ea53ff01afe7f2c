"""Shared helpers for the GPU tier (tests/test_gpu.py and the gpu_*_cases.py it imports).

Without a GPU (or with TRITON_INTERPRET=1) the GPU test classes skip; with KERNEL_REQUIRE_GPU=1 they fail
instead, and so do they when a backend is unavailable (without it they cover the backends that are). Single tests
that need what a GPU lacks (wgmma_tma off Hopper) still skip, with the reason.
"""
from __future__ import annotations

import os
import unittest
from unittest import mock

import torch

from cuda_portfolio._backends import compiled_gpu_unavailable
from cuda_portfolio.bench.timing import NO_CACHING_ENV

REQUIRE_GPU = os.environ.get("KERNEL_REQUIRE_GPU", "0") == "1"


def gpu_unavailable_reason() -> str | None:
    return compiled_gpu_unavailable("the GPU tier's tests")


class GpuTestCase(unittest.TestCase):
    """Base class: skips without a GPU, or fails when KERNEL_REQUIRE_GPU=1 (then also when a backend is missing)."""

    @classmethod
    def setUpClass(cls):
        reason = gpu_unavailable_reason()
        if reason is not None:
            if REQUIRE_GPU:
                raise RuntimeError(f"KERNEL_REQUIRE_GPU=1 but {reason}")
            raise unittest.SkipTest(reason)
        import cuda_portfolio as cp

        cls.backends = [name for name, (ok, _) in cp.available_backends().items() if ok]
        if REQUIRE_GPU:
            missing = {n: r for n, (ok, r) in cp.available_backends().items() if not ok}
            if missing:
                raise RuntimeError(f"KERNEL_REQUIRE_GPU=1 but backends unavailable: {missing}")

    def setUp(self):
        # Fresh random inputs for every test: a different seed each run (shortDescription names it).
        self.seed = int.from_bytes(os.urandom(4), "little")
        torch.manual_seed(self.seed)

    def shortDescription(self):
        """The docstring's first line and this run's seed: unittest prints it with every failure or error, so any
        failing case can be rerun on the same inputs (torch.manual_seed(seed))."""
        first = super().shortDescription()
        seed = getattr(self, "seed", None)
        return first if seed is None else f"{first or self._testMethodName} [seed {seed}]"

    def run_triton_untuned(self, forget_picks):
        """For this test: CUDA_PORTFOLIO_NO_TUNING=1 (the Triton tuners launch their table's or first fitting
        configuration, timing nothing), and forget_picks() before and after, so no pick made here outlives it."""
        untuned = mock.patch.dict(os.environ, {"CUDA_PORTFOLIO_NO_TUNING": "1"})
        untuned.start()
        self.addCleanup(untuned.stop)
        forget_picks()
        self.addCleanup(forget_picks)

    def skip_if_caching_allocator_off(self, why: str):
        """Skip (saying why) when the allocator cache is off, as under compute-sanitizer: CUDA graph
        capture needs the cache. The plain GPU tier runs these tests."""
        if os.environ.get(NO_CACHING_ENV) == "1":
            self.skipTest(f"{why} ({NO_CACHING_ENV}=1); the plain GPU tier runs it")

    def assertClose(self, out: torch.Tensor, ref: torch.Tensor, tol: float, what: str = "", scale: float | None = None):
        """||out - ref|| / scale <= tol in float64 (scale: ||ref|| unless given); NaN where ref is
        finite fails (unwritten output)."""
        self.assertEqual(out.shape, ref.shape, what)
        out64, ref64 = out.double(), ref.double()
        bad = torch.isnan(out64) & ~torch.isnan(ref64)
        self.assertFalse(bool(bad.any()), f"{what}: {int(bad.sum())} NaN/unwritten outputs (seed {self.seed})")
        same_nan = torch.isnan(out64) == torch.isnan(ref64)
        self.assertTrue(bool(same_nan.all()), f"{what}: NaN pattern differs from the reference (seed {self.seed})")
        rel = relative_error(out64, ref64, scale)
        self.assertLessEqual(rel, tol, f"{what}: rel err {rel:.3e} > {tol:.2g} (seed {self.seed})")


def poisoned_like(x: torch.Tensor, value: float = float("nan")) -> torch.Tensor:
    """An output buffer filled with NaN, so any element a kernel forgets to write shows up. Where the right output
    holds NaN rows (special values), a finite value no softmax output can take (7.0: they lie in [0, 1]), so a
    kernel that skips such a row cannot leave the poison standing as its answer."""
    return torch.full_like(x, value)


NOT_A_SOFTMAX = 7.0  # poisoned_like's value for outputs whose right answer holds NaN


def poison_free_blocks_like(x: torch.Tensor, value: float = float("nan"), blocks: int = 8) -> None:
    """Before a call through the public API, whose output comes from torch.empty: leave the caching allocator's free
    blocks of x's size filled with `value` (poisoned_like's). Otherwise the block a loop's previous call (another
    plan or backend on the same input) freed holds that call's right answer, and a kernel that writes nothing would
    pass on it."""
    filled = [poisoned_like(x, value) for _ in range(blocks)]
    del filled


TOLERANCE = {torch.float32: 1e-5, torch.float16: 5e-3, torch.bfloat16: 1e-2}


def format_tolerance(ref: torch.Tensor, dtype: torch.dtype, scale: float | None = None) -> float:
    """1.1x the error of `ref` rounded to `dtype` (the output format's own, measured as assertClose measures) plus
    fp32's 1e-5: the bound of a kernel that computes in fp32 and rounds once, on this case. Such a kernel reads the
    format's error to within the near-tie roundings its fp32 error moves (the executable's rule, csrc/app/
    softmax_cases.cpp; a CPU emulation of the kernels' arithmetic on the sweep's inputs stays within 0.905 of it),
    where TOLERANCE's fixed 16-bit numbers are set by the worst shape (in the executable's cases, fp16 rows of 1M
    columns, whose outputs are subnormals: 4.5e-3 of format error, against 2e-4 on short rows)."""
    ref64 = ref.double()
    return 1.1 * relative_error(ref64.to(dtype).double(), ref64, scale) + 1e-5


def relative_error(out64: torch.Tensor, ref64: torch.Tensor, scale: float | None = None) -> float:
    """||out - ref|| / scale over the elements where ref is not NaN (scale: ||ref|| there unless given)."""
    finite = ~torch.isnan(ref64)
    diff = (out64[finite] - ref64[finite]).norm()
    norm = ref64[finite].norm() if scale is None else scale
    return float(diff / norm) if norm > 0 else float(diff)
