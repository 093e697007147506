"""Pages generated in the build from the executed notebooks: the scorecard, the claims ledger and the build record.

``python -m lmcompanion pages NOTEBOOKS_DIR OUT_DIR`` (``make book`` runs it after executing the notebooks):

- ``scorecard.md``: every claim of every chapter with its verdict at each profile that has runs (the build's own,
  and recorded ones), linked to the notebook that decides it, with counts per chapter and per verdict at the top.
  The rows are the ones each verdict notebook showed and glued (``nb.show_verdicts``); nothing is typed by hand.
- ``claims.md``: the claims ledger: every claim of every write-up registered with :mod:`lmcompanion.ledger` (by the
  chapter modules under ``lmcompanion.chapters``, all imported here), grouped by chapter in the write-up's order,
  each with the write-up's words and where they are, and either the verdict of the row that tests it at each
  profile with runs (read from the glued rows, as the scorecard's) or the one-line reason it is not tested.
- ``build.md``: every executed notebook with its profile, parameters, execution time, and the commit that made it.
- A notebook whose source changed after its outputs were made gets a warning at the top of its page.
"""

from __future__ import annotations

import ast
import hashlib
import importlib
import json
import pkgutil
from pathlib import Path

import nbformat

from . import chapters, ledger
from .config import PROFILES
from .verdicts import FAILS, HOLDS, INCONCLUSIVE

GLUE_MIME = "application/papermill.record/text/plain"
STALE_TAG = "lmcompanion-stale-outputs"
CHAPTER_TITLES = {"prologue": "Prologue", "formal_ed": "Formal encoder–decoder", "ar_ed": "AR encoder–decoder",
                  "deepsight": "DeepSight", "mixer": "Masked mixers (language modelling)",
                  "retrieval": "Masked mixers (retrieval)", "hourglass": "Efficient hierarchical transformer"}


def executed_notebooks(root: Path) -> list[tuple[str, Path, nbformat.NotebookNode]]:
    """(docname, path, notebook) of every executed notebook under ``root`` (docname: path without suffix)."""
    out = []
    for path in sorted(Path(root).rglob("*.ipynb")):
        if ".ipynb_checkpoints" in path.parts or path.name.endswith(".failed.ipynb") or path.name.startswith("."):
            continue
        out.append((str(path.relative_to(root).with_suffix("")), path, nbformat.read(path, as_version=4)))
    return out


def glued_verdicts(nb) -> list[dict]:
    rows = []
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            name = out.get("metadata", {}).get("scrapbook", {}).get("name", "")
            if name.startswith("verdicts:") and GLUE_MIME in out.get("data", {}):
                rows += json.loads(ast.literal_eval(out["data"][GLUE_MIME]))
    return rows


def _cell(v: dict) -> str:
    chance = v.get("chance") or ""
    return f"{v['verdict']}" + (f" ({chance})" if chance else "")


def scorecard(root: Path, prefix: str = "notebooks") -> str:
    """The scorecard page (MyST markdown) from the executed notebooks under ``root``."""
    rows = []
    for _, _, nb in executed_notebooks(root):
        rows += glued_verdicts(nb)
    profiles = [p for p in PROFILES if any(r["profile"] == p for r in rows)]
    order = list(CHAPTER_TITLES)  # the book's order; chapters it does not list come last, by name
    chapters = sorted(dict.fromkeys(r["chapter"] for r in rows),
                      key=lambda c: (order.index(c) if c in order else len(order), c))
    lines = ["(scorecard)=", "# Scorecard", "",
             "Every claim of every chapter, with its verdict at each profile that has runs: the profile this book was "
             "built at, and any profile whose runs were recorded elsewhere and imported (see each chapter's verdict "
             "notebook for their provenance). Verdicts follow the prologue's [verdict rule](verdict-rule); each cell "
             "gives p: for a claim that holds or does not hold, the chance of that verdict if the claim's arms were "
             "equal; for an inconclusive one, the chance of a difference at least as large as ours in the claimed "
             "direction. This page is generated from the verdict "
             "tables of the executed notebooks: nothing on it is typed by hand. Every claim of the write-ups, "
             "tested here or not, is listed with the write-up's words in the [claims ledger](claims-ledger).", ""]
    if not rows:
        return "\n".join(lines + ["No verdict notebook has been executed in this build yet.", ""])
    lines += ["## Counts", "", "| chapter | profile | holds | does not hold | inconclusive | claims |",
              "|---|---|---:|---:|---:|---:|"]
    for chapter in chapters + ["all chapters"]:
        for profile in profiles:
            sel = [r for r in rows if r["profile"] == profile and (chapter == "all chapters" or r["chapter"] == chapter)]
            if sel:
                n = {o: sum(r["outcome"] == o for r in sel) for o in (HOLDS, FAILS, INCONCLUSIVE)}
                name = CHAPTER_TITLES.get(chapter, chapter) if chapter != "all chapters" else "**all chapters**"
                lines.append(f"| {name} | `{profile}` | {n[HOLDS]} | {n[FAILS]} | {n[INCONCLUSIVE]} | {len(sel)} |")
    for chapter in chapters:
        sel = [r for r in rows if r["chapter"] == chapter]
        claims = list(dict.fromkeys((r["claim"], r["notebook"]) for r in sel))
        lines += ["", f"## {CHAPTER_TITLES.get(chapter, chapter)}", "",
                  "| claim | " + " | ".join(f"`{p}`" for p in profiles) + " | decided in |",
                  "|---|" + "---|" * len(profiles) + "---|"]
        for claim, notebook in claims:
            cells = []
            for p in profiles:
                hit = [r for r in sel if r["profile"] == p and r["claim"] == claim and r["notebook"] == notebook]
                cells.append(_cell(hit[0]) if hit else "no runs")
            link = f"{{doc}}`{notebook.split('/')[-1]} </{prefix}/{notebook}>`" if notebook else ""
            lines.append(f"| {claim.replace('|', '/')} | " + " | ".join(cells) + f" | {link} |")
    return "\n".join(lines) + "\n"


def registered_claims() -> dict[str, list[ledger.Claim]]:
    """The claims every chapter registers (:data:`lmcompanion.ledger.LEDGER`), after importing every module of
    ``lmcompanion.chapters`` (a chapter registers its claims when its module is imported)."""
    for module in pkgutil.walk_packages(chapters.__path__, chapters.__name__ + "."):
        importlib.import_module(module.name)
    return ledger.LEDGER


def _md(text: str) -> str:
    """A table cell: one line, its pipes escaped."""
    return " ".join(text.split()).replace("|", "\\|")


def ledger_page(root: Path, prefix: str = "notebooks") -> str:
    """The claims ledger page (MyST markdown): every registered claim of every chapter with its row's verdict at each
    profile that has runs (from the executed notebooks under ``root``) or its reason."""
    claims = registered_claims()
    rows = [r for _, _, nb in executed_notebooks(root) for r in glued_verdicts(nb)]
    profiles = [p for p in PROFILES if any(r["profile"] == p for r in rows)]
    order = list(CHAPTER_TITLES)
    chapter_names = sorted(claims, key=lambda c: (order.index(c) if c in order else len(order), c))
    lines = ["(claims-ledger)=", "# Claims ledger", "",
             "Every claim of every write-up, in the write-up's order and words: either the verdict row that tests it, "
             "with that row's verdict at each profile this book has runs for (as on the {ref}`scorecard <scorecard>`), or "
             "one line saying why it is not tested. The chapters register their claims in the package "
             "(`lmcompanion.ledger`); this page is generated from that registry and the verdict tables of the "
             "executed notebooks. A claim may be tested by more than one row; then it is listed once per row.", ""]
    if not claims:
        return "\n".join(lines + ["No chapter has registered its claims yet.", ""])
    lines += ["| chapter | claims | tested by a row | not tested (with a reason) |", "|---|---:|---:|---:|"]
    for chapter in chapter_names:
        cs = claims[chapter]
        tested = sum(c.row is not None for c in cs)
        lines.append(f"| {CHAPTER_TITLES.get(chapter, chapter)} | {len(cs)} | {tested} | {len(cs) - tested} |")
    for chapter in chapter_names:
        lines += ["", f"## {CHAPTER_TITLES.get(chapter, chapter)}", "",
                  "| # | the write-up says | where | tested by | " + " | ".join(f"`{p}`" for p in profiles) + " |",
                  "|---:|---|---|---|" + "---|" * len(profiles)]
        mine = [r for r in rows if r["chapter"] == chapter]
        for i, c in enumerate(claims[chapter], start=1):
            if c.row is None:
                cells = ["not tested"] * len(profiles)
                tested_by = f"*not tested:* {_md(c.reason)}"
            else:
                hits = {p: [r for r in mine if r["profile"] == p and r["claim"] == c.row] for p in profiles}
                cells = [_cell(hits[p][0]) if hits[p] else "no row at this profile" for p in profiles]
                notebook = next((h[0]["notebook"] for h in hits.values() if h and h[0].get("notebook")), "")
                link = f" ({{doc}}`{notebook.split('/')[-1]} </{prefix}/{notebook}>`)" if notebook else ""
                tested_by = f"{_md(c.row)}{link}"
            lines.append(f"| {i} | {_md(c.says)} | {_md(c.where)} | {tested_by} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def build_record(root: Path, prefix: str = "notebooks") -> str:
    """The build record page: every executed notebook's profile, execution time and commit."""
    lines = ["(build-record)=", "# How this book was built", "",
             "Every page below was executed by papermill in this build (`make book`); its profile and parameters, how "
             "long it took and the commit of the package that executed it are read from the executed notebook itself. "
             "Each page also ends with its own provenance table, and can be downloaded as an executed `.ipynb` from "
             "the download button at its top.", "",
             "| chapter | page | profile | parameters | execution time (s) | commit | executed |",
             "|---|---|---|---|---:|---|---|"]
    total = 0.0
    for docname, _, nb in executed_notebooks(root):
        meta = nb.metadata.get("lmcompanion")
        chapter = CHAPTER_TITLES.get(docname.split("/")[0], "")
        if not meta:
            lines.append(f"| {chapter} | {{doc}}`/{prefix}/{docname}` | (no record) | | | | |")
            continue
        params = ", ".join(f"{k}={v!r}" for k, v in meta.get("parameters", {}).items() if k != "profile") or "defaults"
        commit = f"`{(meta.get('commit') or '?')[:10]}`" + (" (uncommitted changes)" if meta.get("dirty") else "")
        total += meta.get("duration_s", 0.0)
        lines.append(f"| {chapter} | {{doc}}`/{prefix}/{docname}` | `{meta.get('profile')}` | {params} | "
                     f"{meta.get('duration_s', 0):.0f} | {commit} | {meta.get('executed', '')} |")
    lines += ["", f"Total execution time of the pages: {total / 60:.1f} min (pages that ran at the same time count "
              "separately).", ""]
    return "\n".join(lines)


def mark_stale(root: Path, sources: Path) -> list[str]:
    """Put a warning at the top of every executed notebook whose source (under ``sources``) changed after its
    outputs were made; remove the warning from notebooks that are current. Returns the stale docnames."""
    stale = []
    for docname, path, nb in executed_notebooks(root):
        meta = nb.metadata.get("lmcompanion") or {}
        src = Path(sources) / f"{docname}.py"
        current = src.is_file() and hashlib.sha256(src.read_bytes()).hexdigest() == meta.get("source_sha256")
        had = [c for c in nb.cells if STALE_TAG in c.get("metadata", {}).get("tags", [])]
        nb.cells = [c for c in nb.cells if c not in had]
        if not current and meta:
            stale.append(docname)
            note = nbformat.v4.new_markdown_cell(
                ":::{warning}\nThe outputs on this page were made from an older version of its source (executed at "
                f"commit `{(meta.get('commit') or '?')[:10]}` on {meta.get('executed', '?')}). Re-run `make book` to "
                "regenerate them.\n:::", metadata={"tags": [STALE_TAG]})
            nb.cells.insert(0, note)
        if had or (not current and meta):
            nbformat.write(nb, path)
    return stale


def write_pages(root: Path, out: Path, sources: Path | None = None, prefix: str = "notebooks") -> list[str]:
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "scorecard.md").write_text(scorecard(root, prefix))
    (out / "claims.md").write_text(ledger_page(root, prefix))
    (out / "build.md").write_text(build_record(root, prefix))
    return mark_stale(root, sources) if sources is not None else []


__all__ = ["build_record", "executed_notebooks", "glued_verdicts", "ledger_page", "mark_stale", "registered_claims",
           "scorecard", "write_pages"]
