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
from datetime import datetime, timezone
from pathlib import Path

import nbformat

from . import chapters, ledger
from .config import PROFILES
from .verdicts import EXACT, FAILS, HOLDS, INCONCLUSIVE

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
    """A verdict cell: the verdict (with the scale it names), our effect and p."""
    notes = [f"effect {v['effect']}" if v.get("effect") else "", v.get("chance") or ""]
    notes = [n for n in notes if n]
    return f"{v['verdict']}" + (f" ({'; '.join(notes)})" if notes else "")


def _book_order(chapters) -> list[str]:
    """Chapter names in the book's order; chapters it does not list come last, by name."""
    order = list(CHAPTER_TITLES)
    return sorted(set(chapters), key=lambda c: (order.index(c) if c in order else len(order), c))


def scorecard(root: Path, prefix: str = "notebooks") -> str:
    """The scorecard page (MyST markdown) from the executed notebooks under ``root``."""
    rows = []
    for _, _, nb in executed_notebooks(root):
        rows += glued_verdicts(nb)
    profiles = [p for p in PROFILES if any(r["profile"] == p for r in rows)]
    chapters = _book_order({r["chapter"] for r in rows})
    lines = ["(scorecard)=", "# Scorecard", "",
             "Every claim of every chapter, with its verdict at each profile that has runs: the profile this book was "
             "built at, and any profile whose runs were recorded elsewhere and imported (see each chapter's verdict "
             "notebook for their provenance). Verdicts follow the prologue's [verdict rule](verdict-rule); a verdict reached "
             "from runs names the scale it was reached at (the profile, and the share of the write-up's training "
             "tokens one run saw there). Beside the write-up's numbers, each cell gives our effect and p: for a claim that holds or does not hold, the chance of that verdict if the claim's arms were "
             "equal; for an inconclusive one, the chance of a difference at least as large as ours in the claimed "
             "direction. This page is generated from the verdict "
             "tables of the executed notebooks: nothing on it is typed by hand. Every claim of the write-ups, "
             "tested here or not, is listed with the write-up's words in the [claims ledger](claims-ledger).", ""]
    if not rows:
        return "\n".join(lines + ["No verdict notebook has been executed in this build yet.", ""])
    lines += ["## Counts", "", "Claims about training (decided from runs, at the scale each verdict names) apart from "
              "the exact checks of our code (parameter counts, masks, agreement with a transcription, sampler checks).",
              "", "| chapter | profile | holds | does not hold | inconclusive | claims about training | "
              "exact checks of our code |", "|---|---|---:|---:|---:|---:|---|"]
    for chapter in chapters + ["all chapters"]:
        for profile in profiles:
            sel = [r for r in rows if r["profile"] == profile and (chapter == "all chapters" or r["chapter"] == chapter)]
            if sel:
                training = [r for r in sel if not is_check(r)]
                n = {o: sum(r["outcome"] == o for r in training) for o in (HOLDS, FAILS, INCONCLUSIVE)}
                name = CHAPTER_TITLES.get(chapter, chapter) if chapter != "all chapters" else "**all chapters**"
                lines.append(f"| {name} | `{profile}` | {n[HOLDS]} | {n[FAILS]} | {n[INCONCLUSIVE]} | {len(training)} | "
                             f"{_counts([r for r in sel if is_check(r)])} |")
    for chapter in chapters:
        sel = [r for r in rows if r["chapter"] == chapter]
        claims = list(dict.fromkeys((r["claim"], r["notebook"]) for r in sel))
        lines += ["", f"## {CHAPTER_TITLES.get(chapter, chapter)}", "",
                  "| claim | the write-up | " + " | ".join(f"`{p}`" for p in profiles) + " | decided in |",
                  "|---|---|" + "---|" * len(profiles) + "---|"]
        for claim, notebook in claims:
            cells, published = [], ""
            for p in profiles:
                hit = [r for r in sel if r["profile"] == p and r["claim"] == claim and r["notebook"] == notebook]
                cells.append(_md(_cell(hit[0])) if hit else "no runs")
                published = published or (hit[0].get("published") or "" if hit else "")
            link = f"{{doc}}`{notebook.split('/')[-1]} </{prefix}/{notebook}>`" if notebook else ""
            lines.append(f"| {claim.replace('|', '/')} | {_md(published)} | " + " | ".join(cells) + f" | {link} |")
    return "\n".join(lines) + "\n"


BADGE = {HOLDS: "bdg-success", FAILS: "bdg-danger", INCONCLUSIVE: "bdg-secondary"}  # sphinx-design's badge roles
WORD = {HOLDS: "holds", FAILS: "does not hold", INCONCLUSIVE: "inconclusive"}
WORDS = {HOLDS: "hold", FAILS: "do not hold", INCONCLUSIVE: "inconclusive"}  # of several rows


def own_verdicts(root: Path) -> list[dict]:
    """The glued verdict rows each notebook under ``root`` made at its own profile (not those of recorded runs)."""
    rows = []
    for _, _, nb in executed_notebooks(root):
        profile = (nb.metadata.get("lmcompanion") or {}).get("profile")
        rows += [r for r in glued_verdicts(nb) if profile is None or r["profile"] == profile]
    return rows


def is_check(row: dict) -> bool:
    """Whether a glued row checks our code (exact, or a sampler check) rather than a claim about training."""
    return bool(row.get("check")) or row.get("chance") == EXACT


def badge(outcome: str) -> str:
    return f"{{{BADGE[outcome]}}}`{WORD[outcome]}`"


def scale_of(row: dict) -> str:
    """The scale a row's verdict names ("`cpu` scale: 0.036% of the write-up's tokens"), or "" where it names none."""
    text = row["verdict"]
    word = INCONCLUSIVE.split(" at ")[0] if row["outcome"] == INCONCLUSIVE else row["outcome"]
    rest = text[len(word):] if text.startswith(word) else ""
    if not rest.startswith(" at `"):
        return ""
    return rest[len(" at "):].split(" (")[0]


def _counts(rows: list[dict]) -> str:
    n = {o: sum(r["outcome"] == o for r in rows) for o in (HOLDS, FAILS, INCONCLUSIVE)}
    return ", ".join(f"{n[o]} {(WORD if n[o] == 1 else WORDS)[o]}" for o in (HOLDS, FAILS, INCONCLUSIVE) if n[o]) or "none"


def summary(root: Path, chapter: str | None = None, prefix: str = "notebooks") -> str:
    """The one-screen summary at the top of the intro (``chapter=None``: a line per chapter) or of a chapter's landing
    page (its claims about training, each with its verdict as a coloured badge, the write-up's numbers beside ours,
    and the notebook that decides it), generated from the verdict rows the executed notebooks glued at their own
    profile. Counts keep the exact checks of our code (parameter counts, masks, sampler checks) apart from the
    claims about training, and say the scale those were decided at."""
    rows = [r for r in own_verdicts(root) if chapter is None or r["chapter"] == chapter]
    if not rows:
        return "*No verdict notebook of this chapter has been executed in this build yet.*\n"
    profiles = sorted({r["profile"] for r in rows}, key=lambda p: list(PROFILES).index(p) if p in PROFILES else len(PROFILES))
    training = [r for r in rows if not is_check(r)]
    checks = [r for r in rows if is_check(r)]
    scales = sorted({scale_of(r) for r in training} - {""})
    lines = [f"**At a glance** (generated from this build's runs at the {', '.join(f'`{p}`' for p in profiles)} "
             f"profile): {len(training)} claims about training: {_counts(training)}"
             + ((f", decided at {'; '.join(scales)}" if chapter is not None else
                 ", each decided at the scale its chapter's summary names") if scales else "")
             + f". {len(checks)} exact checks of our code: "
             f"{_counts(checks)}. A verdict far below the write-up's scale may change at its scale; every row with its "
             "numbers is on the {ref}`scorecard <scorecard>`.", ""]
    if chapter is None:
        chapters = _book_order({r["chapter"] for r in rows})
        lines += ["| chapter | " + " | ".join(f"claims about training: {badge(o)}" for o in (HOLDS, FAILS, INCONCLUSIVE))
                  + " | exact checks of our code |", "|---|---:|---:|---:|---|"]
        for c in chapters:
            tr = [r for r in training if r["chapter"] == c]
            ck = [r for r in checks if r["chapter"] == c]
            n = [sum(r["outcome"] == o for r in tr) for o in (HOLDS, FAILS, INCONCLUSIVE)]
            lines.append(f"| {{doc}}`{CHAPTER_TITLES.get(c, c)} </book/{c}/index>` | " + " | ".join(map(str, n)) + f" | {_counts(ck)} |")
        return "\n".join(lines) + "\n"
    lines += ["| claim | verdict | the write-up | ours (effect ± SE) | decided in |", "|---|---|---|---|---|"]
    for r in training:
        link = f"{{doc}}`{r['notebook'].split('/')[-1]} </{prefix}/{r['notebook']}>`" if r.get("notebook") else ""
        ours = r.get("effect") or r.get("ours") or ""
        lines.append(f"| {_md(r['claim'])} | {badge(r['outcome'])} | {_md(r.get('published') or '')} | {_md(ours)} "
                     f"| {link} |")
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
    chapter_names = _book_order(claims)
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


def _when(stamp: str) -> str:
    """An execution time stamp as a reader reads it: "2026-11-27 14:38 UTC" (the record keeps the full ISO form)."""
    try:
        t = datetime.fromisoformat(stamp).astimezone(timezone.utc)
    except (TypeError, ValueError):
        return stamp or ""
    return t.strftime("%Y-%m-%d %H:%M UTC")


def build_record(root: Path, prefix: str = "notebooks") -> str:
    """The build record page: every executed notebook's profile, execution time and commit, a table per chapter
    (five columns that fit the text column)."""
    lines = ["(build-record)=", "# How this book was built", "",
             "Every page below was executed by papermill in this build (`make book`); its profile and parameters, how "
             "long it took and the commit of the package that executed it are read from the executed notebook itself. "
             "Each page also ends with its own provenance table, and can be downloaded as an executed `.ipynb` from "
             "the download button at its top.", "",
             "`make book` trains every run the pages read before it executes them (`make runs`: several runs at a "
             "time, in as many worker processes), so a page's execution time below is the time to read its runs and "
             "draw its figures and tables, not to train them. The training time of a page's runs is in its "
             "provenance table.", ""]
    total = 0.0
    header = ["| page | profile and parameters | execution time (s) | commit | executed |", "|---|---|---:|---|---|"]
    chapter = None
    for docname, _, nb in executed_notebooks(root):
        name = CHAPTER_TITLES.get(docname.split("/")[0], docname.split("/")[0])
        if name != chapter:
            chapter = name
            lines += ["", f"## {name}", ""] + header
        meta = nb.metadata.get("lmcompanion")
        if not meta:
            lines.append(f"| {{doc}}`/{prefix}/{docname}` | (no record) | | | |")
            continue
        params = ", ".join(f"`{k}={v!r}`" for k, v in meta.get("parameters", {}).items() if k != "profile")
        commit = f"`{(meta.get('commit') or '?')[:10]}`" + (" (uncommitted changes)" if meta.get("dirty") else "")
        total += meta.get("duration_s", 0.0)
        lines.append(f"| {{doc}}`/{prefix}/{docname}` | `{meta.get('profile')}`" + (f", {params}" if params else "")
                     + f" | {meta.get('duration_s', 0):.0f} | {commit} | {_when(meta.get('executed', ''))} |")
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
    # the one-screen summaries the intro and the landing pages include
    (out / "summary.md").write_text(summary(root, None, prefix))
    for chapter in CHAPTER_TITLES:
        (out / f"summary-{chapter}.md").write_text(summary(root, chapter, prefix))
    return mark_stale(root, sources) if sources is not None else []


__all__ = ["build_record", "executed_notebooks", "glued_verdicts", "is_check", "ledger_page", "mark_stale",
           "own_verdicts", "registered_claims", "scale_of", "scorecard", "summary", "write_pages"]
