"""The formal encoder–decoder chapter: the verdict of every claim of the write-up, and the names its notebooks read.

**Rows.** The write-up reports no experiments: its claims are the properties of its three algorithms
(ED-Transformer, ED-Training, ED-Inference). The rows are data (:mod:`.rows`: their claim texts, the arms); this
module decides them from what the chapter's last notebook computes (``Context.extra``: the agreement table and the
mask checks of the first notebook's analyses, the temperature checks and the sweep, the held-out accuracy of every
AdamW seed and the profile's bar) and from the runs (the AdamW runs and the literal ED-Training runs, each gated on
having learned: :func:`lmcompanion.verdicts.gate`), and registers them as :data:`ROWS`. Which claim of the write-up
each row tests, or why a claim has none, is the ledger (:mod:`.claims`), registered here with
:mod:`lmcompanion.ledger`.

**Analyses.** θ against the write-up's parameter list, the batched model against the literal transcription, the
masks, the task, ED-Training beside AdamW, ED-Inference, the temperature and cross-attention are in :mod:`.analysis`,
in the order of the notebooks (``01_algorithm``, ``02_training``, ``03_inference``). Every name the notebooks use is
re-exported here.

The runs are configured in ``lmcompanion.experiments.formal_ed`` (the literal ED-Training's procedure in
``lmcompanion.experiments.ed_training``); the model and the write-up's three algorithms are in
``lmcompanion.models.formal_ed``.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Mapping, Sequence

from ...claims import Context, Row, register as register_rows, register_ledger
from ...experiments.formal_ed import INF
from ...formats import number
from ...stats import span
from ...train import Run
from ...verdicts import AT_LEAST, CHECK, INCONCLUSIVE, Verdict, arms_of, below, chance_text, claim, exact, gate
from . import analysis
from .analysis import (
    accuracy_table,
    agreement,
    attention_panels,
    cross_attention,
    curves,
    dependence,
    dependence_panels,
    encoding_table,
    examples_table,
    exact_match,
    generate,
    hyperparameters,
    longest_example,
    mask_checks,
    parameter_inventory,
    randomize,
    sweep_series,
    sweep_table,
    task_table,
    tau_label,
    temperature_checks,
    temperature_sweep,
    unigram_reference,
    visible,
)
from .claims import CLAIMS
from .rows import (
    AGREEMENT,
    ALL_CLAIMS,
    ARMS,
    CHAPTER,
    FULL,
    LITERAL,
    NAME,
    NOTEBOOK,
    ORDER,
    REDUCES,
    SOLVES,
    TAU0,
    TAU1,
    TAUINF,
    TERMINATES,
    UNI,
)

# --- the verdicts -----------------------------------------------------------------------------------------------


def _bound(x: float) -> str:
    """A float error as its order of magnitude ("0", or "< 1e-15"): the last digits of round-off differ between
    machines, its size does not."""
    return "0" if x == 0 else f"< 1e{math.floor(math.log10(x)) + 1}"


def verdict_agreement(table) -> Verdict:
    """The literal transcription and the batched model agree within tolerance in every case."""
    worst64 = table.loc[table["dtype"] == "float64", "_worst"].max()
    worst32 = table.loc[table["dtype"] == "float32", "_worst"].max()
    ok = bool((table["_worst"] <= table["_tol"]).all())
    return exact(
        AGREEMENT,
        "P ← ED-Transformer(z, x | θ), line by line",
        f"max |ΔP| vs the literal loops: {_bound(worst64)} (float64), {_bound(worst32)} (float32); "
        f"{len(table)} cases incl. a padded batch",
        ok,
    )


def verdict_masks(checks: Mapping[str, int]) -> list[Verdict]:
    leak = checks["earlier columns changed by a later x token"]
    blind = checks["columns of P not changed by some z token"] + checks["columns of Z not changed by some z token"]
    return [
        exact(
            UNI,
            "$P_{:,j}$ depends on $x_{1:j}$ only",
            f"a later x token changed an earlier column of P in {leak} of "
            f"{checks['pairs (column j, later token)']} cases",
            leak == 0,
        ),
        exact(
            FULL, "MultiHeadAttention(Z, Z | 𝒲, 1)", f"columns of Z or P unchanged by some z token: {blind}", blind == 0
        ),
    ]


def verdict_literal_training(literal_runs: Sequence[Run]) -> Verdict:
    before = [r.summary["initial"]["val"] for r in literal_runs]
    after = [r.summary["final"]["val"] for r in literal_runs]
    return claim(REDUCES, "T epochs of plain SGD on J(θ)", after, before, ("held-out loss after", "before"))


def verdict_accuracy(accuracies: Sequence[float], target: float | None, profile: str) -> Verdict:
    """Every seed's held-out exact match against our bar (a one-sided one-sample t-test of the error rates)."""
    text = SOLVES  # the book's own row: the write-up reports no experiment
    ours = f"held-out exact match at τ = 0: {span(accuracies, '.4f')}"
    if target is None:
        return Verdict(
            text,
            "(no experiment in the write-up)",
            ours,
            f"{INCONCLUSIVE} (not judged at the {profile} profile)",
            seeds=f"{len(accuracies)} seeds",
            chance="",
            form=AT_LEAST,
        )
    # at least a bound: the accuracy at least the bar, tested as its error rate at most one minus the bar
    v = below(text, "(no experiment in the write-up)", [1 - a for a in accuracies], 1 - target, log=False)
    return replace(v, ours=f"{ours}; our bar at this profile: ≥ {target}", form=AT_LEAST)


def _fit(p: float, against: str) -> str:
    """A goodness-of-fit p worded so that its direction is plain: here a *large* p supports the claim."""
    side = f"above 0.001: the draws fit {against}" if p > 1e-3 else f"at or below 0.001: the draws do not fit {against}"
    return f"draws vs {against}: χ² goodness-of-fit {chance_text(p)} ({side})"


def _sampled(v: Verdict, p: float) -> Verdict:
    """A sampler check: the Monte Carlo goodness-of-fit test rejects a correct sampler with probability at most 0.001
    (our threshold). Unlike a comparison's p, a goodness-of-fit p is small when the claim is wrong: the row says so."""
    return replace(
        v,
        seeds="1 model",
        check=True,
        chance=f"χ² {chance_text(p)}: a small p speaks against the sampler; it fails at p ≤ 0.001, which a "
        "correct sampler reaches at most once in 1,000 (Monte Carlo)",
    )


def verdict_temperatures(table) -> list[Verdict]:
    def row(tau):
        return table[table["_tau"] == tau].iloc[0]

    r0, r1, rinf = row(0.0), row(1.0), row(INF)
    finite = int(table["non-finite entries of q"].sum()) == 0
    return [
        exact(
            TAU0,
            "τ = 0: the most likely continuation",
            f"max |q − one-hot(argmax p)| = {_bound(r0['_err'])}; draws that are the argmax: "
            f"{number(r0['_argmax_share'])}",
            r0["_err"] == 0 and r0["_argmax_share"] == 1 and finite,
        ),
        _sampled(
            exact(
                TAU1,
                "τ = 1: faithful sampling (q = p)",
                f"max |q − p| = {_bound(r1['_err'])}; {_fit(r1['_p'], 'p')}",
                r1["_err"] < 1e-12 and r1["_p"] > 1e-3,
            ),
            r1["_p"],
        ),
        _sampled(
            exact(
                TAUINF,
                "τ = ∞: uniform over V",
                f"max |q − 1/|V|| = {_bound(rinf['_err'])}; {_fit(rinf['_p'], 'uniform')}",
                rinf["_err"] == 0 and rinf["_p"] > 1e-3 and finite,
            ),
            rinf["_p"],
        ),
    ]


def verdict_termination(sweep) -> Verdict:
    """Every generation of the sweep ended at its first EOS or at the cap; how often the cap was needed."""
    capped = sweep.groupby("tau")["stopped by the cap"].mean()
    ended = sweep["ended at eos or the cap"].min()
    worst_tau = capped.idxmax()
    return exact(
        TERMINATES,
        "while y ≠ eos (no bound in the write-up)",
        f"ended at the first eos or at our cap ℓ_max: {number(ended)}; stopped by the cap: "
        f"{number(capped.min())} to {number(capped.max())} (τ = {tau_label(worst_tau)})",
        ended == 1.0,
    )


def verdict_tau_order(sweep) -> Verdict:
    err = {tau: (1 - sweep[sweep["tau"] == tau].sort_values("seed")["exact match"]).tolist() for tau in (0.0, INF)}
    return claim(ORDER, "τ = 0 most likely, τ = ∞ uniform", err[0.0], err[INF], ("error at τ = 0", "error at τ = ∞"))


def _reduces(ctx: Context) -> Verdict:
    """ED-Training lowers the held-out loss, the trained model gated on it (its loss after training)."""
    return gate(verdict_literal_training(ctx.runs[LITERAL]), arms_of(ctx.runs, "val", LITERAL))


def _solves(ctx: Context) -> Verdict:
    return gate(
        verdict_accuracy(ctx.extra["accuracy"], ctx.extra["target"], ctx.profile or "recorded"),
        arms_of(ctx.runs, "val", NAME),
    )


def _order(ctx: Context) -> Verdict:
    return gate(verdict_tau_order(ctx.extra["sweep"]), arms_of(ctx.runs, "val", NAME))


# The verdict rows of the chapter's last notebook, decided from what it computes (``Context.extra``): the agreement
# table and the mask checks, the temperature checks and the sweep, the held-out accuracy of every AdamW seed and the
# profile's bar; the runs are the AdamW runs and the literal ED-Training runs.
ROWS = register_rows(
    CHAPTER,
    [
        Row(AGREEMENT, NOTEBOOK, lambda ctx: verdict_agreement(ctx.extra["agreement"]), kind=CHECK),
        Row(UNI, NOTEBOOK, lambda ctx: verdict_masks(ctx.extra["masks"])[0], kind=CHECK),
        Row(FULL, NOTEBOOK, lambda ctx: verdict_masks(ctx.extra["masks"])[1], kind=CHECK),
        *[
            Row(text, NOTEBOOK, lambda ctx, i=i: verdict_temperatures(ctx.extra["checks"])[i], kind=CHECK)
            for i, text in enumerate((TAU0, TAU1, TAUINF))
        ],
        Row(TERMINATES, NOTEBOOK, lambda ctx: verdict_termination(ctx.extra["sweep"]), kind=CHECK),
        Row(REDUCES, NOTEBOOK, _reduces, arms=(LITERAL,)),
        Row(SOLVES, NOTEBOOK, _solves, arms=(NAME,), extension=True),
        Row(ORDER, NOTEBOOK, _order, arms=(NAME,), extension=True),
    ],
)

# The write-up's claims, in its order; each names the verdict row of notebooks/formal_ed/03_inference that tests it.
register_ledger(CHAPTER, CLAIMS)

__all__ = [
    "AGREEMENT",
    "ALL_CLAIMS",
    "ARMS",
    "CHAPTER",
    "CLAIMS",
    "FULL",
    "LITERAL",
    "NAME",
    "NOTEBOOK",
    "ORDER",
    "REDUCES",
    "ROWS",
    "SOLVES",
    "TAU0",
    "TAU1",
    "TAUINF",
    "TERMINATES",
    "UNI",
    "accuracy_table",
    "agreement",
    "analysis",
    "attention_panels",
    "cross_attention",
    "curves",
    "dependence",
    "dependence_panels",
    "encoding_table",
    "examples_table",
    "exact_match",
    "generate",
    "hyperparameters",
    "longest_example",
    "mask_checks",
    "parameter_inventory",
    "randomize",
    "sweep_series",
    "sweep_table",
    "task_table",
    "tau_label",
    "temperature_checks",
    "temperature_sweep",
    "unigram_reference",
    "verdict_accuracy",
    "verdict_agreement",
    "verdict_literal_training",
    "verdict_masks",
    "verdict_tau_order",
    "verdict_temperatures",
    "verdict_termination",
    "visible",
]
