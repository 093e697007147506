"""The retrieval procedure (``match``): embed a run's summary-story pairs with another run, then train the matcher on
the matching items with the shared trainer. Its own module, apart from the retrieval experiments' registrations
(:mod:`lmcompanion.experiments.retrieval`), because a run's key covers the code of the modules its procedure executes
(:mod:`lmcompanion.fingerprint`): the arms' titles, the published numbers, the headline's reasons and other prose of
the registrations are not executed by a run, and editing them should not retrain every matcher of the store.

**The procedure** (:func:`match`, a run-store procedure): (1) the embedder's run at this run's profile, seed and
device is reused from the store or trained (the untrained control only builds its initial weights); (2) the pairs'
texts are embedded by it (:func:`lmcompanion.models.matcher.embed`; the positive control's synthetic embeddings,
:func:`lmcompanion.data.retrieval.noisy_copies`, need no embedder) and cached under ``$LMC_CACHE_DIR/retrieval``,
named by the embedder run's key, the pairs' config and the digest of the code that makes them; (3) the matcher is
trained on :class:`~lmcompanion.data.retrieval.RetrievalSource` with the shared trainer's step (AdamW, schedule,
clipping), evaluated on fixed items of each split (cross-entropy and top-1 accuracy). The run's key covers the
embedder run's key (the procedure's settings), so a retrained CLM is a new retrieval run.
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass
from pathlib import Path

import filelock
import numpy as np
import torch

from .. import models, paths
from ..config import digest
from ..data import retrieval as rdata
from ..data.stories import left_pad, load_stories, tokenizer
from ..errors import DataError
from ..fingerprint import closure
from ..fingerprint import digest as code_digest
from ..models.matcher import embed
from ..paths import atomic_write, file_sha256
from ..run import RunConfig, spec
from ..train.store import Run, RunStore
from ..train.trainer import train
from .registry import REGISTRY


def embedder_width(embedder: str, profile: str) -> int:
    """d of the embedder's model at ``profile`` (the matcher's width)."""
    return REGISTRY[embedder].build(profile).model.n_embed


# --------------------------------------------------------------------------------------------------
# Embeddings


def embedder_run_config(cfg: RunConfig) -> RunConfig:
    """The embedder's run: its experiment at the data's profile, with this run's seed and device."""
    base = REGISTRY[cfg.data.embedder].build(cfg.data.embedder_profile)
    return dataclasses.replace(base, seed=cfg.seed, device=cfg.device)


EMBED_CODE = ("lmcompanion.data.retrieval", "lmcompanion.models.matcher", "lmcompanion.data.stories")


def embeddings_path(cfg: RunConfig) -> Path:
    """Where the embeddings of ``cfg``'s pairs by its embedder run are cached: named by the embedder run's key,
    the pairs' config (but how many items are evaluated and whether they are whitened, which do not change the
    file) and the digest of the code that makes them."""
    ecfg = embedder_run_config(cfg)
    d = dataclasses.asdict(cfg.data)
    d.pop("eval_items")
    d.pop("whiten")  # the file holds the embeddings as made; whitening is applied when the items are built
    key = digest(
        {
            "embedder_key": spec(ecfg).key,
            "data": d,
            "data_fp": cfg.data.fingerprint(),
            "code": code_digest(closure(*EMBED_CODE)),
        }
    )
    slug = cfg.data.embedder.replace("/", "_")
    return paths.cache_dir() / "retrieval" / f"{slug}-{cfg.data.embedding}-s{cfg.seed}-{key}.pt"


def _well_formed(emb, width: int) -> bool:
    """Whether a cached embeddings file holds what :func:`embeddings` writes: the four (N, width) finite float
    matrices, queries and stories of a split in equal numbers."""
    keys = {f"{kind}_{split}" for kind in ("query", "target") for split in ("train", "test")}
    if not isinstance(emb, dict) or set(emb) != keys:
        return False
    ok = all(
        isinstance(t, torch.Tensor)
        and t.dim() == 2
        and t.is_floating_point()
        and t.size(1) == width
        and bool(torch.isfinite(t).all())
        for t in emb.values()
    )
    return ok and all(emb[f"query_{s}"].size(0) == emb[f"target_{s}"].size(0) > 0 for s in ("train", "test"))


def _embed_texts(model, tok, texts, length: int, device, batch: int = 256) -> torch.Tensor:
    out = []
    for i in range(0, len(texts), batch):
        idx = torch.from_numpy(np.stack([left_pad(tok.encode(t), length) for t in texts[i : i + batch]]))
        out.append(embed(model, idx.to(device)).float().cpu())
    return torch.cat(out)


def embeddings(cfg: RunConfig, store: RunStore | None = None) -> tuple[dict[str, torch.Tensor], Path]:
    """{query_train, target_train, query_test, target_test}: (N, d) embeddings (the original's keys), and the cache
    file that holds them (made now when missing). Matchers of 32 and 128 positions read the same file: while one
    process makes it, another that needs it waits on its lock and then reads it, rather than making it twice."""
    path = embeddings_path(cfg)
    path.parent.mkdir(parents=True, exist_ok=True)
    with filelock.FileLock(path.with_name(path.name + ".lock")):
        return _embeddings(cfg, path, store)


def _embeddings(cfg: RunConfig, path: Path, store: RunStore | None) -> tuple[dict[str, torch.Tensor], Path]:
    if path.is_file():
        try:
            cached = torch.load(path, map_location="cpu", weights_only=True)
            if _well_formed(cached, embedder_width(cfg.data.embedder, cfg.data.embedder_profile)):
                return cached, path
        except Exception:  # noqa: BLE001  (a truncated or foreign file: torch raises several types)
            pass
        path.unlink(missing_ok=True)  # a damaged or foreign cache: made again
    if cfg.data.embedding == "noisy_copy":  # the positive control: no embedder, no text
        out = rdata.noisy_copies(cfg.data.n_pairs, cfg.data.test_fraction, cfg.model.n_embed, cfg.seed)
        atomic_write(path, lambda f: torch.save(out, f))
        return out, path
    store = store or RunStore()
    ecfg = embedder_run_config(cfg)
    device = torch.device(cfg.device)
    if cfg.data.embedding == "trained":
        model = store.run(ecfg).load_model(str(device))
    else:
        torch.manual_seed(ecfg.seed)  # the initial weights the trainer would start this run from
        model = models.build(ecfg.model).to(device).eval()
    stories = load_stories(ecfg.data)["train"] if cfg.data.queries == "extractive" else []
    got = rdata.pairs(cfg.data, stories)
    tok = tokenizer(ecfg.data)
    L = ecfg.model.context_size
    out = {}
    for split, ps in got.items():
        out[f"query_{split}"] = _embed_texts(model, tok, [p.query for p in ps], L, device)
        out[f"target_{split}"] = _embed_texts(model, tok, [p.story for p in ps], L, device)
    if not all(torch.isfinite(t).all() for t in out.values()):
        raise DataError(f"the embeddings by {cfg.data.embedder} are not finite: its run diverged; retrain it")
    atomic_write(path, lambda f: torch.save(out, f))
    return out, path


# --------------------------------------------------------------------------------------------------
# The procedure


@dataclass(frozen=True)
class MatchSettings:
    embedder_key: str  # the key of the embedder's run (the untrained control: of the run it would be)


def match(cfg: RunConfig, run_dir: Path, settings: MatchSettings, *, progress=None, callbacks=()) -> dict:
    """A run-store procedure: embed the pairs with the embedder run, then train the matcher on them with the shared
    trainer (:func:`lmcompanion.train.trainer.train`: its resume, interrupt and non-finite guards), whose batch
    source is the embeddings' matching items."""
    if isinstance(settings, dict):
        settings = MatchSettings(**settings)
    source = matching_source(cfg, RunStore(Path(run_dir).parent), settings.embedder_key)
    summary = train(cfg, Path(run_dir), source=source, progress=progress, callbacks=callbacks)
    emb_path = embeddings_path(cfg)
    summary["pairs"] = {k: len(v) for k, v in source.sets.items()}
    summary["embeddings"] = {
        "file": str(emb_path),
        "sha256": file_sha256(emb_path),
        "embedder_key": settings.embedder_key,
    }
    if cfg.data.embedding == "trained":  # how far the embedding CLM learned (the chapter gates on it)
        embedder = RunStore(Path(run_dir).parent).run(embedder_run_config(cfg))
        summary["embedder"] = {"final": dict(embedder.summary["final"])}
    return summary


match.settings_class = MatchSettings


@functools.lru_cache(maxsize=64)
def embedder_key(ecfg: RunConfig) -> str:
    """The embedder run's key (computed once per process: the arms of a notebook share a few embedders)."""
    return spec(ecfg).key


def embedder_run(cfg: RunConfig, key: str, store: RunStore) -> Run:
    """The embedder's run folder in ``store``, named by its key (finished or not)."""
    ecfg = embedder_run_config(cfg)
    return Run(store.folder(ecfg, run_spec=_Named(key)))


@dataclass(frozen=True)
class _Named:
    key: str  # what RunStore.folder reads of a run spec


def matching_source(
    cfg: RunConfig, store: RunStore | None = None, expected_key: str | None = None
) -> rdata.RetrievalSource:
    """The batch source a retrieval run trains on: the matching items of its pairs' embeddings (made now, with the
    embedder run trained or reused, or read from the cache). ``expected_key``: the embedder run's key the run was
    planned with (an error if the embedder's config or code changed since)."""
    if expected_key is not None and embedder_key(embedder_run_config(cfg)) != expected_key:
        raise DataError(
            f"{cfg.name}: its embedder run's key is now {embedder_key(embedder_run_config(cfg))}, not "
            f"{expected_key} (the embedder's config or code changed): plan the run again "
            f"(`python -m lmcompanion train {cfg.name}`, or re-execute the notebook)"
        )
    emb, _ = embeddings(cfg, store)
    return rdata.RetrievalSource(emb, cfg.model.context_size, cfg.data, cfg.train, cfg.seed)


__all__ = [
    "EMBED_CODE",
    "MatchSettings",
    "embedder_key",
    "embedder_run",
    "embedder_run_config",
    "embedder_width",
    "embeddings",
    "embeddings_path",
    "match",
    "matching_source",
]
