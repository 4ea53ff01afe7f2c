"""Row-wise softmax forward and backward in Triton over a (rows, cols) view with unit column stride.

forward:  y  = exp(x - max(x)) / sum(exp(x - max(x)))   per row, in fp32, stored in x's dtype
backward: dx = y * (dy - sum(y * dy))                     per row

Four plans (the CUDA backend has the same names; "cluster_split_row" needs distributed shared
memory, which Triton cannot express):
  warp_per_row   cols <= 1024: a program owns a [ROWS, BLOCK_N] tile (several whole rows) in
                 registers; one read + one write. Bound: bytes.
  block_per_row  cols <= 32768: one program per row, held whole in registers (BLOCK_N =
                 next_pow2(cols) spread over up to 32 warps); one read + one write. Bound: bytes.
                 16-bit rows of whole units that fill at most 3/4 of the tile are held in 3/4
                 of it, a half and a quarter (block_per_row_tile): forward 8192- and 16384-column
                 tiles at half the warps, so no quarter of the lanes holds nothing; backward the
                 16384-column tile, at two programs per SM instead of one.
                 Not persistent: the hardware starts a row's program wherever one finishes, so the
                 grid never depends on how many programs ptxas's register count lets an SM hold (a
                 persistent grid sized at 64 warps per SM ran its last quarter to half as a second
                 wave at 8192 columns: 37-48 registers fit 2-3 programs of 16 warps, not 4). 16-bit
                 forward rows of 16385-32768 columns in whole 16-byte units run at 16 warps, two
                 programs per SM, each row held as words (_softmax_row_words); the others, the
                 exception, take a persistent 32-warp program per SM that loads its next row while
                 it reduces and writes this one.
  block_online   any cols (auto: fp32 backward rows of 16385-32768 columns with more rows than
                 SMs, and rows not a multiple of 16 long where _edges_plan picks it; the forward
                 and 16-bit rows left it in session 29, split_row's quarter tiles measured as fast
                 or faster):
                 pass 1 keeps per-thread running (max, sum) pairs over BLOCK_N-column tiles (online
                 softmax, one read), pass 2 walks the tiles backwards (the newest are still in L2) to
                 normalize and write. Rows in flight must fit in L2 between their two reads: a program
                 per row while the rows resident at once fit (_block_online_programs), else a
                 persistent grid sized so they fit walks rows. The backward runs a program per row:
                 two 16-warp programs per SM while two rows per SM fit the L2 budget, else one
                 32-warp program per SM (Inductor's form; block_online_backward_config). Bound:
                 bytes, 1 read + 1 write when pass 2 hits L2, up to 2 reads + 1 write when it misses.
  split_row      any cols (auto: every row past 32768 columns, and rows not a multiple of 16 long
                 where _edges_plan picks it): each row is cut into
                 chunks; a persistent program takes (row, chunk) jobs from a ticket counter, folds
                 its chunk into (max, sum) (backward: a partial dot), publishes it, waits for the
                 row's other chunks, combines the partials and normalizes its chunk at once. Two
                 forms (split_row_config): held, a chunk is one tile (forward 32 KiB, 16 KiB for 16-bit
                 rows of at most 128 KiB; backward 64 KiB of y and dy, 32 KiB for rows of at most
                 200 KiB) loaded at once and kept in
                 registers through the exchange (16-bit rows as words of two elements), taken when
                 many rows are in flight; streamed, a chunk is many tiles, re-read from L2 (all
                 chunks in flight fit the L2 budget). Bound: bytes, 1 read + 1 write (streamed: as
                 block_online), plus one exchange per row. The ticket and exit counters reset
                 themselves (the last program out zeroes them) and the partials carry a launch tag,
                 so each stream's workspace is zeroed once when made, not per call (_workspace). The
                 interpreter runs programs one after another, so a wait for another program would
                 never end there: off the GPU every row is one chunk, and the exchange across programs
                 runs on GPUs only.

Bytes in flight, backward. A streaming program with plain loads has one tile in flight, and split_row's backward runs
two programs per SM at long rows: too few bytes against the ~40 KiB per SM that 4.2 TB/s x ~1.2 us of DRAM latency
needs. So its first pass (the y.dy dot) is software-pipelined with tl.range(num_stages=STAGES): Triton 3.6 turns its
loads into cp.async copies to shared memory issued STAGES - 1 tiles ahead, 64 KiB per program (STREAM_BYTES_AHEAD).
Those loads lose their L2 eviction hint (Triton drops it on cp.async). The second pass keeps plain loads with
evict_first and stores with .cs (streaming: the output does not push the rows still waiting for their second read out of
L2). split_row's persistent grid counts two pipelined programs per SM (SPLIT_ROW_BWD_PROGRAMS_PER_SM), the unpipelined
ones (forward, unaligned backward) as many as their registers allow (PLAIN_STREAM_REGISTERS), and tells ptxas so
(maxnreg). Measured at e7fb008 (this scheme in both directions, with a one-exponential online update): backward
+0.04-0.14x of copy, forward -0.03-0.11x, so the forward keeps plain loads and several programs per SM (launch_config).
(The forward's loss was put down to the pipeline's one program per SM, not to that one-exponential update.)
block_online's backward has the bytes in flight without the pipeline: 32 warps per SM in one or two programs, each
thread loading 16 or 32 bytes of each operand per tile (launch_config, block_online_backward_config).

Rows outside Triton's 16-byte specialization (`rows_aligned`; any row length not a multiple of 16, such as 50257) would
move one element per access. block_per_row and the streaming plans avoid that when every operand's rows start the same
number of elements past a 16-byte boundary (`rows_share_phase`, true for contiguous tensors): with EDGES each row is
addressed from its start rounded down to a unit, the tiles cover its whole 16-byte units, and the fewer than 16 bytes at
each end go element by element beside them (_span_body, _span_edges). Those launches take the 16-byte rows'
configuration, pipelined backward included (2048x50257 bf16 0.54 / 0.53 -> 0.72 / 0.69 of copy, perf log session 21),
except block_online's 16-bit two-per-SM backward, which halves its tile for them (_block_online_backward_pair).
block_per_row holds such a row as split_row holds a chunk (_load_held: 16-bit rows as words of two elements), a
program per row (16-bit forward rows of 16385-32768 columns in its held form, _softmax_row_words, as 16-byte rows).
Rows out of phase keep the per-element path and the unpipelined backward: fp32 ones would pipeline as 4-byte copies,
which measured slower (fb4210d), and 16-bit ones cannot use async copies at all.

Exponentials are one MUFU.EX2 each (_exp, INLINE_PTX). The forward's first pass (_online_max_sum, both streaming
plans) takes about one per element: each thread folds a tile's max over its own values first, then one exponential
per element and one rescale per tile (docs/perf-log.md, "split_row's forward pass 1 in SASS").
The streamed forward's second-pass stores are .cs (as the backward's with STREAM_STORES), so y does not evict x lines
still waiting for their second read; the held forms and block_per_row, which read nothing again, store plainly.

NaN/inf semantics equal torch.softmax: a NaN anywhere makes its row NaN (maxima propagate NaN),
-inf elements give 0, an all -inf row gives NaN. Offsets are 64-bit (row index cast before
multiplying by the row stride). Launch configurations come from a table keyed by (plan, dtype, tile columns,
direction, aligned or EDGES) (launch_config); the register-resident plans also time twice the table's warps
(block_per_row's 16-bit forward in a power-of-two tile, rows not moved as EDGES: each with and without evict_first
loads) on the first call of each (rows, cols) bucket and keep the faster (candidate_configs, "Run-time tuning"
below). A call under CUDA-graph capture never times anything, and a repeated call never recompiles.
"""
from __future__ import annotations

import functools
from typing import NamedTuple

import torch
import triton
import triton.language as tl

from .._backends import triton_interpreting
from . import LAUNCH_OPTIONS
from .tuning import fastest, tuning_off

PLANS = ("warp_per_row", "block_per_row", "block_online", "split_row")
WARP_PER_ROW_MAX_COLS = 1024
BLOCK_PER_ROW_MAX_COLS = 32768
L2_BUDGET_BYTES = 32 << 20    # H200 has 60 MiB of L2: keep re-read working sets well inside it
INTERPRETER_SM_COUNT = 3      # CPU "device": small, so tests exercise persistent loops
STREAM_BYTES_AHEAD = 64 << 10  # first-pass loads in flight per streaming program (async copies to shared memory)
MAX_STAGES = 5
REGISTERS_PER_SM = 65536
# split_row's pipelined backward runs two per SM (maxnreg 128 at 8 warps, 64 at 16; ptxas fits both without spilling in
# the two specializations it launches in: the 16-byte one, and the unaligned one with EDGES). Measured on the H200
# (session 14): fp32 1024x131072 / 256x262144 / 32x1M / 4x4M 0.67 / 0.65 / 0.62 / 0.52 -> 0.82 / 0.80 / 0.72 / 0.60 of
# copy, bf16 0.70 / 0.69 / 0.65 / 0.58 -> 0.80 / 0.75 / 0.68 / 0.58. block_online's (grid capped by the L2 budget to ~1
# program per SM at these rows) did not move with the same setting.
SPLIT_ROW_BWD_PROGRAMS_PER_SM = 2
# Registers per thread the unpipelined streaming programs (block_online's and split_row's forward; split_row's
# backward with unaligned rows) are counted to need. Triton's ptxas (sm_90a, Triton 3.6) at the caps they give: the
# forward 47-64 (8 and 16 warps; 64, the cap, in the unaligned specialization, 64-102 uncapped); the unaligned
# backward 80 in fp32 (three 8-warp programs per SM; 102 uncapped, no spill at 80) and 114 in 16-bit (one 16-warp
# program, capped at 128; 99 uncapped). The persistent grid holds as many programs per SM as that leaves room for, and
# each is capped at its share (maxnreg), so ptxas cannot take more and push the grid's last programs into a second
# wave. The "64 warps per SM" rule this replaces counted 4 programs of 16 warps (2 fit at 64 registers, 1 at 78):
# 2048x50257 bf16 ran 333 forward programs where 264 fit.
PLAIN_STREAM_REGISTERS = {"fwd": 64, "bwd": 80}
LAUNCH_TAGS = tl.constexpr(2**32 - 1)  # split_row: a launch's tag is its count modulo this, plus 1 (never 0: _leave)
FLT_MAX = tl.constexpr(3.4028234663852886e38)
LOG2E = tl.constexpr(1.4426950408889634)
# Whether the kernels may use inline PTX: compiled, not interpreted. The interpreter cannot run it (it takes the
# plain Triton form); Triton decides interpretation when a kernel module is imported, and so does this flag. Used by
# exp(x) as 2^(x * log2 e) in one MUFU.EX2 (ex2.approx.ftz.f32, _exp), as the CUDA backend's fast_exp2: tl.exp and
# tl.exp2 lower to the non-ftz form, which ptxas wraps in a range check and two multiplies to keep subnormal results,
# 3 more instructions per exponential, and the 16-bit forward (twice the elements per byte) is issue-bound. Results
# below 2^-126 (~1e-38) round to 0, far inside every tolerance. And by split_row's held 16-bit words (_pair_values,
# _max_of_pairs, _pack_pairs).
INLINE_PTX = tl.constexpr(not triton_interpreting())


# ----------------------------------------------------------------------------- jit helpers

@triton.jit
def _exp(x):
    """e^x of an fp32 tensor: one MUFU.EX2 compiled (INLINE_PTX), tl.exp interpreted."""
    if INLINE_PTX:
        return tl.inline_asm_elementwise("ex2.approx.ftz.f32 $0, $1;", "=f,f", [x * LOG2E], dtype=tl.float32,
                                         is_pure=True, pack=1)
    else:
        return tl.exp(x)


@triton.jit
def _softmax_tile(x):
    """Softmax over the last axis of an fp32 tile whose padding lanes hold -inf."""
    m = tl.max(x, axis=-1, keep_dims=True)
    e = _exp(x - m)
    return e * (1.0 / tl.sum(e, axis=-1, keep_dims=True))


@triton.jit
def _softmax_grad_tile(y, dy):
    """y * (dy - sum(y * dy)) over the last axis of fp32 tiles whose padding lanes hold 0."""
    return y * (dy - tl.sum(y * dy, axis=-1, keep_dims=True))


@triton.jit
def _max_nan(a, b):
    return tl.maximum(a, b, propagate_nan=tl.PropagateNan.ALL)


@triton.jit
def _fold_tile(x, m, s, A: tl.constexpr, T: tl.constexpr, V: tl.constexpr):
    """Fold one [BLOCK_N] tile into the state (m, s) of shape [T]: the tile viewed as [A, T, V], each slot's max over
    its A * V values first, then one exponential per element and one rescale per slot. can_reorder lets Triton give
    each slot whichever values keep the view free of data movement: in both 16-byte and scalar-load layouts (aligned
    and unaligned rows) a slot is then one thread's values and the reductions stay in registers (checked in SASS at the
    launched configurations).
    Any partition of a tile's values among the slots gives the same (max, sum). Triton 3.9 deprecates can_reorder (to
    be ignored from 3.10): without it the 16-byte and EDGES specializations compile to the same SASS, and the
    element-by-element one (rows whose operands sit at different phases) takes 27-59% more instructions (sm_90a,
    Triton 3.6, block_online's and split_row's streamed forward)."""
    x3 = tl.reshape(x.to(tl.float32), [A, T, V], can_reorder=True)
    m_new = tl.maximum(m, tl.reduce(tl.reduce(x3, 2, _max_nan), 0, _max_nan), propagate_nan=tl.PropagateNan.ALL)
    e = _exp(x3 - m_new[None, :, None])
    return m_new, s * _exp(m - m_new) + tl.sum(tl.sum(e, axis=2), axis=0)


@triton.jit
def _row_phase(offset, ptr, EDGES: tl.constexpr, INT32: tl.constexpr):
    """With EDGES, how many elements past a 16-byte boundary the row at element `offset` from ptr starts (ptr is
    16-byte aligned, by its launch specialization); 0 otherwise. Every operand's rows share it (rows_share_phase).
    INT32 gives it as int32, so the span bounds built on it (_span_body, _span_edges, the masks) are 32-bit
    arithmetic: the streaming plans take it (A/B, perf log "Session 53": block_online 2-25% faster, split_row even).
    block_per_row takes it for 16-bit forward rows on its one-row grid (_softmax_row_held); its fp32 rows keep int64
    (with int32 the fp32 forward read 0.96 -> 0.76 at 4096x16001 with column masks, session 57, and 0.88 -> 0.59 at
    4096x9001 with _body_lanes' masks, session 63, at the same 32 registers, no spill: the SASS does not say why), and
    so does its backward outside the three-quarter tiles (block_per_row_tile)."""
    if EDGES:
        if INT32:
            return offset.to(tl.int32) & (128 // ptr.dtype.element_ty.primitive_bitwidth - 1)
        else:
            return offset & (128 // ptr.dtype.element_ty.primitive_bitwidth - 1)
    else:
        return 0


@triton.jit
def _row_frame(ptr, offset, phase, EDGES: tl.constexpr):
    """The pointer a row is addressed from: with EDGES its start rounded down to a whole 16-byte unit, written as
    `ptr + multiple_of(...)` so Triton knows it is aligned and loads whole units from it (the row's first element is
    then `phase` elements in); else the row's start."""
    if EDGES:
        return ptr + tl.multiple_of(offset - phase, 128 // ptr.dtype.element_ty.primitive_bitwidth)
    else:
        return ptr + offset


@triton.jit
def _span_body(start, stop, V: tl.constexpr, EDGES: tl.constexpr):
    """The part of [start, stop) that whole 16-byte units cover (EDGES; the whole span otherwise), its bounds
    hinted as multiples of V so a tile's loads and its mask `col < body_stop` are whole units. A span inside one
    unit gives body_stop < body_start: no tile (the loops below run none). Bounds are rounded by masking the low
    bits (start, stop >= 0), as _row_phase takes the phase: a signed `//` or `%` adds a sign fix-up to each."""
    if EDGES:
        return tl.multiple_of((start + V - 1) & -V, V), tl.multiple_of(stop & -V, V)
    else:
        return start, stop


@triton.jit
def _span_edges(start, stop, V: tl.constexpr):
    """(columns, mask) of [start, stop)'s elements outside _span_body: its head [start, body start) in lanes 0..V-1,
    its tail [max(body stop, body start), stop) in lanes V..2V-1; fewer than V elements each, loaded one by one.
    The first passes (_online_max_sum, _dot_span) load them before their tile loop and reduce them after it: their
    reduction is a barrier, and before the loop it held every warp for the edge loads' whole round trip at each row.
    The second passes write them first (a store waits only in the warps that hold edge lanes); after the loop, the
    values held through it cost fp32 rows 8 bytes of spill at the 64-register cap (ptxas, sm_90a)."""
    body_start = (start + V - 1) & -V
    tail_start = tl.maximum(stop & -V, body_start)
    lane = tl.arange(0, 2 * V)
    head = lane < V
    col = tl.where(head, body_start - V + lane, tail_start + lane - V)
    return col, tl.where(head, (col >= start) & (col < tl.minimum(body_start, stop)), col < stop)


@triton.jit
def _online_max_sum(x_row, start, stop, BLOCK_N: tl.constexpr, THREADS: tl.constexpr, EDGES: tl.constexpr):
    """(max, sum(exp(x - max))) of x_row[start:stop] in one read, as fp32 scalars.

    Per-thread state: THREADS (32 * num_warps) running (max, sum) pairs, each over one thread's values of every tile
    (_fold_tile, V: the elements one 16-byte load gives a thread). Per tile, the thread's max first, then
    exp(x - m_new) per element and s * exp(m - m_new) once: about 1 exponential per element where a per-element
    state takes 2 (why: docs/perf-log.md, "split_row's forward pass 1 in SASS"). The span's full tiles load
    unmasked, its partial last tile masked. A tile smaller than THREADS * V keeps BLOCK_N / V pairs (A = 1).
    The running max starts at -FLT_MAX, not -inf, so no x - m is -inf - -inf (NaN): -inf elements add
    exp(-inf) = 0, and a thread or span of only -inf returns (-FLT_MAX, 0), whose 1/0 makes an all -inf row
    NaN in the normalize pass (0 * inf), as torch. NaN in x makes the max (NaN-propagating), then s, NaN; +inf
    makes x - m_new = inf - inf, NaN, as torch.
    EDGES: the tiles cover the span's whole 16-byte units (_span_body); its head and tail elements are loaded before
    the loop (so the span's bounds are dead in it) and folded after it into a (max, sum) pair merged last
    (_span_edges).
    """
    UNIT: tl.constexpr = 128 // x_row.dtype.element_ty.primitive_bitwidth
    # Conditional expressions, not min(): Triton 3.4 takes min() of constexprs for tl.minimum, outside a constexpr.
    V: tl.constexpr = BLOCK_N if BLOCK_N < UNIT else UNIT
    T: tl.constexpr = THREADS if THREADS < BLOCK_N // V else BLOCK_N // V
    A: tl.constexpr = BLOCK_N // (T * V)
    m = tl.full([T], -FLT_MAX, tl.float32)
    s = tl.zeros([T], tl.float32)
    if EDGES:
        edge_col, edge_mask = _span_edges(start, stop, V)
        edge_x = tl.load(x_row + edge_col, mask=edge_mask, other=float("-inf"))
    body_start, body_stop = _span_body(start, stop, V, EDGES)
    full_stop = body_start + (body_stop - body_start) // BLOCK_N * BLOCK_N
    for tile in range(body_start, full_stop, BLOCK_N):
        x = tl.load(x_row + tile + tl.arange(0, BLOCK_N), eviction_policy="evict_last")
        m, s = _fold_tile(x, m, s, A, T, V)
    if full_stop < body_stop:
        col = full_stop + tl.arange(0, BLOCK_N)
        x = tl.load(x_row + col, mask=col < body_stop, other=float("-inf"), eviction_policy="evict_last")
        m, s = _fold_tile(x, m, s, A, T, V)
    m_all = tl.max(m, axis=0)
    s_all = tl.sum(s * _exp(m - m_all), axis=0)
    if EDGES:
        edge_x = edge_x.to(tl.float32)
        m_edges = _max_nan(tl.reduce(edge_x, 0, _max_nan), -FLT_MAX)
        s_edges = tl.sum(_exp(edge_x - m_edges), axis=0)
        m_new = _max_nan(m_all, m_edges)
        s_all = s_all * _exp(m_all - m_new) + s_edges * _exp(m_edges - m_new)
        m_all = m_new
    return m_all, s_all


@triton.jit
def _normalize_span_reversed(x_row, y_row, start, stop, row_max, inv_sum, BLOCK_N: tl.constexpr, EDGES: tl.constexpr):
    """y_row[start:stop] = exp(x - row_max) * inv_sum, last tile first (it is the freshest in L2); .cs stores.
    EDGES: the head and tail elements one by one, then the tiles over the whole 16-byte units."""
    V: tl.constexpr = 128 // x_row.dtype.element_ty.primitive_bitwidth
    if EDGES:
        edge_col, edge_mask = _span_edges(start, stop, V)
        edge_x = tl.load(x_row + edge_col, mask=edge_mask, other=float("-inf")).to(tl.float32)
        tl.store(y_row + edge_col, (_exp(edge_x - row_max) * inv_sum).to(y_row.dtype.element_ty), mask=edge_mask)
    body_start, body_stop = _span_body(start, stop, V, EDGES)
    tiles = tl.cdiv(body_stop - body_start, BLOCK_N)
    for i in range(0, tiles):
        col = body_start + (tiles - 1 - i) * BLOCK_N + tl.arange(0, BLOCK_N)
        mask = col < body_stop
        x = tl.load(x_row + col, mask=mask, other=float("-inf"), eviction_policy="evict_first").to(tl.float32)
        tl.store(y_row + col, (_exp(x - row_max) * inv_sum).to(y_row.dtype.element_ty), mask=mask,
                 cache_modifier=".cs")


@triton.jit
def _dot_span(y_row, dy_row, start, stop, BLOCK_N: tl.constexpr, STAGES: tl.constexpr, EDGES: tl.constexpr):
    """sum(y * dy) over [start, stop) in fp32, lane-wise accumulation then one reduction.
    Software-pipelined when STAGES is set (module docstring, "Bytes in flight, backward").
    EDGES: the tiles over the whole 16-byte units, and the head and tail elements one by one, loaded before the tiles
    and summed after them (_span_edges)."""
    V: tl.constexpr = 128 // y_row.dtype.element_ty.primitive_bitwidth
    if EDGES:
        edge_col, edge_mask = _span_edges(start, stop, V)
        edge_y = tl.load(y_row + edge_col, mask=edge_mask, other=0.0)
        edge_dy = tl.load(dy_row + edge_col, mask=edge_mask, other=0.0)
    body_start, body_stop = _span_body(start, stop, V, EDGES)
    acc = tl.zeros([BLOCK_N], tl.float32)
    for tile in tl.range(body_start, body_stop, BLOCK_N, num_stages=STAGES):
        col = tile + tl.arange(0, BLOCK_N)
        mask = col < body_stop
        y = tl.load(y_row + col, mask=mask, other=0.0, eviction_policy="evict_last").to(tl.float32)
        dy = tl.load(dy_row + col, mask=mask, other=0.0, eviction_policy="evict_last").to(tl.float32)
        acc += y * dy
    if EDGES:
        return tl.sum(edge_y.to(tl.float32) * edge_dy.to(tl.float32), axis=0) + tl.sum(acc, axis=0)
    else:
        return tl.sum(acc, axis=0)


@triton.jit
def _grad_span_reversed(y_row, dy_row, dx_row, start, stop, dot, BLOCK_N: tl.constexpr, STREAM_STORES: tl.constexpr,
                        EDGES: tl.constexpr):
    """dx_row[start:stop] = y * (dy - dot), last tile first (it is the freshest in L2). STREAM_STORES: .cs
    (evict-first) stores, for rows moved in whole 16-byte units (the 16-byte specialization or EDGES; launch_config:
    rows that move element by element keep the plain loop and stores).
    EDGES: the head and tail elements one by one, then the tiles over the whole 16-byte units."""
    V: tl.constexpr = 128 // y_row.dtype.element_ty.primitive_bitwidth
    if EDGES:
        edge_col, edge_mask = _span_edges(start, stop, V)
        edge_y = tl.load(y_row + edge_col, mask=edge_mask, other=0.0).to(tl.float32)
        edge_dy = tl.load(dy_row + edge_col, mask=edge_mask, other=0.0).to(tl.float32)
        tl.store(dx_row + edge_col, (edge_y * (edge_dy - dot)).to(dx_row.dtype.element_ty), mask=edge_mask)
    body_start, body_stop = _span_body(start, stop, V, EDGES)
    tiles = tl.cdiv(body_stop - body_start, BLOCK_N)
    for i in range(0, tiles):
        col = body_start + (tiles - 1 - i) * BLOCK_N + tl.arange(0, BLOCK_N)
        mask = col < body_stop
        y = tl.load(y_row + col, mask=mask, other=0.0, eviction_policy="evict_first").to(tl.float32)
        dy = tl.load(dy_row + col, mask=mask, other=0.0, eviction_policy="evict_first").to(tl.float32)
        dx = (y * (dy - dot)).to(dx_row.dtype.element_ty)
        if STREAM_STORES:
            tl.store(dx_row + col, dx, mask=mask, cache_modifier=".cs")
        else:
            tl.store(dx_row + col, dx, mask=mask)


# ----------------------------------------------------------------------------- warp_per_row

# warp_per_row forward: a program holds ROWS whole rows as one [ROWS, BLOCK_N] fp32 tile in registers (launch_config:
# 4096-element tiles at 8 warps; rows of at most 16 columns, 128 rows at 4 warps), reduces each row's max and sum,
# and writes y once. Bound: bytes, x read once and y written once.
@triton.jit
def softmax_fwd_warp_per_row_kernel(x_ptr, y_ptr, rows, cols, x_row_stride, y_row_stride,
                                    ROWS: tl.constexpr, BLOCK_N: tl.constexpr):
    row = tl.program_id(0).to(tl.int64) * ROWS + tl.arange(0, ROWS)[:, None]
    col = tl.arange(0, BLOCK_N)[None, :]
    mask = (row < rows) & (col < cols)
    x = tl.load(x_ptr + row * x_row_stride + col, mask=mask, other=float("-inf")).to(tl.float32)
    tl.store(y_ptr + row * y_row_stride + col, _softmax_tile(x).to(y_ptr.dtype.element_ty), mask=mask)


# warp_per_row backward: a program holds ROWS rows of y and dy in registers, takes one dot per row and writes
# dx = y * (dy - dot) once. Bound: bytes, y and dy read once, dx written once.
@triton.jit
def softmax_bwd_warp_per_row_kernel(y_ptr, dy_ptr, dx_ptr, rows, cols, y_row_stride, dy_row_stride, dx_row_stride,
                                    ROWS: tl.constexpr, BLOCK_N: tl.constexpr):
    row = tl.program_id(0).to(tl.int64) * ROWS + tl.arange(0, ROWS)[:, None]
    col = tl.arange(0, BLOCK_N)[None, :]
    mask = (row < rows) & (col < cols)
    y = tl.load(y_ptr + row * y_row_stride + col, mask=mask, other=0.0).to(tl.float32)
    dy = tl.load(dy_ptr + row * dy_row_stride + col, mask=mask, other=0.0).to(tl.float32)
    tl.store(dx_ptr + row * dx_row_stride + col, _softmax_grad_tile(y, dy).to(dx_ptr.dtype.element_ty), mask=mask)


# ----------------------------------------------------------------------------- block_per_row

@triton.jit
def _softmax_row_held(x_ptr, y_ptr, row, cols, x_row_stride, y_row_stride, HELD_N: tl.constexpr,
                      INT32: tl.constexpr):
    """block_per_row's EDGES forward of one row: held as split_row holds a chunk (_load_held, _softmax_held), or,
    in a three-quarter tile (HELD_N not a power of two, block_per_row_tile), as two pieces (_softmax_pieces_held).
    INT32: _row_phase's; 16-bit rows take it on the one-row-per-program grid (SASS: 336 -> 296 instructions in the
    8192-column tile); fp32 rows keep int64 (_row_phase)."""
    phase = _row_phase(row * x_row_stride, x_ptr, True, INT32=INT32)
    if (HELD_N & (HELD_N - 1)) == 0:
        x, x_edges = _load_held(_row_frame(x_ptr, row * x_row_stride, phase, True), phase, phase + cols,
                                float("-inf"), HELD_N, True)
        _softmax_held(_row_frame(y_ptr, row * y_row_stride, phase, True), phase, phase + cols, x, x_edges, HELD_N,
                      True)
    else:
        _softmax_pieces_held(_row_frame(x_ptr, row * x_row_stride, phase, True),
                             _row_frame(y_ptr, row * y_row_stride, phase, True), phase, phase + cols,
                             HELD_N // 3 * 2, HELD_N // 3, True)


@triton.jit
def _softmax_pieces_held(x_row, y_row, start, stop, HEAD_N: tl.constexpr, TAIL_N: tl.constexpr, EDGES: tl.constexpr):
    """y_row[start:stop] = softmax of a 16-bit row held as two pieces: [start, HEAD_N) in a HEAD_N-column tile and
    [HEAD_N, stop) in a TAIL_N one. With EDGES the columns are the row's frame's (_row_frame): HEAD_N is a 16-byte
    boundary, so each piece is whole units between its own edges; without, the row is 16-byte rows' (start 0).
    Three quarters of the power-of-two tile the row would take, so no quarter of the program's lanes loads nothing:
    bf16 4096x9008 read 0.59 of copy in the 16384-column tile (ncu, session 54). One exponential per element, as
    _softmax_held's 16-bit form. start and stop are tensors: _span_body hints the pieces' bounds with tl.multiple_of."""
    dtype: tl.constexpr = x_row.dtype.element_ty
    tl.static_assert(dtype.primitive_bitwidth == 16, "the two-piece row is the 16-bit forward's")
    split = tl.full([], HEAD_N, stop.dtype)
    head, head_edges = _load_held(x_row, start, split, float("-inf"), HEAD_N, EDGES)
    tail, tail_edges = _load_held(x_row, split, stop, float("-inf"), TAIL_N, EDGES)
    m = _max_nan(_held_max(head, head_edges, dtype), _held_max(tail, tail_edges, dtype))
    e_head_low, e_head_high, e_head_edges = _exp_pairs(head, head_edges, m, dtype)
    e_tail_low, e_tail_high, e_tail_edges = _exp_pairs(tail, tail_edges, m, dtype)
    inv_sum = 1.0 / (tl.sum(e_head_low + e_head_high, axis=0) + tl.sum(e_tail_low + e_tail_high, axis=0)
                     + tl.sum(e_head_edges + e_tail_edges, axis=0))
    _store_scaled_pairs(y_row, start, split, e_head_low, e_head_high, e_head_edges, inv_sum, HEAD_N, EDGES)
    _store_scaled_pairs(y_row, split, stop, e_tail_low, e_tail_high, e_tail_edges, inv_sum, TAIL_N, EDGES)


@triton.jit
def _softmax_row_words(x_ptr, y_ptr, row, cols, x_row_stride, y_row_stride, BLOCK_N: tl.constexpr,
                       EDGES: tl.constexpr):
    """block_per_row's forward of one 16-bit row at 16 warps (launch_config's held form, rows of 16385-32768
    columns): held as words of two elements (_load_held), 64 elements a thread, with each exponential taken twice
    (_held_max_sum, _normalize_held) as split_row's held chunks take them, so the row fits 64 registers and two
    programs share an SM. ptxas sm_90a: 16-byte rows 64 registers, no spill (104 uncapped); EDGES rows spill 20
    bytes (they still read 0.93 of copy at bf16 4096x30001, session 63). The exponentials kept once, _softmax_held's
    way: 92 registers uncapped, 68 bytes spilled at 64."""
    if EDGES:
        phase = _row_phase(row * x_row_stride, x_ptr, True, INT32=True)
    else:
        phase = tl.full([], 0, tl.int32)  # a tensor: _load_held's bounds take tl.multiple_of hints
    x, x_edges = _load_held(_row_frame(x_ptr, row * x_row_stride, phase, EDGES), phase, phase + cols, float("-inf"),
                            BLOCK_N, EDGES)
    row_max, row_sum = _held_max_sum(x, x_edges, x_ptr.dtype.element_ty)
    _normalize_held(_row_frame(y_ptr, row * y_row_stride, phase, EDGES), phase, phase + cols, x, x_edges, row_max,
                    1.0 / row_sum, BLOCK_N, EDGES)


# block_per_row forward: a program per row holds it whole in registers (a BLOCK_N tile; a three-quarter tile as two
# pieces; EDGES rows as _load_held holds them, 16-bit ones as words of two elements) and writes y once. PREFETCH (16-bit
# rows of 32768 not in whole 16-byte units, launch_config): a persistent program per SM walks rows and loads the next
# while it reduces and writes this one. LOAD_HINT reaches only the rows not moved as EDGES in a power-of-two tile.
# Bound: bytes, x read once and y written once.
@triton.jit
def softmax_fwd_block_per_row_kernel(x_ptr, y_ptr, rows, cols, x_row_stride, y_row_stride, BLOCK_N: tl.constexpr,
                                     PREFETCH: tl.constexpr, LOAD_HINT: tl.constexpr, EDGES: tl.constexpr,
                                     HELD: tl.constexpr):
    first = tl.program_id(0).to(tl.int64)
    HELD_N: tl.constexpr = BLOCK_N if BLOCK_N > 16 else 16  # _load_held's words: a whole unit (not max(): 3.4)
    if HELD:  # a program per row, two per SM (launch_config)
        _softmax_row_words(x_ptr, y_ptr, first, cols, x_row_stride, y_row_stride, BLOCK_N, EDGES)
    elif EDGES:  # each row held as split_row holds a chunk, a program per row (no loop: its induction state cost
        # the prologue 144 instructions, session 53)
        tl.static_assert(not PREFETCH, "EDGES rows run a program per row (launch_config)")
        _softmax_row_held(x_ptr, y_ptr, first, cols, x_row_stride, y_row_stride, HELD_N,
                          INT32=x_ptr.dtype.element_ty.primitive_bitwidth == 16)
    elif BLOCK_N & (BLOCK_N - 1):  # 16-byte rows in a three-quarter tile (block_per_row_tile)
        _softmax_pieces_held(x_ptr + first * x_row_stride, y_ptr + first * y_row_stride, tl.full([], 0, tl.int32),
                             cols, BLOCK_N // 3 * 2, BLOCK_N // 3, False)
    else:
        col = tl.arange(0, BLOCK_N)
        mask = col < cols
        x = tl.load(x_ptr + first * x_row_stride + col, mask=mask, other=float("-inf"), eviction_policy=LOAD_HINT)
        if PREFETCH:  # persistent grid: the next row's loads are in flight while this row is reduced and written
            for row in range(first, rows, tl.num_programs(0)):
                next_row = row + tl.num_programs(0)
                x_next = tl.load(x_ptr + next_row * x_row_stride + col, mask=mask & (next_row < rows),
                                 other=float("-inf"), eviction_policy=LOAD_HINT)
                tl.store(y_ptr + row * y_row_stride + col,
                         _softmax_tile(x.to(tl.float32)).to(y_ptr.dtype.element_ty), mask=mask)
                x = x_next
        else:
            tl.store(y_ptr + first * y_row_stride + col, _softmax_tile(x.to(tl.float32)).to(y_ptr.dtype.element_ty),
                     mask=mask)


# block_per_row backward: a program per row holds its y and dy in registers (a BLOCK_N tile, a three-quarter tile as
# two pieces, EDGES rows as _load_held holds them), takes one block dot and writes dx once. Bound: bytes, y and dy read
# once, dx written once.
@triton.jit
def softmax_bwd_block_per_row_kernel(y_ptr, dy_ptr, dx_ptr, cols, y_row_stride, dy_row_stride, dx_row_stride,
                                     BLOCK_N: tl.constexpr, EDGES: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    HELD_N: tl.constexpr = BLOCK_N if BLOCK_N > 16 else 16  # _load_held's words: a whole unit (not max(): 3.4)
    if EDGES and (HELD_N & (HELD_N - 1)):  # in a three-quarter tile (block_per_row_tile): two pieces
        phase = _row_phase(row * y_row_stride, y_ptr, EDGES, INT32=True)  # int32: 76 registers uncapped (int64: 84)
        _grad_pieces_held(_row_frame(y_ptr, row * y_row_stride, phase, EDGES),
                          _row_frame(dy_ptr, row * dy_row_stride, phase, EDGES),
                          _row_frame(dx_ptr, row * dx_row_stride, phase, EDGES), phase, phase + cols,
                          HELD_N // 3 * 2, HELD_N // 3, EDGES)
    elif EDGES:  # the row held as split_row holds a chunk: whole 16-byte units, head and tail elements beside them
        phase = _row_phase(row * y_row_stride, y_ptr, EDGES, INT32=False)
        y, y_edges = _load_held(_row_frame(y_ptr, row * y_row_stride, phase, EDGES), phase, phase + cols, 0.0,
                                HELD_N, EDGES)
        dy, dy_edges = _load_held(_row_frame(dy_ptr, row * dy_row_stride, phase, EDGES), phase, phase + cols, 0.0,
                                  HELD_N, EDGES)
        dot = _held_dot(y, dy, y_edges, dy_edges, y_ptr.dtype.element_ty)
        _grad_held(_row_frame(dx_ptr, row * dx_row_stride, phase, EDGES), phase, phase + cols, y, dy, y_edges,
                   dy_edges, dot, HELD_N, EDGES)
    elif BLOCK_N & (BLOCK_N - 1):  # 16-byte rows in a three-quarter tile
        _grad_pieces_held(y_ptr + row * y_row_stride, dy_ptr + row * dy_row_stride, dx_ptr + row * dx_row_stride,
                          tl.full([], 0, tl.int32), cols, BLOCK_N // 3 * 2, BLOCK_N // 3, False)
    else:
        col = tl.arange(0, BLOCK_N)
        mask = col < cols
        y = tl.load(y_ptr + row * y_row_stride + col, mask=mask, other=0.0)
        dy = tl.load(dy_ptr + row * dy_row_stride + col, mask=mask, other=0.0)
        dx = _softmax_grad_tile(y.to(tl.float32), dy.to(tl.float32))
        tl.store(dx_ptr + row * dx_row_stride + col, dx.to(dx_ptr.dtype.element_ty), mask=mask)


# ----------------------------------------------------------------------------- block_online

# EDGES (both streaming plans): the operands' rows are not in Triton's 16-byte specialization but share one phase (every
# pointer 16-byte aligned, the row strides equal modulo a 16-byte unit: rows_share_phase), so every operand's row
# starts the same number of elements past a unit boundary. The kernels then address each row from that boundary
# (_row_frame) and move its whole units as 16-byte accesses, its head and tail elements one by one; without EDGES such
# rows move one element per access.

# block_online forward: a program per row, or a persistent grid capped by the L2 budget (_block_online_programs). Pass
# 1 keeps per-thread (max, sum) over BLOCK_N tiles (_online_max_sum); pass 2 re-reads the tiles last first, from L2
# while they are there, and writes y with .cs stores. Bound: bytes, one read and one write when pass 2 hits L2, two
# reads and one write when it does not.
@triton.jit
def softmax_fwd_block_online_kernel(x_ptr, y_ptr, rows, cols, x_row_stride, y_row_stride, BLOCK_N: tl.constexpr,
                                    THREADS: tl.constexpr, EDGES: tl.constexpr):
    for row in range(tl.program_id(0).to(tl.int64), rows, tl.num_programs(0)):
        first = _row_phase(row * x_row_stride, x_ptr, EDGES, INT32=True)
        x_row = _row_frame(x_ptr, row * x_row_stride, first, EDGES)
        y_row = _row_frame(y_ptr, row * y_row_stride, first, EDGES)
        row_max, row_sum = _online_max_sum(x_row, first, first + cols, BLOCK_N, THREADS, EDGES)
        _normalize_span_reversed(x_row, y_row, first, first + cols, row_max, 1.0 / row_sum, BLOCK_N, EDGES)


# block_online backward: a program per row, 32 warps per SM as one program or two (block_online_backward_config).
# Pass 1 sums y * dy over BLOCK_N tiles (_dot_span); pass 2 re-reads y and dy last first, from L2 while they are
# there, and writes dx. Bound: bytes, two reads and one write when pass 2 hits L2, four reads and one write when not.
@triton.jit
def softmax_bwd_block_online_kernel(y_ptr, dy_ptr, dx_ptr, rows, cols, y_row_stride, dy_row_stride, dx_row_stride,
                                    BLOCK_N: tl.constexpr, STAGES: tl.constexpr, STREAM_STORES: tl.constexpr,
                                    EDGES: tl.constexpr):
    for row in range(tl.program_id(0).to(tl.int64), rows, tl.num_programs(0)):
        first = _row_phase(row * y_row_stride, y_ptr, EDGES, INT32=True)
        y_row = _row_frame(y_ptr, row * y_row_stride, first, EDGES)
        dy_row = _row_frame(dy_ptr, row * dy_row_stride, first, EDGES)
        dx_row = _row_frame(dx_ptr, row * dx_row_stride, first, EDGES)
        dot = _dot_span(y_row, dy_row, first, first + cols, BLOCK_N, STAGES, EDGES)
        _grad_span_reversed(y_row, dy_row, dx_row, first, first + cols, dot, BLOCK_N, STREAM_STORES, EDGES)


# ----------------------------------------------------------------------------- split_row
# One persistent kernel per direction. Workspace (int64): [ticket, exits, launches, partial words]. Jobs are (row,
# chunk) pairs in row-major order, handed out by the ticket counter in the order programs ask. A program runs pass 1
# over its chunk, publishes its partial, waits for its row's other chunks' partials, then runs pass 2 over the same
# chunk at once, so the re-read follows the first read on the same SM while the chunk is still in L2 (CUDA v13's
# order; the job stream that put other jobs between the two reads lost L2, perf log).
# The exchange is one round trip, as the CUDA one since 2b9e492: a partial is a 64-bit word, its fp32 value in the
# high half and the launch's tag in the low (_publish), so the row's words are polled until each carries this launch's
# tag and are then the values themselves (_published). The forward publishes two words a job (max, then sum: words
# [jobs) and [jobs, 2 jobs)), the backward one (y . dy). Each word is single-copy atomic on its own, so nothing else
# needs ordering. Before (a counter per row: a release arrive, acquire polls by one thread whose value two barriers
# broadcast, then a load of the partials) the wait took 38% of the held kernels' stall samples (ncu, session 65).
# Deadlock freedom: a program holds one job at a time and tickets go out in order, so the oldest unfinished
# row's chunks are all held by running programs that wait for nothing else; chunks <= programs, and every
# program is resident (the grid is what the registers hold, each capped to its share).
# The ticket and exit counters must be zero at launch and every launch leaves them zero; the words are never reset:
# the last program out advances `launches` (_leave), so the next launch's tag differs from every word's. As the CUDA
# GEMM's split-K tile counters (csrc/gemm/gemm_05_wgmma_tma_sm90a.cu), the host zeroes a pooled buffer once
# (_workspace), not per call: the memset launch cost a few microseconds of a 30-50 us kernel at 4x4194304.


@triton.jit
def _take_ticket(counters_ptr):
    """The next job (int32, as `jobs`: the workspace's int64 count made the job's row and chunk arithmetic 64-bit, and
    ptxas spilled 8-104 bytes in the kernels that move element by element, session 66)."""
    return tl.atomic_add(counters_ptr, 1, sem="relaxed").to(tl.int32)


@triton.jit
def _launch_tag(counters_ptr):
    """This launch's tag (1 .. LAUNCH_TAGS): the launches before it on the buffer, modulo LAUNCH_TAGS, plus 1. Zero,
    the words of a buffer just made, is never a tag. Only the last program out writes the count, after every program
    of the launch has left (_leave), so every read in a launch gives the same tag."""
    return tl.load(counters_ptr + 2) + 1


@triton.jit
def _publish(word_ptr, value, tag):
    """Publish a chunk's fp32 partial as one 64-bit word: its bits in the high half, the launch's tag in the low."""
    bits = value.to(tl.uint32, bitcast=True).to(tl.int64)  # zero-extended: the low half is the tag's alone
    tl.atomic_xchg(word_ptr, (bits << 32) | tag, sem="relaxed")


# split_row's poll (_published), compiled: each warp polls its own lanes' words, with no barrier per round. A lane's
# word is $1[$2]; lanes at or past $3 (the row's word count) load nothing and give 0. Until every lane's word has the
# launch's tag ($4) in its low half, reload (vote.all: the branch is uniform in the warp, so no lane waits apart
# from its warp); each load is one 64-bit relaxed load from L2, single-copy atomic (a .v2.b32 load would be two
# accesses). $0 is then the word's high half. The address is formed inside (a 64-bit pointer per lane held outside
# spilled the fp32 unaligned backward at its 80-register cap). The braces scope the registers; ${:uid} makes the
# label unique per copy. POLL_PAIR_PTX polls the words at $2[$4] and $3[$4] in the same rounds (count $5, tag $6)
# into $0 and $1.
POLL_WORD_PTX = tl.constexpr("""{
    .reg .pred tagged;
    .reg .b32 low;
    .reg .b64 word, address;
    mov.b32 $0, 0;
    mul.wide.s32 address, $2, 8;
    add.s64 address, address, $1;
POLL${:uid}:
    setp.ge.s32 tagged, $2, $3;
    @!tagged ld.relaxed.gpu.global.b64 word, [address];
    @!tagged mov.b64 {low, $0}, word;
    @!tagged setp.eq.b32 tagged, low, $4;
    vote.sync.all.pred tagged, tagged, 0xffffffff;
    @!tagged bra.uni POLL${:uid};
}""")
POLL_PAIR_PTX = tl.constexpr("""{
    .reg .pred tagged, second_tagged;
    .reg .b32 low, second_low;
    .reg .b64 word, second_word, offset, address, second_address;
    mov.b32 $0, 0;
    mov.b32 $1, 0;
    mul.wide.s32 offset, $4, 8;
    add.s64 address, offset, $2;
    add.s64 second_address, offset, $3;
POLL${:uid}:
    setp.ge.s32 tagged, $4, $5;
    @!tagged ld.relaxed.gpu.global.b64 word, [address];
    @!tagged ld.relaxed.gpu.global.b64 second_word, [second_address];
    @!tagged mov.b64 {low, $0}, word;
    @!tagged mov.b64 {second_low, $1}, second_word;
    @!tagged setp.eq.b32 second_tagged, second_low, $6;
    @!tagged setp.eq.and.b32 tagged, low, $6, second_tagged;
    vote.sync.all.pred tagged, tagged, 0xffffffff;
    @!tagged bra.uni POLL${:uid};
}""")


@triton.jit
def _published(words_ptr, first, count, tag, pair_offset, POLL_LANES: tl.constexpr, PAIR: tl.constexpr):
    """The fp32 partials of words [first, first + count) at words_ptr, and with PAIR those pair_offset words on too,
    read again until every one carries `tag`: one load of each per round, so a pair costs one round trip. Compiled,
    each warp polls its own lanes' words (POLL_WORD_PTX), and no barrier runs until the caller reduces the values:
    polled in Triton, the loop's condition was a reduction over the program, barriers every round, and the held
    16-warp backward lost 3-5% to the per-row counter's poll (H200, session 66). POLL_LANES is at least the program's
    threads, so a word is one thread's and the warps past the row's words issue no loads (sized to the chunks, the
    words sat in every warp and each warp polled them all: 16-warp programs lost 8-20%, H100, session 65). Lanes past
    count give 0, so a sum needs no mask (the caller masks the maxima). Interpreted (a row is one chunk there), the
    same poll as a Triton loop."""
    part = tl.arange(0, POLL_LANES)
    tag32 = tag.to(tl.int32)
    if INLINE_PTX:
        if PAIR:
            first_bits, second_bits = tl.inline_asm_elementwise(
                POLL_PAIR_PTX, "=r,=r,l,l,r,r,r",
                [words_ptr + first, words_ptr + pair_offset + first, part, count, tag32],
                dtype=(tl.int32, tl.int32), is_pure=False, pack=1)
        else:
            first_bits = tl.inline_asm_elementwise(POLL_WORD_PTX, "=r,l,r,r,r", [words_ptr + first, part, count, tag32],
                                                   dtype=tl.int32, is_pure=False, pack=1)
            second_bits = first_bits
        return first_bits.to(tl.float32, bitcast=True), second_bits.to(tl.float32, bitcast=True)
    in_row = part < count
    first_values = tl.zeros([POLL_LANES], tl.float32)
    second_values = tl.zeros([POLL_LANES], tl.float32)
    waiting = 1
    while waiting != 0:
        words = tl.load(words_ptr + first + part, mask=in_row, other=tag, volatile=True)
        tagged = words.to(tl.int32) == tag32
        first_values = (words >> 32).to(tl.int32).to(tl.float32, bitcast=True)
        if PAIR:
            words = tl.load(words_ptr + pair_offset + first + part, mask=in_row, other=tag, volatile=True)
            tagged &= words.to(tl.int32) == tag32
            second_values = (words >> 32).to(tl.int32).to(tl.float32, bitcast=True)
        waiting = tl.max(1 - tagged.to(tl.int32), axis=0)
    return first_values, second_values


@triton.jit(noinline=True)
def _leave(counters_ptr):
    """Called by every program once its job loop has ended: the last program out zeroes the ticket and exit counters
    and advances the launch count (the next launch's tag) for the next launch.

    Memory order: a program reaches its exit only after its last wait succeeded and its last ticket came back
    >= jobs, and its acq_rel add on `exits` releases all that. The add that returns programs - 1 acquires every
    earlier one (read-modify-writes of one location form a release sequence), so every other program's ticket,
    tag read, publishes and polls happen before these stores, and no program of this launch touches the workspace
    after them. The kernel boundary makes them visible to the next launch on the stream. (Scalar atomics run on
    one thread of the program, and Triton broadcasts the result through shared memory behind a barrier before
    the other threads store.)
    Not inlined: inlined, this tail made ptxas spill 4 bytes in the 16-bit unaligned forward at its 64-register cap
    (a loop-invariant shared-memory address, stored at entry and reloaded once per job); as a call (once per
    program) every split_row kernel keeps its registers and spills nothing (ptxas, sm_90a)."""
    if tl.atomic_add(counters_ptr + 1, 1, sem="acq_rel") == tl.num_programs(0) - 1:
        tl.store(counters_ptr + 2, (tl.load(counters_ptr + 2) + 1) % LAUNCH_TAGS)
        tl.store(counters_ptr, 0)
        tl.store(counters_ptr + 1, 0)


@triton.jit
def _job_chunk(job, chunks, chunk_cols, cols):
    """(row, first column, end column) of a job: chunk job % chunks of row job // chunks."""
    start = (job % chunks) * chunk_cols
    return (job // chunks).to(tl.int64), start, tl.minimum(start + chunk_cols, cols)


@triton.jit
def _body_lanes(row_ptr, start, stop, BLOCK_N: tl.constexpr, EDGES: tl.constexpr):
    """(pointers, mask) of a held chunk's whole 16-byte units (_span_body) over its lanes: fp32 rows an element per
    lane (BLOCK_N), 16-bit rows an int32 word of two elements (BLOCK_N // 2). fp32 lanes are masked by their index
    against the body's length in int32: `col < body_stop` on the int64 phase took an ISETP pair per unit, and ptxas
    issued the fp32 one-row forward's loads after 96 of its 320 instructions (sm_90a, 16384-column tile at 32 warps;
    34 of 312 so, 32 registers either way). 16-bit words keep `word < body_stop // 2`: that form spilled 4 bytes less
    in the three-quarter tile's 8-warp forward."""
    dtype: tl.constexpr = row_ptr.dtype.element_ty
    V: tl.constexpr = 128 // dtype.primitive_bitwidth
    body_start, body_stop = _span_body(start, stop, V, EDGES)
    if dtype.primitive_bitwidth == 16:
        word = tl.multiple_of(body_start // 2, V // 2) + tl.arange(0, BLOCK_N // 2)
        return row_ptr.to(tl.pointer_type(tl.int32)) + word, word < body_stop // 2
    else:
        lane = tl.arange(0, BLOCK_N)
        length = (body_stop - body_start).to(tl.int32)  # negative when the span is inside one unit: no lane
        return row_ptr + body_start + lane, lane < (tl.multiple_of(length, V) if EDGES else length)


@triton.jit
def _load_held(row_ptr, start, stop, other: tl.constexpr, BLOCK_N: tl.constexpr, EDGES: tl.constexpr):
    """row_ptr[start:stop] (at most BLOCK_N elements) loaded at once: (its whole 16-byte units, its head and tail
    elements as _span_edges' [2V] lanes in fp32, or [2V] of `other` without EDGES); lanes past the span hold `other`
    (-inf or 0). fp32 rows give the units as a [BLOCK_N] tile; 16-bit rows as [BLOCK_N // 2] int32 words of two
    elements each, so the chunk held through the exchange takes a register per two elements (_pair_values)."""
    dtype: tl.constexpr = row_ptr.dtype.element_ty
    V: tl.constexpr = 128 // dtype.primitive_bitwidth
    lanes, mask = _body_lanes(row_ptr, start, stop, BLOCK_N, EDGES)
    # a 16-bit lane is the word of two `other`s: 0, or -inf in both halves (bf16 0xff80, fp16 0xfc00)
    word_other: tl.constexpr = 0 if other == 0.0 else (-8323200 if dtype == tl.bfloat16 else -67044352)
    body = tl.load(lanes, mask=mask, other=other if dtype.primitive_bitwidth == 32 else word_other)
    if EDGES:
        edge_col, edge_mask = _span_edges(start, stop, V)
        edges = tl.load(row_ptr + edge_col, mask=edge_mask, other=other).to(tl.float32)
    else:
        edges = tl.full([2 * V], other, tl.float32)
    return body, edges


@triton.jit
def _pair_values(words, dtype: tl.constexpr):
    """(low, high) elements of 32-bit words of two 16-bit `dtype` elements, in fp32. Compiled, as inline PTX that is
    not pure: the compiler may not merge a second use's conversion with the first's and keep the fp32 values (twice
    the registers) live across the row exchange instead of the words."""
    if INLINE_PTX and dtype == tl.bfloat16:
        return tl.inline_asm_elementwise("shl.b32 $0, $2, 16;\n\tand.b32 $1, $2, 0xffff0000;", "=f,=f,r", [words],
                                         dtype=(tl.float32, tl.float32), is_pure=False, pack=1)
    elif INLINE_PTX:
        return tl.inline_asm_elementwise(
            "{\n\t.reg .b16 lo, hi;\n\tmov.b32 {lo, hi}, $2;\n\tcvt.f32.f16 $0, lo;\n\tcvt.f32.f16 $1, hi;\n\t}",
            "=f,=f,r", [words], dtype=(tl.float32, tl.float32), is_pure=False, pack=1)
    else:
        low = (words & 0xFFFF).to(tl.uint16).to(dtype, bitcast=True).to(tl.float32)
        high = ((words >> 16) & 0xFFFF).to(tl.uint16).to(dtype, bitcast=True).to(tl.float32)
        return low, high


@triton.jit
def _pack_pairs(low, high, dtype: tl.constexpr):
    """int32 words of `dtype` pairs (low, high) rounded from fp32: _pair_values' inverse. Compiled, one
    cvt.rn.bf16x2.f32 / f16x2 per word (what ptxas makes of the element-wise form below is two conversions and a
    byte permute)."""
    if INLINE_PTX:
        cvt: tl.constexpr = "cvt.rn.bf16x2.f32" if dtype == tl.bfloat16 else "cvt.rn.f16x2.f32"
        return tl.inline_asm_elementwise(cvt + " $0, $2, $1;", "=r,f,f", [low, high], dtype=tl.int32, is_pure=True,
                                         pack=1)
    low_bits = low.to(dtype).to(tl.uint16, bitcast=True).to(tl.uint32)
    high_bits = high.to(dtype).to(tl.uint16, bitcast=True).to(tl.uint32)
    return (low_bits | (high_bits << 16)).to(tl.int32, bitcast=True)


@triton.jit
def _store_held(row_ptr, start, stop, body, edges, BLOCK_N: tl.constexpr, EDGES: tl.constexpr):
    """Store a held chunk's results back to row_ptr[start:stop]: body as _load_held gives it (fp32, or int32 words
    of 16-bit pairs), edges in fp32."""
    dtype: tl.constexpr = row_ptr.dtype.element_ty
    V: tl.constexpr = 128 // dtype.primitive_bitwidth
    lanes, mask = _body_lanes(row_ptr, start, stop, BLOCK_N, EDGES)
    tl.store(lanes, body, mask=mask)
    if EDGES:
        edge_col, edge_mask = _span_edges(start, stop, V)
        tl.store(row_ptr + edge_col, edges.to(dtype), mask=edge_mask)


@triton.jit
def _max_bf16_pairs(a, b):
    return tl.inline_asm_elementwise("max.NaN.bf16x2 $0, $1, $2;", "=r,r,r", [a, b], dtype=tl.int32, is_pure=True,
                                     pack=1)


@triton.jit
def _max_f16_pairs(a, b):
    return tl.inline_asm_elementwise("max.NaN.f16x2 $0, $1, $2;", "=r,r,r", [a, b], dtype=tl.int32, is_pure=True,
                                     pack=1)


@triton.jit
def _max_of_pairs(words, dtype: tl.constexpr):
    """max (NaN-propagating) of 32-bit words of two 16-bit `dtype` elements, in fp32. Compiled, the words are
    reduced as packed pairs (one max.NaN.bf16x2 / f16x2 per two elements) and only the last word is widened, so
    no fp32 copy of the chunk is live beside the words."""
    if INLINE_PTX:
        low, high = _pair_values(tl.reduce(words, 0, _max_bf16_pairs if dtype == tl.bfloat16 else _max_f16_pairs),
                                 dtype)
        return _max_nan(low, high)
    else:
        low, high = _pair_values(words, dtype)
        return _max_nan(tl.reduce(low, 0, _max_nan), tl.reduce(high, 0, _max_nan))


@triton.jit
def _held_max(held, edges, dtype: tl.constexpr):
    """max of a held chunk (_load_held; padding lanes -inf), starting at -FLT_MAX, as _online_max_sum's, so a chunk
    of only -inf gives -FLT_MAX."""
    m_edges = tl.reduce(edges, 0, _max_nan)
    if dtype.primitive_bitwidth == 16:
        return _max_nan(_max_nan(_max_of_pairs(held, dtype), m_edges), -FLT_MAX)
    else:
        return _max_nan(_max_nan(tl.reduce(held, 0, _max_nan), m_edges), -FLT_MAX)


@triton.jit
def _held_max_sum(held, edges, dtype: tl.constexpr):
    """(max, sum(exp(x - max))) of a held chunk (_load_held; padding lanes -inf); a chunk of only -inf gives
    (-FLT_MAX, 0). The exponentials are not kept, and _normalize_held takes them again: split_row holds its chunk
    through the row exchange, and block_per_row's fp32 rows lost with them kept (_softmax_held)."""
    m = _held_max(held, edges, dtype)
    if dtype.primitive_bitwidth == 16:
        low, high = _pair_values(held, dtype)
        s = tl.sum(_exp(low - m) + _exp(high - m), axis=0)
    else:
        s = tl.sum(_exp(held - m), axis=0)
    return m, s + tl.sum(_exp(edges - m), axis=0)


@triton.jit
def _softmax_held(row_ptr, start, stop, held, edges, BLOCK_N: tl.constexpr, EDGES: tl.constexpr):
    """row_ptr[start:stop] = softmax of a whole row held (_load_held). 16-bit rows take one exponential per element:
    block_per_row has no exchange to hold the row through, so it keeps the fp32 exponentials between the sum and
    the store, where _held_max_sum and _normalize_held take each twice. ncu read bf16 4096x16001 issuing 55.3M
    instructions against 4096x8000's 22.9M, its issue time near its DRAM time; with this and one block sum of both
    halves (_held_max_sum's too), sm_90a's SASS of the 8192-column tile at 16 warps goes from 440 to 392
    instructions, 25 to 17 MUFU and 9 to 6 barriers, and bf16 4096x16001 from 0.66 to 0.74 of copy. fp32 rows keep
    the two passes: with the exponentials kept they read 0.96 -> 0.75 at 4096x16001 (perf log, session 52)."""
    dtype: tl.constexpr = row_ptr.dtype.element_ty
    if dtype.primitive_bitwidth == 16:
        m = _held_max(held, edges, dtype)
        e_low, e_high, e_edges = _exp_pairs(held, edges, m, dtype)
        inv_sum = 1.0 / (tl.sum(e_low + e_high, axis=0) + tl.sum(e_edges, axis=0))
        _store_scaled_pairs(row_ptr, start, stop, e_low, e_high, e_edges, inv_sum, BLOCK_N, EDGES)
    else:
        row_max, row_sum = _held_max_sum(held, edges, dtype)
        _normalize_held(row_ptr, start, stop, held, edges, row_max, 1.0 / row_sum, BLOCK_N, EDGES)


@triton.jit
def _exp_pairs(held, edges, m, dtype: tl.constexpr):
    """exp(x - m) of a held 16-bit chunk (_load_held): its words' low and high elements, and its edges, in fp32."""
    e_edges = _exp(edges - m)
    low, high = _pair_values(held, dtype)
    return _exp(low - m), _exp(high - m), e_edges


@triton.jit
def _store_scaled_pairs(row_ptr, start, stop, e_low, e_high, e_edges, scale, BLOCK_N: tl.constexpr,
                        EDGES: tl.constexpr):
    """row_ptr[start:stop] = _exp_pairs' values times scale, rounded to row_ptr's 16-bit dtype (_store_held)."""
    dtype: tl.constexpr = row_ptr.dtype.element_ty
    _store_held(row_ptr, start, stop, _pack_pairs(e_low * scale, e_high * scale, dtype), e_edges * scale, BLOCK_N,
                EDGES)


@triton.jit
def _normalize_held(row_ptr, start, stop, held, edges, row_max, inv_sum, BLOCK_N: tl.constexpr, EDGES: tl.constexpr):
    """row_ptr[start:stop] = exp(x - row_max) * inv_sum of a held chunk x (_load_held)."""
    dtype: tl.constexpr = row_ptr.dtype.element_ty
    if dtype.primitive_bitwidth == 16:
        low, high = _pair_values(held, dtype)
        body = _pack_pairs(_exp(low - row_max) * inv_sum, _exp(high - row_max) * inv_sum, dtype)
    else:
        body = _exp(held - row_max) * inv_sum
    _store_held(row_ptr, start, stop, body, _exp(edges - row_max) * inv_sum, BLOCK_N, EDGES)


@triton.jit
def _held_dot(y, dy, y_edges, dy_edges, dtype: tl.constexpr):
    """sum(y * dy) over held chunks and their edges (_load_held; padding lanes 0)."""
    if dtype.primitive_bitwidth == 16:
        y_low, y_high = _pair_values(y, dtype)
        dy_low, dy_high = _pair_values(dy, dtype)
        body = tl.sum(y_low * dy_low, axis=0) + tl.sum(y_high * dy_high, axis=0)
    else:
        body = tl.sum(y * dy, axis=0)
    return body + tl.sum(y_edges * dy_edges, axis=0)


@triton.jit
def _grad_pieces_held(y_row, dy_row, dx_row, start, stop, HEAD_N: tl.constexpr, TAIL_N: tl.constexpr,
                      EDGES: tl.constexpr):
    """dx_row[start:stop] = y * (dy - sum(y * dy)) of a 16-bit row held as two pieces, as _softmax_pieces_held holds
    the forward's: [start, HEAD_N) and [HEAD_N, stop) of each operand, start and stop tensors."""
    dtype: tl.constexpr = y_row.dtype.element_ty
    tl.static_assert(dtype.primitive_bitwidth == 16, "the two-piece row is 16-bit")
    split = tl.full([], HEAD_N, stop.dtype)
    y_head, y_head_edges = _load_held(y_row, start, split, 0.0, HEAD_N, EDGES)
    dy_head, dy_head_edges = _load_held(dy_row, start, split, 0.0, HEAD_N, EDGES)
    y_tail, y_tail_edges = _load_held(y_row, split, stop, 0.0, TAIL_N, EDGES)
    dy_tail, dy_tail_edges = _load_held(dy_row, split, stop, 0.0, TAIL_N, EDGES)
    dot = (_held_dot(y_head, dy_head, y_head_edges, dy_head_edges, dtype)
           + _held_dot(y_tail, dy_tail, y_tail_edges, dy_tail_edges, dtype))
    _grad_held(dx_row, start, split, y_head, dy_head, y_head_edges, dy_head_edges, dot, HEAD_N, EDGES)
    _grad_held(dx_row, split, stop, y_tail, dy_tail, y_tail_edges, dy_tail_edges, dot, TAIL_N, EDGES)


@triton.jit
def _grad_held(dx_row, start, stop, y, dy, y_edges, dy_edges, dot, BLOCK_N: tl.constexpr, EDGES: tl.constexpr):
    """dx_row[start:stop] = y * (dy - dot) of held chunks y, dy (_load_held)."""
    dtype: tl.constexpr = dx_row.dtype.element_ty
    if dtype.primitive_bitwidth == 16:
        y_low, y_high = _pair_values(y, dtype)
        dy_low, dy_high = _pair_values(dy, dtype)
        body = _pack_pairs(y_low * (dy_low - dot), y_high * (dy_high - dot), dtype)
    else:
        body = y * (dy - dot)
    _store_held(dx_row, start, stop, body, y_edges * (dy_edges - dot), BLOCK_N, EDGES)


# split_row forward (the scheme above): a persistent program per resident slot takes (row, chunk) jobs. HELD: the
# chunk is one tile kept in registers through the row exchange (16-bit as words of two elements); else it streams,
# pass 1 online (_online_max_sum) and pass 2 re-reading it from L2. Bound: bytes, one read and one write (streamed:
# up to two reads), plus one (max, sum) exchange per row.
@triton.jit
def softmax_fwd_split_row_kernel(x_ptr, y_ptr, counters_ptr, cols, x_row_stride, y_row_stride, chunks, chunk_cols, jobs,
                                 BLOCK_N: tl.constexpr, POLL_LANES: tl.constexpr, THREADS: tl.constexpr,
                                 EDGES: tl.constexpr, HELD: tl.constexpr):
    words_ptr = counters_ptr + 3
    tag = _launch_tag(counters_ptr)
    job = _take_ticket(counters_ptr)
    while job < jobs:
        row, start, stop = _job_chunk(job, chunks, chunk_cols, cols)
        first = _row_phase(row * x_row_stride, x_ptr, EDGES, INT32=True)
        x_row = _row_frame(x_ptr, row * x_row_stride, first, EDGES)
        y_row = _row_frame(y_ptr, row * y_row_stride, first, EDGES)
        start += first
        stop += first
        if HELD:
            x, x_edges = _load_held(x_row, start, stop, float("-inf"), BLOCK_N, EDGES)
            chunk_max, chunk_sum = _held_max_sum(x, x_edges, x_ptr.dtype.element_ty)
        else:
            chunk_max, chunk_sum = _online_max_sum(x_row, start, stop, BLOCK_N, THREADS, EDGES)
        _publish(words_ptr + job, chunk_max, tag)
        _publish(words_ptr + jobs + job, chunk_sum, tag)
        part_max, part_sum = _published(words_ptr, row * chunks, chunks, tag, jobs, POLL_LANES, PAIR=True)
        part_max = tl.where(tl.arange(0, POLL_LANES) < chunks, part_max, float("-inf"))  # the sums past are 0 already
        row_max = tl.max(part_max, axis=0)
        inv_sum = 1.0 / tl.sum(part_sum * _exp(part_max - row_max), axis=0)
        if HELD:
            _normalize_held(y_row, start, stop, x, x_edges, row_max, inv_sum, BLOCK_N, EDGES)
        else:
            _normalize_span_reversed(x_row, y_row, start, stop, row_max, inv_sum, BLOCK_N, EDGES)
        job = _take_ticket(counters_ptr)
    _leave(counters_ptr)


# split_row backward (the scheme above): per job the chunk's partial y . dy (HELD: y and dy kept in registers;
# streamed: pass 1 software-pipelined STAGES deep), the row's partials summed after the exchange, dx written.
# Bound: bytes, two reads and one write (streamed: up to four reads), plus one exchange per row.
@triton.jit
def softmax_bwd_split_row_kernel(y_ptr, dy_ptr, dx_ptr, counters_ptr, cols, y_row_stride, dy_row_stride,
                                 dx_row_stride, chunks, chunk_cols, jobs, BLOCK_N: tl.constexpr, STAGES: tl.constexpr,
                                 POLL_LANES: tl.constexpr, STREAM_STORES: tl.constexpr, EDGES: tl.constexpr,
                                 HELD: tl.constexpr):
    words_ptr = counters_ptr + 3
    tag = _launch_tag(counters_ptr)
    job = _take_ticket(counters_ptr)
    while job < jobs:
        row, start, stop = _job_chunk(job, chunks, chunk_cols, cols)
        first = _row_phase(row * y_row_stride, y_ptr, EDGES, INT32=True)
        y_row = _row_frame(y_ptr, row * y_row_stride, first, EDGES)
        dy_row = _row_frame(dy_ptr, row * dy_row_stride, first, EDGES)
        dx_row = _row_frame(dx_ptr, row * dx_row_stride, first, EDGES)
        start += first
        stop += first
        if HELD:
            y, y_edges = _load_held(y_row, start, stop, 0.0, BLOCK_N, EDGES)
            dy, dy_edges = _load_held(dy_row, start, stop, 0.0, BLOCK_N, EDGES)
            _publish(words_ptr + job, _held_dot(y, dy, y_edges, dy_edges, y_ptr.dtype.element_ty), tag)
        else:
            _publish(words_ptr + job, _dot_span(y_row, dy_row, start, stop, BLOCK_N, STAGES, EDGES), tag)
        part_dot, _ = _published(words_ptr, row * chunks, chunks, tag, 0, POLL_LANES, PAIR=False)
        dot = tl.sum(part_dot, axis=0)  # lanes past the row's chunks give 0
        if HELD:
            _grad_held(dx_row, start, stop, y, dy, y_edges, dy_edges, dot, BLOCK_N, EDGES)
        else:
            _grad_span_reversed(y_row, dy_row, dx_row, start, stop, dot, BLOCK_N, STREAM_STORES, EDGES)
        job = _take_ticket(counters_ptr)
    _leave(counters_ptr)


# ----------------------------------------------------------------------------- launch configuration

class LaunchConfig(NamedTuple):
    block_n: int     # columns per tile
    num_warps: int
    rows: int        # rows per program (warp_per_row only)
    # software-pipeline depth of split_row's streamed backward first pass (block_online's backward has none);
    # None: the loop as Triton compiles it by default (no async copies for these loads)
    stages: int | None = None
    per_sm: int = 1  # programs of the persistent grids one SM holds at once (registers, shared memory, warps)
    maxnreg: int | None = None  # ptxas register cap per thread (Triton's maxnreg launch option); None: ptxas picks
    stream_stores: bool = False  # backward: evict-first (.cs) output stores (_grad_span_reversed)
    prefetch: bool = False  # block_per_row forward: persistent, one program per SM, next row loaded ahead
    # block_per_row forward, rows not moved as EDGES in a power-of-two tile: the x loads' L2 eviction policy ("" none,
    # or "evict_first"); EDGES rows and three-quarter tiles ignore it
    load_hint: str = ""
    # split_row: a chunk is one tile, held in registers through the exchange (split_row_config); block_per_row's
    # 16-bit forward at 32768 columns: the row held as words, two programs per SM (launch_config)
    held: bool = False


def _register_share(num_warps: int, per_sm: int) -> int | None:
    """Registers per thread when per_sm programs of num_warps warps split the register file, rounded
    down to ptxas's allocation unit of 8; None when that exceeds the 255-register limit (no cap)."""
    share = REGISTERS_PER_SM // (32 * num_warps * per_sm) // 8 * 8
    return share if share < 255 else None


def _register_residency(num_warps: int, registers: int) -> tuple[int, int | None]:
    """(programs per SM, register cap per thread) for programs of num_warps warps needing `registers`:
    as many as the register file holds, each capped at its share."""
    per_sm = max(1, REGISTERS_PER_SM // (32 * num_warps * registers))
    return per_sm, _register_share(num_warps, per_sm)


@functools.lru_cache(maxsize=None)
def launch_config(plan: str, dtype: torch.dtype, cols_p2: int, direction: str = "fwd",
                  aligned: bool = True) -> LaunchConfig:
    """The fixed configuration for (plan, dtype, next_pow2(cols), direction, aligned); for block_per_row, cols_p2 is
    its tile (block_per_row_tile), which may be three quarters of a power of two.

    Sized for bandwidth: about 16 fp32 values per thread per tile (no spills), 4096-element tiles for the multi-row
    warp_per_row programs. The streaming forwards (block_online, split_row) share a configuration; split_row's
    backward pipelines its first pass STREAM_BYTES_AHEAD deep (module docstring, "Bytes in flight"), block_online's
    has its own unpipelined 32-warp form (and block_online_backward_config's pair); `per_sm` is what registers (ptxas,
    sm_90a, scripts/inspect_kernel.py) and shared memory allow, and the persistent grid never exceeds it (split_row's
    exchange needs every program resident). `maxnreg` gives ptxas the register share of per_sm programs per SM: the
    pipelined backward's SPLIT_ROW_BWD_PROGRAMS_PER_SM programs (64 registers at 16 warps, 128 at 8), the unpipelined
    ones' PLAIN_STREAM_REGISTERS. `aligned`: the launch moves whole 16-byte units: Triton's 16-byte specialization
    (every pointer, stride and the length divisible by 16, `rows_aligned`) or EDGES rows (`_alignment`).
    """
    if plan == "warp_per_row":
        rows = max(1, min(128, 4096 // cols_p2))
        return LaunchConfig(cols_p2, 4 if rows * cols_p2 <= 2048 else 8, rows)
    if plan == "block_per_row":
        # 16-bit forward rows of 32768: one 32-warp program per SM holds the row (62-63 registers), so
        # nothing overlaps its reductions and stores; a second row in flight fits in 64 registers (Triton 3.6's
        # ptxas, sm_90a: bf16 16-byte rows without spilling, fp16 ones 4 bytes, EDGES rows 53 registers, the
        # unaligned kernel without EDGES 76 bytes; fp32 104 bytes), hence the prefetching persistent form.
        # Plain loads, except the prefetching form's (kept on evict_first, perf log session 16): evict_first cost 4-12%
        # of copy at 4096^2..4096x32768, except 16-bit forward rows of 4096 (the tuner times both, candidate_configs).
        # The backward stops at 16 warps: without the hint, 32-warp programs at 32768 columns fell to 0.73-0.96 of
        # copy where 16 warps reach 0.95-1.00.
        prefetch = direction == "fwd" and dtype.itemsize == 2 and cols_p2 == BLOCK_PER_ROW_MAX_COLS
        most_warps = 32 if direction == "fwd" else 16
        if cols_p2 & (cols_p2 - 1):  # a three-quarter tile (block_per_row_tile)
            if direction == "bwd":  # the 16384-column tile's 16 warps, two programs per SM at 64 registers
                return LaunchConfig(cols_p2, 16, 1, maxnreg=THREE_QUARTER_BACKWARD_MAXNREG)
            return LaunchConfig(cols_p2, triton.next_power_of_2(cols_p2) // 1024, 1)  # half the power of two's warps
        if prefetch and aligned:
            # Rows in whole 16-byte units (16-byte rows, EDGES) instead take a program per row at 16 warps, two per
            # SM, each row held as words with each exponential taken twice (_softmax_row_words): while one program
            # reduces and writes, the other loads, as the 16384-column tile's 32-warp programs do (bf16 4096 x 16384
            # 0.92 of copy against 4096x32768's 0.85-0.86 with the prefetch). Other rows keep the prefetch.
            return LaunchConfig(cols_p2, 16, 1, maxnreg=_register_share(16, 2), held=True)
        return LaunchConfig(cols_p2, min(most_warps, max(4, cols_p2 // 512)), 1, prefetch=prefetch,
                            load_hint="evict_first" if prefetch else "")
    # block_online and split_row stream tiles; 16-bit inputs take twice the columns per tile.
    block_n = min(cols_p2, 8192 if dtype.itemsize == 2 else 4096)
    num_warps = max(4, min(16, block_n // 512))
    if plan == "block_online" and direction == "bwd":
        # One program of 32 warps per SM (64 registers, the share of 1024 threads) with plain loops: the form of
        # Inductor's kernel, which reads 0.99-1.01 of copy at fp32 4096x32768 (ncu, session 45: 4096 programs of
        # 1024 threads, 52 registers, one per SM). Tiles of 4096 fp32 columns (one 16-byte load per thread per
        # operand) and 16384 16-bit columns (two): measured both ways on the H200 (session 46), fp32 4096x32768
        # read 0.98 of copy with one load against 0.92 with two, bf16 4096x32768 0.89 with two against 0.78 with
        # one. ptxas, sm_90a: fp32 62 / 32 / 64 registers (16-byte rows / unaligned / EDGES), 16-bit 52-53 / 64 / 53,
        # no spills. Rows in whole 16-byte units (16-byte rows and EDGES) stream their stores (.cs). Rows that fit two
        # per SM in L2 take two 16-warp programs instead (block_online_backward_config).
        tile = min(cols_p2, block_n * 4 // dtype.itemsize)
        return LaunchConfig(tile, 32, 1, per_sm=1, maxnreg=64, stream_stores=aligned)
    if direction == "fwd" or not aligned:
        # Forward streams without the pipeline: measured at e7fb008, the pipelined forward lost
        # 0.03-0.11x of copy (one program per SM held fewer bytes in flight than several plain ones).
        # So do unaligned rows, with the plain loop and stores: their fp32 pipeline is 4-byte cp.async,
        # measured 0.56 -> 0.49 at 2048x50257 backward (fb4210d; 0.37 with a num_stages=1 loop,
        # tl.where for the masked lanes and plain stores, 14ebdd9), and 16-bit ones get no async copies.
        per_sm, share = _register_residency(num_warps, PLAIN_STREAM_REGISTERS[direction])
        return LaunchConfig(block_n, num_warps, 1, per_sm=per_sm, maxnreg=share)
    operands = 2
    stages = max(2, min(MAX_STAGES, 1 + STREAM_BYTES_AHEAD // (block_n * dtype.itemsize * operands)))
    per_sm = SPLIT_ROW_BWD_PROGRAMS_PER_SM  # split_row: block_online's backward returned above
    return LaunchConfig(block_n, num_warps, 1, stages, per_sm, _register_share(num_warps, per_sm), stream_stores=True)


# split_row's held form: a chunk is one tile, loaded at once and kept in registers through the row exchange, so pass 2
# reads nothing and each program has its whole chunk in flight where the streamed form has one tile. 32 words per
# thread: fp32 values, or for 16-bit rows int32 words of two elements (_load_held, _pair_values); the backward holds
# y and dy, 16 words each. At 64 registers (the register file's share): the forward four 8-warp programs per SM of
# 32 KiB chunks, so three load while one waits at its exchange (against two 16-warp programs of 64 KiB: bf16 +9-11%,
# fp32 +1-10% from 50257 to 262144 columns, session 27; eight 4-warp programs of 16 KiB: -5-10% from 131072 columns,
# +12% at bf16 2048x50257, session 28); the backward two 16-warp programs of 64 KiB (four of 32 KiB: +5-9% at
# 2048x50257 but -1-3% at 131072-262144 columns and -2% at bf16 32x1M).
SPLIT_ROW_HELD = {4: {"fwd": LaunchConfig(8192, 8, 1, per_sm=4, maxnreg=64, held=True),
                      "bwd": LaunchConfig(8192, 16, 1, per_sm=2, maxnreg=64, held=True)},
                  2: {"fwd": LaunchConfig(16384, 8, 1, per_sm=4, maxnreg=64, held=True),
                      "bwd": LaunchConfig(16384, 16, 1, per_sm=2, maxnreg=64, held=True)}}
# Rows in flight (resident programs / chunks per row) from which the held form is taken. A held program idles while it
# waits at its row's exchange, and a row's chunks are loaded by programs that took consecutive tickets; with few rows
# in flight every program waits at once, and the loads and stores of the whole GPU run in lockstep phases. Measured
# on the H200 (session 27, docs/perf-log.md), held against streamed:
#   backward: fp32 8-38 rows +12-17%, 2 rows -6%; 16-bit 4-66 rows +7-13%, 1 row flat;
#   forward:  fp32 16-33 rows +5-6%, 66 rows (2048x50257: chunks of 77% of a tile) -2%, 4 rows -8%, 1 row -13%;
#             16-bit 66 rows +7%, 33 rows flat, 132 rows (2048x50257) -1%, 8 rows -7%, 2 rows -9%.
HELD_ROWS_IN_FLIGHT = {"fwd": 16, "bwd": 4}
# 16-bit forward rows of at most 128 KiB hold quarter tiles (16 KiB) in eight 4-warp programs per SM. Measured on the
# H200 against the table's half tiles (session 29, results/h200/experiments/softmax-triton-1e2f0e0-held-quarter-*):
# bf16 and fp16 alike, 2048x33000 +19-20%, 2048x40000 / 2048x50257 / 4096x50257 +11-12%, 512x65536 +3%, 1024x65536
# flat; past 128 KiB they lose (bf16 1024x131072 -4%, 256x262144 -7%: scripts/sweep_triton_held_tiles.py). fp32 rows
# gain nothing from them (the sweep: -12% to +4% from 20000 to 262144 columns), so fp32 keeps half tiles. Not
# profiled; the largest gains are where quarter tiles fill better (2048x33000: chunks fill 81% of a quarter tile, 67%
# of a half tile), but 16-bit rows of whole half tiles gain too (2048x32768 +3%).
HELD_QUARTER_FWD = LaunchConfig(8192, 4, 1, per_sm=8, maxnreg=64, held=True)
HELD_QUARTER_MAX_ROW_BYTES = 128 << 10
# Backward rows of at most 200 KiB (each operand) hold half tiles (32 KiB of y and dy) in four 8-warp programs per SM.
# Measured on the H200 against the table's two 16-warp programs (session 31,
# results/h200/experiments/softmax-triton-984cfa0-split-row-held-half-bwd-*): 2048x50257 bf16 0.76 -> 0.82, fp32
# 0.85 -> 0.89, bf16 1024x100000 +3%, bf16 1024x65536 -1.4%; from 131072 columns (256 KiB rows and up) session 27
# measured them 1-3% slower, so those keep the table's tiles.
HELD_HALF_BWD = {4: LaunchConfig(4096, 8, 1, per_sm=4, maxnreg=64, held=True),
                 2: LaunchConfig(8192, 8, 1, per_sm=4, maxnreg=64, held=True)}
HELD_HALF_BWD_MAX_ROW_BYTES = 200 << 10


# block_online's backward as two 16-warp programs per SM (64 registers each), tiles of two 16-byte loads per thread per
# operand (fp32 4096 columns, 16-bit 8192), taken by block_online_backward_config. With one 32-warp program per SM the
# SM has nothing in flight at each row's end (the last tile's latency, the block reduction, the next program's start);
# a second program streams through those spans. Measured on the H200 in one process, 4096 rows
# (scripts/sweep_triton_block_online.py,
# results/h200/experiments/softmax-triton-6d25176-block-online-program-shapes.json), two 16-warp programs against one
# 32-warp program: bf16 8192 / 16384 / 24576 columns 0.92 / 0.98 / 0.96 of copy against 0.59 / 0.83 / 0.72, fp32 8192
# columns 1.01 against 0.89. Where the L2 budget caps their grid (persistent programs walking rows) they lose: fp32
# 16384 / 24576 / 32768 columns 0.93 / 0.84 / 0.87 against 1.01 / 1.01 / 0.99, bf16 50257 / 131072 0.62 / 0.65
# against 0.67 / 0.72 (bf16 32768, capped at 256 programs: 0.94 against 0.91, the one exception). 16-bit rows outside
# the 16-byte specialization (EDGES, or element by element) take 4096-column tiles: 4096 measured 1-20% faster at 8
# of 10 bf16 / fp16 EDGES cells, even at one, 5% slower at fp16 1024x30001 (softmax-triton-abf02b3-block-online-
# backward-edges.json, 4096x8001 to 1024x30001; 8192 spilled 4 bytes there). With the edges reduced after the tile
# loop (_span_edges) 8192 compiles without spills and still lost: bf16 4096x8001 / 16001 / 24001 3-7% slower than
# 4096 (softmax-triton-85c7133-edges-reduced-after-the-loop-compare.txt). Those rows read 0.65-0.80 of copy
# against the whole-SM program's 0.40-0.62. ptxas, sm_90a: no spills (test_triton_cpu).
BLOCK_ONLINE_BWD_PAIR = {4: LaunchConfig(4096, 16, 1, per_sm=2, maxnreg=64),
                         2: LaunchConfig(8192, 16, 1, per_sm=2, maxnreg=64)}


def _block_online_backward_pair(whole_sm: LaunchConfig, dtype: torch.dtype, specialized: bool) -> LaunchConfig:
    """BLOCK_ONLINE_BWD_PAIR with `whole_sm`'s store rule; 16-bit launches outside the 16-byte specialization
    (`specialized` False) halve its tile."""
    pair = BLOCK_ONLINE_BWD_PAIR[dtype.itemsize]
    tile = pair.block_n if specialized or dtype.itemsize == 4 else pair.block_n // 2
    return pair._replace(block_n=tile, stream_stores=whole_sm.stream_stores)


def block_online_backward_config(whole_sm: LaunchConfig, rows: int, cols: int, dtype: torch.dtype, specialized: bool,
                                 device: torch.device) -> LaunchConfig:
    """block_online's backward configuration for `rows` rows of `cols`: the pair (_block_online_backward_pair, its
    tile at most the row's next power of two) when the rows fill two programs per SM and two rows per SM fit the L2
    budget, so each program takes a row (_block_online_programs); else `whole_sm`, launch_config's one 32-warp
    program per SM, which is never capped. With fewer rows than two per SM a 32-warp program gives each row the whole
    SM (not measured against the pair)."""
    pair = _block_online_backward_pair(whole_sm, dtype, specialized)
    pair = pair._replace(block_n=min(pair.block_n, triton.next_power_of_2(cols)))
    resident = _sm_count(device) * pair.per_sm
    rows_fit = rows >= resident and L2_BUDGET_BYTES // (2 * cols * dtype.itemsize) >= resident
    return pair if rows_fit else whole_sm


def held_config(cols: int, dtype: torch.dtype, direction: str) -> LaunchConfig:
    """SPLIT_ROW_HELD (HELD_QUARTER_FWD for 16-bit forward rows of at most 128 KiB, HELD_HALF_BWD for backward rows of
    at most 200 KiB) for rows of `cols`: a row of one chunk shorter than the tile takes the smallest power-of-two tile
    that holds it, with warps in proportion (at least 4), so short rows do not reduce mostly empty tiles (under the
    interpreter, the CPU tier's split_row cost scales with the tile). A row of several chunks keeps the table's tile:
    its chunks are more than half a tile each."""
    held = SPLIT_ROW_HELD[dtype.itemsize][direction]
    if dtype.itemsize == 2 and direction == "fwd" and cols * dtype.itemsize <= HELD_QUARTER_MAX_ROW_BYTES:
        held = HELD_QUARTER_FWD
    elif direction == "bwd" and cols * dtype.itemsize <= HELD_HALF_BWD_MAX_ROW_BYTES:
        held = HELD_HALF_BWD[dtype.itemsize]
    block_n = min(held.block_n, triton.next_power_of_2(_held_chunk_cols(cols, held.block_n)))
    return held._replace(block_n=block_n, num_warps=max(4, held.num_warps * block_n // held.block_n))


def _poll_lanes(chunks: int, config: LaunchConfig) -> int:
    """split_row's POLL_LANES for rows of `chunks` chunks: a power of two that holds them and at least the program's
    threads (_published)."""
    return max(triton.next_power_of_2(chunks), 32 * config.num_warps)


def _held_chunk_cols(cols: int, block_n: int) -> int:
    """Columns per held chunk: the fewest chunks of at most block_n columns, of equal length in whole 16-element units
    (so a chunk's inner bounds fall on 16-byte boundaries in every dtype)."""
    return triton.cdiv(triton.cdiv(cols, triton.cdiv(cols, block_n)), 16) * 16


def split_row_config(streamed: LaunchConfig, cols: int, dtype: torch.dtype, direction: str, whole_units: bool,
                     device: torch.device) -> LaunchConfig:
    """split_row's held form (held_config) for rows moved in whole 16-byte units (_alignment) that are one chunk, or
    on a GPU whose chunks fit the grid's programs HELD_ROWS_IN_FLIGHT times (the exchange also needs every chunk of a
    row resident at once); else `streamed`. Rows that move element by element keep the streamed form: held, each
    element's 64-bit address takes registers, and ptxas spills 300+ bytes at the 64-register cap. Off the GPU a row
    must be one chunk (_split_geometry)."""
    held = held_config(cols, dtype, direction)
    chunks = triton.cdiv(cols, held.block_n)
    in_flight = device.type == "cuda" and chunks * HELD_ROWS_IN_FLIGHT[direction] <= _sm_count(device) * held.per_sm
    return held if whole_units and (chunks == 1 or in_flight) else streamed


@functools.lru_cache(maxsize=None)
def _sm_count(device: torch.device) -> int:
    if device.type != "cuda":
        return INTERPRETER_SM_COUNT
    return torch.cuda.get_device_properties(device).multi_processor_count


# ----------------------------------------------------------------------------- the backend interface

def plans() -> list[str]:
    return list(PLANS)


def check_plan(plan: str, rows: int, cols: int, dtype: torch.dtype, device: torch.device) -> None:
    """Raise ValueError saying why `plan` cannot run (rows, cols); unknown names list plans()."""
    if plan not in PLANS:
        raise ValueError(f"softmax: unknown triton plan {plan!r}; choose one of {', '.join(PLANS)}")
    limit = {"warp_per_row": WARP_PER_ROW_MAX_COLS, "block_per_row": BLOCK_PER_ROW_MAX_COLS}.get(plan)
    if limit is not None and cols > limit:
        raise ValueError(f"softmax: plan {plan!r} cannot run rows of {cols} columns (max {limit}): it holds a "
                         "whole row in registers; use 'block_online' or 'split_row'")


def choose_plan(rows: int, cols: int, dtype: torch.dtype, device: torch.device, direction: str = "fwd") -> str:
    """Short rows: several per program; rows that fit in registers: one per program; longer rows: split across
    programs (split_row). Measured on the H200 (132 SMs) with split_row v3
    (results/h200/experiments/softmax-plans-37f0df0-split-v3.json): split_row wins every fp32 shape from 2048x50257 to
    4x4194304, both ways (0.52-0.75 of copy against 0.03-0.59), and 16-bit rows from 131072 columns. 16-bit rows of
    at most 128 KiB with about a row per SM or more went to block_online until split_row held its chunks in registers:
    the backward since session 27 (bf16 2048x50257 0.77 of copy against block_online's 0.66), the forward since its
    quarter tiles (session 29, results/h200/experiments/softmax-triton-1e2f0e0-held-quarter-*.json: bf16 2048x33000 /
    2048x40000 / 2048x50257 / 4096x50257 / 1024x65536 0.75 / 0.83 / 0.78 / 0.81 / 0.82 against 0.67 / 0.79 / 0.72 /
    0.74 / 0.80; 512x65536 0.76 against 0.77; fp16 the same within 0.01). fp32 rows of 513-1024 columns, with a row
    per SM or more, take block_per_row (session 20, results/h200/experiments/softmax-plans-65e4776-short-rows.json,
    16384x1024: 0.98 / 1.00 of copy against warp_per_row's 0.95 / 0.99; 16-bit rows measured even and keep
    warp_per_row). 16-bit forward rows of 16385-32768 columns stay with block_per_row at any row count: since its
    held form (two 16-warp programs per SM, session 63; results/h200/experiments/
    softmax-triton-89bac1e-block-per-row-16bit-32768-two-programs-after.json) it reads 0.95-0.98 of copy at 2048-16384
    rows of 24576 / 32768 columns, 0.87 at 4096x20000, against split_row's quarter tiles' 0.84-0.90 / 0.77 (they had
    led the prefetching form by 2-8% with more rows than quarter programs, session 30); through auto, bf16 / fp16
    in one run (session 64, softmax-triton-a6b1818-auto-16bit-32768.json): 0.93-0.98 at those rows, 0.87 at 20000
    and 0.77 at 16400 columns, against split_row's 0.84-0.90 / 0.77-0.78 / 0.70. fp32 backward rows of 16385-32768
    columns take block_online's 32-warp programs (session 46, results/h200/experiments/
    softmax-triton-3a34865-block-online-backward-landed-sweep.json, 4096 rows of 24576 / 32768 columns and 8192 of
    32768: 1.00 / 0.98 / 0.98 of copy against block_per_row's 0.82 / 0.92 / 0.94; at 16384 columns both read 1.01,
    at 8192 block_online 0.89; 16-bit rows keep block_per_row, 0.98-1.01 against 0.72-0.92) when there are more rows
    than SMs (softmax-triton-9f89a05-block-online-backward-few-rows.json, 32768 columns: at 32 / 132 rows
    block_online 0.41 / 0.70 against 0.44 / 0.76, at 264 / 1024 rows 0.75 / 0.89 against 0.73 / 0.77). Rows whose
    length is not a multiple of 16 may take a streaming plan past 8192 columns (_edges_plan)."""
    fp32_past_half = dtype == torch.float32 and cols > WARP_PER_ROW_MAX_COLS // 2 and rows >= _sm_count(device)
    if cols <= WARP_PER_ROW_MAX_COLS and not fp32_past_half:
        return "warp_per_row"
    if cols > BLOCK_PER_ROW_MAX_COLS:
        return "split_row"
    streaming = _edges_plan(rows, cols, dtype, direction, _sm_count(device))
    if streaming:
        return streaming
    fp32_long_backward = (dtype == torch.float32 and direction == "bwd" and cols > BLOCK_PER_ROW_MAX_COLS // 2
                          and rows > _sm_count(device))
    return "block_online" if fp32_long_backward else "block_per_row"


EDGES_STREAM_MIN_COLS = 8192  # rows not a multiple of 16 longer than this may stream (_edges_plan)


def _edges_plan(rows: int, cols: int, dtype: torch.dtype, direction: str, sms: int) -> str | None:
    """choose_plan's pick for rows of at most BLOCK_PER_ROW_MAX_COLS whose length is not a multiple of 16, or None for
    its usual one. Such rows never run in the 16-byte specialization (rows_aligned); when their operands share a
    phase every plan here moves them in whole 16-byte units (EDGES). block_per_row holds a row in a power-of-two
    tile or, for 16-bit rows, three quarters of one (block_per_row_tile), so what it wastes is the tile's unused
    part. Measured on the H200 in one process, each plan forced, ratio to copy
    (results/h200/experiments/softmax-8aaf598-edges-plans.json; perf log, "Session 50"):
    - 16-bit forward rows: block_per_row at any row count. In that sweep it led in its 8192- and 16384-column
      tiles; past them split_row (more than 4 rows per SM) or block_online led its prefetching form. With its
      register caps, one exponential per element, no row loop and the int32 phase (sessions 52-54), it leads or
      ties (results/h200/experiments/
      softmax-triton-8bc54df-edges-forward-plans.json, bf16, ratio to copy, against split_row's): 4096 x 6001 /
      8001 0.78 / 0.92 against 0.62 / 0.73; 1024 x 8001 / 10001 / 12001 / 16001 0.71 / 0.52 / 0.58 / 0.71 against
      0.53 / 0.49 / 0.55 / 0.63; 264x12001 0.49 against block_online's 0.44; 4096 x 9001-16001 0.56-0.80 against
      0.57-0.79 (split_row up to 2% ahead below 12288 columns, block_per_row 2% ahead at 16001); the three-quarter
      tiles since took 4096 x 9001 / 12001 to 0.72 / 0.86 (softmax-triton-0fa6d92-block-per-row-three-quarter-
      tiles-after.json; split_row 0.68 at 12001 in softmax-b0b63a0-edges-forward-bf16-both-backends.json). Past 16384
      columns block_per_row too since its held form (session 63; results/h200/
      experiments/softmax-triton-89bac1e-block-per-row-16bit-32768-two-programs-after.json): 4096x30001 0.93 / 0.92
      (bf16 / fp16) against split_row's 0.83 / 0.83 (its prefetching form had read 0.73 at 4096x32001 against 0.86);
      with 1-4 rows per SM too (session 64, results/h200/experiments/softmax-triton-a6b1818-held-vs-online-edges-few-
      rows.json, bf16): 264x30001 / 528x20001 / 528x32001 0.66 / 0.63 / 0.74 against block_online's 0.61 / 0.57 /
      0.68. So 16-bit forward rows take block_per_row at any row count.
    - 16-bit backward rows: block_per_row, except past 8192 columns with at most 4 rows per SM, where block_online
      wins (264x16001 0.65 against 0.59; at 264x8001 it loses, 0.53 against 0.61). Since rows of at most 12288
      columns run in its three-quarter tile (block_per_row_tile), block_per_row leads or ties split_row there too
      (results/h200/experiments/softmax-triton-0fa6d92-block-per-row-three-quarter-tiles-after.json, bf16 / fp16):
      4096x12001 0.86 / 0.86 against 0.80 / 0.80, 1024x10001 0.65 / 0.65 against 0.59 / 0.59, 4096 x 9001 / 10001
      0.69-0.70 / 0.73-0.75 against 0.70 / 0.73-0.74. block_per_row reads 0.71-0.93 at 4096 x 5001-8001, 0.84 at
      14001, 0.99-1.01 at 24001 and 32001 (split_row 0.87-0.88), 0.77-0.78 at 1024 x 8001 and 16001.
    - fp32 forward rows: block_per_row, except in a 16384-column tile less than 3/4 used with at most 4 rows per SM,
      where block_online wins (264x12001 0.69 against 0.66), and past 16384 columns in a tile less than 3/4 used,
      where split_row (more than 4 rows per SM; 4096x24001 0.86 against 0.84 / 0.81) or block_online takes the row.
      In the 16384-column tile with more rows, block_per_row (results/h200/experiments/
      softmax-triton-fb439da-edges-forward-plans.json): 4096 x 10001 / 11001 / 12001 0.93 / 0.96 / 0.97 against
      block_online's 0.92 / 0.94 / 0.94 (Liger 0.89 / 0.93 / 0.95); 1024 x 10001 / 12001 0.81 / 0.86 against 0.79 /
      0.85; 4096x9001 0.885 against 0.893, inside that run's noise band (0.990-1.005). Where it fills 3/4 of its
      tile: 4096 x 14001 / 16001 / 32001 0.97 / 0.96 / 0.92 against block_online's 0.90 / 0.84 / 0.77; 1024x16001
      0.92 against 0.80; 264x16001 0.72 against 0.63. In the 8192-column tile, with its register cap
      (EDGES_FORWARD_MAXNREG), at any use: 4096 x 5001 / 6001 / 7001 / 8001 0.88 / 0.94 / 0.96 / 0.96 against
      0.74 / 0.84 / 0.92 / 0.95; 1024x8001 0.85 against 0.81; 264x8001 0.63 against 0.62.
    - fp32 backward rows keep the usual plan: block_per_row 0.92-1.01 at 4096 rows of 5001-16001 columns and 1024 of
      8001 / 16001 (split_row 0.77-0.91, block_online 0.63-0.88), block_online past 16384 (4096x24001 0.91 against
      0.63).
    With at most one row per SM block_per_row stays: 132x16001 0.35-0.65 against 0.36-0.60 / 0.27-0.52. fp16 is not
    in the sweep; it follows bf16, as at every other measured bound."""
    if cols % 16 == 0 or rows <= sms or cols <= EDGES_STREAM_MIN_COLS:
        return None
    many = rows > 4 * sms
    tile_mostly_used = 4 * cols >= 3 * triton.next_power_of_2(cols)
    if direction == "bwd":
        return None if dtype.itemsize == 4 or many else "block_online"
    if dtype.itemsize == 2:
        return None
    if cols <= 16384:
        return None if many or tile_mostly_used else "block_online"
    if tile_mostly_used:
        return None
    return "split_row" if many else "block_online"


def _persistent_programs(rows: int, config: LaunchConfig, device: torch.device, bytes_per_row: int) -> int:
    """Programs for a persistent row loop: at most what fits on the GPU at once (config.per_sm per SM),
    and, for the two-pass plans, no more rows in flight than fit in the L2 budget (but >= 1 per SM)."""
    sms = _sm_count(device)
    resident = sms * config.per_sm
    in_l2 = max(sms, L2_BUDGET_BYTES // max(1, bytes_per_row))
    return max(1, min(rows, resident, in_l2))


def _block_online_programs(rows: int, config: LaunchConfig, device: torch.device, bytes_per_row: int) -> int:
    """block_online's grid: one program per row unless the L2 budget caps the persistent grid below the rows the
    GPU holds at once (config.per_sm per SM, the residency of its register cap: ptxas gives the 16-bit forward
    programs 56-64 registers, two per SM; the backward's 32-warp program fills an SM, its pair
    (block_online_backward_config) is two per SM). A program per row lets the
    hardware start each row's program wherever one finishes: in the CUDA block_online a persistent grid of the same
    residency, each block walking a fixed list of rows, ran 9-13% slower at the same DRAM bytes (docs/perf-log.md,
    session 44). One program per SM is never capped (_persistent_programs keeps at least one per SM)."""
    programs = _persistent_programs(rows, config, device, bytes_per_row)
    return rows if programs >= min(rows, _sm_count(device) * config.per_sm) else programs


# split_row's workspaces ([ticket, exits, launches, partial words], int64), per (device, stream), zeroed once when
# made: the kernels need the ticket and exit counters zero at launch and leave them zero, and tag their words with the
# launch count they advance (_leave, _publish), so no call pays a memset launch. Launches on one stream run in order
# and share a buffer, forward and backward alike; each stream gets its own (torch hands out streams from a small
# pool, so the buffers stay few). A buffer serves any launch of at most numel - 3 words. Buffers are never freed,
# because a captured CUDA graph keeps the address it was captured with. Such a graph must therefore not be replayed
# on another stream at the same time as split_row launches on the stream it was captured on: the two would share a
# workspace. A capture that finds no buffer large enough gets one of its own, zeroed by a memset node in the graph
# (every replay starts from zeros, tag 1) and kept out of the pool: its zeros exist only once the graph has run, so
# no launch outside the graph may use it. A launch that never finishes (an aborted kernel) leaves its counters
# nonzero. A word left by a launch LAUNCH_TAGS launches earlier on the same buffer would read as published.
# Interpreter (CPU) tensors key on (device, 0).
_WORKSPACES: dict[tuple[torch.device, int], list[torch.Tensor]] = {}


def _workspace(words: int, device: torch.device) -> torch.Tensor:
    """A split_row workspace (int64, zero counters) of at least 3 + words for a launch on device's current stream."""
    stream = torch.cuda.current_stream(device).cuda_stream if device.type == "cuda" else 0
    for buffer in _WORKSPACES.get((device, stream), []):
        if buffer.numel() >= 3 + words:
            return buffer
    buffer = torch.zeros(3 + words, dtype=torch.int64, device=device)
    if not (device.type == "cuda" and torch.cuda.is_current_stream_capturing()):
        _WORKSPACES.setdefault((device, stream), []).append(buffer)
    return buffer


def _split_geometry(rows: int, cols: int, bytes_per_col: int, config: LaunchConfig,
                    device: torch.device) -> tuple[int, int, int]:
    """(chunks per row, columns per chunk, programs) for split_row. Held: chunks of _held_chunk_cols. Streamed: every
    resident program holds one chunk, and chunks are sized so all of them together fit the L2 budget (pass 2 re-reads
    its chunk from L2); at least cdiv(cols, programs) columns, so a row never has more chunks than there are programs
    (the exchange waits for all of them); a whole number of tiles."""
    programs = _sm_count(device) * config.per_sm
    if config.held:
        chunk_cols = _held_chunk_cols(cols, config.block_n)
        chunks = triton.cdiv(cols, chunk_cols)
        return chunks, chunk_cols, max(1, min(programs, rows * chunks))
    chunk_cols = max(L2_BUDGET_BYTES // (programs * bytes_per_col), triton.cdiv(cols, programs))
    if device.type != "cuda":
        chunk_cols = cols  # the interpreter runs programs one after another: no waits across them
    chunk_cols = triton.cdiv(chunk_cols, config.block_n) * config.block_n
    chunks = triton.cdiv(cols, chunk_cols)
    return chunks, chunk_cols, max(1, min(programs, rows * chunks))


# Run-time tuning, bounded: warp_per_row and block_per_row hold their rows in registers and launch one program per row
# group, so their warps per program are free. The first call of each (device, plan, dtype, next_pow2(rows), tile columns
# (_tile_cols), direction, (16-byte specialization, EDGES)) bucket times the table's count (launch_config) and twice
# it (half the registers per thread: no new spills) on the caller's tensors (tuning.fastest: interleaved rounds of
# cold-L2 launches) and keeps the faster. Rows are in the key because a few rows cannot fill the GPU: a pick timed on
# them would say nothing about many. The streaming plans (block_online, split_row) and block_per_row's prefetching
# form size their persistent grids from the configuration, and split_row's exchange needs every program resident:
# they keep the table's.
# Untimed (the table's) off the GPU, under CUDA_PORTFOLIO_NO_TUNING=1, and during CUDA-graph capture, where nothing can
# be timed (the bucket is not cached then, so the first call outside a capture tunes it).
TUNED_PLANS = ("warp_per_row", "block_per_row")
MAX_WARPS = 32
_TUNED: dict = {}  # bucket -> LaunchConfig


def candidate_configs(plan: str, dtype: torch.dtype, cols_p2: int, direction: str, aligned: bool,
                      edges: bool = False) -> tuple:
    """The configurations timed for a bucket: the table's first (the untimed choice), then twice its warps; for the
    block_per_row 16-bit forward in a power-of-two tile, rows not moved as EDGES (`edges`), each of those with and
    without evict_first loads (the EDGES and three-quarter-tile kernels take no hint, so both would be one kernel,
    timed twice). Not for fp32: wherever two
    processes' tuners picked differently, the benchmark read fp32 16-byte rows 3-4% slower with evict_first
    (4096 x 9008 / 12000 / 16000, sessions 50, 55 and 57) and EDGES rows within noise; the tuner's cold single
    launches do not see the difference."""
    table = launch_config(plan, dtype, cols_p2, direction, aligned)
    if plan not in TUNED_PLANS or table.prefetch or table.held:
        return (table,)
    wider = table._replace(num_warps=min(MAX_WARPS, 2 * table.num_warps))
    warps = (table,) if wider == table else (table, wider)
    power_of_two_tile = cols_p2 & (cols_p2 - 1) == 0
    if plan == "block_per_row" and direction == "fwd" and dtype.itemsize == 2 and power_of_two_tile and not edges:
        return warps + tuple(c._replace(load_hint="evict_first") for c in warps)
    return warps


def block_per_row_tile(cols: int, dtype: torch.dtype, direction: str, units: bool) -> int:
    """The columns block_per_row holds a row of `cols` in: the power of two at or above it, or three quarters of
    that for 16-bit rows in whole 16-byte units (`units`: the 16-byte specialization or EDGES, _alignment) that
    fill at most 3/4 of the tile, as a half and a quarter (_softmax_pieces_held, _grad_pieces_held):
    - forward, 8192- and 16384-column tiles (6144, 12288), which launch_config gives half the warps, so each thread
      holds 24 elements, not 16 of which a quarter or more load nothing;
    - backward, the 16384-column tile (12288) at its 16 warps, which fits 64 registers (two programs per SM) where
      the 16384-column tile takes 79-82 (one). In the 8192-column tile both hold two (6144: 48-62 registers)."""
    tile = triton.next_power_of_2(cols)
    pieced = (8192, 16384) if direction == "fwd" else (16384,)
    if units and dtype.itemsize == 2 and tile in pieced and 4 * cols <= 3 * tile:
        return tile // 4 * 3
    return tile


def _tile_cols(plan: str, t: torch.Tensor, direction: str, alignment: tuple[bool, bool]) -> int:
    """launch_config's `cols_p2` for `plan` on 2-D t: block_per_row's tile (block_per_row_tile), else the power of
    two at or above the row's length."""
    if plan == "block_per_row":
        return block_per_row_tile(t.shape[1], t.dtype, direction, any(alignment))
    return triton.next_power_of_2(t.shape[1])


def _bucket(plan: str, t: torch.Tensor, direction: str, alignment: tuple[bool, bool]) -> tuple:
    """The tuning bucket: EDGES rows apart from 16-byte ones, whose candidates differ (candidate_configs)."""
    return (t.device, plan, t.dtype, triton.next_power_of_2(t.shape[0]), _tile_cols(plan, t, direction, alignment),
            direction, alignment)


def _table_config(plan: str, t: torch.Tensor, direction: str, alignment: tuple[bool, bool]) -> LaunchConfig:
    """The untimed configuration for `plan` on 2-D t: launch_config's, for split_row its form (split_row_config),
    for block_online's backward its programs per SM (block_online_backward_config). `alignment`: the launch's
    (16-byte specialization, EDGES) (_alignment); either means it moves whole 16-byte units."""
    units = any(alignment)
    config = launch_config(plan, t.dtype, _tile_cols(plan, t, direction, alignment), direction, units)
    if plan == "split_row":
        return split_row_config(config, t.shape[1], t.dtype, direction, units, t.device)
    if plan == "block_online" and direction == "bwd":
        return block_online_backward_config(config, *t.shape, t.dtype, alignment[0], t.device)
    return config


def _config_for(plan: str, t: torch.Tensor, direction: str, alignment: tuple[bool, bool], launcher) -> LaunchConfig:
    """The configuration to launch for `plan` on 2-D t (`alignment` as _table_config's): the bucket's tuned pick,
    timing the candidates on the first call (launcher(config) -> a zero-argument launch)."""
    key = _bucket(plan, t, direction, alignment)
    if key in _TUNED:
        return _TUNED[key]
    candidates = candidate_configs(plan, t.dtype, _tile_cols(plan, t, direction, alignment), direction, any(alignment),
                                   alignment[1])
    if len(candidates) == 1 or not t.is_cuda or tuning_off() or torch.cuda.is_current_stream_capturing():
        return _table_config(plan, t, direction, alignment)
    _TUNED[key] = fastest(candidates, launcher, t.device, f"softmax {plan} configuration")
    return _TUNED[key]


def kernel_config(t: torch.Tensor, plan: str, direction: str, alignment: tuple[bool, bool]) -> str:
    """What runs for `plan` on 2-D t now (`alignment` as _table_config's), as text (the benchmark records it):
    warps, tile columns, and whether the bucket's warps were tuned."""
    config = _TUNED.get(_bucket(plan, t, direction, alignment))
    tuned = config is not None
    if config is None:
        config = _table_config(plan, t, direction, alignment)
    hint = f", {config.load_hint} loads" if config.load_hint else ""
    held = (", rows held" if plan == "block_per_row" else ", chunks held") if config.held else ""
    return f"{config.num_warps} warps, {config.block_n}-column tiles{hint}{held}, {'tuned' if tuned else 'table'}"


def forward(x2d: torch.Tensor, y2d: torch.Tensor, plan: str) -> None:
    """y2d = softmax(x2d) over each row, with `plan`."""
    rows, cols = x2d.shape
    check_plan(plan, rows, cols, x2d.dtype, x2d.device)
    aligned, edges = _alignment(plan, (x2d, y2d), cols)
    config = _config_for(plan, x2d, "fwd", (aligned, edges),
                         lambda c: functools.partial(_launch_forward, x2d, y2d, plan, c, edges))
    _launch_forward(x2d, y2d, plan, config, edges)


# block_per_row's EDGES forward holds a row as split_row holds a chunk. When it came (perf log, session 50) ptxas
# (sm_90a) gave it 59-64 registers where the 16-byte kernel takes 22-34: an SM held one 32-warp program at 16-bit
# 16384 columns instead of two, two 16-warp programs at 8192 instead of three or four (bf16 4096x16001 read 0.47 of
# copy against 4096x16000's 0.92). So it is capped at the 16-byte kernel's residency: 16-bit rows 32 registers at 16
# warps (four programs) and at 32 (two), fp32 rows 40 at 16 warps (three); fp32's 32-warp program keeps none.
# Measured (perf log, sessions 52 and 54): bf16 4096x16001 0.46 -> 0.65, fp32 4096x5001 0.71 -> 0.88; the 16-bit
# 16-warp cap from 40 to 32, bf16 4096x8001 0.82 -> 0.92. The kernel has since shrunk (Triton 3.6's ptxas, sessions
# 58 and 62): uncapped, 16-bit rows take 39 registers at 16 warps and 32 at 32, fp32 rows 40 at 16 warps (capped at
# 32 they spill 40 bytes, at 36 8) and 32 at 32 (none capped at 32). Only the (2, 16) cap still changes the kernel
# (39 -> 32, no spill); the others hold the residency ptxas now gives uncapped.
EDGES_FORWARD_MAXNREG = {(2, 16): 32, (2, 32): 32, (4, 16): 40}  # (element size, warps) -> registers per thread
# The three-quarter tiles (16-bit, block_per_row_tile) at their table's warps hold 24 elements per thread: 40
# registers without spilling (at 32, 18 bytes), so an SM holds three 16-warp programs of 12288 columns where it holds
# two 32-warp ones of 16384, and six 8-warp programs of 6144 where it holds four 16-warp ones of 8192. Twice the
# warps (the tuner's other candidate): 12 elements per thread, 32 registers, no spill.
# The same at either alignment (EDGES or 16-byte rows).
PIECES_MAXNREG = {(6144, 8): 40, (6144, 16): 32, (12288, 16): 40, (12288, 32): 32}  # (tile, warps) -> registers
# The backward's 12288-column tile at 16 warps: 76 registers uncapped with EDGES (62 for 16-byte rows); at 64, two
# programs per SM, and the EDGES kernel spills one word (an LDL and an STL, ptxas sm_90a). At 32 warps (the tuner's
# other candidate) 53 uncapped, 56 at the cap: one program per SM either way.
THREE_QUARTER_BACKWARD_MAXNREG = 64


def _forward_maxnreg(config: LaunchConfig, element_size: int, edges: bool) -> int | None:
    """The register cap block_per_row's forward launches with: a three-quarter tile's (PIECES_MAXNREG), the held
    form's own, an EDGES row's in a power-of-two tile (EDGES_FORWARD_MAXNREG), None for no cap."""
    if config.block_n & (config.block_n - 1):
        return PIECES_MAXNREG[config.block_n, config.num_warps]
    if config.held:
        return config.maxnreg
    if not edges:
        return None
    return EDGES_FORWARD_MAXNREG.get((element_size, config.num_warps))


def _launch_forward(x2d: torch.Tensor, y2d: torch.Tensor, plan: str, config: LaunchConfig, edges: bool) -> None:
    rows, cols = x2d.shape
    x_stride, y_stride = x2d.stride(0), y2d.stride(0)
    if plan == "warp_per_row":
        softmax_fwd_warp_per_row_kernel[(triton.cdiv(rows, config.rows),)](
            x2d, y2d, rows, cols, x_stride, y_stride, ROWS=config.rows, BLOCK_N=config.block_n,
            num_warps=config.num_warps, **LAUNCH_OPTIONS)
    elif plan == "block_per_row":
        grid = (_persistent_programs(rows, config, x2d.device, 0) if config.prefetch else rows,)
        softmax_fwd_block_per_row_kernel[grid](x2d, y2d, rows, cols, x_stride, y_stride, BLOCK_N=config.block_n,
                                               PREFETCH=config.prefetch, LOAD_HINT=config.load_hint, EDGES=edges,
                                               HELD=config.held, num_warps=config.num_warps,
                                               maxnreg=_forward_maxnreg(config, x2d.element_size(), edges),
                                               **LAUNCH_OPTIONS)
    elif plan == "block_online":
        grid = (_block_online_programs(rows, config, x2d.device, cols * x2d.element_size()),)
        softmax_fwd_block_online_kernel[grid](x2d, y2d, rows, cols, x_stride, y_stride, BLOCK_N=config.block_n,
                                              THREADS=32 * config.num_warps, EDGES=edges,
                                              num_warps=config.num_warps, maxnreg=config.maxnreg, **LAUNCH_OPTIONS)
    else:
        chunks, chunk_cols, programs = _split_geometry(rows, cols, x2d.element_size(), config, x2d.device)
        workspace = _workspace(2 * rows * chunks, x2d.device)  # the split_row comment above _take_ticket
        softmax_fwd_split_row_kernel[(programs,)](
            x2d, y2d, workspace, cols, x_stride, y_stride, chunks, chunk_cols, rows * chunks,
            BLOCK_N=config.block_n, POLL_LANES=_poll_lanes(chunks, config), THREADS=32 * config.num_warps,
            EDGES=edges, HELD=config.held, num_warps=config.num_warps, maxnreg=config.maxnreg, **LAUNCH_OPTIONS)


def rows_aligned(tensors, cols: int) -> bool:
    """Whether Triton compiles these 2-D operands' launch in its 16-byte specialization: every data pointer
    divisible by 16 bytes, every row stride and the row length by 16 elements."""
    return cols % 16 == 0 and all(t.data_ptr() % 16 == 0 and t.stride(0) % 16 == 0 for t in tensors)


def rows_share_phase(tensors) -> bool:
    """Whether every operand's row r starts the same number of elements past a 16-byte boundary: every data pointer
    divisible by 16 bytes (Triton specializes on that) and the row strides equal modulo a 16-byte unit."""
    unit = 16 // tensors[0].element_size()
    return all(t.data_ptr() % 16 == 0 for t in tensors) and len({t.stride(0) % unit for t in tensors}) == 1


EDGES_PLANS = ("block_per_row", "block_online", "split_row")


def _alignment(plan: str, tensors, cols: int) -> tuple[bool, bool]:
    """(rows in the 16-byte specialization, EDGES): EDGES is block_per_row or a streaming plan (EDGES_PLANS) on rows
    outside it that share a phase. Either way the launch moves whole 16-byte units, and the launch configuration
    (launch_config's `aligned`) and the tuning bucket key on `aligned or edges`."""
    aligned = rows_aligned(tensors, cols)
    return aligned, not aligned and plan in EDGES_PLANS and rows_share_phase(tensors)


def describe_launch(operands, plan: str, direction: str) -> str:
    """What runs for `plan` on these operands ((x,) forward, (y, dy) backward), as the benchmark records it
    (kernel_config)."""
    first = operands[0]
    return kernel_config(first, plan, direction, _alignment(plan, operands, first.shape[1]))


def backward(y2d: torch.Tensor, dy2d: torch.Tensor, dx2d: torch.Tensor, plan: str) -> None:
    """dx2d = y2d * (dy2d - sum(y2d * dy2d)) over each row, with `plan`."""
    rows, cols = y2d.shape
    check_plan(plan, rows, cols, y2d.dtype, y2d.device)
    aligned, edges = _alignment(plan, (y2d, dy2d, dx2d), cols)
    config = _config_for(plan, y2d, "bwd", (aligned, edges),
                         lambda c: functools.partial(_launch_backward, y2d, dy2d, dx2d, plan, c, edges))
    _launch_backward(y2d, dy2d, dx2d, plan, config, edges)


def _launch_backward(y2d: torch.Tensor, dy2d: torch.Tensor, dx2d: torch.Tensor, plan: str,
                     config: LaunchConfig, edges: bool) -> None:
    rows, cols = y2d.shape
    strides = (y2d.stride(0), dy2d.stride(0), dx2d.stride(0))
    if plan == "warp_per_row":
        softmax_bwd_warp_per_row_kernel[(triton.cdiv(rows, config.rows),)](
            y2d, dy2d, dx2d, rows, cols, *strides, ROWS=config.rows, BLOCK_N=config.block_n,
            num_warps=config.num_warps, **LAUNCH_OPTIONS)
    elif plan == "block_per_row":
        softmax_bwd_block_per_row_kernel[(rows,)](y2d, dy2d, dx2d, cols, *strides, BLOCK_N=config.block_n,
                                               EDGES=edges, num_warps=config.num_warps, maxnreg=config.maxnreg,
                                               **LAUNCH_OPTIONS)
    elif plan == "block_online":
        grid = (_block_online_programs(rows, config, y2d.device, 2 * cols * y2d.element_size()),)
        softmax_bwd_block_online_kernel[grid](y2d, dy2d, dx2d, rows, cols, *strides, BLOCK_N=config.block_n,
                                              STAGES=config.stages, STREAM_STORES=config.stream_stores,
                                              EDGES=edges,
                                              num_warps=config.num_warps, maxnreg=config.maxnreg, **LAUNCH_OPTIONS)
    else:
        chunks, chunk_cols, programs = _split_geometry(rows, cols, 2 * y2d.element_size(), config, y2d.device)
        workspace = _workspace(rows * chunks, y2d.device)  # as the forward's
        softmax_bwd_split_row_kernel[(programs,)](
            y2d, dy2d, dx2d, workspace, cols, *strides, chunks, chunk_cols, rows * chunks,
            BLOCK_N=config.block_n, STAGES=config.stages, POLL_LANES=_poll_lanes(chunks, config),
            STREAM_STORES=config.stream_stores, EDGES=edges, HELD=config.held,
            num_warps=config.num_warps, maxnreg=config.maxnreg, **LAUNCH_OPTIONS)


def aot_specs(dtype: torch.dtype):
    """The compiled configurations per kernel and launch form, at the sizes the benchmark shapes use: every candidate
    the tuned plans time; for split_row's streamed backward three, the pipelined one that 16-byte rows launch, the
    plain one for rows that move element by element and the pipelined one with EDGES for rows that share a phase;
    for block_online's backward its 32-warp and two-per-SM configurations at each of those three; each compiled in
    the specialization it runs in."""
    from .aot import TRITON_DTYPES, AotSpec

    t = TRITON_DTYPES[dtype]
    ptr = f"*{t}"
    fwd = {"x_ptr": ptr, "y_ptr": ptr, "rows": "i32", "cols": "i32", "x_row_stride": "i64", "y_row_stride": "i64"}
    bwd = {"y_ptr": ptr, "dy_ptr": ptr, "dx_ptr": ptr, "rows": "i32", "cols": "i32", "y_row_stride": "i64",
           "dy_row_stride": "i64", "dx_row_stride": "i64"}
    chunk_args = {"chunks": "i32", "chunk_cols": "i32", "jobs": "i32"}
    split_fwd = {"x_ptr": ptr, "y_ptr": ptr, "counters_ptr": "*i64", "cols": "i32", "x_row_stride": "i64",
                 "y_row_stride": "i64", **chunk_args}
    split_bwd = {"y_ptr": ptr, "dy_ptr": ptr, "dx_ptr": ptr, "counters_ptr": "*i64", "cols": "i32",
                 "y_row_stride": "i64", "dy_row_stride": "i64", "dx_row_stride": "i64", **chunk_args}
    stream = launch_config("block_online", dtype, 1 << 20)
    split = launch_config("split_row", dtype, 1 << 20)
    both, aligned_only, unaligned_only = (False, True), (True,), (False,)

    def without_rows(signature):  # block_per_row backward: one program per row, the grid is the row count
        return {k: v for k, v in signature.items() if k != "rows"}

    def block_per_row_forward(config, edges, specializations):  # launched with its EDGES register cap
        if config.held and not edges:  # the held form's other rows, not in whole units, take the prefetching one
            specializations = aligned_only
        capped = config._replace(maxnreg=_forward_maxnreg(config, dtype.itemsize, edges))
        return ("softmax_fwd_block_per_row_kernel", softmax_fwd_block_per_row_kernel, fwd,
                {"BLOCK_N": config.block_n, "PREFETCH": config.prefetch, "LOAD_HINT": config.load_hint,
                 "HELD": config.held, "EDGES": edges}, capped, specializations)

    def block_per_row_backward(config, edges, specializations):
        return ("softmax_bwd_block_per_row_kernel", softmax_bwd_block_per_row_kernel, without_rows(bwd),
                {"BLOCK_N": config.block_n, "EDGES": edges}, config, specializations)

    entries = []
    # block_per_row's 16-bit forward at 32768 columns on rows not in whole 16-byte units: the prefetching form.
    prefetching = launch_config("block_per_row", dtype, BLOCK_PER_ROW_MAX_COLS, "fwd", False)
    if prefetching.prefetch:
        entries.append(block_per_row_forward(prefetching, False, unaligned_only))
    # The tuned plans: every candidate; warp_per_row at 256 columns, block_per_row at a width where the table has
    # room to double its warps (8192 columns), at 16384 (rows of 8193-16384 columns) and at the widest rows (32768).
    for direction in ("fwd", "bwd"):
        for config in candidate_configs("warp_per_row", dtype, 256, direction, True):
            fn = softmax_fwd_warp_per_row_kernel if direction == "fwd" else softmax_bwd_warp_per_row_kernel
            entries.append((fn.__name__, fn, fwd if direction == "fwd" else bwd,
                            {"ROWS": config.rows, "BLOCK_N": config.block_n}, config, both))
        # block_per_row: EDGES=False in both specializations, EDGES=True in the unaligned one (as the streaming
        # kernels below).
        for cols_p2 in (8192, 16384, BLOCK_PER_ROW_MAX_COLS):
            for edges, specializations in ((False, both), (True, unaligned_only)):
                for config in candidate_configs("block_per_row", dtype, cols_p2, direction, True, edges):
                    block_per_row = block_per_row_forward if direction == "fwd" else block_per_row_backward
                    entries.append(block_per_row(config, edges, specializations))
    if dtype.itemsize == 2:  # block_per_row's three-quarter tiles: 16-bit rows in whole units only
        for cols in (6144, 12288):
            for config in candidate_configs("block_per_row", dtype, block_per_row_tile(cols, dtype, "fwd", True),
                                            "fwd", True):
                entries.append(block_per_row_forward(config, False, aligned_only))
                entries.append(block_per_row_forward(config, True, unaligned_only))
        for config in candidate_configs("block_per_row", dtype, block_per_row_tile(12288, dtype, "bwd", True), "bwd",
                                        True):
            entries.append(block_per_row_backward(config, False, aligned_only))
            entries.append(block_per_row_backward(config, True, unaligned_only))
    # The streaming kernels: EDGES=False in both specializations (unaligned: rows that do not share a phase), and
    # EDGES=True in the unaligned one, the only one it launches in, with the configuration of 16-byte rows.
    for edges, specializations in ((False, both), (True, unaligned_only)):
        entries += [
            ("softmax_fwd_block_online_kernel", softmax_fwd_block_online_kernel, fwd,
             {"BLOCK_N": stream.block_n, "THREADS": 32 * stream.num_warps, "EDGES": edges}, stream, specializations),
            ("softmax_fwd_split_row_kernel", softmax_fwd_split_row_kernel, split_fwd,
             {"BLOCK_N": split.block_n, "POLL_LANES": _poll_lanes(256, split), "THREADS": 32 * split.num_warps,
              "EDGES": edges, "HELD": False}, split, specializations),
        ]
    # split_row's held form, in the specializations it launches in (split_row_config): 16-byte rows, and EDGES; each
    # tile it holds (held_config).
    held_forms = [("fwd", softmax_fwd_split_row_kernel, split_fwd, SPLIT_ROW_HELD[dtype.itemsize]["fwd"]),
                  ("bwd", softmax_bwd_split_row_kernel, split_bwd, SPLIT_ROW_HELD[dtype.itemsize]["bwd"]),
                  ("bwd", softmax_bwd_split_row_kernel, split_bwd, HELD_HALF_BWD[dtype.itemsize])]
    if dtype.itemsize == 2:
        held_forms.append(("fwd", softmax_fwd_split_row_kernel, split_fwd, HELD_QUARTER_FWD))
    for direction, fn, sig, held in held_forms:
        # The most chunks a row has in this form: the quarter tile's rows are at most HELD_QUARTER_MAX_ROW_BYTES
        # (8 chunks, a poll lane per thread); the others' are bounded by the SMs (split_row_config), 256 here.
        chunks = HELD_QUARTER_MAX_ROW_BYTES // (held.block_n * dtype.itemsize) if held is HELD_QUARTER_FWD else 256
        for edges, specializations in ((False, aligned_only), (True, unaligned_only)):
            consts = {"BLOCK_N": held.block_n, "POLL_LANES": _poll_lanes(chunks, held), "EDGES": edges, "HELD": True}
            consts.update({"THREADS": 32 * held.num_warps} if direction == "fwd"
                          else {"STAGES": held.stages, "STREAM_STORES": held.stream_stores})
            entries.append((fn.__name__, fn, sig, consts, held, specializations))
    for name, fn, sig, plan, extra in (
        ("softmax_bwd_block_online_kernel", softmax_bwd_block_online_kernel, bwd, "block_online", {}),
        ("softmax_bwd_split_row_kernel", softmax_bwd_split_row_kernel, split_bwd, "split_row",
         {"HELD": False}),
    ):
        for aligned, edges, specializations in ((True, False, aligned_only), (False, False, unaligned_only),
                                                (True, True, unaligned_only)):
            config = launch_config(plan, dtype, 1 << 20, "bwd", aligned)
            configs = [config]
            if plan == "block_online":  # and its two programs per SM (block_online_backward_config)
                configs.append(_block_online_backward_pair(config, dtype, aligned and not edges))
            for config in configs:
                consts = {"BLOCK_N": config.block_n, "STAGES": config.stages, **extra,
                          "STREAM_STORES": config.stream_stores, "EDGES": edges}
                if plan == "split_row":
                    consts["POLL_LANES"] = _poll_lanes(256, config)
                entries.append((name, fn, sig, consts, config, specializations))

    specs = []
    for name, fn, sig, consts, config, specializations in entries:
        signature = dict(sig, **{k: "constexpr" for k in consts})
        options = {"num_warps": config.num_warps}
        if config.maxnreg is not None:  # the launch passes it too (the streaming plans, block_per_row's EDGES and
            # three-quarter tiles)
            options["maxnreg"] = config.maxnreg
        specs.append(AotSpec(name, fn, signature, consts, options, specializations))
    return specs
