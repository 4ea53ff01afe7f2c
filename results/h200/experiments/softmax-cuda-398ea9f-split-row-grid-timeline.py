"""Session 42 scratch (kept with its output, -timeline.txt): per-block %globaltimer stamps of split_row's grid layout (CUDA_PORTFOLIO_SPLIT_ROW_GRID_SKIP=3 writes
them over each block's first 32 output bytes): phase 1, the wait at the exchange, phase 2."""
import os, re, statistics
import torch
from cuda_portfolio.softmax import _backend_module

m = _backend_module("cuda")
os.environ["CUDA_PORTFOLIO_SPLIT_ROW_GRID"] = "1"
DT = {"fp32": torch.float32, "bf16": torch.bfloat16}
for dt, rows, cols, d in [("bf16", 8, 1 << 20, "fwd"), ("fp32", 4, 1 << 22, "fwd"), ("fp32", 4, 1 << 22, "bwd"),
                          ("bf16", 32, 1 << 20, "fwd")]:
    dtype = DT[dt]
    xs = [torch.randn(rows, cols, device="cuda").to(dtype) for _ in range(4)]
    dy = torch.randn_like(xs[0])
    out = torch.empty_like(xs[0])
    ops = (xs[0],) if d == "fwd" else (xs[0], dy)
    desc = m.describe_launch(ops, "split_row", d)
    grid, chunk = map(int, re.search(r"(\d+) blocks of (\d+) elements", desc).groups())
    def launch(x):
        if d == "fwd": m.forward(x, out, "split_row")
        else: m.backward(x, dy, out, "split_row")
    for held in ("7", "0"):
        os.environ["CUDA_PORTFOLIO_SPLIT_ROW_GRID_HELD"] = held
        os.environ.pop("CUDA_PORTFOLIO_SPLIT_ROW_GRID_SKIP", None)
        for i in range(6): launch(xs[i % 4])
        os.environ["CUDA_PORTFOLIO_SPLIT_ROW_GRID_SKIP"] = "3"
        for i in range(3): launch(xs[i % 4])
        torch.cuda.synchronize()
        raw = out.view(-1).view(torch.uint8)
        st = []
        for b in range(grid):
            o = b * chunk * dtype.itemsize
            st.append(raw[o:o + 32].clone().view(torch.int64).tolist())
        t0 = min(s[0] for s in st)
        def q(v): v = sorted(v); return f"{v[0]/1e3:6.2f} {v[len(v)//2]/1e3:6.2f} {v[-1]/1e3:6.2f}"
        print(f"{dt} {rows}x{cols} {d} held {held}: total {(max(s[3] for s in st) - t0)/1e3:6.2f} us | "
              f"start {q([s[0]-t0 for s in st])} | phase1 {q([s[1]-s[0] for s in st])} | "
              f"wait {q([s[2]-s[1] for s in st])} | phase2 {q([s[3]-s[2] for s in st])} | "
              f"phase1 end {q([s[1]-t0 for s in st])}", flush=True)
    os.environ.pop("CUDA_PORTFOLIO_SPLIT_ROW_GRID_SKIP", None)
    os.environ.pop("CUDA_PORTFOLIO_SPLIT_ROW_GRID_HELD", None)
