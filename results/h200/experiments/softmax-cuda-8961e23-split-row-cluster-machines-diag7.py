"""Per machine start: the GPU's UUID, and per cell and cluster mode (tickets, the rule, forced sizes) the launch's
layout (grid) and its time back to back (graph of 32 launches, modes alternating over 5 rounds)."""
import os, statistics, sys, torch
from cuda_portfolio.bench.softmax_cases import make_softmax_case

ENV = "CUDA_PORTFOLIO_SPLIT_ROW_CLUSTER"
gen = torch.Generator(device="cuda"); gen.seed()
cur = torch.cuda.current_stream()
print("GPU", torch.cuda.get_device_properties(0).uuid, flush=True)

def graph_of(fns):
    s = torch.cuda.Stream(); s.wait_stream(cur)
    with torch.cuda.stream(s):
        for f in fns: f()
    cur.wait_stream(s); torch.cuda.synchronize()
    with torch.cuda.graph(torch.cuda.CUDAGraph(), stream=s):
        for f in fns: f()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g, stream=s):
        for f in fns: f()
    return g

def replay_ms(g, reps=15):
    ts = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record(); g.replay(); b.record(); ts.append((a, b))
    torch.cuda.synchronize()
    return statistics.median(a.elapsed_time(b) for a, b in ts)

cells = [((256, 262144), torch.bfloat16, "bwd", ["0", "rule", "4", "8", "16"]),
         ((256, 262144), torch.float32, "bwd", ["0", "rule", "8", "16"]),
         ((1024, 131072), torch.bfloat16, "bwd", ["0", "rule", "2", "4", "8"]),
         ((256, 262144), torch.float32, "fwd", ["0", "rule", "4", "8", "16"])]
for shape, dtype, direction, modes in cells:
    case = make_softmax_case(shape, dtype, direction, ["cuda"], ["split_row"], peers=False)
    p = case.providers[0]
    inputs = case.make_inputs(gen); launch = p.bind(inputs)
    graphs, desc, res = {}, {}, {}
    for m in modes:
        if m == "rule": os.environ.pop(ENV, None)
        else: os.environ[ENV] = m
        try:
            graphs[m] = graph_of([launch] * 32); desc[m] = p.describe(inputs); res[m] = []
        except Exception as e:
            print("  ", m, "refused:", str(e)[:120])
        os.environ.pop(ENV, None)
    for rnd in range(5):
        for m in (list(graphs) if rnd % 2 == 0 else list(graphs)[::-1]):
            res[m].append(replay_ms(graphs[m]) / 32 * 1e3)
    base = statistics.median(res["0"])
    print(f"== {str(dtype)[6:]} {direction} {shape[0]}x{shape[1]}", flush=True)
    for m in graphs:
        t = statistics.median(res[m])
        print(f"  {m:5s} {t:7.1f} us  tickets/this {base / t:.3f}  [{min(res[m]):.1f}-{max(res[m]):.1f}]  {desc[m]}", flush=True)
    del graphs, inputs, launch; torch.cuda.empty_cache()
