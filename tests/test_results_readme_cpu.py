"""CPU tier: the README's H200 numbers are the committed results files' numbers.

The README's tables are `python -m cuda_portfolio.bench.report FILE --markdown` of results/h200/softmax.json,
matmul.json and matmul-ladder.json, pasted; its heading names the commits the files were measured on, and its
text quotes the copy ceiling, the A/A bands and the target counts of `python -m cuda_portfolio.bench.targets`.
A new preset that is committed without the README following it (or a README edited by hand) fails here."""
import json
import re
import unittest
from pathlib import Path

from cuda_portfolio.bench import report, targets
from cuda_portfolio.bench.schema import validate_results

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
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


if __name__ == "__main__":
    unittest.main()
