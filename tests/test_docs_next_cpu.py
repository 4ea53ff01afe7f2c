"""CPU tier: every prepared patch in docs/next/ applies to the tree, alone or on top of another patch there (a
stacked one, as docs/next/README.md says), so does every undo patch in docs/next/parents/, and with nvcc on the PATH
the device code of each one's tree compiles; docs/next/README.md names each of them, and its order for the next device
session names only patches that are queued.

The next GPU session runs them through scripts/ab_patch.sh, which refuses a patch that does not apply; an edit to
the lines around a patch (even a comment) would otherwise cost that session its device time; so would a patch that
applies but no longer compiles (session 79's undo of 34ac7c4: a template the later held backward calls). Rebase a
failing patch with `git apply -3 docs/next/<patch>` on a clean tree, resolve, and write `git diff` back over it."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
import unittest
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from tests.test_tooling_cpu import load_script

ROOT = Path(__file__).resolve().parent.parent
NEXT = ROOT / "docs" / "next"
NVCC = shutil.which("nvcc")
DEVICE_DIRS = ("softmax", "gemm", "copy")  # csrc/ folders of device code; csrc/common/ reaches all three


def git(*args, env=None) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, env=env)


def applies(patch: Path, on_top_of: Path | None = None) -> bool:
    """`git apply --check` against HEAD's tree, after `on_top_of` when given (in a scratch index: the working
    tree is not touched)."""
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, GIT_INDEX_FILE=os.path.join(tmp, "index"))
        if git("read-tree", "HEAD", env=env).returncode != 0:
            return False
        if on_top_of is not None and git("apply", "--cached", str(on_top_of), env=env).returncode != 0:
            return False
        return git("apply", "--cached", "--check", str(patch), env=env).returncode == 0


def base_of(patch: Path, queued: list[Path]) -> Path | None:
    """The queued patch `patch` is stacked on, or None where it applies to HEAD alone."""
    if applies(patch):
        return None
    return next((base for base in queued if base != patch and applies(patch, base)), None)


def device_compile_failures(patch: Path, base: Path | None) -> list[str]:
    """Each csrc/<dir>/*.cu the patch reaches, compiled for sm_90a by scripts/inspect_kernel.py's compile_cuda, in
    HEAD's tree with `base` and `patch` applied; the nvcc errors of those that fail. Host-only files (bindings/, app/)
    need torch and pybind11 headers and are left to the device's build."""
    touched = [path for path in git("apply", "--numstat", str(patch)).stdout.split() if path.startswith("csrc/")]
    if base is not None:
        touched += [path for path in git("apply", "--numstat", str(base)).stdout.split() if path.startswith("csrc/")]
    dirs = {d for d in DEVICE_DIRS if any(path.startswith((f"csrc/{d}/", "csrc/common/")) for path in touched)}
    if not dirs:
        return []
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, GIT_INDEX_FILE=os.path.join(tmp, "index"))
        git("read-tree", "HEAD", env=env)
        for p in ([base] if base is not None else []) + [patch]:
            if git("apply", "--cached", str(p), env=env).returncode != 0:
                return [f"{p.name} does not apply"]
        tree = Path(tmp) / "tree"
        git("checkout-index", f"--prefix={tree}/", "--", *git("ls-files", "csrc", env=env).stdout.split(), env=env)
        sources = sorted(s for d in dirs for s in (tree / "csrc" / d).glob("*.cu"))
        out = Path(tmp) / "out"
        out.mkdir()
        inspect_kernel = load_script("inspect_kernel.py")

        def compile_one(source: Path) -> str | None:
            if inspect_kernel.compile_cuda(NVCC, source, "sm_90a", "90a", out, csrc=tree / "csrc"):
                return None
            errors = [line for line in (out / f"{source.stem}.ptxas.txt").read_text().splitlines() if "error" in line]
            return f"{source.relative_to(tree)}: {' | '.join(errors[:3])}"

        with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
            return [failure for failure in pool.map(compile_one, sources) if failure]


@unittest.skipUnless((ROOT / ".git").exists(), "needs the git checkout (the patches apply to HEAD's tree)")
class QueuedPatchesTest(unittest.TestCase):
    def test_every_patch_applies_alone_or_on_another_queued_patch(self):
        patches = sorted(NEXT.glob("*.patch"))
        stale = [p.name for p in patches
                 if not applies(p) and not any(applies(p, base) for base in patches if base != p)]
        self.assertEqual(stale, [], "docs/next patches that no longer apply: rebase them (this file's docstring)")

    def test_every_undo_patch_applies(self):
        """docs/next/parents/: patches that turn a merged change back into its parent's code on HEAD, so an A/B of
        the merge against its parent needs no git history where it runs (the device copies the tree only)."""
        stale = [p.name for p in sorted((NEXT / "parents").glob("*.patch")) if not applies(p)]
        self.assertEqual(stale, [], "docs/next/parents patches that no longer apply: rebase them")

    @unittest.skipUnless(NVCC, "nvcc not on PATH: the patches' device code is compiled where nvcc is")
    def test_every_patch_compiles(self):
        queued = sorted(NEXT.glob("*.patch"))
        for patch in queued + sorted((NEXT / "parents").glob("*.patch")):
            with self.subTest(patch=patch.name):
                base = base_of(patch, queued) if patch in queued else None
                self.assertEqual(device_compile_failures(patch, base), [], f"{patch.name} applies but does not compile")

    def test_the_readme_names_every_patch(self):
        readme = (NEXT / "README.md").read_text(encoding="utf-8")
        patches = sorted(NEXT.glob("*.patch")) + sorted((NEXT / "parents").glob("*.patch"))
        unnamed = [p.name for p in patches if f"`{p.name}`" not in readme and f"`parents/{p.name}`" not in readme]
        self.assertEqual(unnamed, [], "docs/next patches that docs/next/README.md does not describe")

    def test_the_device_plan_names_only_queued_patches(self):
        """The README's order for the next device session (its numbered list) runs patches that are in docs/next."""
        readme = (NEXT / "README.md").read_text(encoding="utf-8")
        plan = re.search(r"^The order for the next device session.*?\n\n", readme, re.S | re.M)
        self.assertIsNotNone(plan, "docs/next/README.md has no device plan")
        named = set(re.findall(r"`([\w.-]+\.patch)`", plan.group(0)))
        self.assertEqual(sorted(n for n in named if not (NEXT / n).exists()), [],
                         "the device plan names patches that are not queued in docs/next")


if __name__ == "__main__":
    unittest.main()
