"""Session 22's scratch experiment, kept so its numbers can be regenerated (output: the .txt of the same name;
docs/perf-log.md, Session 22). Not part of the package: Triton split_row forward with pass 1 through a TMA tensor
descriptor, pipelined with tl.range(num_stages), against the library's split_row, CUDA auto and torch's copy in
one process. fwd_split_row_tma_kernel repeats softmax_fwd_split_row_kernel (softmax.py at 96a6f58) on purpose, with
only pass 1 changed, so the comparison isolates it. It measured slower everywhere; nothing here is used."""

import torch
import triton
import triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor

import cuda_portfolio
from cuda_portfolio.triton_kernels import softmax as ts
from cuda_portfolio.triton_kernels.softmax import (_take_ticket, _job_chunk, _fold_tile, _exp, _arrive_and_wait,
                                                    _leave, _normalize_span_reversed, FLT_MAX)


@triton.jit
def _online_max_sum_tma(x_desc, row, start, stop, BLOCK_N: tl.constexpr, THREADS: tl.constexpr,
                        STAGES: tl.constexpr, V: tl.constexpr):
    T: tl.constexpr = min(THREADS, BLOCK_N // V)
    A: tl.constexpr = BLOCK_N // (T * V)
    m = tl.full([T], -FLT_MAX, tl.float32)
    s = tl.zeros([T], tl.float32)
    full_stop = start + (stop - start) // BLOCK_N * BLOCK_N
    for tile in tl.range(start, full_stop, BLOCK_N, num_stages=STAGES):
        x = tl.reshape(x_desc.load([row, tile]), [BLOCK_N])
        m, s = _fold_tile(x, m, s, A, T, V)
    if full_stop < stop:
        col = full_stop + tl.arange(0, BLOCK_N)
        x = tl.reshape(x_desc.load([row, full_stop]), [BLOCK_N]).to(tl.float32)
        x = tl.where(col < stop, x, float("-inf"))
        m, s = _fold_tile(x, m, s, A, T, V)
    m_all = tl.max(m, axis=0)
    s_all = tl.sum(s * _exp(m - m_all), axis=0)
    return m_all, s_all


@triton.jit
def fwd_split_row_tma_kernel(x_desc, x_ptr, y_ptr, max_ptr, sum_ptr, counters_ptr, cols, x_row_stride, y_row_stride,
                             chunks, chunk_cols, jobs, BLOCK_N: tl.constexpr, CHUNKS_P2: tl.constexpr,
                             THREADS: tl.constexpr, STAGES: tl.constexpr):
    V: tl.constexpr = 128 // x_ptr.dtype.element_ty.primitive_bitwidth
    job = _take_ticket(counters_ptr)
    while job < jobs:
        row, start, stop = _job_chunk(job, chunks, chunk_cols, cols)
        x_row = x_ptr + row * x_row_stride
        y_row = y_ptr + row * y_row_stride
        chunk_max, chunk_sum = _online_max_sum_tma(x_desc, row.to(tl.int32), start, stop, BLOCK_N, THREADS, STAGES, V)
        tl.store(max_ptr + job, chunk_max)
        tl.store(sum_ptr + job, chunk_sum)
        _arrive_and_wait(counters_ptr + 2 + row, chunks)
        part = tl.arange(0, CHUNKS_P2)
        part_max = tl.load(max_ptr + row * chunks + part, mask=part < chunks, other=float("-inf"),
                           cache_modifier=".cg")
        part_sum = tl.load(sum_ptr + row * chunks + part, mask=part < chunks, other=0.0, cache_modifier=".cg")
        row_max = tl.max(part_max, axis=0)
        row_sum = tl.sum(part_sum * _exp(part_max - row_max), axis=0)
        _normalize_span_reversed(x_row, y_row, start, stop, row_max, 1.0 / row_sum, BLOCK_N, False)
        job = _take_ticket(counters_ptr)
    _leave(counters_ptr, jobs, chunks)


def launch_tma(x2d, y2d, stages, per_sm, block_n=None, warps=None):
    rows, cols = x2d.shape
    base = ts.launch_config("split_row", x2d.dtype, triton.next_power_of_2(cols), "fwd", True)
    config = base._replace(per_sm=per_sm, maxnreg=ts._register_share(base.num_warps, per_sm))
    if block_n:
        config = config._replace(block_n=block_n)
    if warps:
        config = config._replace(num_warps=warps, maxnreg=ts._register_share(warps, per_sm))
    chunks, chunk_cols, programs = ts._split_geometry(rows, cols, x2d.element_size(), config, x2d.device)
    counters = ts._counters(rows, x2d.device)
    part_max = torch.empty(rows * chunks, dtype=torch.float32, device=x2d.device)
    part_sum = torch.empty(rows * chunks, dtype=torch.float32, device=x2d.device)
    desc = TensorDescriptor.from_tensor(x2d, [1, config.block_n])
    fwd_split_row_tma_kernel[(programs,)](
        desc, x2d, y2d, part_max, part_sum, counters, cols, x2d.stride(0), y2d.stride(0), chunks, chunk_cols,
        rows * chunks, BLOCK_N=config.block_n, CHUNKS_P2=triton.next_power_of_2(chunks),
        THREADS=32 * config.num_warps, STAGES=stages, num_warps=config.num_warps, maxnreg=config.maxnreg)
    return config, chunks, chunk_cols, programs


def graph_time_us(fn_for, xs, ys, reps=5):
    """Median over reps of a graph replay of len(xs) launches cycling the copies (cold L2), per launch."""
    for x, y in zip(xs, ys):
        fn_for(x, y)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(4):
            for x, y in zip(xs, ys):
                fn_for(x, y)
    times = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record(); g.replay(); b.record(); torch.cuda.synchronize()
        times.append(a.elapsed_time(b) * 1000 / (4 * len(xs)))
    times.sort()
    return times[len(times) // 2]


def main():
    shapes = [(1024, 131072), (256, 262144), (32, 1 << 20), (4, 1 << 22)]
    variants = [(3, 1), (4, 1), (6, 1), (3, 2), (4, 2), (2, 3)]
    for dtype in (torch.float32, torch.bfloat16):
        for rows, cols in shapes:
            nbytes = rows * cols * dtype.itemsize
            k = max(1, -(-(160 << 20) // nbytes))
            xs = [torch.randn(rows, cols, device="cuda", dtype=dtype) * 3 for _ in range(k)]
            ys = [torch.empty_like(x) for x in xs]
            ref = torch.softmax(xs[0].double(), -1)
            t_copy = graph_time_us(lambda x, y: y.copy_(x), xs, ys)
            line = [f"{str(dtype)[6:]:8s} {rows}x{cols}: copy {t_copy:7.1f} us"]
            for name, fn in (("lib", lambda x, y: cuda_portfolio.softmax(x, backend="triton", plan="split_row")),
                             ("cuda", lambda x, y: cuda_portfolio.softmax(x, backend="cuda", plan="auto"))):
                t = graph_time_us(fn, xs, ys)
                line.append(f"{name} {t_copy / t:.3f}")
            for stages, per_sm in variants:
                ys[0].fill_(float("nan"))
                try:
                    config, chunks, chunk_cols, programs = launch_tma(xs[0], ys[0], stages, per_sm)
                    torch.cuda.synchronize()
                    err = ((ys[0].double() - ref).norm() / ref.norm()).item()
                    t = graph_time_us(lambda x, y: launch_tma(x, y, stages, per_sm), xs, ys)
                    line.append(f"s{stages}p{per_sm} {t_copy / t:.3f}{'' if err < 1e-2 else ' WRONG %.1e' % err}")
                except Exception as e:  # noqa: BLE001 - scratch: report and go on
                    line.append(f"s{stages}p{per_sm} ERR {str(e).splitlines()[0][:80]}")
            print("  ".join(line), flush=True)
            del xs, ys


if __name__ == "__main__":
    main()
