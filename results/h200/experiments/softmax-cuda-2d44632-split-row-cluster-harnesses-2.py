"""Is the cluster kernel slower when replayed for longer (clocks/power) or after itself? Per-sample times of one
graph-replay timer (LaunchTimer, ~20 launches per sample), in sequences, with nvidia-smi logging clocks beside."""
import os, sys, time, statistics
import torch
from cuda_portfolio.native import softmax as ns
from cuda_portfolio.bench.timing import LaunchTimer, TimingSettings, l2_bytes

ENV = "CUDA_PORTFOLIO_SPLIT_ROW_CLUSTER"
settings = TimingSettings(l2_bytes=l2_bytes())
for dtype, direction in [(torch.bfloat16, "bwd"), (torch.float32, "bwd")]:
    rows, cols = 256, 262144
    y = torch.softmax(torch.randn(rows, cols, device="cuda") * 3, -1).to(dtype)
    dy = torch.randn(rows, cols, device="cuda").to(dtype)
    def make(mode):
        def call():
            if mode is None: os.environ.pop(ENV, None)
            else: os.environ[ENV] = mode
            dx = torch.empty_like(y); ns.backward(y, dy, dx, "split_row"); return dx
        return call
    timers = {"rule": LaunchTimer([make(None)], settings), "tickets": LaunchTimer([make("0")], settings)}
    for t in timers.values(): t.prepare()
    os.environ.pop(ENV, None)
    us = lambda xs: " ".join(f"{x*1e3:.0f}" for x in xs)
    tag = f"{dtype} {direction} launches/sample {timers['rule'].launches_per_sample}"
    print(tag, "A rule x40 at", f"{time.time():.3f}", us(timers["rule"].sample(40)), flush=True)
    print(tag, "B tickets x40 at", f"{time.time():.3f}", us(timers["tickets"].sample(40)), flush=True)
    print(tag, "B' rule x40 at", f"{time.time():.3f}", us(timers["rule"].sample(40)), flush=True)
    alt = []
    for _ in range(20):
        alt += timers["rule"].sample(1) + timers["tickets"].sample(1)
    print(tag, "C alternating rule,tickets x20:", us(alt), flush=True)
    gaps = []
    for _ in range(20):
        gaps += timers["rule"].sample(1); time.sleep(0.005)
    print(tag, "D rule, 5 ms idle between:", us(gaps), flush=True)
    print(tag, "E rule x5 then tickets x5, x4:", end=" ")
    for _ in range(4):
        print("[", us(timers["rule"].sample(5)), "|", us(timers["tickets"].sample(5)), "]", end=" ")
    print(flush=True)
    for t in timers.values(): t.close()
    del y, dy; torch.cuda.empty_cache()
