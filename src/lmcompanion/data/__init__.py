"""Data: corpora, tokenizers, token caches and batch sources.

A *data config* is a frozen dataclass with a ``kind`` and a ``fingerprint()`` (the identity of the text or task it
reads). This package is the registry: it imports every data module and maps each kind to its config class and its
source builder; the data modules never import it back. ``build_source(run_cfg, rank, world)`` turns a run config
into a *source* with the interface the trainer needs:

- ``train_batches(step) -> list[dict]``: this process's micro-batches of optimizer step ``step``,
- ``eval_batches(split, step) -> iterator of dict``: this process's share of the evaluation batches,
- ``eval_splits``: the splits evaluated (e.g. ``("train", "val")``).

Each batch is a dict of tensors passed to the model as keyword arguments, so the trainer never needs to
know what a batch contains. What else the book asks of a kind (:func:`unigram_loss`, a tokenizer's fingerprint, the
files a campaign packs) each kind declares in :mod:`lmcompanion.data.kinds`.
"""

from __future__ import annotations

from typing import Callable

from ..config import suggest
from ..errors import ConfigError
from . import joined, kinds, lm, retrieval, seq2seq, stories
from .joined import JoinedDataConfig, load_tokens, tokenizer, vocab_size
from .kinds import unigram_loss
from .lm import LMDataConfig, LMSource

KINDS: dict[str, tuple[type, Callable]] = {
    config.kind: (config, build)
    for config, build in [
        (lm.LMDataConfig, lm.build_source),
        (joined.JoinedDataConfig, joined.build_source),
        (seq2seq.Seq2SeqDataConfig, seq2seq.build_source),
        (stories.StoriesDataConfig, stories.build_source),
        (retrieval.RetrievalDataConfig, retrieval.build_source),
    ]
}
# What the book asks of each kind besides its batches (its unigram loss, tokenizer fingerprint, pack files and the
# CUDA check's source) is declared beside this, in lmcompanion.data.kinds (kinds.KINDS: the same kinds as KINDS).


def config_class(kind: str) -> type:
    if kind not in KINDS:
        raise ConfigError(f"unknown data kind {kind!r}{suggest(kind, KINDS)}; known: {sorted(KINDS)}")
    return KINDS[kind][0]


def module_of(kind: str) -> str:
    """The module that implements a data kind (what a run reading it executes)."""
    config_class(kind)
    return KINDS[kind][1].__module__


def build_source(run_cfg, rank: int = 0, world: int = 1):
    config_class(run_cfg.data.kind)
    return KINDS[run_cfg.data.kind][1](run_cfg, rank, world)


__all__ = [
    "JoinedDataConfig",
    "KINDS",
    "LMDataConfig",
    "LMSource",
    "build_source",
    "config_class",
    "kinds",
    "load_tokens",
    "module_of",
    "tokenizer",
    "unigram_loss",
    "vocab_size",
]
