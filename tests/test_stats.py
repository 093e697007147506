"""The verdict rule's statistics: exact p-values, and the rule's error rate on equal arms, by simulation."""

import math
import random

import numpy as np
import pytest

from lmcompanion import stats, verdicts


def test_the_permutation_p_value_is_exact():
    # 3 vs 3 fully separated: 1 of the C(6,3) = 20 splits is as extreme
    assert stats.permutation_p([1, 2, 3], [4, 5, 6], "less") == pytest.approx(1 / 20)
    assert stats.permutation_p([1, 2, 3], [4, 5, 6], "greater") == pytest.approx(1.0)
    # 2 vs 2 can never go below 1/6
    assert stats.permutation_p([1, 2], [3, 4], "less") == pytest.approx(1 / 6) == stats.min_p(2, 2)
    assert stats.min_p(3, 3) == pytest.approx(0.05) and stats.min_p(4, 4) == pytest.approx(1 / 70)
    # by hand: a = [1, 4, 5], b = [2, 3, 6]: sum(a) = 10; splits with a sum <= 10: {1,2,3}=6 {1,2,4}=7 {1,2,5}=8
    # {1,2,6}=9 {1,3,4}=8 {1,3,5}=9 {1,3,6}=10 {1,4,5}=10 {2,3,4}=9 {2,3,5}=10 -> 10 of 20
    assert stats.permutation_p([1, 4, 5], [2, 3, 6], "less") == pytest.approx(10 / 20)


def test_arms_of_one_value_are_judged_by_the_same_exact_test():
    # scipy refuses arms of one value; the enumeration gives the exact value: 1 vs 1 has 2 splits, 1 vs 3 has 4
    assert stats.permutation_p([1.0], [2.0], "less") == pytest.approx(1 / 2)
    assert stats.permutation_p([1.0], [2.0], "greater") == pytest.approx(1.0)
    assert stats.permutation_p([1.0], [2.0, 3.0, 4.0], "less") == pytest.approx(1 / 4) == stats.min_p(1, 3)
    # by hand: a = [3, 1, 4], b = [2], observed 8/3 - 2 = 2/3; the value put in b: 1 -> 2, 2 -> 2/3, 3 -> -2/3, 4 -> -2
    assert stats.permutation_p([3.0, 1.0, 4.0], [2.0], "greater") == pytest.approx(2 / 4)
    assert stats.permutation_p([1.0], [1.0], "less") == 1.0  # a tie counts against the claim
    assert stats.compare([1.0], [2.0]).outcome == "inconclusive"
    assert stats.compare([1.0], [2.0]).effect_text() == "-1.00 (no spread: one seed on a side)"  # not "± 0.000"
    assert stats.compare([1.0, 1.2], [2.0, 2.2]).effect_text() == "-1.00 ± 0.14"  # the error's two digits


def test_the_enumeration_agrees_with_scipy_where_both_apply():
    rng = random.Random(0)
    for n_a, n_b in [(2, 2), (2, 3), (3, 3), (4, 3)]:
        for _ in range(5):
            a = [rng.gauss(0, 1) for _ in range(n_a)]
            b = [rng.gauss(0.5, 1) for _ in range(n_b)] + [a[0]]  # a tie on the boundary included
            for alternative in ("less", "greater"):
                got = stats._enumerated_p(np.asarray(a), np.asarray(b), alternative)
                assert got == pytest.approx(stats.permutation_p(a, b, alternative))


def test_compare_decides_only_at_or_below_five_percent():
    assert stats.compare([1.0, 1.1, 1.2], [2.0, 2.1, 2.2]).outcome == "holds"
    assert stats.compare([2.0, 2.1, 2.2], [1.0, 1.1, 1.2]).outcome == "does not hold"
    assert stats.compare([1.0, 1.1], [2.0, 2.1]).outcome == "inconclusive"  # 2 seeds: p >= 1/6
    assert stats.compare([1.0, 2.1, 1.2], [2.0, 1.1, 2.2]).outcome == "inconclusive"


@pytest.mark.parametrize("n", [2, 3, 4])
def test_the_rule_errs_on_equal_arms_at_most_five_percent_of_the_time(n):
    """Simulate arms that are in truth equal (the same distribution): each decisive verdict must come up at most 5%
    of the time, up to Monte-Carlo error (4 standard errors), and for n = 3 exactly as often as 1/20 predicts."""
    rng = random.Random(n)
    trials = 4000
    holds = fails = 0
    for _ in range(trials):
        a = [rng.gauss(3.0, 0.05) for _ in range(n)]
        b = [rng.gauss(3.0, 0.05) for _ in range(n)]
        outcome = stats.compare(a, b).outcome
        holds += outcome == "holds"
        fails += outcome == "does not hold"
    se = math.sqrt(0.05 * 0.95 / trials)
    assert holds / trials <= 0.05 + 4 * se and fails / trials <= 0.05 + 4 * se
    if n == 2:
        assert holds == fails == 0
    if n == 3:  # "holds" iff the 3 values of a are the 3 smallest: probability exactly 1/20
        assert abs(holds / trials - 0.05) < 4 * se and abs(fails / trials - 0.05) < 4 * se


def test_the_rule_finds_a_real_difference():
    """The test can fail: a true difference of 4 standard deviations is found almost always with 3 seeds."""
    rng = random.Random(0)
    found = sum(
        stats.compare([rng.gauss(2.8, 0.05) for _ in range(3)], [rng.gauss(3.0, 0.05) for _ in range(3)]).outcome
        == "holds"
        for _ in range(300)
    )
    assert found / 300 > 0.9


def test_verdict_rows_state_seeds_effect_and_chance():
    v = verdicts.claim("A beats B", "1 vs 2", [1.0, 1.1, 1.2], [2.0, 2.1, 2.2], ("A", "B"))
    assert v.verdict == verdicts.HOLDS and v.seeds == "3 vs 3" and v.chance == "p = 0.05"
    assert v.effect.startswith("-1.000 ±")
    lean = verdicts.claim("A beats B", "", [1.0, 1.3], [1.1, 1.4], ("A", "B"))
    assert lean.outcome == verdicts.INCONCLUSIVE and "lean toward the claim" in lean.verdict
    against = verdicts.claim("A beats B", "", [1.1, 1.4], [1.0, 1.3], ("A", "B"))
    assert "lean against the claim" in against.verdict


def test_bounds_and_trends():
    assert verdicts.below("collapses", "", [1e-9, 3e-9, 2e-9], 1e-6).outcome == verdicts.HOLDS
    assert verdicts.below("collapses", "", [1e-2, 3e-2, 2e-2], 1e-6).outcome == verdicts.FAILS
    assert verdicts.below("collapses", "", [1e-9, 1e-3], 1e-6).outcome == verdicts.INCONCLUSIVE
    x = [3, 6, 11, 16, 26]
    falling = [[3.0 - 0.01 * i] * 2 for i in range(5)]
    assert verdicts.trend("falls", "", x, falling, direction="down").outcome == verdicts.HOLDS  # p = 1/120
    assert verdicts.trend("rises", "", x, falling, direction="up").outcome == verdicts.FAILS
    assert verdicts.no_trend("flat", "", x, falling).outcome == verdicts.FAILS
    noise = [[3.0], [3.02], [2.99], [3.01], [3.0]]
    assert verdicts.no_trend("flat", "", x, noise).outcome == verdicts.INCONCLUSIVE  # never "holds"


def test_exact_facts_carry_no_chance():
    v = verdicts.exact("counts", "1 vs 2", "1 vs 2", True)
    assert v.verdict == verdicts.HOLDS and v.chance == verdicts.EXACT
    assert verdicts.counts([v, verdicts.exact("x", "", "", False)]) == {
        "holds": 1,
        "does not hold": 1,
        "inconclusive at this scale": 0,
        "not decided at this scale": 0,
    }


def _arms(level: float, **values) -> list:
    from lmcompanion.learning import Arm

    return [Arm(k, "chance (ln 31)", level, tuple(v)) for k, v in values.items()]


def test_a_comparison_of_learning_is_decided_only_where_every_arm_learned():
    chance = math.log(31)
    at_chance_a, at_chance_b = [3.47, 3.46, 3.48], [3.44, 3.43, 3.445]  # b below a in every seed, both near chance
    v = verdicts.claim("A learns better", "", at_chance_a, at_chance_b)
    assert v.outcome == verdicts.FAILS  # decisive on the numbers alone
    got = verdicts.gate(v, _arms(chance, a=at_chance_a, b=at_chance_b))
    assert got.outcome == verdicts.NOT_DECIDED and "a, b have not learned" in got.verdict
    assert "lean against" in got.verdict and got.chance == v.chance
    learned = [1.2, 1.3, 1.25]  # well below chance: decided only where the other arm has learned too
    v = verdicts.claim("A learns better", "", learned, at_chance_b)
    assert verdicts.gate(v, _arms(chance, a=learned, b=at_chance_b)).outcome == verdicts.NOT_DECIDED
    also = [2.5, 2.6, 2.55]
    v = verdicts.claim("A learns better", "", learned, also)
    assert verdicts.gate(v, _arms(chance, a=learned, b=also)).verdict == v.verdict
    # every seed must clear the margin: one seed 0.3 nats below the line keeps the arm from passing
    one_short = [chance - 2.0, chance - 2.0, chance - 0.3]
    assert verdicts.gate(v, _arms(chance, a=learned, b=one_short)).outcome == verdicts.NOT_DECIDED


def test_the_learning_gate_never_adds_a_decisive_verdict():
    rng = random.Random(0)
    for _ in range(200):
        level = rng.uniform(3.0, 4.0)
        a = [rng.gauss(3.4, 0.3) for _ in range(3)]
        b = [rng.gauss(3.4, 0.3) for _ in range(3)]
        v = verdicts.claim("x", "", a, b)
        got = verdicts.gate(v, _arms(level, a=a, b=b))
        assert got.verdict == v.verdict or got.outcome == verdicts.NOT_DECIDED


# The sampler check of the formal chapter: most of the mass on one token, a few expected draws spread over the rest
# (the trained model's least certain position looks like this), where χ²'s large-sample approximation rejected a
# correct sampler about 3 times in 1,000 at a 1-in-1,000 threshold.
SPIKY = np.array([0.99912] + [0.00088 / 12] * 12)


def test_goodness_of_fit_keeps_its_false_positive_rate_on_a_correct_sampler():
    rng = np.random.default_rng(1)
    ps = np.array([stats.goodness_of_fit_p(rng.multinomial(20_000, SPIKY), SPIKY, seed=s) for s in range(400)])
    assert (ps > 0).all() and (ps <= 1).all()
    # at most α, up to three binomial standard errors over 400 trials
    for alpha in (0.05, 0.01):
        assert (ps <= alpha).mean() <= alpha + 3 * math.sqrt(alpha * (1 - alpha) / 400)
    assert (ps <= 0.5).mean() > 0.3  # and it is not stuck near 1 (a test that never rejects would pass the above)


def test_goodness_of_fit_rejects_the_wrong_distribution():
    wrong = SPIKY.copy()
    wrong[1:] *= 2.5
    wrong[0] = 1 - wrong[1:].sum()  # the tail 2.5 times too heavy: about 44 draws where 17.6 are expected
    rng = np.random.default_rng(2)
    ps = [stats.goodness_of_fit_p(rng.multinomial(20_000, wrong), SPIKY, seed=s) for s in range(20)]
    assert max(ps) <= 1e-3
    assert math.isnan(stats.goodness_of_fit_p([7, 0], [1.0, 0.0]))  # one category: nothing to test


def test_similarity_holds_within_the_margin_and_fails_beyond_it():
    # seeds: 3 vs 3, a margin of 0.05
    close = verdicts.similar("alike", "", [2.50, 2.51, 2.52], [2.51, 2.52, 2.53], 0.05)
    assert close.outcome == verdicts.HOLDS and close.seeds == "3 vs 3"
    far = verdicts.similar("alike", "", [2.50, 2.51, 2.52], [2.70, 2.71, 2.72], 0.05)
    assert far.outcome == verdicts.FAILS and far.chance.endswith("(the opposite direction)")
    assert verdicts.similar("alike", "", [2.50, 2.60, 2.52], [2.51, 2.45, 2.58], 0.05).outcome == verdicts.INCONCLUSIVE
    # rounds of a timing: paired ratios, a margin of 1.25 either way
    t = verdicts.similar(
        "alike", "", [0.11, 0.12, 0.105, 0.118], [0.10, 0.115, 0.10, 0.11], 1.25, paired=True, ratio=True, unit="rounds"
    )
    assert t.outcome == verdicts.HOLDS and t.seeds == "4 rounds" and t.effect.startswith("x1.0")
    slow = verdicts.similar(
        "alike", "", [0.20, 0.21, 0.19, 0.205], [0.10, 0.101, 0.099, 0.1], 1.25, paired=True, ratio=True, unit="rounds"
    )
    assert slow.outcome == verdicts.FAILS


def test_similarity_errs_at_most_five_percent_of_the_time_at_the_margin():
    """Rounds whose true log-ratio sits exactly at the margin: "holds" (the wrong verdict) comes up at most 5% of the
    time; and arms truly equal are called dissimilar at most 5% of the time."""
    rng = random.Random(1)
    trials, m = 3000, 1.25
    se = math.sqrt(0.05 * 0.95 / trials)
    wrong_holds = wrong_fails = 0
    for _ in range(trials):
        b = [rng.uniform(0.09, 0.11) for _ in range(8)]
        at_edge = [x * m * math.exp(rng.gauss(0, 0.05)) for x in b]
        equal = [x * math.exp(rng.gauss(0, 0.05)) for x in b]
        wrong_holds += verdicts.similar("", "", at_edge, b, m, paired=True, ratio=True).outcome == verdicts.HOLDS
        wrong_fails += verdicts.similar("", "", equal, b, m, paired=True, ratio=True).outcome == verdicts.FAILS
    assert wrong_holds / trials <= 0.05 + 4 * se and wrong_fails / trials <= 0.05 + 4 * se
