"""Matmul C = A @ B in Triton: an autotuned tiled kernel and a persistent TMA kernel.

Both compute (M, K) @ (K, N) -> (M, N) with fp32 accumulation; fp32 inputs use tf32 tensor cores
only when the caller allows it. Bound: FLOPs (2*M*N*K) for every shape worth timing.

"tiled": one program per (BLOCK_M, BLOCK_N) output tile (times SPLIT_K slices of K), tiles visited
in groups of GROUP_M rows so consecutive programs reuse the same B columns from L2. Each program
streams BLOCK_K-wide slices of A and B through shared memory (Triton's software pipeline,
num_stages deep: cp.async on sm_80+) and keeps the fp32 accumulator tile in registers. Operands
come as (lead stride, which dim is contiguous), so row- and column-major views run without copies.
Why it does not fall off a cliff on shapes like 4000x3000x2000: Triton only proves alignment for
integers divisible by 16, so a row stride of 3000 (16-byte aligned in bf16) would compile to scalar
loads. The launcher passes ALIGN, the vector width (elements) that every leading stride and every
masked contiguous extent is a multiple of, and the kernel rebuilds strides as multiples of it and
hints its mask bounds, so 16-byte vector loads survive any tile-tail masking.
Split-K (few output tiles, long K, e.g. 1024x1024x16384): SPLIT_K programs per tile write fp32
partial tiles to a workspace that a second kernel sums (deterministic, no atomics).

"persistent_tma": sm_90+ only. One program per SM loops over output tiles (same grouped order);
A, B and C move through host-built TMA tensor descriptors (hardware bounds handling, no masks, no
address math), so it needs 16-byte aligned bases and leading strides and a unit inner stride.

"auto" (choose_kernel): the faster of the two at their tuned tiles, timed once per problem class.
"""
from __future__ import annotations

import functools
from typing import NamedTuple

import torch
import triton
import triton.language as tl

from .._backends import triton_interpreting
from . import LAUNCH_OPTIONS
from .tuning import fastest, first_that_fits, tuning_off

KERNELS = ("tiled", "persistent_tma")
SUPPORTED_DTYPES = (torch.float32, torch.float16, torch.bfloat16)
TMA_ALIGN_BYTES = 16


class TileConfig(NamedTuple):
    block_m: int
    block_n: int
    block_k_bytes: int  # BLOCK_K in bytes of one operand row: 128 -> 64 (16-bit) or 32 (fp32) elements
    group_m: int
    num_warps: int
    num_stages: int

    def block_k(self, dtype: torch.dtype) -> int:
        return self.block_k_bytes // dtype.itemsize


# Small autotune spaces (Hopper-shaped: wgmma wants 64-row warpgroup slices; 128x256 with 8 warps
# is the big-tile workhorse, the smaller tiles fill the SMs when M or N is small).
TILED_CONFIGS = (
    TileConfig(128, 256, 128, 8, 8, 3),
    TileConfig(256, 128, 128, 8, 8, 3),
    TileConfig(128, 128, 128, 8, 8, 4),
    TileConfig(128, 128, 64, 8, 4, 4),
    TileConfig(64, 128, 128, 8, 4, 4),
    TileConfig(64, 64, 128, 8, 4, 3),
)
# The 64x128 and 128x64 tiles (deep rings, 4 warps) give one wave of tiles at M = 128 or at
# 1024x1024: 64x128 runs at 0.96 / 0.85 of cuBLAS at 128x8192x8192 / 1024x1024x16384 (128x64: 0.93 / 0.79)
# where the 128x128 tiles reach 0.73 / 0.59 (results/h200/experiments/triton-matmul-configs-e7a4213.json).
# The big tile's group-4 twin (a different tile order, the same kernel): at 4000x3000x2000 it ran 0.985 /
# 1.003 of cuBLAS (bf16 / fp16) against group 8's 0.935 / 0.956 in one process; why the order matters
# there is not measured yet (results/h200/experiments/matmul-7212402-group4.json, docs/perf-log.md).
PERSISTENT_CONFIGS = (
    TileConfig(128, 256, 128, 8, 8, 3),
    TileConfig(128, 256, 128, 4, 8, 3),
    TileConfig(128, 128, 128, 8, 8, 4),
    TileConfig(128, 128, 128, 8, 4, 4),
    TileConfig(64, 128, 128, 8, 4, 6),
    TileConfig(128, 64, 128, 8, 4, 8),
)
MIN_K_TILES_PER_SPLIT = 8  # below this a split's prologue/epilogue outweighs the extra parallelism
MAX_SPLIT_K = 16


@triton.jit
def grouped_tile(tile_id, num_pid_m, num_pid_n, GROUP_M: tl.constexpr):
    """(pid_m, pid_n) of a tile in grouped order: GROUP_M tile rows walk the N tiles together."""
    tiles_per_group = GROUP_M * num_pid_n
    first_pid_m = (tile_id // tiles_per_group) * GROUP_M
    group_rows = min(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + (tile_id % tiles_per_group) % group_rows
    pid_n = (tile_id % tiles_per_group) // group_rows
    return pid_m, pid_n


@triton.jit
def element_offset(row, col, lead_stride, COL_CONTIGUOUS: tl.constexpr):
    """Offset of (row, col) in a 2-D operand whose cols (else rows) are contiguous."""
    if COL_CONTIGUOUS:
        return row * lead_stride + col
    else:
        return row + col * lead_stride


@triton.jit
def matmul_tiled_kernel(a, b, c, M, N, K, a_lead_vecs, b_lead_vecs, c_lead_vecs, split_vecs, k_tiles_per_split,
                        A_K_CONTIGUOUS: tl.constexpr, B_N_CONTIGUOUS: tl.constexpr, ALIGN: tl.constexpr,
                        BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                        GROUP_M: tl.constexpr, PRECISION: tl.constexpr):
    """c[split] = a[:, ks] @ b[ks, :] over this program's K slice ks (c: out, or the fp32 workspace)."""
    pid_m, pid_n = grouped_tile(tl.program_id(0), tl.cdiv(M, BLOCK_M), tl.cdiv(N, BLOCK_N), GROUP_M)
    split = tl.program_id(1)
    # Strides arrive in units of ALIGN elements so their alignment is visible to the compiler.
    a_lead = a_lead_vecs * ALIGN
    b_lead = b_lead_vecs * ALIGN
    c_lead = c_lead_vecs * ALIGN
    split_stride = tl.cast(split_vecs, tl.int64) * ALIGN  # tl.cast: a value of 1 arrives as a constexpr int
    m0 = pid_m * BLOCK_M
    n0 = pid_n * BLOCK_N
    k0 = split * k_tiles_per_split * BLOCK_K
    k_end = tl.minimum(K, k0 + k_tiles_per_split * BLOCK_K)

    rm = tl.arange(0, BLOCK_M)
    rn = tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    # Remaining extents bound the tail masks; the launcher made every contiguous one a multiple of ALIGN.
    m_left = M - m0
    n_left = tl.multiple_of(N - n0, ALIGN)
    if not A_K_CONTIGUOUS:
        m_left = tl.multiple_of(m_left, ALIGN)
    a_ptrs = (a + element_offset(m0.to(tl.int64), k0.to(tl.int64), a_lead, A_K_CONTIGUOUS)
              + element_offset(rm[:, None], rk[None, :], a_lead, A_K_CONTIGUOUS))
    b_ptrs = (b + element_offset(k0.to(tl.int64), n0.to(tl.int64), b_lead, B_N_CONTIGUOUS)
              + element_offset(rk[:, None], rn[None, :], b_lead, B_N_CONTIGUOUS))
    a_step = element_offset(0, BLOCK_K, a_lead, A_K_CONTIGUOUS)
    b_step = element_offset(BLOCK_K, 0, b_lead, B_N_CONTIGUOUS)

    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in tl.range(k0, k_end, BLOCK_K):
        k_left = k_end - k
        if A_K_CONTIGUOUS or not B_N_CONTIGUOUS:
            k_left = tl.multiple_of(k_left, ALIGN)
        a_tile = tl.load(a_ptrs, mask=(rm[:, None] < m_left) & (rk[None, :] < k_left), other=0.0)
        b_tile = tl.load(b_ptrs, mask=(rk[:, None] < k_left) & (rn[None, :] < n_left), other=0.0)
        acc = tl.dot(a_tile, b_tile, acc, input_precision=PRECISION)
        a_ptrs += a_step
        b_ptrs += b_step

    c_ptrs = (c + split * split_stride + m0.to(tl.int64) * c_lead + n0
              + rm[:, None] * c_lead + rn[None, :])
    tl.store(c_ptrs, acc.to(c.dtype.element_ty), mask=(rm[:, None] < m_left) & (rn[None, :] < n_left))


@triton.jit
def sum_splits_kernel(partials, c, numel, SPLIT_K: tl.constexpr, BLOCK: tl.constexpr):
    """c = sum over the SPLIT_K fp32 partial results (each `numel` long), cast to c's dtype. A program per BLOCK
    elements. Bound: bytes, SPLIT_K fp32 reads and one write of c's dtype per element (the split's price)."""
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < numel
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for s in tl.static_range(SPLIT_K):
        acc += tl.load(partials + s * numel + offs, mask=mask, other=0.0)
    tl.store(c + offs, acc.to(c.dtype.element_ty), mask=mask)


@triton.jit
def matmul_persistent_tma_kernel(a_desc, b_desc, c_desc, M, N, K,
                                 A_K_CONTIGUOUS: tl.constexpr, B_N_CONTIGUOUS: tl.constexpr,
                                 BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                                 GROUP_M: tl.constexpr, NUM_PROGRAMS: tl.constexpr, PRECISION: tl.constexpr):
    """Program p computes tiles p, p + NUM_PROGRAMS, ...; TMA zero-fills loads and clips stores at the edges.

    A column-major operand is described as its transpose (inner dim contiguous, as TMA needs) and
    its tile transposed back in shared memory before the dot.
    """
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    k_tiles = tl.cdiv(K, BLOCK_K)
    # flatten: the pipeliner overlaps the next tile's first loads with this tile's epilogue.
    for tile_id in tl.range(tl.program_id(0), num_pid_m * num_pid_n, NUM_PROGRAMS, flatten=True):
        pid_m, pid_n = grouped_tile(tile_id, num_pid_m, num_pid_n, GROUP_M)
        off_m = pid_m * BLOCK_M
        off_n = pid_n * BLOCK_N
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for ki in range(k_tiles):
            off_k = ki * BLOCK_K
            if A_K_CONTIGUOUS:
                a_tile = a_desc.load([off_m, off_k])
            else:
                a_tile = a_desc.load([off_k, off_m]).T
            if B_N_CONTIGUOUS:
                b_tile = b_desc.load([off_k, off_n])
            else:
                b_tile = b_desc.load([off_n, off_k]).T
            acc = tl.dot(a_tile, b_tile, acc, input_precision=PRECISION)
        c_desc.store([off_m, off_n], acc.to(c_desc.dtype))


# ---------------------------------------------------------------------------------------------
# Host side: operand layouts, kernel checks, launchers, autotuning.


class Layout(NamedTuple):
    inner_is_last: bool  # True: row-major (last dim contiguous); False: column-major
    lead_stride: int     # elements between consecutive rows (row-major) or columns (column-major)


def operand_layout(t: torch.Tensor) -> Layout | None:
    """How a 2-D operand sits in memory, or None when neither dim has unit stride.

    A size-1 dim's stride is never used to step, so it is replaced by a 16-byte aligned stand-in
    (torch gives size-1 dims arbitrary strides).
    """
    rows, cols = t.shape
    s_row, s_col = t.stride()
    vec = TMA_ALIGN_BYTES // t.element_size()
    if s_col == 1 or cols == 1:
        return Layout(True, s_row if rows > 1 else triton.cdiv(cols, vec) * vec)
    if s_row == 1 or rows == 1:
        return Layout(False, s_col if cols > 1 else triton.cdiv(rows, vec) * vec)
    return None


def kernels() -> list[str]:
    return list(KERNELS)


def precision(dtype: torch.dtype, allow_tf32: bool) -> str:
    return "tf32" if dtype == torch.float32 and allow_tf32 else "ieee"


def _tma_problem(a: torch.Tensor, b: torch.Tensor) -> str | None:
    """Why TMA descriptors cannot describe a, b and the (M, N) output, or None when they can."""
    if a.is_cuda and torch.cuda.get_device_capability(a.device)[0] < 9:
        major, minor = torch.cuda.get_device_capability(a.device)
        return f"needs sm_90+ (TMA), this GPU is sm_{major}{minor}"
    if not a.is_cuda and not triton_interpreting():
        return "needs a CUDA tensor"
    size = a.element_size()
    for name, t in (("a", a), ("b", b)):
        layout = operand_layout(t)
        if layout is None:
            return f"operand {name} has no unit-stride dim (strides {tuple(t.stride())}); TMA needs one"
        if (layout.lead_stride * size) % TMA_ALIGN_BYTES:
            return (f"operand {name}'s leading stride {layout.lead_stride} x {size} bytes is not a multiple of "
                    f"{TMA_ALIGN_BYTES} bytes (TMA)")
        if t.data_ptr() % TMA_ALIGN_BYTES:
            return f"operand {name}'s data pointer is not {TMA_ALIGN_BYTES}-byte aligned (TMA)"
    n = b.shape[1]
    if (n * size) % TMA_ALIGN_BYTES:
        return f"the output's row stride N={n} x {size} bytes is not a multiple of {TMA_ALIGN_BYTES} bytes (TMA)"
    return None


def check_kernel(kernel: str, a: torch.Tensor, b: torch.Tensor, allow_tf32: bool) -> None:
    """Raise ValueError saying why `kernel` cannot compute a @ b; return None when it can."""
    if kernel not in KERNELS:
        raise ValueError(f"unknown triton matmul kernel {kernel!r}; choose one of {kernels()}")
    if a.dtype not in SUPPORTED_DTYPES or b.dtype != a.dtype:
        raise ValueError(f"triton matmul kernel {kernel!r} supports {[str(d) for d in SUPPORTED_DTYPES]} "
                         f"with equal dtypes, got {a.dtype} and {b.dtype}")
    if kernel == "persistent_tma":
        problem = _tma_problem(a, b)
        if problem is not None:
            raise ValueError(f"triton matmul kernel 'persistent_tma' cannot run these operands: {problem}")


@functools.lru_cache(maxsize=None)
def _sm_count(device_index: int) -> int:
    return torch.cuda.get_device_properties(device_index).multi_processor_count


def _num_sms(t: torch.Tensor) -> int:
    """SMs of t's GPU; under the interpreter a stand-in of 4 so persistence and split-K still run."""
    return _sm_count(t.device.index if t.device.index is not None else torch.cuda.current_device()) if t.is_cuda else 4


def choose_kernel(a: torch.Tensor, b: torch.Tensor, allow_tf32: bool) -> str:
    """tiled off the GPU (the interpreter: nothing to time) and when TMA cannot run the operands; otherwise the
    faster of the two kernels, each at its tuned config, timed once per problem class like the configs. Neither
    wins everywhere: at 128x8192x8192 persistent_tma's 64x128 tile runs at 0.96 of cuBLAS against 0.81 for tiled's
    best in TILED_CONFIGS (128x128, split-K 2; a 6-stage 64x128 tile outside the space reached 0.88), at
    1024x1024x16384 tiled with split K runs at 0.91 against 0.85 (the sweep named at PERSISTENT_CONFIGS).
    Untimed (CUDA_PORTFOLIO_NO_TUNING=1): persistent_tma when there is at least one wave of big tiles."""
    a, b = _with_unit_stride(a), _with_unit_stride(b)
    if not a.is_cuda or _tma_problem(a, b) is not None:
        return "tiled"
    if tuning_off() or torch.cuda.is_current_stream_capturing():  # a capture times nothing: the rule, uncached
        big_tile = PERSISTENT_CONFIGS[0]
        tiles = triton.cdiv(a.shape[0], big_tile.block_m) * triton.cdiv(b.shape[1], big_tile.block_n)
        return "persistent_tma" if tiles >= _num_sms(a) else "tiled"
    key = _problem_class("auto", a, b, allow_tf32)
    if key not in _CHOSEN:
        out = torch.empty(a.shape[0], b.shape[1], device=a.device, dtype=a.dtype)
        _CHOSEN[key] = fastest(KERNELS, lambda kernel: _tuned_launch(kernel, a, b, out, allow_tf32), a.device,
                                  "matmul kernel")
    return _CHOSEN[key]


def _alignment(a: torch.Tensor, b: torch.Tensor, la: Layout, lb: Layout) -> int:
    """Largest vector width (elements, at most 16 bytes) dividing every leading stride and every
    extent that a tail mask runs along a contiguous dim."""
    m, k = a.shape
    n = b.shape[1]
    values = (la.lead_stride, lb.lead_stride, n, k if la.inner_is_last else m, n if lb.inner_is_last else k)
    align = TMA_ALIGN_BYTES // a.element_size()
    while align > 1 and any(v % align for v in values):
        align //= 2
    return align


def split_k_for(config: TileConfig, m: int, n: int, k: int, dtype: torch.dtype, num_sms: int) -> int:
    """Slices of K per output tile: enough programs to fill the SMs when there are few tiles."""
    tiles = triton.cdiv(m, config.block_m) * triton.cdiv(n, config.block_n)
    k_tiles = triton.cdiv(k, config.block_k(dtype))
    return max(1, min(num_sms // tiles, k_tiles // MIN_K_TILES_PER_SPLIT, MAX_SPLIT_K))


def launch_tiled(a: torch.Tensor, b: torch.Tensor, out: torch.Tensor, config: TileConfig, split_k: int,
                 allow_tf32: bool) -> None:
    """out = a @ b with the tiled kernel at a fixed config and split (tests and benchmarks pin these)."""
    m, k = a.shape
    n = b.shape[1]
    la, lb = operand_layout(a), operand_layout(b)
    align = _alignment(a, b, la, lb)
    block_k = config.block_k(a.dtype)
    k_tiles_per_split = triton.cdiv(triton.cdiv(k, block_k), split_k)
    split_k = triton.cdiv(k, k_tiles_per_split * block_k)  # no empty slices
    target = out if split_k == 1 else torch.empty((split_k, m, n), dtype=torch.float32, device=out.device)
    grid = (triton.cdiv(m, config.block_m) * triton.cdiv(n, config.block_n), split_k)
    matmul_tiled_kernel[grid](
        a, b, target, m, n, k, la.lead_stride // align, lb.lead_stride // align, n // align, m * n // align, k_tiles_per_split,
        A_K_CONTIGUOUS=la.inner_is_last, B_N_CONTIGUOUS=lb.inner_is_last, ALIGN=align,
        BLOCK_M=config.block_m, BLOCK_N=config.block_n, BLOCK_K=block_k, GROUP_M=config.group_m,
        PRECISION=precision(a.dtype, allow_tf32), num_warps=config.num_warps, num_stages=config.num_stages,
        **LAUNCH_OPTIONS)
    if split_k > 1:
        block = 1024
        sum_splits_kernel[(triton.cdiv(m * n, block),)](target, out, m * n, SPLIT_K=split_k, BLOCK=block,
                                                         **LAUNCH_OPTIONS)


def _descriptor(t: torch.Tensor, layout: Layout, block_rows: int, block_cols: int):
    """A TMA descriptor over t (row-major) or over t's transpose (column-major), inner dim last."""
    from triton.tools.tensor_descriptor import TensorDescriptor

    rows, cols = t.shape
    if layout.inner_is_last:
        return TensorDescriptor(t, [rows, cols], [layout.lead_stride, 1], [block_rows, block_cols])
    return TensorDescriptor(t, [cols, rows], [layout.lead_stride, 1], [block_cols, block_rows])


def launch_persistent_tma(a: torch.Tensor, b: torch.Tensor, out: torch.Tensor, config: TileConfig,
                          allow_tf32: bool) -> None:
    """out = a @ b with the persistent TMA kernel at a fixed config (check_kernel must have passed)."""
    m, k = a.shape
    n = b.shape[1]
    la, lb = operand_layout(a), operand_layout(b)
    block_k = config.block_k(a.dtype)
    a_desc = _descriptor(a, la, config.block_m, block_k)
    b_desc = _descriptor(b, lb, block_k, config.block_n)
    c_desc = _descriptor(out, operand_layout(out), config.block_m, config.block_n)
    programs = min(_num_sms(a), triton.cdiv(m, config.block_m) * triton.cdiv(n, config.block_n))
    matmul_persistent_tma_kernel[(programs,)](
        a_desc, b_desc, c_desc, m, n, k, A_K_CONTIGUOUS=la.inner_is_last, B_N_CONTIGUOUS=lb.inner_is_last,
        BLOCK_M=config.block_m, BLOCK_N=config.block_n, BLOCK_K=block_k, GROUP_M=config.group_m,
        NUM_PROGRAMS=programs, PRECISION=precision(a.dtype, allow_tf32), num_warps=config.num_warps,
        num_stages=config.num_stages, **LAUNCH_OPTIONS)


def _bucket(x: int) -> int:
    return triton.next_power_of_2(x)


_TUNED: dict = {}  # problem class -> TileConfig
_CHOSEN: dict = {}  # problem class -> kernel name (choose_kernel)


def _tuned_launch(kernel: str, a: torch.Tensor, b: torch.Tensor, out: torch.Tensor, allow_tf32: bool):
    """A zero-argument launch of `kernel` at the best config for this problem class.

    The class is (kernel, device, dtype, layouts, alignment, tf32, power-of-two buckets of M, N, K);
    its first call times every config (tuning.fastest: interleaved rounds of cold-L2 launches; it synchronizes)
    and caches the winner. Under the interpreter timing means nothing: the first config of the list is used,
    untried. With CUDA_PORTFOLIO_NO_TUNING=1 the first config that fits, for runs whose timing means nothing either (under
    compute-sanitizer, where the timing's repeated launches and cache flushes would dominate). Inside a CUDA-graph
    capture, where nothing can be timed or synchronized, the first config that fits is launched there (the one launch
    the graph records) and not cached, so the first call outside a capture tunes the class.
    """
    m, k = a.shape
    n = b.shape[1]
    num_sms = _num_sms(a)

    def launcher(config: TileConfig):
        if kernel == "tiled":
            split = split_k_for(config, m, n, k, a.dtype, num_sms)
            return lambda: launch_tiled(a, b, out, config, split, allow_tf32)
        return lambda: launch_persistent_tma(a, b, out, config, allow_tf32)

    configs = TILED_CONFIGS if kernel == "tiled" else PERSISTENT_CONFIGS
    if not a.is_cuda:
        return launcher(configs[0])
    key = _problem_class(kernel, a, b, allow_tf32)
    if key not in _TUNED:
        if torch.cuda.is_current_stream_capturing():
            first_that_fits(configs, launcher, "matmul tile config")  # the capture's one launch
            return lambda: None
        if tuning_off():
            _TUNED[key] = first_that_fits(configs, launcher, "matmul tile config")
        else:
            _TUNED[key] = fastest(configs, launcher, a.device, "matmul tile config")
    return launcher(_TUNED[key])


def _problem_class(kernel: str, a: torch.Tensor, b: torch.Tensor, allow_tf32: bool) -> tuple:
    m, k = a.shape
    n = b.shape[1]
    la, lb = operand_layout(a), operand_layout(b)
    return (kernel, a.device, a.dtype, la.inner_is_last, lb.inner_is_last, _alignment(a, b, la, lb), allow_tf32,
            _bucket(m), _bucket(n), _bucket(k))


def kernel_config(a: torch.Tensor, b: torch.Tensor, kernel: str, allow_tf32: bool) -> str | None:
    """The config the autotuner picked for this problem's class, as text (the benchmark records it);
    None before the class's first call, and under the interpreter (nothing is tuned there)."""
    a, b = _with_unit_stride(a), _with_unit_stride(b)
    config = _TUNED.get(_problem_class(kernel, a, b, allow_tf32))
    if config is None:
        return None
    m, k = a.shape
    split = split_k_for(config, m, b.shape[1], k, a.dtype, _num_sms(a)) if kernel == "tiled" else None
    return config_text(config, a.dtype, split)


def config_text(config: TileConfig, dtype: torch.dtype, split_k: int | None = None) -> str:
    """A config as the benchmark and the sweep print it, e.g. '128x64x64, 4 warps, 8 stages, group 8'."""
    text = (f"{config.block_m}x{config.block_n}x{config.block_k(dtype)}, {config.num_warps} warps, "
            f"{config.num_stages} stages, group {config.group_m}")
    return text if split_k is None else f"{text}, split-K {split_k}"


def _with_unit_stride(t: torch.Tensor) -> torch.Tensor:
    """The kernels take either layout; a view with no unit-stride dim needs a copy."""
    return t if operand_layout(t) is not None else t.contiguous()


def matmul(a: torch.Tensor, b: torch.Tensor, out: torch.Tensor, kernel: str, allow_tf32: bool) -> None:
    """out = a @ b for 2-D a (M, K), b (K, N) with any strides, out contiguous (M, N); M, N, K >= 1."""
    check_kernel(kernel, a, b, allow_tf32)
    _tuned_launch(kernel, _with_unit_stride(a), _with_unit_stride(b), out, allow_tf32)()


def aot_specs(dtype: torch.dtype):
    """Each kernel at a representative config (row-major operands, 16-byte aligned strides)."""
    from .aot import TRITON_DTYPES, AotSpec

    t = TRITON_DTYPES[dtype]
    config = TILED_CONFIGS[0]
    block_k = config.block_k(dtype)
    align = TMA_ALIGN_BYTES // dtype.itemsize
    tile = {"BLOCK_M": config.block_m, "BLOCK_N": config.block_n, "BLOCK_K": block_k, "GROUP_M": config.group_m,
            "PRECISION": precision(dtype, True)}
    tiled_signature = {"a": f"*{t}", "b": f"*{t}", "c": f"*{t}", "M": "i32", "N": "i32", "K": "i32",
                       "a_lead_vecs": "i32", "b_lead_vecs": "i32", "c_lead_vecs": "i32", "split_vecs": "i32",
                       "k_tiles_per_split": "i32", "A_K_CONTIGUOUS": "constexpr", "B_N_CONTIGUOUS": "constexpr",
                       "ALIGN": "constexpr", **{name: "constexpr" for name in tile}}
    options = {"num_warps": config.num_warps, "num_stages": config.num_stages}
    tiled = AotSpec("matmul_tiled_kernel", matmul_tiled_kernel, tiled_signature,
                    {"A_K_CONTIGUOUS": True, "B_N_CONTIGUOUS": True, "ALIGN": align, **tile}, options)
    desc = functools.partial("tensordesc<{}[{}, {}]>".format, t)
    persistent_signature = {"a_desc": desc(config.block_m, block_k), "b_desc": desc(block_k, config.block_n),
                            "c_desc": desc(config.block_m, config.block_n), "M": "i32", "N": "i32", "K": "i32",
                            "A_K_CONTIGUOUS": "constexpr", "B_N_CONTIGUOUS": "constexpr", "NUM_PROGRAMS": "constexpr",
                            **{name: "constexpr" for name in tile}}
    persistent = AotSpec("matmul_persistent_tma_kernel", matmul_persistent_tma_kernel, persistent_signature,
                         {"A_K_CONTIGUOUS": True, "B_N_CONTIGUOUS": True, "NUM_PROGRAMS": 132, **tile}, options)
    return [tiled, persistent]
