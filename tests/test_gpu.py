"""The GPU tier. Run on a machine with a CUDA GPU:

    KERNEL_REQUIRE_GPU=1 python -m unittest tests.test_gpu -v     (or: python -m pytest tests/test_gpu.py)

Without a GPU every test skips; with KERNEL_REQUIRE_GPU=1 they fail instead (tests/gpu_util.py says when else). The cases live in
tests/gpu_*_cases.py, one file per op, and are gathered here.
"""
from tests.gpu_copy_cases import *  # noqa: F401,F403
from tests.gpu_bench_cases import *  # noqa: F401,F403
from tests.gpu_softmax_cases import *  # noqa: F401,F403
from tests.gpu_matmul_cases import *  # noqa: F401,F403

if __name__ == "__main__":
    import unittest

    unittest.main()
