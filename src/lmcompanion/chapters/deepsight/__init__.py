"""The DeepSight chapter: the verdict of every claim of the write-up, decided from the runs of its notebooks (and the
side-by-side timing of its verdict notebook).

**Rows.** The claims are data (:mod:`.rows`: the write-up's words, the arms of each comparison, the δ sweep, the cost
claims, the margin of "slightly underperformed" and the bound of a collapsed planning loss); this module decides
them, each comparison of trained arms gated on the arms having learned (:func:`lmcompanion.verdicts.gate`). Which
claim of the write-up each row tests, or why a claim has none, is the ledger (:mod:`.claims`), registered here with
:mod:`lmcompanion.ledger`.

**Analyses.** The planning-target weights checked by hand, the δ sweep's rank correlations and the collapse of the
planning loss are in :mod:`.analysis`. Every name the notebooks, the tests and the campaign use is re-exported here.
"""

from __future__ import annotations

import dataclasses

from ... import experiments, stats, tables
from ...claims import Row, between_row, register as register_rows, register_ledger
from ...experiments.deepsight import DELTAS
from ...formats import number
from ...verdicts import COMPUTED, Verdict, arms_of, below, fewer_parameters, gate, no_trend, trend
from .. import cost
from .. import verdict_forms as vf
from . import analysis
from .analysis import OPTIONS, collapse_sentence, collapse_table, delta_correlations, hand_check, option_panels
from .claims import CLAIMS
from .rows import (
    CHAPTER,
    COLLAPSE_BOUND,
    COSINE,
    COSINE_PARTS,
    FEWER,
    MEMORY,
    NO_TREND,
    PLANNING,
    PRINTED,
    SPECS,
    SWEEP,
    TIME,
    TIMED,
    TREND,
    collapse_claim,
    slight,
)


def collapse_row(text: str, name: str, runs) -> Verdict:
    """The planning loss of ``name`` ends below :data:`COLLAPSE_BOUND`, gated on the arm's final validation loss."""
    exp = experiments.get(name)
    v = below(
        text,
        number(exp.published["aux"], PRINTED),
        tables.last_train_metric(runs[name], "aux/planning"),
        COLLAPSE_BOUND,
    )
    return gate(v, arms_of(runs, "val", name))


def _published_trend(split: str) -> list[float]:
    return [experiments.get(n).published[split] for n in SWEEP]


def trend_row(runs) -> Verdict:
    """ "Better train loss performance is correlated with bigger future context size": Spearman's rho of delta with
    the seed-mean final train loss, every arm of the sweep gated on it."""
    pub = _published_trend("train")
    v = trend(
        TREND,
        "train losses " + ", ".join(f"{x}" for x in pub) + f" (rho {number(stats.spearman(DELTAS, pub), sign='+')})",
        DELTAS,
        [tables.final(runs[n], "train") for n in SWEEP],
        direction="down",
    )
    v = dataclasses.replace(v, published_size=stats.spearman(DELTAS, pub))
    return gate(v, arms_of(runs, "train", *SWEEP))


def no_trend_row(runs) -> Verdict:
    """ "Val loss is not very correlated": refuted by a significant trend either way, every arm gated."""
    rho = stats.spearman(DELTAS, _published_trend("val"))
    v = no_trend(
        NO_TREND, f"Spearman rho {number(rho, sign='+')}", DELTAS, [tables.final(runs[n], "val") for n in SWEEP]
    )
    v = dataclasses.replace(v, published_size=rho)
    return gate(v, arms_of(runs, "val", *SWEEP))


ROWS = register_rows(
    CHAPTER,
    [
        *[between_row(*c) for c in SPECS],
        vf.crossover_row(COSINE, *COSINE_PARTS, "02_loss_types", second_margin=slight()),
        Row(TREND, "03_future_context", lambda ctx: trend_row(ctx.runs), arms=SWEEP),
        Row(NO_TREND, "03_future_context", lambda ctx: no_trend_row(ctx.runs), arms=SWEEP),
        Row(
            FEWER,
            "04_baseline",
            lambda ctx: fewer_parameters(FEWER, "deepsight/mse_d11", "deepsight/baseline"),
            kind=COMPUTED,
        ),
        *cost.similar_cost_rows(TIME, MEMORY, *TIMED, memory_notebook="04_baseline", time_notebook="06_verdicts"),
        *[
            Row(
                collapse_claim(n),
                "05_collapse",
                lambda ctx, n=n: collapse_row(collapse_claim(n), n, ctx.runs),
                arms=(n,),
            )
            for n in PLANNING
        ],
    ],
)


# The write-up's claims, each with the row above that tests it or the reason it is not tested (the ledger page).
register_ledger(CHAPTER, CLAIMS)


__all__ = [
    "CHAPTER",
    "CLAIMS",
    "COLLAPSE_BOUND",
    "COSINE",
    "COSINE_PARTS",
    "FEWER",
    "MEMORY",
    "NO_TREND",
    "OPTIONS",
    "PLANNING",
    "PRINTED",
    "ROWS",
    "SPECS",
    "SWEEP",
    "TIME",
    "TIMED",
    "TREND",
    "analysis",
    "collapse_claim",
    "collapse_row",
    "collapse_sentence",
    "collapse_table",
    "delta_correlations",
    "hand_check",
    "no_trend_row",
    "option_panels",
    "slight",
    "trend_row",
]
