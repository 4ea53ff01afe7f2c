#!/usr/bin/env python3
"""Time one GEMM kernel with each operand row- and column-major, beside cuBLAS at the same layouts.

    python scripts/sweep_matmul_layouts.py --shapes 4096x3000x2048,4096x3072x2048 --kernel wgmma_tma

Row-major A (M, K) has rows of K elements, column-major A rows of M; B likewise with N and K. So the
four layouts of one shape move the same bytes, but from rows that start on different byte offsets
(a row of 3000 bf16 is 6,000 bytes: an odd multiple of 16). Each point is timed as the benchmark
times a provider, over its rotation of input copies (_common.launch_time_us); our output is
checked against float64 torch. For looking at alignment, not for the README: the benchmark
(python -m cuda_portfolio.bench) measures against peers with an A/A control.
"""
from __future__ import annotations

import argparse
import json
import math
import os

import torch

import _common as common


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--shapes", default="4096x3000x2048,4096x3072x2048,4000x3000x2000", help="MxNxK, comma-separated")
    p.add_argument("--backend", default="cuda", choices=common.BACKENDS)
    p.add_argument("--kernel", default="wgmma_tma", help="a kernel of --backend (default wgmma_tma, a CUDA kernel)")
    p.add_argument("--dtype", default="bf16", help="one dtype (default bf16)")
    p.add_argument("--samples", type=int, default=7, help="timed samples per point, one round (default 7)")
    p.add_argument("--json", default=None, help="records file")
    return p.parse_args(argv)


def operand(rows: int, cols: int, dtype: torch.dtype, layout: str) -> torch.Tensor:
    if layout == "row":
        return torch.randn(rows, cols, device="cuda").to(dtype)
    return torch.randn(cols, rows, device="cuda").to(dtype).t()


def main(argv=None) -> int:
    args = parse_args(argv)
    common.exit_without_gpu("sweep_matmul_layouts.py")
    import cuda_portfolio as cp
    from cuda_portfolio.bench.case import relative_error
    from cuda_portfolio.bench.timing import input_copies_for, l2_bytes

    dtype = common.parse_dtype(args.dtype)
    l2 = l2_bytes()
    records = []
    for shape_text in args.shapes.split(","):
        m, n, k = common.parse_shape(shape_text, "matmul")
        copies = input_copies_for((m * k + k * n + m * n) * dtype.itemsize, l2)
        for a_layout in ("row", "col"):
            for b_layout in ("row", "col"):
                inputs = [(operand(m, k, dtype, a_layout), operand(k, n, dtype, b_layout)) for _ in range(copies)]
                out = torch.empty(m, n, device="cuda", dtype=dtype)
                ours = common.launch_time_us(
                    lambda i: cp.matmul(*inputs[i], backend=args.backend, kernel=args.kernel), copies, args.samples)
                cublas = common.launch_time_us(lambda i: torch.matmul(*inputs[i], out=out), copies, args.samples)
                err, problem = relative_error(cp.matmul(*inputs[0], backend=args.backend, kernel=args.kernel),
                                              inputs[0][0].double() @ inputs[0][1].double())
                ok = not problem and err <= common.TOLERANCE["matmul"][dtype]
                records.append({"shape": [m, n, k], "a": a_layout, "b": b_layout, "us": ours, "cublas_us": cublas,
                                "vs_cublas": cublas / ours, "rel_err": err if math.isfinite(err) else None, "status": "ok" if ok else "WRONG"})
                print(f"{shape_text} A {a_layout} B {b_layout}: {args.kernel} {ours:7.1f} us  cuBLAS {cublas:7.1f} us"
                      f"  x{cublas / ours:.2f}{'' if ok else '  WRONG'}", flush=True)
    if args.json:
        with open(common.with_folder(args.json), "w") as f:
            json.dump({"gpu": torch.cuda.get_device_name(0), "commit": os.environ.get("CUDA_PORTFOLIO_GIT_COMMIT"),
                       "args": vars(args), "records": records}, f, indent=1)
    return 0 if all(r["status"] == "ok" for r in records) else 1


if __name__ == "__main__":
    raise SystemExit(main())
