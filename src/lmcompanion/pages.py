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
- ``summary.md``, ``summary-<chapter>.md``: the one-screen summaries of the intro and the landing pages, and
  ``where-<chapter>.md``: which of a chapter's experiments leave out which profiles, and why (from the registry).
- A notebook whose source changed after its outputs were made gets a warning at the top of its page.
"""

from __future__ import annotations

import ast
import hashlib
import json
import math
import re
from datetime import datetime, timezone
from pathlib import Path
from typing import Sequence

import nbformat

from . import chapters, claims, contents, experiments, ledger, learning, paths, plots
from .chapters import scale as scale_
from .config import PROFILES
from .errors import LMCError
from .formats import count, number
from .stats import ALPHA, scipy_stats
from .verdicts import (
    CHECK,
    COMPUTED,
    COST,
    EXACT,
    percent,
    FAILS,
    HOLDS,
    INCONCLUSIVE,
    NOT_DECIDED,
    OUTCOMES,
    TRAINING,
    share_text,
    token_share,
)

GLUE_MIME = "application/papermill.record/text/plain"
STALE_TAG = "lmcompanion-stale-outputs"
CHAPTER_TITLES = contents.titles()  # as each chapter declares it, in the book's order


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
    """A verdict cell, short: the badge (its outcome, its scale, why it is not decided), then the effect and p, and the
    one-line reason where the learning gate overrides a decisive test. The standard text is said once, above."""
    evidence = " · ".join(
        x for x in (v.get("effect") or "", "" if v.get("chance") == EXACT else v.get("chance") or "") if x
    )
    why = override(v)
    return " ".join(x for x in (badge(v, v.get("profile")), _md(evidence), f"<br>{_md(why)}" if why else "") if x)


def _learned_text(v: dict) -> str:
    text = v.get("learned") or ""
    return f"learned: {text}" if text else ""


def _book_order(chapters) -> list[str]:
    """Chapter names in the book's order; chapters it does not list come last, by name."""
    order = list(CHAPTER_TITLES)
    return sorted(set(chapters), key=lambda c: (order.index(c) if c in order else len(order), c))


def legend() -> str:
    """The scorecard's standard text, said once: what each badge and each cell says."""
    return (
        f"**How to read a verdict.** Each badge says the outcome in words and the scale it was reached at: "
        f"{badge(HOLDS)} or {badge(FAILS)} where the chance of that verdict, were the claim's arms in truth equal, "
        f"is at most {ALPHA:.0%} (the prologue's [verdict rule](verdict-rule)); {badge(INCONCLUSIVE)} where it is "
        f"not; {badge(NOT_DECIDED)} where the scale cannot decide the claim, with the reason (an arm has not "
        "learned, its arms are not run at that profile, or run one seed); rows marked *computed* or *check of our "
        "code* are decided without runs. Beside the badge: the effect (the claimed-better arm's mean minus the "
        "other's, ± its standard error) and p (for a verdict that holds or does not hold, the chance of that "
        "verdict if the arms were equal; for an inconclusive one, of a difference at least as large as ours in the "
        "claimed direction). Where the learning gate overrides a test that alone would decide, a line says so and "
        "why. How far each arm learned is in the table of the page that decides the row."
    )


def _filter(outcomes: list[str]) -> list[str]:
    """The verdict filter (book/_static/verdict-filter.js shows only the table rows whose badge has the outcome
    chosen, and opens the chapters that hold one): a raw HTML block, inert without the script."""
    buttons = "".join(f'<button type="button" data-outcome="{BADGE[o]}">{WORD[o]}</button>' for o in outcomes)
    return [
        '<div class="lmc-filter" role="group" aria-label="Show only the rows with this verdict">',
        f'<span>Show:</span><button type="button" data-outcome="" aria-pressed="true">every row</button>{buttons}'
        "<output></output></div>",
        "",
    ]


def _fold(title: str, body: list[str]) -> list[str]:
    """``body`` folded under ``title`` (sphinx-design's dropdown: an HTML <details>)."""
    return [f":::{{dropdown}} {title}", ":class-container: lmc-fold", "", *body, "", ":::", ""]


def scorecard(root: Path, prefix: str = "notebooks") -> str:
    """The scorecard page (MyST markdown) from the executed notebooks under ``root``: the legend once, the counts,
    then each chapter's rows folded, one short cell per profile, filterable by verdict."""
    rows = []
    for _, _, nb in executed_notebooks(root):
        rows += glued_verdicts(nb)
    profiles = [p for p in PROFILES if any(r["profile"] == p for r in rows)]
    chapters = _book_order({r["chapter"] for r in rows})
    lines = [
        "(scorecard)=",
        "# Scorecard",
        "",
        "Every claim of every chapter, with its verdict at each profile that has runs: the profile this book was "
        "built at, and any profile whose runs were recorded elsewhere and imported (see each chapter's verdict "
        "notebook for their provenance). It is generated from the verdict tables of the executed notebooks: "
        "nothing on it is typed by hand. Every claim of the write-ups, tested here or not, is listed with the "
        "write-up's words in the [claims ledger](claims-ledger).",
        "",
        legend(),
        "",
    ]
    if not rows:
        return "\n".join(lines + ["No verdict notebook has been executed in this build yet.", ""])
    lines += _filter(list(OUTCOMES))
    lines += [
        "## Counts",
        "",
        "The write-ups' claims about what training reaches, by outcome at the scale each verdict "
        "names, and beside them the other rows: cost measured on the machine that made the runs, the write-ups' "
        "statements checked by computation, checks of our code, and the book's own claims beyond the "
        "write-ups.",
        "",
        "| chapter | profile | holds | does not hold | inconclusive | not decided | other rows |",
        "|---|---|---:|---:|---:|---:|---|",
    ]
    for chapter in chapters + ["all chapters"]:
        for profile in profiles:
            sel = [
                r for r in rows if r["profile"] == profile and (chapter == "all chapters" or r["chapter"] == chapter)
            ]
            if sel:
                n = _outcome_counts(claims_about_training(sel))
                name = CHAPTER_TITLES.get(chapter, chapter) if chapter != "all chapters" else "**all chapters**"
                lines.append(
                    f"| {name} | `{profile}` | " + " | ".join(str(n[o]) for o in OUTCOMES) + f" | {_other_rows(sel)} |"
                )
    for chapter in chapters:
        sel = [r for r in rows if r["chapter"] == chapter]
        claims = list(dict.fromkeys((r["claim"], r["notebook"]) for r in sel))
        table = [
            "| claim | the write-up | " + " | ".join(f"`{p}`" for p in profiles) + " | decided in |",
            "|---|---|" + "---|" * len(profiles) + "---|",
        ]
        for claim, notebook in claims:
            cells, published = [], ""
            for p in profiles:
                hit = [r for r in sel if r["profile"] == p and r["claim"] == claim and r["notebook"] == notebook]
                cells.append(_cell(hit[0]) if hit else "no runs")
                published = published or (hit[0].get("published") or "" if hit else "")
            link = f"{{doc}}`{notebook.split('/')[-1]} </{prefix}/{notebook}>`" if notebook else ""
            table.append(f"| {_md(claim)} | {_md(published)} | " + " | ".join(cells) + f" | {link} |")
        found = "; ".join(
            f"`{p}`: {_counts([r for r in sel if r['profile'] == p])}"
            for p in profiles
            if any(r["profile"] == p for r in sel)
        )
        lines += [
            "",
            f"## {CHAPTER_TITLES.get(chapter, chapter)}",
            "",
            *_fold(f"{plural(len(claims), 'row')} ({found})", table),
        ]
    return "\n".join(lines) + "\n"


# A verdict's badge: an HTML span whose class gives its colours (book/_static/custom.css; the page check measures their
# contrast) and whose data-outcome the scorecard's and the ledger's filter reads (book/_static/verdict-filter.js).
UNTESTED = "not tested"
BADGE = {HOLDS: "holds", FAILS: "fails", INCONCLUSIVE: "inconclusive", NOT_DECIDED: "undecided", UNTESTED: "untested"}
WORD = {
    HOLDS: "holds",
    FAILS: "does not hold",
    INCONCLUSIVE: "inconclusive",
    NOT_DECIDED: "not decided",
    UNTESTED: "not tested",
}
WORDS = {
    HOLDS: "hold",
    FAILS: "do not hold",
    INCONCLUSIVE: "inconclusive",
    NOT_DECIDED: "not decided",
    UNTESTED: "not tested",
}  # of several
GROUP_WORDS = {
    COST: "cost measured on the machine that made the runs",
    COMPUTED: "the write-up's statements checked by computation",
    CHECK: "checks of our code",
}
# Why a row is not decided, in a badge's few words, from the reason its verdict gives (lmcompanion.verdicts)
WHY = (
    ("not learned", "arm not learned"),
    ("not run at this profile", "not run at {profile}"),
    ("one seed", "one seed"),
    ("no runs", "no runs"),
)


def own_verdicts(root: Path) -> list[dict]:
    """The glued verdict rows each notebook under ``root`` made at its own profile (not those of recorded runs)."""
    rows = []
    for _, _, nb in executed_notebooks(root):
        profile = (nb.metadata.get("lmcompanion") or {}).get("profile")
        rows += [r for r in glued_verdicts(nb) if profile is None or r["profile"] == profile]
    return rows


def group_of(row: dict) -> str:
    """What a glued row is (:data:`lmcompanion.verdicts.KINDS`): its recorded group, or, for a row glued before
    rows had one, a check where it is exact or marked a check, else a claim about training."""
    return row.get("group") or (CHECK if row.get("check") or row.get("chance") == EXACT else TRAINING)


def is_check(row: dict) -> bool:
    """Whether a glued row is decided without runs (a check of our code, or a statement checked by computation)."""
    return group_of(row) in (CHECK, COMPUTED)


def claims_about_training(rows: list[dict]) -> list[dict]:
    """The write-ups' own claims about what training reaches (not the book's extensions)."""
    return [r for r in rows if group_of(r) == TRAINING and not r.get("extension")]


def plural(n: float, one: str, many: str | None = None) -> str:
    """ "1 claim", "3 claims", "0.55 claims" (a count with its noun in agreement; ``many``: an irregular plural)."""
    word = one if n == 1 else (many or f"{one}s")
    return f"{number(n) if isinstance(n, float) else count(n)} {word}"


def why_short(row: dict) -> str:
    """A not-decided row's reason in a badge's few words ("arm not learned"), "" for the other outcomes."""
    if row["outcome"] != NOT_DECIDED or "(" not in row["verdict"]:
        return ""
    for found, words in WHY:
        if found in row["verdict"]:
            return words.format(profile=row.get("profile", ""))
    return "see its row"


def badge(row: dict | str, profile: str | None = None) -> str:
    """A verdict's badge in words, with the scale where it has one: "holds at cpu", "not decided at cpu: arm not
    learned", "holds (computed)" for a row decided without runs, "not tested". ``row``: a glued row, or an outcome."""
    if isinstance(row, str):
        row = {"outcome": row, "verdict": row}
    outcome = row["outcome"]
    text = WORD[outcome]
    if outcome != UNTESTED and is_check(row):
        text += " (computed)" if group_of(row) == COMPUTED else " (check of our code)"
    elif profile:
        text += f" at {profile}"
    why = why_short(row)
    text += f": {why}" if why else ""
    return f'<span class="lmc-badge lmc-{BADGE[outcome]}" data-outcome="{BADGE[outcome]}">{text}</span>'


def p_value(chance: str | None) -> float | None:
    """The p of a row's "chance if equal" text ("p = 0.004", "p < 0.001"), None where it gives none."""
    m = re.match(r"p ([=<]) ([0-9.eE+-]+)", chance or "")
    return float(m.group(2)) if m else None


def _overridden(row: dict) -> str:
    """What a decisive test overridden by the learning gate would have said (an outcome), "" where the gate
    overrides nothing (the test was not decisive, or the row is decided)."""
    p = p_value(row.get("chance"))
    if row["outcome"] != NOT_DECIDED or "not learned" not in row["verdict"] or p is None or p > ALPHA:
        return ""
    return FAILS if ("against the claim" in row["verdict"] or "opposite" in (row.get("chance") or "")) else HOLDS


def override_short(row: dict) -> str:
    """The intro's form of :func:`override`, after the claim: what the test alone says and that the gate overrides
    it ("" where it overrides nothing); the chapter's page gives the arms' shortfall."""
    would = _overridden(row)
    return f" (the test alone says *{WORD[would]}*, {row['chance']}; the learning gate overrides it)" if would else ""


def override(row: dict) -> str:
    """One line where the learning gate overrides a decisive test: what the test alone would say and why the gate
    does not let it ("" where it does not override: the test was not decisive, or the row is decided)."""
    would = _overridden(row)
    if not would:
        return ""
    short = [a for a in (_arm_of(x) for x in row.get("arms") or []) if not a.learned]
    arms = "; ".join(_shortfall(a) for a in short)
    return (
        f"The test alone says *{WORD[would]}* ({row['chance']}), but the learning gate overrides it: {arms}, so "
        f"the numbers compared come from {'a model' if len(short) == 1 else 'models'} that learned little beyond "
        "which tokens are common."
    )


def _shortfall(arm: learning.Arm) -> str:
    """How far an arm that has not learned fell short of the gate, in words."""
    d = [x for x in arm.distances if math.isfinite(x)]
    if not d:
        return f"{arm.label} was not measured"
    if arm.kind == learning.ACCURACY:
        return (
            f"{arm.label} reaches {number(min(d))}× {arm.reference} in its worst seed (the gate asks "
            f"{number(learning.FACTOR)}× in every seed)"
        )
    return (
        f"{arm.label} ends {number(min(d))} nats below {arm.reference} in its worst seed (the gate asks "
        f"{number(learning.MARGIN)} in every seed)"
    )


def scale_of(row: dict) -> str:
    """The scale a row's verdict names ("`cpu` scale: 0.036% of the write-up's tokens"), or "" where it names none."""
    text = row["verdict"]
    word = WORD.get(row["outcome"], row["outcome"])
    rest = text[len(word) :] if text.startswith(word) else ""
    if not rest.startswith(" at `"):
        return ""
    return rest[len(" at ") :].split(" (")[0]


def _outcome_counts(rows: list[dict]) -> dict[str, int]:
    return {o: sum(r["outcome"] == o for r in rows) for o in OUTCOMES}


def _counts(rows: list[dict]) -> str:
    n = _outcome_counts(rows)
    return ", ".join(f"{n[o]} {(WORD if n[o] == 1 else WORDS)[o]}" for o in OUTCOMES if n[o]) or "none"


def _other_rows(rows: list[dict]) -> str:
    """One cell: the rows beside the write-ups' claims about training, by group, with their outcomes."""
    parts = [
        f"{GROUP_WORDS[g]}: {_counts(sel)}"
        for g in (COST, COMPUTED, CHECK)
        if (sel := [r for r in rows if group_of(r) == g and not r.get("extension")])
    ]
    ext = [r for r in rows if r.get("extension")]
    if ext:
        parts.append(f"the book's own claims: {_counts(ext)}")
    return "; ".join(parts) or "none"


def chance_line(rows: list[dict]) -> str:
    """What chance alone would give among the tested rows (those that hold, do not hold or are inconclusive): each is
    decisive in a given direction at most 5% of the time when its arms are in truth equal."""
    tested = [r for r in rows if r["outcome"] in (HOLDS, FAILS, INCONCLUSIVE)]
    n = len(tested)
    if not n:
        return "No claim about training was tested at this scale, so none is decided."
    k = int(scipy_stats().binom.ppf(0.95, n, ALPHA))
    decided = sum(r["outcome"] in (HOLDS, FAILS) for r in tested)
    expected = n * ALPHA
    about = "fewer than one" if expected < 1 else f"about {expected:.2g}"
    return (
        f"**Many tests at {ALPHA:.0%}.** {plural(n, 'claim')} {'were' if n != 1 else 'was'} tested ({decided} "
        f"decided). Were the arms of every one of them in truth equal, each would hold by chance at most "
        f"{ALPHA:.0%} of the time, and not hold as often: on average {about} of them would hold and as many not "
        f"hold, and 19 times in 20 " + (f"no more than {plural(k, 'claim')} each way." if k else "none either way.")
    )


def _link(r: dict, prefix: str) -> str:
    return f"{{doc}}`{r['notebook'].split('/')[-1]} </{prefix}/{r['notebook']}>`" if r.get("notebook") else ""


def _learned_cell(r: dict) -> str:
    """How far each gated arm learned, from the glued arms (the same text as the verdict tables')."""
    if r.get("learned"):
        return r["learned"]
    return learning.summary([_arm_of(a) for a in r.get("arms") or []]) or "(no trained arm gated)"


def _why_not(r: dict) -> str:
    """The reason a not-decided row gives (in its verdict's parentheses)."""
    text = r["verdict"]
    return text[text.index("(") + 1 :].split(";")[0].rstrip(")") if "(" in text else ""


def unlearned_arms(rows: list[dict]) -> list[str]:
    """The arms that have not learned, over ``rows``, each once."""
    return list(dict.fromkeys(a["label"] for r in rows for a in (r.get("arms") or []) if not _arm_of(a).learned))


def _other_profiles(chapter: str, profile: str) -> str:
    """What the ``gpu`` and ``paper`` profiles run of ``chapter``: the share of the write-up's tokens per run and the
    seeds per arm (from the registry), or that the write-up trained nothing."""
    names = experiments.chapter_names(chapter)
    parts = []
    for p in ("gpu", "paper"):
        if p == profile:
            continue
        ran = [n for n in names if experiments.runs_at(n, p)]
        if not ran:
            continue
        seeds = sorted({len(experiments.seeds_of(n, p)) for n in ran})
        seed_text = "–".join(map(str, (seeds[0], seeds[-1]) if len(seeds) > 1 else seeds))
        if chapter in experiments.TRAINED_NOTHING:
            scale = "larger models than this profile's"
        elif p == "paper":
            scale = "the write-up's own settings"
        else:
            share = token_share(ran, p)  # the book's own settings left out: the write-up has no size for them
            scale = share_text(share) if share else "the book's own settings"
        sizes = scale_.size_text(headline_arms(chapter), p, chapter in experiments.TRAINED_NOTHING)
        parts.append(
            f"`{p}` runs {len(ran)} of the chapter's {len(names)} experiments at {scale}, {seed_text} "
            f"seed{'s' if seeds[-1] != 1 else ''} per arm"
            + (f", its {_models_word(chapter)} {'at ' if sizes.startswith('the ') else ''}{sizes}" if sizes else "")
        )
    return "; ".join(parts)


def headline_arms(chapter: str) -> list[str]:
    """The experiments of the chapter's headline comparisons (declared in the registry), or, for a chapter with none,
    all of its experiments: the models a conclusion's size statement counts."""
    return list(experiments.headline_arms(chapter)) or experiments.chapter_names(chapter)


def _models_word(chapter: str) -> str:
    return "headline models" if experiments.headlines(chapter) else "models"


def sizes_line(chapter: str, profile: str) -> str:
    """The model-size statement of a chapter at ``profile``, counted by the models' own count
    (:func:`lmcompanion.chapters.scale.size_text`), never typed."""
    sizes = scale_.size_text(headline_arms(chapter), profile, chapter in experiments.TRAINED_NOTHING)
    return f"**Its {_models_word(chapter)} at `{profile}`:** {sizes}." if sizes else ""


DECIDED = (HOLDS, FAILS)


def agreement(row: dict, own: dict | None) -> str:
    """How a row decided on another profile's runs (``row``) stands against the same row at the build's profile
    (``own``; None where the build has no such row): "agrees", "disagrees" (both decided, in the other direction),
    "decided at `gpu` only", "decided at `cpu` only", or "decided at neither"."""
    theirs, mine = row["outcome"] in DECIDED, own is not None and own["outcome"] in DECIDED
    if theirs and mine:
        return "agrees" if row["outcome"] == own["outcome"] else "disagrees"
    if theirs:
        return f"decided at `{row['profile']}` only"
    if mine:
        return f"decided at `{own['profile']}` only"
    return "decided at neither"


def _row_arms(chapter: str, claims_: Sequence[str]) -> list[str]:
    """The experiments of the registered rows whose texts are ``claims_`` (their arms), each once."""
    by_text = {r.text: r.arms for r in rows_of(chapter)}
    return list(dict.fromkeys(a for c in claims_ for a in by_text.get(c, ())))


def rows_of(chapter: str) -> list:
    """The registered rows of ``chapter`` (:func:`lmcompanion.claims.rows`; none for a chapter without rows)."""
    registered_claims()
    try:
        return claims.rows(chapter)
    except LMCError:
        return []


def recorded_conclusion(rows: list[dict], recorded: list[dict], chapter: str) -> list[str]:
    """What each other profile's recorded runs decided, in the conclusion's sentences: how many of the chapter's claims
    about training they cover and how they come out; the headline and every row they decide, each with its effect and
    size and beside the build's verdict of the same row, saying whether the two agree; the cost rows measured on the
    machine that made them; why the rest is not decided; the data caveat where their runs go over their data more
    times than the write-up's (:func:`lmcompanion.chapters.scale.passes_caveat`); and their models' sizes, counted,
    where they are not the headline's (said above)."""
    if not rows:
        return []
    profile = rows[0]["profile"]
    own = {r["claim"]: r for r in rows if group_of(r) in (TRAINING, COST)}
    n_training = sum(group_of(r) == TRAINING for r in rows)
    out = []
    for p in _book_order_profiles({r["profile"] for r in recorded} - {profile}):
        rec = [r for r in recorded if r["profile"] == p and group_of(r) == TRAINING]
        cost = [r for r in recorded if r["profile"] == p and group_of(r) == COST]
        if not rec and not cost:
            continue
        arms = list(dict.fromkeys(a["label"] for r in rec + cost for a in (r.get("arms") or [])))
        text = f"**What the recorded `{p}` runs decided.** Runs recorded at `{p}`" + (
            f" (of {', '.join(arms)})" if arms else ""
        )
        if rec:
            text += (
                f" cover {plural(len(rec), 'row')} of the chapter's {n_training or len(rec)} about training: "
                f"{_counts(rec)}."
            )
            shown = [r for r in rec if r.get("headline") or r["outcome"] in DECIDED]
            if shown:
                said = "; ".join(_beside(r, own.get(r["claim"]), p, profile) for r in shown)
                text += f" {said[0].upper()}{said[1:]}."
            words = [agreement(r, own.get(r["claim"])) for r in rec]
            tally = {w: words.count(w) for w in dict.fromkeys(words)}
            text += (
                f" Against `{profile}`: "
                + ", ".join(f"{n} {w if n == 1 else _plural_verb(w)}" for w, n in tally.items())
                + "."
            )
            bad = [r["claim"] for r, w in zip(rec, words) if w == "disagrees"]
            if bad:
                text += (
                    f" **The two profiles disagree on {plural(len(bad), 'row')}** ({'; '.join(bad)}): the "
                    f"`{profile}` verdict {'does' if len(bad) == 1 else 'do'} not carry to `{p}`'s scale."
                )
            why = _undecided(rec, p)
            if why:
                text += f" Not decided at `{p}`: " + "; ".join(why) + "."
        else:
            text += " decide no claim about training."
        if cost:
            text += (
                " Cost measured on the machine that made them: "
                + "; ".join(_beside(r, own.get(r["claim"]), p, profile) for r in cost)
                + "."
            )
        out.append(text)
        names = _row_arms(chapter, [r["claim"] for r in rec + cost])
        caveat = scale_.passes_caveat(names, p)
        if caveat:
            out.append(caveat)
        if not set(names) <= set(headline_arms(chapter)):
            sizes = scale_.size_text(names, p, chapter in experiments.TRAINED_NOTHING)
            if sizes:
                out.append(f"**The recorded `{p}` models:** {sizes}.")
    return out


def _beside(r: dict, own: dict | None, p: str, profile: str) -> str:
    """A row decided at ``p`` beside the build's verdict of it: "the headline, <claim>: *does not hold* at `gpu`
    (<effect>), *holds* at `cpu` (disagrees)"; a cost row with no effect there gives its measured values instead."""
    effect = r.get("effect") or ""
    if not effect and group_of(r) == COST:  # a cost not timed side by side there: the runs' own times, as measured
        effect = r.get("ours") or ""
    return (
        (
            ("the headline, " if r.get("headline") else "")
            + f"{r['claim']}: *{WORD[r['outcome']]}* at `{p}`"
            + (f" ({effect})" if effect and r["outcome"] != NOT_DECIDED else "")
            + ", "
        )
        + (f"*{WORD[own['outcome']]}* at `{profile}`" if own else f"no row at `{profile}`")
        + f" ({agreement(r, own)})"
    )


def _plural_verb(word: str) -> str:
    return {"agrees": "agree", "disagrees": "disagree"}.get(word, word)


def _book_order_profiles(profiles) -> list[str]:
    order = list(PROFILES)
    return sorted(profiles, key=lambda p: (order.index(p) if p in order else len(order), p))


def lead(chapter: str, rows: list[dict]) -> str:
    """The sentence a chapter registered to be stated first (:func:`lmcompanion.claims.register_lead`: its clearest
    result at this scale), from its glued rows; "" where it has none."""
    registered_claims()  # the chapter modules register their leads when imported
    return claims.lead(chapter, rows)


def _undecided(training: list[dict], profile: str, name_arms: bool = True) -> list[str]:
    """Why the claims about training that are not decided are not ("12 because an arm has not learned (a, b)", "3
    tested and inconclusive ..."), each reason once with its count."""
    undecided = [r for r in training if r["outcome"] == NOT_DECIDED]
    unlearned = [r for r in undecided if "not learned" in r["verdict"]]
    not_run = [r for r in undecided if "not run at this profile" in r["verdict"]]
    one_seed = [r for r in undecided if "one seed" in r["verdict"]]
    other = [r for r in undecided if r not in unlearned + not_run + one_seed]
    inconclusive = [r for r in training if r["outcome"] == INCONCLUSIVE]
    why = []
    if unlearned:
        arms = unlearned_arms(unlearned)
        named = f" ({', '.join(arms[:8])}{f' and {len(arms) - 8} more' if len(arms) > 8 else ''})" if name_arms else ""
        why.append(f"{len(unlearned)} because an arm has not learned{named}")
    if not_run:
        why.append(
            f"{len(not_run)} because {'its arms are' if len(not_run) == 1 else 'their arms are'} not run at `{profile}`"
        )
    if one_seed:
        why.append(
            f"{len(one_seed)} because {'its arms run' if len(one_seed) == 1 else 'their arms run'} one seed "
            "here (illustrations)"
        )
    if other:
        why.append(f"{len(other)} for a reason {'its row gives' if len(other) == 1 else 'their rows give'}")
    if inconclusive:
        why.append(f"{len(inconclusive)} tested and inconclusive (the difference is within the seeds' spread)")
    return why


def conclusion(
    rows: list[dict],
    chapter: str,
    recorded: list[dict] | None = None,
    with_lead: bool = True,
    with_headline: bool = True,
) -> str:
    """A chapter's conclusion, generated from its verdicts at its build's profile: its lead where it has one (its
    clearest result, :func:`lead`; ``with_lead=False`` leaves it to the caller), what this scale decides (the
    headline first, unless ``with_headline=False``: the caller shows it), what it cannot decide and why, and what the
    ``gpu`` and ``paper`` profiles would run to decide it (and what their recorded runs decided, where the book has
    them)."""
    if not rows:
        return ""
    profile = rows[0]["profile"]
    training = [r for r in rows if group_of(r) == TRAINING]
    head = [r for r in training if r.get("headline")]
    decided = [r for r in training if r["outcome"] in (HOLDS, FAILS) and not r.get("headline")]
    first = lead(chapter, rows) if with_lead else ""
    out = ([first] if first else []) + [f"**What `{profile}` decides.**"]
    if head and with_headline:
        out.append(
            "The headline: "
            + "; ".join(
                f"{r['claim']}: *{WORD[r['outcome']]}*" + (f" ({_why_not(r)})" if r["outcome"] == NOT_DECIDED else "")
                for r in head
            )
            + "."
        )
    if decided:
        out.append(
            f"{'Beyond the headline' if head else 'Decided'}, {len(decided)} "
            f"{'claims are' if len(decided) != 1 else 'claim is'} decided: "
            + "; ".join(f"{r['claim']} (*{WORD[r['outcome']]}*)" for r in decided)
            + "."
        )
    elif not any(r["outcome"] in (HOLDS, FAILS) for r in head):
        out.append("No claim about training is decided at this scale.")
    why = _undecided(training, profile)
    if why:
        out.append(
            f"**What it cannot decide, and why.** Of {plural(len(training), 'claim')} about training, "
            + "; ".join(why)
            + "."
        )
    sizes = sizes_line(chapter, profile)
    if sizes:
        out.append(sizes)
    caveat = scale_.passes_caveat(headline_arms(chapter), profile)  # the build's own headline runs' data
    if caveat:
        out.append(caveat)
    more = _other_profiles(chapter, profile)
    if more:
        out.append(
            f"**What the larger profiles would decide.** {more.capitalize() if more[0] == '`' else more}: "
            "the same rows, decided by the same rule once their runs are made and recorded."
        )
    out += recorded_conclusion(rows, recorded or [], chapter)
    return " ".join(out)


def headline_verdicts(rows: list[dict], profile: str) -> list[str]:
    """The chapter's headline claims about training as a list: each one's badge (its outcome in words, its scale,
    why it is not decided) and claim, and the line where the learning gate overrides its test."""
    out = []
    for r in rows:
        if r.get("headline") and group_of(r) == TRAINING:
            why = override(r)
            out.append(f"- {_headline_item(r, profile)}" + (f"<br>{_md(why)}" if why else ""))
    return out


def headline_size(row: dict) -> str:
    """A decided headline verdict's size for the first screen, after its claim: its effect with the write-up's, their
    ratio, its flags and its gap's trend (the row's effect text), and, read from its glued arms, that every one
    learned; "" for a row not decided (its badge says why) or without an effect."""
    effect = (row.get("effect") or "").strip()
    if row["outcome"] not in (HOLDS, FAILS) or not effect:
        return ""
    arms = [_arm_of(a) for a in row.get("arms") or []]
    learned = "; every arm learned" if arms and all(a.learned for a in arms) else ""
    return f" (effect {_md(effect)}{learned})"


def _headline_item(row: dict, profile: str) -> str:
    """A headline verdict as the first screens show it: its badge, its claim and its size."""
    return f"{badge(row, profile)} {_md(row['claim'])}{headline_size(row)}"


def headline_line(chapter: str, rows: list[dict], profile: str) -> str:
    """The chapter's headline comparison as declared in the experiment registry: what it compares and why it is the
    headline, how many seeds its arms run here against the other arms, and how the ``cpu`` steps were fixed (one rule
    for every chapter, on the baseline arm alone), with how far the baseline learned in this build."""
    heads = experiments.headlines(chapter)
    if not heads:
        return ""
    out = []
    for h in heads:
        seeds = {len(experiments.seeds_of(a, profile)) for a in h.arms if experiments.runs_at(a, profile)}
        others = [n for n in experiments.chapter_names(chapter) if n not in h.arms and experiments.runs_at(n, profile)]
        other_seeds = sorted({len(experiments.seeds_of(n, profile)) for n in others})
        base = experiments.get(h.baseline).title
        cfg = experiments.config(h.baseline, profile, device="cpu")
        arms = [
            a
            for r in rows
            if r.get("headline")
            for a in (r.get("arms") or [])
            if a["label"] == h.baseline.split("/")[-1] and a.get("at", "final") == "final"
        ]
        learned = f"; in this build the baseline ends {_learned_cell({'arms': arms[:1]})}" if arms else ""
        n_seeds = "/".join(map(str, sorted(seeds)))
        illustrates = h.illustrates_at(profile)
        text = (
            f"**The headline comparison: {h.label}.** Why it is the headline: {h.why}. At `{profile}` its arms run "
            f"{n_seeds} seed{'' if n_seeds == '1' else 's'}"
            + (
                f" and the chapter's other arms {'/'.join(map(str, other_seeds))}"
                if other_seeds and not illustrates
                else ""
            )
        )
        if illustrates:
            text += (
                ", like the chapter's other arms: they illustrate and decide nothing, since they cannot learn at "
                f"`cpu` at a cost the build can afford: {h.cpu_shortfall}"
            )
        if profile == "cpu":
            text += (
                f". The `cpu` steps follow one rule in every chapter, fixed on the baseline arm alone ({base}) "
                f"before any comparison was looked at: {experiments.CPU_RULE}"
                + (f". This chapter departs from it: {h.cpu_departure}" if h.cpu_departure else "")
                + f". Here the baseline trains {count(cfg.train.max_steps)} steps, {count(cfg.tokens())} "
                f"{getattr(cfg.data, 'unit', 'tokens')} per run{learned}"
            )
            if experiments.Protocol.ILLUSTRATIONS in experiments.arm(h.baseline, profile).trains_at:
                short = experiments.config(
                    h.baseline, profile, device="cpu", protocol=experiments.Protocol.ILLUSTRATIONS
                )
                text += (
                    f". The headline arms' {n_seeds} seeds and longer runs are paid for by the chapter's other "
                    f"arms: they illustrate, with one seed and "
                    f"{fraction(experiments.illustration_steps(chapter, profile))} of the headline arms' steps "
                    f"({count(short.train.max_steps)} for the baseline). "
                    f"{experiments.ILLUSTRATION_RULE[0].upper()}{experiments.ILLUSTRATION_RULE[1:]}"
                )
        text += "."
        short = unlearned_arms([r for r in rows if r.get("headline") and _of_headline(r, h, len(heads))])
        if short and profile != "smoke":  # smoke's generated corpus teaches nothing: its numbers mean nothing
            names = ", ".join(f"`{a}`" for a in short)
            text += (
                f" **In this build {names} {'has' if len(short) == 1 else 'have'} not learned**, so the rows that "
                f"compare {'it' if len(short) == 1 else 'them'} are not decided at `{profile}`"
                + (
                    "."
                    if illustrates
                    else f": {h.cpu_shortfall}."
                    if profile == "cpu" and h.cpu_shortfall
                    else ". What it would cost to make every arm learn at this profile has not been measured."
                )
            )
        out.append(text)
    return " ".join(out)


def fraction(f: float) -> str:
    """A fraction of a run's steps in words: "half", "a quarter", else a percentage."""
    return {0.5: "half", 0.25: "a quarter", 0.75: "three quarters", 1.0: "all"}.get(f, percent(f))


def _of_headline(r: dict, h, n_heads: int) -> bool:
    """Whether the glued headline row ``r`` is one of ``h``'s: every row of a chapter's only headline, else the rows
    whose arms' labels (an experiment's short name, with any note in parentheses) are all among ``h``'s arms."""
    if n_heads == 1:
        return True
    names = {a.split("/")[-1] for a in h.arms}
    labels = {a["label"].split(" (")[0] for a in r.get("arms") or []}
    return bool(labels) and labels <= names


def _row_line(r: dict, prefix: str, profile: str) -> str:
    published = r.get("published") or "no published number"
    why = override(r)
    verdict = badge(r, profile) + (f"<br>{_md(why)}" if why else "")
    return (
        f"| {_md(r['claim'])} | {verdict} | {_md(published)} | {_md(r.get('ours') or '')} | "
        f"{_md(r.get('effect') or '')} | {_md(_learned_cell(r))} | {_link(r, prefix)} |"
    )


TABLE_HEAD = [
    "| claim | verdict | the write-up | ours (mean [min, max] over seeds) | effect ± SE | how far each arm "
    "learned | decided in |",
    "|---|---|---|---|---|---|---|",
]
SIGN = (
    "*Effect*: the claimed-better arm's mean minus the other's, in the unit of the values compared (nats per token "
    "for a loss, top-1 error for retrieval by a metric, seconds per step for time; a ratio is marked ×, a rank "
    "correlation ρ): negative supports a claim that an arm is lower. *How far each arm learned*: the smallest and "
    "largest distance over seeds below the arm's reference line (the unigram loss of the split, or chance), at the "
    "step the row compares; ✓ where every seed is at least 0.5 nats below it (twice chance for an accuracy)."
)


BOOK = "Five language-model write-ups"  # the book's name, before what it decides (the intro's title)


def _decides(training: list[dict], profile: str) -> str:
    """What a set of claims about training comes to at ``profile``, in one clause: "decides 3 of its 20 claims
    about what training reaches (1 holds, 2 do not hold) and leaves 17 undecided: ..." (counted, never typed)."""
    n = _outcome_counts(training)
    decided = n[HOLDS] + n[FAILS]
    how = ", ".join(f"{n[o]} {(WORD if n[o] == 1 else WORDS)[o]}" for o in (HOLDS, FAILS) if n[o])
    why = _undecided(training, profile, name_arms=False)
    return (
        f"decides {decided} of {plural(len(training), 'claim')} about what training reaches"
        + (f" ({how})" if how else "")
        + f" and leaves {len(training) - decided} undecided"
        + (f": {'; '.join(why)}" if why else "")
    )


def _intro(rows: list[dict], every: list[dict], profiles: list[str], prefix: str) -> str:
    """The intro's first screen: its title and first sentence say what the book decides and what it does not; then
    each chapter's headline verdicts, its count and its lead; then each chapter's conclusion, folded."""
    training = claims_about_training(rows)
    n = _outcome_counts(training)
    at = ", ".join(f"`{p}`" for p in profiles)
    lines = [
        f"# {BOOK}: {n[HOLDS] + n[FAILS]} of {plural(len(training), 'claim')} about training decided at the "
        f"{' and '.join(profiles)} scale",
        "",
        f"At the {at} scale this book re-runs the write-ups' experiments and {_decides(training, profiles[0])}. "
        "It says nothing about the write-ups' own scale, which only the `gpu` and `paper` profiles reach: a "
        "verdict here may change there.",
        "",
        ":::{container} lmc-first",
        "",
    ]
    chapters = _book_order({r["chapter"] for r in rows})
    for c in chapters:
        mine = [r for r in rows if r["chapter"] == c]
        counts = _outcome_counts(claims_about_training(mine))
        found = ", ".join(f"{counts[o]} {(WORD if counts[o] == 1 else WORDS)[o]}" for o in OUTCOMES if counts[o])
        first = lead(c, mine)
        head = [
            f"{_headline_item(r, profiles[0])}{override_short(r)}"
            for r in mine
            if r.get("headline") and group_of(r) == TRAINING
        ]
        lines += [
            f"- **{{doc}}`{CHAPTER_TITLES.get(c, c)} </book/{c}/index>`.** "
            + (f"{_md(first)} " if first else "")
            + ("Headline: " + "; ".join(head) + ". " if head else "")
            + f"Its {plural(sum(counts.values()), 'claim')} about training: {found or 'none'}."
        ]
    lines += [
        "",
        ":::",
        "",
        f"Beside these claims the book checks {plural(len(rows) - len(training), 'row')} of "
        f"other kinds: {_other_rows(rows)}. Every row with its numbers is on the {{ref}}`scorecard <scorecard>`.",
        "",
        chance_line(training),
        "",
        "**Each chapter's conclusion.**",
        "",
    ]
    for c in chapters:
        mine = [r for r in rows if r["chapter"] == c]
        lines += _fold(
            CHAPTER_TITLES.get(c, c), [conclusion(mine, c, [r for r in every if r["chapter"] == c], with_lead=False)]
        )
    return "\n".join(lines) + "\n"


def summary(root: Path, chapter: str | None = None, prefix: str = "notebooks", figures: Path | None = None) -> str:
    """The first screen of the intro (``chapter=None``: its title, what the book decides and what it does not, each
    chapter's headline verdicts, then each chapter's conclusion folded) or of a chapter's landing page (its lead, its
    headline verdicts and what its scale decides, in the page's flow; then the method, folded, and its rows: the
    headline's, then the other claims grouped by the notebook that decides them, each group folded with one line
    saying what it found), generated from the verdict rows the executed notebooks glued at their own profile. Counts
    keep the write-ups' claims about training apart from cost, statements checked by computation, checks of our code
    and the book's own claims. ``figures``: the folder (beside the summary) where a landing page's headline gap
    figures are written (:func:`gap_figures`); None draws none."""
    every = [
        r
        for _, _, nb in executed_notebooks(root)
        for r in glued_verdicts(nb)
        if chapter is None or r["chapter"] == chapter
    ]
    rows = [r for r in own_verdicts(root) if chapter is None or r["chapter"] == chapter]
    if not rows:
        return (
            f"# {BOOK}\n\n" if chapter is None else ""
        ) + "*No verdict notebook of this chapter has been executed in this build yet.*\n"
    profiles = sorted(
        {r["profile"] for r in rows}, key=lambda p: list(PROFILES).index(p) if p in PROFILES else len(PROFILES)
    )
    if chapter is None:
        return _intro(rows, every, profiles, prefix)
    profile = profiles[0]
    training = claims_about_training(rows)
    scales = sorted({scale_of(r) for r in training} - {""})
    first = lead(chapter, rows)
    lines = [":::{container} lmc-first", ""] + ([first, ""] if first else [])
    head = headline_verdicts(rows, profile)
    if head:
        lines += [f"**The headline at `{profile}`.**", "", *head, ""]
    lines += [
        f"**What `{profile}` decides.** Of the write-up's claims, this build {_decides(training, profile)}"
        + (f" ({'; '.join(scales)})" if scales else "")
        + ". A verdict far below the write-up's scale may "
        "change at its scale.",
        "",
        ":::",
        "",
        f"Beside them: {_other_rows(rows)}. Every row with its numbers is on the {{ref}}`scorecard <scorecard>`.",
        "",
        chance_line(training),
        "",
    ]
    method = headline_line(chapter, rows, profile)
    if method:
        lines += _fold("How the headline comparison is run: its arms, seeds and steps", [method])
    lines += _fold(
        f"What `{profile}` cannot decide, and what the larger profiles would",
        [conclusion(rows, chapter, every, with_lead=False, with_headline=False)],
    )
    shown = [r for r in rows if group_of(r) in (TRAINING, COST)]
    head_rows = [r for r in shown if r.get("headline")]
    if head_rows:
        lines += [
            "**The headline comparison.**",
            "",
            *TABLE_HEAD,
            *[_row_line(r, prefix, profile) for r in head_rows],
            "",
        ]
        if figures is not None:
            lines += gap_figures(head_rows, chapter, Path(figures))
    rest = [r for r in rows if r not in head_rows]
    if rest:
        lines += ["**Every other claim, by the page that decides it** (click a line to open it).", "", SIGN, ""]
        for notebook in dict.fromkeys(r.get("notebook") or "" for r in rest):
            group = [r for r in rest if (r.get("notebook") or "") == notebook]
            found = _counts(group)
            unlearned = unlearned_arms([r for r in group if r["outcome"] == NOT_DECIDED])
            note = f"; not learned: {', '.join(unlearned)}" if unlearned else ""
            title = notebook.split("/")[-1] or "other rows"
            lines += _fold(
                f"{title}: {plural(len(group), 'row')}, {found}{note}",
                [*TABLE_HEAD, *[_row_line(r, prefix, profile) for r in group]],
            )
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------------------------------------------------
# The trend of every headline gap (issue 50, item 3): the gap between a headline row's arms against training, one
# figure per row, drawn beside the row on its chapter's landing page from the series the row was glued with
# (lmcompanion.verdicts.Verdict.gap), with the one-word trend the row's effect already gives.

METRIC_WORDS = {"val": "validation loss", "train": "train loss"}


def gap_of(chapter: str, claim: str) -> tuple[str, str, str] | None:
    """(the claimed-better arm, the other arm, the metric) whose gap a headline row's series follows: its registered
    row's ``gap`` (:class:`lmcompanion.claims.Row`), None where it has none."""
    return next((r.gap for r in rows_of(chapter) if r.text == claim), None)


def _x(row: dict) -> tuple[list[float], str]:
    """The x of a gap series and its label: the first run's steps where the trend names steps (every run evaluated at
    the same steps), else the share of training in percent (arms of different lengths, read at the same share)."""
    points = row.get("gap") or []
    if "at step" in (row.get("trend") or ""):
        return [float(s) for _, s, _ in points], "training step"
    return [100 * f for f, _, _ in points], "share of each arm's training (%)"


def gap_caption(row: dict, chapter: str) -> tuple[str, str]:
    """(caption, alt text) of a headline row's gap figure, both from the row: what is drawn, the row's claim and
    verdict, and the trend; the alt text says where the gap starts and ends."""
    a, b, metric = gap_of(chapter, row["claim"]) or ("the claimed-better arm", "the other arm", "")
    a, b = a.split("/")[-1], b.split("/")[-1]
    what = METRIC_WORDS.get(metric, metric or "the compared metric")
    x, xlabel = _x(row)
    g = [p[2] for p in row.get("gap") or []]
    word = (row.get("trend") or "").split(":")[0] or "no trend"
    caption = (
        f"The gap between the headline arms against training: {a}'s {what} minus {b}'s (seed means; below "
        f"zero, {a} is ahead), for the claim that {row['claim']}. {WORD[row['outcome']].capitalize()} at "
        f"`{row['profile']}`; the gap over the second half of training is {row.get('trend') or 'not measured'}."
    )
    unit = (lambda v: f"step {v:,.0f}") if xlabel == "training step" else (lambda v: f"{v:.0f}% of training")
    alt = (
        f"Line chart of {a}'s {what} minus {b}'s against {xlabel}: {number(g[0], sign='+')} at {unit(x[0])}, "
        f"{number(g[-1], sign='+')} at {unit(x[-1])}; {word}."
        if g
        else f"Line chart of {a}'s {what} minus {b}'s."
    )
    return caption, alt


def gap_figure(row: dict, chapter: str):
    """A headline row's gap against training (:attr:`lmcompanion.verdicts.Verdict.gap`), in the book's figure style
    (:mod:`lmcompanion.plots`): the series as glued, zero marked, the second half (which the trend reads) shaded."""
    import sys

    import matplotlib

    if "matplotlib.pyplot" not in sys.modules:  # the page build draws to files; a notebook keeps its own backend
        matplotlib.use("Agg")
    plots.style()
    a, b, metric = gap_of(chapter, row["claim"]) or ("", "", "")
    x, xlabel = _x(row)
    g = [p[2] for p in row["gap"]]
    fig, (ax,) = plots.panel_figure(1, height=2.6)
    ax.axhline(0.0, color="#7f7f7f", lw=0.8)
    half = [xi for xi, (f, _, _) in zip(x, row["gap"]) if f >= 0.5]
    if half:
        ax.axvspan(half[0], x[-1], color="#7f7f7f", alpha=0.08, lw=0)
    ax.plot(
        x, g, color=plots.COLORS[0], marker="o", ms=3.5, lw=1.4, label=f"{a.split('/')[-1]} minus {b.split('/')[-1]}"
    )
    ax.set_xlabel(xlabel)
    ax.set_ylabel(f"gap in {METRIC_WORDS.get(metric, metric)}" if metric else "gap")
    fig.tight_layout()
    return fig


def gap_figures(rows: list[dict], chapter: str, folder: Path) -> list[str]:
    """Each headline row's gap figure (:func:`gap_figure`) written to ``folder`` and its MyST figure (caption and alt
    text generated, :func:`gap_caption`), as lines of the landing page; a row glued without a series (or with fewer
    than two points) draws none."""
    import matplotlib.image
    import matplotlib.pyplot as plt

    out = []
    drawn = [r for r in rows if len(r.get("gap") or []) >= 2]
    for i, r in enumerate(drawn, start=1):
        name = f"gap-{chapter}-{i}.png"
        folder.mkdir(parents=True, exist_ok=True)
        fig = gap_figure(r, chapter)
        fig.savefig(folder / name, dpi=2 * plots.DPI, metadata={"Software": None})  # sharp on high-DPI screens
        plt.close(fig)
        width = matplotlib.image.imread(folder / name).shape[1] // 2  # shown at the figure's own size, not stretched
        caption, alt = gap_caption(r, chapter)
        out += [
            f":::{{figure}} ../{folder.name}/{name}",
            f":alt: {alt}",
            f":width: {width}px",
            f":name: gap-{chapter}-{i}",
            "",
            caption,
            ":::",
            "",
        ]
    return out


def registered_claims() -> dict[str, list[ledger.Claim]]:
    """The claims every chapter registers (:data:`lmcompanion.ledger.LEDGER`), after importing every chapter's package
    (:func:`lmcompanion.chapters.modules`: a chapter registers its claims when its package is imported)."""
    chapters.modules()
    return ledger.LEDGER


# Where a table cell's text may break besides its spaces: after an underscore inside a name (attn_384_32_e6), marked
# with <wbr>; never inside a number or a word. Code, math, links and addresses are left as they are.
_KEEP = re.compile(r"(`[^`]*`|\$[^$]*\$|\[[^\]]*\]\([^)]*\)|<[^>]*>|\S*://\S*)")
_NAME_BREAK = re.compile(r"(?<=[A-Za-z0-9])_(?=[A-Za-z0-9])")


def _md(text: str) -> str:
    """A table cell: one line, its pipes escaped, a break allowed after each underscore of a name (<wbr>)."""
    parts = _KEEP.split(" ".join(text.split()).replace("|", "\\|"))
    return "".join(p if i % 2 else _NAME_BREAK.sub(r"\\_<wbr>", p) for i, p in enumerate(parts))


def ledger_page(root: Path, prefix: str = "notebooks") -> str:
    """The claims ledger page (MyST markdown): every registered claim of every chapter with its row's verdict at each
    profile that has runs (from the executed notebooks under ``root``) or its reason; each chapter folded, filterable
    by verdict."""
    claims = registered_claims()
    rows = [r for _, _, nb in executed_notebooks(root) for r in glued_verdicts(nb)]
    profiles = [p for p in PROFILES if any(r["profile"] == p for r in rows)]
    chapter_names = _book_order(claims)
    lines = [
        "(claims-ledger)=",
        "# Claims ledger",
        "",
        "Every claim of every write-up, in the write-up's order and words: either the verdict row that tests it, "
        "with that row's verdict at each profile this book has runs for (as on the {ref}`scorecard <scorecard>`, "
        "whose legend explains the badges), or one line saying why it is not tested. The chapters register their "
        "claims in the package (`lmcompanion.ledger`); this page is generated from that registry and the verdict "
        "tables of the executed notebooks. A claim may be tested by more than one row; then it is listed once "
        "per row.",
        "",
    ]
    if not claims:
        return "\n".join(lines + ["No chapter has registered its claims yet.", ""])
    lines += _filter([*OUTCOMES, UNTESTED])
    lines += ["| chapter | claims | tested by a row | not tested (with a reason) |", "|---|---:|---:|---:|"]
    for chapter in chapter_names:
        cs = claims[chapter]
        tested = sum(c.row is not None for c in cs)
        lines.append(f"| {CHAPTER_TITLES.get(chapter, chapter)} | {len(cs)} | {tested} | {len(cs) - tested} |")
    for chapter in chapter_names:
        table = [
            "| # | the write-up says | where | tested by | " + " | ".join(f"`{p}`" for p in profiles) + " |",
            "|---:|---|---|---|" + "---|" * len(profiles),
        ]
        mine = [r for r in rows if r["chapter"] == chapter]
        found = []
        for i, c in enumerate(claims[chapter], start=1):
            if c.row is None:
                cells = [badge(UNTESTED)] * len(profiles)
                tested_by = _md(c.reason)
                found.append(UNTESTED)
            else:
                hits = {p: [r for r in mine if r["profile"] == p and r["claim"] == c.row] for p in profiles}
                cells = [_cell(hits[p][0]) if hits[p] else "no row at this profile" for p in profiles]
                found += [hits[p][0]["outcome"] for p in profiles[:1] if hits[p]]
                notebook = next((h[0]["notebook"] for h in hits.values() if h and h[0].get("notebook")), "")
                link = f" ({{doc}}`{notebook.split('/')[-1]} </{prefix}/{notebook}>`)" if notebook else ""
                tested_by = f"{_md(c.row)}{link}"
            table.append(f"| {i} | {_md(c.says)} | {_md(c.where)} | {tested_by} | " + " | ".join(cells) + " |")
        outcomes = [o for o in (*OUTCOMES, UNTESTED) if o in found]
        summary_ = ", ".join(f"{found.count(o)} {(WORD if found.count(o) == 1 else WORDS)[o]}" for o in outcomes)
        at = f" at `{profiles[0]}`" if profiles else ""
        lines += [
            "",
            f"## {CHAPTER_TITLES.get(chapter, chapter)}",
            "",
            *_fold(f"{plural(len(claims[chapter]), 'claim')}{at}: {summary_}", table),
        ]
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
    lines = [
        "(build-record)=",
        "# How this book was built",
        "",
        "Every page below was executed by papermill in this build (`make book`); its profile and parameters, how "
        "long it took and the commit of the package that executed it are read from the executed notebook itself. "
        "Each page also ends with its own provenance table, and can be downloaded as an executed `.ipynb` from "
        "the download button at its top.",
        "",
        "`make book` trains every run the pages read before it executes them (`make runs`: several runs at a "
        "time, in as many worker processes), so a page's execution time below is the time to read its runs and "
        "draw its figures and tables, not to train them. The training time of a page's runs is in its "
        "provenance table.",
        "",
    ]
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
        lines.append(
            f"| {{doc}}`/{prefix}/{docname}` | `{meta.get('profile')}`"
            + (f", {params}" if params else "")
            + f" | {number(meta.get('duration_s', 0))} | {commit} | {_when(meta.get('executed', ''))} |"
        )
    lines += [
        "",
        f"Total execution time of the pages: {number(total / 60)} min (pages that ran at the same time count "
        "separately).",
        "",
    ]
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
                "regenerate them.\n:::",
                metadata={"tags": [STALE_TAG]},
            )
            nb.cells.insert(0, note)
        if had or (not current and meta):
            paths.atomic_write(path, nbformat.writes(nb))
    return stale


def _arm_of(a: dict) -> learning.Arm:
    return learning.Arm(**{k: (tuple(v) if isinstance(v, list) else v) for k, v in a.items()})


def gate_violations(root: Path) -> list[str]:
    """Every glued claim about training that holds or does not hold although an arm it rests on has not learned (or
    with no gated arm at all): what the learning gate forbids (:mod:`lmcompanion.learning`), re-read from the arms'
    own numbers. Empty when the build is sound."""
    out = []
    for docname, _, nb in executed_notebooks(root):
        for r in glued_verdicts(nb):
            if r["outcome"] not in (HOLDS, FAILS) or group_of(r) != TRAINING:
                continue
            arms = [_arm_of(a) for a in r.get("arms") or []]
            bad = [a.label for a in arms if not a.learned]
            if not arms or bad:
                out.append(
                    f"{docname} ({r['profile']}): {r['claim']!r} {r['outcome']} "
                    + (f"with arms that have not learned: {', '.join(bad)}" if bad else "with no gated arm")
                )
    return out


def write_pages(root: Path, out: Path, sources: Path | None = None, prefix: str = "notebooks") -> list[str]:
    """Write the generated pages; stop, writing nothing, where a glued row breaks the learning gate."""
    bad = gate_violations(root)
    if bad:
        raise LMCError(
            "verdicts decided on arms that have not learned (the learning gate, lmcompanion.learning): "
            + "; ".join(bad[:5])
            + (f"; and {len(bad) - 5} more" if len(bad) > 5 else "")
            + ". Re-execute these notebooks with this package (make book)"
        )
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    paths.atomic_write(out / "scorecard.md", scorecard(root, prefix))
    paths.atomic_write(out / "claims.md", ledger_page(root, prefix))
    paths.atomic_write(out / "build.md", build_record(root, prefix))
    # the one-screen summaries the intro and the landing pages include
    paths.atomic_write(out / "summary.md", summary(root, None, prefix))
    for chapter in CHAPTER_TITLES:
        paths.atomic_write(out / f"summary-{chapter}.md", summary(root, chapter, prefix, figures=out))
        # where each arm runs, from the registry: the one description the landing pages include
        paths.atomic_write(out / f"where-{chapter}.md", experiments.where_they_run(chapter) + "\n")
    return mark_stale(root, sources) if sources is not None else []


__all__ = [
    "build_record",
    "chance_line",
    "claims_about_training",
    "conclusion",
    "executed_notebooks",
    "glued_verdicts",
    "gate_violations",
    "group_of",
    "is_check",
    "ledger_page",
    "mark_stale",
    "own_verdicts",
    "registered_claims",
    "scale_of",
    "scorecard",
    "summary",
    "unlearned_arms",
    "write_pages",
]
