"""The forms of verdict rows (lmcompanion.chapters.verdict_forms), the size beside each verdict and the trend of a
headline gap (lmcompanion.verdicts): each form decides its claim's shape, a row's size is computed from its data, and
the chapters' rows use the form their claim's words choose."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pandas as pd
import pytest

from lmcompanion import claims, learning, verdicts
from lmcompanion.chapters import ar_ed, deepsight, hourglass, mixer
from lmcompanion.chapters import verdict_forms as vf
from lmcompanion.verdicts import FAILS, HOLDS, INCONCLUSIVE, NOT_DECIDED

from conftest import REPO

LOW, HIGH = [4.0, 4.1, 4.2], [4.3, 4.4, 4.45]


def test_no_gain_holds_within_its_margin_and_is_refuted_only_by_a_significant_gain_beyond_it():
    assert vf.no_gain("x", "", HIGH, LOW, ("a", "b"), margin=0.05).verdict == HOLDS  # a is worse: no gain, shown
    assert vf.no_gain("x", "", LOW, HIGH, ("a", "b"), margin=0.05).verdict == FAILS  # a gains 0.28 > 0.05
    assert vf.no_gain("x", "", LOW, HIGH, ("a", "b"), margin=0.5).verdict == HOLDS  # ... a gain within the margin
    near = vf.no_gain("x", "", [4.0, 4.1, 4.2], [4.05, 4.08, 4.22], ("a", "b"), margin=0.05)
    assert near.verdict.startswith(INCONCLUSIVE) and "margin 0.05 nats" in near.effect
    assert {v.form for v in (near, vf.no_gain("x", "", LOW, HIGH, ("a", "b")))} == {verdicts.NO_GAIN}
    # without a margin the claim can only be refuted, never shown
    assert vf.no_gain("x", "", HIGH, LOW, ("a", "b")).verdict.startswith(INCONCLUSIVE)


def test_no_worse_is_the_same_test_the_other_way_on_a_ratio():
    better = vf.no_worse("x", "", LOW, HIGH, ("a", "b"), margin=1.02, ratio=True)
    assert better.verdict == HOLDS and better.log_size
    said = verdicts.sized(verdicts.replace(better, published_size=-0.1))  # a log ratio, said as a ratio
    assert said.effect.endswith("margin x1.02; the write-up's x0.9048, ours 0.67× it")
    worse = vf.no_worse("x", "", HIGH, LOW, ("a", "b"), margin=1.02, ratio=True)
    assert worse.verdict == FAILS and worse.form == verdicts.NO_WORSE and "margin x1.02" in worse.effect


def test_a_crossover_holds_only_when_both_parts_hold_and_is_not_decided_below_one_pass():
    better, reverse = verdicts.claim("", "", LOW, HIGH), verdicts.claim("", "", HIGH, LOW)
    both = vf.crossover("x", "", [("validation", better), ("train", better)])
    assert both.verdict == HOLDS and both.form == verdicts.CROSSOVER and both.effect.startswith("validation ")
    assert vf.crossover("x", "", [("validation", better), ("train", reverse)]).verdict == FAILS
    lean = vf.crossover("x", "", [("validation", better), ("train", verdicts.claim("", "", LOW, [4.0, 4.2, 4.1]))])
    assert lean.verdict.startswith(INCONCLUSIVE)
    cfg = SimpleNamespace(
        data=SimpleNamespace(sequences_per_epoch=lambda model: 1000),
        model=None,
        train=SimpleNamespace(max_steps=10, global_batch=50),
    )  # half a pass
    undecided = vf.needs_passes(both, cfg)
    assert undecided.outcome == NOT_DECIDED and "cannot show" in undecided.verdict
    cfg.train.max_steps = 100  # five passes
    assert vf.needs_passes(both, cfg) is both


def test_the_size_of_a_row_is_computed_beside_its_effect_and_a_tenfold_effect_is_flagged():
    v = verdicts.claim("x", "", LOW, HIGH)
    small = verdicts.sized(verdicts.replace(v, published_size=-0.2))
    assert small.size_ratio == pytest.approx(small.size / -0.2) and "⚑" not in small.effect
    assert small.effect.startswith(v.effect + "; the write-up's -0.2, ours 1.4× it")
    big = verdicts.sized(verdicts.replace(v, published_size=-0.02))
    assert big.flags == ("10× the write-up's effect or more",) and "⚑ 10× the write-up's effect or more" in big.effect
    assert verdicts.sized(big) == big  # sized again: the text replaced, not repeated
    other = verdicts.sized(verdicts.replace(v, published_size=0.1))
    assert "with the other sign" in other.effect
    undecided = verdicts.sized(verdicts.replace(v, published_size=-0.02, verdict=NOT_DECIDED + " (a has not learned)"))
    assert not undecided.flags  # only a decided row is flagged
    assert verdicts.sized(verdicts.replace(v, published_size=None)).effect == v.effect  # no number: nothing said


def test_a_decided_row_whose_effect_has_the_other_sign_at_another_profile_says_so():
    here = verdicts.sized(verdicts.claim("x", "", LOW, HIGH))
    there = verdicts.claim("x", "", HIGH, LOW)
    flagged = verdicts.cross_profile([here], {"gpu": [there]})[0]
    assert (
        flagged.flags == ("the other sign at `gpu` (+0.283, does not hold)",) and "⚑ the other sign" in flagged.effect
    )
    assert verdicts.cross_profile([here], {"gpu": [here]})[0].flags == ()
    assert verdicts.cross_profile(verdicts.cross_profile([here], {"gpu": [there]}), {"gpu": [here]})[0].flags == ()


def _run(steps_vals, total, metric="val"):
    ev = pd.DataFrame({"step": [s for s, _ in steps_vals], metric: [x for _, x in steps_vals]})
    return SimpleNamespace(evals=lambda: ev, summary={"steps": total})


def test_the_gap_between_headline_arms_is_closing_steady_or_widening_over_the_second_half():
    b = [_run([(100, 5.0), (250, 4.0), (375, 3.8), (500, 3.6)], 500)]
    closing = [_run([(100, 5.5), (250, 4.3), (375, 4.0), (500, 3.8)], 500)]
    points, text = verdicts.gap_trend(closing, b, "val")
    assert text == "closing: +0.300 at step 250, +0.200 at step 500 (-33%)" and len(points) == 4
    widening = [_run([(100, 5.5), (250, 4.25), (375, 4.0), (500, 3.95)], 500)]
    assert verdicts.gap_trend(widening, b, "val")[1].startswith("widening: +0.250 at step 250, +0.350 at step 500")
    steady = [_run([(100, 5.5), (250, 4.3), (375, 4.1), (500, 3.89)], 500)]
    assert verdicts.gap_trend(steady, b, "val")[1].startswith("steady")
    # arms of different lengths are read at the same fraction of their runs
    longer = [_run([(200, 5.5), (500, 4.3), (750, 4.0), (1000, 3.8)], 1000)]
    assert (
        verdicts.gap_trend(longer, b, "val")[1]
        == "closing: +0.300 at 50% of training, +0.200 at 100% of training (-33%)"
    )
    assert verdicts.gap_trend([_run([(500, 3.0)], 500)], [_run([(500, 3.1)], 500)], "val")[1] == ""  # one point
    crossing = [_run([(100, 5.5), (250, 3.8), (375, 3.7), (500, 3.9)], 500)]  # ahead by 0.2, then behind by 0.3
    assert (
        verdicts.gap_trend(crossing, b, "val")[1]
        == "widening: -0.200 at step 250, +0.300 at step 500 (it changed sign)"
    )
    uneven = [_run([(100, 5.5), (200, 4.6), (300, 4.2), (400, 3.95), (450, 3.9)], 450)]  # evaluated elsewhere
    # read at b's points, the other run interpolated between its own evaluations (4.5 halfway)
    assert (
        verdicts.gap_trend(b, uneven, "val")[1]
        == "closing: -0.500 at 50% of training, -0.300 at 100% of training (-40%)"
    )
    fails = verdicts.claim("x", "", [4.3, 4.4, 4.45], [4.0, 4.1, 4.2])
    said = verdicts.with_trend(fails, "closing: +0.300 at step 250, +0.200 at step 500 (-33%)")
    assert said.verdict.startswith("does not hold (the gap between the arms is closing")
    assert "gap closing: +0.300" in said.effect and said.trend.startswith("closing")
    assert verdicts.at_scale(said, "cpu", (1e-3, 1e-3)).outcome == FAILS
    sized_only = verdicts.with_trend(verdicts.replace(fails, published_size=-0.1), "")  # no trend: still sized
    assert "the write-up's -0.1" in sized_only.effect and not sized_only.trend


def test_a_headline_row_carries_its_gap_trend_from_the_runs_eval_records(monkeypatch):
    monkeypatch.setattr(learning, "reference", lambda cfg, metric: learning.Reference("the unigram loss", 9.0))
    row = next(r for r in claims.rows("ar_ed") if r.text == "the combined model beats the baseline in validation loss")

    def runs(finals):
        return [
            SimpleNamespace(
                summary={"final": {"val": f}, "steps": 500},
                config=None,
                evals=lambda f=f: pd.DataFrame({"step": [250, 500], "val": [f + 0.3, f]}),
            )
            for f in finals
        ]

    v = claims.decide("ar_ed", row, claims.Context({row.arms[0]: runs(HIGH), row.arms[1]: runs(LOW)}))
    assert v.headline and v.outcome == FAILS and v.trend.startswith("steady")
    assert v.published_size == pytest.approx(3.378 - 3.424) and v.form == verdicts.BETTER


def test_the_chapters_rows_take_the_form_of_their_claims_words():
    form = {r.text: r for c in ("ar_ed", "deepsight", "hourglass", "mixer") for r in claims.rows(c)}
    assert {t for t, *_ in ar_ed.CROSSOVERS} <= set(form)  # "... better in validation loss but worse in train loss"
    assert not [r.text for c in ("ar_ed", "deepsight") for r in claims.rows(c) if r.text.startswith("...")]  # no
    # part of a crossover stands alone
    assert deepsight.COSINE in form and "slightly underperformed" in deepsight.COSINE
    no_gain = [hourglass.DENSE_REPEAT, *(hourglass.in_mode(hourglass.LATENT_LOSS, m) for m in (False, True))]
    assert all(t in form and "does not help" in t for t in no_gain)
    approx = [p for p in mixer.PAIRS if "approximately as or slightly more efficient" in p.text]
    assert [p.kind for p in approx] == ["no_worse"]


def _glued(chapter: str) -> list[dict]:
    import ast

    rows = []
    for path in sorted((REPO / "tests" / "nbval" / chapter).glob("*.ipynb")):
        for cell in json.loads(path.read_text())["cells"]:
            for out in cell.get("outputs", []):
                if out.get("metadata", {}).get("scrapbook", {}).get("name", "").startswith("verdicts:"):
                    rows += json.loads(ast.literal_eval(out["data"]["application/papermill.record/text/plain"]))
    return rows


@pytest.mark.parametrize("chapter", ["formal_ed", "ar_ed", "deepsight", "hourglass", "mixer"])
def test_every_decided_row_of_a_chapter_names_its_form(chapter):
    """Every row its smoke references glue names its form, except those no form decided (not run at this profile, not
    decidable from recorded runs), and every form named is one of the vocabulary's."""
    rows = _glued(chapter)
    assert rows
    # a row no form decided (verdicts.not_decided: not run at this profile, or not decidable from recorded runs)
    unformed = [r["claim"] for r in rows if not r.get("form") and r["seeds"] != "0"]
    assert not unformed, f"{chapter}: rows decided in no form: {unformed}"
    assert {r["form"] for r in rows if r.get("form")} <= set(verdicts.FORMS)
