"""Session 42 scratch (kept with its output, -variants.txt): timing of split_row's grid layout variants (env switches), CUDA graphs of 20 launches over rotated inputs."""
import os, statistics, sys
import torch
from cuda_portfolio.softmax import _backend_module

m = _backend_module("cuda")
DT = {"fp32": torch.float32, "bf16": torch.bfloat16}
CASES = [("bf16", 8, 1 << 20, "fwd"), ("bf16", 4, 1 << 22, "fwd"), ("fp32", 4, 1 << 22, "fwd"),
         ("fp32", 4, 1 << 22, "bwd"), ("bf16", 32, 1 << 20, "fwd"), ("fp32", 8, 1 << 20, "fwd")]
MODES = [("stream", {"CUDA_PORTFOLIO_SPLIT_ROW_GRID": "0"}),
         ("held7", {"CUDA_PORTFOLIO_SPLIT_ROW_GRID": "1"}),
         ("held5", {"CUDA_PORTFOLIO_SPLIT_ROW_GRID": "1", "CUDA_PORTFOLIO_SPLIT_ROW_GRID_HELD": "5"}),
         ("held3", {"CUDA_PORTFOLIO_SPLIT_ROW_GRID": "1", "CUDA_PORTFOLIO_SPLIT_ROW_GRID_HELD": "3"}),
         ("held1", {"CUDA_PORTFOLIO_SPLIT_ROW_GRID": "1", "CUDA_PORTFOLIO_SPLIT_ROW_GRID_HELD": "1"}),
         ("held0", {"CUDA_PORTFOLIO_SPLIT_ROW_GRID": "1", "CUDA_PORTFOLIO_SPLIT_ROW_GRID_HELD": "0"}),
         ("held7-pf", {"CUDA_PORTFOLIO_SPLIT_ROW_GRID": "1", "CUDA_PORTFOLIO_SPLIT_ROW_GRID_PREFETCH": "1"}),
         ("held3-pf", {"CUDA_PORTFOLIO_SPLIT_ROW_GRID": "1", "CUDA_PORTFOLIO_SPLIT_ROW_GRID_HELD": "3",
                       "CUDA_PORTFOLIO_SPLIT_ROW_GRID_PREFETCH": "1"}),
         ("held7-noL1", {"CUDA_PORTFOLIO_SPLIT_ROW_GRID": "1", "CUDA_PORTFOLIO_SPLIT_ROW_GRID_NOL1": "1"}),
         ("held3-noL1", {"CUDA_PORTFOLIO_SPLIT_ROW_GRID": "1", "CUDA_PORTFOLIO_SPLIT_ROW_GRID_NOL1": "1",
                         "CUDA_PORTFOLIO_SPLIT_ROW_GRID_HELD": "3"}),
         ("h7-noL1-ph1", {"CUDA_PORTFOLIO_SPLIT_ROW_GRID": "1", "CUDA_PORTFOLIO_SPLIT_ROW_GRID_NOL1": "1",
                          "CUDA_PORTFOLIO_SPLIT_ROW_GRID_SKIP": "2"}),
         ("held7-nowait", {"CUDA_PORTFOLIO_SPLIT_ROW_GRID": "1", "CUDA_PORTFOLIO_SPLIT_ROW_GRID_SKIP": "1"}),
         ("held7-phase1", {"CUDA_PORTFOLIO_SPLIT_ROW_GRID": "1", "CUDA_PORTFOLIO_SPLIT_ROW_GRID_SKIP": "2"}),
         ("held3-phase1", {"CUDA_PORTFOLIO_SPLIT_ROW_GRID": "1", "CUDA_PORTFOLIO_SPLIT_ROW_GRID_SKIP": "2",
                           "CUDA_PORTFOLIO_SPLIT_ROW_GRID_HELD": "3"}),
         ("held0-phase1", {"CUDA_PORTFOLIO_SPLIT_ROW_GRID": "1", "CUDA_PORTFOLIO_SPLIT_ROW_GRID_SKIP": "2",
                           "CUDA_PORTFOLIO_SPLIT_ROW_GRID_HELD": "0"})]
KEYS = sorted({k for _, e in MODES for k in e})
copy = torch.empty(1 << 28, device="cuda", dtype=torch.uint8)
def copy_us():
    src = torch.empty(1 << 27, device="cuda", dtype=torch.uint8)
    dst = torch.empty_like(src)
    for _ in range(3): dst.copy_(src)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(20): dst.copy_(src)
    ts = []
    for _ in range(5):
        a, b = torch.cuda.Event(True), torch.cuda.Event(True)
        a.record(); g.replay(); b.record(); b.synchronize(); ts.append(a.elapsed_time(b) * 1000 / 20)
    return 2 * src.numel() / statistics.median(ts) / 1e6  # TB/s
bw = copy_us()
print(f"copy {bw:.2f} TB/s")
print("case".ljust(22) + "".join(n.rjust(13) for n, _ in MODES))
for dt, rows, cols, d in CASES:
    dtype = DT[dt]
    size = rows * cols * dtype.itemsize * (2 if d == "bwd" else 1)
    n = max(2, -(-(256 << 20) // size))
    xs = [torch.randn(rows, cols, device="cuda").to(dtype) for _ in range(n)]
    dys = [torch.randn_like(x) for x in xs] if d == "bwd" else None
    outs = [torch.empty_like(x) for x in xs]
    moved = rows * cols * dtype.itemsize * (3 if d == "bwd" else 2)
    line = f"{dt} {rows}x{cols} {d}".ljust(22)
    for name, env in MODES:
        for k in KEYS: os.environ.pop(k, None)
        os.environ.update(env)
        def launch(i):
            if d == "fwd": m.forward(xs[i % n], outs[i % n], "split_row")
            else: m.backward(xs[i % n], dys[i % n], outs[i % n], "split_row")
        try:
            for i in range(n): launch(i)
            torch.cuda.synchronize()
            desc = m.describe_launch((xs[0],) if d == "fwd" else (xs[0], dys[0]), "split_row", d)
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                for i in range(20): launch(i)
            ts = []
            for _ in range(7):
                a, b = torch.cuda.Event(True), torch.cuda.Event(True)
                a.record(); g.replay(); b.record(); b.synchronize(); ts.append(a.elapsed_time(b) * 1000 / 20)
            us = statistics.median(ts)
            line += f"{us:7.1f} {moved / us / 1e6 / bw:4.2f} "
        except Exception as e:
            line += f"{'ERR':>13}"
            print(name, repr(e)[:200], file=sys.stderr)
    print(line, flush=True)
for k in KEYS: os.environ.pop(k, None)
