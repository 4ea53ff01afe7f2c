"""Masked elementwise copy over a (rows, cols) view: the first op wired through the Triton backend.

Plan: one program per (row, BLOCK columns) tile, flattened into one grid axis; masked loads and
stores on the column tail; 64-bit offsets. Bound: bytes (read + write once).
"""
import torch
import triton
import triton.language as tl

from . import LAUNCH_OPTIONS


@triton.jit
def copy_rows_kernel(src, dst, cols, src_row_stride, dst_row_stride, col_blocks, BLOCK: tl.constexpr):
    pid = tl.program_id(0).to(tl.int64)
    row = pid // col_blocks
    offs = (pid % col_blocks) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < cols
    values = tl.load(src + row * src_row_stride + offs, mask=mask)
    tl.store(dst + row * dst_row_stride + offs, values, mask=mask)


def copy_rows(src: torch.Tensor, dst: torch.Tensor, src_row_stride: int, dst_row_stride: int) -> None:
    rows, cols = src.shape
    block = min(4096, triton.next_power_of_2(cols))
    col_blocks = triton.cdiv(cols, block)
    copy_rows_kernel[(rows * col_blocks,)](src, dst, cols, src_row_stride, dst_row_stride, col_blocks, BLOCK=block,
                                           **LAUNCH_OPTIONS)


def aot_specs(dtype: torch.dtype):
    from .aot import TRITON_DTYPES, AotSpec

    t = TRITON_DTYPES[dtype]
    signature = {"src": f"*{t}", "dst": f"*{t}", "cols": "i32", "src_row_stride": "i64", "dst_row_stride": "i64",
                 "col_blocks": "i64", "BLOCK": "constexpr"}
    return [AotSpec("copy_rows_kernel", copy_rows_kernel, signature, {"BLOCK": 1024})]
