"""Why the timed choice picked clusters where the benchmark finds them slower: per cell, the choice's own protocol
(1 launch of each to warm, then 3 tickets, 3 clusters, 3 tickets, 3 clusters, events, after 0.3 s idle) repeated
8 times, against graphs of 32 launches back to back (modes alternating over 5 rounds), both on one operand set."""
import os, statistics, time, torch
from cuda_portfolio.bench.softmax_cases import make_softmax_case

ENV = "CUDA_PORTFOLIO_SPLIT_ROW_CLUSTER"
gen = torch.Generator(device="cuda"); gen.seed()
cur = torch.cuda.current_stream()
print("GPU", torch.cuda.get_device_properties(0).uuid, flush=True)

def mode(m):
    os.environ[ENV] = m

def graph_of(fn, n):
    s = torch.cuda.Stream(); s.wait_stream(cur)
    with torch.cuda.stream(s):
        for _ in range(n): fn()
    cur.wait_stream(s); torch.cuda.synchronize()
    with torch.cuda.graph(torch.cuda.CUDAGraph(), stream=s):
        for _ in range(n): fn()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g, stream=s):
        for _ in range(n): fn()
    return g

def replay_ms(g, reps=15):
    ts = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record(); g.replay(); b.record(); ts.append((a, b))
    torch.cuda.synchronize()
    return statistics.median(a.elapsed_time(b) for a, b in ts)

def choice_protocol(launch, size):
    """The patch's time_cluster_faster, from Python: returns per-turn us per launch [T, C, T, C]."""
    time.sleep(0.3)
    mode("0"); launch(); mode(size); launch()
    ev = [torch.cuda.Event(enable_timing=True) for _ in range(5)]
    ev[0].record()
    for turn in range(4):
        mode("0" if turn % 2 == 0 else size)
        for _ in range(3): launch()
        ev[turn + 1].record()
    torch.cuda.synchronize()
    return [ev[t].elapsed_time(ev[t + 1]) / 3 * 1e3 for t in range(4)]

cells = [((1024, 131072), torch.float32, "bwd", "8"),
         ((256, 262144), torch.float32, "bwd", "16"),
         ((256, 262144), torch.bfloat16, "bwd", "8"),
         ((1024, 131072), torch.float32, "fwd", "4")]
for shape, dtype, direction, size in cells:
    case = make_softmax_case(shape, dtype, direction, ["cuda"], ["split_row"], peers=False)
    p = case.providers[0]
    inputs = case.make_inputs(gen); launch = p.bind(inputs)
    print(f"== {str(dtype)[6:]} {direction} {shape[0]}x{shape[1]}  clusters of {size}  t={time.time():.2f}", flush=True)
    for m in ("0", size):
        mode(m); launch(); print(f"  {m:>3s}: {p.describe(inputs)}")
    ratios = []
    for trial in range(8):
        t = choice_protocol(launch, size)
        ratios.append((t[0] + t[2]) / (t[1] + t[3]))
        print(f"  choice trial {trial}: T {t[0]:.1f} C {t[1]:.1f} T {t[2]:.1f} C {t[3]:.1f}  tickets/clusters {ratios[-1]:.3f}", flush=True)
    graphs = {}
    for m in ("0", size):
        mode(m); graphs[m] = graph_of(launch, 32)
    res = {m: [] for m in graphs}
    print(f"  graphs start t={time.time():.2f}", flush=True)
    for rnd in range(5):
        for m in (list(graphs) if rnd % 2 == 0 else list(graphs)[::-1]):
            res[m].append(replay_ms(graphs[m]) / 32 * 1e3)
    tk, cl = statistics.median(res["0"]), statistics.median(res[size])
    print(f"  graphs: tickets {tk:.1f} [{min(res['0']):.1f}-{max(res['0']):.1f}]  clusters {cl:.1f} "
          f"[{min(res[size]):.1f}-{max(res[size]):.1f}]  tickets/clusters {tk / cl:.3f}  t={time.time():.2f}", flush=True)
    print(f"  choice protocol tickets/clusters: median {statistics.median(ratios):.3f} range {min(ratios):.3f}-{max(ratios):.3f}")
    del graphs, inputs, launch; torch.cuda.empty_cache()
