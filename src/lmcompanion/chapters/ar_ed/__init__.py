"""The AR encoder–decoder chapter: the verdict of every claim of the write-up, decided from the runs of its notebooks
(and the side-by-side timing of its verdict notebook).

**Rows.** The claims are data (:mod:`.rows`: the write-up's words, the arms of each comparison, the notebook whose
runs decide it, the cost claims and the bound of a collapsed embedding loss); this module decides them, each
comparison of trained arms gated on the arms having learned (:func:`lmcompanion.verdicts.gate`). Which claim of the
write-up each row tests, or why a claim has none, is the ledger (:mod:`.claims`), registered here with
:mod:`lmcompanion.ledger`.

**Analyses.** The chapter's pages compute nothing beyond their curves, results tables and verdicts (:mod:`.analysis`
says so); every name the notebooks, the tests and the campaign use is re-exported here.
"""

from __future__ import annotations

from ... import experiments, tables
from ...claims import Row, between_row, register as register_rows, register_ledger
from ...formats import number
from ...verdicts import COMPUTED, Verdict, arms_of, below, fewer_parameters, gate
from .. import cost
from .. import verdict_forms as vf
from . import analysis
from .claims import CLAIMS
from .rows import (
    BEYOND,
    CHAPTER,
    COLLAPSE_BOUND,
    COLLAPSING,
    CROSSOVERS,
    FEWER,
    MEMORY,
    PRINTED,
    SMALLER,
    SPECS,
    TIME,
    TIMED,
    collapse_claim,
    printed,
)


def collapse_row(text: str, name: str, runs) -> Verdict:
    """The embedding loss of ``name`` ends below :data:`COLLAPSE_BOUND`, gated on the arm's final validation loss:
    a collapse in a model that has not learned to predict says nothing about the write-up's."""
    exp = experiments.get(name)
    v = below(
        text,
        number(exp.published["aux"], PRINTED),
        tables.last_train_metric(runs[name], "aux/embedding"),
        COLLAPSE_BOUND,
    )
    return gate(v, arms_of(runs, "val", name))


ROWS = register_rows(
    CHAPTER,
    [
        *[between_row(*c, extension=c[0].startswith(BEYOND)) for c in SPECS],
        *[vf.crossover_row(*c) for c in CROSSOVERS],
        Row(
            FEWER,
            "04_baselines",
            lambda ctx: fewer_parameters(FEWER, "ar_ed/mse_pos_sub", "ar_ed/baseline"),
            kind=COMPUTED,
        ),
        Row(
            SMALLER,
            "04_baselines",
            lambda ctx: fewer_parameters(SMALLER, "ar_ed/smaller_baseline", "ar_ed/mse_pos_sub"),
            kind=COMPUTED,
        ),
        *cost.similar_cost_rows(TIME, MEMORY, *TIMED, memory_notebook="04_baselines", time_notebook="06_verdicts"),
        *[
            Row(
                collapse_claim(n),
                "01_embedding_loss" if n != "ar_ed/mse_pos_sub" else "03_combined",
                lambda ctx, n=n: collapse_row(collapse_claim(n), n, ctx.runs),
                arms=(n,),
            )
            for n in COLLAPSING
        ],
    ],
)


# The write-up's claims, each with the row above that tests it or the reason it is not tested (the ledger page).
register_ledger(CHAPTER, CLAIMS)


__all__ = [
    "BEYOND",
    "CHAPTER",
    "CLAIMS",
    "COLLAPSE_BOUND",
    "COLLAPSING",
    "CROSSOVERS",
    "FEWER",
    "MEMORY",
    "PRINTED",
    "ROWS",
    "SMALLER",
    "SPECS",
    "TIME",
    "TIMED",
    "analysis",
    "collapse_claim",
    "collapse_row",
    "printed",
]
