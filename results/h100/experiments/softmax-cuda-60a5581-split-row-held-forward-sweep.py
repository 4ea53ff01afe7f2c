"""Scratch (session 74, run 4): CUDA split_row forward, streamed (CUDA_PORTFOLIO_SPLIT_ROW_IN_REGISTERS=0) against the held
form (=1) of docs/next/cuda-split-row-held-forward.patch (applied, built), beside Triton's split_row, interleaved in one
process (scripts/_common.launch_times_us), each checked against float64. Run from the repository root:
    python results/h100/experiments/softmax-cuda-60a5581-split-row-held-forward-sweep.py SHAPES DTYPES OUT.json"""
import json, os, sys
sys.path.insert(0, "scripts")
import _common as common
from cuda_portfolio.native import softmax as native_softmax
from cuda_portfolio.triton_kernels import softmax as triton_softmax

ENV = "CUDA_PORTFOLIO_SPLIT_ROW_IN_REGISTERS"
shapes, dtypes, out = sys.argv[1], sys.argv[2], sys.argv[3]
rounds = int(os.environ.get("ROUNDS", "5"))
args = type("A", (), {})(); args.shapes, args.dtype, args.direction = shapes, dtypes, "fwd"
copy, l2 = common.start_sweep("persist", type("X", (), {"replot": None})(), None)
recs = []

def native(forced, case):
    def call(i):
        os.environ[ENV] = forced
        native_softmax.forward(case.inputs[i][0], case.out, "split_row")
    return call

for shape_text, dname, case in common.softmax_sweep_cases(args, l2):
    calls = {"streamed": native("0", case), "held": native("1", case),
             "triton": lambda i, case=case: triton_softmax.forward(case.inputs[i][0], case.out, "split_row")}
    layouts = {}
    for name, v in (("streamed", "0"), ("held", "1")):
        os.environ[ENV] = v
        layouts[name] = native_softmax.describe_launch((case.inputs[0][0],), "split_row", "fwd")
    os.environ.pop(ENV, None)
    layouts["rule"] = native_softmax.describe_launch((case.inputs[0][0],), "split_row", "fwd")
    times = common.launch_times_us(calls, case.copies, 5, rounds)
    line = f"{shape_text:>12} {dname:>5}"
    for name, us in times.items():
        err, ok = case.check(calls[name])
        ratio = case.bytes_moved / us / 1e6 / copy
        recs.append({"shape": shape_text, "dtype": dname, "variant": name, "us": us, "ratio_to_copy": ratio,
                     "rel_err": err, "ok": ok, "layout": layouts.get(name)})
        line += f"  {name} {us:8.2f} us {ratio:.3f}{'' if ok else ' WRONG'}"
    line += f"  held/streamed x{times['streamed'] / times['held']:.3f}  rule: {layouts['rule'].split(':')[0]}"
    print(line, flush=True)
    os.environ.pop(ENV, None)
    json.dump({"gpu": __import__("torch").cuda.get_device_name(0), "copy_tb_per_s": copy, "records": recs,
               "commit": os.environ.get("CUDA_PORTFOLIO_GIT_COMMIT")}, open(out, "w"), indent=1)
