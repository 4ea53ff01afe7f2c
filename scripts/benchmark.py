#!/usr/bin/env python3
"""Benchmark cuda_portfolio against peers and ceilings: the same entry point as
`python -m cuda_portfolio.bench` (see --help and results/README.md)."""
import sys

from cuda_portfolio.bench.cli import main

if __name__ == "__main__":
    sys.exit(main(prog="scripts/benchmark.py"))
