"""GPU tier: the copy op in both backends (imported by tests/test_gpu.py)."""
import torch

import cuda_portfolio as cp
from tests.gpu_util import GpuTestCase, poison_free_blocks_like


class CopyGpuTest(GpuTestCase):
    SHAPES = [(1,), (7,), (4097,), (37, 1000), (3, 5, 1025), (1, (1 << 22) + 3)]

    def test_copy_matches_input_every_backend_dtype_shape(self):
        for backend in ("cuda", "triton"):
            for dtype in (torch.float32, torch.float16, torch.bfloat16):
                for shape in self.SHAPES:
                    with self.subTest(backend=backend, dtype=dtype, shape=shape):
                        x = torch.randn(shape, device="cuda").to(dtype)
                        before = x.clone()
                        poison_free_blocks_like(x)
                        y = cp.copy(x, backend=backend)
                        torch.cuda.synchronize()
                        self.assertTrue(torch.equal(x, before), "input modified")
                        self.assertTrue(torch.equal(y, x), f"copy differs (seed {self.seed})")

    def test_copy_non_contiguous_and_offset_inputs(self):
        base = torch.randn(64, 130, device="cuda")
        views = {"column slice": base[:, 1:129], "transposed": base.t(), "storage offset 1": base.view(-1)[1:4097],
                 "every other row": base[::2]}
        for backend in ("cuda", "triton"):
            for label, x in views.items():
                with self.subTest(backend=backend, view=label):
                    poison_free_blocks_like(x)
                    y = cp.copy(x, backend=backend)
                    self.assertTrue(torch.equal(y, x))
                    self.assertTrue(y.is_contiguous())

    def test_copy_runs_on_current_stream(self):
        s = torch.cuda.Stream()
        x = torch.randn(1 << 20, device="cuda")
        torch.cuda.synchronize()  # x is written on the default stream; the copy reads it on s
        for backend in ("cuda", "triton"):
            with self.subTest(backend=backend), torch.cuda.stream(s):
                y = cp.copy(x, backend=backend)
                s.synchronize()
                self.assertTrue(torch.equal(y, x))

    def test_cpu_tensor_for_cuda_backend_is_refused(self):
        with self.assertRaisesRegex(ValueError, "needs a CUDA tensor"):
            cp.copy(torch.randn(4), backend="cuda")
