"""Why does the benchmark time the cluster mode ~12% slower than the sweep and ncu? One process, one build:
the same launches timed by scripts/_common.launch_times_us with inputs made as the benchmark makes them or as the
sweep does, output allocated per launch (the benchmark's bind) or one fixed buffer (the sweep's), mode by the rule
or off; then the benchmark's run_case on the same cell with and without peers."""
import os, sys, statistics, functools
sys.path.insert(0, "scripts")
import torch
import _common as common
from cuda_portfolio.native import softmax as ns
from cuda_portfolio.bench.softmax_cases import make_softmax_case
from cuda_portfolio.bench.runner import run_case
from cuda_portfolio.bench.timing import TimingSettings, default_method, l2_bytes

ENV = "CUDA_PORTFOLIO_SPLIT_ROW_CLUSTER"
l2 = l2_bytes()
for dtype, direction in [(torch.bfloat16, "bwd"), (torch.float32, "fwd")]:
    rows, cols = 256, 262144
    gen = torch.Generator(device="cuda"); gen.manual_seed(1)
    case = make_softmax_case((rows, cols), dtype, direction, ["cuda"], ["split_row"])
    bench_in = case.make_inputs(gen)
    bench_ops = bench_in[:1] if direction == "fwd" else bench_in[1:]
    sw = common.SoftmaxSweepCase(rows, cols, dtype, direction, l2)
    sweep_ops = sw.inputs[0][:1] if direction == "fwd" else sw.inputs[0]
    fixed = torch.empty(rows, cols, device="cuda", dtype=dtype)

    def make(ops, alloc, mode):
        def call(i):
            if mode is None:
                os.environ.pop(ENV, None)
            else:
                os.environ[ENV] = mode
            out = torch.empty_like(ops[0]) if alloc else fixed
            if direction == "fwd":
                ns.forward(ops[0], out, "split_row")
            else:
                ns.backward(ops[0], ops[1], out, "split_row")
            return out
        return call
    calls = {f"{src}-{'alloc' if alloc else 'fixed'}-{mode or 'rule'}": make(ops, alloc, mode)
             for src, ops in [("bench", bench_ops), ("sweep", sweep_ops)] for alloc in (True, False)
             for mode in (None, "0")}
    times = common.launch_times_us(calls, 1, 5, 3)
    os.environ.pop(ENV, None)
    for name, us in times.items():
        print(f"{dtype} {direction} {name:>20} {us:8.2f} us")
    del bench_in, bench_ops, sw, sweep_ops, fixed
    torch.cuda.empty_cache()
    method, reason = default_method()
    settings = TimingSettings(method=method, method_reason=reason, l2_bytes=l2, rounds=3)
    for peers in (False, True, False):
        for mode in (None, "0"):
            if mode is None:
                os.environ.pop(ENV, None)
            else:
                os.environ[ENV] = mode
            case = make_softmax_case((rows, cols), dtype, direction, ["cuda"], ["split_row"], peers=peers)
            recs = run_case(case, settings, {})
            r = [r for r in recs if r["provider"] == "cuda"][0]
            print(f"{dtype} {direction} run_case peers={peers} mode={mode or 'rule'}: {r['time_ms']['median']*1e3:8.2f} us"
                  f" rounds {[round(x*1e3,1) for x in r['time_ms']['round_medians']]} {r.get('config')}")
            os.environ.pop(ENV, None)
            torch.cuda.empty_cache()
