"""GPU tier: cp.matmul in both backends, every kernel, every dtype it supports (imported by tests/test_gpu.py).

The Triton autotuner compiles and times every tile of its space once per problem class, and this file makes
dozens of classes (shapes x dtypes x layouts x kernels), so the tests run untimed (CUDA_PORTFOLIO_NO_TUNING=1:
each class takes the first tile that fits). Every tile of both spaces still runs, pinned, in the every-config
tests, and test_autotuner_picks_run_correctly runs the timed tuner itself.
"""
import collections
import os
from unittest import mock

import torch

import cuda_portfolio as cp
from tests.gpu_util import REQUIRE_GPU, GpuTestCase, poisoned_like

DTYPES = (torch.float32, torch.float16, torch.bfloat16)
# Relative Frobenius error against the float64 product rounded to the output dtype: an fp32-accumulated result differs
# from it only where the accumulation moved a rounding (about 1e-5 in fp16 and bf16 in a CPU emulation, session 67),
# while a 16-bit accumulator reads 1.2e-3 (fp16, K = 1023) / 3.5e-3 (bf16, K = 65) and more with K. The bounds leave
# room for the tensor cores' accumulation, which is not IEEE round-to-nearest (an estimate of up to 2-3e-4 in fp16 at
# K = 4096; not measured here). Against the unrounded product the output's own rounding (2e-4 / 1.7e-3) hid a 16-bit
# accumulator under the 1e-2 this was before.
TOLERANCE = {torch.float32: 1e-5, torch.float16: 5e-4, torch.bfloat16: 2e-3}
TF32_TOLERANCE = 2e-3
# (M, N, K): tiny, odd, K not a multiple of 8, and one large tile-multiple shape.
SHAPES = ((1, 1, 1), (33, 47, 65), (1000, 999, 77), (129, 257, 1023), (2048, 1536, 4096))
BIG = (2048, 1536, 4096)


def backend_module(backend):
    if backend == "cuda":
        from cuda_portfolio.native import matmul as module
    else:
        from cuda_portfolio.triton_kernels import matmul as module
    return module


def clear_triton_tuning():
    """Forget the Triton tuner's picks, so none made untimed here outlives the test that made it."""
    tm = backend_module("triton")
    tm._TUNED.clear()
    tm._CHOSEN.clear()


class MatmulGpuTest(GpuTestCase):
    def setUp(self):
        super().setUp()
        self.allow_tf32 = torch.backends.cuda.matmul.allow_tf32
        torch.backends.cuda.matmul.allow_tf32 = False
        self.run_triton_untuned(clear_triton_tuning)

    def tearDown(self):
        torch.backends.cuda.matmul.allow_tf32 = self.allow_tf32

    def wgmma_tma_module(self):
        """The CUDA backend, or a skip where wgmma_tma does not run (not Hopper). On a Hopper GPU under
        KERNEL_REQUIRE_GPU=1 a refusal fails instead (a build without the sm_90a kernels would otherwise skip every
        wgmma_tma case there)."""
        module = backend_module("cuda")
        try:
            probe = self.operand(128, 128, torch.bfloat16)
            module.check_kernel("wgmma_tma", probe, probe, False)
        except ValueError as exc:
            if REQUIRE_GPU and torch.cuda.get_device_capability()[0] == 9:
                raise
            self.skipTest(f"wgmma_tma does not run on this GPU: {exc}")
        return module

    def wgmma_tma_runs(self, module, a, b, runs, what):
        """`runs` wgmma_tma launches into fresh NaN-poisoned outputs: the first checked against float64,
        every other bit-identical to it, the inputs unchanged. Returns the first."""
        before_a, before_b = a.clone(), b.clone()
        outs = []
        for _ in range(runs):
            out = poisoned_like(torch.empty(a.shape[0], b.shape[1], dtype=a.dtype, device="cuda"))
            module.matmul(a, b, out, "wgmma_tma", False)
            outs.append(out)
        torch.cuda.synchronize()
        self.assertTrue(torch.equal(a, before_a) and torch.equal(b, before_b), f"{what}: an input changed")
        self.assertClose(outs[0], (a.double() @ b.double()).to(a.dtype), TOLERANCE[a.dtype], what)
        for i, out in enumerate(outs[1:], 1):
            self.assertTrue(torch.equal(out, outs[0]), f"{what}: run {i} differs from run 0")
        return outs[0]

    def operand(self, rows, cols, dtype, column_major=False):
        if column_major:
            return torch.randn(cols, rows, device="cuda").to(dtype).t()
        return torch.randn(rows, cols, device="cuda").to(dtype)

    def run_checked(self, launch, a, b, tol, what):
        """launch(out) into a NaN-poisoned output, checked against float64 torch; the inputs must be unchanged."""
        before_a, before_b = a.clone(), b.clone()
        out = poisoned_like(torch.empty(a.shape[0], b.shape[1], dtype=a.dtype, device="cuda"))
        launch(out)
        torch.cuda.synchronize()
        self.assertTrue(torch.equal(a, before_a) and torch.equal(b, before_b), f"{what}: input modified")
        self.assertClose(out, (a.double() @ b.double()).to(out.dtype), tol, what)

    def check_kernel_on(self, backend, kernel, a, b, allow_tf32, tol, what):
        """Run one backend kernel on a NaN-poisoned output; a refusal must be a ValueError."""
        module = backend_module(backend)
        try:
            module.check_kernel(kernel, a, b, allow_tf32)
        except ValueError:
            return False
        self.run_checked(lambda out: module.matmul(a, b, out, kernel, allow_tf32), a, b, tol, what)
        return True

    def pinned_tile_ran(self, launch, a, b, what):
        """run_checked with one tile pinned; False when the tile does not fit the GPU (OutOfResources), as the
        autotuner skips it too."""
        import triton

        try:
            self.run_checked(launch, a, b, TOLERANCE[a.dtype], what)
        except triton.runtime.errors.OutOfResources:
            return False
        return True

    def test_every_backend_kernel_dtype_shape(self):
        ran = collections.Counter()
        for backend in ("cuda", "triton"):
            for kernel in cp.matmul_kernels(backend):
                for dtype in DTYPES:
                    for m, n, k in SHAPES:
                        if (m, n, k) == BIG and kernel == "naive" and dtype != torch.float32:
                            continue  # the naive kernel at the big shape once (fp32) keeps the tier short
                        what = f"{backend}/{kernel} {dtype} {m}x{n}x{k}"
                        with self.subTest(what):
                            if self.check_kernel_on(backend, kernel, self.operand(m, k, dtype),
                                                    self.operand(k, n, dtype), False, TOLERANCE[dtype], what):
                                ran[backend, kernel, dtype] += 1
        # A kernel that refused every shape of a dtype must refuse an aligned 128^3 of it too (the dtype or this GPU is
        # not its own): otherwise a refusal that widened would pass the sweep with nothing run.
        for backend in ("cuda", "triton"):
            for kernel in cp.matmul_kernels(backend):
                for dtype in DTYPES:
                    if ran[backend, kernel, dtype] == 0:
                        with self.subTest(f"{backend}/{kernel} {dtype} ran none of the sweep's shapes"):
                            square = self.operand(128, 128, dtype)
                            with self.assertRaises(ValueError, msg="yet it takes 128x128x128"):
                                backend_module(backend).check_kernel(kernel, square, square, False)

    def test_column_major_operands(self):
        """Every kernel on column-major operands: M = 257 (odd) and M = 256, where a column-major A's leading stride
        suits TMA, so Triton's persistent_tma reads every layout without a copy (it refuses M = 257 there, and the
        tier had never run it on a column-major A)."""
        ran = set()
        for backend in ("cuda", "triton"):
            for kernel in cp.matmul_kernels(backend):
                for dtype in (torch.float32, torch.bfloat16):
                    for a_cm, b_cm in ((True, False), (False, True), (True, True)):
                        for m in (257, 256):
                            what = f"{backend}/{kernel} {dtype} {m}x320x136 a_cm={a_cm} b_cm={b_cm}"
                            with self.subTest(what):
                                a, b = self.operand(m, 136, dtype, a_cm), self.operand(136, 320, dtype, b_cm)
                                if self.check_kernel_on(backend, kernel, a, b, False, TOLERANCE[dtype], what):
                                    ran.add((backend, kernel, dtype, a_cm, b_cm))
        if torch.cuda.get_device_capability()[0] == 9:
            missing = [(dtype, a_cm, b_cm) for dtype in (torch.float32, torch.bfloat16)
                       for a_cm, b_cm in ((True, False), (False, True), (True, True))
                       if ("triton", "persistent_tma", dtype, a_cm, b_cm) not in ran]
            self.assertEqual(missing, [], "persistent_tma refused column-major operands it can read")

    def test_tf32(self):
        for backend in ("cuda", "triton"):
            for kernel in cp.matmul_kernels(backend):
                what = f"{backend}/{kernel} tf32"
                with self.subTest(what):
                    a, b = self.operand(513, 129, torch.float32), self.operand(129, 256, torch.float32)
                    self.check_kernel_on(backend, kernel, a, b, True, TF32_TOLERANCE, what)

    def test_refusals_are_value_errors_and_tma_runs_where_aligned(self):
        tm = backend_module("triton")
        with self.assertRaisesRegex(ValueError, "leading stride"):
            tm.check_kernel("persistent_tma", self.operand(64, 77, torch.float16), self.operand(77, 64, torch.float16),
                            False)
        ran = self.check_kernel_on("triton", "persistent_tma", self.operand(300, 512, torch.bfloat16),
                                   self.operand(512, 264, torch.bfloat16), False, 1e-2, "persistent_tma aligned")
        self.assertTrue(ran, "persistent_tma refused 16-byte aligned operands on this GPU")

    def test_persistent_tma_every_config(self):
        """The autotuner may pick any tile of the space that fits: each one, pinned, on clipped edges
        (M, N not tile multiples) with both B layouts, every dtype; outputs poisoned, inputs unchanged.
        A tile that does not fit (128x256 fp32 exceeds shared memory) is one the autotuner skips too,
        but every dtype must run at least one tile."""
        tm = backend_module("triton")
        for dtype in DTYPES:
            ran = 0
            for config in tm.PERSISTENT_CONFIGS:
                for b_cm in (False, True):
                    a, b = self.operand(300, 520, dtype), self.operand(520, 264, dtype, b_cm)
                    what = f"persistent_tma {tm.config_text(config, dtype)} {dtype} b_cm={b_cm}"
                    with self.subTest(what):
                        tm.check_kernel("persistent_tma", a, b, False)
                        ran += self.pinned_tile_ran(
                            lambda out: tm.launch_persistent_tma(a, b, out, config, False), a, b, what)
            self.assertGreater(ran, 0, f"no persistent_tma tile fits for {dtype}")

    def test_tiled_every_config(self):
        """Each tile of the tiled kernel's space, pinned, at its own split of K and unsplit, on clipped edges
        (M, N not tile multiples, K not a multiple of BLOCK_K), every dtype; outputs poisoned, inputs unchanged."""
        tm = backend_module("triton")
        sms = torch.cuda.get_device_properties(0).multi_processor_count
        m, n, k = 300, 264, 2100
        for dtype in DTYPES:
            ran = 0
            for config in tm.TILED_CONFIGS:
                for split in dict.fromkeys((tm.split_k_for(config, m, n, k, dtype, sms), 1)):
                    a, b = self.operand(m, k, dtype), self.operand(k, n, dtype)
                    what = f"tiled {tm.config_text(config, dtype, split)} {dtype}"
                    with self.subTest(what):
                        ran += self.pinned_tile_ran(
                            lambda out: tm.launch_tiled(a, b, out, config, split, False), a, b, what)
            self.assertGreater(ran, 0, f"no tiled tile fits for {dtype}")

    def test_autotuner_picks_run_correctly(self):
        """The timed tuner (the rest of this file runs untimed): kernel="auto" on a TMA-aligned bf16 problem times
        both kernels at their tuned tiles, and an fp32 problem with odd strides tunes the tiled kernel alone;
        each pick is a tile of its space and computes the right result."""
        tm = backend_module("triton")
        with mock.patch.dict(os.environ):
            os.environ.pop("CUDA_PORTFOLIO_NO_TUNING", None)
            for (m, n, k), dtype in (((2048, 1536, 4096), torch.bfloat16), ((1000, 999, 77), torch.float32)):
                what = f"auto {m}x{n}x{k} {dtype}"
                with self.subTest(what):
                    a, b = self.operand(m, k, dtype), self.operand(k, n, dtype)
                    kernel = tm.choose_kernel(a, b, False)
                    self.run_checked(lambda out: tm.matmul(a, b, out, kernel, False), a, b, TOLERANCE[dtype], what)
                    space = tm.TILED_CONFIGS if kernel == "tiled" else tm.PERSISTENT_CONFIGS
                    splits = [tm.split_k_for(c, m, n, k, dtype, tm._num_sms(a)) if kernel == "tiled" else None
                              for c in space]
                    self.assertIn(tm.kernel_config(a, b, kernel, False),
                                  [tm.config_text(c, dtype, split) for c, split in zip(space, splits)], what)

    def test_split_k_shape(self):
        # Few output tiles, long K: the tiled kernel splits K here.
        a = self.operand(256, 16384, torch.bfloat16)
        b = self.operand(16384, 256, torch.bfloat16)
        self.check_kernel_on("triton", "tiled", a, b, False, 1e-2, "split-K 256x256x16384")

    def test_wgmma_tma_split_k_in_kernel_is_deterministic_and_graph_safe(self):
        """wgmma_tma adds the split-K slices inside the kernel, in split order whatever the order the
        blocks finish in: every run is bit-identical, also under CUDA graph replay. The tile counters
        live in a per-stream workspace zeroed once; every launch must leave them zero for the next,
        which runs a different shape (another tile count and split) on the same counters."""
        from cuda_portfolio.native import DTYPE_NAMES, native_module
        from cuda_portfolio.native.matmul import _WORKSPACES

        module = self.wgmma_tma_module()
        # All split K on a GPU with >= 128 SMs (<= 64 output tiles of 128x128). 128x2048: one tile
        # row too few 64-wide tiles for the narrow configuration (128x8192 takes it: see the test
        # below). 129x257: C rows not 16-byte aligned (direct stores; B column-major so that its
        # TMA stride stays 16-byte aligned); 129x264: TMA stores; both clipped in M and N.
        # 768 x 128*(SMs/12): the most tiles that split K (6 x 11 = 66 on 132 SMs), right after 64 tiles
        # on the same workspace: a counter region sized per launch (256 bytes, then 512) put these
        # counters on the partials the launch before left.
        widest_split = torch.cuda.get_device_properties(torch.cuda.current_device()).multi_processor_count // 12
        for m, n, k, b_column_major in (
            (1024, 1024, 16384, False),
            (768, 128 * widest_split, 8192, False),
            (128, 2048, 8192, False),
            (129, 257, 1024, True),
            (129, 264, 1024, False),
        ):
            for dtype in (torch.bfloat16, torch.float16):
                what = f"cuda/wgmma_tma split-K {dtype} {m}x{n}x{k}"
                with self.subTest(what):
                    a, b = self.operand(m, k, dtype), self.operand(k, n, dtype, column_major=b_column_major)
                    module.check_kernel("wgmma_tma", a, b, False)  # a refusal here is a failure
                    device = torch.cuda.current_device()
                    workspace = native_module().gemm_workspace_bytes("wgmma_tma", DTYPE_NAMES[dtype], m, n, k, device)
                    self.assertGreater(workspace, 0, f"{what}: K is not split on this GPU")
                    first = self.wgmma_tma_runs(module, a, b, 5, what)
                    stream = torch.cuda.current_stream().cuda_stream
                    used = next(w for w in _WORKSPACES[(device, stream)] if w.numel() >= workspace)
                    tiles = -(-m // 128) * -(-n // 128)  # split K runs 128 x 128 tiles
                    self.assertFalse(used[:4 * tiles].any().item(), f"{what}: tile counters not left at zero")
                    # With the cache off the capture's cudaMalloc fails and leaves torch's RNG state in capture
                    # mode, which failed every later test of the module under compute-sanitizer (session 37).
                    self.skip_if_caching_allocator_off("CUDA graph capture needs the caching allocator")
                    graph_out = poisoned_like(first)
                    side = torch.cuda.Stream()
                    side.wait_stream(torch.cuda.current_stream())
                    with torch.cuda.stream(side):  # warm-up outside the capture, as torch asks
                        module.matmul(a, b, graph_out, "wgmma_tma", False)
                    torch.cuda.current_stream().wait_stream(side)
                    graph = torch.cuda.CUDAGraph()
                    with torch.cuda.graph(graph):
                        module.matmul(a, b, graph_out, "wgmma_tma", False)
                    for i in range(3):
                        graph_out.fill_(float("nan"))
                        graph.replay()
                        torch.cuda.synchronize()
                        self.assertTrue(torch.equal(graph_out, first), f"{what}: graph replay {i} differs")

    def wgmma_tma_unsplit_runs(self, label, cases):
        """Each (M, N, K, A column-major, B column-major, config or None) case in bf16 and fp16: wgmma_tma
        accepts it, runs the plan the config names (None: not checked), splits no K (no workspace),
        matches float64 and gives the same bits run to run."""
        from cuda_portfolio.native import DTYPE_NAMES, native_module
        from cuda_portfolio.native.matmul import kernel_config

        module = self.wgmma_tma_module()
        device = torch.cuda.current_device()
        for m, n, k, a_cm, b_cm, want in cases:
            for dtype in (torch.bfloat16, torch.float16):
                what = f"cuda/wgmma_tma {label} {dtype} {m}x{n}x{k} a_cm={a_cm} b_cm={b_cm}"
                with self.subTest(what):
                    a, b = self.operand(m, k, dtype, a_cm), self.operand(k, n, dtype, b_cm)
                    module.check_kernel("wgmma_tma", a, b, False)  # a refusal here is a failure
                    if want is not None:
                        config = kernel_config(a, b, "wgmma_tma", False)
                        self.assertEqual(config, want, what)
                    workspace = native_module().gemm_workspace_bytes("wgmma_tma", DTYPE_NAMES[dtype], m, n, k, device)
                    self.assertEqual(workspace, 0, f"{what}: K is split")
                    self.wgmma_tma_runs(module, a, b, 2, what)

    def test_wgmma_tma_narrow_tiles_for_small_m(self):
        """M <= 128 and at least 0.9 x #SMs 64-wide tiles: wgmma_tma runs 128x64 tiles, 8 stages, no
        split K (so no workspace). Every operand layout, both epilogues (TMA stores; direct stores
        when C's rows are not 16-byte aligned), M and N clipped, both 16-bit dtypes, and the same
        bits run to run."""
        fill = 64 * torch.cuda.get_device_properties(torch.cuda.current_device()).multi_processor_count
        # One 64-wide tile per SM at N = fill. (M, N, K, A column-major, B column-major, config): a
        # column-major operand needs its stride (M or K) a multiple of 8, a row-major one its row (K or
        # N); N = fill - 5 leaves C's rows unaligned (direct stores).
        self.wgmma_tma_unsplit_runs("narrow", (
            (128, fill, 8192, False, False, None),  # the 128x8192x8192 benchmark case, at this GPU's width
            (77, fill + 8, 520, False, False, None),
            (100, fill - 5, 264, False, True, None),
            (120, fill, 512, True, False, None),
            (64, fill + 64, 136, True, True, None),
        ))

    def test_wgmma_tma_tall_tiles_when_only_b_is_off_sectors(self):
        """B's lines start off 32-byte sectors, A's on them, K not split: wgmma_tma runs 256x128 tiles
        (two 64-row wgmma tiles per consumer). Both A layouts, B row- and column-major, both
        epilogues (direct stores when C's rows are not 16-byte aligned), M and N clipped, both
        16-bit dtypes, the same bits run to run, and the plan the benchmark records."""
        # (M, N, K, A column-major, B column-major, config): A's lines (K or M long) are multiples of 16
        # elements, B's (N or K long) are not; >= 16 x 12 tiles of 128 x 256, so K is never split.
        tall = "256x128x64, 4 stages, split-K 1"
        self.wgmma_tma_unsplit_runs("tall", (
            (4096, 3000, 2048, False, False, tall),  # the benchmark's misaligned-N case
            (2000, 3000, 528, False, False, tall),   # M and N clipped (2000 = 7 x 256 + 208, 3000 = 23 x 128 + 56)
            (2000, 3064, 1000, True, True, tall),    # B column-major with 2,000-byte lines, A column-major
            (2000, 3001, 1000, True, True, tall),    # ... and C's rows unaligned: direct stores
            (1936, 3000, 512, True, False, tall),
        ))

    def test_wgmma_tma_narrower_tiles_where_wide_ones_end_on_an_idle_round(self):
        """Where 128 x 256 tiles would end on a mostly idle round (unsplit_width), wgmma_tma runs 128 x 192
        or 128 x 128 tiles, unsplit: every operand layout, both epilogues, M, N and K off their tiles,
        both 16-bit dtypes, the same bits run to run. On a 132-SM GPU (the H200 the rule was measured
        on) each shape must run the tile named here; elsewhere the plan is the GPU's own and only the
        results are checked."""
        on_h200 = torch.cuda.get_device_properties(torch.cuda.current_device()).multi_processor_count == 132
        mid = "128x192x64, 4 stages, split-K 1" if on_h200 else None
        square = "128x128x64, 6 stages, split-K 1" if on_h200 else None
        # (M, N, K, A column-major, B column-major, config); A's and B's lines on 32-byte sectors (else
        # the 256 x 128 tile is taken), C's rows 16-byte aligned but for N = 3001.
        self.wgmma_tma_unsplit_runs("narrower", (
            (3072, 3072, 320, False, False, mid),  # 288 tiles of 128 x 256: 3 rounds for 2.18
            (2304, 2304, 200, True, False, mid),   # 162: 2 rounds for 1.23; K = 3 x 64 + 8
            (2000, 3001, 128, True, True, mid),    # M, N clipped, C's rows unaligned: direct stores
            (1900, 3000, 520, False, True, mid),   # M and N clipped, K = 8 x 64 + 8
            (5100, 5120, 256, False, True, square),  # 800: 7 rounds for 6.06; 128 x 192: 9 for 8.18
            (5120, 5000, 208, True, True, square),   # N clipped, K = 3 x 64 + 16
        ))

    def test_public_api_auto_batched_forward_backward(self):
        for backend in ("auto", "cuda", "triton"):
            for dtype in DTYPES:
                for batch in ((), (3,)):
                    with self.subTest(backend=backend, dtype=dtype, batch=batch):
                        a = torch.randn(*batch, 97, 72, device="cuda").to(dtype).requires_grad_()
                        b = torch.randn(*batch, 72, 40, device="cuda").to(dtype).requires_grad_()
                        dy = torch.randn(*batch, 97, 40, device="cuda").to(dtype)
                        out = cp.matmul(a, b, backend=backend)
                        out.backward(dy)
                        a64, b64 = a.detach().double().requires_grad_(), b.detach().double().requires_grad_()
                        ref = a64 @ b64
                        ref.backward(dy.double())
                        self.assertClose(out.detach(), ref.detach().to(dtype), TOLERANCE[dtype], "forward")
                        self.assertClose(a.grad, a64.grad.to(dtype), TOLERANCE[dtype], "dA")
                        self.assertClose(b.grad, b64.grad.to(dtype), TOLERANCE[dtype], "dB")

    def test_vmap_shared_and_batched_operands(self):
        """torch.func.vmap over cp.matmul: samples against one b (one GEMM of all their rows), and a batched b."""
        for backend in ("cuda", "triton"):
            for dtype in (torch.float32, torch.bfloat16):
                a = torch.randn(6, 97, 72, device="cuda").to(dtype)
                b = torch.randn(72, 40, device="cuda").to(dtype)
                bs = torch.randn(6, 72, 40, device="cuda").to(dtype)
                with self.subTest(backend=backend, dtype=dtype, b="shared"):
                    out = torch.func.vmap(lambda r: cp.matmul(r, b, backend=backend))(a)
                    self.assertClose(out, (a.double() @ b.double()).to(dtype), TOLERANCE[dtype], "vmap, shared b")
                with self.subTest(backend=backend, dtype=dtype, b="batched"):
                    out = torch.func.vmap(lambda r, s: cp.matmul(r, s, backend=backend))(a, bs)
                    self.assertClose(out, (a.double() @ bs.double()).to(dtype), TOLERANCE[dtype], "vmap, batched b")

    def test_autocast_region_runs_in_its_dtype(self):
        """Inside torch.autocast("cuda", dtype) fp32 operands run as dtype, as torch.matmul's do; gradients come back
        fp32."""
        for backend in ("cuda", "triton"):
            for dtype in (torch.bfloat16, torch.float16):
                with self.subTest(backend=backend, dtype=dtype):
                    a = torch.randn(97, 72, device="cuda", requires_grad=True)
                    b = torch.randn(72, 40, device="cuda", requires_grad=True)
                    with torch.autocast("cuda", dtype=dtype):
                        out = cp.matmul(a, b, backend=backend)
                    self.assertEqual(out.dtype, dtype)
                    self.assertClose(out.detach(),
                                     (a.detach().to(dtype).double() @ b.detach().to(dtype).double()).to(dtype),
                                     TOLERANCE[dtype], "autocast forward")
                    out.float().sum().backward()
                    self.assertEqual((a.grad.dtype, b.grad.dtype), (torch.float32, torch.float32))

    def test_auto_backend_runs_fp32_without_tf32_on_cuda(self):
        """backend="auto": Triton, except fp32 without tf32 (CUDA's register_blocked; matmul.auto_backend)."""
        from cuda_portfolio.matmul import auto_backend
        cuda_ok, triton_ok = (cp.available_backends()[name][0] for name in ("cuda", "triton"))
        if not (cuda_ok and triton_ok):
            self.skipTest("the auto backend choice needs both backends")
        for dtype, allow_tf32, expected in ((torch.float32, False, "cuda"), (torch.float32, True, "triton"),
                                            (torch.bfloat16, False, "triton"), (torch.float16, False, "triton")):
            with self.subTest(dtype=dtype, allow_tf32=allow_tf32):
                self.assertEqual(auto_backend(self.operand(64, 64, dtype), allow_tf32), expected)

    def test_every_kernel_through_public_api_with_backward(self):
        for backend in ("cuda", "triton"):
            for kernel in cp.matmul_kernels(backend):
                with self.subTest(backend=backend, kernel=kernel):
                    dtype = torch.bfloat16 if kernel in ("mma_sync", "wgmma_tma") else torch.float32
                    a = torch.randn(256, 128, device="cuda").to(dtype).requires_grad_()
                    b = torch.randn(128, 192, device="cuda").to(dtype).requires_grad_()
                    try:
                        out = cp.matmul(a, b, backend=backend, kernel=kernel)
                    except ValueError as exc:
                        # Aligned 256x128x192 operands: only a Hopper kernel on another GPU may refuse.
                        hopper_only = kernel in ("wgmma_tma", "persistent_tma")
                        if not hopper_only or torch.cuda.get_device_capability() >= (9, 0):
                            raise
                        self.assertIn(kernel, str(exc))
                        continue
                    dy = torch.randn(256, 192, device="cuda").to(dtype)  # random: all ones would hide a dY read
                    out.backward(dy)                                      # transposed or from the wrong rows
                    self.assertClose(out.detach(), (a.double() @ b.double()).to(dtype), TOLERANCE[dtype], "forward")
                    self.assertClose(a.grad, (dy.double() @ b.double().t()).to(dtype), TOLERANCE[dtype], "dA")
                    self.assertClose(b.grad, (a.double().t() @ dy.double()).to(dtype), TOLERANCE[dtype], "dB")

    def test_torch_compile_fullgraph(self):
        a, b = self.operand(130, 64, torch.float16), self.operand(64, 72, torch.float16)
        for backend in ("cuda", "triton"):
            with self.subTest(backend=backend):
                fn = torch.compile(lambda x, y: cp.matmul(x, y, backend=backend).float().relu(), fullgraph=True)
                self.assertClose(fn(a, b), (a.double() @ b.double()).relu(), 1e-2, "compiled")

    def test_graph_capture_of_an_untuned_triton_problem_class(self):
        """cp.matmul captured in a CUDA graph before its Triton problem class was tuned (the tuner on, as users run
        it): the capture times and synchronizes nothing (the kernel by the untuned rule, its first tile that fits),
        caches no pick, and the replay matches float64; the first call outside the capture tunes the class."""
        self.skip_if_caching_allocator_off("CUDA graph capture needs the caching allocator")
        if "triton" not in self.backends:
            self.skipTest("the triton backend is unavailable")
        tm = backend_module("triton")
        a, b = self.operand(256, 512, torch.bfloat16), self.operand(512, 384, torch.bfloat16)
        reference = (a.double() @ b.double()).to(torch.bfloat16)
        cp.matmul(a, b, backend="triton")  # untuned (setUp): compiles what the capture will launch
        clear_triton_tuning()
        with mock.patch.dict(os.environ):
            os.environ.pop("CUDA_PORTFOLIO_NO_TUNING", None)
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                captured = cp.matmul(a, b, backend="triton")
            self.assertEqual((tm._TUNED, tm._CHOSEN), ({}, {}), "a pick was cached inside the capture")
            for i in range(2):
                captured.fill_(float("nan"))
                graph.replay()
                torch.cuda.synchronize()
                self.assertClose(captured, reference, TOLERANCE[torch.bfloat16], f"graph replay {i}")
            self.assertClose(cp.matmul(a, b, backend="triton"), reference, TOLERANCE[torch.bfloat16], "after")
            self.assertTrue(tm._CHOSEN and tm._TUNED, "the first call outside the capture did not tune the class")

    def test_empty_and_cpu_refusal(self):
        out = cp.matmul(torch.randn(5, 0, device="cuda"), torch.randn(0, 3, device="cuda"))
        self.assertTrue(torch.equal(out, torch.zeros(5, 3, device="cuda")))
        with self.assertRaisesRegex(ValueError, "needs a CUDA tensor"):
            cp.matmul(torch.randn(2, 2), torch.randn(2, 2), backend="cuda")
