"""Benchmarks for cuda_portfolio: timing, peers, ceilings, JSON results, table and plots.

    python -m cuda_portfolio.bench --help          (scripts/benchmark.py is the same entry point)
    python -m cuda_portfolio.bench.plot results.json out.png
    python -m cuda_portfolio.bench.report results.json
    python -m cuda_portfolio.bench.schema results.json

The package itself never imports this subpackage; importing it does not initialize CUDA.
"""
