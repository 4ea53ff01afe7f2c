"""Scratch buffers for native launches that need their scratch zero at launch and leave it zero
(the split-K GEMM's tile counters, csrc/gemm/gemm.h; the split_row softmax's counters and partials,
csrc/softmax/softmax.h), so that no launch pays a memset.

Each user keeps its own pools (a dict passed in): one user's launches may leave bytes behind that
another's contract needs zero (the GEMM leaves its partial tiles), so they must not share buffers.
Within a user, one pool per (device, stream): launches on one stream run in order and share it; each
stream gets its own (torch hands out streams from a small pool, so the buffers stay few). Buffers are
zeroed once when made and never freed, because a captured CUDA graph keeps the address it was
captured with. Such a graph must therefore not be replayed on another stream at the same time as
launches on the stream it was captured on: the two would share counters.

A buffer first made during a CUDA graph capture is zeroed by a memset node of that graph, so its
zeros exist only once the graph is replayed; it is not pooled (a launch outside the graph could get
it before then), only returned for the captured launch. Warm up outside the capture (as torch asks)
and the capture uses the pooled buffer, without a memset node.
"""
from __future__ import annotations

import torch

Pools = dict[tuple[int, int], list[torch.Tensor]]


def _capturing(device: int) -> bool:
    with torch.cuda.device(device):
        return torch.cuda.is_current_stream_capturing()


def zeroed_workspace(pools: Pools, nbytes: int, device: int, stream: int) -> torch.Tensor:
    """A zero-initialised uint8 scratch buffer of at least nbytes for launches on `stream` of `device`,
    from `pools` (made and pooled if none is big enough, unless a capture is under way)."""
    for buffer in pools.get((device, stream), []):
        if buffer.numel() >= nbytes:
            return buffer
    buffer = torch.zeros(nbytes, dtype=torch.uint8, device=f"cuda:{device}")
    if not _capturing(device):
        pools.setdefault((device, stream), []).append(buffer)
    return buffer
