"""A small training run through cuda_portfolio: a two-layer MLP classifier whose matmuls and
softmax are ours (forward AND backward), on synthetic data, compared step by step with the same
model in plain PyTorch.

    python examples/train_classifier.py                      # GPU, backend auto
    python examples/train_classifier.py --backend triton --dtype bf16 --steps 200
    TRITON_INTERPRET=1 python examples/train_classifier.py --device cpu --tiny   # no GPU

The loss is -mean(log p[target]) with p = cp.softmax(logits); gradients flow through
cp.softmax's and cp.matmul's custom backward kernels. A fifth of the labels are random, so the
loss cannot reach zero (where any two runs would agree). The script prints both losses every few
steps and exits non-zero if, at any step, ours drifts from the PyTorch twin by more than the dtype
allows, or if it did not train.
"""
from __future__ import annotations

import argparse
import sys

import torch

import cuda_portfolio as cp

DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}
# Relative loss difference allowed at every step (ours vs the PyTorch twin, same init and data).
DRIFT = {torch.float32: 1e-3, torch.bfloat16: 5e-2, torch.float16: 2e-2}


LABEL_NOISE = 0.2  # fraction of samples whose label is drawn at random


def make_data(n: int, features: int, classes: int, device, generator):
    """Gaussian blobs: class c is centred on a random point; labels are what we learn, LABEL_NOISE
    of them replaced by random ones."""
    centres = torch.randn(classes, features, generator=generator)
    labels = torch.randint(0, classes, (n,), generator=generator)
    x = centres[labels] + torch.randn(n, features, generator=generator)
    noisy = torch.rand(n, generator=generator) < LABEL_NOISE
    labels[noisy] = torch.randint(0, classes, (int(noisy.sum()),), generator=generator)
    return x.to(device), labels.to(device)


def init_weights(features: int, hidden: int, classes: int, generator):
    w1 = torch.randn(features, hidden, generator=generator) / features**0.5
    w2 = torch.randn(hidden, classes, generator=generator) / hidden**0.5
    return w1, w2


def loss_ours(x, labels, w1, w2, backend):
    h = torch.relu(cp.matmul(x, w1, backend=backend))
    p = cp.softmax(cp.matmul(h, w2, backend=backend), dim=-1, backend=backend)
    return -torch.log(p.gather(1, labels[:, None]).float().clamp_min(1e-30)).mean()


def loss_torch(x, labels, w1, w2):
    h = torch.relu(x @ w1)
    p = torch.softmax(h @ w2, dim=-1)
    return -torch.log(p.gather(1, labels[:, None]).float().clamp_min(1e-30)).mean()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--backend", default="auto", choices=("auto", "cuda", "triton"))
    parser.add_argument("--dtype", default="fp32", choices=DTYPES)
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--lr", type=float, default=0.5)
    parser.add_argument("--tiny", action="store_true", help="96 samples, 16 features, 32 hidden, 5 classes: for the CPU interpreter")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    dtype = DTYPES[args.dtype]
    n, features, hidden, classes = (96, 16, 32, 5) if args.tiny else (8192, 256, 1024, 50)

    generator = torch.Generator().manual_seed(args.seed)
    x, labels = make_data(n, features, classes, args.device, generator)
    x = x.to(dtype)
    w1, w2 = (w.to(args.device, dtype) for w in init_weights(features, hidden, classes, generator))
    ours = [w.clone().requires_grad_() for w in (w1, w2)]
    twin = [w.clone().requires_grad_() for w in (w1, w2)]

    worst = 0.0  # largest relative loss difference over the steps
    for step in range(args.steps + 1):
        l_ours = loss_ours(x, labels, *ours, args.backend)
        l_twin = loss_torch(x, labels, *twin)
        worst = max(worst, abs(l_ours.item() - l_twin.item()) / max(abs(l_twin.item()), 1e-12))
        if step % max(1, args.steps // 10) == 0 or step == args.steps:
            print(f"step {step:4d}  loss ours {l_ours.item():.4f}  torch {l_twin.item():.4f}")
        if step == args.steps:
            break
        for loss, params in ((l_ours, ours), (l_twin, twin)):
            grads = torch.autograd.grad(loss, params)
            with torch.no_grad():
                for p, g in zip(params, grads):
                    p -= args.lr * g

    first = loss_torch(x, labels, w1, w2).item()
    print(f"final loss ours {l_ours.item():.4f} vs torch {l_twin.item():.4f}, started at {first:.4f}; "
          f"largest relative difference over the steps {worst:.1e} (allowed {DRIFT[dtype]:.0e})")
    if worst > DRIFT[dtype] or not l_ours.item() < first:
        print("FAILED: ours did not train like the PyTorch twin", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
