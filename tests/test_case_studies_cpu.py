"""CPU tier: docs/case-studies.md points only at things that exist: the perf-log sections its Sources paragraphs
quote start a heading of docs/perf-log.md, the results files it names are committed, and the code paths, links
and images it names are in the tree.

A case study is read long after it is written; a renamed kernel file, a results file that was never committed or a
perf-log heading edited away would leave the reader at a dead end, so each fails here."""
import fnmatch
import re
import unittest
from pathlib import Path

from tests.test_results_readme_cpu import committed_results_files, expand_braces

ROOT = Path(__file__).resolve().parent.parent
CASE_STUDIES = ROOT / "docs" / "case-studies.md"
PERF_LOG = ROOT / "docs" / "perf-log.md"
CODE_ROOTS = ("csrc/", "python/", "scripts/", "tests/", "docs/")


def case_studies_text() -> str:
    return CASE_STUDIES.read_text(encoding="utf-8")


def perf_log_headings() -> list[str]:
    lines = PERF_LOG.read_text(encoding="utf-8").splitlines()
    return [line.lstrip("#").strip() for line in lines if line.startswith("## ") or line.startswith("### ")]


class CaseStudiesReferencesTest(unittest.TestCase):
    def test_quoted_perf_log_sections_start_a_heading(self):
        sources = [p for p in case_studies_text().split("\n\n") if p.startswith("Sources:")]
        self.assertEqual(len(sources), len(re.findall(r"^## ", case_studies_text(), re.M)) - 1,
                         "one Sources paragraph per study")
        quoted = [q for p in sources for q in re.findall(r'"([^"]+)"', re.sub(r"\s+", " ", p))]
        self.assertGreater(len(quoted), 5)
        headings = perf_log_headings()
        missing = [q for q in quoted if not any(h.startswith(q) for h in headings)]
        self.assertEqual(missing, [], "quoted perf-log sections that start no heading of docs/perf-log.md")

    @unittest.skipUnless((ROOT / ".git").exists(), "needs the git checkout (git ls-files lists the committed results)")
    def test_results_files_are_committed(self):
        files = committed_results_files()
        named = [name for token in re.findall(r"`(results/[^`\s]+)`", case_studies_text())
                 for name in expand_braces(token)]
        self.assertGreater(len(named), 5)
        absent = [name for name in named if not any(fnmatch.fnmatchcase(f, name) for f in files)]
        self.assertEqual(absent, [], "results files docs/case-studies.md names that are not committed")

    def test_relative_links_and_images_exist(self):
        targets = [t for t in re.findall(r"\]\(([^)#\s]+)\)", case_studies_text()) if "://" not in t]
        self.assertGreater(len(targets), 3)
        absent = [t for t in targets if not (CASE_STUDIES.parent / t).resolve().exists()]
        self.assertEqual(absent, [], "links and images in docs/case-studies.md whose files do not exist")

    def test_contents_anchors_name_a_study(self):
        """The contents link to the studies by GitHub's heading anchors (lower case, punctuation dropped, spaces to
        hyphens); a retitled study would leave its link dead."""
        text = case_studies_text()
        slugs = {re.sub(r"[^\w\- ]", "", line[3:].strip().lower()).replace(" ", "-")
                 for line in text.splitlines() if line.startswith("## ")}
        anchors = re.findall(r"\]:? ?\(?#([^)\s]+)", text)
        self.assertEqual(len(anchors), len(slugs) - 1, "one contents link per study")
        self.assertEqual([a for a in anchors if a not in slugs], [], "contents links that name no study heading")

    def test_code_paths_exist(self):
        named = [token for token in re.findall(r"`([\w./{},*-]+)`", case_studies_text())
                 if token.startswith(CODE_ROOTS)]
        self.assertGreater(len(named), 3)
        absent = [name for token in named for name in expand_braces(token) if not list(ROOT.glob(name))]
        self.assertEqual(absent, [], "code paths docs/case-studies.md names that are not in the tree")


if __name__ == "__main__":
    unittest.main()
