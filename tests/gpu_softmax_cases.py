"""GPU tier: softmax in both backends, every plan, against float64 torch (imported by tests/test_gpu.py).

The Triton plans that tune their warps (triton_kernels/softmax.py, "Run-time tuning") would time two
configurations in every bucket this file makes, so the tests run untimed (CUDA_PORTFOLIO_NO_TUNING=1: the table's
configuration); both candidates are compiled for sm_90a in the CPU tier (aot_specs), and
test_triton_tuned_warps_run_correctly runs the timed tuning itself.
"""
import os
from unittest import mock

import torch

import cuda_portfolio as cp
from cuda_portfolio.softmax import _backend_module
from tests.gpu_util import (NOT_A_SOFTMAX, TOLERANCE, GpuTestCase, format_tolerance, poison_free_blocks_like,
                            poisoned_like)
from tests.softmax_reference import grad_scale, reference_grad
from tests.split_row_forms import split_row_forced

DTYPES = (torch.float32, torch.float16, torch.bfloat16)
COLS = (1, 7, 1000, 1025, 4097, 50257, 131072, 1 << 20)
ROWS = (1, 3, 37, 4097)
MAX_ELEMENTS = 1 << 26  # per case, so the whole sweep runs in a few minutes
# The sweep's backends; a sanitizer run splits them over two processes (scripts/reproduce_results.sh).
SWEEP_BACKENDS = tuple(os.environ.get("CUDA_PORTFOLIO_TEST_BACKENDS", "cuda,triton").split(","))
if not set(SWEEP_BACKENDS) <= {"cuda", "triton"}:
    raise ValueError(f"CUDA_PORTFOLIO_TEST_BACKENDS={','.join(SWEEP_BACKENDS)}: use cuda, triton or both")


def at_offset(rows, cols, dtype, offset, fill=None):
    """A (rows, cols) view `offset` elements into its storage (its rows' 16-byte phase), random or `fill`."""
    flat = torch.randn(rows * cols + offset, device="cuda").to(dtype)
    view = flat[offset:].view(rows, cols)
    return view.fill_(fill) if fill is not None else view


def clear_triton_tuning():
    """Forget the Triton softmax's tuned picks, so none made here outlives the test that made it."""
    _backend_module("triton")._TUNED.clear()


class SoftmaxGpuTest(GpuTestCase):
    def setUp(self):
        super().setUp()
        self.run_triton_untuned(clear_triton_tuning)
        self.plans_offered = set()  # (backend, plan) pairs runnable() yielded in this test

    def test_triton_tuned_warps_run_correctly(self):
        """Timed tuning of the register-resident plans: the first call of a bucket picks one of its candidates,
        the result is right, a second call in the bucket keeps the pick, and the benchmark's text says tuned."""
        module = _backend_module("triton")
        with mock.patch.dict(os.environ):
            os.environ.pop("CUDA_PORTFOLIO_NO_TUNING", None)
            for plan, rows, cols in (("warp_per_row", 4097, 1000), ("block_per_row", 37, 5000)):
                for dtype in (torch.float32, torch.bfloat16):
                    with self.subTest(plan=plan, dtype=dtype):
                        self.check_direct(module, plan, rows, cols, dtype)
                        x = torch.empty(rows, cols, device="cuda", dtype=dtype)
                        alignment = module._alignment(plan, (x,), cols)  # block_per_row's EDGES moves whole units
                        units = any(alignment)
                        for direction in ("fwd", "bwd"):
                            picked = module._TUNED[module._bucket(plan, x, direction, alignment)]
                            tile = module._tile_cols(plan, x, direction, alignment)
                            self.assertIn(picked, module.candidate_configs(plan, dtype, tile, direction, units,
                                                                           alignment[1]))
                            text = module.kernel_config(x, plan, direction, alignment)
                            self.assertTrue(text.endswith(", tuned"), text)
                        self.check_direct(module, plan, rows, cols, dtype)  # the picks, again

    def test_triton_every_tuning_candidate_runs_correctly(self):
        """Each configuration the tuner may pick (warps, and the block_per_row forward's load hint), pinned as the
        bucket's pick one at a time, forward and backward against float64; block_per_row's 16-bit rows in its
        three-quarter tiles too (block_per_row_tile: EDGES rows of 5001 and 9001 columns, 16-byte rows of 9008; the
        backward at 9001 and 9008), and its 16-bit forward's held form at 32768 and 30001 (EDGES) columns."""
        module = _backend_module("triton")
        for plan, rows, cols in (("warp_per_row", 37, 1000), ("block_per_row", 37, 5000), ("block_per_row", 5, 32768),
                                 ("block_per_row", 5, 30001), ("block_per_row", 37, 5001), ("block_per_row", 37, 9001),
                                 ("block_per_row", 37, 9008)):
            for dtype in (torch.float32, torch.bfloat16):
                x = torch.empty(rows, cols, device="cuda", dtype=dtype)
                alignment = module._alignment(plan, (x,), cols)
                picks = {d: module.candidate_configs(plan, dtype, module._tile_cols(plan, x, d, alignment), d,
                                                     any(alignment), alignment[1])
                         for d in ("fwd", "bwd")}
                for i in range(max(map(len, picks.values()))):
                    pinned = {module._bucket(plan, x, d, alignment): c[min(i, len(c) - 1)] for d, c in picks.items()}
                    with self.subTest(plan=plan, dtype=dtype, cols=cols, configs=list(pinned.values())), \
                            mock.patch.dict(module._TUNED, pinned):
                        self.check_direct(module, plan, rows, cols, dtype)

    def test_triton_split_row_workspace_counters_and_tags(self):
        """split_row's pooled workspace ([ticket, exits, launches, partial words]): after every launch with many
        chunks per row the ticket and exit counters are zero (the kernels' last program out resets them), the launch
        count has advanced by one, and the launch's words carry its tag; the next launch on the same buffer, on fresh
        inputs, reads its own partials, not the last launch's (its output is right). A CUDA graph captured with no
        pooled buffer large enough zeroes its own in the graph, on every replay, and leaves the pool alone."""
        module = _backend_module("triton")
        with mock.patch.dict(module._WORKSPACES, clear=True):
            launches = 0
            for dtype, cols in ((torch.float32, 1 << 20), (torch.bfloat16, (1 << 20) - 3)):
                for _ in range(2):
                    with self.subTest(dtype=dtype, cols=cols, launch=launches):
                        self.check_direct(module, "split_row", 5, cols, dtype)
                        launches += 2  # check_direct launches the forward, then the backward
                        (buffers,) = module._WORKSPACES.values()
                        (buffer,) = buffers
                        self.assertEqual(buffer[:3].tolist(), [0, 0, launches])
                        tags = (buffer[3:] & 0xFFFFFFFF).unique().tolist()
                        self.assertIn(launches, tags, "no word carries this launch's tag")
                        self.assertLessEqual(max(tags), launches)
            self.skip_if_caching_allocator_off("the eager launches above ran; CUDA graph capture needs the caching "
                                               "allocator")
            pooled = {key: list(buffers) for key, buffers in module._WORKSPACES.items()}
            x = torch.randn(300, 1 << 17, device="cuda")  # more rows than any pooled buffer holds
            y = poisoned_like(x)
            stream = torch.cuda.Stream()
            stream.wait_stream(torch.cuda.current_stream())
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph, stream=stream):
                module.forward(x, y, "split_row")
            self.assertEqual(pooled, {key: list(buffers) for key, buffers in module._WORKSPACES.items()})
            for _ in range(2):
                y.fill_(float("nan"))
                graph.replay()
                torch.cuda.synchronize()
                self.assertClose(y, torch.softmax(x.double(), -1), TOLERANCE[torch.float32], "graph replay")

    def test_triton_split_row_held_and_streamed(self):
        """split_row's two forms, each forced where the rule (split_row_config, by rows in flight) may pick the other:
        held chunks (a tile kept in registers through the row exchange; 16-bit rows as words of two elements, reduced
        and widened by inline PTX) and streamed ones. Rows of many chunks, rows off 16-byte boundaries (EDGES: head and
        tail elements beside the units), a row of chunks shorter than their tile (50257 columns), and special values in
        a row's last chunk: NaN, +inf and all -inf give NaN rows as torch, -inf elements 0. The benchmark's text names
        the form."""
        module = _backend_module("triton")
        inf = float("inf")
        for form in ("held", "streamed"):
            for dtype in DTYPES:
                with split_row_forced(form):
                    for rows, cols in ((5, 1 << 20), (37, 131069), (3, 50257)):
                        with self.subTest(form=form, dtype=dtype, rows=rows, cols=cols):
                            self.check_direct(module, "split_row", rows, cols, dtype)
                            x = torch.empty(rows, cols, device="cuda", dtype=dtype)
                            for direction in ("fwd", "bwd"):
                                text = module.kernel_config(x, "split_row", direction, (True, False))
                                self.assertEqual("chunks held" in text, form == "held", text)
                    x = torch.randn(5, 1 << 20, device="cuda") * 3
                    x[0, -5] = float("nan")
                    x[1] = -inf
                    x[2, -1] = inf
                    x[3, ::3] = -inf
                    x = x.to(dtype)
                    x_before = x.clone()
                    y = poisoned_like(x, NOT_A_SOFTMAX)
                    module.forward(x, y, "split_row")
                    torch.cuda.synchronize()
                with self.subTest(form=form, dtype=dtype, values="special"):
                    self.assertClose(y, torch.softmax(x.double(), -1), TOLERANCE[dtype], "special values")
                    bits = torch.int32 if dtype == torch.float32 else torch.int16  # bitwise: NaN != NaN
                    self.assertTrue(torch.equal(x.view(bits), x_before.view(bits)), "forward modified its input")

    def test_triton_split_row_more_chunks_than_threads(self):
        """A streamed split_row forward whose row has more chunks than a program has threads, so each thread polls
        several of the row's words (_published, POLL_LANES past the threads; no preset shape gets there): one fp32 row
        long enough for that on this GPU, forward and backward against float64."""
        if "triton" not in SWEEP_BACKENDS:
            self.skipTest("the Triton backend is not in CUDA_PORTFOLIO_TEST_BACKENDS")
        module = _backend_module("triton")
        for cols in (6 << 20, 12 << 20, 24 << 20):
            x = torch.empty(1, cols, device="cuda")
            config = module._table_config("split_row", x, "fwd", (True, False))
            chunks, _, _ = module._split_geometry(1, cols, x.element_size(), config, x.device)
            if module._poll_lanes(chunks, config) > 32 * config.num_warps:
                break
        else:
            self.skipTest("no row of up to 24M fp32 columns has more chunks than threads on this GPU")
        del x
        self.check_direct(module, "split_row", 1, cols, torch.float32)

    def runnable(self, backend, rows, cols, dtype):
        """The plans of `backend` that accept this shape (each noted for assertEveryPlanRan)."""
        module = _backend_module(backend)
        for plan in module.plans():
            try:
                module.check_plan(plan, rows, cols, dtype, torch.device("cuda"))
            except ValueError:
                continue
            self.plans_offered.add((backend, plan))
            yield plan

    def assertEveryPlanRan(self, backends, shape_limited=()):
        """Each plan of each backend was offered by runnable() somewhere in this test, so a refusal that widened
        (check_plan refusing a shape it should take) cannot pass the test with less run than its name says.
        Excepted: `shape_limited`, plans the test's shapes exceed by design, and plans this GPU has none of
        (cluster_split_row off Hopper: refused even one fp32 column; under KERNEL_REQUIRE_GPU=1 on Hopper it runs)."""
        for backend in backends:
            module = _backend_module(backend)
            for plan in module.plans():
                if (backend, plan) in self.plans_offered or plan in shape_limited:
                    continue
                try:
                    module.check_plan(plan, 1, 1, torch.float32, torch.device("cuda"))
                except ValueError:
                    continue  # this GPU or build lacks the plan: the device tests say so elsewhere
                self.fail(f"{backend} plan {plan} ran on none of this test's shapes")

    def test_every_backend_plan_dtype_shape_forward_backward(self):
        """Each plan's forward/backward called directly on NaN-filled outputs (check_direct; the public API is
        test_api_autograd_dims_and_views's), 16-bit outputs within 1.1x their format's own error (format_tolerance)."""
        for backend in SWEEP_BACKENDS:
            module = _backend_module(backend)
            shapes_run = {(plan, dtype): 0 for plan in module.plans() for dtype in DTYPES}
            for dtype in DTYPES:
                for cols in COLS:
                    for rows in ROWS:
                        if rows * cols > MAX_ELEMENTS:
                            continue
                        for plan in self.runnable(backend, rows, cols, dtype):
                            with self.subTest(backend=backend, plan=plan, dtype=dtype, rows=rows, cols=cols):
                                self.check_direct(module, plan, rows, cols, dtype)
                                shapes_run[plan, dtype] += 1
            for (plan, dtype), count in shapes_run.items():  # per dtype: a plan refusing one dtype's shapes shows
                self.assertGreaterEqual(count, 3, f"{backend} plan {plan} ran only {count} {dtype} shapes")

    def check_direct(self, module, plan, rows, cols, dtype):
        x = torch.randn(rows, cols, device="cuda") * 4
        # Row 0's max swapped into its last element, row 1's into its first: the elements past a row's whole 16-byte
        # units (and a chunk's ends) then carry the row's largest weight, so a kernel that drops them from the sum or
        # leaves them unwritten fails, where over random rows the norm hid three such elements on most seeds (session
        # 67's audit). A swap, not a larger value: the rows' numerics stay those of random rows.
        for row, edge in ((0, cols - 1), (1, 0))[:rows]:
            top = int(x[row].argmax())
            x[row, edge], x[row, top] = x[row, top].item(), x[row, edge].item()
        x = x.to(dtype)
        dy = torch.randn(rows, cols, device="cuda").to(dtype)
        self.check_forward_backward(module, plan, x, poisoned_like(x), dy, poisoned_like(x))

    def check_forward_backward(self, module, plan, x, y, dy, dx):
        """module.forward(x) into y, then module.backward(y, dy) into dx (y and dx poisoned by the caller), each
        against float64 within format_tolerance, and the inputs of each unchanged."""
        x_before = x.clone()
        module.forward(x, y, plan)
        torch.cuda.synchronize()
        self.assertTrue(torch.equal(x, x_before), "forward modified its input")
        ref = torch.softmax(x.double(), -1)
        self.assertClose(y, ref, format_tolerance(ref, x.dtype), "forward")
        dy_before, y_before = dy.clone(), y.clone()
        module.backward(y, dy, dx, plan)
        torch.cuda.synchronize()
        self.assertTrue(torch.equal(dy, dy_before) and torch.equal(y, y_before), "backward modified its inputs")
        ref, scale = reference_grad(y, dy), grad_scale(y, dy)
        self.assertClose(dx, ref, format_tolerance(ref, x.dtype, scale), "backward", scale=scale)

    def test_block_online_blocks_walking_several_rows(self):
        """Long rows and more rows than the GPU keeps in flight: block_online caps its grid at
        about one block (program) per SM (the rows in flight must fit L2 between their two reads),
        so each walks several rows (row += gridDim.x); the sweep's shapes never get there. (The
        Triton backward launches a program per row at any length.)"""
        sms = torch.cuda.get_device_properties(torch.cuda.current_device()).multi_processor_count
        for backend in SWEEP_BACKENDS:
            module = _backend_module(backend)
            for dtype in (torch.float32, torch.bfloat16):
                for cols in (131072, 131071):  # aligned rows, and rows that start off 16-byte boundaries
                    with self.subTest(backend=backend, dtype=dtype, cols=cols):
                        self.check_direct(module, "block_online", 3 * sms + 5, cols, dtype)

    def test_triton_block_online_backward_in_two_programs_per_sm(self):
        """The Triton block_online backward's two 16-warp programs per SM (block_online_backward_config), taken when
        the rows fill them and fit L2, over several tiles: whole tiles, a masked last tile, and rows off 16-byte
        boundaries (EDGES, and the per-element path of a storage offset)."""
        if "triton" not in SWEEP_BACKENDS:
            self.skipTest("the Triton backend is not in CUDA_PORTFOLIO_TEST_BACKENDS")
        module = _backend_module("triton")
        sms = torch.cuda.get_device_properties(torch.cuda.current_device()).multi_processor_count
        rows = 2 * sms + 3
        for dtype in DTYPES:
            pair = module.BLOCK_ONLINE_BWD_PAIR[dtype.itemsize]
            for cols in (3 * pair.block_n, 2 * pair.block_n + 9):
                for offset in (0, 1):
                    with self.subTest(dtype=dtype, cols=cols, offset=offset):
                        y = at_offset(rows, cols, dtype, offset, fill=0.0)
                        y.copy_(torch.softmax(torch.randn(rows, cols, device="cuda") * 4, -1))
                        dy = at_offset(rows, cols, dtype, offset)
                        dx = poisoned_like(y)  # contiguous: with offset 1 its rows are out of phase with y's
                        alignment = module._alignment("block_online", (y, dy, dx), cols)
                        self.assertEqual(alignment, (cols % 16 == 0 and offset == 0, cols % 16 != 0 and offset == 0))
                        tile = pair.block_n if alignment[0] or dtype.itemsize == 4 else pair.block_n // 2
                        self.assertEqual(module._table_config("block_online", y, "bwd", alignment),
                                         pair._replace(block_n=tile, stream_stores=any(alignment)))
                        y_before, dy_before = y.clone(), dy.clone()
                        module.backward(y, dy, dx, "block_online")
                        torch.cuda.synchronize()
                        self.assertTrue(torch.equal(dy, dy_before) and torch.equal(y, y_before),
                                        "backward modified its inputs")
                        self.assertClose(dx, reference_grad(y, dy), TOLERANCE[dtype], "backward",
                                         scale=grad_scale(y, dy))

    def test_cuda_split_row_at_forced_slice_counts(self):
        """split_row at slice counts its layout rule does not pick (CUDA_PORTFOLIO_SPLIT_ROW_SLICES,
        what scripts/sweep_split_row_slices.py times): 1 slice, a count that straddles rounds, one
        per block and past the grid (capped to it), in whole units and in whole chunks ("c"), on
        aligned and unaligned rows."""
        module = _backend_module("cuda")
        sms = torch.cuda.get_device_properties(torch.cuda.current_device()).multi_processor_count
        try:
            for forced in ("1", "7", "7c", str(sms), f"{4 * sms}c"):
                os.environ["CUDA_PORTFOLIO_SPLIT_ROW_SLICES"] = forced
                for dtype, cols in ((torch.float32, 1 << 20), (torch.bfloat16, (1 << 20) - 3)):
                    with self.subTest(forced=forced, dtype=dtype, cols=cols):
                        self.check_direct(module, "split_row", 5, cols, dtype)
        finally:
            os.environ.pop("CUDA_PORTFOLIO_SPLIT_ROW_SLICES", None)

    def assert_split_row_repeats(self, module, x, y, dy, **labels):
        """10 launches of split_row per direction, forward on x and backward on (y, dy), each output poisoned first,
        give the first launch's bits: a stage released out of turn, or a partial read before it is published, would
        show as a launch that differs."""
        for direction, launch in (("fwd", lambda out: module.forward(x, out, "split_row")),
                                  ("bwd", lambda out: module.backward(y, dy, out, "split_row"))):
            with self.subTest(direction=direction, repeats=10, **labels):
                first = poisoned_like(x)
                launch(first)
                self.assertFalse(bool(first.isnan().any()), "the first launch left poisoned elements")
                for _ in range(10):
                    out = poisoned_like(x)
                    launch(out)
                    self.assertTrue(torch.equal(out.view(torch.int16), first.view(torch.int16)),
                                    "a repeated launch differs from the first")

    def assert_pooled_workspaces_zero(self):
        """Every byte of the native softmax's workspace pool for this stream is zero (the launches left it so)."""
        from cuda_portfolio.native.softmax import _WORKSPACES

        torch.cuda.synchronize()
        pool = _WORKSPACES.get((torch.cuda.current_device(), torch.cuda.current_stream().cuda_stream), [])
        self.assertTrue(pool, "no pooled workspace")
        self.assertEqual([int(b.count_nonzero()) for b in pool], [0] * len(pool), "workspace bytes left nonzero")

    def test_cuda_split_row_with_finer_last_rows(self):
        """split_row with its last rows cut finer than the others (CUDA_PORTFOLIO_SPLIT_ROW_FINE, what the 16-bit
        forward's rule does to launches of 3 or more jobs a block): a few rows in twice the slices, rows of one
        slice ending on rows of several (the exchange only at the end), rows of many ending on rows of fewer,
        every row cut the second way, aligned and unaligned rows, both directions; after them every pooled
        workspace byte is zero."""
        module = _backend_module("cuda")
        try:
            for fine in ("2:x2", "3:5", "7:x3", "64:x2"):
                os.environ["CUDA_PORTFOLIO_SPLIT_ROW_FINE"] = fine
                for dtype, rows, cols in ((torch.bfloat16, 133, (1 << 17) - 3), (torch.float32, 5, 1 << 20),
                                          (torch.float16, 37, 1 << 18)):
                    with self.subTest(fine=fine, dtype=dtype, shape=(rows, cols)):
                        self.check_direct(module, "split_row", rows, cols, dtype)
            self.assert_pooled_workspaces_zero()
        finally:
            os.environ.pop("CUDA_PORTFOLIO_SPLIT_ROW_FINE", None)

    def test_cuda_split_row_held_form(self):
        """split_row's held form forced wherever it can run (CUDA_PORTFOLIO_SPLIT_ROW_IN_REGISTERS=1: rows of whole
        16-byte units in one-tile slices), both directions: many rows in flight, a few rows of many slices, rows of
        one slice (no exchange), a last slice shorter than the others, and rows it cannot take (not whole units: the
        other kernels run); its layouts named by describe_launch; 10 repeated launches each way give the first
        launch's bits; after them every pooled workspace byte is zero."""
        module = _backend_module("cuda")
        sms = torch.cuda.get_device_properties(torch.cuda.current_device()).multi_processor_count
        try:
            os.environ["CUDA_PORTFOLIO_SPLIT_ROW_IN_REGISTERS"] = "1"
            for dtype, rows, cols in ((torch.bfloat16, 133, 1 << 17), (torch.float32, 5, 1 << 20),
                                      (torch.float16, 37, 1 << 18), (torch.bfloat16, 300, 8192),
                                      (torch.float32, 9, 3 * 8192 + 4), (torch.bfloat16, 7, (1 << 17) - 3)):
                with self.subTest(dtype=dtype, shape=(rows, cols)):
                    self.check_direct(module, "split_row", rows, cols, dtype)
            x = torch.randn(1024, 1 << 17, device="cuda", dtype=torch.bfloat16) * 3
            dy = torch.randn_like(x)
            y = torch.softmax(x.float(), -1).to(x.dtype)
            self.assertRegex(module.describe_launch((x,), "split_row", "fwd"),
                             rf"^held: 8 slices per row, 16384 columns each, grid {4 * sms} x 256$")
            self.assertRegex(module.describe_launch((y, dy), "split_row", "bwd"),
                             rf"^held: 16 slices per row, 8192 columns each, grid {4 * sms} x 256$")
            self.assert_split_row_repeats(module, x, y, dy)
            self.assert_pooled_workspaces_zero()
        finally:
            os.environ.pop("CUDA_PORTFOLIO_SPLIT_ROW_IN_REGISTERS", None)

    def test_cuda_split_row_with_held_chunks(self):
        """split_row with CUDA_PORTFOLIO_SPLIT_ROW_HELD overriding the rule for the chunks pass 2 reads from the
        ring where pass 1 left them (clamped to the ring's stages): none (also where the rule would hold), fewer
        held than a job's chunks (the rest read again), a whole job held, one slice per row and many (the
        exchange), aligned and unaligned rows;
        then 10 repeated launches per direction at a whole ring held must give the first launch's bits (a
        stage released out of turn would show as a launch that differs)."""
        module = _backend_module("cuda")
        try:
            for held in ("0", "1", "5", "64"):
                os.environ["CUDA_PORTFOLIO_SPLIT_ROW_HELD"] = held
                for dtype, rows, cols in ((torch.bfloat16, 133, (1 << 17) - 3), (torch.float32, 5, 1 << 20),
                                          (torch.bfloat16, 37, 50257)):
                    with self.subTest(held=held, dtype=dtype, shape=(rows, cols)):
                        self.check_direct(module, "split_row", rows, cols, dtype)
            os.environ["CUDA_PORTFOLIO_SPLIT_ROW_HELD"] = "64"
            x = torch.randn(1024, 1 << 17, device="cuda", dtype=torch.bfloat16) * 3
            dy = torch.randn_like(x)
            self.assert_split_row_repeats(module, x, torch.softmax(x.float(), -1).to(x.dtype), dy, held="64")
        finally:
            os.environ.pop("CUDA_PORTFOLIO_SPLIT_ROW_HELD", None)

    def check_at_phases(self, module, plan, rows, cols, dtype):
        """check_direct with x, y, dy and dx each at its own storage offset, so their rows' 16-byte
        phases differ (split_row: the portable kernels, where one phase would take the streamed ones)."""
        self.check_forward_backward(module, plan, at_offset(rows, cols, dtype, 1),
                                    at_offset(rows, cols, dtype, 3, float("nan")), at_offset(rows, cols, dtype, 2),
                                    at_offset(rows, cols, dtype, 0, float("nan")))

    def test_cuda_describe_launch_names_the_split_row_layout(self):
        """describe_launch (what the benchmark records as a CUDA record's config) names split_row's layout and only
        split_row's: on Hopper, 1024x131072 bf16 takes the held form (four 256-thread blocks per SM; forward 8 slices
        of one 32 KiB tile, backward 16 of 16 KiB of each operand), and with it turned off
        (CUDA_PORTFOLIO_SPLIT_ROW_IN_REGISTERS=0) the streamed kernel (forward: one slice of 256 KiB, one block per SM,
        the last SMs / 2 rows two slices); at fp32 32x1M both directions stream, cut into several slices (the held
        form's rule asks a row of at most 1 MiB; it is 4 MiB); and an input at another phase than the output takes the
        portable ones; block_per_row has one layout (None)."""
        module = _backend_module("cuda")
        sms = torch.cuda.get_device_properties(torch.cuda.current_device()).multi_processor_count
        streams = torch.cuda.get_device_capability() == (9, 0)
        x = torch.randn(1024, 1 << 17, device="cuda", dtype=torch.bfloat16)
        text = module.describe_launch((x,), "split_row", "fwd")
        if streams:
            self.assertRegex(text, rf"^held: 8 slices per row, 16384 columns each, grid {4 * sms} x 256$")
            self.assertRegex(module.describe_launch((x, x), "split_row", "bwd"),
                             rf"^held: 16 slices per row, 8192 columns each, grid {4 * sms} x 256$")
            try:
                os.environ["CUDA_PORTFOLIO_SPLIT_ROW_IN_REGISTERS"] = "0"
                self.assertRegex(module.describe_launch((x,), "split_row", "fwd"),
                                 rf"^streamed: 1 slice per row, 256 KiB each, the last {sms // 2} rows 2 of 128 KiB, "
                                 rf"grid {sms}, \d+ chunks held$")
                self.assertRegex(module.describe_launch((x, x), "split_row", "bwd"), r"^streamed: ")
            finally:
                os.environ.pop("CUDA_PORTFOLIO_SPLIT_ROW_IN_REGISTERS", None)
            y, dy = torch.randn(32, 1 << 20, device="cuda"), torch.randn(32, 1 << 20, device="cuda")
            streamed_slices = rf"^streamed: ([2-9]|\d\d+) slices per row, \d+ KiB each, grid {sms}, \d+ chunks held$"
            for operands, direction in (((y,), "fwd"), ((y, dy), "bwd")):
                self.assertRegex(module.describe_launch(operands, "split_row", direction), streamed_slices)
        else:
            self.assertRegex(text, r"^portable: \d+ slices? per row, \d+ columns each$")
        shifted = torch.randn(8, (1 << 17) + 1, device="cuda")[:, 1:]  # rows 4 bytes past the output's phase
        self.assertRegex(module.describe_launch((shifted,), "split_row", "fwd"),
                         r"^portable: \d+ slices? per row, \d+ columns each$")
        self.assertIsNone(module.describe_launch((x[:, :4096],), "block_per_row", "fwd"))

    def test_cuda_split_row_repeats_bit_for_bit(self):
        """split_row reduces in a fixed order (each block's threads, then the row's slices in slice order), so
        repeated launches on the same input must give the same bits. A slice sweep once saw one launch of the
        streamed kernel at one slice per row (fp32 256x262144) miss float64 by 7e-5 where every other launch
        gave 6e-8, never reproduced since (docs/perf-log.md, session 18): a race would show here as a launch
        that differs from the first. One slice per row (no exchange), several (the exchange and the last-out
        reset), forward and backward, 40 launches each, each output poisoned first, inputs checked unchanged."""
        module = _backend_module("cuda")
        for dtype, rows, cols in ((torch.float32, 256, 1 << 18), (torch.bfloat16, 1024, 1 << 17),
                                  (torch.float32, 32, 1 << 20)):
            x = torch.randn(rows, cols, device="cuda", dtype=dtype) * 3
            dy = torch.randn(rows, cols, device="cuda", dtype=dtype)
            y = torch.softmax(x.float(), -1).to(dtype)
            inputs_before = [t.clone() for t in (x, y, dy)]
            for direction, launch in (("fwd", lambda out: module.forward(x, out, "split_row")),
                                      ("bwd", lambda out: module.backward(y, dy, out, "split_row"))):
                with self.subTest(dtype=dtype, shape=(rows, cols), direction=direction):
                    first = poisoned_like(x)
                    launch(first)
                    self.assertFalse(bool(first.isnan().any()), "the first launch left poisoned elements")
                    out = torch.empty_like(x)
                    differ = []
                    for i in range(40):
                        out.fill_(float("nan"))
                        launch(out)
                        if not torch.equal(out, first):
                            differ.append(i)
                    self.assertEqual(differ, [], f"launches {differ} differ from the first")
            self.assertTrue(all(torch.equal(a, b) for a, b in zip(inputs_before, (x, y, dy))), "an input changed")

    def test_cuda_split_row_leaves_its_workspace_zero(self):
        """split_row's workspace (ticket, row counters, partials) comes from a pool per (device, stream),
        zeroed once, and every launch must leave all of it zero: no launch pays a memset. After launches
        of many slices per row through both kernel families (operands at one 16-byte phase: the streamed
        kernels on Hopper; at different phases: the portable ones), every pooled byte is zero, and the
        next launch on the same buffer, with more rows (its counters where the last one's partials were)
        or fewer, is right. Under CUDA graph capture: a buffer first made in the capture is not pooled
        (its zeros exist only once the graph replays) and the replays are right; after an eager warm-up
        the capture uses the pooled buffer and its replays leave it zero."""
        from cuda_portfolio.native.softmax import _WORKSPACES

        module = _backend_module("cuda")
        device = torch.cuda.current_device()

        def assert_pool_zero(stream, what):
            torch.cuda.synchronize()
            pool = _WORKSPACES.get((device, stream.cuda_stream), [])
            self.assertTrue(pool, f"{what}: no pooled workspace")
            for buffer in pool:
                left = int(buffer.count_nonzero())
                self.assertEqual(left, 0, f"{what}: {left} of {buffer.numel()} workspace bytes left nonzero")

        for dtype, cols in ((torch.float32, 1 << 20), (torch.bfloat16, (1 << 20) - 3)):
            for rows in (5, 12, 2, 12):
                for phases in ("one phase", "different phases"):
                    what = f"{dtype} {rows}x{cols}, {phases}"
                    with self.subTest(what):
                        if phases == "one phase":
                            self.check_direct(module, "split_row", rows, cols, dtype)
                        else:
                            self.check_at_phases(module, "split_row", rows, cols, dtype)
                        assert_pool_zero(torch.cuda.current_stream(), what)

        self.skip_if_caching_allocator_off("CUDA graph capture needs the caching allocator")
        rows, cols = 5, (1 << 20) - 3
        side = torch.cuda.Stream()
        x = torch.randn(rows, cols, device="cuda")
        y = poisoned_like(x)
        torch.cuda.synchronize()
        for warm_up in (False, True):
            with self.subTest(graph=f"capture {'after a warm-up' if warm_up else 'first'}"):
                if warm_up:
                    with torch.cuda.stream(side):
                        module.forward(x, y, "split_row")
                    side.synchronize()
                graph = torch.cuda.CUDAGraph()
                with torch.cuda.graph(graph, stream=side):
                    module.forward(x, y, "split_row")
                if not warm_up:
                    self.assertEqual(_WORKSPACES.get((device, side.cuda_stream), []), [],
                                     "a buffer made during the capture was pooled")
                for _ in range(3):
                    x.copy_(torch.randn_like(x))
                    y.fill_(float("nan"))
                    graph.replay()
                    torch.cuda.synchronize()
                    self.assertClose(y, torch.softmax(x.double(), -1), TOLERANCE[x.dtype], "graph replay")
                if warm_up:
                    assert_pool_zero(side, "graph replays")

    def test_operands_at_different_16_byte_phases(self):
        """Rows that start off 16-byte boundaries, with x, y, dy and dx each at its own storage
        offset (so their phases differ): every plan must still compute and write every element."""
        for backend in ("cuda", "triton"):
            module = _backend_module(backend)
            for dtype in (torch.float32, torch.bfloat16):
                for rows, cols in ((37, 1000), (5, 1025), (3, 4097), (2, 50257)):
                    for plan in self.runnable(backend, rows, cols, dtype):
                        with self.subTest(backend=backend, plan=plan, dtype=dtype, rows=rows, cols=cols):
                            self.check_at_phases(module, plan, rows, cols, dtype)
        self.assertEveryPlanRan(("cuda", "triton"))

    def test_api_autograd_dims_and_views(self):
        base = torch.randn(64, 1030, device="cuda")
        views = {"contiguous": base, "dim 0": base, "column slice": base[:, 3:1028], "every other row": base[::2],
                 "storage offset 1": base.view(-1)[1:1 + 37 * 1000].view(37, 1000), "transposed": base.t()}
        for backend in ("cuda", "triton"):
            for label, x in views.items():
                dim = 0 if label == "dim 0" else -1
                for plan in ["auto"] + list(self.runnable(backend, x.numel() // x.shape[dim], x.shape[dim],
                                                          x.dtype)):
                    with self.subTest(backend=backend, view=label, plan=plan):
                        leaf = x.detach().clone().requires_grad_()
                        before = leaf.detach().clone()
                        poison_free_blocks_like(leaf)
                        y = cp.softmax(leaf, dim, backend=backend, plan=plan)
                        dy = torch.randn_like(y)
                        y.backward(dy)
                        self.assertTrue(torch.equal(leaf.detach(), before), "input modified")
                        x64 = x.detach().double().requires_grad_()
                        ref = torch.softmax(x64, dim)
                        ref.backward(dy.double())
                        self.assertClose(y, ref, 1e-5, "forward")
                        self.assertClose(leaf.grad, x64.grad, 1e-5, "backward")
        self.assertEveryPlanRan(("cuda", "triton"))

    def test_auto_backend_is_native_for_every_dtype(self):
        """backend="auto" runs the native backend where it is built (softmax.choose_backend: the H200 preset measured
        it faster or level in fp32 and bf16), and the default call agrees with backend="cuda" bit for bit."""
        from cuda_portfolio.softmax import choose_backend
        if not cp.available_backends()["cuda"][0]:
            self.skipTest("the native backend is not built")
        for dtype in (torch.float32, torch.float16, torch.bfloat16):
            with self.subTest(dtype=dtype):
                x = torch.randn(33, 4097, device="cuda", dtype=dtype)
                self.assertEqual(choose_backend(x), "cuda")
                self.assertTrue(torch.equal(cp.softmax(x), cp.softmax(x, backend="cuda")))

    def test_double_backward_matches_float64_torch(self):
        """Second order (the backward op's own autograd): the gradient of <grad_x(<softmax(x), w>), v> with respect
        to x and w, every plan, a short and a long row; 16-bit tolerances doubled as in the CPU tier's test (the
        second order starts from rounded y and first gradients)."""
        for backend in ("cuda", "triton"):
            for rows, cols in ((37, 1000), (4, 70000)):
                for dtype in (torch.float32, torch.bfloat16):
                    for plan in ["auto"] + list(self.runnable(backend, rows, cols, dtype)):
                        with self.subTest(backend=backend, rows=rows, cols=cols, dtype=dtype, plan=plan):
                            x = torch.randn(rows, cols, device="cuda").to(dtype).requires_grad_()
                            w = torch.randn(rows, cols, device="cuda").to(dtype).requires_grad_()
                            v = torch.randn(rows, cols, device="cuda").to(dtype)
                            y = cp.softmax(x, backend=backend, plan=plan)
                            (g,) = torch.autograd.grad((y * w).sum(), x, create_graph=True)
                            grad_x, grad_w = torch.autograd.grad((g * v).sum(), [x, w])
                            x64, w64 = (t.detach().double().requires_grad_() for t in (x, w))
                            (g64,) = torch.autograd.grad((torch.softmax(x64, -1) * w64).sum(), x64,
                                                         create_graph=True)
                            ref_x, ref_w = torch.autograd.grad((g64 * v.double()).sum(), [x64, w64])
                            tol = TOLERANCE[dtype] * (1 if dtype == torch.float32 else 2)
                            self.assertClose(grad_x, ref_x, tol, "second order, x")
                            self.assertClose(grad_w, ref_w, tol, "second order, w")
        self.assertEveryPlanRan(("cuda", "triton"))

    def test_vmap_forward_backward(self):
        """torch.func.vmap over cp.softmax (the batch as more rows of one launch), batch dim 1, then backward."""
        for backend in ("cuda", "triton"):
            for dtype in (torch.float32, torch.bfloat16):
                with self.subTest(backend=backend, dtype=dtype):
                    x = torch.randn(37, 6, 1030, device="cuda").to(dtype).requires_grad_()
                    dy = torch.randn(6, 37, 1030, device="cuda").to(dtype)
                    y = torch.func.vmap(lambda r: cp.softmax(r, -1, backend=backend), in_dims=1)(x)
                    y.backward(dy)
                    x64 = x.detach().double().requires_grad_()
                    ref = torch.softmax(x64, -1).movedim(1, 0)
                    ref.backward(dy.double())
                    self.assertClose(y, ref, TOLERANCE[dtype], "vmap forward")
                    self.assertClose(x.grad, x64.grad, TOLERANCE[dtype], "vmap backward",
                                     scale=grad_scale(ref.detach(), dy))

    def test_special_values_like_torch(self):
        for backend in ("cuda", "triton"):
            for cols in (33, 5000, 70000):
                x = torch.randn(4, cols, device="cuda")
                x[0, cols // 2] = float("nan")
                x[1] = float("-inf")
                x[2, ::3] = float("-inf")
                x[3, 1] = float("inf")
                x_before = x.clone()
                for plan in self.runnable(backend, 4, cols, x.dtype):
                    with self.subTest(backend=backend, cols=cols, plan=plan):
                        poison_free_blocks_like(x, NOT_A_SOFTMAX)  # NaN is the right answer in rows 0-1
                        self.assertClose(cp.softmax(x, backend=backend, plan=plan), torch.softmax(x.double(), -1),
                                         1e-5)
                        # bitwise: the rows hold NaN, and NaN != NaN
                        self.assertTrue(torch.equal(x.view(torch.int32), x_before.view(torch.int32)), "input modified")
        self.assertEveryPlanRan(("cuda", "triton"))

    def test_16_bit_rows_within_an_ulp_on_both_sides_of_the_fused_exponent_bound(self):
        """16-bit forward kernels take exp(x - max) as one FFMA, 2^(x * log2e - max * log2e), while |max| < 64, and
        the subtract form otherwise (RowExp in csrc/softmax/softmax_reduce.cuh); a chunk's running max in split_row
        can sit on either side within one row. Every 16-bit output must be within one ulp of float64 softmax
        (elementwise, where the sweep checks a norm), on rows whose max is below 64, near -58, near 80 and in the
        thousands, and on rows with NaN, -inf and +inf; every plan, both backends, rows from one warp's to a
        multi-slice split_row's (with head and tail elements off the 16-byte units)."""
        for backend in ("cuda", "triton"):
            module = _backend_module(backend)
            for dtype in (torch.float16, torch.bfloat16):
                for cols in (33, 5000, 70001, (1 << 20) + 5):
                    x = torch.randn(8, cols, device="cuda") * 4
                    x[1] += 62.0  # values about 50..78: per-thread maxima on both sides of 64
                    x[2] = x[2] / 2 - 68.0  # max about -58
                    x[3] += 3000.0
                    x[4, cols // 2] = float("nan")
                    x[5] = float("-inf")
                    x[6, ::3] = float("-inf")
                    x[7, cols - 1] = float("inf")
                    x = x.to(dtype)
                    ref = torch.softmax(x.double(), -1)
                    x_before = x.clone()
                    for plan in self.runnable(backend, 8, cols, dtype):
                        with self.subTest(backend=backend, dtype=dtype, cols=cols, plan=plan):
                            y = poisoned_like(x, NOT_A_SOFTMAX)
                            module.forward(x, y, plan)
                            torch.cuda.synchronize()
                            # bitwise: the rows hold NaN, and NaN != NaN
                            self.assertTrue(torch.equal(x.view(torch.int16), x_before.view(torch.int16)),
                                            "forward modified its input")
                            self.assertWithinOneUlp(y, ref)
        self.assertEveryPlanRan(("cuda", "triton"))

    def assertWithinOneUlp(self, out, ref):
        """|out - ref| <= eps * |ref| + floor elementwise, and the same NaNs. floor: fp16's subnormal step (2^-24),
        or for bf16 the smallest normal fp32, below which the kernels' exponentials flush to zero."""
        info = torch.finfo(out.dtype)
        floor = max(info.tiny * info.eps, torch.finfo(torch.float32).tiny)
        out64 = out.double()
        self.assertTrue(torch.equal(out64.isnan(), ref.isnan()), f"NaN pattern differs (seed {self.seed})")
        finite = ~ref.isnan()
        excess = (out64 - ref).abs()[finite] - (info.eps * ref.abs()[finite] + floor)
        worst = int(excess.argmax()) if excess.numel() else 0
        self.assertFalse(bool((excess > 0).any()),
                         f"{int((excess > 0).sum())} outputs past one ulp; worst at flat index {worst} of the "
                         f"finite ones by {float(excess.max()):.3g} (seed {self.seed})")

    def test_torch_compile_fullgraph_and_cuda_graph_replay(self):
        for backend in ("cuda", "triton"):
            with self.subTest(backend=backend, what="torch.compile"):
                compiled = torch.compile(lambda t: cp.softmax(t, 1, backend=backend) * 2, fullgraph=True)
                x = torch.randn(8, 3000, 5, device="cuda")
                self.assertClose(compiled(x), torch.softmax(x.double(), 1) * 2, 1e-5)
            with self.subTest(backend=backend, what="CUDA graph"):
                self.skip_if_caching_allocator_off("CUDA graph capture needs the caching allocator")
                static_x = torch.randn(37, 4097, device="cuda")
                cp.softmax(static_x, backend=backend)  # warm-up (compile) outside capture
                torch.cuda.synchronize()
                graph = torch.cuda.CUDAGraph()
                with torch.cuda.graph(graph):
                    static_y = cp.softmax(static_x, backend=backend)
                for _ in range(2):
                    static_x.copy_(torch.randn_like(static_x))
                    static_y.fill_(float("nan"))
                    graph.replay()
                    torch.cuda.synchronize()
                    self.assertClose(static_y, torch.softmax(static_x.double(), -1), 1e-5)

    def test_runs_on_the_current_stream(self):
        stream = torch.cuda.Stream()
        x = torch.randn(4097, 4097, device="cuda")
        torch.cuda.synchronize()
        for backend in ("cuda", "triton"):
            with self.subTest(backend=backend), torch.cuda.stream(stream):
                y = cp.softmax(x, backend=backend)
                stream.synchronize()  # only the side stream: the result must be complete on it
                self.assertClose(y, torch.softmax(x.double(), -1), 1e-5)

    def test_tensor_past_2_pow_31_elements(self):
        rows, cols = 2049, 1 << 20  # bf16: 4 GiB in, 4 GiB out
        free, _ = torch.cuda.mem_get_info()
        if free < 20 * rows * cols:
            self.skipTest(f"needs ~{20 * rows * cols >> 30} GiB free, {free >> 30} GiB free")
        x = torch.randn(rows, cols, device="cuda", dtype=torch.bfloat16)
        for backend in ("cuda", "triton"):
            for plan in self.runnable(backend, rows, cols, x.dtype):
                with self.subTest(backend=backend, plan=plan):
                    y = poisoned_like(x)
                    _backend_module(backend).forward(x, y, plan)
                    torch.cuda.synchronize()
                    self.assertFalse(bool(y.isnan().any()), "unwritten (NaN) outputs")
                    for row in (0, rows // 2, rows - 1):  # float64 reference per row: memory
                        self.assertClose(y[row], torch.softmax(x[row].double(), -1), TOLERANCE[torch.bfloat16],
                                         f"row {row}")
                    del y
        self.assertEveryPlanRan(("cuda", "triton"), shape_limited=("warp_per_row", "block_per_row"))
