"""The retrieval chapter's analyses: its runs (each a matcher on another run's embeddings), the pairs it reads, the
results beside the write-up's numbers, the baselines the write-up does not have (cosine similarity on the same
embeddings, BM25 on the texts), and the chapter's verdicts.

Every number is read from a run (its summary and evaluations) or computed here from the cached embeddings and texts
the runs used, on exactly the candidate sets the runs were evaluated on.
"""

from __future__ import annotations

import functools
import math
import statistics
from pathlib import Path
from typing import Mapping, Sequence

import torch

import dataclasses

from .. import experiments, learning, ledger, models, paths, plots, recorded, stats, tables
from ..data import retrieval as rdata
from ..data.stories import load_stories
from ..errors import CheckpointError, LMCError
from ..experiments import retrieval as rexp
from ..formats import number, si
from ..train import checkpoint
from .. import claims
from ..claims import Context, Row as ClaimRow, register as register_rows
from ..verdicts import HOLDS, NOT_DECIDED, TRAINING, Verdict, arms_of, claim, exact, gate
from .retrieval_rows import BM25, FITS, LEARNS
from . import verdict_forms as vf
from .retrieval_claims import CLAIMS
from .retrieval_rows import ROWS, Row

CHAPTER = "retrieval"
MAIN = tuple(f"retrieval/{f}_d{d}_c{p}" for d in (512, 1024) for p in (32, 128) for f in ("flat", "llama"))
MORE_PAIRS = ("retrieval/flat_d512_c32_550k", "retrieval/flat_d512_c128_550k")  # the paper profile only
CONTROLS = ("retrieval/flat_d512_c32", "retrieval/untrained_d512_c32", "retrieval/untrained_d512_c128",
            "retrieval/autoencoder_d512_c32", "retrieval/llama_d1024_c32",
            "retrieval/transformer_matcher_llama_d1024_c32", "retrieval/transformer_matcher_batch_axis_llama_d1024_c32")
# The book's own arms: the positive control and the diagnosis's baseline at the write-up's initialisation and inputs
# (shown with the headline's arms), and the Wikipedia setting.
HEADLINE = ("retrieval/flat_d1024_c32", "retrieval/llama_d1024_c32")
PROTOCOL = (rexp.CONTROL, rexp.AS_ORIGINAL)
WIKI = rexp.WIKI
RUN_NAMES = tuple(dict.fromkeys(MAIN + MORE_PAIRS + CONTROLS + PROTOCOL + WIKI))
METRICS = ("cosine", "l1", "l2")  # retrieval by a distance on the embeddings themselves, no training
TRAINING_PAIRS = "training pairs"  # how a row names an arm gated on its training-pair loss


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
    kind = {"extractive": "extractive sentence (a SUBSTITUTE for the write-up's Llama-3 summaries)",
            "instruct": "TinyStoriesInstruct 'Summary:' (GPT-written, not the write-up's Llama-3 summaries)",
            "lead": "an article's first sentence (the book's own setting: the write-up has none)"}[cfg.data.queries]
    ecfg = rexp.embedder_run_config(cfg)
    corpus = "Wikipedia (both WikiExtractor files)" if cfg.data.queries == "lead" else ecfg.data.corpus
    return pd.DataFrame([{"split": s, "pairs": len(ps), "queries": kind, "corpus": corpus,
                          "query words (median)": int(statistics.median([len(p.query.split()) for p in ps])),
                          "story words (median)": int(statistics.median([len(p.story.split()) for p in ps])),
                          "embedder context (tokens)": ecfg.model.context_size} for s, ps in got.items()]
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
        rows.append({"arm": exp.title, "candidates": n_ctx - 1, "seeds": len(rs),
                     "train CE": stats.span(tables.final(rs, "train"), ".3f"),
                     "test CE": stats.span(tables.final(rs, "test"), ".3f"),
                     "test top-1": stats.span(tables.final(rs, "test_acc"), ".3f"),
                     "best test CE": stats.span([float(_best_evaluation(r)["test"]) for r in rs], ".3f"),
                     "train CE at best": stats.span([float(_best_evaluation(r)["train"]) for r in rs], ".3f"),
                     "chance CE": number(chance(n_ctx)), "chance top-1": number(1 / (n_ctx - 1)),
                     "write-up train/test (final)": _pair(exp.published, "train", "test"),
                     "write-up train/test (peak)": _pair(exp.published, "peak_train", "peak_test")})
    return pd.DataFrame(rows).set_index("arm")


def _pair(pub: Mapping, train: str, test: str) -> str:
    shown = [str(pub[k]) if k in pub else "" for k in (train, test)]
    return "/".join(shown) if any(shown) else ""


def curves(runs: Mapping[str, Sequence], names: Sequence[str]):
    """Train and test cross-entropy per query against step (mean over seeds, min-max band), one line per arm, with
    chance (a uniform guess among the candidates) as a dashed line."""
    groups = {experiments.get(n).title: runs[n] for n in names if runs.get(n)}
    n_ctx = sorted({rs[0].config.model.context_size for rs in groups.values()})
    reference = [(f"chance (ln {n - 1})", chance(n)) for n in n_ctx]  # one line per candidate count shown
    fig = plots.loss_curves(groups, splits=("train", "test"), reference=reference,
                            ylabel="cross-entropy (nats per query)")
    if not groups:  # every arm of the figure is left out at this profile (the registry's line says where they run)
        fig.text(0.5, 0.5, "no arm of this figure runs at this profile", ha="center", va="center")
    return fig


def autoencoder_table(runs: Sequence):
    """The autoencoder's final reconstruction cross-entropy (train and held-out stories), one row per seed."""
    import pandas as pd

    return pd.DataFrame([{"seed": r.seed, "steps": r.summary["steps"], "train CE": number(r.summary["final"]["train"]),
                          "held-out CE": number(r.summary["final"]["val"]), "params": f"{r.summary['params']:,}"}
                         for r in runs]).set_index("seed")


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
        raise CheckpointError(f"{path} is not the embeddings file its run recorded (missing, damaged or replaced): "
                              "delete the run folder and re-execute the notebook")
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
        scores = torch.einsum("nd,nkd->nk", torch.nn.functional.normalize(q, dim=-1),
                              torch.nn.functional.normalize(c, dim=-1))
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
    retriever.index(bm25s.tokenize([p.story for p in test], stopwords="en", return_ids=False, show_progress=False),
                    show_progress=False)
    hits = 0
    for i, row, label in zip(index.tolist(), rows[:, 1:], labels.tolist()):
        words = bm25s.tokenize([test[i].query], stopwords="en", return_ids=False, show_progress=False)[0]
        scores = torch.as_tensor(retriever.get_scores(words))  # one per test story
        hits += int(int(scores[row].argmax()) == label)  # ties (no shared word): the first candidate, a fair guess
    return hits / index.numel()


def check_exportable(name: str, what: str) -> None:
    """Stop unless experiment ``name`` is a retrieval arm (trained by the matcher's procedure)."""
    if experiments.get(name).procedure != "match":
        raise LMCError(f"{what} is not a run of a retrieval arm ({name} is trained by "
                       f"{experiments.get(name).procedure!r}): name a retrieval/... experiment or its run folder "
                       "(python -m lmcompanion list --chapter retrieval)")


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
    ours = {"run": run.path.name, "matcher_test_ce": final["test"], "matcher_test_top1": final["test_acc"],
            "cosine_top1": cosine_top1(run), "bm25_top1": bm25_top1(run), "chance_ce": chance(run.config.model.context_size),
            "norm_spread": norm_spread(run), "embeddings_sha256": run.summary["embeddings"]["sha256"]}
    arrays = {**{k: v.numpy() for k, v in emb.items()}, "test_query": index.numpy(),
              "test_candidates": rows[:, 1:].numpy(), "test_label": labels.numpy(),
              "test_query_text": np.array([p.query for p in test]), "test_story_text": np.array([p.story for p in test]),
              "ours": np.array(json.dumps(ours))}
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
            mean_norm.append(float(torch.linalg.vector_norm(
                torch.cat([emb["query_test"], emb["target_test"]]).double(), dim=-1).mean()))
        rows.append({"arm": experiments.get(name).title, "width": rs[0].config.model.n_embed,
                     "mean norm": stats.span(mean_norm, ".3g"),
                     "norm spread (sd / mean)": stats.span([norm_spread(r) for r in rs], ".3f"),
                     "Gaussian vectors of this width": number(sphere_level(rs[0]))})
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
        rows.append({"arm": experiments.get(name).title, "candidates": n_ctx - 1,
                     "matcher top-1": stats.span(tables.final(rs, "test_acc"), ".3f"),
                     **{f"{m if m == 'cosine' else m.upper()} top-1": stats.span([metric_top1(r, m) for r in rs], ".3f")
                        for m in METRICS},
                     "BM25 top-1": stats.span([bm25_top1(r) for r in rs], ".3f"),
                     "chance": number(1 / (n_ctx - 1))})
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
    return float(((ln @ unit) ** 2 / (ln ** 2).sum(-1)).mean())


def directions(x: torch.Tensor) -> float:
    """In how many directions embeddings vary: the participation ratio of the eigenvalues of their covariance,
    (sum l)^2 / sum l^2 (d when they vary alike in every direction, 1 when in one)."""
    eig = torch.linalg.eigvalsh(torch.cov(x.double().T)).clamp(min=0)
    return float(eig.sum() ** 2 / (eig ** 2).sum())


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
        rows.append({"arm": experiments.get(name).title, "width": rs[0].config.model.n_embed,
                     **{f"shared share, {what}": stats.span([shared_share(e[f"{key}_train"]) for e in embs], ".3f")
                        for what, key in (("queries", "query"), ("stories", "target"))},
                     **{f"directions, {what}": stats.span([directions(e[f"{key}_train"]) for e in embs], ".1f")
                        for what, key in (("queries", "query"), ("stories", "target"))}})
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
    return float((query ** 2).sum() / (total ** 2).sum())


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
        for label, init, whiten in (("write-up's initialisation, embeddings as they are", "default", False),
                                    ("book's initialisation, whitened embeddings", "query", True)):
            cfg = run.config
            data = dataclasses.replace(cfg.data, whiten=whiten)
            emb = _source(run)[1]
            src = rdata.RetrievalSource(emb, cfg.model.context_size, data, cfg.train, cfg.seed)
            x = src.eval_inputs("test")
            torch.manual_seed(cfg.seed)
            shares[label] = query_share(models.build(dataclasses.replace(cfg.model, init=init)), x)
        rows.append({"arm": experiments.get(name).title, "candidates": run.config.model.candidates,
                     **{f"query's share: {k}": number(v) for k, v in shares.items()},
                     "one row of n_ctx, for scale": number(1 / run.config.model.context_size)})
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
        rows.append({"arm": experiments.get(name).title, "seeds": len(rs), "steps": rs[0].summary["steps"],
                     "chance": number(level),
                     "train: nats below chance": stats.span(below["train"], ".2f"),
                     "test: nats below chance": stats.span(below["test"], ".2f"),
                     "training pairs fitted": "yes" if min(below["train"]) >= learning.MARGIN else "no",
                     "test pairs learned": "yes" if min(below["test"]) >= learning.MARGIN else "no"})
    return pd.DataFrame(rows).set_index("arm")


# --- verdicts ---------------------------------------------------------------------------------------------------


def _best_evaluation(run):
    """The evaluation of a run with its lowest test loss (the write-up's "peak")."""
    ev = run.evals()
    return ev.loc[ev["test"].idxmin()]


def _middle(run, split: str = "test") -> float:
    ev = run.evals()
    return float(ev.loc[(ev["step"] - run.summary["steps"] / 2).abs().idxmin(), split])


def _labels(row: Row) -> tuple[str, str]:
    return row.a.split("/")[-1], (row.b or row.a).split("/")[-1]


def _short(name: str) -> str:
    return name.split("/")[-1]


def _values(row: Row, runs, name: str) -> list[float]:
    if row.kind == "lower_peak":
        return [float(_best_evaluation(r)["test"]) for r in runs[name]]
    if row.kind == "lower_train_peak":
        return [float(_best_evaluation(r)["train"]) for r in runs[name]]
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


def _control(row: Row, runs) -> list[learning.Arm]:
    return arms_of(runs, "test", row.control) if row.control else []


def row_verdict(row: Row, runs: Mapping[str, Sequence]) -> Verdict:
    """The verdict of one row from its arms' runs, gated (:func:`lmcompanion.verdicts.gate`) on what it compares:
    each matcher's test cross-entropy at the compared evaluation against chance (ln K), its top-1 against twice
    chance, and for a claim that something does not learn, the row's control arm (which must learn)."""
    text, pub, labels = row.text, row.published, _labels(row)
    if row.kind in ("lower", "lower_peak", "lower_train_peak"):
        a, b = _values(row, runs, row.a), _values(row, runs, row.b)
        split = "train" if row.kind == "lower_train_peak" else "test"
        at = "final" if row.kind == "lower" else "the best test evaluation"
        return gate(claim(text, pub, a, b, labels), arms_of(runs, split, row.a, row.b,
                                                            values={row.a: a, row.b: b}, at=at))
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
        return gate(claim(text, pub, train, test, ("train", "test")), arms_of(runs, "train", row.a))
    if row.kind == "still_falling":
        end, middle = tables.final(runs[row.a], "test"), [_middle(r) for r in runs[row.a]]
        v = claim(text, pub, end, middle, ("end", "middle"))
        return gate(v, [learning.arm(_short(row.a), runs[row.a], "test", middle, "the middle evaluation")])
    if row.kind == "rises_more":
        best = {n: [float(_best_evaluation(r)["test"]) for r in runs[n]] for n in (row.a, row.b)}
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
        return dataclasses.replace(v, ours=f"BM25 top-1 {stats.span(bm, '.2f')} among {k} candidates; the "
                                           f"matcher's {stats.span(tables.final(runs[row.a], 'test_acc'), '.3f')}; "
                                           f"chance {number(1 / k)}")
    if row.kind == "off_sphere":
        spread = [norm_spread(r) for r in runs[row.a]]
        v = vf.not_below(text, pub, spread, sphere_level(runs[row.a][0]), "Gaussian vectors of this width")
        embedder = _embedder_arm(runs[row.a], f"{_short(experiments.get(row.a).build('cpu').data.embedder)} (the "
                                               "embedder)")
        if embedder is None:
            return dataclasses.replace(v, verdict=f"{NOT_DECIDED} (the embedder's loss is not recorded in these runs)")
        return gate(v, [embedder])
    if row.kind == "cosine_better":
        mixer = [1 - metric_top1(r, "cosine") for r in runs[row.a]]
        transformer = [1 - metric_top1(r, "cosine") for r in runs[row.b]]
        v = claim(text, pub, transformer, mixer, ("transformer cosine top-1 error", "mixer cosine top-1 error"))
        embedders = [_embedder_arm(runs[n], f"{experiments.get(n).build('cpu').data.embedder.split('/')[-1]} (the "
                                             "embedder)") for n in (row.a, row.b)]
        if any(e is None for e in embedders):
            return dataclasses.replace(v, verdict=f"{NOT_DECIDED} (the embedders' losses are not recorded in these "
                                                  "runs)")
        return gate(v, embedders)
    if row.kind in ("learns", "fits"):  # checks of the protocol: every seed half a nat below chance, or the row fails
        split = "test" if row.kind == "learns" else "train"
        shown = [a if split == "test" else dataclasses.replace(a, label=f"{a.label} ({TRAINING_PAIRS})")
                 for a in arms_of(runs, split, *row.names)]
        ok = all(a.learned for a in shown)
        return dataclasses.replace(exact(text, pub, learning.summary(shown), ok), arms=tuple(shown))
    raise ValueError(f"unknown row kind {row.kind!r}")


ROWS_DECLARED = register_rows(CHAPTER, [
    ClaimRow(r.text, r.notebook, lambda ctx, r=r: row_verdict(r, ctx.runs), arms=r.names, published=r.published,
             kind=r.group, extension=r.extension)
    for r in ROWS])


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
            if a["reference"].startswith("chance (ln") and a.get("at", "final") == "final":
                gated[a["label"]] = learning.Arm(**{k: (tuple(v) if isinstance(v, list) else v) for k, v in a.items()})
    if not gated:
        return ""
    learned = [label for label, a in gated.items() if a.learned]
    below = [d for a in gated.values() for d in a.distances if math.isfinite(d)]
    if learned:
        matchers = (f"{len(learned)} of the {len(gated)} matcher arms trained on embeddings have left chance on their "
                    f"test pairs ({', '.join(learned)})")
    else:
        matchers = (f"none of the {len(gated)} matcher arms trained on embeddings has left chance on its test pairs: "
                    f"their final test cross-entropy is never more than {number(max(0.0, max(below)))} nats below "
                    f"chance (ln K), where the learning gate needs {learning.MARGIN:g}")
    text = (f"**This build's clearest result (`{bm['profile']}`).** BM25 on the texts alone, a baseline the write-up "
            f"does not have, finds the true story far more often than chance on the headline matcher's own test "
            f"items ({bm['ours']}), while {matchers}.")
    checks = {r["claim"]: r for r in rows if r["claim"] in (FITS, LEARNS)}
    if FITS in checks:
        fit = checks[FITS]
        text += (f" The headline's matchers {'fit' if fit['outcome'] == HOLDS else 'do not all fit'} their training "
                 f"pairs ({fit['ours']})")
        if LEARNS in checks:
            ctl = checks[LEARNS]
            text += (f", and the positive control {'learns' if ctl['outcome'] == HOLDS else 'does not learn'} a match "
                     f"that is there ({ctl['ours']})")
        text += "."
    return text


claims.register_lead(CHAPTER, lead)


def verdict_rows(runs: Mapping[str, Sequence], profile: str | None = None) -> list[Verdict]:
    """The write-up's retrieval claims in its order, each from the runs that test it (:mod:`lmcompanion.claims`). With
    ``profile``, a claim whose arms that profile does not run is listed as not decided; otherwise rows whose runs are
    missing (a recorded profile may cover some arms only) are left out."""
    return claims.verdicts(CHAPTER, Context(runs, profile))


# The write-up's claims, each with the row above that tests it or the reason it is not tested (the ledger page).
ledger.register(CHAPTER, CLAIMS)


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
        row = rows.setdefault(run.name, {"experiment": run.name, "steps": f"{cfg.train.max_steps:,}",
                                         "FLOPs/run": si(cfg.flops(), "FLOP"), "runs": 0, "minutes": 0.0})
        row["runs"] += 1
        row["minutes"] += run.minutes()
    total = sum(r["minutes"] for r in rows.values()) / 60
    df = pd.DataFrame([{**{k: v for k, v in r.items() if k != "minutes"},
                        "estimated hours/run (H100)": number(r["minutes"] / r["runs"] / 60),
                        "estimated hours, all runs": number(r["minutes"] / 60)} for r in rows.values()])
    return df.set_index("experiment"), total


__all__ = ["CHAPTER", "CLAIMS", "CONTROLS", "MAIN", "METRICS", "MORE_PAIRS", "ROWS", "RUN_NAMES", "autoencoder_table",
           "baselines", "bm25_top1", "chance", "check_exportable", "cosine_top1", "curves", "export", "lead",
           "metric_top1", "norm_spread", "norms_table", "pairs_summary", "pairs_table", "rerun_estimate", "results",
           "row_verdict", "sphere_level", "verdict_rows"]
