"""Data: corpora, tokenizers, token caches and batch sources.

A *data config* is a frozen dataclass with a ``kind`` and a ``fingerprint()`` (the identity of the text or task it
reads). This package is the registry: it imports every data module and maps each kind to its config class and its
source builder; the data modules never import it back. ``build_source(run_cfg, rank, world)`` turns a run config
into a *source* with the interface the trainer needs:

- ``train_batches(step) -> list[dict]``: this process's micro-batches of optimizer step ``step``,
- ``eval_batches(split, step) -> iterator of dict``: this process's share of the evaluation batches,
- ``eval_splits``: the splits evaluated (e.g. ``("train", "val")``).

Each batch is a dict of tensors passed to the model as keyword arguments, so the trainer never needs to
know what a batch contains.
"""

from __future__ import annotations

from typing import Callable

from ..config import suggest
from ..errors import ConfigError
from . import joined, lm, retrieval, seq2seq, stories
from .joined import JoinedDataConfig, load_tokens, tokenizer, vocab_size
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


def kinds() -> dict[str, tuple[type, Callable]]:
    return KINDS


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


def unigram_loss(run_cfg, split: str = "val") -> float:
    """The loss of token frequencies alone on ``split`` of a run's data, as the run is scored: a token stream's
    (:func:`lm.unigram_loss`), a story corpus's examples at the run's context (:func:`stories.unigram_loss`), or a
    task's answer tokens (:func:`seq2seq.unigram_loss`). A
    model whose loss is not below it has learned nothing a comparison could rest on."""
    data = run_cfg.data
    if isinstance(data, stories.StoriesDataConfig):
        return stories.unigram_loss(data, run_cfg.model.context_size, split)
    if isinstance(data, LMDataConfig):
        return joined.unigram_loss(data, split)
    if isinstance(data, seq2seq.Seq2SeqDataConfig):
        return seq2seq.unigram_loss(data, split)
    raise ConfigError(f"no unigram loss for {type(data).__name__} data (a token stream, a story corpus or a "
                      "sequence-to-sequence task has one)")


__all__ = ["JoinedDataConfig", "KINDS", "LMDataConfig", "LMSource", "build_source", "config_class", "kinds",
           "load_tokens", "module_of", "tokenizer", "unigram_loss", "vocab_size"]
