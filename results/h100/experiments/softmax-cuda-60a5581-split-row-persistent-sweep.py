"""Scratch (session 74, runs 1-3 of the persistent diagnostic): CUDA split_row forward, streamed (env unset) against the
persistent held form at 256 and 512 threads (CUDA_PORTFOLIO_SPLIT_ROW_PERSISTENT, from
softmax-cuda-60a5581-split-row-persistent-diagnostic.patch), beside Triton's split_row, interleaved in one process
(scripts/_common.launch_times_us), each output checked against float64. Run from the repository root:
    python results/h100/experiments/softmax-cuda-60a5581-split-row-persistent-sweep.py SHAPES DTYPES OUT.json"""
import json, os, sys
sys.path.insert(0, "scripts")
import _common as common
from cuda_portfolio.native import softmax as native_softmax
from cuda_portfolio.triton_kernels import softmax as triton_softmax

ENV = "CUDA_PORTFOLIO_SPLIT_ROW_PERSISTENT"
shapes, dtypes, out = sys.argv[1], sys.argv[2], sys.argv[3]
rounds = int(os.environ.get("ROUNDS", "5"))

class A: pass
args = A(); args.shapes, args.dtype, args.direction = shapes, dtypes, "fwd"
copy, l2 = common.start_sweep("persist", type("X", (), {"replot": None})(), None)
recs = []

def native(forced, case):
    def call(i):
        if forced: os.environ[ENV] = forced
        else: os.environ.pop(ENV, None)
        native_softmax.forward(case.inputs[i][0], case.out, "split_row")
    return call

def triton(case):
    return lambda i: triton_softmax.forward(case.inputs[i][0], case.out, "split_row")

for shape_text, dname, case in common.softmax_sweep_cases(args, l2):
    calls = {"stream": native(None, case), "p256": native("256", case), "p512": native("512", case),
             "triton": triton(case)}
    for name in ("p256", "p512"):
        os.environ[ENV] = name[1:]
        print(shape_text, dname, name, native_softmax.describe_launch((case.inputs[0][0],), "split_row", "fwd"),
              flush=True)
    os.environ.pop(ENV, None)
    times = common.launch_times_us(calls, case.copies, 5, rounds)
    line = f"{shape_text:>12} {dname:>5}"
    for name, us in times.items():
        err, ok = case.check(calls[name])
        ratio = case.bytes_moved / us / 1e6 / copy
        recs.append({"shape": shape_text, "dtype": dname, "variant": name, "us": us, "ratio_to_copy": ratio,
                     "rel_err": err, "ok": ok})
        line += f"  {name} {us:8.2f} us {ratio:.3f}{'' if ok else ' WRONG'}"
    line += f"  p256/stream x{times['stream'] / times['p256']:.3f}"
    print(line, flush=True)
    os.environ.pop(ENV, None)
    json.dump({"copy_tb_per_s": copy, "records": recs, "commit": os.environ.get("CUDA_PORTFOLIO_GIT_COMMIT")},
              open(out, "w"), indent=1)
