"""The generated pages: the scorecard and the build record come from the executed notebooks, and a page whose
source changed after it was executed says so."""

import shutil

import nbformat

from lmcompanion import experiments, pages

from conftest import REPO

REFS = REPO / "tests" / "nbval"


def test_the_scorecard_lists_every_chapter_s_verdicts_with_counts_and_links():
    text = pages.scorecard(REFS)
    assert "(scorecard)=" in text and "## Counts" in text
    for chapter in ("AR encoder–decoder", "DeepSight", "Formal encoder–decoder"):
        assert f"## {chapter}" in text
    assert "**all chapters**" in text and "| `smoke` |" in text
    assert (
        "{doc}`01_embedding_loss </notebooks/ar_ed/01_embedding_loss>`" in text
    )  # linked to the notebook that decides it
    rows = [line for line in text.splitlines() if line.startswith("| ") and "decided in" not in line]
    assert len(rows) > 30


def test_the_build_record_lists_every_executed_notebook():
    text = pages.build_record(REFS)
    for src in sorted((REPO / "notebooks").rglob("*.py")):
        doc = src.relative_to(REPO / "notebooks").with_suffix("")
        assert f"{{doc}}`/notebooks/{doc}`" in text
    assert "| `smoke` |" in text and "Total execution time" in text
    assert all(f"## {title}" in text for title in pages.CHAPTER_TITLES.values())  # a table per chapter
    rows = [line for line in text.splitlines() if line.startswith("| {doc}")]
    assert rows and all(line.count(" | ") == 4 for line in rows)  # five columns
    assert all(line.rstrip(" |").endswith("UTC") for line in rows)  # "2026-11-27 14:38 UTC", not the ISO stamp


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


def test_the_intro_s_title_and_first_sentence_say_what_the_book_decides_and_what_it_does_not():
    rows = pages.own_verdicts(REFS)
    training = pages.claims_about_training(rows)
    assert training and any(pages.is_check(r) for r in rows)
    n = {o: sum(r["outcome"] == o for r in training) for o in pages.OUTCOMES}
    decided = n["holds"] + n["does not hold"]
    intro = pages.summary(REFS)
    title, blank, first = intro.splitlines()[:3]
    assert title == (f"# {pages.BOOK}: {decided} of {len(training)} claims about training decided at the smoke scale")
    assert not blank and "reproduced" not in intro.lower()
    assert f"decides {decided} of {len(training)} claims about what training reaches" in first
    assert f"leaves {len(training) - decided} undecided: " in first
    reasons = first.split("undecided: ")[1].split(". ")[0].split("; ")
    assert sum(int(r.split()[0]) for r in reasons) == len(training) - decided  # every undecided claim, once
    assert "says nothing about the write-ups' own scale" in first
    # the first screen, in the page's own flow: each chapter with a link, its headline verdicts and its count
    block = intro.split(":::{container} lmc-first\n")[1].split("\n:::\n")[0]
    for chapter in {r["chapter"] for r in rows}:
        line = next(x for x in block.splitlines() if f"</book/{chapter}/index>`" in x)
        head = [r for r in rows if r["chapter"] == chapter and r.get("headline") and pages.group_of(r) == "training"]
        assert line.count('class="lmc-badge') == len(head)
        assert (
            f"claim{'s' if len(pages.claims_about_training([r for r in rows if r['chapter'] == chapter])) != 1 else ''} about training: "
            in line
        )
        assert f":::{{dropdown}} {pages.CHAPTER_TITLES[chapter]}\n" in intro  # its conclusion, folded below
    assert ("**Many tests at 5%.**" in intro) == any(r["outcome"] != pages.NOT_DECIDED for r in training)


def test_a_landing_page_shows_its_headline_verdicts_first_and_every_row_once():
    rows = pages.own_verdicts(REFS)
    page = pages.summary(REFS, "ar_ed")
    mine = [r for r in rows if r["chapter"] == "ar_ed"]
    assert page.startswith(":::{container} lmc-first\n")
    first = page.split("\n:::\n")[0]
    head = [r for r in mine if r.get("headline") and pages.group_of(r) == "training"]
    assert head and first.count('class="lmc-badge') == len(head)  # the headline's verdicts on the first screen
    assert "**What `smoke` decides.** Of the write-up's claims, this build decides " in first
    table = [line for line in page.splitlines() if line.startswith("| ") and 'class="lmc-badge' in line]
    assert len(table) == len(mine)  # every row once: the headline's, then each notebook's in a dropdown
    assert all("{doc}`" in line and "</notebooks/ar_ed/" in line for line in table)
    for notebook in {r["notebook"].split("/")[-1] for r in mine if not r.get("headline")}:
        assert f"\n:::{{dropdown}} {notebook}: " in page
    scaled = [r for r in mine if not pages.is_check(r)]
    assert scaled and sum(
        ">holds at smoke" in x
        or ">does not hold at smoke" in x
        or ">inconclusive at smoke" in x
        or ">not decided at smoke" in x
        for x in table
    ) >= len(scaled)  # badges name their scale
    assert "*Effect*: the claimed-better arm's mean minus the other's" in page
    assert "How the headline comparison is run" in page  # the method, folded after the verdicts


def test_a_decided_headline_verdict_shows_its_size_on_the_first_screen():
    """Issue 54, item 1: the first screen gives a decided headline's size (its effect beside the write-up's, their
    ratio and flags) and that its arms learned; a row not decided shows its badge's reason only."""
    effect = "-0.446 ± 0.023; the write-up's -0.013, ours 34.3× it; ⚑ 10× the write-up's effect or more"
    arm = {
        "label": "flat_d512",
        "reference": "the unigram loss (validation)",
        "level": 6.0,
        "values": [4.7, 4.8],
        "at": "final",
        "kind": "loss",
    }
    row = {
        "chapter": "mixer",
        "claim": "the flat mixer wins",
        "headline": True,
        "group": "training",
        "outcome": "holds",
        "verdict": "holds",
        "effect": effect,
        "profile": "cpu",
        "arms": [arm],
    }
    (line,) = pages.headline_verdicts([row], "cpu")
    assert line.endswith(f"the flat mixer wins (effect {effect}; every arm learned)")
    short = {**arm, "values": [5.7, 4.8]}  # read from the arms: one seed 0.3 nats below its line has not learned
    (line,) = pages.headline_verdicts([{**row, "arms": [arm, short]}], "cpu")
    assert line.endswith(f"(effect {effect})")
    undecided = {**row, "outcome": pages.NOT_DECIDED, "verdict": "not decided: an arm has not learned"}
    (line,) = pages.headline_verdicts([undecided], "cpu")
    assert "every arm learned" not in line and "-0.446" not in line


def test_no_generated_page_says_1_claims_or_a_share_with_three_decimals():
    import re

    texts = [pages.summary(REFS), pages.scorecard(REFS), pages.ledger_page(REFS)]
    texts += [pages.summary(REFS, c) for c in pages.CHAPTER_TITLES]
    for text in texts:
        assert not re.search(r"(?<![\d.,])1 (claims|rows|seeds)\b", text)
        assert not re.search(r"about \d\.\d{3} of them", text)
    assert pages.plural(1, "claim") == "1 claim" and pages.plural(0, "row") == "0 rows"
    assert pages.plural(1234, "claim") == "1,234 claims"


def _gated_row(values, chance, lean="toward"):
    return {
        "chapter": "formal_ed",
        "profile": "cpu",
        "claim": "ED-Training reduces the loss",
        "group": "training",
        "verdict": f"not decided at `cpu` scale (ed_training has not learned; the data lean {lean} the claim)",
        "outcome": "not decided at this scale",
        "chance": chance,
        "effect": "-0.90 ± 0.05",
        "arms": [
            {
                "label": "ed_training",
                "reference": "the unigram loss (validation)",
                "level": 2.0,
                "values": values,
                "at": "final",
                "kind": "loss",
            }
        ],
    }


def test_badges_say_the_outcome_its_scale_and_why_and_a_gate_override_says_why_in_one_line():
    row = _gated_row([1.67, 1.75], "p = 0.004")
    assert ">not decided at cpu: arm not learned</span>" in pages.badge(row, "cpu")
    assert 'class="lmc-badge lmc-undecided"' in pages.badge(row, "cpu")
    held = {"outcome": "holds", "verdict": "holds at `cpu` scale", "group": "training", "profile": "cpu"}
    assert ">holds at cpu</span>" in pages.badge(held, "cpu")
    assert ">holds (computed)</span>" in pages.badge(held | {"group": "computed"}, "cpu")
    line = pages.override(row)
    assert line.startswith("The test alone says *holds* (p = 0.004), but the learning gate overrides it: ")
    assert "ed_training ends 0.250 nats below the unigram loss (validation) in its worst seed" in line
    assert "(the gate asks 0.500 in every seed)" in line
    assert pages.override(_gated_row([1.67, 1.75], "p = 0.004", "against")).startswith("The test alone says *does not")
    assert pages.override(_gated_row([1.67, 1.75], "p = 0.30")) == ""  # the test did not decide: nothing overridden
    assert pages.override(held | {"chance": "p = 0.004"}) == ""
    assert "The test alone says" in pages._cell(row) and pages._row_line(row, "notebooks", "cpu").count("<br>") == 1
    # the intro's short form beside the claim, and nothing where the gate overrides nothing
    assert pages.override_short(_gated_row([1.67, 1.75], "p = 0.004")) == (
        " (the test alone says *holds*, p = 0.004; the learning gate overrides it)"
    )
    assert pages.override_short(_gated_row([1.67, 1.75], "p = 0.30")) == "" == pages.override_short(held)


def test_the_chance_line_counts_only_the_tested_rows():
    rows = [{"outcome": o} for o in ("holds", "does not hold", "inconclusive at this scale")] * 10
    rows += [{"outcome": "not decided at this scale"}] * 50
    line = pages.chance_line(rows)
    assert "30 claims were tested (20 decided)" in line and "on average about 1.5 of them would hold" in line
    assert "no more than 4 claims each way" in line
    assert "fewer than one of them" in pages.chance_line(rows[:6]) and "6 claims were tested" in pages.chance_line(
        rows[:6]
    )
    assert pages.chance_line([{"outcome": "not decided at this scale"}]).startswith("No claim")
    one = pages.chance_line(rows[:1])  # 19 times in 20 no claim of one holds by chance: said in words, not as 0
    assert one.endswith("and 19 times in 20 none either way.") and "no more than 0" not in one


def test_the_scale_a_verdict_names_is_read_back_from_its_words():
    row = {"verdict": "does not hold at `cpu` scale: 0.036% of the write-up's tokens", "outcome": "does not hold"}
    assert pages.scale_of(row) == "`cpu` scale: 0.036% of the write-up's tokens"
    row = {
        "verdict": "inconclusive at `cpu` scale: 0.036% of the write-up's tokens (the data lean toward the claim)",
        "outcome": "inconclusive at this scale",
    }
    assert pages.scale_of(row) == "`cpu` scale: 0.036% of the write-up's tokens"
    assert pages.scale_of({"verdict": "holds", "outcome": "holds"}) == ""
    assert pages.is_check({"chance": "exact (no sampling)"}) and pages.is_check({"check": True, "chance": "χ² p"})


def test_the_summaries_are_written_with_the_other_pages(tmp_path):
    pages.write_pages(REFS, tmp_path)
    assert (tmp_path / "summary.md").read_text() == pages.summary(REFS)
    for chapter in experiments.chapters():
        assert (tmp_path / f"summary-{chapter}.md").is_file()


def test_the_pages_refuse_a_verdict_decided_on_an_arm_that_has_not_learned(tmp_path):
    import json

    import pytest

    from lmcompanion.errors import LMCError

    assert pages.gate_violations(REFS) == []  # the references obey the gate
    nb = nbformat.v4.new_notebook()
    row = {
        "chapter": "ar_ed",
        "profile": "cpu",
        "claim": "a beats b",
        "verdict": "holds",
        "outcome": "holds",
        "group": "training",
        "notebook": "ar_ed/x",
        "arms": [
            {"label": "a", "reference": "unigram", "level": 6.0, "values": [5.0, 5.6], "at": "final", "kind": "loss"}
        ],
    }
    nb.cells.append(
        nbformat.v4.new_code_cell(
            outputs=[
                nbformat.v4.new_output(
                    "display_data",
                    data={pages.GLUE_MIME: repr(json.dumps([row]))},
                    metadata={"scrapbook": {"name": "verdicts:cpu"}},
                )
            ]
        )
    )
    (tmp_path / "ar_ed").mkdir()
    nbformat.write(nb, tmp_path / "ar_ed" / "x.ipynb")
    assert pages.gate_violations(tmp_path) == ["ar_ed/x (cpu): 'a beats b' holds with arms that have not learned: a"]
    with pytest.raises(LMCError, match="arms that have not learned"):
        pages.write_pages(tmp_path, tmp_path / "out")
    assert not (tmp_path / "out").exists()  # nothing written
    row["arms"][0]["values"] = [5.0, 5.5]
    nb.cells[0].outputs[0]["data"][pages.GLUE_MIME] = repr(json.dumps([row]))
    nbformat.write(nb, tmp_path / "ar_ed" / "x.ipynb")
    assert pages.gate_violations(tmp_path) == []


def _headline_row(chapter: str, *arms: tuple[str, list[float]]) -> dict:
    """A glued headline row whose arms end at ``values`` against a unigram loss of 6.0 (learned: all at most 5.5)."""
    return {
        "chapter": chapter,
        "profile": "cpu",
        "claim": "a beats b",
        "verdict": "not decided at this scale",
        "outcome": "not decided at this scale",
        "group": "training",
        "headline": True,
        "arms": [
            {"label": label, "reference": "unigram", "level": 6.0, "values": values, "at": "final", "kind": "loss"}
            for label, values in arms
        ],
    }


def test_a_headline_whose_arm_has_not_learned_says_so_with_its_declared_shortfall(monkeypatch):
    from dataclasses import replace

    from lmcompanion import experiments
    from lmcompanion.experiments import headline_comparisons

    learned = [5.2] * 5
    short = [5.2, 5.6, 5.3, 5.2, 5.2]  # one seed 0.4 nats below the line
    ok = pages.headline_line(
        "deepsight", [_headline_row("deepsight", ("mse_d11", learned), ("baseline", learned))], "cpu"
    )
    assert "has not learned" not in ok and "have not learned" not in ok
    (h,) = experiments.headlines("deepsight")
    monkeypatch.setitem(headline_comparisons.HEADLINES, "deepsight", [replace(h, cpu_shortfall="the reason, declared")])
    line = pages.headline_line(
        "deepsight", [_headline_row("deepsight", ("mse_d11", short), ("baseline", learned))], "cpu"
    )
    assert "**In this build `mse_d11` has not learned**" in line and "cpu`: the reason, declared." in line
    monkeypatch.undo()
    # a headline that declares no shortfall says that the cost was not measured
    line = pages.headline_line("ar_ed", [_headline_row("ar_ed", ("mse_pos_sub", short), ("baseline", short))], "cpu")
    assert "`mse_pos_sub`, `baseline` have not learned" in line and "has not been measured" in line
    smoke = _headline_row("ar_ed", ("mse_pos_sub", short), ("baseline", short)) | {"profile": "smoke"}
    assert "not learned" not in pages.headline_line("ar_ed", [smoke], "smoke")  # a generated corpus: no statement
    # with two headlines in a chapter, a row counts for the one whose arms it compares only
    one = experiments.Headline("x", "one", ("x/a", "x/b"), "why")
    row = _headline_row("x", ("a", short), ("b (the embedder)", learned))
    assert pages._of_headline(row, one, 2)
    other = experiments.Headline("x", "two", ("x/a", "x/c"), "why")
    assert not pages._of_headline(row, other, 2) and pages._of_headline(row, other, 1)


def test_a_headline_says_where_its_cpu_steps_depart_from_the_rule_and_where_its_arms_only_illustrate():
    from lmcompanion import experiments

    (deep,) = experiments.headlines("deepsight")
    assert deep.cpu_departure and not deep.cpu_illustrates
    line = pages.headline_line("deepsight", [], "cpu")
    steps = experiments.config("deepsight/baseline", "cpu", device="cpu").train.max_steps
    assert steps == 2 * experiments.config("ar_ed/baseline", "cpu", device="cpu").train.max_steps  # twice the rule's
    assert f"This chapter departs from it: {deep.cpu_departure}. Here the baseline trains {steps:,} steps" in line
    assert "departs" not in pages.headline_line("deepsight", [], "gpu")
    assert "departs" not in pages.headline_line("ar_ed", [], "cpu")  # the AR encoder-decoder keeps the rule's 500
    (match,) = experiments.headlines("retrieval")
    row = _headline_row("retrieval", ("flat_d1024_c32", [1 / 31]), ("llama_d1024_c32", [1 / 31]))
    for arm in row["arms"]:  # top-1 at chance, one seed
        arm.update(reference="chance", level=1 / 31, kind="accuracy")
    line = pages.headline_line("retrieval", [row], "cpu")
    assert (
        f"At `cpu` its arms run 1 seed, like the chapter's other arms: they illustrate and decide nothing, since "
        f"they cannot learn at `cpu` at a cost the build can afford: {match.cpu_shortfall}"
    ) in line
    assert line.count(match.cpu_shortfall) == 1 and line.endswith("are not decided at `cpu`.")
    gpu = pages.headline_line("retrieval", [], "gpu")
    n = len(experiments.seeds_of(match.arms[0], "gpu"))  # the plan's seeds (experiments.HEADLINE_SEEDS), not typed
    assert "illustrate" not in gpu and f"At `gpu` its arms run {n} seeds" in gpu


def test_a_landing_page_says_what_the_illustrations_run_and_why():
    from lmcompanion import experiments

    for chapter, words, steps in (("ar_ed", "half", 250), ("deepsight", "a quarter", 250), ("hourglass", "half", 103)):
        line = pages.headline_line(chapter, [], "cpu")
        assert (
            f"they illustrate, with one seed and {words} of the headline arms' steps ({steps} for the baseline)" in line
        ), chapter
        assert "runs of different lengths are never compared" in line
        assert "illustrate, with one seed" not in pages.headline_line(chapter, [], "gpu")
    for chapter in ("mixer", "formal_ed", "retrieval"):  # they keep their steps
        assert "of the headline arms' steps" not in pages.headline_line(chapter, [], "cpu")
    assert (
        experiments.config(
            "hourglass/vanilla", "cpu", device="cpu", protocol=experiments.Protocol.ILLUSTRATIONS
        ).train.max_steps
        == 103
    )
