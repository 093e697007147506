"""Every quotation of a write-up is the write-up's words.

How the book marks a quotation (so that this test is precise, and the book's own words are never mistaken for one):

- a ledger claim's ``says`` is a quotation as a whole (``lmcompanion.ledger``), unless it is marked ``quoted=False``
  (a formula or pseudocode line transcribed);
- in a chapter's prose (its landing page ``book/<chapter>/index.md`` and its notebooks' markdown cells) and in what
  its pages print (the smoke references' markdown outputs), a quotation stands between double quotes, straight or
  typographic; the book's own terms are set in *italics* or `code`, never in quotes;
- in a verdict row's texts (claim, published, ours, effect, verdict), a quotation stands between double or single
  quotes (a row's text is a Python string, and 'nearly identical' reads better there than an escaped double quote).

A quotation is found when its words are a substring of the chapter's write-up after both are normalised: whitespace
collapsed, typographic quotes, dashes and ellipses made plain, markdown links reduced to their text (a table's
"(config)" links dropped) and emphasis to its words, and math delimiters ($) removed. "..." in a quotation marks
words left out: its pieces must occur in order. A quotation may start with a capital where the write-up's sentence
continues, or the other way round, and may end with a full stop the write-up's sentence goes on past.
"""

from __future__ import annotations

import ast
import json
import re
import unicodedata
from pathlib import Path

import pytest

from lmcompanion import contents, pages

from conftest import REPO, SHARED

SEEDS = SHARED / "seeds"
WRITE_UP = {c.name: c.seed for c in contents.chapters() if c.seed}  # declared; the seeds' README maps them
LEDGER = pages.registered_claims()
PLAIN = {"“": '"', "”": '"', "‘": "'", "’": "'", "–": "-", "—": "-", "−": "-", "…": "...", "\u00a0": " "}
DOUBLE = re.compile(r'"([^"\n]+)"')
SINGLE = re.compile(r"(?<![\w'])'([^'\n]+?)'(?!\w)")


def normalise(text: str) -> str:
    text = unicodedata.normalize("NFC", text)
    for fancy, plain in PLAIN.items():
        text = text.replace(fancy, plain)
    text = re.sub(r"\[\(config\)\]\([^)]*\)", "", text)  # the tables' "(config)" links
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)  # a link: its text
    text = re.sub(r"\*{1,3}(?=\S)(.+?)(?<=\S)\*{1,3}", r"\1", text)  # emphasis: its words
    return re.sub(r"\s+", " ", text.replace("$", "")).strip()


def _write_up(chapter: str) -> str:
    path = next(SEEDS.glob(f"{WRITE_UP[chapter]}_*.txt"), None)
    assert path is not None, (
        f"the write-up {WRITE_UP[chapter]}_*.txt is not in {SEEDS}: clone the repository beside shared/, or set "
        "LMC_DATA_DIR to shared/data"
    )
    return normalise(path.read_text())


def found(quote: str, text: str) -> bool:
    """Whether ``quote`` (its pieces between "..." in order) is in the normalised write-up ``text``."""
    q = normalise(quote).rstrip(".,;: ")
    pieces = [p.strip() for p in q.split("...") if p.strip()]
    if not pieces:
        return True
    first = pieces[0]
    for start in {first, first[:1].swapcase() + first[1:]}:
        pos, ok = 0, True
        for piece in [start] + pieces[1:]:
            i = text.find(piece, pos)
            if i < 0:
                ok = False
                break
            pos = i + len(piece)
        if ok:
            return True
    return False


def _prose(path: Path) -> str:
    """A page's markdown (a notebook's markdown cells), without code fences and code spans."""
    if path.suffix == ".md":
        text = path.read_text()
    else:
        cells, on = [], False
        for line in path.read_text().splitlines():
            if line.startswith("# %%"):
                on = "[markdown]" in line
            elif on and line.startswith("#"):
                cells.append(line[2:] if line.startswith("# ") else line[1:])
        text = "\n".join(cells)
    text = re.sub(r"```.*?```", " ", text, flags=re.S)
    return re.sub(r"`[^`\n]*`", " ", text)


def _outputs(chapter: str) -> tuple[list[str], list[dict]]:
    """The markdown its smoke references print, and the verdict rows they glue."""
    texts, rows = [], []
    for path in sorted((REPO / "tests" / "nbval" / chapter).glob("*.ipynb")):
        for cell in json.loads(path.read_text())["cells"]:
            for out in cell.get("outputs", []):
                data = out.get("data", {})
                if out.get("metadata", {}).get("scrapbook", {}).get("name", "").startswith("verdicts:"):
                    rows += json.loads(ast.literal_eval(data[pages.GLUE_MIME]))
                elif "text/markdown" in data:
                    texts.append("".join(data["text/markdown"]))
    return texts, rows


CHAPTERS = sorted(LEDGER)


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_every_ledger_quotation_is_the_write_ups_words(chapter):
    text = _write_up(chapter)
    wrong = [c.says for c in LEDGER[chapter] if c.quoted and not found(c.says, text)]
    assert not wrong, f"{chapter}: ledger quotations that are not in the write-up: {wrong}"


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_every_quotation_in_a_chapters_prose_is_the_write_ups_words(chapter):
    text = _write_up(chapter)
    pages_ = [REPO / "book" / chapter / "index.md", *sorted((REPO / "notebooks" / chapter).glob("*.py"))]
    wrong = [(p.name, q) for p in pages_ for q in DOUBLE.findall(normalise(_prose(p))) if not found(q, text)]
    assert not wrong, f"{chapter}: quoted words that are not the write-up's (a quotation is in double quotes): {wrong}"


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_every_quotation_on_a_chapters_pages_and_rows_is_the_write_ups_words(chapter):
    text = _write_up(chapter)
    texts, rows = _outputs(chapter)
    assert rows, f"{chapter}: its smoke references glue no verdict rows"
    wrong = {q for t in texts for q in DOUBLE.findall(normalise(t)) if not found(q, text)}
    for r in rows:
        for field in ("claim", "published", "ours", "effect", "verdict"):
            t = normalise(str(r.get(field) or ""))
            wrong |= {q for q in DOUBLE.findall(t) + SINGLE.findall(t) if not found(q, text)}
    assert not wrong, f"{chapter}: quoted words on its pages that are not the write-up's: {sorted(wrong)}"


def test_the_check_finds_a_misquotation():
    text = normalise(
        "The MSE embedding loss performed *better* than [cosine](#c) in validation loss but worse in "
        "train loss. It – mainly – helps."
    )
    assert found("the MSE embedding loss performed better than cosine", text)  # case of the first letter, emphasis
    assert found("performed better ... in validation loss.", text)  # words left out, a closing full stop
    assert found("It — mainly — helps", text)  # typography
    assert not found("performed much better than cosine", text)
    assert not found("in train loss ... performed better", text)  # the pieces in order
    assert DOUBLE.findall(normalise('the write-up\'s “no benefit” and "mainly"')) == ["no benefit", "mainly"]
    assert SINGLE.findall("the arms' runs are 'nearly identical' (the write-up's words)") == ["nearly identical"]
