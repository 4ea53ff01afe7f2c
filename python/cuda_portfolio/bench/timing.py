"""Timing one provider: CUDA-graph replay by default, CUDA events of single launches as the fallback.

Graph path: after a warm-up (Triton compile and autotune, torch.compile, cuBLAS heuristics all
happen here, outside anything timed), N launches are captured into one CUDAGraph, cycling over
`k` copies of the inputs; a sample is one replay timed with events, divided by N. N makes a replay
last about sample_target_ms, counted from replays of a probe graph of k launches. k is chosen so
that k copies cover >= 2x L2 (at most MAX_INPUT_COPIES: working sets under 2x L2 / 64, about 1.9 MiB
on the H200, are covered less), so every launch finds its inputs evicted from L2 by the launches
before it. No launch overhead is timed.

Events path (PYTORCH_NO_CUDA_MEMORY_CACHING=1, where capture is impossible, or a capture that
failed): a sample is one launch between two events, after an L2 flush (writing a buffer of
2x L2) and a short GPU spin that keeps the GPU busy while the host enqueues the launch, so host
latency stays out of the measured interval.
"""
from __future__ import annotations

import contextlib
import math
import os
import statistics
from dataclasses import dataclass
from typing import Callable

import torch

Launch = Callable[[], torch.Tensor]

NO_CACHING_ENV = "PYTORCH_NO_CUDA_MEMORY_CACHING"
# ~0.5 ms at H200 clocks: longer than the host needs to enqueue a launch (events path only).
HOST_LATENCY_SPIN_CYCLES = 1_000_000
MAX_INPUT_COPIES = 64
MAX_LAUNCHES_PER_GRAPH = 1000
PROBE_REPLAYS = 3  # replays of the probe graph that sets launches per sample (LaunchTimer._probe_estimate_ms)


@dataclass
class TimingSettings:
    rounds: int = 5                 # interleaved rounds over all providers of a case
    samples_per_round: int = 10     # samples per provider per round (fewer for slow launches)
    sample_target_ms: float = 2.0   # a graph replay lasts about this long (launches per sample)
    round_budget_ms: float = 400.0  # caps samples per round for slow launches (at least 2)
    method: str = "graph"           # "graph" or "events"
    method_reason: str = ""         # why events, when events
    l2_bytes: int = 64 << 20


def default_method() -> tuple[str, str]:
    """('graph', '') or ('events', why) for this process."""
    if os.environ.get(NO_CACHING_ENV, "0") == "1":
        return "events", f"{NO_CACHING_ENV}=1 (CUDA graph capture needs the caching allocator)"
    return "graph", ""


def l2_bytes(device=None) -> int:
    props = torch.cuda.get_device_properties(device if device is not None else torch.cuda.current_device())
    return int(getattr(props, "L2_cache_size", 0) or (128 << 20))


def input_copies_for(working_set_bytes: int, l2: int) -> int:
    """Copies of the inputs to rotate through so consecutive launches start with a cold L2."""
    return max(1, min(MAX_INPUT_COPIES, math.ceil(2 * l2 / max(1, working_set_bytes))))


def summarize(samples_ms: list[float]) -> dict:
    """median, min, max, quartiles and IQR of per-launch times in milliseconds."""
    ordered = sorted(samples_ms)
    if len(ordered) >= 2:
        q1, _, q3 = statistics.quantiles(ordered, n=4, method="inclusive")
    else:
        q1 = q3 = ordered[0]
    return {"median": statistics.median(ordered), "min": ordered[0], "max": ordered[-1], "q1": q1, "q3": q3,
            "iqr": q3 - q1, "samples": len(ordered)}


def first_line(exc: BaseException, limit: int = 300) -> str:
    text = f"{type(exc).__name__}: {exc}".strip().splitlines()[0]
    return text[:limit]


@contextlib.contextmanager
def capture(graph: torch.cuda.CUDAGraph, stream: torch.cuda.Stream):
    """torch.cuda.graph(graph, stream=stream), which, when the capture fails, also undoes what torch leaves behind.

    A capture that the CUDA runtime invalidated (a provider's call that capture does not allow) fails in torch's
    capture_end before it tells the caching allocator the capture is over, and the graph never releases a pool it did
    not finish: the allocator then counts a capture underway for the rest of the process, and while one is underway
    empty_cache and the retry after a failed cudaMalloc free no cached block. One failed capture (Liger's first
    backward) made the vocab preset's reserved memory grow by each later case's working set until an 80 GiB H100
    ran out (perf log, "Session 70"). torch.cuda.graph also leaves `stream` current then (and everything after ran
    on it); the stream current before is restored here.
    """
    pool = torch.cuda.graph_pool_handle()  # ours, so it can be named when the capture fails
    previous = torch.cuda.current_stream()
    try:
        with torch.cuda.graph(graph, pool=pool, stream=stream):
            yield
    except BaseException:
        torch.cuda.set_stream(previous)
        device = torch.cuda.current_device()
        try:
            torch._C._cuda_endAllocateToPool(device, pool)
        except RuntimeError:  # capture_end got past that point: the graph releases its pool itself
            pass
        else:
            torch._C._cuda_releasePool(device, pool)
        raise


class LaunchTimer:
    """Times `launches` (one zero-argument callable per input copy, each returning its output)."""

    def __init__(self, launches: list[Launch], settings: TimingSettings):
        self.launches = launches
        self.settings = settings
        self.method, self.method_reason = settings.method, settings.method_reason
        self.launches_per_sample = 1
        self.estimate_ms = 0.0
        self._graph = None
        self._flush = None
        self._output, self._output_copy = None, 0
        self._next_copy = 0

    def prepare(self) -> None:
        """Warm up (raises what the provider raises), estimate the launch time, capture if graph."""
        warm = torch.cuda.Stream()
        warm.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(warm):  # capture-safe warm-up, as torch.cuda.graphs recommends
            for launch in self.launches:
                launch()
        torch.cuda.current_stream().wait_stream(warm)
        torch.cuda.synchronize()
        if self.method == "graph":  # the estimate from a probe graph (_capture)
            try:
                self._capture(warm)
            except Exception as exc:  # a provider that syncs, allocates outside the pool, ...
                self._graph = None
                torch.cuda.synchronize()
                self.method, self.method_reason = "events", f"graph capture failed: {first_line(exc)}"
        if self.method == "events":
            self.estimate_ms = statistics.median(self._time_single(launch) for launch in self.launches[:3])
            self._flush = torch.empty(2 * self.settings.l2_bytes, dtype=torch.uint8, device="cuda")
            self.launches_per_sample = 1

    def _time_single(self, launch: Launch) -> float:
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        launch()
        end.record()
        end.synchronize()
        return start.elapsed_time(end)

    def _capture(self, stream: torch.cuda.Stream) -> None:
        copies = len(self.launches)
        # Captured on the warm-up stream: the native per-stream workspaces (the CUDA GEMM's split-K
        # counters, the split_row softmax's; zeroed once) exist from the eager warm-up, so the timed
        # graph reuses them without a memset node (one first made during a capture is not kept:
        # native/_workspace.py). A throwaway capture first: other state a provider creates on its first
        # call in a capture lands in that graph, not in the probe or the timed one.
        with capture(torch.cuda.CUDAGraph(), stream):
            for launch in self.launches:
                launch()
        self.estimate_ms = self._probe_estimate_ms(stream)
        wanted = math.ceil(self.settings.sample_target_ms / max(self.estimate_ms, 1e-4))
        per_sample = min(MAX_LAUNCHES_PER_GRAPH, max(copies, wanted))
        per_sample = math.ceil(per_sample / copies) * copies
        graph = torch.cuda.CUDAGraph()
        with capture(graph, stream):
            for i in range(per_sample):
                output = self.launches[i % copies]()
        self._graph, self.launches_per_sample = graph, per_sample
        self._output, self._output_copy = output, (per_sample - 1) % copies

    def _probe_estimate_ms(self, stream: torch.cuda.Stream) -> float:
        """The launch time that sets launches per sample, from replays of a graph of one launch per copy.

        An eager estimate (the events path's, in prepare) also counts the host's enqueue and a provider's
        first call on this stream: the split_row softmax zeroes a workspace per stream, and its first launch
        on the timing stream read 528 us where its launches take 116 (session 36). From that, 4 launches per
        sample instead of 18, and each replay's fixed cost charged to 4 launches: +8% for that provider alone.
        """
        probe = torch.cuda.CUDAGraph()
        with capture(probe, stream):
            for launch in self.launches:
                launch()
        probe.replay()  # warm: the graph's first upload
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(PROBE_REPLAYS):
            probe.replay()
        end.record()
        end.synchronize()
        return start.elapsed_time(end) / (PROBE_REPLAYS * len(self.launches))

    def samples_this_round(self) -> int:
        """--samples, fewer when they would take more than round_budget_ms, never fewer than 2."""
        per_sample_ms = max(self.estimate_ms * self.launches_per_sample, 1e-6)
        return max(2, min(self.settings.samples_per_round, int(self.settings.round_budget_ms / per_sample_ms)))

    def sample(self, count: int) -> list[float]:
        """`count` samples of the time of one launch, in milliseconds."""
        pairs = []
        for _ in range(count):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            if self._graph is not None:
                start.record()
                self._graph.replay()
                end.record()
            else:
                copy = self._next_copy
                self._next_copy = (copy + 1) % len(self.launches)
                self._flush.fill_(1)  # evict L2: written, not timed
                spin = getattr(torch.cuda, "_sleep", None)
                if spin is not None:
                    spin(HOST_LATENCY_SPIN_CYCLES)
                start.record()
                output = self.launches[copy]()
                end.record()
                self._output, self._output_copy = output, copy
            pairs.append((start, end))
        torch.cuda.synchronize()
        return [s.elapsed_time(e) / self.launches_per_sample for s, e in pairs]

    def last_output(self) -> tuple[torch.Tensor, int]:
        """The output of the last timed launch and the index of the input copy it read."""
        return self._output, self._output_copy

    def close(self) -> None:
        self._graph = self._flush = self._output = None


def device_copy_ceiling(settings: TimingSettings, nbytes: int = 1 << 30) -> dict:
    """Device-to-device streaming bandwidth (bytes read + written), the bound for softmax.

    The copy is an SM-driven elementwise kernel (dst = -src). Not Tensor.copy_: inside a CUDA
    graph that becomes a memcpy node served by the copy engines, ~35% slower on H200 than the
    kernel a softmax competes with (2.8 vs 4.3 TB/s measured). A small `nbytes` rotates over
    buffer pairs covering 2x L2, as the cases' inputs do, so the ceiling is never cache-hot.
    """
    generator = torch.Generator(device="cuda")
    generator.seed()
    elements = nbytes // 4
    moved = 2 * elements * 4  # bytes read + written by one copy
    pairs = []
    for _ in range(input_copies_for(moved, settings.l2_bytes)):
        src = torch.empty(elements, dtype=torch.float32, device="cuda").uniform_(generator=generator)
        pairs.append((src, torch.empty_like(src)))

    def negate_into_dst(src: torch.Tensor, dst: torch.Tensor) -> Launch:
        return lambda: torch.neg(src, out=dst)

    timer = LaunchTimer([negate_into_dst(src, dst) for src, dst in pairs], settings)
    timer.prepare()
    samples = []
    for _ in range(settings.rounds):
        samples += timer.sample(timer.samples_this_round())
    ok = all(bool(torch.equal(dst, -src)) for src, dst in pairs)
    method, reason = timer.method, timer.method_reason
    timer.close()
    stats = summarize(samples)
    return {"kernel": "torch.neg(src, out=dst), float32", "bytes": moved, "time_ms": stats,
            "tb_per_s": moved / (stats["median"] * 1e-3) / 1e12, "method": method, "method_reason": reason,
            "buffer_pairs": len(pairs), "status": "ok" if ok else "WRONG"}
