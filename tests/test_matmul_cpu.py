"""CPU tier for matmul: the Triton kernels through the interpreter on small odd shapes, the public
API (batching, autograd, torch.compile tracing, empty dims) and its input validation."""
import unittest
import unittest.mock

import numpy as np
import torch

import cuda_portfolio as cp
from cuda_portfolio._backends import triton_interpreting
from cuda_portfolio.matmul import _matmul_op as matmul_op

needs_interpreter = unittest.skipUnless(triton_interpreting(), "needs TRITON_INTERPRET=1 (set on machines without a GPU)")

DTYPES = (torch.float32, torch.float16, torch.bfloat16)
# Against the float64 product rounded to the output dtype (rel_error), as tests/gpu_matmul_cases.py holds the GPU
# to (fp16 5e-4, bf16 2e-3). bf16 stays at 1e-2 here: Triton 3.6's interpreter truncates fp32 -> bf16 (1 + 2^-8 +
# 2^-10 stores as 1.0, the GPU's cvt.rn as 1 + 2^-7), which reads 3-6e-3 from the rounded product.
TOLERANCE = {torch.float32: 1e-5, torch.float16: 5e-4, torch.bfloat16: 1e-2}
SHAPES = ((1, 1, 1), (3, 5, 7), (33, 47, 65), (17, 1, 9))  # (M, N, K)


def rel_error(out: torch.Tensor, ref: torch.Tensor) -> float:
    """||out - ref|| / ||ref||, ref rounded to out's dtype first (the rounding a correct kernel cannot avoid)."""
    ref = ref.to(out.dtype).double()
    return float((out.double() - ref).norm() / ref.norm().clamp_min(1e-300))


def operand(rows: int, cols: int, dtype: torch.dtype, column_major: bool = False) -> torch.Tensor:
    """Fresh random (rows, cols) operand, optionally stored column-major (a transposed view)."""
    if column_major:
        return torch.randn(cols, rows).to(dtype).t()
    return torch.randn(rows, cols).to(dtype)


@needs_interpreter
class TritonMatmulKernelTest(unittest.TestCase):
    """Each Triton kernel on its own (out poisoned with NaN first, inputs checked unchanged)."""

    def setUp(self):
        from cuda_portfolio.triton_kernels import matmul as triton_matmul

        self.tm = triton_matmul
        torch.manual_seed(int.from_bytes(np.random.bytes(4), "little"))

    def run_kernel(self, kernel, a, b, run=None):
        before_a, before_b = a.clone(), b.clone()
        out = torch.full((a.shape[0], b.shape[1]), float("nan"), dtype=a.dtype)
        (run or (lambda: self.tm.matmul(a, b, out, kernel, False)))()
        self.assertTrue(torch.equal(a, before_a) and torch.equal(b, before_b), "input modified")
        self.assertFalse(bool(out.isnan().any()), "unwritten (NaN) outputs")
        return out

    def test_tiled_odd_shapes_dtypes_layouts(self):
        for dtype in DTYPES:
            for m, n, k in SHAPES:
                for a_cm in (False, True):
                    for b_cm in (False, True):
                        with self.subTest(dtype=dtype, shape=(m, n, k), a_column_major=a_cm, b_column_major=b_cm):
                            a, b = operand(m, k, dtype, a_cm), operand(k, n, dtype, b_cm)
                            out = self.run_kernel("tiled", a, b)
                            self.assertLessEqual(rel_error(out, a.double() @ b.double()), TOLERANCE[dtype])

    def test_tiled_every_config_and_split_k(self):
        a, b = operand(70, 300, torch.float16), operand(300, 40, torch.float16, column_major=True)
        ref = a.double() @ b.double()
        for config in self.tm.TILED_CONFIGS:
            for split in (1, 3):
                with self.subTest(config=config, split=split):
                    out = torch.full((70, 40), float("nan"), dtype=torch.float16)
                    self.tm.launch_tiled(a, b, out, config, split, False)
                    self.assertLessEqual(rel_error(out, ref), 1e-2)

    def test_split_k_matches_unsplit(self):
        a, b = operand(20, 700, torch.float32), operand(700, 30, torch.float32)
        ref = a.double() @ b.double()
        for split in (1, 2, 5):
            out = torch.full((20, 30), float("nan"))
            self.tm.launch_tiled(a, b, out, self.tm.TILED_CONFIGS[-1], split, False)
            self.assertLessEqual(rel_error(out, ref), 1e-5, f"split {split}")

    def test_operand_without_unit_stride_is_copied(self):
        a = torch.randn(9, 14)[:, ::2]  # strides (14, 2)
        b = torch.randn(7, 5)
        out = self.run_kernel("tiled", a, b)
        self.assertLessEqual(rel_error(out, a.double() @ b.double()), 1e-5)

    def test_persistent_tma_aligned_shapes(self):
        # The interpreter runs host-side tensor descriptors (bounds-checked block loads and stores).
        for dtype in DTYPES:
            for a_cm in (False, True):
                for b_cm in (False, True):
                    with self.subTest(dtype=dtype, a_column_major=a_cm, b_column_major=b_cm):
                        a, b = operand(40, 200, dtype, a_cm), operand(200, 24, dtype, b_cm)
                        out = self.run_kernel("persistent_tma", a, b)
                        self.assertLessEqual(rel_error(out, a.double() @ b.double()), TOLERANCE[dtype])

    def test_persistent_tma_refuses_unaligned_operands(self):
        cases = {"leading stride": (torch.randn(8, 7), torch.randn(7, 8)),
                 "output's row stride": (torch.randn(8, 8), torch.randn(5, 8).t()),
                 "no unit-stride dim": (torch.randn(8, 16)[:, ::2], torch.randn(8, 8)),
                 "data pointer": (torch.randn(8 * 8 + 1)[1:].view(8, 8), torch.randn(8, 8))}
        for why, (a, b) in cases.items():
            with self.subTest(why=why), self.assertRaisesRegex(ValueError, f"persistent_tma.*{why}"):
                self.tm.check_kernel("persistent_tma", a, b, False)

    def test_check_kernel_unknown_name(self):
        with self.assertRaisesRegex(ValueError, r"unknown triton matmul kernel 'nope'.*'tiled', 'persistent_tma'"):
            self.tm.check_kernel("nope", torch.randn(2, 2), torch.randn(2, 2), False)

    def test_tile_pickers_skip_configs_that_do_not_fit(self):
        """Autotuning and its untimed form (CUDA_PORTFOLIO_NO_TUNING=1) both pass over a tile that
        raises OutOfResources; the untimed one takes the first that fits, the timed one the lowest
        median over interleaved rounds (a clock drifting during tuning moves every candidate alike,
        and one slow launch does not flip the pick)."""
        import triton

        from cuda_portfolio.triton_kernels import tuning

        tm = self.tm
        configs = tm.TILED_CONFIGS[:3]
        too_big = triton.runtime.errors.OutOfResources(300000, 232448, "shared memory")
        launched, runs = [], {}

        def launcher(config):
            def run():
                launched.append(config)
                if config is configs[0]:
                    raise too_big
            runs[run] = config
            return run

        self.assertIs(tuning.first_that_fits(configs, launcher, "tile"), configs[1])
        self.assertEqual(launched, [configs[0], configs[1]])
        # Per round: configs[1] is faster in one round only, configs[2] has one slow launch.
        rounds = {configs[1]: [[2.0, 2.0], [2.0, 2.0], [0.5, 0.5]], configs[2]: [[1.0, 1.0], [1.0, 9.0], [1.0, 1.0]]}
        timed = []

        def cold_launch_ms(launch, flush):
            config = runs[launch]
            timed.append(config)
            return rounds[config][sum(c is config for c in timed) - 1]

        with unittest.mock.patch.object(tuning, "cold_launch_ms", cold_launch_ms), \
                unittest.mock.patch.object(tuning, "l2_flush_buffer", lambda device: None):
            self.assertIs(tuning.fastest(configs, launcher, "cuda:0", "tile"), configs[2])
        self.assertEqual(timed, [configs[1], configs[2]] * tuning.TUNE_ROUNDS)

    def test_kernel_config_names_the_pick_of_the_problem_class(self):
        """What the benchmark records: None until the class is tuned (and under the interpreter,
        which never tunes), then the picked tile and split as text, for every shape of the class."""
        tm = self.tm
        a, b = torch.randn(100, 200, dtype=torch.bfloat16), torch.randn(200, 300, dtype=torch.bfloat16)
        self.run_kernel("tiled", a, b)
        self.assertIsNone(tm.kernel_config(a, b, "tiled", False))
        config = tm.TileConfig(128, 64, 128, 8, 4, 8)
        with unittest.mock.patch.dict(tm._TUNED, {tm._problem_class("tiled", a, b, False): config}), \
                unittest.mock.patch.object(tm, "_num_sms", lambda t: 132):
            same_class = torch.randn(120, 248, dtype=torch.bfloat16), torch.randn(248, 292, dtype=torch.bfloat16)
            for a_, b_ in ((a, b), same_class):
                with self.subTest(a=tuple(a_.shape), b=tuple(b_.shape)):
                    self.assertEqual(tm.kernel_config(a_, b_, "tiled", False),
                                     "128x64x64, 4 warps, 8 stages, group 8, split-K 1")
            # Another kernel, dtype or operand layout is another class, tuned on its own.
            self.assertIsNone(tm.kernel_config(a, b, "persistent_tma", False))
            self.assertIsNone(tm.kernel_config(a.float(), b.float(), "tiled", False))
            self.assertIsNone(tm.kernel_config(a.t().contiguous().t(), b, "tiled", False))

    def test_choose_kernel_on_cpu_is_tiled(self):
        self.assertEqual(self.tm.choose_kernel(torch.randn(4, 8), torch.randn(8, 8), False), "tiled")


@needs_interpreter
class MatmulApiTest(unittest.TestCase):
    """cp.matmul through the Triton backend under the interpreter."""

    def test_2d_every_kernel_and_dtype(self):
        for kernel in ("auto",) + tuple(cp.matmul_kernels("triton")):
            for dtype in DTYPES:
                with self.subTest(kernel=kernel, dtype=dtype):
                    a, b = operand(33, 64, dtype), operand(64, 16, dtype, column_major=True)
                    out = cp.matmul(a, b, backend="triton", kernel=kernel)
                    self.assertEqual(out.dtype, dtype)
                    self.assertLessEqual(rel_error(out, a.double() @ b.double()), TOLERANCE[dtype])

    def test_batched(self):
        a, b = torch.randn(3, 5, 7), torch.randn(3, 9, 7).transpose(1, 2)
        out = cp.matmul(a, b, backend="triton")
        self.assertEqual(out.shape, (3, 5, 9))
        self.assertLessEqual(rel_error(out, a.double() @ b.double()), 1e-5)

    def test_autograd_matches_float64(self):
        for shape in ((5, 7, 3), (2, 6, 4, 9)):  # (M, K, N) and (B, M, K, N)
            *batch, m, k, n = shape
            a = torch.randn(*batch, m, k, requires_grad=True)
            b = torch.randn(*batch, k, n, requires_grad=True)
            dy = torch.randn(*batch, m, n)
            cp.matmul(a, b, backend="triton").backward(dy)
            a64, b64 = a.detach().double().requires_grad_(), b.detach().double().requires_grad_()
            (a64 @ b64).backward(dy.double())
            self.assertLessEqual(rel_error(a.grad, a64.grad), 1e-5, f"dA {shape}")
            self.assertLessEqual(rel_error(b.grad, b64.grad), 1e-5, f"dB {shape}")

    def test_double_backward_matches_float64(self):
        """Second order: the backward is the op itself (dA = dY·Bᵀ, dB = Aᵀ·dY), so the gradients of
        <dA, v> + <dB, u> with respect to a, b and the upstream w run our kernels again."""
        a, b, w = (torch.randn(*shape, requires_grad=True) for shape in ((5, 7), (7, 3), (5, 3)))
        v, u = torch.randn(5, 7), torch.randn(7, 3)
        ga, gb = torch.autograd.grad((cp.matmul(a, b, backend="triton") * w).sum(), [a, b], create_graph=True)
        second = torch.autograd.grad((ga * v).sum() + (gb * u).sum(), [a, b, w])
        a64, b64, w64 = (t.detach().double().requires_grad_() for t in (a, b, w))
        ga64, gb64 = torch.autograd.grad(((a64 @ b64) * w64).sum(), [a64, b64], create_graph=True)
        ref = torch.autograd.grad((ga64 * v.double()).sum() + (gb64 * u.double()).sum(), [a64, b64, w64])
        for name, out, expected in zip("abw", second, ref):
            self.assertLessEqual(rel_error(out, expected), 1e-5, f"second order, {name}")

    @unittest.skipUnless(hasattr(matmul_op, "register_vmap"), "torch < 2.5: custom ops have no register_vmap")
    def test_vmap_samples_against_one_b_are_one_gemm(self):
        """torch.func.vmap: samples of a against a shared b run as the rows of one launch; batched b (either side,
        or logical 3-D operands) joins the op's batch dim, a launch per slice. Values against float64."""
        from cuda_portfolio.triton_kernels import matmul as triton_matmul
        real, launches = triton_matmul.matmul, []

        def counted(a, b, out, *args):
            launches.append((tuple(a.shape), tuple(b.shape)))
            return real(a, b, out, *args)

        a, b, bs = torch.randn(4, 5, 6), torch.randn(6, 3), torch.randn(4, 6, 3)
        a3, b3 = torch.randn(2, 4, 5, 6), torch.randn(4, 6, 3)
        # case: (function, operands, in_dims, the launches' row counts, float64 reference)
        cases = {"shared b": (lambda r: cp.matmul(r, b, backend="triton"), (a,), 0, [20], a.double() @ b.double()),
                 "batch dim 1": (lambda r: cp.matmul(r, b, backend="triton"), (a.transpose(0, 1),), 1, [20],
                                 a.double() @ b.double()),
                 "both batched": (lambda r, s: cp.matmul(r, s, backend="triton"), (a, bs), 0, [5] * 4,
                                  a.double() @ bs.double()),
                 "shared a": (lambda s: cp.matmul(a[0], s, backend="triton"), (bs,), 0, [5] * 4,
                              a[0].double() @ bs.double()),
                 "3-D samples": (lambda r: cp.matmul(r, b3, backend="triton"), (a3,), 0, [5] * 8,
                                 a3.double() @ b3.double())}
        for label, (fn, args, in_dims, rows, ref) in cases.items():
            with self.subTest(case=label):
                launches.clear()
                with unittest.mock.patch.object(triton_matmul, "matmul", counted):
                    out = torch.func.vmap(fn, in_dims=in_dims)(*args)
                self.assertEqual([shape_a[0] for shape_a, _ in launches], rows)
                self.assertLessEqual(rel_error(out, ref), 1e-5)

    def test_autocast_region_runs_in_its_dtype_like_torch_matmul(self):
        a = torch.randn(9, 16, requires_grad=True)
        b = torch.randn(16, 5).half().requires_grad_()   # mixed dtypes: autocast casts both, as torch.matmul does
        with torch.autocast("cpu", dtype=torch.bfloat16):
            out = cp.matmul(a, b, backend="triton")
            self.assertEqual(out.dtype, torch.matmul(a, b).dtype)
        self.assertEqual(out.dtype, torch.bfloat16)
        self.assertTrue(torch.equal(out, cp.matmul(a.detach().bfloat16(), b.detach().bfloat16(), backend="triton")))
        out.float().sum().backward()
        self.assertEqual((a.grad.dtype, b.grad.dtype), (torch.float32, torch.float16))
        self.assertEqual(cp.matmul(a, a.t(), backend="triton").dtype, torch.float32)  # outside the region: as given
        with self.assertRaisesRegex(TypeError, "a and b must have the same dtype"):
            cp.matmul(a, b, backend="triton")

    def test_gradient_of_sum_has_stride_zero_and_still_works(self):
        a, b = torch.randn(4, 6, requires_grad=True), torch.randn(6, 3, requires_grad=True)
        cp.matmul(a, b, backend="triton").sum().backward()
        self.assertLessEqual(rel_error(a.grad, torch.ones(4, 3, dtype=torch.float64) @ b.detach().double().t()), 1e-5)

    def test_torch_compile_fullgraph_traces_the_op(self):
        a, b = torch.randn(9, 5), torch.randn(5, 4)
        fn = torch.compile(lambda x, y: cp.matmul(x, y, backend="triton") * 2, fullgraph=True, backend="aot_eager")
        self.assertLessEqual(rel_error(fn(a, b), 2 * (a.double() @ b.double())), 1e-5)

    def test_empty_dims_like_torch(self):
        for m, k, n in ((0, 4, 3), (4, 0, 3), (4, 3, 0)):
            out = cp.matmul(torch.randn(m, k), torch.randn(k, n), backend="triton")
            self.assertTrue(torch.equal(out, torch.zeros(m, n)))

    def test_kernel_that_cannot_run_the_operands_raises(self):
        with self.assertRaisesRegex(ValueError, "persistent_tma.*leading stride"):
            cp.matmul(torch.randn(8, 7), torch.randn(7, 8), backend="triton", kernel="persistent_tma")


class MatmulValidationTest(unittest.TestCase):
    def test_non_tensor(self):
        with self.assertRaisesRegex(TypeError, "b must be a torch.Tensor"):
            cp.matmul(torch.randn(2, 2), [[1.0]])

    def test_unsupported_dtype_lists_supported(self):
        with self.assertRaisesRegex(TypeError, r"unsupported dtype torch.int32.*float32, torch.float16, torch.bfloat16"):
            cp.matmul(torch.ones(2, 2, dtype=torch.int32), torch.ones(2, 2, dtype=torch.int32))

    def test_mixed_dtypes_name_both(self):
        with self.assertRaisesRegex(TypeError, "a torch.float32 and b torch.float16"):
            cp.matmul(torch.randn(2, 2), torch.randn(2, 2).half())

    def test_inner_dimension_mismatch_names_both_shapes(self):
        with self.assertRaisesRegex(ValueError, r"inner dimensions differ: a \(2, 3\).*b \(4, 5\)"):
            cp.matmul(torch.randn(2, 3), torch.randn(4, 5))

    def test_wrong_ndim(self):
        with self.assertRaisesRegex(ValueError, r"2-D .* or 3-D"):
            cp.matmul(torch.randn(3), torch.randn(3, 2))
        with self.assertRaisesRegex(ValueError, r"2-D .* or 3-D"):
            cp.matmul(torch.randn(2, 3, 4), torch.randn(4, 5))

    def test_batch_mismatch(self):
        with self.assertRaisesRegex(ValueError, r"batch sizes differ"):
            cp.matmul(torch.randn(2, 3, 4), torch.randn(3, 4, 5))

    def test_cpu_tensor_for_cuda_backend(self):
        with self.assertRaisesRegex(ValueError, "backend='cuda' needs a CUDA tensor, got a tensor on cpu"):
            cp.matmul(torch.randn(2, 2), torch.randn(2, 2), backend="cuda")

    def test_unknown_backend(self):
        with self.assertRaisesRegex(ValueError, "unknown backend 'cublas'"):
            cp.matmul(torch.randn(2, 2), torch.randn(2, 2), backend="cublas")

    @needs_interpreter
    def test_unknown_kernel_lists_the_backends_kernels(self):
        with self.assertRaisesRegex(ValueError, r"unknown kernel 'fast'.*'tiled', 'persistent_tma'"):
            cp.matmul(torch.randn(2, 2), torch.randn(2, 2), backend="triton", kernel="fast")

    def test_matmul_kernels_contents(self):
        self.assertEqual(cp.matmul_kernels("triton"), ["tiled", "persistent_tma"])
        self.assertEqual(cp.matmul_kernels("cuda")[:4], ["naive", "smem_tiled", "register_blocked", "mma_sync"])
        with self.assertRaisesRegex(ValueError, "unknown backend 'cublas'; choose one of cuda, triton"):
            cp.matmul_kernels("cublas")

    def test_kernel_of_the_wrong_type(self):
        with self.assertRaisesRegex(TypeError, r"matmul: kernel must be a str \('auto' or a name from "
                                               r"matmul_kernels\(backend\)\), got None of type NoneType"):
            cp.matmul(torch.randn(2, 2), torch.randn(2, 2), kernel=None)
