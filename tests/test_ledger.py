"""The claims ledger: every registered claim of a write-up has a verdict row or a one-line reason, every row a claim
names is a row its chapter's notebooks show (in the smoke references), and the generated page lists them all."""

from __future__ import annotations

import json

import pytest
import yaml

from lmcompanion import ledger, pages
from lmcompanion.ledger import Claim

from conftest import REPO

REFS = REPO / "tests" / "nbval"
LEDGER = pages.registered_claims()  # imports every chapter module, which registers its claims


def _glued_claims(chapter: str) -> set[str]:
    """The claim texts of the verdict rows the chapter's smoke references glued (``verdicts:<profile>``)."""
    found = set()
    for path in sorted((REFS / chapter).glob("*.ipynb")):
        for cell in json.loads(path.read_text())["cells"]:
            for out in cell.get("outputs", []):
                name = out.get("metadata", {}).get("scrapbook", {}).get("name", "")
                data = out.get("data", {})
                if name.startswith("verdicts:") and pages.GLUE_MIME in data:
                    import ast

                    found |= {r["claim"] for r in json.loads(ast.literal_eval(data[pages.GLUE_MIME]))}
    return found


def test_a_claim_needs_exactly_one_of_a_row_or_a_one_line_reason():
    with pytest.raises(ValueError, match="exactly one"):
        Claim("mixer", "a sentence", "a section")
    with pytest.raises(ValueError, match="exactly one"):
        Claim("mixer", "a sentence", "a section", row="a row", reason="a reason")
    with pytest.raises(ValueError, match="one non-empty line"):
        Claim("mixer", "a sentence", "a section", reason="two\nlines")
    with pytest.raises(ValueError, match="quotes nothing"):
        Claim("mixer", " ", "a section", row="a row")


def test_registering_a_chapter_twice_or_under_another_name_is_refused():
    with pytest.raises(ValueError, match="registered twice"):
        ledger.register("mixer", [])
    with pytest.raises(ValueError, match="name another chapter"):
        ledger.register("not-a-chapter", [Claim("mixer", "a sentence", "a section", reason="a reason")])


def test_the_mixer_chapters_register_their_claims():
    assert {"mixer", "retrieval"} <= set(LEDGER)
    assert len(LEDGER["mixer"]) >= 60 and len(LEDGER["retrieval"]) >= 25


@pytest.mark.parametrize("chapter", sorted(LEDGER))
def test_every_registered_claim_has_a_row_or_a_reason(chapter):
    for c in LEDGER[chapter]:
        assert c.chapter == chapter
        assert (c.row is None) != (c.reason is None), c.says
        assert c.row is None or c.row.strip(), c.says
        assert c.reason is None or (c.reason.strip() and "\n" not in c.reason), c.says


@pytest.mark.parametrize("chapter", sorted(LEDGER))
def test_every_row_a_claim_names_is_shown_by_the_chapters_notebooks(chapter):
    assert (REFS / chapter).is_dir(), f"no smoke references for chapter {chapter!r}"
    shown = _glued_claims(chapter)
    missing = sorted({c.row for c in LEDGER[chapter] if c.row is not None} - shown)
    assert not missing, f"rows named by {chapter}'s ledger that no notebook of it glues: {missing}"


def test_the_ledger_page_lists_every_claim_with_its_verdict_or_its_reason():
    text = pages.ledger_page(REFS)
    assert text.startswith("(claims-ledger)=\n# Claims ledger")
    for chapter, claims in LEDGER.items():
        assert f"## {pages.CHAPTER_TITLES.get(chapter, chapter)}" in text
        for c in claims:
            assert pages._md(c.says) in text
            assert pages._md(c.row if c.row is not None else c.reason) in text
    table = [line for line in text.splitlines() if line.startswith("| ") and line[2:3].isdigit()]
    assert len(table) == sum(len(cs) for cs in LEDGER.values())
    assert not any("no row at this profile" in line for line in table)  # every named row is shown at smoke
    assert "{doc}`04_verdicts </notebooks/retrieval/04_verdicts>`" in text


def test_the_scorecard_links_to_the_ledger_and_the_book_lists_it():
    assert "[claims ledger](claims-ledger)" in pages.scorecard(REFS)
    toc = yaml.safe_load((REPO / "_toc.yml").read_text())
    files = [c["file"] for part in toc["parts"] for c in part["chapters"]]
    assert files.index("book/generated/claims") == files.index("book/generated/scorecard") + 1


def test_the_page_is_written_with_the_others(tmp_path):
    pages.write_pages(REFS, tmp_path)
    assert (tmp_path / "claims.md").read_text() == pages.ledger_page(REFS)


def test_a_ledger_is_checked_against_its_chapter_s_rows(monkeypatch):
    """claims.register_ledger refuses a claim naming no row of the chapter, and a row of the write-up's that no claim
    names (the book's own rows, ``extension``, and the chapter's ``unnamed`` need none)."""
    from lmcompanion import claims

    monkeypatch.setattr(claims, "ROWS", {})
    monkeypatch.setattr(ledger, "LEDGER", {})
    claims.register(
        "probe",
        [claims.Row("the write-up's row", "01", None), claims.Row("the book's own row", "01", None, extension=True)],
    )
    named = Claim("probe", "a sentence", "a section", row="the write-up's row")
    with pytest.raises(KeyError, match="does not declare"):
        claims.register_ledger("probe", [named, Claim("probe", "another", "a section", row="no such row")])
    with pytest.raises(KeyError, match="no ledger claim names"):
        claims.register_ledger("probe", [Claim("probe", "a sentence", "a section", reason="not tested")])
    claims.register_ledger(
        "probe", [Claim("probe", "a sentence", "a section", reason="not tested")], unnamed=("the write-up's row",)
    )
    assert ledger.LEDGER["probe"][0].reason == "not tested"
