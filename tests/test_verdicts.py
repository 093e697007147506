"""The verdict rule's wording (lmcompanion.verdicts): verdicts reached from runs carry the scale they were reached at."""

import pytest

from lmcompanion import experiments, verdicts


def _sampled(word: str) -> verdicts.Verdict:
    return verdicts.Verdict("a claim", "", "", word, seeds="3 vs 3", chance="p = 0.050")


@pytest.mark.parametrize(
    "word, expected",
    [
        (verdicts.HOLDS, "holds at `cpu` scale: 0.036% of the write-up's tokens"),
        (verdicts.FAILS, "does not hold at `cpu` scale: 0.036% of the write-up's tokens"),
        (
            verdicts.INCONCLUSIVE + " (the data lean toward the claim)",
            "inconclusive at `cpu` scale: 0.036% of the write-up's tokens (the data lean toward the claim)",
        ),
    ],
)
def test_a_sampled_verdict_says_its_profile_and_share_of_the_write_ups_tokens(word, expected):
    v = verdicts.at_scale(_sampled(word), "cpu", (0.000355, 0.000355))
    assert v.verdict == expected
    assert v.outcome == verdicts.outcome_of(word)
    assert verdicts.at_scale(v, "cpu", (0.000355, 0.000355)) == v  # scaled once


def test_rows_decided_by_computation_keep_their_words_and_undecided_rows_name_their_scale():
    exact = verdicts.exact("a count", "", "", False)
    computed = verdicts.exact("the write-up's sum", "", "", True, kind=verdicts.COMPUTED)
    not_run = verdicts.not_decided("c", "", "not run", "its arms are not run at this profile")
    assert verdicts.at_scale(exact, "cpu", (1e-4, 1e-4)) == exact
    assert verdicts.at_scale(computed, "cpu", (1e-4, 1e-4)) == computed
    scaled = verdicts.at_scale(not_run, "cpu", (1e-4, 1e-4))
    assert scaled.verdict == (
        "not decided at `cpu` scale: 0.010% of the write-up's tokens (its arms are not run at this profile)"
    )
    assert scaled.outcome == verdicts.NOT_DECIDED
    assert verdicts.at_scale(not_run, "cpu", None).verdict == (
        "not decided at `cpu` scale (its arms are not run at this profile)"
    )


def _arm(label, values, level=6.0, kind="loss"):
    from lmcompanion.learning import Arm

    return Arm(
        label, "the unigram loss (validation)" if kind == "loss" else "chance (1/31)", level, tuple(values), kind=kind
    )


@pytest.mark.parametrize(
    "word", [verdicts.HOLDS, verdicts.FAILS, verdicts.INCONCLUSIVE + " (the data lean toward the claim)"]
)
def test_the_gate_turns_any_verdict_with_an_arm_that_has_not_learned_into_not_decided(word):
    v = _sampled(word)
    learned, flat = _arm("a", [5.0, 5.4, 5.49]), _arm("b", [5.0, 5.6, 4.0])  # b: one seed 0.4 nats below its line
    assert verdicts.gate(v, [learned]).verdict == word  # every seed at least half a nat below: decided as tested
    gated = verdicts.gate(v, [learned, flat])
    assert gated.outcome == verdicts.NOT_DECIDED and gated.verdict.startswith(
        "not decided at this scale (b has not learned"
    )
    assert gated.chance == v.chance and gated.effect == v.effect  # the test's numbers are kept
    assert ("lean toward" in gated.verdict) == (word != verdicts.FAILS)
    assert gated.arms == (learned, flat) and "b 0.40–2.00 nats below the unigram loss (validation) ✗" in gated.learned
    assert verdicts.at_scale(gated, "cpu", (1e-4, 1e-4)).verdict.startswith(
        "not decided at `cpu` scale: 0.010% of the write-up's tokens (b has not learned"
    )


def test_the_gate_reads_accuracies_against_twice_chance_and_never_passes_a_nan():
    acc = _arm("m", [0.07, 0.09], level=1 / 31, kind="accuracy")
    assert acc.learned and acc.text().endswith("✓")
    assert not _arm("m", [0.07, 0.06], level=1 / 31, kind="accuracy").learned
    assert not _arm("x", [float("nan"), 1.0]).learned and not _arm("x", []).learned


def test_counts_keep_the_fourth_outcome_apart():
    rows = [
        _sampled(verdicts.HOLDS),
        verdicts.gate(_sampled(verdicts.HOLDS), [_arm("b", [5.9])]),
        verdicts.not_decided("c", "", "", "not run"),
    ]
    assert verdicts.counts(rows) == {
        verdicts.HOLDS: 1,
        verdicts.FAILS: 0,
        verdicts.INCONCLUSIVE: 0,
        verdicts.NOT_DECIDED: 2,
    }


def test_shares_are_two_significant_digits_in_fixed_notation_and_a_range_where_arms_differ():
    assert [verdicts.percent(x) for x in (0.000355, 0.042, 1.0, 5.33e-8)] == ["0.036%", "4.2%", "100%", "0.0000053%"]
    assert verdicts.share_text((2.2e-5, 3.0e-5)) == "0.0022–0.0030% of the write-up's tokens"


def test_the_share_is_computed_from_the_profiles_configs():
    names = experiments.chapter_names("ar_ed")
    lo, hi = verdicts.token_share(names, "cpu")
    one = (
        experiments.config(names[0], "cpu", device="cpu").tokens()
        / experiments.config(names[0], "paper", device="cpu").tokens()
    )
    assert lo <= one <= hi and 0 < lo <= hi < 1
    assert verdicts.token_share(names, "paper") == (1.0, 1.0)


def test_the_share_of_the_write_ups_tokens_leaves_out_the_book_s_own_settings():
    """The Wikipedia-lead arms and the positive control are the book's own: their ``paper`` profile is not the
    write-up's size, so the retrieval chapter's share at ``cpu`` is its write-up arms' alone."""
    names = experiments.chapter_names("retrieval")
    own = [n for n in names if n in experiments.BOOKS_OWN]
    assert {"retrieval/wiki_flat_d1024_c32", "retrieval/noisy_copy_d1024_c32"} <= set(own)
    assert {"mixer/flat_d512_wikipedia"} <= experiments.BOOKS_OWN
    theirs = [n for n in names if n not in experiments.BOOKS_OWN]
    assert verdicts.chapter_share("retrieval", "cpu") == verdicts.token_share(theirs, "cpu")
    # counted with them, the largest share would be a Wikipedia arm's (0.62% at stop 59), not the write-up's
    with_own = [
        experiments.config(n, "cpu", device="cpu").tokens() / experiments.config(n, "paper", device="cpu").tokens()
        for n in names
        if experiments.runs_at(n, "cpu")
    ]
    assert max(with_own) > verdicts.chapter_share("retrieval", "cpu")[1]


def test_outcome_of_refuses_what_is_not_a_verdict():
    with pytest.raises(ValueError):
        verdicts.outcome_of("maybe")


def test_p_is_given_to_two_digits_and_always_as_a_decimal():
    assert [verdicts.chance_text(p) for p in (0.05, 1.0, 1 / 3, 0.0025, 0.0004)] == [
        "p = 0.05",
        "p = 1.00",
        "p = 0.33",
        "p = 0.0025",
        "p < 0.001",
    ]


def test_the_verdict_table_has_the_evidence_in_one_column_and_how_far_each_arm_learned_in_another():
    from lmcompanion.verdicts import Verdict, table

    rows = [
        verdicts.gate(
            Verdict(
                "a beats b",
                "2.10 vs 2.20",
                "2.0 [1.9, 2.1]",
                "holds",
                seeds="3 vs 3",
                effect="-0.26 ± 0.01",
                chance="p = 0.05",
            ),
            [_arm("a", [5.0, 5.2])],
        ),
        Verdict("count", "100", "100", "holds", seeds="", effect="", chance="exact (no sampling)"),
    ]
    t = table(rows)
    assert len(t.columns) == 6 and list(t.index) == [1, 2]
    assert list(t.iloc[:, 3]) == ["3 vs 3 · -0.26 ± 0.01 · p = 0.05", "exact (no sampling)"]
    assert t.columns[3] == "seeds · effect ± SE · chance if equal"
    assert list(t.iloc[:, 4]) == ["a 0.80–1.00 nats below the unigram loss (validation) ✓", "(no trained arm gated)"]


def test_a_verdict_page_that_imports_only_nb_decides_every_chapter_s_rows():
    """The AR-ED and DeepSight verdict notebooks import only ``claims`` and ``nb``: once they decided nothing at all,
    silently, because their chapter module (which registers the rows) was never imported. Checked in a fresh process,
    where no other test has imported a chapter."""
    import subprocess
    import sys

    code = (
        "import lmcompanion.nb\nfrom lmcompanion import claims, pages\n"
        "print(sorted(c for c in pages.CHAPTER_TITLES if c != 'prologue' and claims.rows(c)))\n"
        "try:\n    claims.rows('no_such_chapter')\nexcept Exception as e:\n    print(type(e).__name__)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split("\n")
    from lmcompanion import pages

    assert out[0] == str(sorted(set(pages.CHAPTER_TITLES) - {"prologue"}))  # the prologue has no claims of its own
    assert out[1] == "LMCError"  # an unregistered chapter is an error, never an empty list of rows


def test_a_row_that_compares_a_headline_arm_with_illustrating_ones_reads_its_run_at_their_protocol():
    """At cpu the AR chapter's illustrating arms train half the steps; a row comparing one of them with a headline arm
    is decided on the headline arm's run at that protocol (Context.illustrating), never on its longer runs, and a
    context without that run stops the page. The headline's own rows, other profiles and recorded runs are as given."""
    from lmcompanion import claims, learning
    from lmcompanion.errors import LMCError

    seen = []

    def row(text, arms):
        def decide(ctx):
            seen.append({a: list(ctx.runs[a]) for a in arms})
            return verdicts.not_decided(text, "", "x", "y")

        return claims.Row(text, "04_baselines", decide, arms=arms)

    mixed = row("mixed", ("ar_ed/mse_pos_sub", "ar_ed/smaller_baseline"))
    head = row("head", ("ar_ed/mse_pos_sub", "ar_ed/baseline"))
    runs = {"ar_ed/mse_pos_sub": ["long"] * 5, "ar_ed/baseline": ["long"] * 5, "ar_ed/smaller_baseline": ["short"]}
    ctx = claims.Context(runs, "cpu", illustrating={"ar_ed/mse_pos_sub": ["short"], "ar_ed/baseline": ["short"]})
    claims.decide("ar_ed", mixed, ctx)
    assert seen[-1] == {"ar_ed/mse_pos_sub": ["short"], "ar_ed/smaller_baseline": ["short"]}
    gated = claims.Row(
        "gated",
        "04_baselines",
        lambda c: verdicts.gate(
            verdicts.not_decided("gated", "", "x", "y"),
            [learning.Arm(a.split("/")[-1], "unigram", 6.9, (6.8,)) for a in c.runs],
        ),
        arms=mixed.arms,
    )
    labels = [
        a.label
        for a in claims.decide(
            "ar_ed", gated, claims.Context({a: runs[a] for a in mixed.arms}, "cpu", illustrating=ctx.illustrating)
        ).arms
    ]
    assert labels == ["mse_pos_sub (at the illustrations' protocol)", "smaller_baseline"]  # where it is not learned
    claims.decide("ar_ed", head, ctx)
    assert seen[-1] == {"ar_ed/mse_pos_sub": ["long"] * 5, "ar_ed/baseline": ["long"] * 5}
    with pytest.raises(LMCError, match="Context.illustrating"):
        claims.decide("ar_ed", mixed, claims.Context(runs, "cpu"))
    for other in (claims.Context(runs, "gpu"), claims.Context(runs)):  # another profile; recorded runs
        claims.decide("ar_ed", mixed, other)
        assert seen[-1]["ar_ed/mse_pos_sub"] == ["long"] * 5
