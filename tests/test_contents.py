"""Each chapter is declared once (``src/lmcompanion/chapters/<name>/chapter.toml``, read by
:mod:`lmcompanion.contents`): every per-chapter list of the package, the book and the campaign is derived from the
declarations, and a hand-kept list of chapters anywhere else fails here."""

from __future__ import annotations

import ast
import shutil
from pathlib import Path

import pytest

from conftest import REPO
from lmcompanion import campaign, chapters, claims, contents, data, experiments, ledger, models, pages
from lmcompanion.errors import ConfigError

SRC = REPO / "src" / "lmcompanion"
DECLARED = contents.chapters()


def test_the_book_files_agree_with_the_declarations():
    assert contents.stale(REPO) == [], "`python -m lmcompanion contents --write` rewrites them"


def test_the_derived_tables_are_the_declared_ones():
    assert list(pages.CHAPTER_TITLES) == [c.name for c in DECLARED]
    assert experiments.CHAPTERS == contents.names()
    assert list(models.FAMILIES) == [getattr(models, m).__dict__[cfg].family for m, cfg, _ in contents.families()]
    assert campaign.FAMILY_CASES == contents.family_cases() and campaign.BENCH == contents.bench()
    assert list(chapters.modules()) == [c.name for c in DECLARED if (c.folder / "__init__.py").exists()]
    tier12 = [g for g in campaign.GROUPS if g.tier < 3]
    declared = sum((c.headline_priority is not None) + len(c.groups) for c in DECLARED)
    assert len(tier12) == declared


def _chapters_named(node: ast.AST, names: set[str]) -> set[str]:
    keys = node.keys if isinstance(node, ast.Dict) else node.elts
    return {
        k.value.split("/")[0]
        for k in keys
        if isinstance(k, ast.Constant) and isinstance(k.value, str) and k.value.split("/")[0] in names
    }


def hand_kept(root: Path, at_least: int) -> list[str]:
    """Literal lists, tuples, sets and dicts under ``root`` that name ``at_least`` chapters (or their experiments)."""
    names = set(contents.names())
    found = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.List, ast.Tuple, ast.Set, ast.Dict)):
                named = _chapters_named(node, names)
                if len(named) >= at_least:
                    found.append(f"{path.relative_to(root)}:{node.lineno} names {sorted(named)}")
    return found


def test_no_chapter_is_declared_twice():
    """The package and the notebooks name two chapters in no literal list (derive it from lmcompanion.contents);
    the tests keep no list of every chapter."""
    assert hand_kept(SRC, 2) == [] and hand_kept(REPO / "notebooks", 2) == []
    assert hand_kept(REPO / "tests", len(experiments.chapters())) == []


def test_the_scan_finds_a_hand_kept_list(tmp_path):
    (tmp_path / "m.py").write_text('TITLES = {"mixer": "Masked mixers", "hourglass": "Hourglass"}\n')
    (tmp_path / "n.py").write_text('ARMS = ("mixer/flat_d512", "mixer/llama_d512")\n')  # one chapter: fine
    assert hand_kept(tmp_path, 2) == ["m.py:1 names ['hourglass', 'mixer']"]


@pytest.mark.parametrize("chapter", DECLARED, ids=lambda c: c.name)
def test_every_chapter_has_the_one_shape(chapter):
    """A chapter with analyses is a package of the same files, exporting the same names; its declaration names its
    notebooks (every one there is, in order), its families and data kinds (those its experiments use)."""
    on_disk = sorted(p.stem for p in (REPO / "notebooks" / chapter.name).glob("*.py"))
    assert sorted(chapter.notebooks) == on_disk
    assert (REPO / "book" / chapter.name / "index.md").is_file()
    names = experiments.names(chapter.name) if chapter.name in experiments.chapters() else []
    families = {
        models.FAMILIES[experiments.config(n, "smoke").model.family][0].__module__.rpartition(".")[2] for n in names
    }
    brought = {m for c in DECLARED for m, _, _ in c.families}
    assert families <= brought, f"{chapter.name} trains families no chapter declares: {families - brought}"
    kinds = {experiments.config(n, "smoke").data.kind for n in names}
    assert kinds <= set(chapter.data) and set(chapter.data) <= set(data.KINDS), (kinds, chapter.data)
    folder = chapter.folder
    files = {p.name for p in folder.iterdir() if not p.name.startswith((".", "__pycache__"))}
    if "__init__.py" not in files:  # a declaration only: a chapter that trains and decides nothing (the prologue)
        assert files == {"chapter.toml"} and not names, sorted(files)
        return
    required = {"__init__.py", "chapter.toml", "rows.py", "claims.py", "analysis.py"}
    assert required <= files and files <= required | {"facts.py", "compute.py"}, sorted(files)
    module = chapters.modules()[chapter.name]
    for name in ("ROWS", "CLAIMS"):
        assert name in module.__all__, f"chapters.{chapter.name} exports no {name}"
    assert [r.text for r in module.ROWS] == [r.text for r in claims.rows(chapter.name)]
    assert module.CLAIMS == ledger.LEDGER.get(chapter.name, [])


def test_a_bad_declaration_names_its_file_and_key(tmp_path):
    path = tmp_path / "toy" / "chapter.toml"
    path.parent.mkdir()
    good = (REPO / "src/lmcompanion/chapters/hourglass/chapter.toml").read_text(encoding="utf-8")
    path.write_text(good.replace("order = ", "ordre = "), encoding="utf-8")
    with pytest.raises(ConfigError, match=r"toy/chapter\.toml.*'ordre'.*'order'"):
        contents.read(path)
    path.write_text(good.replace("notebooks = [", "notebooks = [3, "), encoding="utf-8")
    with pytest.raises(ConfigError, match="notebooks"):
        contents.read(path)
    assert contents.read(REPO / "src/lmcompanion/chapters/hourglass/chapter.toml").name == "hourglass"


def test_contents_write_repairs_a_stale_toc(tmp_path, monkeypatch):
    for rel in contents.SYNCED:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(REPO / rel, tmp_path / rel)
    (tmp_path / "_toc.yml").write_text("format: jb-book\n", encoding="utf-8")
    intro = (tmp_path / "book/intro.md").read_text(encoding="utf-8")
    (tmp_path / "book/intro.md").write_text(intro.replace("| Prologue |", "| Prolog |"), encoding="utf-8")
    assert contents.stale(tmp_path) == ["_toc.yml", "book/intro.md"]
    for rel in contents.stale(tmp_path):
        target = tmp_path / rel
        target.write_text(contents.expected(rel, target.read_text(encoding="utf-8")), encoding="utf-8")
    assert contents.stale(tmp_path) == []
