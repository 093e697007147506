"""The retrieval chapter's analyses: its runs (each a matcher on another run's embeddings), the pairs it reads, the
results beside the write-up's numbers, the baselines the write-up does not have (cosine similarity on the same
embeddings, BM25 on the texts), the diagnosis of why the matchers did not learn, and the paper profile's cost.

Every number is read from a run (its summary and evaluations) or computed here from the cached embeddings and texts
the runs used, on exactly the candidate sets the runs were evaluated on. The verdicts built from them are the
chapter module's (its ``__init__``).
"""

from __future__ import annotations

import dataclasses
import functools
import math
import statistics
from pathlib import Path
from typing import Mapping, Sequence

import torch

from ... import experiments, learning, models, paths, plots, recorded, stats, tables
from ...data import retrieval as rdata
from ...data.stories import load_stories
from ...errors import CheckpointError, LMCError
from ...experiments import retrieval as rexp
from ...formats import number, si
from ...train import checkpoint
from .rows import METRICS, RUN_NAMES


def chance(n_ctx: int) -> float:
    """The cross-entropy of a uniform guess among n_ctx - 1 candidates."""
    return math.log(n_ctx - 1)


# --- the pairs --------------------------------------------------------------------------------------------------


def pairs_of(cfg) -> dict[str, list[rdata.Pair]]:
    """The pairs a run's config reads (the embedder's training stories under the query rule)."""
    ecfg = rexp.embedder_run_config(cfg)
    return _pairs(cfg.data, ecfg.data)


@functools.lru_cache(maxsize=16)
def _pairs(data, embedder_data) -> dict[str, list[rdata.Pair]]:
    stories = load_stories(embedder_data)["train"] if data.queries == "extractive" else []
    return rdata.pairs(data, stories)


def pairs_table(cfg, n: int = 3):
    """A few test pairs: the query, the start of the story it is matched with."""
    import pandas as pd

    got = pairs_of(cfg)
    rows = [{"query": p.query, "story (start)": p.story[:160].replace("\n", " ") + " ..."} for p in got["test"][:n]]
    return pd.DataFrame(rows)


def pairs_summary(cfg):
    """How many pairs, where the queries come from, and how long queries and stories are (words)."""
    import pandas as pd

    got = pairs_of(cfg)
    kind = {
        "extractive": "extractive sentence (a SUBSTITUTE for the write-up's Llama-3 summaries)",
        "instruct": "TinyStoriesInstruct 'Summary:' (GPT-written, not the write-up's Llama-3 summaries)",
        "lead": "an article's first sentence (the book's own setting: the write-up has none)",
    }[cfg.data.queries]
    ecfg = rexp.embedder_run_config(cfg)
    corpus = ecfg.data.corpus
    if cfg.data.queries == "lead":
        files = rdata.wiki_files(cfg.data.n_pairs)
        corpus = (
            "Wikipedia (" + ("both WikiExtractor files" if len(files) > 1 else "the first WikiExtractor file") + ")"
        )
    return pd.DataFrame(
        [
            {
                "split": s,
                "pairs": len(ps),
                "queries": kind,
                "corpus": corpus,
                "query words (median)": int(statistics.median([len(p.query.split()) for p in ps])),
                "story words (median)": int(statistics.median([len(p.story.split()) for p in ps])),
                "embedder context (tokens)": ecfg.model.context_size,
            }
            for s, ps in got.items()
        ]
    ).set_index("split")


# --- results ----------------------------------------------------------------------------------------------------


def results(runs: Mapping[str, Sequence], names: Sequence[str] | None = None):
    """One row per arm: candidates, final train and test cross-entropy and test top-1 accuracy, the best test
    cross-entropy and the train cross-entropy at that evaluation (the write-up's "peak"), each 'mean [min, max]' over
    seeds; chance; and the write-up's numbers where it has them, final and peak as it says which."""
    import pandas as pd

    rows = []
    for name in names or list(runs):
        rs = runs.get(name)
        if not rs:
            continue
        exp = experiments.get(name)
        n_ctx = rs[0].config.model.context_size
        rows.append(
            {
                "arm": exp.title,
                "candidates": n_ctx - 1,
                "seeds": len(rs),
                "train CE": stats.span(tables.final(rs, "train"), ".3f"),
                "test CE": stats.span(tables.final(rs, "test"), ".3f"),
                "test top-1": stats.span(tables.final(rs, "test_acc"), ".3f"),
                "best test CE": stats.span([float(best_evaluation(r)["test"]) for r in rs], ".3f"),
                "train CE at best": stats.span([float(best_evaluation(r)["train"]) for r in rs], ".3f"),
                "chance CE": number(chance(n_ctx)),
                "chance top-1": number(1 / (n_ctx - 1)),
                "write-up train/test (final)": _pair(exp.published, "train", "test"),
                "write-up train/test (peak)": _pair(exp.published, "peak_train", "peak_test"),
            }
        )
    return pd.DataFrame(rows).set_index("arm")


def _pair(pub: Mapping, train: str, test: str) -> str:
    shown = [str(pub[k]) if k in pub else "" for k in (train, test)]
    return "/".join(shown) if any(shown) else ""


def best_evaluation(run):
    """The evaluation of a run with its lowest test loss (the write-up's "peak")."""
    ev = run.evals()
    return ev.loc[ev["test"].idxmin()]


def curves(runs: Mapping[str, Sequence], names: Sequence[str]):
    """Train and test cross-entropy per query against step (mean over seeds, min-max band), one line per arm, with
    chance (a uniform guess among the candidates) as a dashed line."""
    groups = {experiments.get(n).title: runs[n] for n in names if runs.get(n)}
    n_ctx = sorted({rs[0].config.model.context_size for rs in groups.values()})
    reference = [(f"chance (ln {n - 1})", chance(n)) for n in n_ctx]  # one line per candidate count shown
    fig = plots.loss_curves(
        groups, splits=("train", "test"), reference=reference, ylabel="cross-entropy (nats per query)"
    )
    if not groups:  # every arm of the figure is left out at this profile (the registry's line says where they run)
        fig.text(0.5, 0.5, "no arm of this figure runs at this profile", ha="center", va="center")
    return fig


def autoencoder_table(runs: Sequence):
    """The autoencoder's final reconstruction cross-entropy (train and held-out stories), one row per seed."""
    import pandas as pd

    return pd.DataFrame(
        [
            {
                "seed": r.seed,
                "steps": r.summary["steps"],
                "train CE": number(r.summary["final"]["train"]),
                "held-out CE": number(r.summary["final"]["val"]),
                "params": f"{r.summary['params']:,}",
            }
            for r in runs
        ]
    ).set_index("seed")


# --- baselines --------------------------------------------------------------------------------------------------


def _source(run):
    """The run's evaluation items, rebuilt from the embeddings it recorded (checked against their SHA-256)."""
    cfg = run.config
    run.require_files("embeddings")
    rec = run.summary["embeddings"]
    emb = _load_embeddings(rec["file"], rec["sha256"])
    return rdata.RetrievalSource(emb, cfg.model.context_size, cfg.data, cfg.train, cfg.seed), emb


@functools.lru_cache(maxsize=8)
def _load_embeddings(path: str, sha256: str) -> dict[str, torch.Tensor]:
    if checkpoint.file_sha256(Path(path)) != sha256:
        raise CheckpointError(
            f"{path} is not the embeddings file its run recorded (missing, damaged or replaced): "
            "delete the run folder and re-execute the notebook"
        )
    return torch.load(path, map_location="cpu", weights_only=True)


def _a_matcher(cfg) -> bool:
    """A retrieval arm's run (the matcher's procedure): its rows read its recorded embeddings, which a GPU slot
    measures before they stay behind (:func:`lmcompanion.recorded.measure`)."""
    return experiments.get(cfg.name).procedure == "match"


def _a_matcher_of_texts(cfg) -> bool:
    """A retrieval arm's run whose embeddings are of texts (not the positive control's synthetic ones)."""
    return _a_matcher(cfg) and cfg.data.embedding != "noisy_copy"


@recorded.measure("retrieval/metric_top1", applies=_a_matcher, args=tuple((m,) for m in METRICS))
def metric_top1(run, metric: str = "cosine") -> float:
    """Top-1 accuracy of retrieval by a metric on the same embeddings, no training, on the run's own test items:
    ``"cosine"`` similarity (the write-up's "normalized cosine distance on the last hidden layer"), or the smallest
    ``"l1"`` or ``"l2"`` distance ("$L^1$ or $L^2$ distance on the vectorized output layer")."""
    src, emb = _source(run)
    index, rows, labels = src.eval_draws("test")
    q, c = emb["query_test"][index], emb["target_test"][rows[:, 1:]]  # (n, d), (n, k, d)
    if metric == "cosine":
        scores = torch.einsum(
            "nd,nkd->nk", torch.nn.functional.normalize(q, dim=-1), torch.nn.functional.normalize(c, dim=-1)
        )
    elif metric in ("l1", "l2"):
        scores = -torch.linalg.vector_norm(c - q[:, None], ord=1 if metric == "l1" else 2, dim=-1)
    else:
        raise ValueError(f"unknown metric {metric!r}: cosine, l1 or l2")
    return float((scores.argmax(-1) == labels).float().mean())


def cosine_top1(run) -> float:
    """Top-1 accuracy of cosine similarity on the run's own test items (:func:`metric_top1`)."""
    return metric_top1(run, "cosine")


@recorded.measure("retrieval/bm25_top1", applies=_a_matcher_of_texts)
def bm25_top1(run) -> float:
    """Top-1 accuracy of BM25 (the ``bm25s`` library, its default Lucene variant, k1 = 1.5, b = 0.75, English stop
    words) ranking the candidates' texts for the query's text, on the run's own test items."""
    import bm25s

    src, _ = _source(run)
    index, rows, labels = src.eval_draws("test")
    test = pairs_of(run.config)["test"]
    retriever = bm25s.BM25()
    retriever.index(
        bm25s.tokenize([p.story for p in test], stopwords="en", return_ids=False, show_progress=False),
        show_progress=False,
    )
    hits = 0
    for i, row, label in zip(index.tolist(), rows[:, 1:], labels.tolist()):
        words = bm25s.tokenize([test[i].query], stopwords="en", return_ids=False, show_progress=False)[0]
        scores = torch.as_tensor(retriever.get_scores(words))  # one per test story
        hits += int(int(scores[row].argmax()) == label)  # ties (no shared word): the first candidate, a fair guess
    return hits / index.numel()


def check_exportable(name: str, what: str) -> None:
    """Stop unless experiment ``name`` is a retrieval arm (trained by the matcher's procedure)."""
    if experiments.get(name).procedure != "match":
        raise LMCError(
            f"{what} is not a run of a retrieval arm ({name} is trained by "
            f"{experiments.get(name).procedure!r}): name a retrieval/... experiment or its run folder "
            "(python -m lmcompanion list --chapter retrieval)"
        )


def export(run, path: Path | str) -> Path:
    """Write everything an independent script needs to re-derive a retrieval run's test numbers, as one ``.npz``
    (numpy only, no pickles): the four embedding matrices of the run (``query_train``, ``target_train``,
    ``query_test``, ``target_test``: row i is pair i of its split), the run's fixed test items (``test_query``: the
    pair whose query asks, ``test_candidates``: row ids into ``target_test``, the true story among them at
    ``test_label``), the test pairs' texts (``test_query_text``, ``test_story_text``), and our numbers on those
    items (``ours``: a JSON string of the matcher's final test cross-entropy and top-1, cosine and BM25 top-1, and the
    spread of the test embeddings' norms, :func:`norm_spread`)."""
    import json

    import numpy as np

    src, emb = _source(run)
    index, rows, labels = src.eval_draws("test")
    test = pairs_of(run.config)["test"]
    final = run.summary["final"]
    ours = {
        "run": run.path.name,
        "matcher_test_ce": final["test"],
        "matcher_test_top1": final["test_acc"],
        "cosine_top1": cosine_top1(run),
        "bm25_top1": bm25_top1(run),
        "chance_ce": chance(run.config.model.context_size),
        "norm_spread": norm_spread(run),
        "embeddings_sha256": run.summary["embeddings"]["sha256"],
    }
    arrays = {
        **{k: v.numpy() for k, v in emb.items()},
        "test_query": index.numpy(),
        "test_candidates": rows[:, 1:].numpy(),
        "test_label": labels.numpy(),
        "test_query_text": np.array([p.query for p in test]),
        "test_story_text": np.array([p.story for p in test]),
        "ours": np.array(json.dumps(ours)),
    }
    path = Path(path)
    paths.atomic_write(path, lambda f: np.savez(f, **arrays))  # whole or not at all: a reader never sees part of it
    return path


@recorded.measure("retrieval/norm_spread", applies=_a_matcher)
def norm_spread(run) -> float:
    """How far a run's embeddings are from a sphere: the (sample) standard deviation of their L2 norms over their mean
    (0 on a sphere), over the test split's queries and stories, the embeddings the run recorded (and :func:`export`
    writes)."""
    _, emb = _source(run)
    norms = torch.linalg.vector_norm(torch.cat([emb["query_test"], emb["target_test"]]).double(), dim=-1)
    return float(norms.std() / norms.mean())


def sphere_level(run) -> float:
    """The norm spread of isotropic Gaussian vectors of the run's embedding width d, 1/sqrt(2d) (the relative
    standard deviation of a chi variable with d degrees of freedom, to first order): random vectors of that width
    lie this close to a sphere (concentration of measure)."""
    return 1 / math.sqrt(2 * run.config.model.n_embed)


def norms_table(runs: Mapping[str, Sequence], names: Sequence[str]):
    """Per arm: the embeddings' width, their mean L2 norm and the spread of the norms (standard deviation over mean,
    'mean [min, max]' over seeds), beside the spread of isotropic Gaussian vectors of the same width."""
    import pandas as pd

    rows = []
    for name in names:
        rs = runs.get(name) or []
        if not rs:
            continue
        mean_norm = []
        for r in rs:
            _, emb = _source(r)
            mean_norm.append(
                float(
                    torch.linalg.vector_norm(torch.cat([emb["query_test"], emb["target_test"]]).double(), dim=-1).mean()
                )
            )
        rows.append(
            {
                "arm": experiments.get(name).title,
                "width": rs[0].config.model.n_embed,
                "mean norm": stats.span(mean_norm, ".3g"),
                "norm spread (sd / mean)": stats.span([norm_spread(r) for r in rs], ".3f"),
                "Gaussian vectors of this width": number(sphere_level(rs[0])),
            }
        )
    return pd.DataFrame(rows).set_index("arm")


def baselines(runs: Mapping[str, Sequence], names: Sequence[str]):
    """Per arm: the trained matcher's test top-1 beside cosine similarity and L1 and L2 distance on the same
    embeddings, and BM25 on the same candidates (each 'mean [min, max]' over seeds; BM25 depends on the texts only,
    so it varies only with the candidates drawn), and chance."""
    import pandas as pd

    rows = []
    for name in names:
        rs = runs.get(name) or []
        if not rs:
            continue
        n_ctx = rs[0].config.model.context_size
        rows.append(
            {
                "arm": experiments.get(name).title,
                "candidates": n_ctx - 1,
                "matcher top-1": stats.span(tables.final(rs, "test_acc"), ".3f"),
                **{
                    f"{m if m == 'cosine' else m.upper()} top-1": stats.span([metric_top1(r, m) for r in rs], ".3f")
                    for m in METRICS
                },
                "BM25 top-1": stats.span([bm25_top1(r) for r in rs], ".3f"),
                "chance": number(1 / (n_ctx - 1)),
            }
        )
    return pd.DataFrame(rows).set_index("arm")


# --- why the matchers did not learn: the diagnosis ---------------------------------------------------------------


def _layer_norm(x: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.layer_norm(x.double(), x.shape[-1:])


def shared_share(x: torch.Tensor) -> float:
    """How much of a LayerNorm-ed embedding is the vector all of them share: the mean over rows of the squared
    projection of LN(x) on the direction of the mean of LN(x), over the squared norm of LN(x) (1: every row is the
    same vector; about 1/d for d features when no direction is common)."""
    ln = _layer_norm(x)
    unit = torch.nn.functional.normalize(ln.mean(0), dim=0)
    return float(((ln @ unit) ** 2 / (ln**2).sum(-1)).mean())


def directions(x: torch.Tensor) -> float:
    """In how many directions embeddings vary: the participation ratio of the eigenvalues of their covariance,
    (sum l)^2 / sum l^2 (d when they vary alike in every direction, 1 when in one)."""
    eig = torch.linalg.eigvalsh(torch.cov(x.double().T)).clamp(min=0)
    return float(eig.sum() ** 2 / (eig**2).sum())


def geometry(runs: Mapping[str, Sequence], names: Sequence[str]):
    """Per arm, from the training embeddings its runs recorded (as the embedder made them): how much of a
    LayerNorm-ed query, and story, is the vector every query (story) shares (:func:`shared_share`), and in how many
    directions the queries and the stories vary (:func:`directions`), each 'mean [min, max]' over seeds, beside the
    embedding width."""
    import pandas as pd

    rows = []
    for name in names:
        rs = runs.get(name) or []
        if not rs:
            continue
        embs = [_source(r)[1] for r in rs]
        rows.append(
            {
                "arm": experiments.get(name).title,
                "width": rs[0].config.model.n_embed,
                **{
                    f"shared share, {what}": stats.span([shared_share(e[f"{key}_train"]) for e in embs], ".3f")
                    for what, key in (("queries", "query"), ("stories", "target"))
                },
                **{
                    f"directions, {what}": stats.span([directions(e[f"{key}_train"]) for e in embs], ".1f")
                    for what, key in (("queries", "query"), ("stories", "target"))
                },
            }
        )
    return pd.DataFrame(rows).set_index("arm")


def query_share(model, x: torch.Tensor) -> float:
    """Of what varies from item to item in the first block's token-mixing output at the candidate rows, the share
    that is the query's: ``W[j, 0] (LN(q) - its mean)`` against ``sum_t W[j, t] (LN(x_t) - its mean)``, squared
    norms summed over items and candidate rows (means over the items). ``model``: a mixer matcher; ``x``: items
    (B, n_ctx, d) as it reads them."""
    block = model.blocks[0]
    with torch.no_grad():
        ln = block.seq_layernorm(x)  # (B, n_ctx, d)
        ln = ln - ln.mean(0, keepdim=True)  # what varies from item to item
        w = block.conv.weight[..., 0]  # (n_ctx out, n_ctx in)
        total = torch.einsum("jt,btd->bjd", w, ln)[:, 1:]  # (B, n_ctx - 1, d): at the candidate rows
        query = w[1:, 0, None, None].transpose(0, 1) * ln[:, :1]  # (B, n_ctx - 1, d)
    return float((query**2).sum() / (total**2).sum())


def query_reach(runs: Mapping[str, Sequence], names: Sequence[str]):
    """What reaches a candidate row at the start of training, per arm (its first seed's run, on its fixed test
    items): the query's share of what varies in the first block's token-mixing output at the candidate rows
    (:func:`query_share`) for a matcher with the write-up's initialisation on the embeddings as they are, and with
    the book's (the first block's query column at 1) on whitened ones, each initialised from the run's seed."""
    import pandas as pd

    rows = []
    for name in names:
        rs = runs.get(name) or []
        if not rs or rs[0].config.model.kind != "mixer":
            continue
        run, shares = rs[0], {}
        for label, init, whiten in (
            ("write-up's initialisation, embeddings as they are", "default", False),
            ("book's initialisation, whitened embeddings", "query", True),
        ):
            cfg = run.config
            data = dataclasses.replace(cfg.data, whiten=whiten)
            emb = _source(run)[1]
            src = rdata.RetrievalSource(emb, cfg.model.context_size, data, cfg.train, cfg.seed)
            x = src.eval_inputs("test")
            torch.manual_seed(cfg.seed)
            shares[label] = query_share(models.build(dataclasses.replace(cfg.model, init=init)), x)
        rows.append(
            {
                "arm": experiments.get(name).title,
                "candidates": run.config.model.candidates,
                **{f"query's share: {k}": number(v) for k, v in shares.items()},
                "one row of n_ctx, for scale": number(1 / run.config.model.context_size),
            }
        )
    return pd.DataFrame(rows).set_index("arm")


def fit_table(runs: Mapping[str, Sequence], names: Sequence[str]):
    """Per arm: the final training-pair and test cross-entropy against chance, in nats below it ('mean [min, max]'
    over seeds; negative: above chance), and whether every seed fitted its training pairs and learned its test pairs
    by the learning gate's half nat."""
    import pandas as pd

    rows = []
    for name in names:
        rs = runs.get(name) or []
        if not rs:
            continue
        level = chance(rs[0].config.model.context_size)
        below = {split: [level - v for v in tables.final(rs, split)] for split in ("train", "test")}
        rows.append(
            {
                "arm": experiments.get(name).title,
                "seeds": len(rs),
                "steps": rs[0].summary["steps"],
                "chance": number(level),
                "train: nats below chance": stats.span(below["train"], ".2f"),
                "test: nats below chance": stats.span(below["test"], ".2f"),
                "training pairs fitted": "yes" if min(below["train"]) >= learning.MARGIN else "no",
                "test pairs learned": "yes" if min(below["test"]) >= learning.MARGIN else "no",
            }
        )
    return pd.DataFrame(rows).set_index("arm")


# --- the cost of the paper profile -----------------------------------------------------------------------------


def rerun_estimate(profile: str = "paper", names: Sequence[str] = RUN_NAMES):
    """Estimated time of the matcher runs planned at ``profile`` (:func:`lmcompanion.experiments.plan`, each
    experiment's seeds) on one H100, by the book's one estimate from counted FLOPs (:mod:`lmcompanion.estimate`); the
    embedder CLMs are the mixer chapter's runs and are not included. Not a measurement. Returns the table and the
    total in hours."""
    import pandas as pd

    rows: dict[str, dict] = {}
    for run in experiments.plan(list(names), profile, device="cpu", needs=False):
        cfg = run.config
        row = rows.setdefault(
            run.name,
            {
                "experiment": run.name,
                "steps": f"{cfg.train.max_steps:,}",
                "FLOPs/run": si(cfg.flops(), "FLOP"),
                "runs": 0,
                "minutes": 0.0,
            },
        )
        row["runs"] += 1
        row["minutes"] += run.minutes()
    total = sum(r["minutes"] for r in rows.values()) / 60
    df = pd.DataFrame(
        [
            {
                **{k: v for k, v in r.items() if k != "minutes"},
                "estimated hours/run (H100)": number(r["minutes"] / r["runs"] / 60),
                "estimated hours, all runs": number(r["minutes"] / 60),
            }
            for r in rows.values()
        ]
    )
    return df.set_index("experiment"), total


__all__ = [
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
    "shared_share",
    "sphere_level",
]
