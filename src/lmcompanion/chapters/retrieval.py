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

from .. import experiments, plots, stats, tables
from ..data import retrieval as rdata
from ..data.stories import load_stories
from ..errors import CheckpointError, LMCError
from ..experiments import retrieval as rexp
from ..train import checkpoint
from ..verdicts import Verdict, claim, have, if_learned, in_notebook, published_pair

CHAPTER = "retrieval"
MAIN = tuple(f"retrieval/{f}_d{d}_c{p}" for d in (512, 1024) for p in (32, 128) for f in ("flat", "llama"))
CONTROLS = ("retrieval/flat_d1024_c32", "retrieval/untrained_d1024_c32", "retrieval/autoencoder_d1024_c32",
            "retrieval/transformer_matcher_d1024_c32", "retrieval/transformer_matcher_batch_axis_d1024_c32")
RUN_NAMES = MAIN + CONTROLS[1:]


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
    kind = ("extractive sentence (a SUBSTITUTE for the write-up's Llama-3 summaries)" if cfg.data.substitute
            else "TinyStoriesInstruct 'Summary:' (GPT-written, not the write-up's Llama-3 summaries)")
    ecfg = rexp.embedder_run_config(cfg)
    return pd.DataFrame([{"split": s, "pairs": len(ps), "queries": kind, "corpus": ecfg.data.corpus,
                          "query words (median)": int(statistics.median([len(p.query.split()) for p in ps])),
                          "story words (median)": int(statistics.median([len(p.story.split()) for p in ps])),
                          "embedder context (tokens)": ecfg.model.context_size} for s, ps in got.items()]
                        ).set_index("split")


# --- results ----------------------------------------------------------------------------------------------------


def results(runs: Mapping[str, Sequence], names: Sequence[str] | None = None):
    """One row per arm: candidates, final train and test cross-entropy and test top-1 accuracy ('mean [min, max]'
    over seeds), chance, and the write-up's train/test numbers where it has them."""
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
                     "chance CE": f"{chance(n_ctx):.3f}", "chance top-1": f"{1 / (n_ctx - 1):.3f}",
                     "write-up train CE": exp.published.get("train", ""),
                     "write-up test CE": exp.published.get("test", "")})
    return pd.DataFrame(rows).set_index("arm")


def curves(runs: Mapping[str, Sequence], names: Sequence[str]):
    """Train and test cross-entropy against step (mean over seeds, min-max band), one line per arm."""
    groups = {experiments.get(n).title: runs[n] for n in names if runs.get(n)}
    return plots.loss_curves(groups, splits=("train", "test"))


def autoencoder_table(runs: Sequence):
    """The autoencoder's final reconstruction cross-entropy (train and held-out stories), one row per seed."""
    import pandas as pd

    return pd.DataFrame([{"seed": r.seed, "steps": r.summary["steps"], "train CE": f"{r.summary['final']['train']:.3f}",
                          "held-out CE": f"{r.summary['final']['val']:.3f}", "params": f"{r.summary['params']:,}"}
                         for r in runs]).set_index("seed")


# --- baselines --------------------------------------------------------------------------------------------------


def _source(run):
    """The run's evaluation items, rebuilt from the embeddings it recorded (checked against their SHA-256)."""
    cfg = run.config
    rec = run.summary["embeddings"]
    emb = _load_embeddings(rec["file"], rec["sha256"])
    return rdata.RetrievalSource(emb, cfg.model.context_size, cfg.data, cfg.train, cfg.seed), emb


@functools.lru_cache(maxsize=8)
def _load_embeddings(path: str, sha256: str) -> dict[str, torch.Tensor]:
    if checkpoint.file_sha256(Path(path)) != sha256:
        raise CheckpointError(f"{path} is not the embeddings file its run recorded (missing, damaged or replaced): "
                              "delete the run folder and re-execute the notebook")
    return torch.load(path, map_location="cpu", weights_only=True)


def cosine_top1(run) -> float:
    """Top-1 accuracy of cosine similarity (query against each candidate, the same embeddings, no training) on the
    run's own test items."""
    src, emb = _source(run)
    index, rows, labels = src.eval_draws("test")
    q = torch.nn.functional.normalize(emb["query_test"][index], dim=-1)
    c = torch.nn.functional.normalize(emb["target_test"][rows[:, 1:]], dim=-1)
    scores = torch.einsum("nd,nkd->nk", q, c)
    return float((scores.argmax(-1) == labels).float().mean())


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
    items (``ours``: a JSON string of the matcher's final test cross-entropy and top-1, and cosine and BM25 top-1)."""
    import json

    import numpy as np

    src, emb = _source(run)
    index, rows, labels = src.eval_draws("test")
    test = pairs_of(run.config)["test"]
    final = run.summary["final"]
    ours = {"run": run.path.name, "matcher_test_ce": final["test"], "matcher_test_top1": final["test_acc"],
            "cosine_top1": cosine_top1(run), "bm25_top1": bm25_top1(run), "chance_ce": chance(run.config.model.context_size),
            "embeddings_sha256": run.summary["embeddings"]["sha256"]}
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez(path, **{k: v.numpy() for k, v in emb.items()}, test_query=index.numpy(),
             test_candidates=rows[:, 1:].numpy(), test_label=labels.numpy(),
             test_query_text=np.array([p.query for p in test]), test_story_text=np.array([p.story for p in test]),
             ours=np.array(json.dumps(ours)))
    return path


def baselines(runs: Mapping[str, Sequence], names: Sequence[str]):
    """Per arm: the trained matcher's test top-1 beside cosine similarity on the same embeddings and BM25 on the same
    candidates (each 'mean [min, max]' over seeds; BM25 depends on the texts only, so it varies only with the
    candidates drawn), and chance."""
    import pandas as pd

    rows = []
    for name in names:
        rs = runs.get(name) or []
        if not rs:
            continue
        n_ctx = rs[0].config.model.context_size
        rows.append({"arm": experiments.get(name).title, "candidates": n_ctx - 1,
                     "matcher top-1": stats.span(tables.final(rs, "test_acc"), ".3f"),
                     "cosine top-1": stats.span([cosine_top1(r) for r in rs], ".3f"),
                     "BM25 top-1": stats.span([bm25_top1(r) for r in rs], ".3f"),
                     "chance": f"{1 / (n_ctx - 1):.3f}"})
    return pd.DataFrame(rows).set_index("arm")


# --- verdicts ---------------------------------------------------------------------------------------------------


def _lower(text: str, published: str, better: str, worse: str, runs) -> Verdict:
    """The claim "``better``'s matcher ends at a lower test loss than ``worse``'s", decided only where one of them
    learns beyond chance (:func:`lmcompanion.verdicts.if_learned`; both arms have the same candidate count)."""
    labels = (better.split("/")[-1], worse.split("/")[-1])
    b, w = tables.final(runs[better], "test"), tables.final(runs[worse], "test")
    pub = published or published_pair(better, worse, "test")
    return if_learned(claim(text, pub, b, w, labels), chance(runs[better][0].config.model.context_size), b, w)


def verdict_rows(runs: Mapping[str, Sequence]) -> list[Verdict]:
    """The write-up's retrieval claims, each from the runs that test it (rows whose runs are missing are left out)."""
    rows = []
    for d in (1024, 512):
        for p in (32, 128):
            mixer, llama = f"retrieval/flat_d{d}_c{p}", f"retrieval/llama_d{d}_c{p}"
            if not have(runs, mixer, llama):
                continue
            text = (f"Mixer embeddings (d_model={d}) train the matcher to a lower test loss than transformer "
                    f"embeddings with {p - 1} candidates")
            rows.append(_lower(text, "" if d == 1024 else "the transformer's embeddings 'hardly train at all' "
                                                          "(no numbers)", mixer, llama, runs))
    base = "retrieval/flat_d1024_c32"
    for control, text, published in (
            ("retrieval/untrained_d1024_c32", "A trained mixer's embeddings beat an untrained mixer's (31 candidates)",
             "untrained mixers give 'poor' embeddings (no numbers)"),
            ("retrieval/autoencoder_d1024_c32", "A CLM-trained mixer's embeddings beat a mixer autoencoder's "
                                                "(31 candidates)", "autoencoder embeddings are 'poor' (no numbers)"),
            ("retrieval/transformer_matcher_d1024_c32", "A bidirectional mixer matches better than a bidirectional "
                                                        "transformer (31 candidates, the same embeddings)",
             "the transformer matcher learns 'practically nothing' (no numbers)"),
            ("retrieval/transformer_matcher_batch_axis_d1024_c32", "A bidirectional mixer matches better than the "
                                                                  "original's transformer matcher (attention across "
                                                                  "the batch axis; 31 candidates)",
             "the transformer matcher learns 'practically nothing' (no numbers)")):
        if have(runs, base, control):
            rows.append(_lower(text, published, base, control, runs))
    return in_notebook(rows, "retrieval/04_verdicts")




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
                                         "PFLOP/run": f"{cfg.flops() / 1e15:,.2f}", "runs": 0, "minutes": 0.0})
        row["runs"] += 1
        row["minutes"] += run.minutes()
    total = sum(r["minutes"] for r in rows.values()) / 60
    df = pd.DataFrame([{**{k: v for k, v in r.items() if k != "minutes"},
                        "estimated hours/run (H100)": f"{r['minutes'] / r['runs'] / 60:.1f}",
                        "estimated hours, all runs": f"{r['minutes'] / 60:.1f}"} for r in rows.values()])
    return df.set_index("experiment"), total


__all__ = ["CHAPTER", "CONTROLS", "MAIN", "RUN_NAMES", "check_exportable", "export", "autoencoder_table", "baselines", "bm25_top1", "chance", "cosine_top1",
           "curves", "pairs_summary", "pairs_table", "rerun_estimate", "results", "verdict_rows"]
