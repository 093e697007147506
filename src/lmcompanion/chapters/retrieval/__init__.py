"""The retrieval chapter (the "Accurate Representation and Retrieval" part of "Masked Mixer Language Models",
B. L. Badger, 2024): the verdict of every claim of that part, and the names its notebooks read.

**Rows.** The claims are data (:mod:`.rows`: the arms, the write-up's words, which numbers each row compares, the
numbers it quotes, in its order: :data:`SPECS`); this module decides them (:func:`row_verdict`), each comparison of
trained matchers gated on the arms having learned against chance (:func:`lmcompanion.verdicts.gate`), a claim that
something does not learn on its control arm having learned, and registers them as :data:`ROWS` with the chapter's
lead (:func:`lead`). Which claim of the write-up each row tests, or why a claim has
none, is the ledger (:mod:`.claims`), registered here with :mod:`lmcompanion.ledger`.

**Analyses.** The pairs, the results beside the write-up's numbers, the baselines it does not have (cosine, L1 and L2
on the embeddings, BM25 on the texts), the embeddings' norms and geometry, the diagnosis of why the matchers did not
learn, the export of a run for an independent check and the paper profile's cost are in :mod:`.analysis`. Every name
the notebooks use is re-exported here.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Mapping, Sequence

from ... import claims as claim_rows
from ... import experiments, learning, stats, tables
from ...claims import Row, register as register_rows
from ...experiments import retrieval as rexp
from ...formats import number
from ...verdicts import HOLDS, NOT_DECIDED, TRAINING, Verdict, arms_of, claim, exact, gate
from .. import verdict_forms as vf
from . import analysis
from .analysis import (
    autoencoder_table,
    baselines,
    best_evaluation,
    bm25_top1,
    chance,
    check_exportable,
    cosine_top1,
    curves,
    directions,
    export,
    fit_table,
    geometry,
    metric_top1,
    norm_spread,
    norms_table,
    pairs_of,
    pairs_summary,
    pairs_table,
    query_reach,
    query_share,
    rerun_estimate,
    results,
    shared_share,
    sphere_level,
)
from .claims import CLAIMS
from .rows import (
    ALL_CLAIMS,
    BM25,
    CHAPTER,
    CONTROLS,
    FITS,
    HEADLINE,
    LEARNS,
    MAIN,
    METRICS,
    MORE_PAIRS,
    PROTOCOL,
    RUN_NAMES,
    SPECS,
    TRAINING_PAIRS,
    WIKI,
    Spec,
)

# --- the verdicts -----------------------------------------------------------------------------------------------


def _middle(run, split: str = "test") -> float:
    ev = run.evals()
    return float(ev.loc[(ev["step"] - run.summary["steps"] / 2).abs().idxmin(), split])


def _labels(row: Spec) -> tuple[str, str]:
    return row.a.split("/")[-1], (row.b or row.a).split("/")[-1]


def _short(name: str) -> str:
    return name.split("/")[-1]


def _values(row: Spec, runs, name: str) -> list[float]:
    if row.kind == "lower_peak":
        return [float(best_evaluation(r)["test"]) for r in runs[name]]
    if row.kind == "lower_train_peak":
        return [float(best_evaluation(r)["train"]) for r in runs[name]]
    return tables.final(runs[name], "test")


def _embedder_arm(runs: Sequence, label: str) -> learning.Arm | None:
    """The gate's view of the CLM whose embeddings these runs match: its final validation loss (recorded in each
    matcher run's summary) against its unigram loss; None where the summaries do not record it."""
    finals = [r.summary.get("embedder", {}).get("final", {}).get("val") for r in runs]
    if not runs or any(f is None for f in finals):
        return None
    ecfg = rexp.embedder_run_config(runs[0].config)
    ref = learning.reference(ecfg, "val")
    return learning.Arm(label, ref.name, ref.level, tuple(float(f) for f in finals))


def _on_training_pairs(runs, *names: str) -> list[learning.Arm]:
    """The gate's arms of ``names`` on their final training-pair loss, each labelled so (:data:`TRAINING_PAIRS`): a
    reader, and :func:`lead`, tell them from arms gated on their test pairs."""
    return [dataclasses.replace(a, label=f"{a.label} ({TRAINING_PAIRS})") for a in arms_of(runs, "train", *names)]


def _control(row: Spec, runs) -> list[learning.Arm]:
    return arms_of(runs, "test", row.control) if row.control else []


def row_verdict(row: Spec, runs: Mapping[str, Sequence]) -> Verdict:
    """The verdict of one row from its arms' runs, gated (:func:`lmcompanion.verdicts.gate`) on what it compares:
    each matcher's test cross-entropy at the compared evaluation against chance (ln K), its top-1 against twice
    chance, and for a claim that something does not learn, the row's control arm (which must learn)."""
    text, pub, labels = row.text, row.published, _labels(row)
    if row.kind in ("lower", "lower_peak", "lower_train_peak"):
        a, b = _values(row, runs, row.a), _values(row, runs, row.b)
        split = "train" if row.kind == "lower_train_peak" else "test"
        at = "final" if row.kind == "lower" else "the best test evaluation"
        return gate(
            claim(text, pub, a, b, labels), arms_of(runs, split, row.a, row.b, values={row.a: a, row.b: b}, at=at)
        )
    if row.kind == "no_gain":
        a, b = tables.final(runs[row.a], "test"), tables.final(runs[row.b], "test")
        return gate(vf.no_gain(text, pub, a, b, labels), _control(row, runs))
    if row.kind == "not_below":
        level = chance(runs[row.a][0].config.model.context_size)
        bound = level if row.level == "chance" else float(row.level)
        what = "chance" if row.level == "chance" else "the write-up's level"
        return gate(vf.not_below(text, pub, tables.final(runs[row.a], "test"), bound, what), _control(row, runs))
    if row.kind == "overfits":
        train, test = tables.final(runs[row.a], "train"), tables.final(runs[row.a], "test")
        return gate(claim(text, pub, train, test, ("train", "test")), _on_training_pairs(runs, row.a))
    if row.kind == "still_falling":
        end, middle = tables.final(runs[row.a], "test"), [_middle(r) for r in runs[row.a]]
        v = claim(text, pub, end, middle, ("end", "middle"))
        return gate(v, [learning.arm(_short(row.a), runs[row.a], "test", middle, "the middle evaluation")])
    if row.kind == "rises_more":
        best = {n: [float(best_evaluation(r)["test"]) for r in runs[n]] for n in (row.a, row.b)}
        rise = {n: [r.summary["final"]["test"] - b for r, b in zip(runs[n], best[n])] for n in (row.a, row.b)}
        v = claim(text, pub, rise[row.a], rise[row.b], labels)
        return gate(v, arms_of(runs, "test", row.a, row.b, values=best, at="the best test evaluation"))
    if row.kind == "metric":
        matcher = [1 - x for x in tables.final(runs[row.a], "test_acc")]
        other = [1 - metric_top1(r, row.metric) for r in runs[row.a]]
        v = claim(text, pub, matcher, other, ("matcher top-1 error", f"{row.metric} top-1 error"))
        return gate(v, arms_of(runs, "test_acc", row.a))
    if row.kind == "bm25":
        k = runs[row.a][0].config.model.context_size - 1
        bm = [bm25_top1(r) for r in runs[row.a]]
        v = vf.not_below(text, pub, bm, 2 / k, "twice chance", fmt=".3f")
        return dataclasses.replace(
            v,
            ours=f"BM25 top-1 {stats.span(bm, '.2f')} among {k} candidates; the "
            f"matcher's {stats.span(tables.final(runs[row.a], 'test_acc'), '.3f')}; "
            f"chance {number(1 / k)}",
        )
    if row.kind == "off_sphere":
        spread = [norm_spread(r) for r in runs[row.a]]
        v = vf.not_below(text, pub, spread, sphere_level(runs[row.a][0]), "Gaussian vectors of this width")
        embedder = _embedder_arm(
            runs[row.a], f"{_short(experiments.get(row.a).build('cpu').data.embedder)} (the embedder)"
        )
        if embedder is None:
            return dataclasses.replace(v, verdict=f"{NOT_DECIDED} (the embedder's loss is not recorded in these runs)")
        return gate(v, [embedder])
    if row.kind == "cosine_better":
        mixer = [1 - metric_top1(r, "cosine") for r in runs[row.a]]
        transformer = [1 - metric_top1(r, "cosine") for r in runs[row.b]]
        v = claim(text, pub, transformer, mixer, ("transformer cosine top-1 error", "mixer cosine top-1 error"))
        embedders = [
            _embedder_arm(runs[n], f"{experiments.get(n).build('cpu').data.embedder.split('/')[-1]} (the embedder)")
            for n in (row.a, row.b)
        ]
        if any(e is None for e in embedders):
            return dataclasses.replace(
                v, verdict=f"{NOT_DECIDED} (the embedders' losses are not recorded in these runs)"
            )
        return gate(v, embedders)
    if row.kind in ("learns", "fits"):  # checks of the protocol: every seed half a nat below chance, or the row fails
        shown = arms_of(runs, "test", *row.names) if row.kind == "learns" else _on_training_pairs(runs, *row.names)
        ok = all(a.learned for a in shown)
        return dataclasses.replace(exact(text, pub, learning.summary(shown), ok), arms=tuple(shown))
    raise ValueError(f"unknown row kind {row.kind!r}")


ROWS = register_rows(
    CHAPTER,
    [
        Row(
            r.text,
            r.notebook,
            lambda ctx, r=r: row_verdict(r, ctx.runs),
            arms=r.names,
            published=r.published,
            kind=r.group,
            extension=r.extension,
        )
        for r in SPECS
    ],
)


def lead(rows: Sequence[Mapping]) -> str:
    """The chapter's clearest result at one profile, stated first on its landing page and in the intro, generated
    from the glued verdict rows: BM25's top-1 on the headline matcher's own test items; how far the matchers trained
    on embeddings have left chance on their test pairs (each arm's final test cross-entropy against ln K, the learning
    gate's line, in the rows about training); and, where the build has them, whether the headline's matchers fitted
    their training pairs and the positive control learned its test pairs (the protocol's check rows)."""
    bm = next((r for r in rows if r["claim"] == BM25 and r["outcome"] == HOLDS), None)
    if bm is None:
        return ""
    gated = {}
    for r in rows:
        if r.get("kind", TRAINING) != TRAINING:
            continue
        for a in r.get("arms") or []:
            on_test = not a["label"].endswith(f"({TRAINING_PAIRS})")  # not one gated on its training pairs
            if on_test and a["reference"].startswith("chance (ln") and a.get("at", "final") == "final":
                gated[a["label"]] = learning.Arm(**{k: (tuple(v) if isinstance(v, list) else v) for k, v in a.items()})
    if not gated:
        return ""
    learned = [label for label, a in gated.items() if a.learned]
    below = [d for a in gated.values() for d in a.distances if math.isfinite(d)]
    if learned:
        matchers = (
            f"{len(learned)} of the {len(gated)} matcher arms trained on embeddings have left chance on their "
            f"test pairs ({', '.join(learned)})"
        )
    else:
        matchers = (
            f"none of the {len(gated)} matcher arms trained on embeddings has left chance on its test pairs: "
            f"their final test cross-entropy is never more than {number(max(0.0, max(below)))} nats below "
            f"chance (ln K), where the learning gate needs {learning.MARGIN:g}"
        )
    text = (
        f"**This build's clearest result (`{bm['profile']}`).** BM25 on the texts alone, a baseline the write-up "
        f"does not have, finds the true story far more often than chance on the headline matcher's own test "
        f"items ({bm['ours']}), while {matchers}."
    )
    checks = {r["claim"]: r for r in rows if r["claim"] in (FITS, LEARNS)}
    if FITS in checks:
        fit = checks[FITS]
        text += (
            f" The headline's matchers {'fit' if fit['outcome'] == HOLDS else 'do not all fit'} their training "
            f"pairs ({fit['ours']})"
        )
        if LEARNS in checks:
            ctl = checks[LEARNS]
            text += (
                f", and the positive control {'learns' if ctl['outcome'] == HOLDS else 'does not learn'} a match "
                f"that is there ({ctl['ours']})"
            )
        text += "."
    return text


claim_rows.register_lead(CHAPTER, lead)

# The write-up's claims, each with the row above that tests it or the reason it is not tested (the ledger page).
claim_rows.register_ledger(CHAPTER, CLAIMS)

__all__ = [
    "ALL_CLAIMS",
    "BM25",
    "CHAPTER",
    "CLAIMS",
    "CONTROLS",
    "FITS",
    "HEADLINE",
    "LEARNS",
    "MAIN",
    "METRICS",
    "MORE_PAIRS",
    "PROTOCOL",
    "ROWS",
    "RUN_NAMES",
    "SPECS",
    "TRAINING_PAIRS",
    "WIKI",
    "Spec",
    "analysis",
    "autoencoder_table",
    "baselines",
    "best_evaluation",
    "bm25_top1",
    "chance",
    "check_exportable",
    "cosine_top1",
    "curves",
    "directions",
    "export",
    "fit_table",
    "geometry",
    "lead",
    "metric_top1",
    "norm_spread",
    "norms_table",
    "pairs_of",
    "pairs_summary",
    "pairs_table",
    "query_reach",
    "query_share",
    "rerun_estimate",
    "results",
    "row_verdict",
    "shared_share",
    "sphere_level",
]
