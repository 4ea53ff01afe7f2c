"""Benchmarks for cuda_portfolio: timing, peers, ceilings, JSON results, table and plots.

    python -m cuda_portfolio.bench --help          (scripts/benchmark.py is the same entry point)
    python -m cuda_portfolio.bench.compare BEFORE.json AFTER.json [--repeat AGAIN.json] [--peers] [--changed]
    python -m cuda_portfolio.bench.plot results.json out.png [--rounds [--case TEXT]]
    python -m cuda_portfolio.bench.report results.json
    python -m cuda_portfolio.bench.schema results.json
    python -m cuda_portfolio.bench.targets results.json ... [--not-met] [--plot targets.png]

The package itself never imports this subpackage; importing it does not initialize CUDA.
"""

import os
import sys


def run_cli(main) -> int:
    """main()'s exit status, where a reader that stops early (`... | head`) ends the output quietly instead of
    with a BrokenPipeError traceback (the reports print whole tables at once)."""
    try:
        status = main()
        sys.stdout.flush()
        return status
    except BrokenPipeError:
        # Python flushes stdout again at exit, which would raise once more: point it at devnull.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
