"""CPU tier: the benchmark harness without a GPU: argument parsing, shape presets, the results
schema, the interleaving/validation/ratio logic (with a fake timer), table and plot rendering
from a stored results file (tests/data/bench_results_fixture.json), the comparison of two results
files, --help in a subprocess."""
import contextlib
import copy
import dataclasses
import importlib.util
import io
import json
import os
import subprocess
import sys
import tempfile
import time
import unittest
from unittest import mock
from pathlib import Path

import torch

from cuda_portfolio.bench import cli, env, shapes
from cuda_portfolio.bench import compare, plot, report, runner, targets
from cuda_portfolio.bench import case as case_module
from cuda_portfolio.bench import timing
from cuda_portfolio.bench.case import (CONTROL, OURS, PEER, REFERENCE, Case, Provider, blockwise_relative_error,
                                      relative_error, selected_names)
from cuda_portfolio.bench.report import render_table, round_ratios, time_ratio
from cuda_portfolio.bench.runner import base_record, run_case
from cuda_portfolio.bench.schema import validate_results
from cuda_portfolio.bench.timing import TimingSettings, input_copies_for, summarize

FIXTURE = Path(__file__).parent / "data" / "bench_results_fixture.json"


def load_fixture() -> dict:
    with open(FIXTURE) as f:
        return json.load(f)


class ArgumentTest(unittest.TestCase):
    def test_defaults(self):
        args = cli.parse_args([])
        self.assertEqual(args.ops, ["softmax", "matmul"])
        self.assertEqual(args.backends, ["cuda", "triton"])
        self.assertEqual(args.directions, ["fwd", "bwd"])
        self.assertEqual(args.dtypes["softmax"], [torch.float32, torch.bfloat16])
        self.assertEqual(args.shape_lists["softmax"], shapes.SOFTMAX_QUICK)
        self.assertEqual(args.plans, "auto")

    def test_explicit_shapes_go_to_the_op_with_matching_rank(self):
        args = cli.parse_args(["--shapes", "128x4096,4096x4096x4096, 7x9", "--dtype", "bf16,fp16,bfloat16"])
        self.assertEqual(args.shape_lists["softmax"], [(128, 4096), (7, 9)])
        self.assertEqual(args.shape_lists["matmul"], [(4096, 4096, 4096)])
        self.assertEqual(args.dtypes["matmul"], [torch.bfloat16, torch.float16])

    def test_case_order_and_count(self):
        args = cli.parse_args(["--op", "softmax", "--direction", "bwd", "--dtype", "fp32", "--shapes", "full"])
        specs = cli.case_specs(args)
        self.assertEqual(len(specs), len(shapes.SOFTMAX_FULL))
        self.assertTrue(all(s[:3] == ("softmax", torch.float32, "bwd") for s in specs))
        quick_all = cli.case_specs(cli.parse_args(["--shapes", "quick"]))
        self.assertEqual(len(quick_all), 2 * 2 * len(shapes.SOFTMAX_QUICK) + 2 * len(shapes.MATMUL_QUICK))

    def test_plans_as_a_list_of_names(self):
        args = cli.parse_args(["--plans", "block_per_row, warp_per_row,block_per_row"])
        self.assertEqual(args.plan_selection, ("block_per_row", "warp_per_row"))
        self.assertEqual(args.plans, "block_per_row, warp_per_row,block_per_row")  # as the results file records it
        self.assertEqual(cli.parse_args(["--plans", "all"]).plan_selection, "all")
        listed = ["warp_per_row", "block_per_row", "split_row"]
        self.assertEqual(selected_names("auto", listed), ["auto"])
        self.assertEqual(selected_names("all", listed), listed)
        self.assertEqual(selected_names(("split_row", "wgmma_tma", "auto"), listed), ["auto", "split_row"])

    def test_a_case_times_the_selected_plans_with_auto_first(self):
        from cuda_portfolio.bench.softmax_cases import make_softmax_case

        case = make_softmax_case((3, 7), torch.float32, "fwd", ["triton"], ("block_per_row", "auto", "nope"),
                                 device="cpu", peers=False)
        self.assertEqual([(p.plan, p.resolved_plan, p.status) for p in case.providers],
                         [("auto", "warp_per_row", "ok"), ("block_per_row", "block_per_row", "ok")])

    def test_plan_names_no_backend_lists_are_named(self):
        args = cli.parse_args(["--op", "softmax", "--backend", "triton", "--plans", "warp_per_row,nope,auto"])
        unknown, known = cli.unknown_plan_names(args)
        self.assertEqual(unknown, ["nope"])
        self.assertIn("warp_per_row", known)
        self.assertEqual(cli.unknown_plan_names(cli.parse_args(["--plans", "all"])), ([], []))

    def test_bad_arguments_exit_2(self):
        for argv in (["--shapes", "4096x"], ["--shapes", "0x5"], ["--shapes", "2x3x4x5"], ["--dtype", "float64"],
                     ["--op", "matmul", "--shapes", "64x64"], ["--op", "matmul", "--shapes", "vocab"],
                     ["--rounds", "0"], ["--op", "conv"],
                     ["--case-timeout", "0"], ["--case-timeout", "-5"], ["--plans", " , "]):
            with self.subTest(argv=argv), self.assertRaises(SystemExit) as ctx:
                with open(os.devnull, "w") as null, contextlib.redirect_stderr(null):
                    cli.parse_args(argv)
            self.assertEqual(ctx.exception.code, 2)


class CaseWatchdogTest(unittest.TestCase):
    """A hung kernel cannot be interrupted from Python: the watchdog's timer thread names the case."""

    def test_fires_with_the_case_label_when_a_case_overruns(self):
        fired = []
        watchdog = cli.CaseWatchdog(0.05, fired.append)
        watchdog.start("softmax bwd float32 1024x131072")
        for _ in range(100):
            if fired:
                break
            time.sleep(0.01)
        self.assertEqual(fired, ["softmax bwd float32 1024x131072"])

    def test_stays_quiet_when_each_case_finishes_in_time(self):
        fired = []
        watchdog = cli.CaseWatchdog(0.2, fired.append)
        for label in ("a", "b", "c"):
            watchdog.start(label)  # restarting cancels the previous case's timer
            time.sleep(0.05)
        watchdog.stop()
        time.sleep(0.3)
        self.assertEqual(fired, [])

    def test_default_timeout(self):
        self.assertEqual(cli.parse_args([]).case_timeout, 600.0)


class FailedRunTest(unittest.TestCase):
    """A run that a case ends (out of GPU memory, Ctrl-C) keeps what finished, as the watchdog does."""

    def test_a_case_that_raises_leaves_the_finished_cases_in_a_partial_file(self):
        record = {"provider": "mine", "status": "ok"}
        done = []

        def run_case(case, settings, ceilings):
            if done:
                raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 3.91 GiB")
            done.append(case)
            return [record]

        args = cli.parse_args(["--op", "softmax", "--shapes", "4x8,4x16", "--dtype", "fp32", "--direction", "fwd"])
        with tempfile.TemporaryDirectory() as tmp, contextlib.ExitStack() as stack:
            for target, value in (("cuda_portfolio.bench.runner.run_case", run_case),
                                  ("cuda_portfolio.bench.softmax_cases.make_softmax_case", lambda *a: "case"),
                                  ("cuda_portfolio.bench.env.env_block", lambda *a: {}),
                                  ("cuda_portfolio.bench.timing.l2_bytes", lambda: 1 << 20),
                                  ("cuda_portfolio.bench.timing.device_copy_ceiling", lambda *a: {})):
                stack.enter_context(mock.patch(target, value))
            stderr = stack.enter_context(contextlib.redirect_stderr(io.StringIO()))
            path = Path(tmp) / "run.json"
            with self.assertRaises(torch.OutOfMemoryError):
                cli.run(args, "bench", path)
            partial = json.loads((Path(tmp) / "run.json.partial.json").read_text())
        self.assertEqual(partial["records"], [record])
        self.assertIn("case softmax fwd float32 4x16 raised OutOfMemoryError; the 1 records", stderr.getvalue())


class FailedCaptureTest(unittest.TestCase):
    """timing.capture undoes what a failed capture leaves in torch (the GPU tier provokes a real one): the allocator's
    capture of the pool ended and the pool released, unless capture_end got that far, and the stream restored."""

    def run_failing_capture(self, end_raises: bool) -> mock.MagicMock:
        calls = mock.MagicMock()
        calls.end.side_effect = RuntimeError("endAllocatePool: not currently recording to mempool_id") if end_raises \
            else None

        @contextlib.contextmanager
        def failing_graph(graph, pool, stream):
            calls.graph(pool=pool, stream=stream)
            yield
            raise RuntimeError("CUDA error: operation failed due to a previous error during capture")

        with contextlib.ExitStack() as stack:
            for target, value in (("torch.cuda.graph", failing_graph),
                                  ("torch.cuda.graph_pool_handle", lambda: (0, 7)),
                                  ("torch.cuda.current_stream", lambda: "stream before"),
                                  ("torch.cuda.set_stream", calls.set_stream),
                                  ("torch.cuda.current_device", lambda: 0)):
                stack.enter_context(mock.patch(target, value))
            stack.enter_context(mock.patch.object(torch._C, "_cuda_endAllocateToPool", calls.end, create=True))
            stack.enter_context(mock.patch.object(torch._C, "_cuda_releasePool", calls.release, create=True))
            with self.assertRaisesRegex(RuntimeError, "during capture"):
                with timing.capture("graph", "capture stream"):
                    pass
        calls.graph.assert_called_once_with(pool=(0, 7), stream="capture stream")
        calls.set_stream.assert_called_once_with("stream before")
        calls.end.assert_called_once_with(0, (0, 7))
        return calls

    def test_a_capture_that_failed_before_capture_end_is_ended_and_its_pool_released(self):
        self.run_failing_capture(end_raises=False).release.assert_called_once_with(0, (0, 7))

    def test_a_pool_that_capture_end_ended_is_left_to_its_graph(self):
        self.run_failing_capture(end_raises=True).release.assert_not_called()


class PresetTest(unittest.TestCase):
    def test_full_presets_hold_the_baseline_shapes(self):
        for shape in [(4096, 4096), (8192, 8192), (2048, 50257), (1024, 131072), (32, 1048576), (4, 4194304)]:
            self.assertIn(shape, shapes.SOFTMAX_FULL)
        self.assertEqual(set(shapes.MATMUL_FULL), {(4096, 4096, 4096), (8192, 8192, 8192), (16384, 16384, 1024),
                                                   (1024, 1024, 16384), (4000, 3000, 2000), (128, 8192, 8192)})

    def test_quick_is_a_subset_of_full(self):
        self.assertTrue(set(shapes.SOFTMAX_QUICK) < set(shapes.SOFTMAX_FULL))
        self.assertTrue(set(shapes.MATMUL_QUICK) < set(shapes.MATMUL_FULL))

    def test_vocab_preset_is_softmax_only_with_ragged_and_whole_unit_rows(self):
        args = cli.parse_args(["--shapes", "vocab"])
        self.assertEqual(args.shape_lists, {"softmax": shapes.SOFTMAX_VOCAB, "matmul": []})
        self.assertEqual(len(cli.case_specs(args)), 2 * 2 * len(shapes.SOFTMAX_VOCAB))
        # 2-byte and 4-byte elements: rows that are whole 16-byte units and rows that are not (the EDGES paths)
        ragged = {n for _, n in shapes.SOFTMAX_VOCAB if (n * 2) % 16 and (n * 4) % 16}
        whole = {n for _, n in shapes.SOFTMAX_VOCAB if (n * 2) % 16 == 0}
        self.assertEqual(ragged, {50257, 100277})
        self.assertEqual(whole, {32000, 50304, 128256, 151936})

    def test_parse_shape(self):
        self.assertEqual(shapes.parse_shape("4000X3000x2000"), (4000, 3000, 2000))
        with self.assertRaisesRegex(ValueError, "bad shape"):
            shapes.parse_shape("4k x 4k")


class SchemaTest(unittest.TestCase):
    def test_fixture_validates(self):
        self.assertEqual(validate_results(load_fixture()), [])

    def test_hand_built_ok_record_validates_and_each_breakage_is_named(self):
        doc = load_fixture()
        good = next(r for r in doc["records"] if r["status"] == "ok" and r["op"] == "softmax")
        doc["records"] = [good]
        self.assertEqual(validate_results(doc), [])
        breakages = {
            "missing 'time_ms'": lambda r: r.pop("time_ms"),
            "shape must be 2": lambda r: r.update(shape=[4096, 4096, 1]),
            "within tolerance": lambda r: r["validation"].update(rel_err=1.0),
            "positive tb_per_s": lambda r: r.update(tb_per_s=None),
            "min <= q1 <= median": lambda r: r["time_ms"].update(min=1e9),
            "needs a reason": lambda r: r.update(status="refused", reason="", tb_per_s=None, ratio_to_peers={},
                                                 ratio_to_ceiling=None),
            "carries no throughput": lambda r: r.update(status="WRONG", reason="rel err 1 > 1e-5"),
            "status 'fast'": lambda r: r.update(status="fast"),
            "dtype 'float64'": lambda r: r.update(dtype="float64"),
            "config must be text or null": lambda r: r.update(config=128),
        }
        for expected, breakage in breakages.items():
            broken = copy.deepcopy(doc)
            breakage(broken["records"][0])
            with self.subTest(breakage=expected):
                problems = validate_results(broken)
                self.assertTrue(any(expected in p for p in problems), problems)

    def test_env_and_top_level_problems(self):
        doc = load_fixture()
        del doc["env"]["git_commit"]
        doc["env"]["timing_method"] = "stopwatch"
        doc["schema"] = "other/0"
        problems = "\n".join(validate_results(doc))
        for expected in ("env.git_commit missing", "env.timing_method", "schema must be"):
            self.assertIn(expected, problems)
        self.assertEqual(validate_results([]), ["the results file must hold a JSON object"])


class FakeTimer:
    """Stands in for LaunchTimer on CPU: runs each launch for real, reports fixed times, logs order."""
    log = []
    times = {}

    def __init__(self, launches, settings):
        self.launches, self.settings = launches, settings
        self.method, self.method_reason, self.launches_per_sample = "graph", "", 7
        self.output = None

    def prepare(self):
        self.output = self.launches[-1]()

    def samples_this_round(self):
        return self.settings.samples_per_round

    def sample(self, count):
        name = self.launches[0].provider_name
        FakeTimer.log.append(name)
        return [FakeTimer.times[name]] * count

    def last_output(self):
        return self.output, len(self.launches) - 1

    def close(self):
        pass


def tagged(name, fn):
    fn.provider_name = name
    return fn


def fake_case(providers) -> Case:
    shape = (3, 33)
    return Case("softmax", "fwd", torch.float32, shape, lambda gen: (torch.randn(shape, generator=gen),),
                lambda inputs: torch.softmax(inputs[0].double(), -1), 1e-5, bytes=2 * 4 * 3 * 33,
                providers=providers, device="cpu")


def provider(name, kind, fn, **kw):
    return Provider(name, kind, bind=lambda inputs: tagged(name, lambda: fn(inputs[0])), **kw)


class RunnerLogicTest(unittest.TestCase):
    def run_fake(self, providers, times, rounds=3):
        FakeTimer.log, FakeTimer.times = [], times
        settings = TimingSettings(rounds=rounds, samples_per_round=4, l2_bytes=1 << 20)
        ceilings = {"device_copy": {"tb_per_s": 2.0}}
        return {r["provider"]: r for r in run_case(fake_case(providers), settings, ceilings, timer_factory=FakeTimer)}

    def test_statuses_ratios_and_interleaving(self):
        def refuse(x):
            raise ValueError("peer refuses rows of 33 columns")

        providers = [provider("mine", OURS, lambda x: torch.softmax(x, -1), plan="auto", resolved_plan="p",
                              describe=lambda inputs: f"tile for {inputs[0].shape[1]} columns"),
                     provider("wrong", OURS, lambda x: torch.softmax(x, -1) * 1.001, plan="auto"),
                     provider("torch", PEER, lambda x: torch.softmax(x, -1)),
                     provider("torch (A/A)", CONTROL, lambda x: torch.softmax(x, -1), control_of="torch"),
                     provider("picky", PEER, refuse),
                     Provider("absent", PEER, status="unavailable", reason="not installed")]
        times = {"mine": 0.5, "wrong": 0.1, "torch": 1.0, "torch (A/A)": 1.02}
        records = self.run_fake(providers, times)
        self.assertEqual(FakeTimer.log, ["mine", "wrong", "torch", "torch (A/A)",
                                         "wrong", "torch", "torch (A/A)", "mine",
                                         "torch", "torch (A/A)", "mine", "wrong"])
        self.assertEqual({n: r["status"] for n, r in records.items()},
                         {"mine": "ok", "wrong": "WRONG", "torch": "ok", "torch (A/A)": "ok", "picky": "refused",
                          "absent": "unavailable"})
        mine = records["mine"]
        self.assertAlmostEqual(mine["ratio_to_peers"]["torch"], 2.0)
        self.assertAlmostEqual(mine["ratio_to_peers"]["torch (A/A)"], 2.04)
        self.assertAlmostEqual(mine["tb_per_s"], 2 * 4 * 3 * 33 / 0.5e-3 / 1e12)
        self.assertAlmostEqual(mine["ratio_to_ceiling"], mine["tb_per_s"] / 2.0)
        self.assertEqual(mine["time_ms"]["samples"], 12)
        self.assertEqual(mine["resolved_plan"], "p")
        self.assertEqual(mine["config"], "tile for 33 columns")
        self.assertIsNone(records["torch"]["config"])
        self.assertIn("rel err", records["wrong"]["reason"])
        self.assertIsNone(records["wrong"]["tb_per_s"])
        self.assertEqual(records["wrong"]["ratio_to_peers"], {})
        self.assertIn("refuses rows", records["picky"]["reason"])
        self.assertAlmostEqual(records["torch (A/A)"]["ratio_to_peers"]["torch"], 1.0 / 1.02)
        # A peer timed another way (its capture failed: events) gets no ratio against a graph-timed record.
        records["torch"]["method"] = "events"
        runner.add_throughput_and_ratios(fake_case(providers), list(records.values()), {})
        self.assertNotIn("torch", mine["ratio_to_peers"])
        self.assertAlmostEqual(mine["ratio_to_peers"]["torch (A/A)"], 2.04)
        records["torch"]["method"] = mine["method"]
        runner.add_throughput_and_ratios(fake_case(providers), list(records.values()),
                                         {"device_copy": {"tb_per_s": 2.0}})
        doc = load_fixture()
        doc["records"] = list(records.values())
        self.assertEqual(validate_results(doc), [])

    def test_the_reference_op_is_timed_as_a_peer_and_never_validated(self):
        """The reference op (an elementwise op with the case's traffic) computes something else: its record is ok with
        no rel_err, and ours' ratio_to_peers holds its time over ours (the fraction of that op's speed reached)."""
        providers = [provider("mine", OURS, lambda x: torch.softmax(x, -1), plan="auto"),
                     provider("same traffic", REFERENCE, lambda x: torch.neg(x)),
                     provider("torch", PEER, lambda x: torch.softmax(x, -1))]
        records = self.run_fake(providers, {"mine": 0.5, "same traffic": 0.4, "torch": 1.0})
        reference = records["same traffic"]
        self.assertEqual((reference["status"], reference["validation"]["rel_err"]), ("ok", None))
        self.assertAlmostEqual(records["mine"]["ratio_to_peers"]["same traffic"], 0.8)
        self.assertAlmostEqual(reference["ratio_to_ceiling"], reference["tb_per_s"] / 2.0)
        doc = load_fixture()
        doc["records"] = list(records.values())
        self.assertEqual(validate_results(doc), [])
        reference["validation"]["rel_err"] = 0.0  # a reference record claiming a validation
        self.assertIn("a reference record has no validation.rel_err", "\n".join(validate_results(doc)))

    def test_a_softmax_case_carries_the_reference_op_with_the_directions_traffic(self):
        from cuda_portfolio.bench.softmax_cases import SAME_TRAFFIC, make_softmax_case

        generator = torch.Generator().manual_seed(0)
        for direction, expected in (("fwd", lambda x, y, dy: -x), ("bwd", lambda x, y, dy: y + dy)):
            case = make_softmax_case((3, 7), torch.float32, direction, [], "auto", device="cpu")
            reference = [p for p in case.providers if p.kind == REFERENCE]
            self.assertEqual([p.name for p in reference], [SAME_TRAFFIC])
            inputs = case.make_inputs(generator)
            x, y, dy = inputs if direction == "bwd" else (inputs[0], None, None)
            self.assertTrue(torch.equal(reference[0].bind(inputs)(), expected(x, y, dy)))

    def test_a_failing_description_fails_its_record_only(self):
        """describe (what ran, recorded as `config`) is our code: when it raises, that record is an error that
        names it, and the case's other records are timed and checked as usual."""
        def broken(inputs):
            raise RuntimeError("no layout for you")

        providers = [provider("mine", OURS, lambda x: torch.softmax(x, -1), plan="auto", describe=broken),
                     provider("torch", PEER, lambda x: torch.softmax(x, -1))]
        records = self.run_fake(providers, {"mine": 0.5, "torch": 1.0})
        self.assertEqual(records["mine"]["status"], "error")
        self.assertEqual(records["mine"]["reason"], "describing the launch: RuntimeError: no layout for you")
        self.assertEqual(records["torch"]["status"], "ok")
        self.assertIsNotNone(records["torch"]["tb_per_s"])
        doc = load_fixture()
        doc["records"] = list(records.values())
        self.assertEqual(validate_results(doc), [])

    def test_round_medians_recorded_and_a_provider_with_two_speeds_noted(self):
        """Each record keeps every round's median; the table names a provider whose rounds differ by
        more than 5% (its overall median stands for neither speed) and stays quiet about steady ones."""
        class RoundTimer(FakeTimer):
            calls = {}

            def sample(self, count):
                name = self.launches[0].provider_name
                k = RoundTimer.calls[name] = RoundTimer.calls.get(name, -1) + 1
                return [FakeTimer.times[name][k]] * (count - 1) + [FakeTimer.times[name][k] * 9]  # one outlier

        FakeTimer.log, FakeTimer.times = [], {"mine": [0.5, 0.6, 0.5], "torch": [1.0, 1.01, 1.0]}
        settings = TimingSettings(rounds=3, samples_per_round=4, l2_bytes=1 << 20)
        providers = [provider("mine", OURS, lambda x: torch.softmax(x, -1), plan="auto"),
                     provider("torch", PEER, lambda x: torch.softmax(x, -1))]
        records = run_case(fake_case(providers), settings, {"device_copy": {"tb_per_s": 2.0}}, timer_factory=RoundTimer)
        by_name = {r["provider"]: r for r in records}
        self.assertEqual(by_name["mine"]["time_ms"]["round_medians"], [0.5, 0.6, 0.5])
        self.assertEqual(by_name["torch"]["time_ms"]["round_medians"], [1.0, 1.01, 1.0])
        doc = load_fixture()
        doc["records"] = records
        self.assertEqual(validate_results(doc), [])
        table = render_table(doc).splitlines()
        noted = [i for i, line in enumerate(table) if "rounds:" in line]
        self.assertEqual(len(noted), 1, table)
        self.assertIn("mine", table[noted[0] - 1])
        self.assertIn("+20%", table[noted[0]])
        bad = copy.deepcopy(doc)
        bad["records"][0]["time_ms"]["round_medians"] = [0.5, -1.0]
        self.assertIn("round_medians must be", "\n".join(validate_results(bad)))

    def test_ratios_pair_rounds_so_a_speed_change_shared_by_every_provider_cancels(self):
        """The GPU slows down between rounds 1 and 2 for everyone (timed in rotated order, the step lands
        in different rounds' medians): both run at the same speed in every state, so the paired ratio is
        1.0 where the ratio of overall medians (1.0 against 2.0) would say 2x."""
        class StepTimer(FakeTimer):
            calls = {}

            def sample(self, count):
                name = self.launches[0].provider_name
                k = StepTimer.calls[name] = StepTimer.calls.get(name, -1) + 1
                return [FakeTimer.times[name][k]] * count

        FakeTimer.log, FakeTimer.times = [], {"mine": [1.0, 1.0, 1.0, 2.0, 2.0], "torch": [1.0, 2.0, 2.0, 2.0, 2.0]}
        settings = TimingSettings(rounds=5, samples_per_round=3, l2_bytes=1 << 20)
        providers = [provider("mine", OURS, lambda x: torch.softmax(x, -1), plan="auto"),
                     provider("torch", PEER, lambda x: torch.softmax(x, -1))]
        records = run_case(fake_case(providers), settings, {"device_copy": {"tb_per_s": 2.0}}, timer_factory=StepTimer)
        mine = next(r for r in records if r["provider"] == "mine")
        self.assertEqual((mine["time_ms"]["median"], records[1]["time_ms"]["median"]), (1.0, 2.0))
        self.assertAlmostEqual(mine["ratio_to_peers"]["torch"], 1.0)
        uneven = {"time_ms": {"median": 2.0, "round_medians": [2.0, 2.0]}}
        self.assertAlmostEqual(time_ratio(uneven, mine), 2.0)  # rounds do not pair: ratio of the medians

    def test_our_kernel_failing_in_warm_up_is_an_error_not_a_refusal(self):
        def crash(x):
            raise RuntimeError("illegal memory access")

        records = self.run_fake([provider("mine", OURS, crash, plan="auto")], {})
        self.assertEqual(records["mine"]["status"], "error")
        self.assertIn("illegal memory access", records["mine"]["reason"])

    def test_the_memory_each_provider_leaves_held_is_recorded(self):
        held = iter([3 << 30, 5 << 30, 6 << 30, 9 << 30])  # allocated, reserved; then the same after the second

        def refuse(x):
            raise ValueError("peer refuses rows of 33 columns")

        with mock.patch.object(torch.cuda, "memory_allocated", lambda: next(held)), \
                mock.patch.object(torch.cuda, "memory_reserved", lambda: next(held)):
            records = self.run_fake([provider("mine", OURS, lambda x: torch.softmax(x, -1), plan="auto"),
                                     provider("refuser", PEER, refuse),
                                     provider("torch", PEER, lambda x: torch.softmax(x, -1))],
                                    {"mine": 1.0, "torch": 1.0})
        self.assertEqual(records["mine"]["memory_after_prepare"],
                         {"allocated_bytes": 3 << 30, "reserved_bytes": 5 << 30})
        self.assertIsNone(records["refuser"]["memory_after_prepare"])
        self.assertEqual(records["torch"]["memory_after_prepare"],
                         {"allocated_bytes": 6 << 30, "reserved_bytes": 9 << 30})

    def test_blockwise_relative_error_reads_as_the_whole_and_flags_what_it_flags(self):
        x = torch.randn(7, 33, dtype=torch.float64)
        out = torch.softmax(x, -1).float() * (1 + 1e-3 * torch.randn(7, 33))

        def reference(inputs):
            return torch.softmax(inputs[0].double(), -1)

        whole = relative_error(out, reference((x,)))
        with mock.patch.object(case_module, "VALIDATION_BLOCK_BYTES", 2 * 8 * 33):  # blocks of 2 rows: 4 blocks
            err, problem = blockwise_relative_error(out, reference, (x,))
            self.assertEqual(problem, "")
            self.assertAlmostEqual(err, whole[0], delta=1e-12 * whole[0])
            late_nan = out.clone()
            late_nan[6, 3] = float("nan")
            self.assertIn("1 non-finite", blockwise_relative_error(late_nan, reference, (x,))[1])
            self.assertIn("7 rows", blockwise_relative_error(out[:6], reference, (x,))[1])
            self.assertIn("shape", blockwise_relative_error(out[:, :32], reference, (x,))[1])

    def test_a_rows_independent_case_is_validated_by_blocks_and_a_wrong_last_row_found(self):
        def wrong_last_row(x):
            y = torch.softmax(x, -1)
            y[-1, 0] += 0.5
            return y

        case = fake_case([provider("right", OURS, lambda x: torch.softmax(x, -1), plan="auto"),
                          provider("wrong", OURS, wrong_last_row, plan="auto")])
        case.rows_independent = True
        FakeTimer.log, FakeTimer.times = [], {"right": 1.0, "wrong": 1.0}
        settings = TimingSettings(rounds=1, samples_per_round=1, l2_bytes=1 << 20)
        with mock.patch.object(case_module, "VALIDATION_BLOCK_BYTES", 8 * 33):  # one row a block
            records = {r["provider"]: r for r in run_case(case, settings, {}, timer_factory=FakeTimer)}
        self.assertEqual(records["right"]["status"], "ok")
        self.assertLess(records["right"]["validation"]["rel_err"], 1e-6)
        self.assertEqual(records["wrong"]["status"], "WRONG")

    def test_relative_error_flags_unwritten_outputs_and_shape(self):
        ref = torch.ones(4, dtype=torch.float64)
        self.assertEqual(relative_error(torch.ones(4), ref), (0.0, ""))
        err, problem = relative_error(torch.tensor([1.0, float("nan"), 1.0, 1.0]), ref)
        self.assertIn("1 non-finite", problem)
        self.assertIn("shape", relative_error(torch.ones(5), ref)[1])

    def test_summary_statistics(self):
        stats = summarize([4.0, 1.0, 3.0, 2.0, 5.0])
        self.assertEqual((stats["median"], stats["min"], stats["max"], stats["q1"], stats["q3"]), (3.0, 1.0, 5.0, 2.0, 4.0))
        self.assertEqual(stats["samples"], 5)

    def test_input_copies_cover_twice_l2(self):
        l2 = 60 << 20
        self.assertEqual(input_copies_for(1 << 30, l2), 1)
        self.assertEqual(input_copies_for(64 << 20, l2), 2)
        self.assertGreaterEqual(input_copies_for(1 << 20, l2) * (1 << 20), min(2 * l2, 64 << 20))


class RenderTest(unittest.TestCase):
    def test_table_shows_ratios_wrong_and_noise_floor(self):
        text = render_table(load_fixture())
        self.assertIn("device copy 4.29 TB/s", text)
        self.assertIn("softmax fwd float32 4096x4096", text)
        self.assertIn("cuda [auto->block_per_row]", text)
        self.assertIn("torch.compile 1.30x", text)
        self.assertIn("WRONG: rel err", text)
        self.assertIn("refused: softmax: plan 'warp_per_row' cannot run", text)
        self.assertIn("A/A control (same peer timed twice): time ratio", text)
        self.assertTrue(text.splitlines()[-1].startswith("WRONG (computed the wrong result"))

    def test_table_shows_a_tuned_config_under_its_row(self):
        doc = load_fixture()
        mine = next(r for r in doc["records"] if r["status"] == "ok" and r["kind"] == "ours")
        mine["config"] = "128x64x64, 4 warps, 8 stages, group 8, split-K 1"
        lines = render_table(doc).splitlines()
        row = next(i for i, line in enumerate(lines) if line.strip().startswith(f"{mine['provider']} ["))
        self.assertEqual(lines[row + 1].split("config: ")[1], mine["config"])

    @unittest.skipUnless(importlib.util.find_spec("matplotlib"), "matplotlib not installed")
    def test_plot_from_stored_json_in_a_subprocess(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "plot.png")
            r = subprocess.run([sys.executable, "-m", "cuda_portfolio.bench.plot", str(FIXTURE), out],
                               capture_output=True, text=True, timeout=300)
            self.assertEqual(r.returncode, 0, r.stderr)
            with open(out, "rb") as f:
                data = f.read()
        self.assertEqual(data[:8], b"\x89PNG\r\n\x1a\n")
        self.assertGreater(len(data), 20000)

    @unittest.skipUnless(importlib.util.find_spec("matplotlib"), "matplotlib not installed")
    def test_rounds_plot_pairs_each_case_round_by_round(self):
        """--rounds: the cases holding round medians, each of ours and the A/A control against cuBLAS round by
        round; a GPU step shared by every provider leaves the per-round ratios flat."""
        doc = load_fixture()
        step = [1.0, 1.0, 1.15, 1.15, 1.15]                      # every provider 15% slower from round 3
        cube = [r for r in doc["records"] if r["op"] == "matmul" and r["shape"] == [4096, 4096, 4096]]
        for r, speed in zip(cube, (1.0, 1.1, 1.02, 1.0)):        # cuda, triton, cublas, cublas (A/A)
            r["time_ms"]["round_medians"] = [t * speed for t in step]
        cases = plot.round_cases(doc)
        self.assertEqual([title for title, _ in cases], ["matmul bfloat16 4096x4096x4096"])
        self.assertEqual(plot.round_cases(doc, "float32"), [])
        cublas = next(r for r in cube if r["provider"] == "cublas")
        self.assertEqual([round(x, 6) for x in round_ratios(cublas, cube[0])], [1.02] * 5)
        self.assertEqual(round_ratios(cublas, {"time_ms": {"median": 1.0, "round_medians": [1.0, 1.0]}}), [])
        with tempfile.TemporaryDirectory() as tmp:
            path, out = os.path.join(tmp, "rounds.json"), os.path.join(tmp, "rounds.png")
            with open(path, "w") as f:
                json.dump(doc, f)
            run = [sys.executable, "-m", "cuda_portfolio.bench.plot", path, out]
            r = subprocess.run(run + ["--rounds", "--case", "4096x4096x4096"], capture_output=True, text=True,
                               timeout=300)
            self.assertEqual(r.returncode, 0, r.stderr)
            with open(out, "rb") as f:
                self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n")
            r = subprocess.run(run + ["--rounds", "--case", "float32"], capture_output=True, text=True, timeout=300)
            self.assertEqual(r.returncode, 1)
            self.assertIn("no case matching 'float32' holds round medians", r.stderr)
            r = subprocess.run(run + ["--case", "4096"], capture_output=True, text=True, timeout=300)
            self.assertEqual(r.returncode, 2)
            self.assertIn("--case selects cases for --rounds", r.stderr)
        for r in doc["records"]:
            if r["status"] == "ok":
                r["time_ms"]["round_medians"] = step
        with self.assertRaisesRegex(ValueError, r"cases hold round medians; pick at most 6 with --case"):
            plot.render_rounds(doc, os.path.join(tempfile.gettempdir(), "never-written.png"))

    def test_report_tools_end_quietly_when_the_reader_stops(self):
        """`... | head`: a reader that closes the pipe before the table is written gets no traceback on stderr."""
        for module, args in (("report", [str(FIXTURE)]), ("targets", [str(FIXTURE)]),
                             ("compare", [str(FIXTURE), str(FIXTURE)])):
            with self.subTest(module=module):
                p = subprocess.Popen([sys.executable, "-m", f"cuda_portfolio.bench.{module}", *args],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                p.stdout.close()  # before the child has written anything: its first write meets a closed pipe
                _, err = p.communicate(timeout=300)
                self.assertNotIn("Traceback", err)
                self.assertEqual(p.returncode, 1, err)


def md_record(case, name, kind, ratio=None, plan=None, resolved=None, status="ok", reason="", **fields):
    """A record of `case` as the runner writes it, with the fields the markdown tables read."""
    r = base_record(case, Provider(name, kind, plan=plan, resolved_plan=resolved, status=status, reason=reason,
                                   control_of="torch" if kind == CONTROL else None))
    r.update(ratio_to_ceiling=ratio, **fields)
    return r


class MarkdownTest(unittest.TestCase):
    """report --markdown: the README's tables from small hand-built files, compared with hand-written text."""

    def test_softmax_table_fwd_bwd_with_a_refusing_and_a_wrong_peer(self):
        fwd = fake_case([])
        bwd = dataclasses.replace(fwd, direction="bwd")
        wide = dataclasses.replace(fwd, shape=(4, 4096))
        wide_bwd = dataclasses.replace(wide, direction="bwd")
        too_long = "RuntimeError: n = 4096 exceeds the recommended blocksize"

        def ours_and_torch(case, cuda, triton, torch_ratio):
            return [md_record(case, "cuda", OURS, cuda[0], "auto", cuda[1]),
                    md_record(case, "triton", OURS, triton[0], "auto", triton[1]),
                    md_record(case, "torch", PEER, torch_ratio), md_record(case, "torch (A/A)", CONTROL, 0.5)]

        doc = load_fixture()
        doc["env"]["liger_kernel"] = "0.8.5"
        doc["records"] = (
            ours_and_torch(fwd, (0.912, "warp_per_row"), (0.904, "warp_per_row"), 0.58)
            + [md_record(fwd, "liger", PEER, 0.94)]
            + ours_and_torch(bwd, (0.986, "block_per_row"), (0.971, "block_per_row"), 0.494)
            + [md_record(bwd, "liger", PEER, status="WRONG", reason="rel err 1.3e-02 > tolerance 1e-02")]
            + ours_and_torch(wide, (0.866, "split_row"), (0.77, "block_online"), 0.485)
            + [md_record(wide, "liger", PEER, status="refused", reason=too_long)]
            + ours_and_torch(wide_bwd, (0.92, "split_row"), (0.815, "split_row"), 0.42)
            + [md_record(wide_bwd, "liger", PEER, status="refused", reason=too_long)])
        expected = (
            "| fp32 softmax, fwd / bwd | cuda plan (fwd / bwd) | cuda | triton | torch | Liger 0.8.5 |\n"
            "|---|---|---|---|---|---|\n"
            "| 3×33 | warp_per_row / block_per_row | 0.91 / 0.99 | 0.90 / 0.97 (warp_per_row / block_per_row) "
            "| 0.58 / 0.49 | 0.94 / WRONG |\n"
            "| 4×4096 | split_row | 0.87 / 0.92 | 0.77 / 0.81 (block_online / split_row) | 0.48 / 0.42 "
            "| refuses / refuses |\n")
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "softmax.json")
            with open(path, "w") as f:
                json.dump(doc, f)
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                self.assertEqual(report.main(["--markdown", path]), 0)
        self.assertEqual(out.getvalue(), expected)

    def test_softmax_table_gives_the_reference_op_a_column(self):
        case = fake_case([])
        doc = load_fixture()
        doc["records"] = [md_record(case, "cuda", OURS, 0.7, "auto", "split_row"), md_record(case, "torch", PEER, 0.5),
                          md_record(case, "elementwise (same bytes)", REFERENCE, 0.86),
                          md_record(case, "torch (A/A)", CONTROL, 0.5)]
        self.assertEqual(report.render_markdown(doc),
                         "| fp32 softmax, fwd | cuda plan (fwd) | cuda | torch | elementwise (same bytes) |\n"
                         "|---|---|---|---|---|\n"
                         "| 3×33 | split_row | 0.70 | 0.50 | 0.86 |")

    def test_a_cell_timed_by_another_method_than_the_run_says_so(self):
        fwd = fake_case([])
        bwd = dataclasses.replace(fwd, direction="bwd")
        doc = load_fixture()
        doc["env"]["timing_method"] = "graph"
        doc["records"] = [md_record(case, name, kind, ratio, *plan, method=method)
                          for case, events in ((fwd, "graph"), (bwd, "events"))
                          for name, kind, ratio, plan, method in (("cuda", OURS, 0.9, ("auto", "split_row"), "graph"),
                                                                  ("liger", PEER, 0.8, (), events))]
        self.assertEqual(report.render_markdown(doc),
                         "| fp32 softmax, fwd / bwd | cuda plan (fwd / bwd) | cuda | Liger |\n"
                         "|---|---|---|---|\n"
                         "| 3×33 | split_row | 0.90 / 0.90 | 0.80 / 0.80 (events) |")

    def test_gemm_table_and_the_ladder_of_kernel_versions(self):
        bf16 = Case("matmul", "fwd", torch.bfloat16, (4000, 3000, 2000), None, None, 1e-2, flops=48 * 10 ** 9)
        fp16 = dataclasses.replace(bf16, dtype=torch.float16)
        doc = load_fixture()
        doc["records"] = [md_record(bf16, "cuda", OURS, 0.9364, "auto", "wgmma_tma"),
                          md_record(bf16, "triton", OURS, 0.9772, "auto", "persistent_tma"),
                          md_record(bf16, "cublas", PEER, 1.0, tflop_per_s=575.02),
                          md_record(bf16, "cublas (A/A)", CONTROL, 0.998, tflop_per_s=574.9),
                          md_record(fp16, "cuda", OURS, None, "auto", "wgmma_tma", status="WRONG", reason="rel err 1"),
                          md_record(fp16, "triton", OURS, 0.9950, "auto", "tiled"),
                          md_record(fp16, "cublas", PEER, 1.0, tflop_per_s=548.18)]
        self.assertEqual(report.render_markdown(doc),
                         "| GEMM | cuda (kernel) | triton (kernel) | cuBLAS TFLOP/s |\n"
                         "|---|---|---|---|\n"
                         "| bf16 4000×3000×2000 | 0.94 (wgmma_tma) | 0.98 (persistent_tma) | 575 |\n"
                         "| fp16 4000×3000×2000 | WRONG (wgmma_tma) | 0.99 (tiled) | 548 |")

        fp32 = dataclasses.replace(bf16, dtype=torch.float32, shape=(64, 64, 64))
        bf16 = dataclasses.replace(fp32, dtype=torch.bfloat16)
        not_fp32 = "cuda matmul kernel 'mma_sync' cannot run: mma_sync supports float16 and bfloat16, not float32"
        doc["records"] = [
            md_record(fp32, "cuda", OURS, 0.9257, "register_blocked", "register_blocked", tflop_per_s=47.42),
            md_record(fp32, "cuda", OURS, None, "mma_sync", "mma_sync", status="refused", reason=not_fp32),
            md_record(fp32, "cublas", PEER, 1.0, tflop_per_s=51.23),
            md_record(bf16, "cuda", OURS, 0.0676, "register_blocked", "register_blocked", tflop_per_s=46.55),
            md_record(bf16, "cuda", OURS, 0.6363, "mma_sync", "mma_sync", tflop_per_s=438.37),
            md_record(bf16, "cublas", PEER, 1.0, tflop_per_s=688.96)]
        self.assertEqual(report.render_markdown(doc),
                         "| GEMM ladder, 64³ | fp32 TFLOP/s | fp32 × cuBLAS | bf16 TFLOP/s | bf16 × cuBLAS |\n"
                         "|---|---|---|---|---|\n"
                         "| cuda register_blocked | 47.4 | 0.93 | 46.5 | 0.07 |\n"
                         "| cuda mma_sync | refuses (fp16/bf16 only) |  | 438.4 | 0.64 |\n"
                         "| cublas | 51.2 | 1.00 | 689.0 | 1.00 |")


class CompareTest(unittest.TestCase):
    """bench.compare: BEFORE and AFTER matched record by record, judged against their A/A bands."""

    def ours_ok(self, doc):
        return [r for r in doc["records"] if r["kind"] == "ours" and r["status"] == "ok"]

    def test_a_run_against_itself_is_all_noise(self):
        doc = load_fixture()
        lines = compare.compare_lines(doc, copy.deepcopy(doc))
        self.assertEqual(lines[-1], f"0 faster, 0 slower, {len(self.ours_ok(doc))} within noise, "
                                    "2 not comparable (?: absent from one run or not ok)")
        self.assertFalse([line for line in lines if line[:2] in ("+ ", "- ")])

    def test_the_band_holds_one_with_a_single_control_or_controls_all_one_side(self):
        """A run with one A/A control (or all its controls above 1) compared with itself: every cell is noise."""
        doc = load_fixture()
        controls = [r for r in doc["records"] if r["kind"] == "control"]
        self.assertTrue(controls)
        for control in controls:
            control["ratio_to_peers"][control["control_of"]] = 1.004  # every A/A ratio on one side of 1
        low, high = compare.aa_band(doc["records"])
        self.assertLess(low, 1.0)
        self.assertGreater(high, 1.0)
        lines = compare.compare_lines(doc, copy.deepcopy(doc))
        self.assertFalse([line for line in lines if line[:2] in ("+ ", "- ")], lines)

    def test_changes_outside_the_band_are_marked_and_inside_are_not(self):
        before = load_fixture()
        after = copy.deepcopy(before)
        low, high = compare.aa_band(before["records"])
        faster, slower, small = self.ours_ok(after)[:3]
        faster["ratio_to_ceiling"] *= high * 1.10
        slower["ratio_to_ceiling"] *= low * 0.90
        small["ratio_to_ceiling"] *= (1.0 + high) / 2  # inside the band
        lines = compare.compare_lines(before, after, changed_only=True)
        marked = {line[0] for line in lines if line[:2] in ("+ ", "- ", "= ")}
        self.assertEqual(marked, {"+", "-"})
        self.assertTrue(any(line.startswith("+ ") and compare.provider_label(faster) in line for line in lines))
        self.assertTrue(lines[-1].startswith("1 faster, 1 slower, "), lines[-1])

    def test_the_gpu_of_each_run_is_named_when_recorded(self):
        before = load_fixture()
        after = copy.deepcopy(before)
        after["env"]["gpu_uuid"] = "8d3f2a61-0c4e-9b7a-1f25-3e6c9d0a4b71"  # runs before session 35 have none
        lines = compare.compare_lines(before, after)
        self.assertTrue(lines[0].startswith("before: ") and "8d3f2a61" not in lines[0], lines[0])
        self.assertIn(f"{after['env']['gpu']} 8d3f2a61-0c4e, ", lines[1])

    def test_runs_on_two_gpus_are_flagged(self):
        before = load_fixture()
        after = copy.deepcopy(before)
        before["env"]["gpu_uuid"] = "2ad44e28-1fb0-85e9-8bbf-ed5d6ad0e351"
        after["env"]["gpu_uuid"] = "f5917ba0-64f9-c417-8605-72cf1595cc59"
        flag = "these runs ran on different GPUs"
        self.assertTrue(any(line.startswith(flag) for line in compare.compare_lines(before, after)))
        after["env"]["gpu_uuid"] = before["env"]["gpu_uuid"]
        self.assertFalse(any(line.startswith(flag) for line in compare.compare_lines(before, after)))
        after["env"]["gpu_uuid"] = None  # not recorded (runs before session 35): no claim either way
        self.assertFalse(any(line.startswith(flag) for line in compare.compare_lines(before, after)))

    def test_each_line_shows_both_runs_median_times(self):
        before = load_fixture()
        after = copy.deepcopy(before)
        mine = self.ours_ok(after)[0]
        mine["time_ms"]["median"] *= 1.5
        label = compare.provider_label(mine)
        line = next(line for line in compare.compare_lines(before, after) if label in line
                    and compare.case_title(mine) in line)
        old_ms = self.ours_ok(before)[0]["time_ms"]["median"]
        self.assertTrue(line.endswith(f"{report.format_time(old_ms)} -> {report.format_time(old_ms * 1.5).strip()}"),
                        line)

    def test_a_different_plan_that_ran_is_named(self):
        before = load_fixture()
        after = copy.deepcopy(before)
        mine = next(r for r in self.ours_ok(after) if r["plan"] == "auto")
        mine["resolved_plan"] = "split_row"
        lines = compare.compare_lines(before, after)
        self.assertTrue(any("-> split_row)" in line for line in lines))

    def test_peers_only_on_request(self):
        doc = load_fixture()
        self.assertFalse(any(" torch " in line for line in compare.compare_lines(doc, doc)[4:]))
        self.assertTrue(any(" torch " in line for line in compare.compare_lines(doc, doc, peers=True)[4:]))

    def test_a_repeat_of_before_widens_the_band_to_its_drift(self):
        before = load_fixture()
        after, repeat = copy.deepcopy(before), copy.deepcopy(before)
        _, high = compare.aa_band(before["records"])
        changed = self.ours_ok(after)[0]
        changed["ratio_to_ceiling"] *= high + 0.03  # outside the A/A band, inside the repeat's drift below
        drifted = self.ours_ok(repeat)[1]
        drifted["ratio_to_ceiling"] *= 1 - (high - 1) - 0.05
        spread = (high - 1) + 0.05
        label = compare.provider_label(changed)
        without = compare.compare_lines(before, after)
        self.assertTrue(any(line.startswith("+ ") and label in line for line in without))
        lines = compare.compare_lines(before, after, repeat=repeat)
        self.assertIn(f"repeat against before: {1 - spread:.3f}..1.000 over {len(self.ours_ok(before))} records of ours",
                      lines)
        self.assertTrue(any(line.startswith("noise band: ") and f"(±{spread:.3f})" in line for line in lines), lines)
        self.assertFalse([line for line in lines if line[:2] in ("+ ", "- ")])
        self.assertTrue(any(compare.provider_label(drifted) in line and f"repeat {1 - spread:5.3f}" in line
                            for line in lines))
        with tempfile.TemporaryDirectory() as tmp:
            paths = []
            for name, doc in (("before", before), ("after", after), ("repeat", repeat)):
                paths.append(os.path.join(tmp, f"{name}.json"))
                with open(paths[-1], "w") as f:
                    json.dump(doc, f)
            r = subprocess.run([sys.executable, "-m", "cuda_portfolio.bench.compare", paths[0], paths[1],
                                "--repeat", paths[2]], capture_output=True, text=True, timeout=300)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.splitlines(), lines)

    def test_command_line_refuses_a_file_that_is_not_results(self):
        with tempfile.TemporaryDirectory() as tmp:
            bad = os.path.join(tmp, "bad.json")
            with open(bad, "w") as f:
                json.dump({"schema": "something else"}, f)
            r = subprocess.run([sys.executable, "-m", "cuda_portfolio.bench.compare", str(FIXTURE), bad],
                               capture_output=True, text=True, timeout=300)
        self.assertEqual(r.returncode, 2)
        self.assertIn("is not a benchmark results file", r.stderr)


class TargetsTest(unittest.TestCase):
    """bench.targets: each record of ours gets the issues' bar for its op, direction, size and shape."""

    def verdict(self, found, op, direction, dtype, shape, provider, measure):
        return next(v for v in found if (v.record["op"], v.record["direction"], v.record["dtype"], v.record["shape"],
                                         v.record["provider"], v.measure) == (op, direction, dtype, shape, provider,
                                                                               measure))

    def test_bars_by_bytes_moved_shape_and_direction(self):
        found = targets.verdicts(load_fixture())

        def fwd(dtype, shape, provider="cuda"):
            return self.verdict(found, "softmax", "fwd", dtype, shape, provider, "x copy")

        self.assertEqual(fwd("float32", [2048, 50257]).bar, 0.90)                  # moves 785 MiB
        self.assertTrue(fwd("float32", [2048, 50257]).met)                         # 0.935
        self.assertFalse(fwd("float32", [2048, 50257], "triton").met)              # 0.899
        self.assertEqual(fwd("bfloat16", [65536, 256]).bar, 0.80)                  # moves 64 MiB
        self.assertEqual(fwd("float32", [32, 1 << 20]).bar, 0.90)                  # 256 MiB: the higher of 0.90, 0.85
        self.assertEqual(fwd("bfloat16", [32, 1 << 20]).bar, 0.85)                 # 128 MiB: the higher of 0.80, 0.85
        bwd = self.verdict(found, "softmax", "bwd", "bfloat16", [65536, 256], "triton", "x copy")
        self.assertEqual(bwd.bar, 0.85)
        self.assertFalse([v for v in found if v.record["provider"] not in ("cuda", "triton")])
        self.assertFalse([v for v in found if v.record["status"] != "ok"])  # the fixture's: none WRONG or errored

    def test_a_wrong_kernel_or_a_missing_ceiling_is_not_met_and_a_refusal_has_no_cell(self):
        doc = load_fixture()
        wrong = next(r for r in doc["records"] if r["op"] == "softmax" and r["provider"] == "cuda"
                     and r["plan"] == "auto")
        wrong.update(status="WRONG", ratio_to_ceiling=None)
        unmeasured = next(r for r in doc["records"] if r["op"] == "matmul" and r["provider"] == "triton"
                          and r["plan"] == "auto" and r["status"] == "ok")
        unmeasured["ratio_to_ceiling"] = None  # as when the case's cuBLAS failed
        found = targets.verdicts(doc)
        for record, why in ((wrong, "(WRONG)"), (unmeasured, "(unmeasured")):
            cell = next(v for v in found if v.record is record and v.measure != "x Liger")
            self.assertFalse(cell.met)
            self.assertIn(why, cell.rule)
        self.assertEqual(plot.value_text(float("nan"), 0.9, "x copy"), "failed")
        refused = next(r for r in doc["records"] if r["provider"] in ("cuda", "triton") and r["status"] == "ok")
        refused["status"] = "refused"
        self.assertFalse([v for v in targets.verdicts(doc) if v.record is refused])

    def test_gemm_bars_and_liger_only_where_liger_ran(self):
        doc = load_fixture()
        mine = next(r for r in doc["records"] if r["op"] == "softmax" and r["provider"] == "triton")
        mine["ratio_to_peers"]["liger"] = 0.97
        found = targets.verdicts(doc)
        self.assertEqual([(v.value, v.bar, v.met) for v in found if v.measure == "x Liger"], [(0.97, 1.0, False)])
        cube = self.verdict(found, "matmul", "fwd", "bfloat16", [4096, 4096, 4096], "cuda", "x cuBLAS")
        self.assertEqual((cube.bar, cube.met), (1.00, False))                       # wgmma_tma at 0.952
        odd = self.verdict(found, "matmul", "fwd", "bfloat16", [4000, 3000, 2000], "cuda", "x cuBLAS")
        self.assertEqual((odd.bar, odd.met), (0.90, True))
        self.assertEqual(self.verdict(found, "matmul", "fwd", "bfloat16", [4000, 3000, 2000], "triton",
                                      "x cuBLAS").bar, 0.90)
        lines = targets.render(doc, "fixture", only_not_met=True)
        self.assertFalse([line for line in lines if line.startswith("  met ")])
        self.assertRegex(lines[-1], r"^  \d+ met, \d+ not met, of \d+ cells with a target$")

    def test_grid_of_every_verdict_and_its_plot(self):
        doc = load_fixture()
        mine = next(r for r in doc["records"] if r["op"] == "softmax" and r["provider"] == "triton")
        mine["ratio_to_peers"]["liger"] = 0.97
        found = targets.verdicts(doc)
        grids = plot.target_grids(found)
        self.assertEqual([title for title, *_ in grids],
                         ["softmax: copy ratio", "softmax: Liger ratio", "matmul: cuBLAS ratio"])
        self.assertEqual(sum(len(cells) for *_, cells in grids), len(found))     # every verdict in one cell
        for title, rows, columns, cells in grids:
            self.assertEqual(len(set(rows)), len(rows), title)
            self.assertTrue(all(row in rows and column in columns for row, column in cells), title)
        columns = grids[0][2]
        self.assertLess(columns.index("cuda fp32 fwd"), columns.index("cuda fp32 bwd"))
        cube = grids[2][3]["4096³", "cuda bf16"]
        self.assertEqual((cube.bar, cube.met), (1.00, False))
        self.assertEqual(plot.value_text(0.9996, 1.0, "x Liger"), "0.9996")       # 1.000 would read as met
        self.assertEqual(plot.value_text(0.8996, 0.90, "x copy"), "0.8996")
        self.assertEqual(plot.value_text(0.936, 0.90, "x copy"), "0.94")
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "nested", "targets.png")
            r = subprocess.run([sys.executable, "-m", "cuda_portfolio.bench.targets", str(FIXTURE), "--plot", out],
                               capture_output=True, text=True, timeout=300)
            self.assertEqual(r.returncode, 0, r.stderr)
            with open(out, "rb") as f:
                self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n")

    def test_command_line(self):
        r = subprocess.run([sys.executable, "-m", "cuda_portfolio.bench.targets", str(FIXTURE), "--not-met"],
                           capture_output=True, text=True, timeout=300)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("NOT MET  matmul bfloat16 4096x4096x4096", r.stdout)
        with tempfile.TemporaryDirectory() as tmp:
            bad = os.path.join(tmp, "bad.json")
            with open(bad, "w") as f:
                json.dump({"schema": "something else"}, f)
            r = subprocess.run([sys.executable, "-m", "cuda_portfolio.bench.targets", bad],
                               capture_output=True, text=True, timeout=300)
        self.assertEqual(r.returncode, 2)
        self.assertIn("is not a benchmark results file", r.stderr)


class CommandLineTest(unittest.TestCase):
    def run_module(self, *args, env=None):
        return subprocess.run([sys.executable, "-m", "cuda_portfolio.bench", *args], capture_output=True, text=True,
                              timeout=300, env=env)

    def test_help_works_without_a_gpu(self):
        r = self.run_module("--help")
        self.assertEqual(r.returncode, 0, r.stderr)
        for flag in ("--op", "--backend", "--dtype", "--direction", "--shapes", "--plans", "--json", "--plot",
                     "--rounds"):
            self.assertIn(flag, r.stdout)

    def test_script_wrapper_help(self):
        script = Path(__file__).resolve().parents[1] / "scripts" / "benchmark.py"
        r = subprocess.run([sys.executable, str(script), "--help"], capture_output=True, text=True, timeout=300)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("scripts/benchmark.py", r.stdout)

    @unittest.skipIf(torch.cuda.is_available(), "a GPU is present")
    def test_run_without_gpu_exits_3_with_one_line(self):
        r = self.run_module("--op", "softmax", "--shapes", "8x8")
        self.assertEqual(r.returncode, 3)
        self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
        self.assertRegex(r.stderr, "benchmark: (no CUDA device|TRITON_INTERPRET=1)")

    def test_git_commit_comes_from_the_environment_first(self):
        saved = {k: os.environ.get(k) for k in (env.COMMIT_ENV, env.DIRTY_ENV)}
        try:
            os.environ[env.COMMIT_ENV], os.environ[env.DIRTY_ENV] = "abc123", "1"
            self.assertEqual(env.git_state(), ("abc123", True))
            del os.environ[env.DIRTY_ENV]
            self.assertEqual(env.git_state(), ("abc123", None))
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v


if __name__ == "__main__":
    unittest.main()
