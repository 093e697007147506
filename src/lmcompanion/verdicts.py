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
- **Comparisons of learning** ("embeddings A train the matcher better than embeddings B") are decided only where
  at least one arm learns the task: its loss below the chance level by the one-sided t-test at 5%
  (:func:`if_learned`). Where neither does, the comparison is inconclusive whatever its p: two arms at chance
  differ by noise in how they fit it, not in what they learned. This rule only ever turns a decisive verdict into
  an inconclusive one, so the 5% bounds above still hold. For a language model the level is the unigram loss
  (character or token frequencies alone): the hourglass chapter gates its comparisons of arms on it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Mapping, Sequence

from . import experiments, models, stats, tables
from .stats import ALPHA, span

HOLDS, FAILS, INCONCLUSIVE = "holds", "does not hold", "inconclusive at this scale"
_INCONCLUSIVE_WORD = "inconclusive"
EXACT = "exact (no sampling)"


@dataclass(frozen=True)
class Verdict:
    claim: str  # the write-up's claim, in a sentence
    published: str  # the write-up's numbers behind it
    ours: str  # our measurement, with its spread
    verdict: str  # HOLDS, FAILS, or INCONCLUSIVE with the direction the data lean
    seeds: str = ""  # seeds per arm, e.g. "3 vs 3"
    effect: str = ""  # the effect with its spread, e.g. "-0.012 ± 0.004"
    chance: str = EXACT  # p: the chance of this verdict if the arms were equal (inconclusive: of the claimed direction), or EXACT
    notebook: str = ""  # the notebook that decides it (set by the chapter, for the scorecard)
    check: bool = False  # a check of our code decided without training (e.g. a sampler's draws); exact rows are too

    @property
    def is_check(self) -> bool:
        """Whether the row checks our code (exact, or marked ``check``) rather than a claim about training."""
        return self.check or self.chance == EXACT

    @property
    def outcome(self) -> str:
        """HOLDS, FAILS or INCONCLUSIVE, without the lean or the scale."""
        return outcome_of(self.verdict)


def outcome_of(verdict: str) -> str:
    """HOLDS, FAILS or INCONCLUSIVE: the outcome a verdict's text starts with (scaled by :func:`at_scale` or not)."""
    for word, outcome in ((HOLDS, HOLDS), (FAILS, FAILS), (_INCONCLUSIVE_WORD, INCONCLUSIVE)):
        if verdict.startswith(word):
            return outcome
    raise ValueError(f"not a verdict: {verdict!r}")


def _lean(toward_claim: bool | None) -> str:
    if toward_claim is None:
        return INCONCLUSIVE
    return f"{INCONCLUSIVE} (the data lean {'toward' if toward_claim else 'against'} the claim)"


def chance_text(p: float, reverse: bool = False) -> str:
    """The "chance if equal" cell: p of the claimed direction, or of the opposite one where the claim does not hold."""
    # two digits: p = 0.05, 0.33, 1.00; below 0.01 two significant ones (0.0025); always a decimal (the sanitizer's)
    text = "p < 0.001" if p < 0.001 else f"p = {p:.2f}" if p >= 0.01 else f"p = {p:.2g}"
    return text + (" (the opposite direction)" if reverse else "")


def claim(text: str, published: str, better: Sequence[float], worse: Sequence[float],
          labels: tuple[str, str] = ("A", "B"), fmt: str = ".3f") -> Verdict:
    """The claim "``labels[0]`` is lower than ``labels[1]``" from our per-seed values for each side."""
    c = stats.compare(better, worse)
    if c.outcome == "holds":
        verdict, p = HOLDS, c.p_claim
    elif c.outcome == "does not hold":
        verdict, p = FAILS, c.p_reverse
    else:
        verdict, p = _lean(None if c.effect == 0 else c.effect < 0), c.p_claim
    return Verdict(text, published, f"{labels[0]}: {span(better, fmt)}; {labels[1]}: {span(worse, fmt)}", verdict,
                   seeds=f"{c.n_a} vs {c.n_b}", effect=c.effect_text(fmt), chance=chance_text(p, verdict == FAILS))


def published_pair(better: str, worse: str, metric: str) -> str:
    """The write-up's ``metric`` of two experiments, "a vs b", or "no published number" when either lacks it."""
    pb, pw = experiments.get(better).published, experiments.get(worse).published
    return f"{pb[metric]} vs {pw[metric]}" if metric in pb and metric in pw else "no published number"


def between(text: str, metric: str, better: str, worse: str, runs: Mapping[str, Sequence]) -> Verdict:
    """The claim "experiment ``better`` beats experiment ``worse`` on ``metric``" (the final estimate, as the
    write-ups' tables report it), from their runs (experiment name -> runs) and the write-up's published numbers."""
    published = published_pair(better, worse, metric)
    labels = (better.split("/")[-1], worse.split("/")[-1])
    return claim(text, published, tables.final(runs[better], metric), tables.final(runs[worse], metric), labels)


def learns(values: Sequence[float], chance_level: float) -> bool:
    """Whether an arm learns: its values (losses, one per seed) below ``chance_level`` by a one-sided one-sample
    t-test at ALPHA (with no spread: whether they are below it)."""
    values = list(values)
    if len(set(values)) <= 1:
        return bool(values) and values[0] < chance_level
    return stats.one_sample_p(values, chance_level, "less") <= ALPHA


def if_learned(v: Verdict, chance_level: float, better: Sequence[float], worse: Sequence[float],
               level: str = "chance", learned: bool | None = None) -> Verdict:
    """``v``, the verdict of :func:`claim` on these values (losses, one per seed, the claimed-better arm first), when
    at least one arm learns (:func:`learns`: below ``chance_level``); otherwise inconclusive, with the lean and the p
    of the claimed direction, saying that neither arm learns beyond ``level`` (what ``chance_level`` is: chance, or a
    language model's unigram loss; see the module doc). ``learned``: whether an arm of the row learns, decided by the
    caller once per arm from one quantity (e.g. each arm's final validation loss), so that an arm counts the same in
    every row whatever the row compares; default: from ``better`` and ``worse``."""
    if learned is None:
        learned = learns(better, chance_level) or learns(worse, chance_level)
    if learned:
        return v
    c = stats.compare(better, worse)
    lean = "" if c.effect == 0 else f"the data lean {'toward' if c.effect < 0 else 'against'} the claim; "
    # no number in the note: a verdict's text must sanitize whole in the nbval references (tests/nbval_sanitize.cfg)
    return replace(v, verdict=f"{INCONCLUSIVE} ({lean}neither arm learns beyond {level})", chance=chance_text(c.p_claim))


def exact(text: str, published: str, ours: str, ok: bool) -> Verdict:
    """A claim checked by computation, with no sampling involved."""
    return Verdict(text, published, ours, HOLDS if ok else FAILS)


def fewer_parameters(text: str, smaller: str, larger: str) -> Verdict:
    """The claim "experiment ``smaller`` has fewer parameters than ``larger``" at the write-up's size (paper
    profile), counted as the write-ups count; exact numbers, so no seeds are involved."""
    a, b = (models.num_params(experiments.config(n, "paper", device="cpu").model) for n in (smaller, larger))
    pa, pb = experiments.get(smaller).published.get("params"), experiments.get(larger).published.get("params")
    published = f"{pa:,} vs {pb:,}" if pa and pb else "no published number"
    return exact(text, published, f"{a:,} vs {b:,}", a < b)


def below(text: str, published: str, values: Sequence[float], limit: float, fmt: str = ".2e",
          log: bool = True) -> Verdict:
    """The claim "the value ends below ``limit``": a one-sided one-sample t-test of the seeds' values (of their
    log10 when ``log``) against the limit."""
    values = list(values)
    tr = [math.log10(max(v, 1e-300)) for v in values] if log else values
    bound = math.log10(limit) if log else limit
    n = f"{len(values)} seeds"
    if len(set(tr)) == 1:  # no spread: every seed gave the same number
        verdict = HOLDS if tr[0] < bound else FAILS
        return Verdict(text, published, span(values, fmt), verdict, seeds=n, chance="no spread across seeds")
    p_below, p_above = stats.one_sample_p(tr, bound, "less"), stats.one_sample_p(tr, bound, "greater")
    if p_below <= ALPHA:
        verdict, p = HOLDS, p_below
    elif p_above <= ALPHA:
        verdict, p = FAILS, p_above
    else:
        verdict, p = _lean(stats.mean(tr) < bound), p_below
    return Verdict(text, published, span(values, fmt), verdict, seeds=n, chance=chance_text(p, verdict == FAILS))


def _per_setting(per_arm: Sequence[Sequence[float]]) -> str:
    lo, hi = min(len(v) for v in per_arm), max(len(v) for v in per_arm)
    return f"{lo} per setting" if lo == hi else f"{lo} to {hi} per setting"


def trend(text: str, published: str, x: Sequence[float], per_arm: Sequence[Sequence[float]], *,
          direction: str, fmt: str = "+.2f") -> Verdict:
    """The claim that the seed-mean of ``per_arm[j]`` rises (``direction="up"``) or falls (``"down"``) with
    ``x[j]``: Spearman's rho of the means with x and its exact permutation p-value."""
    means = [stats.mean(v) for v in per_arm]
    rho = stats.spearman(x, means)
    p_claim = stats.spearman_p(x, means, "greater" if direction == "up" else "less")
    p_reverse = stats.spearman_p(x, means, "less" if direction == "up" else "greater")
    if p_claim <= ALPHA:
        verdict, p = HOLDS, p_claim
    elif p_reverse <= ALPHA:
        verdict, p = FAILS, p_reverse
    else:
        verdict, p = _lean(None if rho == 0 else (rho > 0) == (direction == "up")), p_claim
    return Verdict(text, published, f"Spearman rho {rho:{fmt}} over {len(x)} settings", verdict,
                   seeds=_per_setting(per_arm), effect=f"rho {rho:{fmt}}", chance=chance_text(p, verdict == FAILS))


def no_trend(text: str, published: str, x: Sequence[float], per_arm: Sequence[Sequence[float]],
             fmt: str = "+.2f") -> Verdict:
    """The claim that the seed means do *not* follow ``x``: refuted by a significant trend either way (two-sided,
    each side at 2.5%), otherwise inconclusive (a test cannot show that a trend is absent)."""
    means = [stats.mean(v) for v in per_arm]
    rho = stats.spearman(x, means)
    p_two = min(1.0, 2 * min(stats.spearman_p(x, means, "greater"), stats.spearman_p(x, means, "less")))
    verdict = FAILS if p_two <= ALPHA else f"{INCONCLUSIVE} (no significant trend; a test cannot show its absence)"
    return Verdict(text, published, f"Spearman rho {rho:{fmt}} over {len(x)} settings", verdict,
                   seeds=_per_setting(per_arm), effect=f"rho {rho:{fmt}}", chance=chance_text(p_two) + " (two-sided)")


def similar(text: str, published: str, a: Sequence[float], b: Sequence[float], margin: float, *,
            paired: bool = False, ratio: bool = False, labels: tuple[str, str] = ("A", "B"), fmt: str = ".3f",
            unit: str = "seeds") -> Verdict:
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
        effect = f"x{math.exp(diff):.3f} (SE of the log ratio {se:.3f})" if ratio else f"{diff:+{fmt}} ± {se:{fmt}}"
        n = f"{len(d)} {unit}"
    else:
        inside = max(stats.permutation_p(y, [u + m for u in x], "less"), stats.permutation_p([u - m for u in x], y, "less"))
        above = stats.permutation_p(y, [u - m for u in x], "less")  # b + margin below a: a is higher by more
        below_ = stats.permutation_p([u + m for u in x], y, "less")  # a + margin below b: a is lower by more
        c = stats.compare(x, y)
        diff = c.effect
        effect = f"x{math.exp(diff):.3f} (ratio of geometric means)" if ratio else c.effect_text(fmt)
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
    return Verdict(text, published, ours, verdict, seeds=n, effect=effect, chance=chance_text(p, reverse))


def token_share(names: Sequence[str], profile: str) -> tuple[float, float] | None:
    """The smallest and largest share, over the experiments of ``names`` that run at ``profile``, of one run's
    training tokens there in one run's at the write-up's size (the ``paper`` profile); None where none runs."""
    shares = [experiments.config(n, profile, device="cpu").tokens() / experiments.config(n, "paper", device="cpu").tokens()
              for n in names if experiments.runs_at(n, profile)]
    return (min(shares), max(shares)) if shares else None


def percent(share: float) -> str:
    """A share as a percentage to two significant digits, in fixed notation (0.036%, 4.2%, 100%)."""
    pct = 100 * share
    if pct <= 0 or not math.isfinite(pct):
        return f"{pct:g}%"
    decimals = max(0, 1 - math.floor(math.log10(pct)))
    return f"{round(pct, decimals):.{decimals}f}%"


def share_text(share: tuple[float, float]) -> str:
    """"0.036% of the write-up's tokens", or a range where the chapter's experiments differ."""
    lo, hi = (percent(x) for x in share)
    return f"{lo if lo == hi else f'{lo[:-1]}–{hi}'} of the write-up's tokens"


def at_scale(v: Verdict, profile: str, share: tuple[float, float] | None) -> Verdict:
    """``v`` with its verdict saying the scale it was reached at: "does not hold at `cpu` scale: 0.036% of the
    write-up's tokens", the lean or note after it in parentheses. Exact rows (no sampling) and rows with no runs at
    this profile keep their verdict: their outcome does not depend on the scale."""
    if v.is_check or v.seeds == "0":
        return v
    outcome = v.outcome
    if not v.verdict.startswith(outcome) or v.verdict.startswith(f"{outcome} at `"):
        return v  # already scaled
    rest = v.verdict[len(outcome):]
    word = _INCONCLUSIVE_WORD if outcome == INCONCLUSIVE else outcome
    scale = f" at `{profile}` scale" + (f": {share_text(share)}" if share else "")
    return replace(v, verdict=word + scale + rest)


def have(runs: Mapping[str, Sequence], *names: str) -> bool:
    """Whether every experiment of a claim has runs (recorded runs may cover only some arms)."""
    return all(runs.get(n) for n in names)


def in_notebook(rows: Sequence[Verdict], notebook: str) -> list[Verdict]:
    """The rows, each marked with the notebook (path under notebooks/, without .py) that decides it."""
    return [replace(v, notebook=notebook) for v in rows]


COLUMNS = {"claim": "claim (write-up)", "published": "published", "ours": "ours (mean [min, max] over seeds)",
           "seeds": "seeds", "effect": "effect ± SE", "chance": "chance if equal", "verdict": "verdict"}
# The evidence of a row (seeds, effect, chance) shares one column on the page: five columns fit its width.
EVIDENCE = ("seeds", "effect", "chance")


def evidence(v: Verdict) -> str:
    """Seeds, effect ± SE and chance if equal of a row, in one cell ("3 vs 3 · -0.26 ± 0.01 · p = 0.05")."""
    return " · ".join(str(getattr(v, f)) for f in EVIDENCE if str(getattr(v, f)).strip())


def table(verdicts: Sequence[Verdict]):
    """The verdict table of a chapter: one row per claim, in five columns: the claim, the write-up's number, ours,
    the evidence (:func:`evidence`: seeds · effect ± SE · chance if equal) and the verdict."""
    import pandas as pd

    label = " · ".join(COLUMNS[f] for f in EVIDENCE)
    df = pd.DataFrame([{COLUMNS["claim"]: v.claim, COLUMNS["published"]: v.published, COLUMNS["ours"]: v.ours,
                        label: evidence(v), COLUMNS["verdict"]: v.verdict} for v in verdicts])
    df.index = pd.RangeIndex(1, len(df) + 1, name="row")  # numbered from 1, so a page can refer to "row 3"
    return df


def counts(verdicts: Sequence[Verdict]) -> dict[str, int]:
    """How many verdicts hold, do not hold, are inconclusive."""
    out = {HOLDS: 0, FAILS: 0, INCONCLUSIVE: 0}
    for v in verdicts:
        out[v.outcome] += 1
    return out


__all__ = ["COLUMNS", "EVIDENCE", "EXACT", "evidence", "FAILS", "HOLDS", "INCONCLUSIVE", "Verdict", "at_scale",
           "below", "between", "claim", "counts", "learns", "outcome_of", "percent", "share_text", "token_share",
           "chance_text", "exact", "fewer_parameters", "have", "if_learned", "in_notebook", "no_trend", "published_pair",
           "similar", "table", "trend"]
