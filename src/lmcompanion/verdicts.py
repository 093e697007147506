"""Verdicts: a write-up's claim beside our measurement, with the chance that the verdict is wrong stated.

The rule (documented once, in the prologue; tested by simulation in ``tests/test_stats.py``):

- **Comparisons** ("arm A reaches a lower loss than arm B"): each arm has one value per seed. The exact permutation
  test of :mod:`lmcompanion.stats` gives ``p``, the chance, if the two arms were in truth equal, of a difference at
  least as large as ours in that direction. The claim **holds** when ``p <= 0.05``; it **does not hold** when the
  same test in the opposite direction gives ``p <= 0.05``; otherwise it is **inconclusive at this scale**, and the
  row says which way the data lean. So on equal arms each decisive verdict comes up at most 5% of the time.
- **Thresholds** ("the loss collapses below 1e-6"): a one-sided one-sample t-test of the seeds' values (on a log
  scale for losses near zero) against the bound, with the same 5% rule.
- **Trends** ("train loss falls as delta grows"): Spearman's rank correlation of the arms' seed means with the
  swept value, with its exact permutation p-value, and the same 5% rule. A claim of *no* trend can only be refuted
  (a significant trend) or left inconclusive: no test shows an absence.
- **Exact facts** (parameter counts, masks, agreement with a literal transcription): computed, not sampled; the
  chance of a wrong verdict from noise is zero, and the row says "exact".
- **Claims of similarity** ("both completed in a similar amount of time"): a claim of no large difference, so the
  margin it allows is stated with the claim, and :func:`similar` applies two one-sided tests (TOST) at 5%: it
  **holds** when the difference is within the margin on both sides (each side's test at 5%), **does not hold**
  when it lies beyond the margin on one side by the same test, and is inconclusive otherwise. Seeds are compared
  by the permutation test above on values shifted by the margin; rounds of a side-by-side timing, which are paired,
  by a one-sample t-test of the per-round differences.
- **The learning gate** (:mod:`lmcompanion.learning`, applied by :func:`gate`): a claim about what training reaches
  is decided only where every arm it rests on has learned at the step the claim compares: every seed at least half
  a nat below its reference line (the unigram loss of the same split for a language model; chance, ln K, for a
  retrieval matcher; twice chance for an accuracy). A row with an arm that has not learned is **not decided at
  this scale**, the fourth outcome, never counted as holding or not holding. So are rows whose arms this profile
  does not run, or runs with too few seeds for any test (an illustration). This only ever turns a decisive verdict
  into an undecided one, so the 5% bounds above still hold.

**Kinds of rows.** A row is a claim about what training reaches (:data:`TRAINING`, gated), a claim about cost measured
on this machine (:data:`COST`: time per step), a statement of the write-up checked by computation
(:data:`COMPUTED`: its arithmetic, its models' parameter or FLOP counts, memory counted), or a check of our code
(:data:`CHECK`: our models against the original's counts, masks, a literal transcription, the sampler). A row is
the write-up's claim, or the book's own extension beyond it (``extension``); the summaries count each group apart.
"""

from __future__ import annotations

import math
import numbers

import numpy as np
from dataclasses import dataclass, replace
from typing import Mapping, Sequence

from . import experiments, learning, models, stats, tables
from .learning import Arm
from .formats import estimate, number
from .stats import ALPHA, span

HOLDS, FAILS, INCONCLUSIVE = "holds", "does not hold", "inconclusive at this scale"
NOT_DECIDED = "not decided at this scale"  # an arm has not learned, is not run here, or has too few seeds to test
OUTCOMES = (HOLDS, FAILS, INCONCLUSIVE, NOT_DECIDED)
_WORD = {HOLDS: HOLDS, FAILS: FAILS, INCONCLUSIVE: "inconclusive", NOT_DECIDED: "not decided"}  # before "at ..."
EXACT = "exact (no sampling)"
# What a row is (see the module doc)
TRAINING, COST, COMPUTED, CHECK = "training", "cost", "computed", "check"
KINDS = (TRAINING, COST, COMPUTED, CHECK)
# The form of a row: the shape of the claim it tests, chosen from the claim's words. The vocabulary, with the words
# that choose each form and how each is decided, is :mod:`lmcompanion.chapters.verdict_forms`; the forms decided here
# stamp their rows with their name.
BETTER, NO_GAIN, NO_WORSE, SAME, CROSSOVER = "strictly better", "no gain", "no worse", "about the same", "crossover"
AT_MOST, AT_LEAST, WITHIN, TREND, NO_TREND = (
    "at most a bound",
    "at least a bound",
    "within a range",
    "a trend",
    "no trend",
)
EXACT_FORM = "exact"
FORMS = (BETTER, NO_GAIN, NO_WORSE, SAME, CROSSOVER, AT_MOST, AT_LEAST, WITHIN, TREND, NO_TREND, EXACT_FORM)
TENFOLD = 10.0  # a decided row whose effect is this many times the write-up's or more is flagged (:func:`sized`)


@dataclass(frozen=True)
class Verdict:
    claim: str  # the write-up's claim, in a sentence
    published: str  # the write-up's numbers behind it
    ours: str  # our measurement, with its spread
    verdict: str  # HOLDS, FAILS, or INCONCLUSIVE with the direction the data lean
    seeds: str = ""  # seeds per arm, e.g. "3 vs 3"
    effect: str = ""  # the effect with its spread, e.g. "-0.012 ± 0.004"
    chance: str = (
        EXACT  # p: the chance of this verdict if the arms were equal (inconclusive: of the claimed direction), or EXACT
    )
    notebook: str = ""  # the notebook that decides it (set by the chapter, for the scorecard)
    check: bool = False  # a check of our code decided without training (e.g. a sampler's draws); exact rows are too
    kind: str = ""  # TRAINING, COST, COMPUTED or CHECK ("": TRAINING, or CHECK for an exact or ``check`` row)
    extension: bool = False  # the book's own claim beyond the write-up (e.g. "beyond the write-up: ...")
    headline: bool = False  # one of the chapter's headline comparisons (declared in the experiment registry)
    arms: tuple[Arm, ...] = ()  # the gated arms, each with its distance to its reference line (lmcompanion.learning)
    form: str = ""  # the claim's shape (one of FORMS; lmcompanion.chapters.verdict_forms)
    size: float | None = None  # our effect as a number, in the unit of ``effect`` (a log ratio where it is a ratio)
    log_size: bool = False  # ``size`` and ``published_size`` are log ratios (the effect is a ratio, "x1.02")
    published_size: float | None = None  # the write-up's effect in the same sense and unit, where it prints one
    flags: tuple[str, ...] = ()  # what a reader must see beside a decided row (:func:`sized`, :func:`cross_profile`)
    trend: str = ""  # a headline row: the gap between its arms against step (:func:`gap_trend`)
    gap: tuple[tuple[float, int, float], ...] = ()  # that gap's series: (fraction of training, step, gap) per point
    size_note: str = ""  # the text :func:`sized` appended to ``effect`` (kept so that it is replaced, not repeated)

    def __post_init__(self) -> None:
        if self.kind and self.kind not in KINDS:
            raise ValueError(f"a verdict's kind is one of {KINDS}, got {self.kind!r}")
        if self.form and self.form not in FORMS:
            raise ValueError(f"a verdict's form is one of {FORMS}, got {self.form!r}")

    @property
    def group(self) -> str:
        """TRAINING, COST, COMPUTED or CHECK."""
        return self.kind or (CHECK if self.check or self.chance == EXACT else TRAINING)

    @property
    def is_check(self) -> bool:
        """Whether the row is decided without training runs (a check of our code, or a statement checked by
        computation) rather than a claim about training or cost."""
        return self.group in (CHECK, COMPUTED)

    @property
    def outcome(self) -> str:
        """HOLDS, FAILS, INCONCLUSIVE or NOT_DECIDED, without the lean or the scale."""
        return outcome_of(self.verdict)

    @property
    def learned(self) -> str:
        """How far each gated arm learned (:func:`lmcompanion.learning.summary`); "" for a row with none."""
        return learning.summary(self.arms)

    @property
    def size_ratio(self) -> float | None:
        """Our effect over the write-up's (None where either is missing or the write-up's is zero)."""
        if self.size is None or not self.published_size or not math.isfinite(self.size):
            return None
        return self.size / self.published_size


def outcome_of(verdict: str) -> str:
    """The outcome a verdict's text starts with (scaled by :func:`at_scale` or not)."""
    for outcome, word in _WORD.items():
        if verdict.startswith(word):
            return outcome
    raise ValueError(f"not a verdict: {verdict!r}")


def _lean(toward_claim: bool | None) -> str:
    if toward_claim is None:
        return INCONCLUSIVE
    return f"{INCONCLUSIVE} (the data lean {'toward' if toward_claim else 'against'} the claim)"


def decision(p_claim: float, p_reverse: float, toward: bool | None) -> tuple[str, float]:
    """The rule's outcome from a one-sided test each way: (HOLDS, p_claim) when p_claim <= 5%, (FAILS, p_reverse) when
    p_reverse is, otherwise (INCONCLUSIVE with the direction the data lean, ``toward`` the claim or not, p_claim)."""
    if p_claim <= ALPHA:
        return HOLDS, p_claim
    if p_reverse <= ALPHA:
        return FAILS, p_reverse
    return _lean(toward), p_claim


def chance_text(p: float, reverse: bool = False) -> str:
    """The "chance if equal" cell: p of the claimed direction, or of the opposite one where the claim does not hold."""
    # two digits: p = 0.05, 0.33, 1.00; below 0.01 two significant ones (0.0025); always a decimal (the sanitizer's)
    text = "p < 0.001" if p < 0.001 else f"p = {p:.2f}" if p >= 0.01 else f"p = {p:.2g}"
    return text + (" (the opposite direction)" if reverse else "")


def claim(
    text: str,
    published: str,
    better: Sequence[float],
    worse: Sequence[float],
    labels: tuple[str, str] = ("A", "B"),
    fmt: str = ".3f",
) -> Verdict:
    """The claim "``labels[0]`` is lower than ``labels[1]``" from our per-seed values for each side."""
    c = stats.compare(better, worse)
    if c.outcome == "holds":
        verdict, p = HOLDS, c.p_claim
    elif c.outcome == "does not hold":
        verdict, p = FAILS, c.p_reverse
    else:
        verdict, p = _lean(None if c.effect == 0 else c.effect < 0), c.p_claim
    return Verdict(
        text,
        published,
        f"{labels[0]}: {span(better, fmt)}; {labels[1]}: {span(worse, fmt)}",
        verdict,
        seeds=f"{c.n_a} vs {c.n_b}",
        effect=c.effect_text(),
        chance=chance_text(p, verdict == FAILS),
        form=BETTER,
        size=c.effect,
    )


def published_pair(better: str, worse: str, metric: str) -> str:
    """The write-up's ``metric`` of two experiments, "a vs b", or "no published number" when either lacks it."""
    pb, pw = experiments.get(better).published, experiments.get(worse).published
    return f"{pb[metric]} vs {pw[metric]}" if metric in pb and metric in pw else "no published number"


def published_gap(better: str, worse: str, metric: str) -> float | None:
    """The write-up's effect of a comparison: its ``metric`` of ``better`` minus that of ``worse`` (the sense of our
    effect), from the experiments' registered numbers; None where either lacks one."""
    pb, pw = experiments.get(better).published.get(metric), experiments.get(worse).published.get(metric)
    ok = all(isinstance(x, numbers.Number) and not isinstance(x, bool) for x in (pb, pw))
    return float(pb) - float(pw) if ok else None


def between(text: str, metric: str, better: str, worse: str, runs: Mapping[str, Sequence]) -> Verdict:
    """The claim "experiment ``better`` beats experiment ``worse`` on ``metric``" (the final estimate, as the
    write-ups' tables report it), from their runs (experiment name -> runs) and the write-up's published numbers,
    gated on both arms' final ``metric`` (:func:`gate`)."""
    published = published_pair(better, worse, metric)
    labels = (better.split("/")[-1], worse.split("/")[-1])
    v = claim(text, published, tables.final(runs[better], metric), tables.final(runs[worse], metric), labels)
    v = replace(v, published_size=published_gap(better, worse, metric))
    return gate(v, arms_of(runs, metric, better, worse))


def _lean_of(v: Verdict) -> str:
    """The direction a row's data lean, in words ("the data lean toward the claim"), or "" where they do not."""
    if v.outcome == HOLDS:
        return "the data lean toward the claim"
    if v.outcome == FAILS:
        return "the data lean against the claim"
    for part in ("the data lean toward the claim", "the data lean against the claim"):
        if part in v.verdict:
            return part
    return ""


def gate(v: Verdict, arms: Sequence[Arm]) -> Verdict:
    """``v`` with the learning gate applied (:mod:`lmcompanion.learning`): the arms it rests on, each with its
    distance to its reference line at the compared step, kept on the row; where one of them has not learned, the
    row is :data:`NOT_DECIDED` ("not decided at this scale (cosine has not learned; the data lean toward the
    claim)"), whatever its test said, keeping the test's effect and p."""
    v = replace(v, arms=tuple(arms))
    failing = learning.not_learned(arms)
    if not failing:
        return v
    names = ", ".join(dict.fromkeys(a.label for a in failing))
    lean = _lean_of(v)
    return replace(
        v,
        verdict=f"{NOT_DECIDED} ({names} {'has' if len(failing) == 1 else 'have'} not learned"
        + (f"; {lean})" if lean else ")"),
    )


def not_decided(text: str, published: str, ours: str, reason: str, **fields) -> Verdict:
    """A row this scale cannot decide for ``reason`` (its arms are not run here; one seed on a side): shown with what
    there is, counted apart from every tested row."""
    fields.setdefault("seeds", "0")
    fields.setdefault("chance", "")
    return Verdict(text, published, ours, f"{NOT_DECIDED} ({reason})", **fields)


def arms_of(
    runs: Mapping[str, Sequence],
    metric: str,
    *names: str,
    values: Mapping[str, Sequence[float]] | None = None,
    at: str = "final",
) -> list[Arm]:
    """The gate's arms of experiments ``names`` (labelled by their short names) on ``metric``: each one's values at
    the compared step (default: its final ``metric``)."""
    return [learning.arm(n.split("/")[-1], runs[n], metric, None if values is None else values[n], at) for n in names]


def exact(text: str, published: str, ours: str, ok: bool, kind: str = CHECK) -> Verdict:
    """A claim checked by computation, with no sampling involved: a check of our code (``kind`` CHECK), or one of the
    write-up's statements (COMPUTED: its arithmetic, its models' counts)."""
    return Verdict(text, published, ours, HOLDS if ok else FAILS, kind=kind, form=EXACT_FORM)


def fewer_parameters(text: str, smaller: str, larger: str) -> Verdict:
    """The claim "experiment ``smaller`` has fewer parameters than ``larger``" at the write-up's size (paper
    profile), counted as the write-ups count; exact numbers, so no seeds are involved."""
    a, b = (models.num_params(experiments.config(n, "paper", device="cpu").model) for n in (smaller, larger))
    pa, pb = experiments.get(smaller).published.get("params"), experiments.get(larger).published.get("params")
    published = f"{pa:,} vs {pb:,}" if pa and pb else "no published number"
    return exact(text, published, f"{a:,} vs {b:,}", a < b, kind=COMPUTED)


def below(
    text: str, published: str, values: Sequence[float], limit: float, fmt: str = ".2e", log: bool = True
) -> Verdict:
    """The claim "the value ends below ``limit``": a one-sided one-sample t-test of the seeds' values (of their
    log10 when ``log``) against the limit."""
    values = list(values)
    tr = [math.log10(max(v, 1e-300)) for v in values] if log else values
    bound = math.log10(limit) if log else limit
    n = f"{len(values)} seeds"
    if len(set(tr)) == 1:  # no spread: every seed gave the same number
        verdict = HOLDS if tr[0] < bound else FAILS
        return Verdict(
            text, published, span(values, fmt), verdict, seeds=n, chance="no spread across seeds", form=AT_MOST
        )
    verdict, p = decision(
        stats.one_sample_p(tr, bound, "less"), stats.one_sample_p(tr, bound, "greater"), stats.mean(tr) < bound
    )
    return Verdict(
        text, published, span(values, fmt), verdict, seeds=n, chance=chance_text(p, verdict == FAILS), form=AT_MOST
    )


def _per_setting(per_arm: Sequence[Sequence[float]]) -> str:
    lo, hi = min(len(v) for v in per_arm), max(len(v) for v in per_arm)
    return f"{lo} per setting" if lo == hi else f"{lo} to {hi} per setting"


def trend(
    text: str,
    published: str,
    x: Sequence[float],
    per_arm: Sequence[Sequence[float]],
    *,
    direction: str,
    fmt: str = "+.2f",
) -> Verdict:
    """The claim that the seed-mean of ``per_arm[j]`` rises (``direction="up"``) or falls (``"down"``) with
    ``x[j]``: Spearman's rho of the means with x and its exact permutation p-value."""
    means = [stats.mean(v) for v in per_arm]
    rho = stats.spearman(x, means)
    p_claim = stats.spearman_p(x, means, "greater" if direction == "up" else "less")
    p_reverse = stats.spearman_p(x, means, "less" if direction == "up" else "greater")
    verdict, p = decision(p_claim, p_reverse, None if rho == 0 else (rho > 0) == (direction == "up"))
    return Verdict(
        text,
        published,
        f"Spearman rho {rho:{fmt}} over {len(x)} settings",
        verdict,
        seeds=_per_setting(per_arm),
        effect=f"rho {rho:{fmt}}",
        chance=chance_text(p, verdict == FAILS),
        form=TREND,
        size=rho,
    )


def no_trend(
    text: str, published: str, x: Sequence[float], per_arm: Sequence[Sequence[float]], fmt: str = "+.2f"
) -> Verdict:
    """The claim that the seed means do *not* follow ``x``: refuted by a significant trend either way (two-sided,
    each side at 2.5%), otherwise inconclusive (a test cannot show that a trend is absent)."""
    means = [stats.mean(v) for v in per_arm]
    rho = stats.spearman(x, means)
    p_two = min(1.0, 2 * min(stats.spearman_p(x, means, "greater"), stats.spearman_p(x, means, "less")))
    verdict = FAILS if p_two <= ALPHA else f"{INCONCLUSIVE} (no significant trend; a test cannot show its absence)"
    return Verdict(
        text,
        published,
        f"Spearman rho {rho:{fmt}} over {len(x)} settings",
        verdict,
        seeds=_per_setting(per_arm),
        effect=f"rho {rho:{fmt}}",
        chance=chance_text(p_two) + " (two-sided)",
        form=NO_TREND,
        size=rho,
    )


def similar(
    text: str,
    published: str,
    a: Sequence[float],
    b: Sequence[float],
    margin: float,
    *,
    paired: bool = False,
    ratio: bool = False,
    labels: tuple[str, str] = ("A", "B"),
    fmt: str = ".3f",
    unit: str = "seeds",
) -> Verdict:
    """The claim "a and b differ by less than ``margin``" (a claim of *no large* difference), by two one-sided
    tests (see the module doc): with ``paired`` (rounds of one timing) a one-sample t-test of the differences
    a_i - b_i against -margin and +margin; otherwise the exact permutation test of the seeds shifted by the margin.
    ``ratio``: the values are positive and the margin is a factor (> 1): a and b are compared on a log scale, i.e.
    a / b within [1 / margin, margin]."""
    a, b = list(a), list(b)
    x, y, m = ([math.log(v) for v in a], [math.log(v) for v in b], math.log(margin)) if ratio else (a, b, margin)
    if paired:
        d = [u - v for u, v in zip(x, y)]
        inside = max(stats.one_sample_p(d, -m, "greater"), stats.one_sample_p(d, m, "less"))
        above, below_ = stats.one_sample_p(d, m, "greater"), stats.one_sample_p(d, -m, "less")
        diff = stats.mean(d)
        se = stats.std(d) / math.sqrt(len(d))
        effect = f"x{number(math.exp(diff))} (SE of the log ratio {number(se)})" if ratio else estimate(diff, se)
        n = f"{len(d)} {unit}"
    else:
        inside = max(
            stats.permutation_p(y, [u + m for u in x], "less"), stats.permutation_p([u - m for u in x], y, "less")
        )
        above = stats.permutation_p(y, [u - m for u in x], "less")  # b + margin below a: a is higher by more
        below_ = stats.permutation_p([u + m for u in x], y, "less")  # a + margin below b: a is lower by more
        c = stats.compare(x, y)
        diff = c.effect
        effect = f"x{number(math.exp(diff))} (ratio of geometric means)" if ratio else c.effect_text()
        n = f"{len(a)} vs {len(b)}"
    if inside <= ALPHA:
        verdict, p, reverse = HOLDS, inside, False
    elif min(above, below_) <= ALPHA:
        verdict, p, reverse = FAILS, min(above, below_), True
    else:
        verdict, p, reverse = _lean(abs(diff) < m), inside, False
    ours = f"{labels[0]}: {span(a, fmt)}; {labels[1]}: {span(b, fmt)}"
    if ratio:
        ours += f"; ratio {span([u / v for u, v in zip(a, b)], '.3f')}" if paired else ""
    return Verdict(
        text,
        published,
        ours,
        verdict,
        seeds=n,
        effect=effect,
        chance=chance_text(p, reverse),
        form=SAME,
        size=diff,
        log_size=ratio,
    )


def token_share(names: Sequence[str], profile: str) -> tuple[float, float] | None:
    """The smallest and largest share, over the experiments of ``names`` that run at ``profile``, of one run's
    training tokens there in one run's at the write-up's size (the ``paper`` profile); None where none runs. The
    book's own settings (:data:`lmcompanion.experiments.BOOKS_OWN`) are left out: the write-up has no size for them."""
    shares = [
        experiments.config(n, profile, device="cpu").tokens() / experiments.config(n, "paper", device="cpu").tokens()
        for n in names
        if experiments.runs_at(n, profile) and n not in experiments.BOOKS_OWN
    ]
    return (min(shares), max(shares)) if shares else None


def chapter_share(chapter: str, profile: str) -> tuple[float, float] | None:
    """:func:`token_share` of a chapter's experiments, or None for a chapter whose write-up trained nothing (its
    verdicts name the profile alone: there are no write-up's tokens to be a share of)."""
    if chapter in experiments.TRAINED_NOTHING:
        return None
    return token_share(experiments.chapter_names(chapter), profile)


def percent(share: float) -> str:
    """A share as a percentage to two significant digits, in fixed notation (0.036%, 4.2%, 100%)."""
    pct = 100 * share
    if pct <= 0 or not math.isfinite(pct):
        return f"{pct:g}%"
    decimals = max(0, 1 - math.floor(math.log10(pct)))
    return f"{round(pct, decimals):.{decimals}f}%"


def share_text(share: tuple[float, float]) -> str:
    """ "0.036% of the write-up's tokens", or a range where the chapter's experiments differ."""
    lo, hi = (percent(x) for x in share)
    return f"{lo if lo == hi else f'{lo[:-1]}–{hi}'} of the write-up's tokens"


def at_scale(v: Verdict, profile: str, share: tuple[float, float] | None) -> Verdict:
    """``v`` with its verdict saying the scale it was reached at: "does not hold at `cpu` scale: 0.036% of the
    write-up's tokens", the lean or note after it in parentheses (``share`` None: the profile alone, as where the
    write-up trained nothing). Rows decided without runs (checks, computed statements) keep their verdict: their
    outcome does not depend on the scale."""
    if v.is_check:
        return v
    word = _WORD[v.outcome]
    if not v.verdict.startswith(word) or v.verdict.startswith(f"{word} at `"):
        return v  # already scaled
    rest = v.verdict[len(word) :]
    if rest.startswith(" at this scale"):
        rest = rest[len(" at this scale") :]
    scale = f" at `{profile}` scale" + (f": {share_text(share)}" if share else "")
    return replace(v, verdict=word + scale + rest)


def _decimal(x: float) -> str:
    """A ratio with one decimal at least (34.3, 0.52): always a decimal number, as the page's numbers are."""
    return f"{x:.1f}" if abs(x) >= 1 else f"{x:.2f}"


def sized(v: Verdict) -> Verdict:
    """``v`` with its size said in its effect text, computed from its data, never typed: the write-up's effect in the
    same sense and unit where it prints one, and ours as a multiple of it; a flag on a decided row whose effect is
    :data:`TENFOLD` times the write-up's or more (and the flags :func:`cross_profile` set); the gap trend of a
    headline row (:func:`gap_trend`). Applied again after a flag is added, it replaces its earlier text."""
    tenfold = f"{TENFOLD:g}× the write-up's effect or more"
    flags = tuple(f for f in v.flags if f != tenfold)
    ratio = v.size_ratio
    if ratio is not None and abs(ratio) >= TENFOLD and v.outcome in (HOLDS, FAILS):
        flags = (tenfold,) + flags
    parts = []
    if v.size is not None and v.published_size is not None:
        # in the write-up's digits (-0.028, not -0.0280); a ratio to four, which near 1 is where it differs (x1.003)
        theirs = f"x{math.exp(v.published_size):.4g}" if v.log_size else f"{v.published_size:+.3g}"
        parts.append(
            f"the write-up's {theirs}"
            + (
                ""
                if ratio is None
                else f", ours {_decimal(abs(ratio))}× it" + (" with the other sign" if ratio < 0 else "")
            )
        )
    parts += [f"⚑ {f}" for f in flags] + ([f"gap {v.trend}"] if v.trend else [])
    note = "; ".join(parts)
    base = v.effect[: -len(v.size_note) - 2] if v.size_note and v.effect.endswith("; " + v.size_note) else v.effect
    effect = "; ".join(x for x in (base, note) if x)
    return replace(v, flags=flags, size_note=note, effect=effect)


def cross_profile(rows: Sequence[Verdict], others: Mapping[str, Sequence[Verdict]]) -> list[Verdict]:
    """``rows`` with a flag on each decided row whose effect has the other sign at another profile (``others``:
    profile -> the same chapter's rows decided there, e.g. from recorded ``gpu`` runs): "the other sign at `gpu`
    (+0.012, does not hold)"."""
    out = []
    for v in rows:
        flags = [f for f in v.flags if not f.startswith("the other sign at ")]
        if v.outcome in (HOLDS, FAILS) and v.size:
            for profile, vs in others.items():
                w = next((w for w in vs if w.claim == v.claim), None)
                if w is not None and w.size and (w.size > 0) != (v.size > 0):
                    flags.append(f"the other sign at `{profile}` ({number(w.size, sign='+')}, {_WORD[w.outcome]})")
        out.append(sized(replace(v, flags=tuple(flags))))
    return out


STEADY = 0.1  # a headline gap whose size moves by less than this share of itself over the second half is steady


def gap_trend(a: Sequence, b: Sequence, metric: str) -> tuple[list[tuple[float, float]], str]:
    """The gap between two arms against training (seed-mean ``metric`` of ``a`` minus that of ``b``), from the runs'
    eval records, and the trend of its size over the second half of training in one line: "closing: +0.275 at step
    250, +0.185 at step 500 (-33%)"; "closing" where its size falls by at least :data:`STEADY` of itself, "widening"
    where it grows by as much or the gap changed sign (it has grown on its final side from zero), "steady"
    otherwise. The runs are aligned by the fraction of
    their own steps (arms trained for different steps, as at equal compute, compare at the same point of their runs):
    the points are the first run's evaluations, every other run read there by linear interpolation between its own
    evaluations. Returns (the points (fraction of training, the first run's step there, gap), the line); no line
    with fewer than two points in the second half."""

    def curve(run) -> tuple[list[float], list[float], list[int]]:
        e = run.evals()
        if metric not in e:
            return [], [], []
        e = e[["step", metric]].dropna()
        total = run.summary.get("steps") or run.config.train.max_steps
        return [s / total for s in e["step"]], [float(x) for x in e[metric]], [int(s) for s in e["step"]]

    ca, cb = [curve(r) for r in a], [curve(r) for r in b]
    if not ca or not cb or not all(c[0] for c in ca + cb):
        return [], ""
    lo = max(c[0][0] for c in ca + cb)
    grid = [(f, s) for f, s in zip(ca[0][0], ca[0][2]) if f >= lo]

    def at(c, f: float) -> float:
        return float(np.interp(f, c[0], c[1]))

    points = [(f, s, stats.mean([at(c, f) for c in ca]) - stats.mean([at(c, f) for c in cb])) for f, s in grid]
    step = dict(grid)
    late = [p for p in points if p[0] >= 0.5]
    if len(late) < 2:
        return points, ""
    (f0, _, g0), (f1, _, g1) = late[0], late[-1]
    same = all(c[2] == ca[0][2] for c in ca + cb)  # every run evaluated at the same steps: name them
    where = (lambda f: f"at step {step[f]:,}") if same else (lambda f: f"at {f:.0%} of training")
    change = (abs(g1) - abs(g0)) / abs(g0) if g0 else math.inf
    crossed = bool(g0 and g1 and (g0 > 0) != (g1 > 0))
    # a gap that changed sign has grown on its final side from zero: widening, whatever its size did
    word = "widening" if crossed or change >= STEADY else "closing" if change <= -STEADY else "steady"
    shown = "it changed sign" if crossed else f"{change:+.0%}" if math.isfinite(change) else "from zero"
    return points, f"{word}: {number(g0, sign='+')} {where(f0)}, {number(g1, sign='+')} {where(f1)} ({shown})"


def with_trend(v: Verdict, trend: str, points: Sequence[tuple[float, int, float]] = ()) -> Verdict:
    """``v`` with its headline gap's trend (:func:`gap_trend`) beside its effect and its series (``points``, which the
    chapter's landing page draws beside the row); a row that does not hold whose gap is closing says so in its
    verdict, since a longer run may reverse it."""
    if not trend:
        return sized(v)
    if v.outcome == FAILS and trend.startswith("closing") and "closing" not in v.verdict:
        v = replace(
            v,
            verdict=f"{v.verdict} (the gap between the arms is closing, so a longer run may reverse it; "
            "its trend is beside the effect)",
        )
    gap = tuple((float(f), int(s), float(g)) for f, s, g in points)
    return sized(replace(v, trend=trend, gap=gap))


def have(runs: Mapping[str, Sequence], *names: str) -> bool:
    """Whether every experiment of a claim has runs (recorded runs may cover only some arms)."""
    return all(runs.get(n) for n in names)


COLUMNS = {
    "claim": "claim (write-up)",
    "published": "published",
    "ours": "ours (mean [min, max] over seeds)",
    "seeds": "seeds",
    "effect": "effect ± SE",
    "chance": "chance if equal",
    "verdict": "verdict",
    "learned": "how far each arm learned (every seed; gate: 0.5 nats below its line, or twice chance)",
}
# The evidence of a row (seeds, effect, chance) shares one column on the page.
EVIDENCE = ("seeds", "effect", "chance")


def evidence(v: Verdict) -> str:
    """Seeds, effect ± SE and chance if equal of a row, in one cell ("3 vs 3 · -0.26 ± 0.01 · p = 0.05")."""
    return " · ".join(str(getattr(v, f)) for f in EVIDENCE if str(getattr(v, f)).strip())


def table(verdicts: Sequence[Verdict]):
    """The verdict table of a chapter: one row per claim: the claim, the write-up's number, ours, the evidence
    (:func:`evidence`: seeds · effect ± SE · chance if equal), how far each gated arm learned (:mod:`learning`) and
    the verdict."""
    import pandas as pd

    label = " · ".join(COLUMNS[f] for f in EVIDENCE)
    df = pd.DataFrame(
        [
            {
                COLUMNS["claim"]: v.claim,
                COLUMNS["published"]: v.published,
                COLUMNS["ours"]: v.ours,
                label: evidence(v),
                COLUMNS["learned"]: v.learned or "(no trained arm gated)",
                COLUMNS["verdict"]: v.verdict,
            }
            for v in verdicts
        ]
    )
    df.index = pd.RangeIndex(1, len(df) + 1, name="row")  # numbered from 1, so a page can refer to "row 3"
    return df


def counts(verdicts: Sequence[Verdict]) -> dict[str, int]:
    """How many verdicts hold, do not hold, are inconclusive, are not decided."""
    out = {o: 0 for o in OUTCOMES}
    for v in verdicts:
        out[v.outcome] += 1
    return out


__all__ = [
    "AT_LEAST",
    "AT_MOST",
    "BETTER",
    "CHECK",
    "COLUMNS",
    "COMPUTED",
    "COST",
    "CROSSOVER",
    "EVIDENCE",
    "EXACT",
    "EXACT_FORM",
    "FAILS",
    "FORMS",
    "HOLDS",
    "INCONCLUSIVE",
    "KINDS",
    "NOT_DECIDED",
    "NO_GAIN",
    "NO_TREND",
    "NO_WORSE",
    "OUTCOMES",
    "SAME",
    "STEADY",
    "TENFOLD",
    "TRAINING",
    "TREND",
    "Verdict",
    "WITHIN",
    "arms_of",
    "at_scale",
    "below",
    "between",
    "chance_text",
    "chapter_share",
    "claim",
    "counts",
    "cross_profile",
    "decision",
    "evidence",
    "exact",
    "fewer_parameters",
    "gap_trend",
    "gate",
    "have",
    "no_trend",
    "not_decided",
    "outcome_of",
    "percent",
    "published_gap",
    "published_pair",
    "share_text",
    "similar",
    "sized",
    "table",
    "token_share",
    "trend",
    "with_trend",
]
