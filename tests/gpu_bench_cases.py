"""GPU tier: the benchmark harness at tiny sizes (imported by tests/test_gpu.py).

Both timing paths (graph replay in process; CUDA events in a subprocess with
PYTORCH_NO_CUDA_MEMORY_CACHING=1), the results file validates against the schema, a provider that
computes the wrong thing is reported WRONG, a backward timed through autograd (Liger's way) is captured, and a
provider that cannot be captured falls back to events with the reason recorded and no capture left underway.
"""
import json
import os
import subprocess
import sys
import tempfile

import torch

import cuda_portfolio as cp
from cuda_portfolio.bench.case import OURS, PEER, Case, Provider
from cuda_portfolio.bench.cli import main as bench_main
from cuda_portfolio.bench.runner import run_case
from cuda_portfolio.bench.schema import validate_results
from cuda_portfolio.bench.softmax_cases import bind_through_autograd, make_softmax_case
from cuda_portfolio.bench.timing import NO_CACHING_ENV, TimingSettings, default_method, l2_bytes
from tests.gpu_util import GpuTestCase

TINY_ARGS = ["--shapes", "64x1000,96x128x64", "--rounds", "2", "--samples", "3", "--copy-mib", "16"]


def copy_case(providers) -> Case:
    """A case over cp.copy-shaped work: output = input, reference = the input in float64."""
    shape = (257, 1000)
    return Case("softmax", "fwd", torch.float32, shape, lambda gen: (torch.randn(shape, device="cuda", generator=gen),),
                lambda inputs: inputs[0].double(), 1e-6, bytes=2 * 4 * shape[0] * shape[1], providers=providers)


CAPTURE_FAILURE_SCRIPT = r"""
import json, torch
from cuda_portfolio.bench.case import PEER, Provider
from cuda_portfolio.bench.runner import run_case
from cuda_portfolio.bench.timing import TimingSettings, l2_bytes
from tests.gpu_bench_cases import copy_case

def bind_syncing(inputs):
    def launch():
        out = inputs[0].clone()
        torch.cuda.synchronize()  # illegal during stream capture
        return out
    return launch

settings = TimingSettings(rounds=2, samples_per_round=3, l2_bytes=l2_bytes())
records = run_case(copy_case([Provider("syncing clone", PEER, bind=bind_syncing)]), settings, {})
# What the failed capture must not leave behind: another stream current, or the allocator counting a capture
# underway (then empty_cache frees nothing, and every later case's memory stays reserved).
torch.cuda.empty_cache()
before = torch.cuda.memory_reserved()
block = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
del block
torch.cuda.empty_cache()
print(json.dumps({"records": records, "reserved_growth": torch.cuda.memory_reserved() - before,
                  "default_stream_current": torch.cuda.current_stream() == torch.cuda.default_stream()}))
"""


class BenchGpuTest(GpuTestCase):
    def settings(self):
        """The timing path this process supports: graph replay, or events with the allocator cache off
        (so no test provokes a failed capture unless it means to)."""
        method, reason = default_method()
        return TimingSettings(rounds=2, samples_per_round=3, method=method, method_reason=reason, l2_bytes=l2_bytes())

    def test_cli_graph_path_writes_a_valid_results_file(self):
        self.skip_if_caching_allocator_off("CUDA-graph timing needs the caching allocator; "
                                           "test_events_path_when_caching_allocator_is_off covers this setting")
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "r.json")
            rc = bench_main(TINY_ARGS + ["--json", path, "--dtype", "fp32,bf16"])
            with open(path) as f:
                doc = json.load(f)
        self.assertEqual(validate_results(doc), [])
        self.assertEqual(doc["env"]["timing_method"], "graph")
        copy = doc["ceilings"]["device_copy"]  # 16 MiB buffers: rotated over pairs that cover 2x L2, not cache-hot
        self.assertEqual(copy["status"], "ok", copy)
        self.assertGreaterEqual(copy["buffer_pairs"] * copy["bytes"], 2 * l2_bytes(), copy)
        # which GPU of a pool ran it: runs on two machine starts are told apart by this
        self.assertRegex(doc["env"]["gpu_uuid"] or "", r"^[0-9a-fA-F-]{16,}$")
        torch_records = [r for r in doc["records"] if r["provider"] in ("torch", "cublas") and r["status"] == "ok"]
        self.assertEqual(len(torch_records), 2 * 2 + 2, "torch fwd+bwd per dtype and cuBLAS per dtype should run")
        for r in torch_records:
            self.assertEqual(r["method"], "graph", r)
            self.assertGreater(r["launches_per_sample"], 1)
        self.assertTrue(any(r["kind"] == "control" and r["status"] == "ok" for r in doc["records"]))
        # softmax's reference op (same traffic, not validated) in every softmax case, timed like a peer
        softmax_cases = {(r["direction"], r["dtype"]) for r in doc["records"] if r["op"] == "softmax"}
        references = [r for r in doc["records"] if r["kind"] == "reference"]
        self.assertEqual({(r["direction"], r["dtype"]) for r in references if r["status"] == "ok"}, softmax_cases)
        self.assertTrue(all(r["validation"]["rel_err"] is None for r in references))
        for r in doc["records"]:  # the GEMM records name the tile configuration that ran
            if r["kind"] != OURS or r["status"] != "ok":
                continue
            with self.subTest(provider=r["provider"], op=r["op"], dtype=r["dtype"], kernel=r["resolved_plan"]):
                if r["op"] == "matmul" and r["resolved_plan"] == "wgmma_tma":
                    self.assertRegex(r["config"] or "", r"^(128x256|128x128|128x64|256x128)x64, \d+ stages, split-K \d+$")
                elif r["op"] == "matmul" and r["provider"] == "triton":
                    self.assertRegex(r["config"] or "", r"^\d+x\d+x\d+, \d+ warps, \d+ stages, group \d+")
                elif r["op"] == "softmax" and r["provider"] == "triton":  # warps, tile, tuned or the table's
                    self.assertRegex(r["config"] or "", r"^\d+ warps, \d+-column tiles(, evict_first loads)?, (tuned|table)$")
                elif r["op"] == "softmax" and r["resolved_plan"] == "split_row":  # the CUDA split_row's layout
                    self.assertRegex(r["config"] or "", r"^(streamed|portable): ")
                elif r["op"] == "softmax":
                    self.assertIsNone(r["config"])
        ours_bad = [r for r in doc["records"] if r["kind"] == OURS and r["status"] in ("WRONG", "error")]
        self.assertEqual(ours_bad, [], "our kernels were WRONG or failed in the benchmark")
        self.assertEqual(rc, 0)

    def test_a_graph_sample_holds_the_sample_target_of_launches(self):
        """Launches per sample come from the launches' own time: the CUDA split_row's first launch on a stream zeroes
        its workspace (an eager estimate read 528 us where its launches take 116, session 36), and 4 launches per
        sample instead of 18 charged each replay's fixed cost to 4 launches, +8% for that provider alone. 32x1M bf16
        backward: the ticket mode (the one with a workspace) on every chip, one input copy."""
        self.skip_if_caching_allocator_off("CUDA-graph timing needs the caching allocator")
        settings = TimingSettings(rounds=1, samples_per_round=3, l2_bytes=l2_bytes())
        case = make_softmax_case((32, 1 << 20), torch.bfloat16, "bwd", ["cuda"], ["split_row"], peers=False)
        record = run_case(case, settings, {})[0]
        self.assertEqual((record["status"], record["method"], record["input_copies"]), ("ok", "graph", 1), record)
        sample_ms = record["launches_per_sample"] * record["time_ms"]["median"]
        self.assertGreaterEqual(sample_ms, 0.5 * settings.sample_target_ms, record)

    def test_events_path_when_caching_allocator_is_off(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "r.json")
            env = dict(os.environ, **{NO_CACHING_ENV: "1"})
            r = subprocess.run([sys.executable, "-m", "cuda_portfolio.bench", "--op", "softmax", "--backend", "triton",
                                "--direction", "fwd", "--dtype", "fp32", *TINY_ARGS, "--json", path],
                               capture_output=True, text=True, env=env, timeout=600)
            self.assertEqual(r.returncode, 0, r.stderr[-3000:])  # 1: one of our kernels was WRONG or failed
            with open(path) as f:
                doc = json.load(f)
        self.assertEqual(validate_results(doc), [])
        self.assertEqual(doc["env"]["timing_method"], "events")
        self.assertIn("PYTORCH_NO_CUDA_MEMORY_CACHING", doc["env"]["timing_method_reason"])
        timed = [r for r in doc["records"] if r["time_ms"]]
        self.assertTrue(timed)
        self.assertTrue(all(r["method"] == "events" for r in timed))
        self.assertEqual(doc["ceilings"]["device_copy"]["method"], "events")

    def test_wrong_provider_is_reported_wrong_and_right_one_ok(self):
        def bind_copy(inputs):
            return lambda: cp.copy(inputs[0])

        def bind_wrong(inputs):
            return lambda: cp.copy(inputs[0]) * 1.01

        case = copy_case([Provider("copy", OURS, bind=bind_copy, plan="auto"),
                          Provider("scaled copy", PEER, bind=bind_wrong)])
        records = run_case(case, self.settings(), {})
        status = {r["provider"]: r for r in records}
        self.assertEqual(status["copy"]["status"], "ok", status["copy"]["reason"])
        self.assertEqual(status["scaled copy"]["status"], "WRONG")
        self.assertIn("rel err", status["scaled copy"]["reason"])
        self.assertIsNone(status["scaled copy"]["tb_per_s"])
        self.assertEqual(status["copy"]["ratio_to_peers"], {}, "a WRONG peer gives no ratio")

    def test_failed_capture_falls_back_to_events_and_leaves_no_capture_behind(self):
        # Its failed capture is CUDA API errors on purpose, which a sanitizer counts as errors.
        self.skip_if_caching_allocator_off("provokes a failed graph capture, and capture needs the caching allocator")
        # In a subprocess: a failed capture leaves torch's default CUDA generator in capture mode,
        # which would break every later test in this process that draws random numbers.
        r = subprocess.run([sys.executable, "-c", CAPTURE_FAILURE_SCRIPT], capture_output=True, text=True, timeout=300)
        self.assertEqual(r.returncode, 0, r.stderr[-3000:])
        result = json.loads(r.stdout.strip().splitlines()[-1])
        record = result["records"][0]
        self.assertEqual(record["status"], "ok", record["reason"])
        self.assertEqual(record["method"], "events")
        self.assertIn("graph capture failed", record["method_reason"])
        self.assertTrue(result["default_stream_current"], "a failed capture left its stream current")
        self.assertLessEqual(result["reserved_growth"], 0,
                             "empty_cache kept a freed 256 MiB: the allocator still counts a capture underway")

    def test_backward_through_autograd_is_timed_by_graph_replay(self):
        # Liger's backward is timed this way; torch's softmax stands in for it (Liger is an optional peer).
        self.skip_if_caching_allocator_off("graph replay needs the caching allocator")
        case = make_softmax_case((37, 1000), torch.float32, "bwd", [], ["auto"], peers=False)
        case.providers = [Provider("torch via autograd", PEER,
                                   bind=bind_through_autograd(lambda x: torch.softmax(x, -1), "bwd"))]
        record = run_case(case, self.settings(), {})[0]
        self.assertEqual(record["status"], "ok", record["reason"])
        self.assertEqual(record["method"], "graph", record["method_reason"])

    def test_unwritten_output_is_wrong(self):
        def bind_empty(inputs):
            return lambda: torch.full_like(inputs[0], float("nan"))

        records = run_case(copy_case([Provider("nan", PEER, bind=bind_empty)]), self.settings(), {})
        self.assertEqual(records[0]["status"], "WRONG")
        self.assertIn("non-finite", records[0]["reason"])
