"""CPU tier: every prepared patch in docs/next/ applies to the tree, alone or on top of another patch there (a
stacked one, as docs/next/README.md says), so does every undo patch in docs/next/parents/, docs/next/README.md names
each of them, and its order for the next device session names only patches that are queued.

The next GPU session runs them through scripts/ab_patch.sh, which refuses a patch that does not apply; an edit to
the lines around a patch (even a comment) would otherwise cost that session its device time. Rebase a failing
patch with `git apply -3 docs/next/<patch>` on a clean tree, resolve, and write `git diff` back over it."""
from __future__ import annotations

import os
import re
import subprocess
import tempfile
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NEXT = ROOT / "docs" / "next"


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
