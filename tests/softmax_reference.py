"""Float64 reference for softmax backward and the scale its error is measured against.

Kept in the tests on purpose (the package has the same formulas in bench/softmax_cases.py for the
benchmark and scripts): the tests check the package against a reference it does not provide.
"""
import torch


def reference_grad(y: torch.Tensor, dy: torch.Tensor) -> torch.Tensor:
    y, dy = y.double(), dy.double()
    return y * (dy - (y * dy).sum(-1, keepdim=True))


def grad_scale(y: torch.Tensor, dy: torch.Tensor) -> float:
    """||y * dy|| + ||y * sum(y * dy)||: the size of the two terms the backward subtracts.

    Backward errors are divided by this, not by ||dx||: when one element holds most of a row's
    probability, dy - sum(y * dy) cancels, and even a correctly rounded fp32 computation lands far
    from float64 relative to ||dx|| (1% of random 1x7 rows beyond 1e-4, up to 1e-1). Relative to
    the terms, fp32 stays under 2e-7, so the fp32 tolerance can stay at 1e-5.
    """
    y, dy = y.double(), dy.double()
    return float((y * dy).norm() + (y * (y * dy).sum(-1, keepdim=True)).norm())
