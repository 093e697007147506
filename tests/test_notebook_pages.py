"""What a reader meets on a notebook's page (issues 50 and 54): verdict tables in the generated pages' badge form,
long parts folded, figure captions whose seed count is the plotted runs', and the sentence an illustration page
opens with, which says which arms have not learned (lmcompanion.nb)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from types import SimpleNamespace

import pytest

from lmcompanion import learning, nb, verdicts

ROOT = Path(__file__).resolve().parents[1]
SOURCES = sorted(p for p in (ROOT / "notebooks").rglob("*.py") if ".ipynb_checkpoints" not in p.parts)
REFS = ROOT / "tests" / "nbval"
FIGURE = re.compile(r"^# %% .*mystnb=(\{.*\})\s*$")


def _run(val: float, seed: int = 0, steps: int = 30):
    return SimpleNamespace(
        summary={"steps": steps, "final": {"val": val}},
        seed=seed,
        config=SimpleNamespace(name="ch/x", train=SimpleNamespace(max_steps=steps)),
    )


@pytest.fixture
def unigram_at_5(monkeypatch):
    """Every run's reference line at 5 nats (no data read)."""
    monkeypatch.setattr(learning, "reference", lambda cfg, metric: learning.Reference("the unigram loss", 5.0))


def test_the_seed_phrase_is_the_runs_count():
    one = {"a": [_run(4.0)], "b": [_run(4.0)]}
    assert nb.seeds_phrase(one) == "one seed per arm, each line one run"
    three = {"a": [_run(4.0, s) for s in range(3)], "b": [_run(4.0, s) for s in range(3)]}
    assert nb.seeds_phrase(three) == "mean over 3 seeds per arm, bands span the seeds"
    mixed = {**three, "c": [_run(4.0)]}
    assert nb.seeds_phrase(mixed) == (
        "each arm's mean over its seeds (3 for a and b; 1 for c), bands span them where there is more than one"
    )
    assert nb.seeds_phrase({"a": three["a"]}, spread="bars") == "mean over 3 seeds, bars span the seeds"
    many = {**three, **{f"m{i}": [_run(4.0)] for i in range(5)}}
    assert nb.seeds_phrase(many).startswith("each arm's mean over its seeds (3 for a and b; 1 for 5 arms)")
    assert "over seeds" not in nb.seeds_phrase(one)


def test_the_page_sentence_says_not_learned_where_an_arm_fails_the_gate(unigram_at_5):
    settings = nb.Settings("smoke", "cpu", (0, 1))
    groups = {"learns": [_run(4.2, 0), _run(4.4, 1)], "stays": [_run(4.2, 0), _run(4.8, 1)]}
    text = nb.page_sentence(settings, groups)
    assert "*learns* learned" in text and "*stays* not learned" in text
    assert "(2 seeds per arm, 30 steps)" in text and "at `smoke`" in text
    assert "not learned" not in nb.page_sentence(settings, {"learns": groups["learns"]})
    assert nb.learned_arms(groups) == (["learns"], ["stays"], [])


def test_a_fold_is_closed_and_holds_its_parts():
    import pandas as pd

    html = nb.fold_html("Provenance", "some *text*", pd.DataFrame({"x": [1]}))
    assert html.startswith('<details class="sd-sphinx-override sd-dropdown sd-card sd-mb-3 lmc-fold">')
    assert " open" not in html.split(">")[0] and "<em>text</em>" in html and "<table" in html


def test_the_verdict_table_uses_the_badges_and_folds_the_numbers():
    arm = learning.Arm("stays", "the unigram loss (validation)", 5.0, (4.9, 4.8))
    v = verdicts.gate(verdicts.claim("a beats b", "1 vs 2", [4.0, 4.1], [4.9, 4.8]), [arm])
    v = verdicts.at_scale(v, "smoke", None)
    html = nb.verdict_table([v], "ar_ed", "smoke").data
    assert (
        '<span class="lmc-badge lmc-undecided" data-outcome="undecided">not decided at smoke: arm not learned' in html
    )
    assert html.index("</table>") < html.index("<details")  # the verdicts first, the numbers folded under them
    assert "stays has not learned" in html.split("<details")[1]  # the verdict in full is in the fold


def _figure_cells(src: Path):
    """(caption, figure name, the cell's code) of every figure cell of a notebook source."""
    lines = src.read_text().split("\n")
    for i, line in enumerate(lines):
        m = FIGURE.match(line)
        if m and "figure" in (meta := json.loads(m.group(1))):
            code = []
            for rest in lines[i + 1 :]:
                if rest.startswith("# %%"):
                    break
                code.append(rest)
            yield meta["figure"].get("caption", ""), meta["figure"].get("name", ""), "\n".join(code)


@pytest.mark.parametrize("src", SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_caption_types_a_seed_count(src):
    """A caption that says how many seeds its lines average pastes it from the runs (nb.caption), never types it."""
    for caption, name, code in _figure_cells(src):
        assert not re.search(r"means? over (its |their |the )?seeds|over \d+ seeds|one seed", caption), (name, caption)
        for key in re.findall(r"\{glue:md\}`seeds-([\w-]+)`", caption):
            assert key == name and f'nb.caption("{name}",' in code, (src.name, name)


def _glued(nb_path: Path) -> dict[str, dict]:
    """Every glued value of an executed notebook: key -> its mime bundle."""
    out = {}
    for cell in json.loads(nb_path.read_text())["cells"]:
        for o in cell.get("outputs", []):
            key = o.get("metadata", {}).get("scrapbook", {}).get("name")
            if key:
                out[key] = o.get("data", {})
    return out


def test_the_smoke_references_captions_count_the_seeds_of_their_runs():
    """In each executed smoke reference, every seed count a caption pastes is the number of seeds of an experiment
    the page read (its provenance glues the ids of the runs it read: ``<experiment>-s<seed>@<key>``)."""
    import ast

    found = 0
    for ref in sorted(REFS.rglob("*.ipynb")):
        glued = _glued(ref)
        if "runs" not in glued:
            continue
        ids = json.loads(ast.literal_eval(glued["runs"]["application/papermill.record/text/plain"]))
        seeds: dict[str, set] = {}
        for run_id in ids:
            m = re.match(r"(.+)-s(\d+)@", run_id)
            if m:
                seeds.setdefault(m.group(1), set()).add(m.group(2))
        counts = {len(s) for s in seeds.values()}
        for key, data in glued.items():
            if not key.startswith("seeds-"):
                continue
            found += 1
            phrase = next(v for k, v in data.items() if k.endswith("text/markdown"))
            said = [int(n) for n in re.findall(r"(\d+) (?:seeds|for)", phrase)] + ([1] if "one seed" in phrase else [])
            assert said and set(said) <= counts, (ref.name, key, phrase, sorted(counts))
    assert found >= 20  # every caption that states its seeds (issue 54: about twenty said "mean over seeds")


def _decided_by(html: str) -> list[tuple[str, str]]:
    """(the runs that decided it, the verdict in full) of every row of every folded numbers table in ``html``."""
    out = []
    for table in re.findall(r"<table.*?</table>", html, re.S):
        head = re.findall(r"<th>([^<]*)</th>", table.split("</thead>")[0])
        if "the runs that decided it" not in head:
            continue
        runs_at, verdict_at = head.index("the runs that decided it") - 1, head.index("verdict in full") - 1
        for row in re.findall(r"<tr>(.*?)</tr>", table.split("<tbody>")[1], re.S):
            cells = re.findall(r"<td>(.*?)</td>", row, re.S)
            out.append((cells[runs_at], cells[verdict_at]))
    return out


def test_every_verdict_row_on_a_page_names_the_runs_that_decided_it():
    """On the smoke references of the verdict pages and of the results pages that show their rows
    (nb.page_verdicts), every row decided from runs names them (experiment, seeds, steps); a row with none is one
    decided without runs, of recorded runs, or whose arms do not run at the profile."""
    seen, missing = 0, []
    for ref in sorted(REFS.rglob("*.ipynb")):
        for cell in json.loads(ref.read_text())["cells"]:
            for o in cell.get("outputs", []):
                html = "".join(o.get("data", {}).get("text/html", ""))
                for runs, verdict in _decided_by(html):
                    seen += 1
                    if runs.startswith("(") or "not run at this profile" in verdict or runs.startswith("timed side"):
                        continue
                    if not re.search(
                        r"<code>[\w/]+</code>: (one seed|\d+ seeds) \([\d, ]+\), [\d,]+ (or [\d,]+ )?"
                        r"steps",
                        runs,
                    ):
                        missing.append((ref.name, runs, verdict))
    assert seen >= 100 and not missing, missing


def test_a_figure_cell_shows_one_output_so_its_caption_and_name_are_given_once():
    """A cell with a figure's caption and name (mystnb) gives each of its outputs that caption and that name: a second
    output (the value of a last line such as ``nb.caption(...)``) makes Sphinx warn of a duplicate target, which fails
    the warning-free smoke book; glued values are not shown there. Checked on the smoke references."""
    two = []
    for ref in sorted(REFS.rglob("*.ipynb")):
        for cell in json.loads(ref.read_text())["cells"]:
            if "figure" in cell.get("metadata", {}).get("mystnb", {}):
                shown = [
                    o
                    for o in cell.get("outputs", [])
                    if o.get("output_type") in ("display_data", "execute_result")
                    and not any(k.startswith("application/papermill.record") for k in o.get("data", {}))
                ]
                if len(shown) > 1:
                    two.append(f"{ref.relative_to(REFS)}: {cell['metadata']['mystnb']['figure'].get('name')}")
    assert not two, two
