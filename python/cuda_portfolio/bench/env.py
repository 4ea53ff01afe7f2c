"""The env block of a results file: what ran, where, from which commit, timed how."""
from __future__ import annotations

import datetime
import os
import shutil
import subprocess
import sys
from pathlib import Path

import torch

COMMIT_ENV, DIRTY_ENV = "CUDA_PORTFOLIO_GIT_COMMIT", "CUDA_PORTFOLIO_GIT_DIRTY"
_REPO = Path(__file__).resolve().parents[3]


def _run(cmd: list[str], cwd=None) -> str | None:
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=30, cwd=cwd)
    except (OSError, subprocess.SubprocessError):
        return None
    return r.stdout.strip() if r.returncode == 0 else None


def git_state() -> tuple[str | None, bool | None]:
    """(commit, dirty). CUDA_PORTFOLIO_GIT_COMMIT (and CUDA_PORTFOLIO_GIT_DIRTY=0/1) win when set, for
    copies of the tree without .git; otherwise git is asked (also for a tree owned by another user)."""
    if os.environ.get(COMMIT_ENV):
        dirty = os.environ.get(DIRTY_ENV)
        return os.environ[COMMIT_ENV], (dirty == "1") if dirty in ("0", "1") else None
    repo = _REPO if (_REPO / "pyproject.toml").exists() else None  # an editable install: the source tree
    commit = _run(["git", "-c", "safe.directory=*", "rev-parse", "HEAD"], cwd=repo)
    if commit is None:
        return None, None
    status = _run(["git", "-c", "safe.directory=*", "status", "--porcelain", "--untracked-files=no"], cwd=repo)
    return commit, (bool(status) if status is not None else None)


def nvcc_version() -> str | None:
    if shutil.which("nvcc") is None:
        return None
    out = _run(["nvcc", "--version"])
    return out.splitlines()[-1] if out else None


def driver_version() -> str | None:
    if shutil.which("nvidia-smi") is None:
        return None
    out = _run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"])
    return out.splitlines()[0].strip() if out else None


def triton_version() -> str | None:
    try:
        import triton
    except ImportError:
        return None
    return triton.__version__


def liger_version() -> str | None:
    try:
        from importlib.metadata import PackageNotFoundError, version
        return version("liger-kernel")
    except (ImportError, PackageNotFoundError):
        return None


def gpu_uuid(props) -> str | None:
    """The GPU's UUID without nvidia-smi's "GPU-" prefix: which GPU of a pool ran a file."""
    uuid = getattr(props, "uuid", None)
    return str(uuid).removeprefix("GPU-") if uuid is not None else None


def env_block(method: str, method_reason: str, command: str) -> dict:
    device = torch.cuda.current_device()
    props = torch.cuda.get_device_properties(device)
    commit, dirty = git_state()
    return {
        "gpu": props.name,
        "gpu_uuid": gpu_uuid(props),
        "sm_count": props.multi_processor_count,
        "compute_capability": f"{props.major}.{props.minor}",
        "l2_bytes": int(getattr(props, "L2_cache_size", 0)) or None,
        "memory_bytes": props.total_memory,
        "driver": driver_version(),
        "cuda": torch.version.cuda,
        "torch": torch.__version__,
        "triton": triton_version(),
        "liger_kernel": liger_version(),
        "nvcc": nvcc_version(),
        "python": sys.version.split()[0],
        "git_commit": commit,
        "git_dirty": dirty,
        "allow_tf32": bool(torch.backends.cuda.matmul.allow_tf32),
        "timing_method": method,
        "timing_method_reason": method_reason,
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "command": command,
    }
