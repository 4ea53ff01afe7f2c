"""In one process, interleaved: split_row's ticket mode and cluster rule, each on several operand sets, beside a
copy kernel of the same bytes. Answers: is the cluster mode's gain real on the same operands in the same rounds,
does a kernel's time move with its operand set (placement), and does it drift with the whole GPU (the copy)?"""
import os, statistics, sys, torch
from cuda_portfolio.bench.softmax_cases import make_softmax_case
from cuda_portfolio.bench.runner import rotated_rounds
from cuda_portfolio.bench.timing import LaunchTimer, TimingSettings, l2_bytes, input_copies_for

ENV = "CUDA_PORTFOLIO_SPLIT_ROW_CLUSTER"
SETS = int(os.environ.get("SETS", "3"))
ROUNDS = int(os.environ.get("ROUNDS", "12"))
settings = TimingSettings(l2_bytes=l2_bytes(), rounds=ROUNDS)
gen = torch.Generator(device="cuda"); gen.seed()
cells = [(torch.bfloat16, "bwd"), (torch.float32, "bwd"), (torch.bfloat16, "fwd"), (torch.float32, "fwd")]
shape = tuple(int(v) for v in os.environ.get("SHAPE", "256x262144").split("x"))
for dtype, direction in cells:
    case = make_softmax_case(shape, dtype, direction, ["cuda"], ["split_row"], peers=False)
    provider = case.providers[0]
    n = input_copies_for(case.working_set_bytes, settings.l2_bytes)
    timers = []
    for s in range(SETS):
        copies = [case.make_inputs(gen) for _ in range(n)]
        for mode in ("tickets", "rule"):
            if mode == "tickets": os.environ[ENV] = "0"
            else: os.environ.pop(ENV, None)
            t = LaunchTimer([provider.bind(c) for c in copies], settings); t.prepare()
            desc = provider.describe(copies[0]) if provider.describe else None
            timers.append((f"{mode}#{s}", t, [], desc))
        os.environ.pop(ENV, None)
    # the copy: the same bytes as the softmax moves (half read, half written)
    src = torch.randn(case.bytes // 2 // 4, device="cuda", generator=gen); dst = torch.empty_like(src)
    t = LaunchTimer([lambda: torch.neg(src, out=dst)], settings); t.prepare()
    timers.append(("copy", t, [], None))
    for order in rotated_rounds(timers, ROUNDS):
        for name, t, meds, _ in order:
            meds.append(statistics.median(t.sample(t.samples_this_round())))
    copy_meds = timers[-1][2]
    print(f"== {str(dtype)[6:]} {direction} {shape[0]}x{shape[1]}: {n} input copies, {ROUNDS} rounds; us per launch"
          " (median over rounds, first-half / second-half medians); ratio to copy paired by round", flush=True)
    for name, t, meds, desc in timers:
        half = len(meds) // 2
        ratio = statistics.median(c / m for c, m in zip(copy_meds, meds))
        cfg = "" if desc is None else str(desc)[:90]
        print(f"  {name:10s} {statistics.median(meds)*1e3:8.1f}  ({statistics.median(meds[:half])*1e3:.1f} / "
              f"{statistics.median(meds[half:])*1e3:.1f})  range {min(meds)*1e3:.1f}-{max(meds)*1e3:.1f}  "
              f"x copy {ratio:.3f}  {cfg}", flush=True)
    by = {name: meds for name, _, meds, _ in timers}
    for s in range(SETS):
        r = statistics.median(a / b for a, b in zip(by[f"tickets#{s}"], by[f"rule#{s}"]))
        print(f"  set {s}: tickets/rule paired by round {r:.3f}", flush=True)
    for _, t, _, _ in timers: t.close()
    del timers, src, dst; torch.cuda.empty_cache()
