"""CPU tier: the README's H200 numbers are the committed results files' numbers, and every committed results file
has its row (its commit and command) in results/README.md.

The README's tables are `python -m cuda_portfolio.bench.report FILE --markdown` of results/h200/softmax.json,
matmul.json and matmul-ladder.json, pasted; its heading names the commits the files were measured on, and its
text quotes the copy ceiling, the A/A bands and the target counts of `python -m cuda_portfolio.bench.targets`.
A new preset that is committed without the README following it (or a README edited by hand) fails here."""
import fnmatch
import json
import re
import subprocess
import unittest
from pathlib import Path

from cuda_portfolio.bench import report, targets
from cuda_portfolio.bench.schema import validate_results

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
RESULTS_README = ROOT / "results" / "README.md"
PRESETS = ("softmax", "matmul", "matmul-ladder")


def load(name: str) -> dict:
    with open(ROOT / "results" / "h200" / f"{name}.json") as f:
        return json.load(f)


def readme_text() -> str:
    return README.read_text(encoding="utf-8")


def flowing(text: str) -> str:
    """The text with each run of whitespace as one space, so a quoted sentence matches across line breaks."""
    return re.sub(r"\s+", " ", text)


def aa_band(doc: dict) -> str:
    aa = report.aa_ratios(doc["records"])
    return f"{min(aa):.3f}-{max(aa):.3f}"


def target_counts(doc: dict) -> tuple[int, int]:
    found = targets.verdicts(doc)
    met = sum(v.met for v in found)
    return met, len(found) - met


class CommittedResultsReadmeTest(unittest.TestCase):
    def test_files_are_valid_and_from_clean_trees(self):
        for name in PRESETS:
            with self.subTest(name=name):
                doc = load(name)
                validate_results(doc)
                self.assertFalse(doc["env"]["git_dirty"], "a committed preset must come from a clean tree")

    def test_every_table_row_is_in_the_readme(self):
        lines = set(readme_text().splitlines())
        for name in PRESETS:
            rows = [line for line in report.render_markdown(load(name)).splitlines() if line.startswith("|")]
            self.assertGreater(len(rows), 2, name)
            missing = [row for row in rows if row not in lines]
            self.assertEqual(missing, [], f"{name}.json rows the README lacks (re-run report --markdown)")

    def test_results_heading_names_each_files_commit(self):
        heading = next(line for line in readme_text().splitlines() if line.startswith("## Results on the H200"))
        for name in PRESETS:
            with self.subTest(name=name):
                self.assertIn(load(name)["env"]["git_commit"], heading)

    def assertQuoted(self, phrase: str, text: str):
        self.assertTrue(phrase in text, f"the README does not say: {phrase!r}")

    def test_quoted_ceiling_bands_and_target_counts(self):
        text = flowing(readme_text())
        softmax, matmul, ladder = (load(name) for name in PRESETS)
        ceiling = softmax["ceilings"]["device_copy"]["tb_per_s"]
        self.assertQuoted(f"the copy ceiling ({ceiling:.2f} TB/s in the softmax run", text)
        self.assertQuoted(f"stayed within {aa_band(softmax)}x for softmax and {aa_band(matmul)}x for GEMM", text)
        met, not_met = target_counts(softmax)
        self.assertQuoted(f"softmax {met} met and {not_met} not met of {met + not_met} cells", text)
        met, not_met = target_counts(matmul)
        self.assertQuoted(f"GEMM {met} and {not_met} of {met + not_met}", text)
        met, not_met = target_counts(ladder)
        self.assertQuoted(f"the ladder {met} of {met + not_met}", text)


def expand_braces(name: str) -> list[str]:
    """`a-{x,y}.json` -> [a-x.json, a-y.json], as the shell expands it (nested and repeated groups too)."""
    m = re.search(r"\{([^{}]*)\}", name)
    if not m:
        return [name]
    return [out for alt in m.group(1).split(",") for out in expand_braces(name[:m.start()] + alt + name[m.end():])]


class ResultsRow:
    """The files one row of results/README.md names. Its cells quote them three ways: a path under results/
    (`h200/...` or `h100/...`, with braces and globs), a bare name of a file beside the H200's experiments
    (`x.patch`), and a shorthand for a sibling of a named file (`-compare.txt`, `.csv.gz`: the named file's stem with
    that end)."""

    def __init__(self, line: str):
        self.names, self.ends, self.first_cell_names = [], [], []
        for cell_index, cell in enumerate(line.strip("|").split(" | ")):
            for token in re.findall(r"`([^`]+)`", cell):
                if token.startswith(("h200/", "h100/")):
                    found = ["results/" + name for name in expand_braces(token)]
                elif re.fullmatch(r"[\w{},*][\w.{},*-]*\.[a-z{},.]+", token):
                    found = ["results/h200/experiments/" + name for name in expand_braces(token)]
                else:
                    if cell_index == 0 and re.fullmatch(r"[-.][\w.{},*-]+", token):
                        self.ends += expand_braces(token)
                    continue
                self.names += found
                if cell_index == 0:
                    self.first_cell_names += found

    def names_file(self, path: str) -> bool:
        if any(fnmatch.fnmatchcase(path, name) for name in self.names):
            return True
        return any(path.endswith(end) and len(path) > len(end) and name.startswith(path[:-len(end)])
                   for name in self.names for end in self.ends)


def results_rows() -> list[ResultsRow]:
    return [ResultsRow(line) for line in RESULTS_README.read_text(encoding="utf-8").splitlines()
            if line.startswith("| `")]


def committed_results_files() -> list[str]:
    listed = subprocess.run(["git", "ls-files", "results"], cwd=ROOT, capture_output=True, text=True, check=True)
    return [path for path in listed.stdout.split() if path != "results/README.md"]


@unittest.skipUnless((ROOT / ".git").exists(), "needs the git checkout (git ls-files lists the committed results)")
class ResultsReadmeRowsTest(unittest.TestCase):
    def test_every_committed_results_file_has_a_row(self):
        rows = results_rows()
        files = committed_results_files()
        self.assertGreater(len(files), 100)
        unnamed = [path for path in files if not any(row.names_file(path) for row in rows)]
        self.assertEqual(unnamed, [], "committed results files that no row of results/README.md names")

    def test_every_file_a_row_names_exists(self):
        files = committed_results_files()
        absent = []
        for row in results_rows():
            absent += [name for name in row.first_cell_names if not any(fnmatch.fnmatchcase(f, name) for f in files)]
            absent += [f"{row.names[0]} ... {end}" for end in row.ends
                       if not any(row.names_file(f) and f.endswith(end) for f in files)]
        self.assertEqual(absent, [], "files results/README.md names in its first column that are not committed")


if __name__ == "__main__":
    unittest.main()
