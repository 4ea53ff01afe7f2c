"""run_case against a bare LaunchTimer on the same provider, fresh process, per-sample times (cluster patch)."""
import os, statistics, torch
from cuda_portfolio.bench.softmax_cases import make_softmax_case
from cuda_portfolio.bench.runner import run_case
from cuda_portfolio.bench.timing import LaunchTimer, TimingSettings, l2_bytes

ENV = "CUDA_PORTFOLIO_SPLIT_ROW_CLUSTER"
settings = TimingSettings(l2_bytes=l2_bytes(), rounds=3)
log = []
class Logged(LaunchTimer):
    def sample(self, count):
        s = super().sample(count); log.append((self.launches_per_sample, self.estimate_ms, s)); return s
us = lambda xs: " ".join(f"{x*1e3:.0f}" for x in xs)
for dtype in (torch.bfloat16, torch.float32):
    def bench(tag, mode=None):
        os.environ.pop(ENV, None)
        if mode is not None: os.environ[ENV] = mode
        log.clear()
        case = make_softmax_case((256, 262144), dtype, "bwd", ["cuda"], ["split_row"], peers=False)
        r = run_case(case, settings, {}, timer_factory=Logged)[0]
        print(dtype, tag, f"run_case {r['time_ms']['median']*1e3:.1f} us; per sample launches {log[0][0]} estimate {log[0][1]:.3f} ms:",
              " | ".join(us(s) for _, _, s in log), flush=True)
        os.environ.pop(ENV, None)
    bench("rule 1st")
    bench("tickets")
    gen = torch.Generator(device="cuda"); gen.seed()
    case = make_softmax_case((256, 262144), dtype, "bwd", ["cuda"], ["split_row"], peers=False)
    inputs = case.make_inputs(gen)
    t = LaunchTimer([case.providers[0].bind(inputs)], settings); t.prepare()
    print(dtype, "bare timer on the provider's bind, inputs kept alive:", t.launches_per_sample, f"{t.estimate_ms:.3f}",
          " | ".join(us(t.sample(10)) for _ in range(3)), flush=True)
    bench("rule while the bare timer's inputs live")
    print(dtype, "bare timer again:", " | ".join(us(t.sample(10)) for _ in range(3)), flush=True)
    t.close(); del inputs, t; torch.cuda.empty_cache()
    bench("rule after")
