"""Run-time configuration choice for the Triton kernels (matmul's tiles and, under "auto", its kernel; softmax's
warps and block_per_row's forward load hint): each candidate is timed on the caller's own tensors and the fastest is
kept by the caller, per problem class.

Candidates are timed in interleaved rounds, so a clock that drifts during tuning (the benchmark's per-round medians
show the H200 shifting ~10% between rounds, cuBLAS included) moves every candidate alike instead of favouring the
ones timed first; each launch starts with a cold L2, as the benchmark's rotated inputs do. The L2 is emptied by
*reading* a buffer twice its size: triton's do_bench zeroes one, which leaves the L2 full of dirty lines that the
timed kernel then pays to write back. CUDA_PORTFOLIO_NO_TUNING=1 turns timing off (matmul then takes the first tile
that fits and its kernel by a rule, softmax its table's configuration): for runs whose timing means nothing, as under
compute-sanitizer.
"""
from __future__ import annotations

import os
import statistics

import torch
import triton

TUNE_ROUNDS = 3
TUNE_LAUNCHES_PER_ROUND = 7


def tuning_off() -> bool:
    return os.environ.get("CUDA_PORTFOLIO_NO_TUNING") == "1"


def l2_flush_buffer(device: torch.device) -> torch.Tensor:
    """Twice the L2, allocated for one tuning and then released (its contents are never used)."""
    l2_bytes = torch.cuda.get_device_properties(device).L2_cache_size
    return torch.empty(max(2 * l2_bytes, 1 << 20) // 4, dtype=torch.int32, device=device)


def cold_launch_ms(launch, flush: torch.Tensor) -> list[float]:
    """Milliseconds of TUNE_LAUNCHES_PER_ROUND launches of launch(), each after reading `flush` (clears the L2)."""
    events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
              for _ in range(TUNE_LAUNCHES_PER_ROUND)]
    for start, end in events:
        flush.sum()
        start.record()
        launch()
        end.record()
    torch.cuda.synchronize(flush.device)
    return [start.elapsed_time(end) for start, end in events]


def fastest(configs, launcher, device: torch.device, what: str):
    """The config whose launcher(config)() has the lowest median time, skipping those that do not fit."""
    launches = {}
    for config in configs:
        try:
            launch = launcher(config)
            launch()  # compiles it (raises if the config does not fit) and warms the clocks
            launches[config] = launch
        except triton.runtime.errors.OutOfResources:
            continue  # this config does not fit the GPU's shared memory or registers
    if not launches:
        raise RuntimeError(f"no {what} fits this GPU's shared memory or registers")
    samples = {config: [] for config in launches}
    flush = l2_flush_buffer(device)
    for _ in range(TUNE_ROUNDS):
        for config, launch in launches.items():
            samples[config] += cold_launch_ms(launch, flush)
    return min(samples, key=lambda config: statistics.median(samples[config]))


def first_that_fits(configs, launcher, what: str):
    for config in configs:
        try:
            launcher(config)()  # compiles and launches it: raises if the config does not fit
            return config
        except triton.runtime.errors.OutOfResources:
            continue
    raise RuntimeError(f"no {what} fits this GPU's shared memory or registers")
