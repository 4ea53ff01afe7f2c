# split_row's cluster mode at forced cluster sizes (run with softmax-cuda-47a6d9f-split-row-cluster-mode.patch applied and built):
# us per launch (CUDA events, 20 launches after 3 warm-ups), forward and backward; its output is ...-cluster-sizes.txt
import os, sys, torch
from cuda_portfolio.softmax import _backend_module
m = _backend_module("cuda")
os.environ["CUDA_PORTFOLIO_SPLIT_ROW_CLUSTER_LOG"] = "1"
def timed(f):
    for _ in range(3): f()
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize(); a.record()
    for _ in range(20): f()
    b.record(); torch.cuda.synchronize()
    return a.elapsed_time(b) / 20 * 1e3
for dtype, rows, cols in ((torch.bfloat16, 256, 262144), (torch.float32, 1024, 131072), (torch.bfloat16, 2048, 50257)):
    x = torch.randn(rows, cols, device="cuda", dtype=dtype); y = torch.empty_like(x)
    dy = torch.randn_like(x); dx = torch.empty_like(x)
    nbytes = x.numel() * x.element_size()
    for c in ["0"] + [str(i) for i in range(2, 17)]:
        os.environ["CUDA_PORTFOLIO_SPLIT_ROW_CLUSTER"] = c
        print(f"--- {dtype} {rows}x{cols} cluster={c}", file=sys.stderr, flush=True)
        tf = timed(lambda: m.forward(x, y, "split_row"))
        tb = timed(lambda: m.backward(y, dy, dx, "split_row"))
        print(f"{str(dtype)[6:]} {rows}x{cols} c={c:>2}: fwd {tf:8.1f} us {2*nbytes/tf/1e6:6.2f} TB/s   bwd {tb:8.1f} us {3*nbytes/tb/1e6:6.2f} TB/s", flush=True)
