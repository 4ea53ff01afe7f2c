"""Shape presets and the --shapes / --dtype parsers (pure Python: usable without a GPU)."""
from __future__ import annotations

import torch

# Softmax rows x cols: short rows to 4M-column rows (the H200 baseline shapes, plus 2048x50257 and 4x4M).
SOFTMAX_FULL = [(4096, 4096), (16384, 1024), (65536, 256), (8192, 8192), (4096, 32768), (2048, 50257),
                (1024, 131072), (256, 262144), (32, 1048576), (4, 4194304)]
# One shape per softmax plan regime: short rows, medium rows, a vocabulary-sized odd row, few long rows.
SOFTMAX_QUICK = [(65536, 256), (4096, 4096), (2048, 50257), (32, 1048576)]
# Language-model logits: 4096 tokens over the vocabularies of common tokenizers (Llama 2 32000, GPT-2 50257 and its
# padded 50304, cl100k 100277, Llama 3 128256, Qwen2 151936). 50257 and 100277 are not whole 16-byte units in any
# dtype, so their rows take the EDGES paths; past 65536 columns Liger refuses.
SOFTMAX_VOCAB = [(4096, 32000), (4096, 50257), (4096, 50304), (4096, 100277), (4096, 128256), (4096, 151936)]

# GEMM M x N x K: square, flat-K, long-K (few output tiles), not tile multiples, skinny M.
MATMUL_FULL = [(4096, 4096, 4096), (8192, 8192, 8192), (16384, 16384, 1024), (1024, 1024, 16384),
               (4000, 3000, 2000), (128, 8192, 8192)]
MATMUL_QUICK = [(4096, 4096, 4096), (1024, 1024, 16384), (4000, 3000, 2000)]

PRESETS = {"softmax": {"quick": SOFTMAX_QUICK, "full": SOFTMAX_FULL, "vocab": SOFTMAX_VOCAB},
           "matmul": {"quick": MATMUL_QUICK, "full": MATMUL_FULL}}
PRESET_NAMES = tuple(dict.fromkeys(name for presets in PRESETS.values() for name in presets))
SHAPE_DIMS = {"softmax": 2, "matmul": 3}

DTYPES = {"float32": torch.float32, "fp32": torch.float32, "float16": torch.float16, "fp16": torch.float16,
          "half": torch.float16, "bfloat16": torch.bfloat16, "bf16": torch.bfloat16}
DEFAULT_DTYPES = {"softmax": [torch.float32, torch.bfloat16], "matmul": [torch.bfloat16, torch.float16]}


def parse_shape(text: str) -> tuple[int, ...]:
    """'4096x4096' -> (4096, 4096); every extent a positive integer."""
    parts = text.strip().lower().split("x")
    if not all(p.isdigit() for p in parts) or any(int(p) == 0 for p in parts):
        raise ValueError(f"bad shape {text!r}: expected positive integers joined by 'x', e.g. 4096x4096 or 4096x4096x4096")
    return tuple(int(p) for p in parts)


def shapes_for(op: str, spec: str) -> list[tuple[int, ...]]:
    """The shapes `op` runs for a --shapes value: a preset name (an op without that preset gets none), or a comma
    list in which MxN entries belong to softmax and MxNxK entries to matmul (an op may get none)."""
    if spec in PRESET_NAMES:
        return list(PRESETS[op].get(spec, ()))
    shapes = [parse_shape(item) for item in spec.split(",") if item.strip()]
    if not shapes:
        raise ValueError(f"--shapes {spec!r} names no shape")
    for shape in shapes:
        if len(shape) not in SHAPE_DIMS.values():
            raise ValueError(f"bad shape {'x'.join(map(str, shape))}: softmax takes MxN, matmul takes MxNxK")
    return [s for s in shapes if len(s) == SHAPE_DIMS[op]]


def parse_dtypes(spec: str | None, op: str) -> list[torch.dtype]:
    if spec is None:
        return list(DEFAULT_DTYPES[op])
    dtypes = []
    for name in spec.split(","):
        key = name.strip().lower()
        if key not in DTYPES:
            raise ValueError(f"unknown dtype {name!r}; choose from float32, float16, bfloat16 (or fp32, fp16, bf16)")
        if DTYPES[key] not in dtypes:
            dtypes.append(DTYPES[key])
    return dtypes


def shape_text(shape) -> str:
    return "x".join(str(s) for s in shape)
