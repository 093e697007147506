"""Issue 50, items 3 and 5: each chapter's conclusion says what the recorded runs of another profile decided, beside
the build's verdicts of the same rows and whether they agree, with the data caveat where those runs go over their
data more times than the write-up's; its model sizes are the models' own counts; and each headline row's gap series is
drawn beside it on its landing page, the figure's series being the row's."""

import json

import nbformat
import numpy as np
import pytest

from lmcompanion import claims, experiments, models, pages, verdicts
from lmcompanion.chapters import scale
from lmcompanion.config import WriteUpPasses
from lmcompanion.errors import ConfigError
from lmcompanion.formats import count

HEADLINE = "the flat mixer (d=512) reaches a lower validation loss than the optimal transformer (d=512)"


def _row(profile: str, outcome: str, claim: str = HEADLINE, **extra) -> dict:
    arms = [
        {"label": label, "reference": "unigram", "level": 6.0, "values": [5.0, 5.1, 5.2], "at": "final", "kind": "loss"}
        for label in ("flat_d512", "llama_d512")
    ]
    return {
        "chapter": "mixer",
        "profile": profile,
        "claim": claim,
        "verdict": outcome,
        "outcome": outcome,
        "group": "training",
        "headline": claim == HEADLINE,
        "arms": arms,
        "effect": "",
        **extra,
    }


def test_the_headline_row_is_registered_with_its_gap():
    assert pages.gap_of("mixer", HEADLINE) == ("mixer/flat_d512", "mixer/llama_d512", "val")


@pytest.mark.parametrize(
    "mine, theirs, word",
    [
        ("holds", "does not hold", "disagrees"),
        ("holds", "holds", "agrees"),
        ("not decided at this scale", "does not hold", "decided at `gpu` only"),
        ("does not hold", "inconclusive at this scale", "decided at `cpu` only"),
        ("inconclusive at this scale", "not decided at this scale", "decided at neither"),
    ],
)
def test_a_recorded_row_agrees_or_disagrees_with_the_build_s(mine, theirs, word):
    assert pages.agreement(_row("gpu", theirs), _row("cpu", mine)) == word
    assert pages.agreement(_row("gpu", "holds"), None) == "decided at `gpu` only"


def test_a_conclusion_whose_recorded_gpu_headline_disagrees_with_cpu_says_so(monkeypatch):
    monkeypatch.setattr(scale, "passes", lambda names, profile: [])  # no data caveat here (tested below)
    own = [_row("cpu", "holds", effect="-0.446 ± 0.021")]
    rec = [_row("gpu", "does not hold", effect="+0.648 ± 0.026; the write-up's -0.013")]
    text = pages.conclusion(own, "mixer", own + rec, with_lead=False)
    assert "**What the recorded `gpu` runs decided.**" in text
    assert (
        f"The headline, {HEADLINE}: *does not hold* at `gpu` (+0.648 ± 0.026; the write-up's -0.013), *holds* at "
        "`cpu` (disagrees)"
    ) in text
    assert "Against `cpu`: 1 disagrees." in text and "**The two profiles disagree on 1 row**" in text
    agreeing = pages.conclusion(own, "mixer", own + [_row("gpu", "holds")], with_lead=False)
    assert "(agrees)" in agreeing and "disagree" not in agreeing
    assert "What the recorded" not in pages.conclusion(own, "mixer", own, with_lead=False)  # none recorded: nothing


def test_the_data_caveat_is_said_where_the_recorded_runs_pass_over_their_data_more_than_the_write_up_s(monkeypatch):
    made = {"mixer/flat_d512": (5.21, 3.12), "mixer/llama_d512": (1.2, 1.64)}
    monkeypatch.setattr(experiments, "passes", lambda cfg: made[cfg.name][0])
    monkeypatch.setattr(
        scale, "write_up_passes", lambda name: (made[name][1], f"≈ {made[name][1]} (of 2,000,000 stories)")
    )
    caveat = scale.passes_caveat(["mixer/flat_d512", "mixer/llama_d512"], "gpu")
    assert "flat_d512: 5.21 passes here, ≈ 3.12 (of 2,000,000 stories) in the write-up" in caveat
    assert "llama_d512" not in caveat and "its arm go" in caveat  # fewer passes than the write-up's: no caveat
    own, rec = [_row("cpu", "holds")], [_row("gpu", "does not hold")]
    assert caveat in pages.conclusion(own, "mixer", own + rec, with_lead=False)
    made["mixer/flat_d512"] = (3.0, 3.12)
    assert scale.passes_caveat(["mixer/flat_d512", "mixer/llama_d512"], "gpu") == ""


def test_the_write_up_s_passes_are_its_data_kind_s_number_in_the_book_format(monkeypatch):
    """A data kind states the write-up's passes as a number (to the decimals it vouches for), never as text to read
    one back from; the book writes it, an estimate to three significant digits, and compares at what it writes."""
    cfg = experiments.config("mixer/flat_d512", "paper", device="cpu")
    for stated, number, text in (
        (WriteUpPasses(3.12, approximate=True, words="(of 2,000,000 stories)"), 3.12, "≈ 3.12 (of 2,000,000 stories)"),
        (WriteUpPasses(10.37, approximate=True, words="(of 2,000,000 stories)"), 10.4, "≈ 10.4 (of 2,000,000 stories)"),
        (WriteUpPasses(550.0, approximate=True, words="(of 180,000 queries)"), 550.0, "≈ 550 (of 180,000 queries)"),
        (WriteUpPasses(0.74, approximate=True), 0.74, "≈ 0.740"),
        (
            WriteUpPasses(1536, words="(2.0 epochs of every stride-1 window)"),
            1536.0,
            "1,536 (2.0 epochs of every stride-1 window)",
        ),
        (WriteUpPasses(None, words="unknown"), None, "unknown"),
        (WriteUpPasses(None, words="no experiment in the write-up"), None, "no experiment in the write-up"),
    ):
        monkeypatch.setattr(type(cfg.data), "write_up_passes", lambda self, run_cfg, stated=stated: stated)
        assert scale.write_up_passes("mixer/flat_d512") == (number, text)
        assert scale.write_up_passes_text(cfg) == text
    assert scale.write_up_passes("mixer/flat_d512_wikipedia") == (None, scale.BOOKS_OWN_SETTING.words)
    for wrong in (
        dict(passes=1536.5),  # a count that is not whole
        dict(passes=None, approximate=True, words="unknown"),  # an estimate of nothing
        dict(passes=None),  # no number and no words
        dict(passes=-1.0, approximate=True),
    ):
        with pytest.raises(ConfigError):
            WriteUpPasses(**wrong)


@pytest.mark.parametrize("chapter, profile", [("mixer", "gpu"), ("ar_ed", "gpu"), ("mixer", "cpu")])
def test_a_chapter_s_model_sizes_are_the_models_own_counts(chapter, profile):
    arms = pages.headline_arms(chapter)
    line = pages.sizes_line(chapter, profile)
    assert line.startswith(f"**Its headline models at `{profile}`:**")
    for name in arms:
        here = models.num_params(experiments.config(name, profile, device="cpu").model)
        paper = models.num_params(experiments.config(name, "paper", device="cpu").model)
        assert count(here) in line and count(paper) in line
        if here != paper:
            assert (
                f"{name.split('/')[-1]} with {count(here)} parameters ({verdicts.percent(here / paper)} of the "
                f"write-up's {count(paper)})" in line
            )
    if chapter == "ar_ed" and profile == "gpu":  # the write-up's sizes, said so because the counts are equal
        assert "the write-up's sizes" in line
    if chapter == "mixer" and profile == "gpu":  # widths divided by 4: not the write-up's sizes
        assert "the write-up's sizes" not in line
        assert "the write-up's model sizes" not in pages.conclusion([_row("cpu", "holds")], "mixer", with_lead=False)


def _points(gaps, steps):
    return [[s / steps[-1], s, g] for s, g in zip(steps, gaps)]


def test_a_headline_row_carries_its_gap_series_and_the_figure_draws_that_series(tmp_path):
    import types

    import pandas as pd

    def run(vals):
        ev = pd.DataFrame({"step": [100, 250, 375, 500], "val": vals})
        return types.SimpleNamespace(evals=lambda: ev, summary={"steps": 500})

    a, b = [run([5.5, 4.3, 4.0, 3.8])], [run([5.0, 4.0, 3.8, 3.6])]
    points, line = verdicts.gap_trend(a, b, "val")
    v = verdicts.with_trend(verdicts.claim(HEADLINE, "", [4.3, 4.4, 4.45], [4.0, 4.1, 4.2]), line, points)
    assert [g for _, _, g in v.gap] == pytest.approx([0.5, 0.3, 0.2, 0.2])
    assert [s for _, s, _ in v.gap] == [100, 250, 375, 500]
    row = json.loads(json.dumps(_row("cpu", v.outcome, trend=v.trend, gap=v.gap)))  # as glued
    fig = pages.gap_figure(row, "mixer")
    drawn = fig.axes[0].lines[-1]
    assert np.allclose(drawn.get_ydata(), [p[2] for p in v.gap])  # the figure's series is the gap series
    assert list(drawn.get_xdata()) == [100, 250, 375, 500]  # against step (every run evaluated at the same steps)
    assert fig.axes[0].get_xlabel() == "training step" and fig.axes[0].get_ylabel() == "gap in validation loss"
    lines = pages.gap_figures([row, _row("cpu", "holds")], "mixer", tmp_path / "generated")  # the second: no series
    folder = tmp_path / "generated"
    assert (folder / "gap-mixer-1.png").is_file() and not (folder / "gap-mixer-2.png").exists()
    text = "\n".join(lines)
    assert lines[0] == ":::{figure} ../generated/gap-mixer-1.png"
    assert lines[2].startswith(":width: ") and lines[2].endswith("px")  # its own size, not the column's
    assert (
        ":alt: Line chart of flat_d512's validation loss minus llama_d512's against training step: +0.500 at step "
        "100, +0.200 at step 500; closing."
    ) in text
    assert f"for the claim that {HEADLINE}" in text and f"is {v.trend}." in text


def test_arms_of_different_lengths_are_drawn_against_the_share_of_training():
    row = _row(
        "cpu",
        "holds",
        trend="closing: +0.300 at 50% of training, +0.200 at 100% of training (-33%)",
        gap=_points([0.5, 0.3, 0.2], [200, 500, 1000]),
    )
    fig = pages.gap_figure(row, "mixer")
    assert list(fig.axes[0].lines[-1].get_xdata()) == [20.0, 50.0, 100.0]
    assert fig.axes[0].get_xlabel() == "share of each arm's training (%)"


def test_a_landing_page_shows_each_headline_gap_figure_below_its_table(tmp_path):
    row = _row(
        "cpu",
        "not decided at this scale",
        trend="closing: +0.300 at step 250, +0.200 at step 500 (-33%)",
        gap=_points([0.5, 0.3, 0.2], [100, 250, 500]),
        notebook="mixer/09_verdicts",
    )
    nb = nbformat.v4.new_notebook(metadata={"lmcompanion": {"profile": "cpu"}})
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
    (tmp_path / "nb" / "mixer").mkdir(parents=True)
    nbformat.write(nb, tmp_path / "nb" / "mixer" / "09_verdicts.ipynb")
    text = pages.summary(tmp_path / "nb", "mixer", figures=tmp_path / "generated")
    table = text.index("**The headline comparison.**")
    assert text.index(":::{figure} ../generated/gap-mixer-1.png") > table
    assert (tmp_path / "generated" / "gap-mixer-1.png").is_file()
    assert "{figure}" not in pages.summary(tmp_path / "nb", "mixer")  # no folder given: no figure


def test_the_decided_headline_row_s_gap_is_the_one_its_trend_reads():
    rows = {r.text: r for r in claims.rows("mixer")}
    assert rows[HEADLINE].gap == pages.gap_of("mixer", HEADLINE)


def test_a_recorded_cost_row_not_timed_side_by_side_gives_the_runs_own_times(monkeypatch):
    monkeypatch.setattr(scale, "passes", lambda names, profile: [])
    claim = "the best repeat model (512-32, 6 soft experts) is a lot faster than the vanilla transformer"
    times = (
        "not timed side by side at this profile (the runs' own training time: repeat: 0.142 s/step; vanilla: "
        "0.121 s/step)"
    )
    own = [_row("cpu", "does not hold", claim=claim, group="cost")]
    rec = [_row("gpu", "inconclusive at this scale", claim=claim, group="cost", ours=times)]
    text = pages.conclusion(own, "hourglass", own + rec, with_lead=False)
    assert (
        f"Cost measured on the machine that made them: {claim}: *inconclusive* at `gpu` ({times}), *does not "
        "hold* at `cpu` (decided at `cpu` only)."
    ) in text
