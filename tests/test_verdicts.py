"""The verdict rule's wording (lmcompanion.verdicts): verdicts reached from runs carry the scale they were reached at."""

import pytest

from lmcompanion import experiments, verdicts


def _sampled(word: str) -> verdicts.Verdict:
    return verdicts.Verdict("a claim", "", "", word, seeds="3 vs 3", chance="p = 0.050")


@pytest.mark.parametrize("word, expected", [
    (verdicts.HOLDS, "holds at `cpu` scale: 0.036% of the write-up's tokens"),
    (verdicts.FAILS, "does not hold at `cpu` scale: 0.036% of the write-up's tokens"),
    (verdicts.INCONCLUSIVE + " (the data lean toward the claim)",
     "inconclusive at `cpu` scale: 0.036% of the write-up's tokens (the data lean toward the claim)"),
])
def test_a_sampled_verdict_says_its_profile_and_share_of_the_write_ups_tokens(word, expected):
    v = verdicts.at_scale(_sampled(word), "cpu", (0.000355, 0.000355))
    assert v.verdict == expected
    assert v.outcome == verdicts.outcome_of(word)
    assert verdicts.at_scale(v, "cpu", (0.000355, 0.000355)) == v  # scaled once


def test_exact_rows_and_rows_without_runs_keep_their_words():
    exact = verdicts.exact("a count", "", "", False)
    not_run = verdicts.Verdict("c", "", "not run", verdicts.INCONCLUSIVE + " (not run at this profile)", seeds="0",
                               chance="")
    assert verdicts.at_scale(exact, "cpu", (1e-4, 1e-4)) == exact
    assert verdicts.at_scale(not_run, "cpu", (1e-4, 1e-4)) == not_run


def test_shares_are_two_significant_digits_in_fixed_notation_and_a_range_where_arms_differ():
    assert [verdicts.percent(x) for x in (0.000355, 0.042, 1.0, 5.33e-8)] == ["0.036%", "4.2%", "100%", "0.0000053%"]
    assert verdicts.share_text((2.2e-5, 3.0e-5)) == "0.0022–0.0030% of the write-up's tokens"


def test_the_share_is_computed_from_the_profiles_configs():
    names = experiments.chapter_names("ar_ed")
    lo, hi = verdicts.token_share(names, "cpu")
    one = experiments.config(names[0], "cpu", device="cpu").tokens() / experiments.config(names[0], "paper", device="cpu").tokens()
    assert lo <= one <= hi and 0 < lo <= hi < 1
    assert verdicts.token_share(names, "paper") == (1.0, 1.0)


def test_outcome_of_refuses_what_is_not_a_verdict():
    with pytest.raises(ValueError):
        verdicts.outcome_of("maybe")


def test_p_is_given_to_two_digits_and_always_as_a_decimal():
    assert [verdicts.chance_text(p) for p in (0.05, 1.0, 1 / 3, 0.0025, 0.0004)] == [
        "p = 0.05", "p = 1.00", "p = 0.33", "p = 0.0025", "p < 0.001"]


def test_the_verdict_table_fits_a_page_in_five_columns_with_the_evidence_in_one():
    from lmcompanion.verdicts import Verdict, table

    rows = [Verdict("a beats b", "2.10 vs 2.20", "2.0 [1.9, 2.1]", "holds", seeds="3 vs 3", effect="-0.26 ± 0.01",
                    chance="p = 0.05"),
            Verdict("count", "100", "100", "holds", seeds="", effect="", chance="exact (no sampling)")]
    t = table(rows)
    assert len(t.columns) == 5 and list(t.index) == [1, 2]
    assert list(t.iloc[:, 3]) == ["3 vs 3 · -0.26 ± 0.01 · p = 0.05", "exact (no sampling)"]
    assert t.columns[3] == "seeds · effect ± SE · chance if equal"
