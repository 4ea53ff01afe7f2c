"""The cluster mode in context: per-launch time back to back at N launches per graph replay, after another kernel
(a copy, a cuBLAS GEMM) in each pair, the benchmark's LaunchTimer choice (launches per sample) and its events mode,
and the host time per eager call. Tickets and the rule alternate in rounds on the same operands."""
import os, statistics, time, torch
from cuda_portfolio.bench.softmax_cases import make_softmax_case
from cuda_portfolio.bench.timing import LaunchTimer, TimingSettings, l2_bytes

ENV = "CUDA_PORTFOLIO_SPLIT_ROW_CLUSTER"
MODES = {"tickets": "0", "rule": None}
gen = torch.Generator(device="cuda"); gen.seed()
cur = torch.cuda.current_stream()

def set_mode(mode):
    if MODES[mode] is None: os.environ.pop(ENV, None)
    else: os.environ[ENV] = MODES[mode]

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

def replay_ms(g, reps=25):
    ts = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record(); g.replay(); b.record(); ts.append((a, b))
    torch.cuda.synchronize()
    return statistics.median(a.elapsed_time(b) for a, b in ts)

copy_src = torch.randn(16 << 20, device="cuda", generator=gen); copy_dst = torch.empty_like(copy_src)  # 64 MiB each
ga = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16, generator=gen); gb = torch.randn_like(ga); gc = torch.empty_like(ga)
preds = {"copy": lambda: torch.neg(copy_src, out=copy_dst), "gemm": lambda: torch.mm(ga, gb, out=gc)}
pred_graphs = {k: graph_of([f] * 20) for k, f in preds.items()}

for shape, dtype, direction in [((256, 262144), torch.bfloat16, "bwd"), ((256, 262144), torch.float32, "fwd"),
                                ((1024, 131072), torch.bfloat16, "bwd"), ((256, 262144), torch.float32, "bwd")]:
    case = make_softmax_case(shape, dtype, direction, ["cuda"], ["split_row"], peers=False)
    provider = case.providers[0]
    inputs = case.make_inputs(gen)
    launch = provider.bind(inputs)
    print(f"== {str(dtype)[6:]} {direction} {shape[0]}x{shape[1]} (us per softmax launch)", flush=True)
    rows = {}
    for mode in MODES:
        set_mode(mode)
        t = LaunchTimer([launch], TimingSettings(l2_bytes=l2_bytes(), rounds=3)); t.prepare()
        rows[mode] = {"timer": t, "graphs": {n: graph_of([launch] * n) for n in (1, 2, 4, 8, 32)},
                      "sandwich": {k: graph_of([f, launch] * 20) for k, f in preds.items()},
                      "events": LaunchTimer([launch], TimingSettings(l2_bytes=l2_bytes(), rounds=3, method="events")),
                      "res": {}}
        rows[mode]["events"].prepare()
        torch.cuda.synchronize(); h0 = time.perf_counter()
        for _ in range(200): launch()
        h1 = time.perf_counter(); torch.cuda.synchronize()
        rows[mode]["host_us"] = (h1 - h0) / 200 * 1e6
        os.environ.pop(ENV, None)
    for rnd in range(5):
        for mode in (MODES if rnd % 2 == 0 else list(MODES)[::-1]):
            r = rows[mode]; res = r["res"]
            res.setdefault("timer", []).append(statistics.median(r["timer"].sample(10)) * 1e3)
            for n, g in r["graphs"].items():
                res.setdefault(f"b2b N={n}", []).append(replay_ms(g) / n * 1e3)
            for k, g in r["sandwich"].items():
                res.setdefault(f"after {k}", []).append((replay_ms(g) - replay_ms(pred_graphs[k])) / 20 * 1e3)
            res.setdefault("events", []).append(statistics.median(r["events"].sample(20)) * 1e3)
    for mode in MODES:
        r = rows[mode]
        print(f"  {mode:8s} LaunchTimer: estimate {r['timer'].estimate_ms*1e3:.0f} us -> {r['timer'].launches_per_sample} "
              f"launches/sample; host per eager call {r['host_us']:.1f} us", flush=True)
    keys = list(rows["tickets"]["res"])
    print("  " + " ".join(f"{k:>12s}" for k in ["mode"] + keys))
    for mode in MODES:
        res = rows[mode]["res"]
        print("  " + " ".join([f"{mode:>12s}"] + [f"{statistics.median(res[k]):12.1f}" for k in keys]), flush=True)
    print("  " + " ".join([f"{'tick/rule':>12s}"] + [f"{statistics.median(rows['tickets']['res'][k]) / statistics.median(rows['rule']['res'][k]):12.3f}" for k in keys]), flush=True)
    for mode in MODES:
        rows[mode]["timer"].close(); rows[mode]["events"].close()
    del rows, inputs, launch; torch.cuda.empty_cache()
