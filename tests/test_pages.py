"""The generated pages: the scorecard and the build record come from the executed notebooks, and a page whose
source changed after it was executed says so."""

import shutil

import nbformat

from lmcompanion import pages

from conftest import REPO

REFS = REPO / "tests" / "nbval"


def test_the_scorecard_lists_every_chapter_s_verdicts_with_counts_and_links():
    text = pages.scorecard(REFS)
    assert "(scorecard)=" in text and "## Counts" in text
    for chapter in ("AR encoder–decoder", "DeepSight", "Formal encoder–decoder"):
        assert f"## {chapter}" in text
    assert "**all chapters**" in text and "| `smoke` |" in text
    assert "{doc}`01_embedding_loss </notebooks/ar_ed/01_embedding_loss>`" in text  # linked to the notebook that decides it
    rows = [line for line in text.splitlines() if line.startswith("| ") and "decided in" not in line]
    assert len(rows) > 30


def test_the_build_record_lists_every_executed_notebook():
    text = pages.build_record(REFS)
    for src in sorted((REPO / "notebooks").rglob("*.py")):
        doc = src.relative_to(REPO / "notebooks").with_suffix("")
        assert f"{{doc}}`/notebooks/{doc}`" in text
    assert "| `smoke` |" in text and "Total execution time" in text


def test_a_page_whose_source_changed_after_execution_says_so(tmp_path):
    out, src = tmp_path / "executed", tmp_path / "sources"
    shutil.copytree(REFS / "prologue", out / "prologue")
    (src / "prologue").mkdir(parents=True)
    source = (REPO / "notebooks" / "prologue" / "baseline.py").read_text()
    (src / "prologue" / "baseline.py").write_text(source)
    assert pages.mark_stale(out, src) == []  # current: no warning
    (src / "prologue" / "baseline.py").write_text(source + "\n# an edit\n")
    assert pages.mark_stale(out, src) == ["prologue/baseline"]
    nb = nbformat.read(out / "prologue" / "baseline.ipynb", as_version=4)
    assert "older version of its source" in nb.cells[0].source
    (src / "prologue" / "baseline.py").write_text(source)
    assert pages.mark_stale(out, src) == []  # re-executed or restored: the warning goes away
    assert "older version" not in nbformat.read(out / "prologue" / "baseline.ipynb", as_version=4).cells[0].source
