"""CPU tier: the end-to-end example trains like its PyTorch twin (Triton kernels under the
interpreter; on a GPU the script runs as it is, results/h200/gpu-tier.txt has its H200 runs)."""
import importlib.util
import unittest
from pathlib import Path

from cuda_portfolio._backends import triton_interpreting

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "train_classifier.py"


def load_example():
    spec = importlib.util.spec_from_file_location("train_classifier", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@unittest.skipUnless(triton_interpreting(), "needs TRITON_INTERPRET=1 (set on machines without a GPU)")
class TrainClassifierExampleTest(unittest.TestCase):
    def test_trains_like_torch_fp32_and_bf16(self):
        example = load_example()
        for dtype in ("fp32", "bf16"):
            with self.subTest(dtype=dtype):
                rc = example.main(["--device", "cpu", "--tiny", "--steps", "8", "--backend", "triton",
                                   "--dtype", dtype, "--lr", "0.1"])
                self.assertEqual(rc, 0)
