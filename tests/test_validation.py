"""CPU tier: bad input gets a clear Python exception naming the problem."""
import unittest

import torch

import cuda_portfolio as cp
from cuda_portfolio._backends import triton_interpreting


class CopyValidationTest(unittest.TestCase):
    def test_integer_dtype_is_refused_with_supported_list(self):
        with self.assertRaisesRegex(TypeError, r"unsupported dtype torch.int32.*float32, torch.float16, torch.bfloat16"):
            cp.copy(torch.arange(5, dtype=torch.int32))

    def test_float64_is_refused(self):
        with self.assertRaisesRegex(TypeError, "unsupported dtype torch.float64"):
            cp.copy(torch.randn(3, dtype=torch.float64))

    def test_non_tensor_is_refused(self):
        with self.assertRaisesRegex(TypeError, "must be a torch.Tensor"):
            cp.copy([1.0, 2.0])

    def test_unknown_backend(self):
        with self.assertRaisesRegex(ValueError, "unknown backend 'cudnn'"):
            cp.copy(torch.randn(3), backend="cudnn")

    def test_cpu_tensor_for_cuda_backend(self):
        with self.assertRaisesRegex(ValueError, "backend='cuda' needs a CUDA tensor, got a tensor on cpu"):
            cp.copy(torch.randn(3), backend="cuda")

    @unittest.skipIf(triton_interpreting(), "TRITON_INTERPRET=1 accepts CPU tensors")
    def test_cpu_tensor_without_interpreter(self):
        with self.assertRaisesRegex(ValueError, "TRITON_INTERPRET=1"):
            cp.copy(torch.randn(3), backend="auto")
