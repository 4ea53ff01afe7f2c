#!/usr/bin/env python3
"""Time the Triton GEMM kernels at every tile config, beside cuBLAS: what the autotuner picks from.

    python scripts/sweep_triton_matmul_configs.py --shapes 128x8192x8192,1024x1024x16384 \
        --json results/local/triton-matmul-configs.json

For each shape and dtype: cuBLAS (torch.matmul), then each Triton kernel at every config of its
autotune space and at the candidates below (the tiled kernel at split_k_for's split and unsplit).
The config the autotuner picks for the shape (one matmul call, then kernel_config) is marked. Each
point is timed as the benchmark times a provider, over its rotation of input copies
(input_copies_for; _common.launch_time_us). Its output is NaN-poisoned, then checked against float64
torch, and its inputs are checked unchanged. A config that does not fit the GPU is listed as such. For looking at
configs, not for the README: the benchmark (python -m cuda_portfolio.bench) measures against peers.
"""
from __future__ import annotations

import argparse
import json
import math
import os

import torch

import _common as common

# Tiles tried beside the autotune spaces: cuBLAS's 128x64 / 8-stage tile at M <= 128
# (docs/perf-log.md), and deeper or narrower variants of the spaces' tiles. The first and third
# joined PERSISTENT_CONFIGS after this sweep's first run (e7a4213); for the tiled kernel all four are new.
CANDIDATES = ((128, 64, 128, 8, 4, 8), (128, 64, 128, 8, 4, 6), (64, 128, 128, 8, 4, 6), (128, 128, 128, 8, 8, 5))


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--shapes", default="128x8192x8192,1024x1024x16384,4000x3000x2000", help="MxNxK, comma-separated")
    p.add_argument("--dtype", default="bf16,fp16", help="comma-separated dtypes (default bf16,fp16)")
    p.add_argument("--samples", type=int, default=5, help="timed samples per config, one round (default 5)")
    p.add_argument("--json", default=None, help="records file, rewritten after every shape and dtype")
    return p.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    common.exit_without_gpu("sweep_triton_matmul_configs.py")
    import triton

    from cuda_portfolio.bench.case import relative_error
    from cuda_portfolio.bench.timing import input_copies_for, l2_bytes
    from cuda_portfolio.triton_kernels import matmul as tm

    l2, sms = l2_bytes(), torch.cuda.get_device_properties(0).multi_processor_count
    candidates = tuple(tm.TileConfig(*c) for c in CANDIDATES)
    records = []
    for shape_text in args.shapes.split(","):
        m, n, k = common.parse_shape(shape_text, "matmul")
        for dtype_text in args.dtype.split(","):
            dtype = common.parse_dtype(dtype_text)
            copies = input_copies_for((m * k + k * n + m * n) * dtype.itemsize, l2)
            inputs = [(torch.randn(m, k, device="cuda").to(dtype), torch.randn(k, n, device="cuda").to(dtype))
                      for _ in range(copies)]
            kept = tuple(t.clone() for t in inputs[-1])
            want = inputs[-1][0].double() @ inputs[-1][1].double()
            out = torch.empty(m, n, device="cuda", dtype=dtype)
            cublas_us = common.launch_time_us(lambda i: torch.matmul(*inputs[i], out=out), copies, args.samples)
            print(f"{shape_text} {dtype_text}: cuBLAS {cublas_us:.1f} us", flush=True)
            for kernel in ("tiled", "persistent_tma"):
                a, b = inputs[-1]
                try:
                    tm.check_kernel(kernel, a, b, False)
                except ValueError as exc:
                    print(f"  {kernel}: refused: {exc}")
                    continue
                tm.matmul(a, b, out, kernel, False)  # the autotuner picks for this shape's class
                picked = tm.kernel_config(a, b, kernel, False)
                space = tm.TILED_CONFIGS if kernel == "tiled" else tm.PERSISTENT_CONFIGS
                for config in dict.fromkeys(space + candidates):
                    if kernel == "tiled":
                        split = tm.split_k_for(config, m, n, k, dtype, sms)
                        variants = [(s, lambda i, c=config, s=s: tm.launch_tiled(*inputs[i], out, c, s, False))
                                    for s in dict.fromkeys((split, 1))]
                    else:
                        variants = [(None, lambda i, c=config: tm.launch_persistent_tma(*inputs[i], out, c, False))]
                    for split, launch in variants:
                        text = tm.config_text(config, dtype, split)
                        rec = {"shape": [m, n, k], "dtype": dtype_text, "kernel": kernel, "config": text,
                               "in_autotune_space": config in space, "autotuner_pick": text == picked,
                               "cublas_us": cublas_us}
                        try:
                            us = common.launch_time_us(launch, copies, args.samples)
                        except triton.runtime.errors.OutOfResources as exc:
                            rec.update(status="does not fit", reason=str(exc))
                            records.append(rec)
                            print(f"  {kernel:<14} {text:<48} does not fit")
                            continue
                        out.fill_(float("nan"))
                        launch(copies - 1)
                        torch.cuda.synchronize()
                        err, problem = relative_error(out, want)
                        ok = not problem and err <= common.TOLERANCE["matmul"][dtype] and all(
                            torch.equal(x, y) for x, y in zip(kept, inputs[-1]))
                        rec.update(status="ok" if ok else "WRONG", us=us, tflop_per_s=2 * m * n * k / us / 1e6,
                                   vs_cublas=cublas_us / us, rel_err=err if math.isfinite(err) else None)
                        records.append(rec)
                        print(f"  {kernel:<14} {text:<48} {us:8.1f} us  x{cublas_us / us:.2f} cuBLAS"
                              f"{'  <- autotuner' if rec['autotuner_pick'] else ''}{'' if ok else '  WRONG'}", flush=True)
            if args.json:  # after every case: a run cut short still leaves what it measured
                with open(common.with_folder(args.json), "w") as f:
                    json.dump({"gpu": torch.cuda.get_device_name(0), "torch": torch.__version__,
                               "triton": triton.__version__, "commit": os.environ.get("CUDA_PORTFOLIO_GIT_COMMIT"),
                               "args": vars(args), "records": records}, f, indent=1)
    return 0 if all(r["status"] != "WRONG" for r in records) else 1


if __name__ == "__main__":
    raise SystemExit(main())
