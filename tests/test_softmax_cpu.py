"""CPU tier: cp.softmax and every Triton softmax plan through the interpreter (TRITON_INTERPRET=1,
set by conftest.py on machines without a GPU), at small odd sizes, against float64 torch."""
import unittest
from unittest import mock

import torch
import triton
import triton.language as tl

import cuda_portfolio as cp
from cuda_portfolio._backends import triton_interpreting
from cuda_portfolio.softmax import softmax_bwd, softmax_fwd
from cuda_portfolio.triton_kernels import softmax as triton_softmax
from tests.softmax_reference import grad_scale, reference_grad
from tests.split_row_forms import split_row_forced

needs_interpreter = unittest.skipUnless(triton_interpreting(), "needs TRITON_INTERPRET=1 (set on machines without a GPU)")

DTYPES = (torch.float32, torch.float16, torch.bfloat16)
TOLERANCE = {torch.float32: 1e-5, torch.float16: 5e-3, torch.bfloat16: 1e-2}
CPU = torch.device("cpu")


def relative_error(out: torch.Tensor, ref: torch.Tensor, scale: float | None = None) -> float:
    """||out - ref|| / scale (default ||ref||) in float64."""
    diff, norm = (out.double() - ref).norm(), ref.norm() if scale is None else scale
    return float(diff / norm) if norm > 0 else float(diff)


def runnable_plans(rows: int, cols: int, dtype=torch.float32) -> list[str]:
    """The Triton plans whose check_plan accepts this shape."""
    plans = []
    for plan in triton_softmax.plans():
        try:
            triton_softmax.check_plan(plan, rows, cols, dtype, CPU)
        except ValueError:
            continue
        plans.append(plan)
    return plans


class TritonSoftmaxLaunchConfigTest(unittest.TestCase):
    def test_persistent_streaming_grids_fit_an_sm(self):
        """The streaming plans' persistent grids run per_sm programs on each SM. At their register cap (255 when
        uncapped) and with their pipeline's shared memory they must fit one SM together: block_online's last
        programs would otherwise run as a second wave after the first (2048x50257 bf16 once launched 333
        forward programs where 264 fit), and split_row's exchange waits for programs that never start."""
        shared_per_sm = 228 * 1024  # Hopper; each resident block also takes 1 KiB of it for the system
        cases = [(plan, dtype, cols_p2, direction, aligned,
                  triton_softmax.launch_config(plan, dtype, cols_p2, direction, aligned))
                 for plan in ("block_online", "split_row") for dtype in DTYPES for cols_p2 in (1 << 16, 1 << 20)
                 for direction in ("fwd", "bwd") for aligned in (True, False)]
        cases += [("block_online pair", dtype, None, "bwd", None, triton_softmax.BLOCK_ONLINE_BWD_PAIR[dtype.itemsize])
                  for dtype in DTYPES]
        for plan, dtype, cols_p2, direction, aligned, config in cases:
            with self.subTest(plan=plan, dtype=dtype, cols_p2=cols_p2, direction=direction, aligned=aligned):
                registers = config.per_sm * 32 * config.num_warps * (config.maxnreg or 255)
                self.assertLessEqual(registers, triton_softmax.REGISTERS_PER_SM, config)
                # the pipelined backward buffers `stages` tiles of y and dy
                shared = (config.stages or 0) * config.block_n * dtype.itemsize * 2
                self.assertLessEqual(config.per_sm * (shared + 1024), shared_per_sm, config)

    def test_block_online_launches_a_program_per_row_while_the_resident_rows_fit_l2(self):
        """Past the L2 budget the forward's grid is the capped persistent one, whose programs walk rows. The
        backward's whole-SM program (launch_config's) is never capped, so it always launches a program per row."""
        config = triton_softmax.launch_config("block_online", torch.bfloat16, 1 << 15)
        rows, resident = 1000, triton_softmax.INTERPRETER_SM_COUNT * config.per_sm
        self.assertGreater(config.per_sm, 1)
        fits = triton_softmax.L2_BUDGET_BYTES // resident
        self.assertEqual(triton_softmax._block_online_programs(rows, config, CPU, fits), rows)
        capped = triton_softmax._block_online_programs(rows, config, CPU, fits + 1)
        self.assertEqual(capped, triton_softmax._persistent_programs(rows, config, CPU, fits + 1))
        self.assertLess(capped, resident)
        self.assertEqual(triton_softmax._block_online_programs(2, config, CPU, fits + 1), 2)  # fewer rows than SMs
        for dtype in DTYPES:
            backward = triton_softmax.launch_config("block_online", dtype, 1 << 15, "bwd")
            self.assertEqual((backward.num_warps, backward.per_sm, backward.stages), (32, 1, None))
            self.assertEqual(triton_softmax._block_online_programs(rows, backward, CPU, 1 << 30), rows)

    def test_block_online_backward_takes_two_programs_per_sm_while_two_rows_per_sm_fit_l2(self):
        """The pair (two 16-warp programs per SM, 64 registers each: the register file between them) runs a
        program per row: it is taken only when the rows fill it and two rows per SM of y and dy fit the L2 budget;
        otherwise the whole-SM program, which launches a program per row at any length."""
        sms = triton_softmax.INTERPRETER_SM_COUNT
        for dtype in DTYPES:
            pair = triton_softmax.BLOCK_ONLINE_BWD_PAIR[dtype.itemsize]
            self.assertEqual((pair.num_warps, pair.per_sm, pair.stages), (16, 2, None))
            self.assertLessEqual(pair.per_sm * 32 * pair.num_warps * pair.maxnreg, triton_softmax.REGISTERS_PER_SM)
            longest = triton_softmax.L2_BUDGET_BYTES // (2 * dtype.itemsize * sms * pair.per_sm)  # columns
            for aligned in (True, False):
                whole_sm = triton_softmax.launch_config("block_online", dtype, triton.next_power_of_2(longest),
                                                        "bwd", aligned)
                with self.subTest(dtype=dtype, aligned=aligned):
                    self.assertEqual((whole_sm.num_warps, whole_sm.per_sm), (32, 1))
                    choice = triton_softmax.block_online_backward_config(whole_sm, 2 * sms, longest, dtype, aligned,
                                                                         CPU)
                    tile = pair.block_n if aligned or dtype.itemsize == 4 else pair.block_n // 2  # 16-bit: no spills
                    self.assertEqual(choice, pair._replace(block_n=tile, stream_stores=aligned))
                    self.assertEqual(triton_softmax._block_online_programs(2 * sms, choice, CPU,
                                                                           2 * longest * dtype.itemsize), 2 * sms)
                    self.assertEqual(triton_softmax.block_online_backward_config(whole_sm, 2 * sms, longest + 1,
                                                                                 dtype, aligned, CPU), whole_sm)
                    self.assertEqual(triton_softmax.block_online_backward_config(whole_sm, 2 * sms - 1, longest,
                                                                                 dtype, aligned, CPU), whole_sm)
                    short = triton_softmax.block_online_backward_config(whole_sm, 2 * sms, 100, dtype, aligned, CPU)
                    self.assertEqual(short.block_n, 128)  # the row's next power of two
                    if aligned:  # EDGES: whole units (streamed stores) outside the 16-byte specialization
                        edges = triton_softmax.block_online_backward_config(whole_sm, 2 * sms, longest, dtype, False,
                                                                            CPU)
                        edges_tile = pair.block_n if dtype.itemsize == 4 else pair.block_n // 2
                        self.assertEqual(edges, pair._replace(block_n=edges_tile, stream_stores=True))


@needs_interpreter
class TritonSoftmaxTuningTest(unittest.TestCase):
    """Bounded run-time tuning: the register-resident plans time their table's warps and twice them once per
    bucket; everything else, and every call that cannot time, launches the table's configuration."""

    def gpu_tensor(self, rows, cols, dtype=torch.float32):
        """A stand-in for a CUDA tensor (what _config_for reads of it), so the tuning path runs without a GPU."""
        return mock.Mock(is_cuda=True, dtype=dtype, shape=(rows, cols), device=torch.device("cuda", 0))

    def test_candidates(self):
        table = triton_softmax.launch_config("block_per_row", torch.float32, 8192, "bwd")
        self.assertEqual(triton_softmax.candidate_configs("block_per_row", torch.float32, 8192, "bwd", True),
                         (table, table._replace(num_warps=2 * table.num_warps)))
        warp = triton_softmax.launch_config("warp_per_row", torch.bfloat16, 512)
        self.assertEqual([c.num_warps for c in triton_softmax.candidate_configs("warp_per_row", torch.bfloat16, 512,
                                                                                "fwd", True)],
                         [warp.num_warps, 2 * warp.num_warps])
        # The block_per_row 16-bit forward: each warp count with and without evict_first loads; at 32 warps, those
        # two. fp32: the warp counts only.
        fwd = triton_softmax.launch_config("block_per_row", torch.bfloat16, 4096, "fwd")
        wide = fwd._replace(num_warps=2 * fwd.num_warps)
        self.assertEqual(triton_softmax.candidate_configs("block_per_row", torch.bfloat16, 4096, "fwd", True),
                         (fwd, wide, fwd._replace(load_hint="evict_first"), wide._replace(load_hint="evict_first")))
        widest = triton_softmax.launch_config("block_per_row", torch.bfloat16, 16384, "fwd")
        self.assertEqual(widest.num_warps, 32)
        self.assertEqual(triton_softmax.candidate_configs("block_per_row", torch.bfloat16, 16384, "fwd", True),
                         (widest, widest._replace(load_hint="evict_first")))
        fp32 = triton_softmax.launch_config("block_per_row", torch.float32, 8192, "fwd")
        self.assertEqual(triton_softmax.candidate_configs("block_per_row", torch.float32, 8192, "fwd", True),
                         (fp32, fp32._replace(num_warps=2 * fp32.num_warps)))
        # EDGES rows and the three-quarter tiles take no load hint: the warp counts only (the pair would be one
        # kernel timed twice).
        self.assertEqual(triton_softmax.candidate_configs("block_per_row", torch.bfloat16, 4096, "fwd", True, True),
                         (fwd, wide))
        for tile in (6144, 12288):
            three_quarter = triton_softmax.launch_config("block_per_row", torch.bfloat16, tile, "fwd")
            with self.subTest(tile=tile):
                self.assertEqual(triton_softmax.candidate_configs("block_per_row", torch.bfloat16, tile, "fwd", True),
                                 (three_quarter, three_quarter._replace(num_warps=2 * three_quarter.num_warps)))
        # The prefetching persistent form, the streaming plans: the table's only.
        for plan, dtype, cols_p2, direction in (("block_per_row", torch.bfloat16, 32768, "fwd"),
                                                ("block_online", torch.float32, 1 << 17, "bwd"),
                                                ("split_row", torch.bfloat16, 1 << 20, "fwd")):
            with self.subTest(plan=plan, dtype=dtype, cols_p2=cols_p2, direction=direction):
                self.assertEqual(triton_softmax.candidate_configs(plan, dtype, cols_p2, direction, True),
                                 (triton_softmax.launch_config(plan, dtype, cols_p2, direction, True),))

    def test_first_call_of_a_bucket_times_the_candidates_once(self):
        timed = []

        def fastest(configs, launcher, device, what):
            timed.append(configs)
            return configs[-1]

        t = self.gpu_tensor(64, 5000)
        table, wider = triton_softmax.candidate_configs("block_per_row", torch.float32, 8192, "bwd", True)
        with mock.patch.object(triton_softmax, "fastest", fastest), \
                mock.patch.dict(triton_softmax._TUNED, clear=True), \
                mock.patch.object(torch.cuda, "is_current_stream_capturing", lambda: False):
            self.assertIn("table", triton_softmax.kernel_config(t, "block_per_row", "bwd", (True, False)))
            for _ in range(2):  # the same bucket: timed once
                self.assertEqual(triton_softmax._config_for("block_per_row", t, "bwd", (True, False), None), wider)
            self.assertEqual(timed, [(table, wider)])
            self.assertEqual(triton_softmax.kernel_config(t, "block_per_row", "bwd", (True, False)),
                             f"{wider.num_warps} warps, 8192-column tiles, tuned")
            # Another shape in the same power-of-two buckets shares the pick; another row bucket or direction is its
            # own bucket.
            wide_bucket = self.gpu_tensor(60, 8000)
            self.assertEqual(triton_softmax._config_for("block_per_row", wide_bucket, "bwd", (True, False), None), wider)
            self.assertEqual(len(timed), 1)
            triton_softmax._config_for("block_per_row", self.gpu_tensor(3, 5000), "bwd", (True, False), None)
            triton_softmax._config_for("block_per_row", t, "fwd", (True, False), None)
            self.assertEqual(len(timed), 3)
            # EDGES rows are their own bucket, apart from 16-byte rows of the same tile (8192 columns: their
            # candidates differ)
            aligned_rows = self.gpu_tensor(64, 8000, torch.bfloat16)
            edges_rows = self.gpu_tensor(64, 8001, torch.bfloat16)
            triton_softmax._config_for("block_per_row", aligned_rows, "fwd", (True, False), None)
            triton_softmax._config_for("block_per_row", edges_rows, "fwd", (False, True), None)
            self.assertEqual([len(c) for c in timed[3:]], [4, 2])

    def test_no_timing_under_capture_off_the_gpu_or_when_turned_off(self):
        t = self.gpu_tensor(64, 5000)
        table, wider = triton_softmax.candidate_configs("block_per_row", torch.float32, 8192, "bwd", True)
        refuse = mock.Mock(side_effect=AssertionError("timed"))
        with mock.patch.object(triton_softmax, "fastest", refuse), mock.patch.dict(triton_softmax._TUNED, clear=True):
            with mock.patch.object(torch.cuda, "is_current_stream_capturing", lambda: True):
                self.assertEqual(triton_softmax._config_for("block_per_row", t, "bwd", (True, False), None), table)
                # A bucket tuned before the capture keeps its pick inside it.
                triton_softmax._TUNED[triton_softmax._bucket("block_per_row", t, "bwd", (True, False))] = wider
                self.assertEqual(triton_softmax._config_for("block_per_row", t, "bwd", (True, False), None), wider)
            triton_softmax._TUNED.clear()
            with mock.patch.dict("os.environ", {"CUDA_PORTFOLIO_NO_TUNING": "1"}):
                self.assertEqual(triton_softmax._config_for("block_per_row", t, "bwd", (True, False), None), table)
            cpu = torch.empty(64, 5000)
            self.assertEqual(triton_softmax._config_for("block_per_row", cpu, "bwd", (True, False), None), table)
            self.assertFalse(triton_softmax._TUNED)


class TritonSoftmaxPlanTest(unittest.TestCase):
    """Each plan's forward/backward called directly on NaN-filled outputs (every element written)."""

    SHAPES = [(rows, cols) for rows in (1, 3, 5) for cols in (1, 7, 33, 130)] + [(3, 1025), (2, 4100)]

    def check_plan(self, plan, rows, cols, dtype, scale=3.0):
        x = (torch.randn(rows, cols) * scale).to(dtype)
        x_before = x.clone()
        y = torch.full_like(x, float("nan"))
        triton_softmax.forward(x, y, plan)
        self.assertTrue(torch.equal(x, x_before), "forward modified its input")
        ref = torch.softmax(x.double(), -1)
        self.assertLessEqual(relative_error(y, ref), TOLERANCE[dtype])

        dy = torch.randn(rows, cols).to(dtype)
        y_before, dy_before = y.clone(), dy.clone()
        dx = torch.full_like(x, float("nan"))
        triton_softmax.backward(y, dy, dx, plan)
        self.assertTrue(torch.equal(y, y_before) and torch.equal(dy, dy_before), "backward modified its inputs")
        self.assertFalse(bool(dx.isnan().any()), "backward left elements unwritten")
        self.assertLessEqual(relative_error(dx, reference_grad(y, dy), grad_scale(y, dy)), TOLERANCE[dtype])

    def test_every_plan_forward_backward_small_odd_shapes(self):
        for dtype in DTYPES:
            for rows, cols in self.SHAPES:
                for plan in runnable_plans(rows, cols, dtype):
                    with self.subTest(plan=plan, dtype=dtype, rows=rows, cols=cols):
                        self.check_plan(plan, rows, cols, dtype)

    def test_split_row_geometry_on_a_gpu(self):
        """split_row's exchange waits for every chunk of a row, so a row never has more chunks than the grid
        has programs; chunks are whole tiles and cover the row; all programs' chunks fit the L2 budget
        unless the row is too long for that within one chunk per program. (Off the GPU a row is one chunk: the
        interpreter runs programs one after another, and a wait for another program would never end.)"""
        gpu = torch.device("cuda", 0)
        with mock.patch.object(triton_softmax, "_sm_count", lambda device: 132):
            for dtype in DTYPES:
                for direction in ("fwd", "bwd"):
                    for rows, cols in ((1, 1 << 28), (4, 1 << 22), (32, 1 << 20), (256, 262144), (1024, 131072),
                                       (3, 50257)):
                        config = triton_softmax.launch_config("split_row", dtype, triton.next_power_of_2(cols),
                                                              direction)
                        operands = 1 if direction == "fwd" else 2
                        bytes_per_col = operands * dtype.itemsize
                        chunks, chunk_cols, programs = triton_softmax._split_geometry(rows, cols, bytes_per_col,
                                                                                      config, gpu)
                        with self.subTest(dtype=dtype, direction=direction, rows=rows, cols=cols):
                            resident = 132 * config.per_sm
                            self.assertLessEqual(chunks, resident)
                            self.assertEqual(programs, min(resident, rows * chunks))
                            self.assertEqual(chunk_cols % config.block_n, 0)
                            self.assertEqual(chunks, -(-cols // chunk_cols))
                            fewest_cols = -(-cols // resident)  # the chunk when the row alone sets it
                            self.assertLessEqual(resident * (chunk_cols - config.block_n) * bytes_per_col,
                                                 max(triton_softmax.L2_BUDGET_BYTES,
                                                     resident * fewest_cols * bytes_per_col))
        chunks, _, _ = triton_softmax._split_geometry(
            3, 5000, 4, triton_softmax.launch_config("split_row", torch.float32, 8192), CPU)
        self.assertEqual(chunks, 1)

    def test_split_row_held_form_by_rows_in_flight(self):
        """split_row holds its chunks in registers (one tile each) when enough rows are in flight (resident programs
        / chunks per row >= HELD_ROWS_IN_FLIGHT: 16 forward, 4 backward), for rows moved in whole 16-byte units;
        off the GPU only rows of one chunk. Held chunks are the fewest that fit a tile, of equal length in whole
        16-element units, and cover the row."""
        gpu = torch.device("cuda", 0)
        cases = (  # dtype, direction, rows, cols, held on 132 SMs (forward 4 programs each, backward 2)
            (torch.float32, "fwd", 1024, 131072, True),     # 16 chunks: 33 rows in flight
            (torch.float32, "fwd", 256, 262144, True),      # 16.5
            (torch.float32, "fwd", 32, 1 << 20, False),     # 4.1
            (torch.float32, "bwd", 256, 262144, True),      # 8192-column tiles: 32 chunks, 8.25
            (torch.float32, "bwd", 32, 1 << 20, False),     # 2.06
            (torch.float32, "bwd", 4, 1 << 22, False),      # 512 chunks: more than the grid's programs
            (torch.bfloat16, "fwd", 1024, 131072, True),    # 16384-column tiles: 8 chunks, 66
            (torch.bfloat16, "fwd", 32, 1 << 20, False),    # 8.25
            (torch.bfloat16, "bwd", 32, 1 << 20, True),     # 4.1
            (torch.float16, "bwd", 4, 1 << 22, False),      # 1.03
            (torch.float32, "fwd", 2048, 50257, True),      # 7 chunks of 7184
        )
        with mock.patch.object(triton_softmax, "_sm_count", lambda device: 132):
            for dtype, direction, rows, cols, held in cases:
                streamed = triton_softmax.launch_config("split_row", dtype, triton.next_power_of_2(cols), direction)
                with self.subTest(dtype=dtype, direction=direction, rows=rows, cols=cols):
                    config = triton_softmax.split_row_config(streamed, cols, dtype, direction, True, gpu)
                    self.assertEqual(config.held, held)
                    self.assertIs(triton_softmax.split_row_config(streamed, cols, dtype, direction, False, gpu),
                                  streamed)  # rows moved element by element
                    if not held:
                        continue
                    chunks, chunk_cols, programs = triton_softmax._split_geometry(rows, cols, dtype.itemsize, config,
                                                                                  gpu)
                    self.assertEqual(chunks, -(-cols // config.block_n))
                    self.assertEqual(chunk_cols % 16, 0)
                    self.assertLessEqual(chunk_cols, config.block_n)
                    self.assertTrue((chunks - 1) * chunk_cols < cols <= chunks * chunk_cols)
                    self.assertEqual(programs, min(132 * config.per_sm, rows * chunks))
        streamed = triton_softmax.launch_config("split_row", torch.float32, 32768)
        tile = triton_softmax.SPLIT_ROW_HELD[4]["fwd"].block_n
        self.assertTrue(triton_softmax.split_row_config(streamed, tile, torch.float32, "fwd", True, CPU).held)
        self.assertFalse(triton_softmax.split_row_config(streamed, tile + 1, torch.float32, "fwd", True, CPU).held)
        # a row of one chunk shorter than the tile: the smallest power-of-two tile that holds it, warps in proportion
        for dtype, direction, cols, block_n, warps in ((torch.float32, "fwd", 5000, 8192, 8),
                                                       (torch.float32, "fwd", 3000, 4096, 4),
                                                       (torch.bfloat16, "fwd", 33, 64, 4),
                                                       (torch.float16, "bwd", 3000, 4096, 4)):
            config = triton_softmax.held_config(cols, dtype, direction)
            self.assertEqual((config.block_n, config.num_warps), (block_n, warps))
        # 16-bit forward rows of at most 128 KiB: quarter tiles (8192 columns), 4 warps, 8 programs per SM; backward
        # rows of at most 200 KiB: half tiles, 8 warps, 4 programs per SM; longer rows and fp32 forward rows keep the
        # table's
        quarter, half, table = triton_softmax.HELD_QUARTER_FWD, triton_softmax.HELD_HALF_BWD, triton_softmax.SPLIT_ROW_HELD
        for dtype, direction, cols, expected in ((torch.bfloat16, "fwd", 50257, quarter),
                                                 (torch.float16, "fwd", 65536, quarter),
                                                 (torch.bfloat16, "fwd", 65537, table[2]["fwd"]),
                                                 (torch.bfloat16, "bwd", 50257, half[2]),
                                                 (torch.float32, "bwd", 50257, half[4]),
                                                 (torch.float32, "bwd", 51201, table[4]["bwd"]),
                                                 (torch.bfloat16, "bwd", 131072, table[2]["bwd"]),
                                                 (torch.float32, "fwd", 32768, table[4]["fwd"])):
            with self.subTest(dtype=dtype, direction=direction, cols=cols):
                self.assertEqual(triton_softmax.held_config(cols, dtype, direction), expected)
        chunks, chunk_cols, _ = triton_softmax._split_geometry(
            2048, 50257, 2, triton_softmax.held_config(50257, torch.bfloat16, "fwd"), CPU)
        self.assertEqual((chunks, chunk_cols), (7, 7184))

    def test_block_per_row_16bit_forward_in_the_32768_column_tile(self):
        """16-bit forward rows of 16385-32768 columns: rows in whole 16-byte units (16-byte rows, EDGES) take the held
        form, a program per row at 16 warps and 64 registers; the others the prefetching persistent form. Against
        float64, outputs NaN-filled first, inputs unchanged, nothing written outside the rows."""
        held = triton_softmax.launch_config("block_per_row", torch.bfloat16, 32768)
        self.assertEqual((held.held, held.prefetch, held.num_warps, held.maxnreg), (True, False, 16, 64))
        self.assertTrue(triton_softmax.launch_config("block_per_row", torch.bfloat16, 32768, "fwd", False).prefetch)
        for dtype, direction in ((torch.float32, "fwd"), (torch.bfloat16, "bwd")):
            config = triton_softmax.launch_config("block_per_row", dtype, 32768, direction)
            self.assertFalse(config.held or config.prefetch, (dtype, direction))
        kernel = triton_softmax.softmax_fwd_block_per_row_kernel
        # (dtype, cols, x's row pitch, y's): 16-byte rows; EDGES rows (every row at phase 0; each at its own, y's at
        # x's); rows whose x and y sit at different phases: the prefetching form, 7 rows over the interpreter's 3
        # programs, so a program walks 2-3 rows and its last prefetch is masked off.
        for dtype, cols, x_pitch, y_pitch, form in ((torch.bfloat16, 20000, 20000, 20000, "held"),
                                                    (torch.float16, 32768, 32768, 32768, "held"),
                                                    (torch.bfloat16, 17000, 17008, 17008, "held"),
                                                    (torch.float16, 30001, 30001, 30001, "held"),
                                                    (torch.bfloat16, 17000, 17001, 17016, "prefetch")):
            with self.subTest(dtype=dtype, cols=cols, x_pitch=x_pitch, y_pitch=y_pitch):
                rows = 7 if form == "prefetch" else 3
                x = (torch.randn(rows, x_pitch) * 3).to(dtype)[:, :cols]
                x_before = x.clone()
                y_store = torch.full((rows, y_pitch), float("nan"), dtype=dtype)
                y = y_store[:, :cols]
                with mock.patch.object(kernel, "run", wraps=kernel.run) as launch:
                    triton_softmax.forward(x, y, "block_per_row")
                kwargs = launch.call_args.kwargs
                self.assertEqual((kwargs["HELD"], kwargs["PREFETCH"]), (form == "held", form == "prefetch"))
                if form == "held":
                    self.assertEqual((kwargs["num_warps"], kwargs["maxnreg"]), (16, 64))
                self.assertTrue(torch.equal(x, x_before), "forward modified its input")
                self.assertLessEqual(relative_error(y, torch.softmax(x.double(), -1)), TOLERANCE[dtype])
                self.assertTrue(y_store[:, cols:].isnan().all(), "wrote outside the output rows")

    def test_every_plan_runs_some_shape(self):
        covered = {plan for rows, cols in self.SHAPES for plan in runnable_plans(rows, cols)}
        self.assertEqual(covered, set(triton_softmax.plans()))

    def test_strided_and_misaligned_rows(self):
        base = torch.randn(6, 300)
        for plan in runnable_plans(3, 130):
            with self.subTest(plan=plan):
                x = base[::2, 5:135]                      # row stride 600, storage offset 5
                misaligned = base.view(-1)[1:391].view(3, 130)  # storage offset 1: not 16-byte aligned
                for view in (x, misaligned):
                    y_store = torch.full((3, 400), float("nan"))
                    y = y_store[:, 3:133]                  # strided, offset output
                    triton_softmax.forward(view, y, plan)
                    self.assertLessEqual(relative_error(y, torch.softmax(view.double(), -1)), 1e-5)
                    self.assertTrue(y_store[:, :3].isnan().all() and y_store[:, 133:].isnan().all(),
                                    "wrote outside the output rows")

    def test_edges_plans_move_whole_units_of_rows_that_share_a_phase(self):
        """Rows outside Triton's 16-byte specialization whose operands start each row at the same offset from a
        16-byte boundary run with EDGES (whole units, then head and tail elements) in block_per_row and the streaming
        plans: every row length and phase, row strides that differ by whole units, nothing written outside the rows
        (split_row in both its forms). Rows out of phase run without it, and warp_per_row never has it."""
        for dtype in DTYPES:
            unit = 16 // dtype.itemsize
            for cols in (1, 3, unit - 1, unit + 1, 2 * unit + 3, 1025):
                with self.subTest(dtype=dtype, cols=cols):
                    contiguous = (torch.empty(5, cols, dtype=dtype),)
                    self.assertTrue(triton_softmax._alignment("block_online", contiguous, cols)[1])
                    for plan in triton_softmax.EDGES_PLANS:
                        self.check_plan(plan, 5, cols, dtype)  # contiguous: row r starts r * cols % unit in
                    x = (torch.randn(5, cols + unit) * 3).to(dtype)[:, :cols]  # stride cols + unit: same phase
                    y_store = torch.full((5, cols + 2 * unit), float("nan"), dtype=dtype)
                    y = y_store[:, :cols]
                    self.assertTrue(triton_softmax._alignment("split_row", (x, y), cols)[1])
                    for plan, form in (("block_per_row", "streamed"), ("block_online", "streamed"),
                                       ("split_row", "held"), ("split_row", "streamed")):
                        with split_row_forced(form):  # no-op for block_per_row and block_online
                            y_store.fill_(float("nan"))
                            triton_softmax.forward(x, y, plan)
                        self.assertLessEqual(relative_error(y, torch.softmax(x.double(), -1)), TOLERANCE[dtype])
                        self.assertTrue(y_store[:, cols:].isnan().all(), "wrote outside the output rows")
                    out_of_phase = torch.randn(5, cols + 1).to(dtype)[:, :cols]
                    edges = triton_softmax._alignment("split_row", (out_of_phase, y), cols)[1]
                    self.assertEqual(edges, cols % unit == 0)
        self.assertFalse(triton_softmax._alignment("warp_per_row", (torch.empty(5, 7),), 7)[1])

    def test_edges_forward_launches_with_the_register_cap(self):
        """block_per_row's EDGES forward launches capped (EDGES_FORWARD_MAXNREG), and the kernels compiled ahead of
        time for the spill test carry the same cap; rows of whole units, 8-warp programs, fp32's 32-warp program
        and the prefetching form launch uncapped, except in the three-quarter tiles (PIECES_MAXNREG, either
        alignment)."""
        cap = triton_softmax._forward_maxnreg
        for dtype, warps, expected in ((torch.bfloat16, 16, 32), (torch.bfloat16, 32, 32), (torch.float16, 32, 32),
                                       (torch.float32, 16, 40), (torch.float32, 32, None), (torch.bfloat16, 8, None)):
            config = triton_softmax.LaunchConfig(8192, warps, 1)
            with self.subTest(dtype=dtype, warps=warps):
                self.assertEqual(cap(config, dtype.itemsize, True), expected)
                self.assertIsNone(cap(config, dtype.itemsize, False))
                self.assertIsNone(cap(config._replace(prefetch=True), dtype.itemsize, False))
        for cols, tile in ((8001, 8192), (5001, 6144)):  # a power-of-two tile, a three-quarter one
            x = torch.randn(3, cols, dtype=torch.bfloat16)
            with mock.patch.object(triton_softmax.softmax_fwd_block_per_row_kernel, "run",
                                   wraps=triton_softmax.softmax_fwd_block_per_row_kernel.run) as launch:
                triton_softmax.forward(x, torch.empty_like(x), "block_per_row")
            warps = launch.call_args.kwargs["num_warps"]
            self.assertEqual(launch.call_args.kwargs["BLOCK_N"], tile)
            expected = triton_softmax.EDGES_FORWARD_MAXNREG.get((2, warps)) if tile == 8192 else \
                triton_softmax.PIECES_MAXNREG[tile, warps]
            self.assertEqual(launch.call_args.kwargs["maxnreg"], expected)
        self.assertEqual(triton_softmax.PIECES_MAXNREG[6144, 8], 40)
        self.assertEqual(cap(triton_softmax.LaunchConfig(12288, 16, 1), 2, False), 40)
        tiles = set()
        for spec in triton_softmax.aot_specs(torch.bfloat16):
            if spec.name == "softmax_fwd_block_per_row_kernel":
                block_n, warps, edges = spec.constexprs["BLOCK_N"], spec.options["num_warps"], spec.constexprs["EDGES"]
                tiles.add((block_n, edges))
                if block_n & (block_n - 1):
                    expected = triton_softmax.PIECES_MAXNREG[block_n, warps]
                elif spec.constexprs["HELD"]:
                    expected = 64
                elif spec.constexprs["PREFETCH"] or not edges:
                    expected = None
                else:
                    expected = triton_softmax.EDGES_FORWARD_MAXNREG.get((2, warps))
                with self.subTest(spec=spec.constexprs, options=spec.options):
                    self.assertEqual(spec.options.get("maxnreg"), expected)
        # the spill test compiles the three-quarter tiles too, EDGES and 16-byte rows
        self.assertTrue({(6144, True), (6144, False), (12288, True), (12288, False)} <= tiles, tiles)

    def test_block_per_row_three_quarter_tiles_hold_two_pieces(self):
        """16-bit rows in whole 16-byte units (EDGES, or the 16-byte specialization) that fill at most 3/4 of
        block_per_row's tile are held in 3/4 of it, as a half and a quarter (_softmax_pieces_held,
        _grad_pieces_held): forward in the 8192- and 16384-column tiles at half the warps, backward in the 16384 one
        at its 16 warps and 64 registers. Lengths near the bounds, EDGES rows at every 16-byte phase, forward and
        backward against float64, inputs unchanged, nothing written outside the rows. Other rows keep the power of
        two."""
        tile = triton_softmax.block_per_row_tile
        for cols, fwd, bwd in ((4096, 4096, 4096), (4097, 6144, 8192), (6144, 6144, 8192), (6145, 8192, 8192),
                               (8193, 12288, 12288), (12288, 12288, 12288), (12289, 16384, 16384),
                               (16385, 32768, 32768)):
            self.assertEqual(tile(cols, torch.bfloat16, "fwd", True), fwd, cols)
            self.assertEqual(tile(cols, torch.float16, "bwd", True), bwd, cols)
            self.assertEqual(tile(cols, torch.bfloat16, "fwd", False), triton.next_power_of_2(cols), cols)  # no units
            self.assertEqual(tile(cols, torch.float32, "fwd", True), triton.next_power_of_2(cols), cols)
            self.assertEqual(tile(cols, torch.float32, "bwd", True), triton.next_power_of_2(cols), cols)
        self.assertEqual(triton_softmax.launch_config("block_per_row", torch.bfloat16, 12288).num_warps, 16)
        self.assertEqual(triton_softmax.launch_config("block_per_row", torch.bfloat16, 6144).num_warps, 8)
        backward = triton_softmax.launch_config("block_per_row", torch.bfloat16, 12288, "bwd")
        self.assertEqual((backward.num_warps, backward.maxnreg), (16, 64))
        kernels = {"fwd": triton_softmax.softmax_fwd_block_per_row_kernel,
                   "bwd": triton_softmax.softmax_bwd_block_per_row_kernel}
        for dtype in (torch.bfloat16, torch.float16):
            unit = 16 // dtype.itemsize
            for cols in (4097, 5001, 6143, 8193, 12287, 4112, 6128, 8208, 12272):
                with self.subTest(dtype=dtype, cols=cols):
                    rows = unit  # odd lengths: row r starts r * cols % unit elements past a 16-byte boundary
                    x, dy = ((torch.randn(rows, cols + 16) * 3).to(dtype)[:, :cols] for _ in range(2))
                    x_before, dy_before = x.clone(), dy.clone()
                    y_store, dx_store = (torch.full((rows, cols + 16), float("nan"), dtype=dtype) for _ in range(2))
                    y, dx = y_store[:, :cols], dx_store[:, :cols]
                    aligned, edges = triton_softmax._alignment("block_per_row", (x, y), cols)
                    self.assertEqual((aligned, edges), (cols % 16 == 0, cols % 16 != 0))
                    with mock.patch.object(kernels["fwd"], "run", wraps=kernels["fwd"].run) as forward:
                        triton_softmax.forward(x, y, "block_per_row")
                    y_before = y.clone()
                    with mock.patch.object(kernels["bwd"], "run", wraps=kernels["bwd"].run) as backward:
                        triton_softmax.backward(y, dy, dx, "block_per_row")
                    self.assertEqual((forward.call_args.kwargs["BLOCK_N"], backward.call_args.kwargs["BLOCK_N"]),
                                     (tile(cols, dtype, "fwd", True), tile(cols, dtype, "bwd", True)))
                    self.assertTrue(torch.equal(x, x_before) and torch.equal(dy, dy_before)
                                    and torch.equal(y, y_before), "modified an input")
                    self.assertLessEqual(relative_error(y, torch.softmax(x.double(), -1)), TOLERANCE[dtype])
                    self.assertLessEqual(relative_error(dx, reference_grad(y, dy), grad_scale(y, dy)), TOLERANCE[dtype])
                    self.assertTrue(y_store[:, cols:].isnan().all() and dx_store[:, cols:].isnan().all(),
                                    "wrote outside the output rows")

    def test_span_body_and_edges_cover_every_element_once(self):
        @triton.jit
        def count_cover(count_ptr, start, stop, V: tl.constexpr, BLOCK: tl.constexpr):
            body_start, body_stop = triton_softmax._span_body(start, stop, V, True)
            for tile in range(body_start, body_stop, BLOCK):
                col = tile + tl.arange(0, BLOCK)
                tl.store(count_ptr + col, tl.load(count_ptr + col, mask=col < body_stop) + 1, mask=col < body_stop)
            col, mask = triton_softmax._span_edges(start, stop, V)
            tl.store(count_ptr + col, tl.load(count_ptr + col, mask=mask) + 1, mask=mask)

        for unit in (4, 8):
            for start in range(0, 2 * unit + 1):
                for length in (0, 1, 2, unit - 1, unit, unit + 1, 2 * unit - 1, 2 * unit, 3 * unit + 5):
                    count = torch.zeros(8 * unit, dtype=torch.int32)
                    count_cover[(1,)](count, start, start + length, V=unit, BLOCK=2 * unit)
                    expected = torch.zeros_like(count)
                    expected[start:start + length] = 1
                    with self.subTest(unit=unit, start=start, length=length):
                        self.assertTrue(torch.equal(count, expected), count.tolist())

    def test_check_plan_refuses_rows_too_long_for_registers(self):
        with self.assertRaisesRegex(ValueError, r"'warp_per_row' cannot run rows of 1025 columns \(max 1024\)"):
            triton_softmax.check_plan("warp_per_row", 4, 1025, torch.float32, CPU)
        with self.assertRaisesRegex(ValueError, r"'block_per_row' cannot run rows of 32769 columns"):
            triton_softmax.check_plan("block_per_row", 4, 32769, torch.float32, CPU)
        with self.assertRaisesRegex(ValueError, "unknown triton plan 'cluster_split_row'.*split_row"):
            triton_softmax.check_plan("cluster_split_row", 4, 100, torch.float32, CPU)

    def test_choose_plan_by_shape(self):
        self.assertEqual(triton_softmax.choose_plan(65536, 256, torch.float32, CPU), "warp_per_row")
        self.assertEqual(triton_softmax.choose_plan(16384, 1024, torch.float32, CPU), "block_per_row")
        self.assertEqual(triton_softmax.choose_plan(16384, 1024, torch.bfloat16, CPU), "warp_per_row")
        self.assertEqual(triton_softmax.choose_plan(2, 1024, torch.float32, CPU), "warp_per_row")  # < 1 row per SM
        self.assertEqual(triton_softmax.choose_plan(4096, 4096, torch.bfloat16, CPU), "block_per_row")
        self.assertEqual(triton_softmax.choose_plan(2048, 32769, torch.bfloat16, CPU), "split_row")
        # 16-bit forward rows of 16385-32768 columns: block_per_row's held form at any row count
        sms = triton_softmax.INTERPRETER_SM_COUNT
        many, few = 8 * sms + 1, 8 * sms
        self.assertEqual(triton_softmax.choose_plan(many, 16400, torch.bfloat16, CPU), "block_per_row")
        self.assertEqual(triton_softmax.choose_plan(many, 32768, torch.float16, CPU), "block_per_row")
        self.assertEqual(triton_softmax.choose_plan(few, 32768, torch.bfloat16, CPU), "block_per_row")
        self.assertEqual(triton_softmax.choose_plan(many, 16384, torch.bfloat16, CPU), "block_per_row")
        self.assertEqual(triton_softmax.choose_plan(many, 32768, torch.bfloat16, CPU, "bwd"), "block_per_row")
        self.assertEqual(triton_softmax.choose_plan(many, 32768, torch.float32, CPU), "block_per_row")
        # fp32 backward rows of 16385-32768 columns: block_online's 32-warp programs
        self.assertEqual(triton_softmax.choose_plan(4096, 32768, torch.float32, CPU, "bwd"), "block_online")
        self.assertEqual(triton_softmax.choose_plan(4096, 16385, torch.float32, CPU, "bwd"), "block_online")
        self.assertEqual(triton_softmax.choose_plan(4096, 16384, torch.float32, CPU, "bwd"), "block_per_row")
        self.assertEqual(triton_softmax.choose_plan(4096, 32769, torch.float32, CPU, "bwd"), "split_row")
        self.assertEqual(triton_softmax.choose_plan(4096, 32768, torch.float32, CPU), "block_per_row")
        self.assertEqual(triton_softmax.choose_plan(sms, 32768, torch.float32, CPU, "bwd"), "block_per_row")  # few rows
        self.assertEqual(triton_softmax.choose_plan(sms + 1, 32768, torch.float32, CPU, "bwd"), "block_online")
        # rows whose length is not a multiple of 16 (outside the 16-byte specialization) past 8192 columns (_edges_plan)
        for dtype in (torch.bfloat16, torch.float16):
            for direction in ("fwd", "bwd"):
                self.assertEqual(triton_softmax.choose_plan(sms, 16001, dtype, CPU, direction), "block_per_row")
                self.assertEqual(triton_softmax.choose_plan(4096, 4095, dtype, CPU, direction), "block_per_row")
                self.assertEqual(triton_softmax.choose_plan(4096, 16000, dtype, CPU, direction), "block_per_row")
            # forward: block_per_row at any row count
            self.assertEqual(triton_softmax.choose_plan(4 * sms + 1, 4097, dtype, CPU), "block_per_row")
            self.assertEqual(triton_softmax.choose_plan(4 * sms, 8001, dtype, CPU), "block_per_row")
            self.assertEqual(triton_softmax.choose_plan(4096, 8193, dtype, CPU), "block_per_row")
            self.assertEqual(triton_softmax.choose_plan(4 * sms, 12001, dtype, CPU), "block_per_row")
            self.assertEqual(triton_softmax.choose_plan(4096, 16383, dtype, CPU), "block_per_row")
            self.assertEqual(triton_softmax.choose_plan(4 * sms + 1, 16385, dtype, CPU), "block_per_row")
            self.assertEqual(triton_softmax.choose_plan(4096, 30001, dtype, CPU), "block_per_row")
            self.assertEqual(triton_softmax.choose_plan(4 * sms, 16385, dtype, CPU), "block_per_row")
            self.assertEqual(triton_softmax.choose_plan(sms + 1, 32767, dtype, CPU), "block_per_row")
            # backward: past 8192 columns block_online for at most 4 rows per SM; with more, block_per_row
            self.assertEqual(triton_softmax.choose_plan(4 * sms, 16001, dtype, CPU, "bwd"), "block_online")
            self.assertEqual(triton_softmax.choose_plan(4 * sms + 1, 4097, dtype, CPU, "bwd"), "block_per_row")
            self.assertEqual(triton_softmax.choose_plan(4 * sms, 8001, dtype, CPU, "bwd"), "block_per_row")
            self.assertEqual(triton_softmax.choose_plan(4096, 8191, dtype, CPU, "bwd"), "block_per_row")
            self.assertEqual(triton_softmax.choose_plan(4096, 8193, dtype, CPU, "bwd"), "block_per_row")
            self.assertEqual(triton_softmax.choose_plan(4 * sms + 1, 12287, dtype, CPU, "bwd"), "block_per_row")
            self.assertEqual(triton_softmax.choose_plan(4 * sms, 12287, dtype, CPU, "bwd"), "block_online")
            self.assertEqual(triton_softmax.choose_plan(4096, 12289, dtype, CPU, "bwd"), "block_per_row")
            self.assertEqual(triton_softmax.choose_plan(4096, 24001, dtype, CPU, "bwd"), "block_per_row")
        # fp32 forward: block_per_row in its 8192-column tile, in the 16384-column tile with more than 4 rows per SM
        # or 3/4 used, and where the row fills 3/4 of the 32768-column tile
        self.assertEqual(triton_softmax.choose_plan(4096, 4095, torch.float32, CPU), "block_per_row")
        self.assertEqual(triton_softmax.choose_plan(4096, 4097, torch.float32, CPU), "block_per_row")
        self.assertEqual(triton_softmax.choose_plan(4096, 8191, torch.float32, CPU), "block_per_row")
        self.assertEqual(triton_softmax.choose_plan(4096, 8193, torch.float32, CPU), "block_per_row")
        self.assertEqual(triton_softmax.choose_plan(4 * sms + 1, 12287, torch.float32, CPU), "block_per_row")
        self.assertEqual(triton_softmax.choose_plan(4 * sms, 8193, torch.float32, CPU), "block_online")
        self.assertEqual(triton_softmax.choose_plan(4 * sms, 12287, torch.float32, CPU), "block_online")
        self.assertEqual(triton_softmax.choose_plan(4 * sms, 12289, torch.float32, CPU), "block_per_row")
        self.assertEqual(triton_softmax.choose_plan(4096, 16385, torch.float32, CPU), "split_row")
        self.assertEqual(triton_softmax.choose_plan(4096, 24575, torch.float32, CPU), "split_row")
        self.assertEqual(triton_softmax.choose_plan(4096, 24577, torch.float32, CPU), "block_per_row")
        self.assertEqual(triton_softmax.choose_plan(4 * sms, 16385, torch.float32, CPU), "block_online")
        self.assertEqual(triton_softmax.choose_plan(sms, 8191, torch.float32, CPU), "block_per_row")
        self.assertEqual(triton_softmax.choose_plan(4096, 12001, torch.float32, CPU, "bwd"), "block_per_row")
        self.assertEqual(triton_softmax.choose_plan(4096, 24001, torch.float32, CPU, "bwd"), "block_online")
        self.assertEqual(triton_softmax.choose_plan(2048, 50257, torch.bfloat16, CPU), "split_row")
        self.assertEqual(triton_softmax.choose_plan(2048, 50257, torch.bfloat16, CPU, "bwd"), "split_row")
        self.assertEqual(triton_softmax.choose_plan(1, 50257, torch.bfloat16, CPU), "split_row")
        self.assertEqual(triton_softmax.choose_plan(2048, 50257, torch.float32, CPU), "split_row")  # 200 KB rows
        self.assertEqual(triton_softmax.choose_plan(1024, 131072, torch.bfloat16, CPU), "split_row")
        self.assertEqual(triton_softmax.choose_plan(4, 4194304, torch.float32, CPU), "split_row")


@needs_interpreter
class TritonSplitRowWorkspaceTest(unittest.TestCase):
    """split_row's workspace ([ticket, exits, launches, partial words], int64) comes from a per-(device, stream) pool,
    zeroed once when made; the kernels' last program out zeroes the ticket and exit counters and advances the launch
    count, and every job publishes its partials (forward two words, backward one) tagged with the launch's count
    plus one. Off the GPU a row is one chunk, but every program still takes tickets, publishes, waits (for itself)
    and counts its exit."""

    def setUp(self):
        patcher = mock.patch.dict(triton_softmax._WORKSPACES, clear=True)  # a pool of this test's own
        patcher.start()
        self.addCleanup(patcher.stop)

    def pool(self) -> list:
        self.assertEqual(list(triton_softmax._WORKSPACES), [(CPU, 0)])
        return triton_softmax._WORKSPACES[(CPU, 0)]

    def run_split_row(self, direction, rows, cols):
        """One split_row call on fresh random inputs, checked against float64 torch."""
        x = torch.randn(rows, cols) * 3.0
        if direction == "fwd":
            y = torch.full_like(x, float("nan"))
            triton_softmax.forward(x, y, "split_row")
            self.assertLessEqual(relative_error(y, torch.softmax(x.double(), -1)), TOLERANCE[torch.float32])
        else:
            y, dy, dx = torch.softmax(x, -1), torch.randn(rows, cols), torch.full_like(x, float("nan"))
            triton_softmax.backward(y, dy, dx, "split_row")
            self.assertLessEqual(relative_error(dx, reference_grad(y, dy), grad_scale(y, dy)),
                                 TOLERANCE[torch.float32])

    def test_counters_left_zero_words_tagged_and_reused(self):
        rows = 300
        for direction, words in (("fwd", 2 * rows), ("bwd", rows)):  # one chunk per row off the GPU
            with self.subTest(direction=direction):
                triton_softmax._WORKSPACES.clear()
                buffers = []
                for launch in (1, 2):
                    self.run_split_row(direction, rows, 70)
                    (buffer,) = self.pool()
                    self.assertEqual(buffer.numel(), 3 + words)
                    self.assertEqual(buffer[:3].tolist(), [0, 0, launch])
                    self.assertTrue(torch.equal(buffer[3:] & 0xFFFFFFFF, torch.full((words,), launch)),
                                    "a word without this launch's tag")
                    buffers.append(buffer)
                self.assertIs(buffers[0], buffers[1])
                if direction == "bwd":  # the backward's words are its row's y . dy, here about 0 (dy's mean)
                    continue
                maxes = (buffer[3:3 + rows] >> 32).to(torch.int32).view(torch.float32)
                self.assertTrue(torch.all(maxes > 0), "the forward's max words hold no row maximum")

    def test_launch_count_wraps_past_zero(self):
        """The launch count runs modulo LAUNCH_TAGS (2**32 - 1), so a tag (count + 1) is never 0, the words of a
        buffer just made."""
        self.run_split_row("fwd", 2, 50)
        (buffer,) = self.pool()
        buffer[2] = triton_softmax.LAUNCH_TAGS.value - 1  # the last count before the wrap: tag 2**32 - 1
        self.run_split_row("fwd", 2, 50)
        self.assertEqual(buffer[:3].tolist(), [0, 0, 0])
        self.assertTrue(torch.equal(buffer[3:] & 0xFFFFFFFF, torch.full((4,), triton_softmax.LAUNCH_TAGS.value)))

    def test_too_small_buffer_is_not_reused(self):
        self.run_split_row("fwd", 2, 50)
        (small,) = self.pool()
        self.run_split_row("bwd", 6, 50)
        pool = self.pool()
        self.assertEqual(len(pool), 2)
        self.assertIs(pool[0], small)
        self.assertGreaterEqual(pool[1].numel(), 3 + 6)
        self.run_split_row("fwd", 2, 50)  # fits the first again
        self.run_split_row("fwd", 3, 50)  # fits only the larger one (6 words)
        self.assertEqual(len(self.pool()), 2)  # neither call made a third
        self.assertEqual([buffer[:3].tolist() for buffer in pool], [[0, 0, 2], [0, 0, 2]])


@needs_interpreter
class SoftmaxApiTest(unittest.TestCase):
    """cp.softmax with backend='triton' (the CPU tier's backend) against torch."""

    def assert_matches_torch(self, x, dim=-1, plan="auto", tol=None):
        before = x.clone()
        y = cp.softmax(x, dim, backend="triton", plan=plan)
        self.assertTrue(torch.equal(x, before), "input modified")
        self.assertEqual(y.dtype, x.dtype)
        self.assertEqual(y.shape, x.shape)
        ref = torch.softmax(x.double(), dim)
        self.assertLessEqual(relative_error(y, ref), tol or TOLERANCE[x.dtype])
        return y

    def test_dims_other_than_last(self):
        x = torch.randn(3, 5, 7)
        for dim in (0, 1, 2, -1, -2, -3):
            with self.subTest(dim=dim):
                self.assert_matches_torch(x, dim)

    def test_non_contiguous_and_offset_inputs(self):
        base = torch.randn(8, 40)
        for label, x in {"transposed": base.t(), "column slice": base[:, 3:36], "every other row": base[::2],
                         "storage offset 1": base.view(-1)[1:34], "expanded rows": base[:1].expand(4, 40)}.items():
            with self.subTest(view=label):
                self.assert_matches_torch(x)

    def test_every_plan_through_the_api(self):
        x = torch.randn(3, 5, 33)
        for plan in runnable_plans(15, 33):
            with self.subTest(plan=plan):
                self.assert_matches_torch(x, plan=plan)

    def test_zero_dim_and_empty_tensors(self):
        scalar = torch.tensor(2.5)
        self.assertTrue(torch.equal(cp.softmax(scalar, 0, backend="triton"), torch.softmax(scalar, 0)))
        for shape, dim in (((0, 5), -1), ((4, 0), -1), ((3, 0, 2), 0)):
            with self.subTest(shape=shape):
                x = torch.randn(shape, requires_grad=True)
                y = cp.softmax(x, dim, backend="triton")
                self.assertEqual(y.shape, x.shape)
                y.sum().backward()
                self.assertEqual(x.grad.shape, x.shape)

    def test_special_values_like_torch(self):
        inf = float("inf")
        x = torch.randn(5, 33)
        x[0, 3] = float("nan")           # NaN row
        x[1, :] = -inf                   # all -inf row: NaN
        x[2, ::2] = -inf                 # -inf elements: 0
        x[3, 7] = inf                    # +inf: NaN row, as torch
        for plan in runnable_plans(5, 33):
            with self.subTest(plan=plan):
                y = cp.softmax(x, backend="triton", plan=plan).double()
                ref = torch.softmax(x.double(), -1)
                self.assertTrue(torch.equal(y.isnan(), ref.isnan()), f"NaN pattern: {y.isnan().sum(-1)}")
                finite = ~ref.isnan()
                self.assertLessEqual(float((y[finite] - ref[finite]).abs().max()), 1e-6)

    def test_special_values_across_tiles_of_the_online_update(self):
        """The streaming plans' first pass (_online_max_sum: per-thread (max, sum), an unmasked loop over the span's
        full tiles and one masked tail tile) over rows of two or more tiles, a span of whole tiles and one with a
        tail, fp32 (4096-column tiles) and bf16 (8192): a thread's max rising from one tile to the next (the old sum
        is rescaled), falling or level, a tile of only -inf followed by finite values, NaN or +inf only in the last
        tile (the tail where there is one). split_row in its streamed form (its held form has one tile)."""
        inf = float("inf")
        for dtype, cols in ((torch.float32, 4500), (torch.float32, 8192), (torch.bfloat16, 9000),
                            (torch.bfloat16, 16384)):
            for plan in ("block_online", "split_row"):
                tile = triton_softmax.launch_config(plan, dtype, triton.next_power_of_2(cols)).block_n
                self.assertGreater(cols, tile)  # the full-tile loop runs, and the last tile...
                last = cols - tile if cols % tile == 0 else cols - cols % tile  # ...is whole or the masked tail
                x = torch.randn(8, cols)
                x[0, last + 5] = float("nan")                 # NaN in the last tile only: NaN row
                x[1, :] = -inf                                # all -inf: NaN row
                x[2, :tile] = -inf                            # a tile of only -inf, then finite values
                x[3, cols - 1] = inf                          # +inf in the last tile: NaN row, as torch
                x[4] = torch.linspace(-30.0, 30.0, cols)      # every thread's max rises
                x[5] = torch.linspace(30.0, -30.0, cols)      # every thread's max stays
                x[6, tile:] = x[6, :cols - tile]              # level: equal elements meet
                x[7, ::3] = -inf                              # -inf elements among finite ones
                x = x.to(dtype)
                ref = torch.softmax(x.double(), -1)
                finite = ~ref.isnan()
                with self.subTest(plan=plan, dtype=dtype, cols=cols, tail=cols % tile), split_row_forced("streamed"):
                    y = cp.softmax(x, backend="triton", plan=plan).double()
                    self.assertTrue(torch.equal(y.isnan(), ref.isnan()), f"NaN pattern: {y.isnan().sum(-1)}")
                    if dtype == torch.float32:
                        self.assertLessEqual(float((y[finite] - ref[finite]).abs().max()), 1e-6)
                    else:
                        self.assertLessEqual(relative_error(y[finite], ref[finite]), TOLERANCE[dtype])

    def test_large_fp16_values_do_not_overflow(self):
        x = (torch.rand(3, 130) * 60000 + 5000).half()
        for plan in runnable_plans(3, 130):
            with self.subTest(plan=plan):
                y = self.assert_matches_torch(x, plan=plan)
                self.assertFalse(bool(y.isnan().any()))

    def test_properties_rows_sum_to_one_and_shift_invariance(self):
        x = torch.randn(4, 7, 130)
        y = cp.softmax(x, backend="triton")
        torch.testing.assert_close(y.sum(-1), torch.ones(4, 7), atol=1e-5, rtol=0)
        shifted = cp.softmax(x + 17.0, backend="triton")
        torch.testing.assert_close(shifted, y, atol=1e-6, rtol=1e-4)
        self.assertTrue(bool((y >= 0).all()))

    def test_autograd_matches_float64_torch(self):
        for dtype in DTYPES:
            for plan in runnable_plans(6, 33):
                with self.subTest(dtype=dtype, plan=plan):
                    x = torch.randn(2, 3, 33).to(dtype).requires_grad_()
                    x64 = x.detach().double().requires_grad_()
                    dy = torch.randn(2, 3, 33).to(dtype)
                    cp.softmax(x, backend="triton", plan=plan).backward(dy)
                    torch.softmax(x64, -1).backward(dy.double())
                    self.assertEqual(x.grad.dtype, dtype)
                    self.assertLessEqual(relative_error(x.grad, x64.grad, grad_scale(torch.softmax(x64.detach(), -1), dy)),
                                         TOLERANCE[dtype])

    def test_double_backward_matches_float64_torch(self):
        """Second order through the backward op (Hessian-vector products): the gradient of <grad_x(<softmax(x), w>),
        v> with respect to x and to w, against float64 torch. 16-bit tolerances are doubled: the second order starts
        from the rounded y and first gradient (bf16 measured up to 7.5e-3 over six seeds, fp16 4.5e-4)."""
        for dtype in DTYPES:
            for plan in runnable_plans(6, 33, dtype):
                with self.subTest(dtype=dtype, plan=plan):
                    x = torch.randn(2, 3, 33).to(dtype).requires_grad_()
                    w = torch.randn(2, 3, 33).to(dtype).requires_grad_()
                    v = torch.randn(2, 3, 33).to(dtype)
                    (g,) = torch.autograd.grad((cp.softmax(x, backend="triton", plan=plan) * w).sum(), x,
                                               create_graph=True)
                    grad_x, grad_w = torch.autograd.grad((g * v).sum(), [x, w])
                    x64, w64 = (t.detach().double().requires_grad_() for t in (x, w))
                    (g64,) = torch.autograd.grad((torch.softmax(x64, -1) * w64).sum(), x64, create_graph=True)
                    ref_x, ref_w = torch.autograd.grad((g64 * v.double()).sum(), [x64, w64])
                    self.assertEqual((grad_x.dtype, grad_w.dtype), (dtype, dtype))
                    tol = TOLERANCE[dtype] * (1 if dtype == torch.float32 else 2)
                    self.assertLessEqual(relative_error(grad_x, ref_x), tol)
                    self.assertLessEqual(relative_error(grad_w, ref_w), tol)

    def test_autocast_region_keeps_the_input_dtype(self):
        """Inside torch.autocast cp.softmax keeps its input's dtype and values (the README says how torch's CUDA
        autocast differs), forward and backward."""
        for dtype in (torch.float32, torch.bfloat16):
            with self.subTest(dtype=dtype):
                x = torch.randn(6, 37).to(dtype).requires_grad_()
                outside = cp.softmax(x.detach(), backend="triton")
                with torch.autocast("cpu", dtype=torch.bfloat16 if dtype == torch.float32 else torch.float16):
                    y = cp.softmax(x, backend="triton")
                self.assertEqual(y.dtype, dtype)
                self.assertTrue(torch.equal(y.detach(), outside))
                y.float().sum().backward()
                self.assertEqual(x.grad.dtype, dtype)

    @unittest.skipUnless(hasattr(softmax_fwd, "register_vmap"), "torch < 2.5: custom ops have no register_vmap")
    def test_vmap_runs_the_batch_in_one_launch(self):
        """torch.func.vmap over cp.softmax (and the backward op, one operand unbatched): the batch becomes more rows
        of one launch (register_vmap), where torch's default rule launched once per sample; values against float64."""
        launches = []

        def counted(name):
            real = getattr(triton_softmax, name)
            return lambda rows, *args: launches.append((name, tuple(rows.shape))) or real(rows, *args)

        x = torch.randn(4, 3, 9, requires_grad=True)
        w = torch.randn(3, 4, 9)
        with mock.patch.object(triton_softmax, "forward", counted("forward")), \
                mock.patch.object(triton_softmax, "backward", counted("backward")):
            y = torch.func.vmap(lambda r: cp.softmax(r, -1, backend="triton"), in_dims=1)(x)
            y.backward(w)
            y_bwd = torch.softmax(torch.randn(3, 9), -1)
            dys = torch.randn(5, 3, 9)
            dx = torch.func.vmap(lambda d: softmax_bwd(y_bwd, d, "triton", "auto"))(dys)
        self.assertEqual(launches, [("forward", (12, 9)), ("backward", (12, 9)), ("backward", (15, 9))])
        x64 = x.detach().double().requires_grad_()
        ref = torch.softmax(x64, -1).movedim(1, 0)
        ref.backward(w.double())
        tol = TOLERANCE[torch.float32]
        self.assertLessEqual(relative_error(y.detach(), ref.detach()), tol)
        self.assertLessEqual(relative_error(x.grad, x64.grad), tol)
        self.assertLessEqual(relative_error(dx, reference_grad(y_bwd, dys)), tol)

    def test_autograd_other_dim_and_broadcast_grad(self):
        # The gradient reaching the op is an expanded (row stride 0) tensor after moving dim 0 last.
        x = torch.randn(33, 4, requires_grad=True)
        x64 = x.detach().double().requires_grad_()
        weight = torch.randn(33, 1)
        (cp.softmax(x, 0, backend="triton") * weight).sum().backward()
        (torch.softmax(x64, 0) * weight.double()).sum().backward()
        self.assertLessEqual(relative_error(x.grad, x64.grad), 1e-5)

    def test_torch_compile_fullgraph(self):
        try:
            compiled = torch.compile(lambda t: cp.softmax(t, 1, backend="triton") * 2, fullgraph=True)
            x = torch.randn(3, 33, 5)
            y = compiled(x)
        except Exception as exc:  # a compiler toolchain problem on this machine, not our op
            if "cuda_portfolio" in repr(exc) or "softmax" in repr(exc):
                raise
            self.skipTest(f"torch.compile does not run on this CPU machine: {type(exc).__name__}: {exc}"[:300])
        self.assertLessEqual(relative_error(y, torch.softmax(x.double(), 1) * 2), 1e-5)


class SoftmaxValidationTest(unittest.TestCase):
    def test_bad_dtypes_and_non_tensors(self):
        for bad in (torch.arange(5), torch.arange(5, dtype=torch.int32), torch.randn(5, dtype=torch.float64)):
            with self.subTest(dtype=bad.dtype):
                with self.assertRaisesRegex(TypeError, rf"unsupported dtype {bad.dtype}.*torch.float32, torch.float16, "
                                                       "torch.bfloat16"):
                    cp.softmax(bad)
        with self.assertRaisesRegex(TypeError, "must be a torch.Tensor"):
            cp.softmax([1.0, 2.0])

    def test_dim_out_of_range(self):
        with self.assertRaisesRegex(IndexError, r"dim 2 is out of range for a tensor with ndim 2"):
            cp.softmax(torch.randn(3, 4), 2)
        with self.assertRaisesRegex(IndexError, r"dim -3 is out of range"):
            cp.softmax(torch.randn(3, 4), -3)
        with self.assertRaisesRegex(IndexError, r"dim 1 is out of range for a tensor with ndim 0"):
            cp.softmax(torch.tensor(1.0), 1)

    def test_dim_and_plan_of_the_wrong_type(self):
        with self.assertRaisesRegex(TypeError, r"softmax: dim must be an int, got True of type bool"):
            cp.softmax(torch.randn(3, 4), True)
        with self.assertRaisesRegex(TypeError, r"softmax: dim must be an int, got 1.0 of type float"):
            cp.softmax(torch.randn(3, 4), 1.0)
        with self.assertRaisesRegex(TypeError, r"softmax: plan must be a str \('auto' or a name from "
                                               r"softmax_plans\(backend\)\), got None of type NoneType"):
            cp.softmax(torch.randn(3, 4), plan=None)

    def test_cpu_tensor_for_cuda_backend(self):
        with self.assertRaisesRegex(ValueError, "backend='cuda' needs a CUDA tensor, got a tensor on cpu"):
            cp.softmax(torch.randn(3), backend="cuda")

    def test_unknown_backend(self):
        with self.assertRaisesRegex(ValueError, "unknown backend 'cudnn'"):
            cp.softmax(torch.randn(3), backend="cudnn")
        with self.assertRaisesRegex(ValueError, "unknown backend 'cudnn'"):
            cp.softmax_plans("cudnn")

    @needs_interpreter
    def test_unknown_plan_lists_the_backends_plans(self):
        with self.assertRaisesRegex(ValueError, "unknown plan 'fastest' for backend 'triton'.*warp_per_row, "
                                                "block_per_row, block_online, split_row"):
            cp.softmax(torch.randn(3, 4), backend="triton", plan="fastest")
        with self.assertRaisesRegex(ValueError, "unknown plan 'cluster_split_row' for backend 'triton'"):
            cp.softmax(torch.randn(3, 4), backend="triton", plan="cluster_split_row")

    @needs_interpreter
    def test_plan_that_cannot_run_the_shape(self):
        with self.assertRaisesRegex(ValueError, r"'warp_per_row' cannot run rows of 2000 columns \(max 1024\)"):
            cp.softmax(torch.randn(2, 2000), backend="triton", plan="warp_per_row")

    def test_softmax_plans_contents(self):
        self.assertEqual(cp.softmax_plans("triton"), ["warp_per_row", "block_per_row", "block_online", "split_row"])
        try:
            cuda_plans = cp.softmax_plans("cuda")
        except RuntimeError as exc:  # no native module on this machine (built without nvcc)
            self.skipTest(str(exc))
        self.assertEqual(set(cuda_plans) - set(cp.softmax_plans("triton")), {"cluster_split_row"})
        self.assertTrue(set(cp.softmax_plans("triton")) <= set(cuda_plans))


if __name__ == "__main__":
    unittest.main()
