"""Data: corpora, tokenizers, token caches and batch sources.

A *data config* is a frozen dataclass with a ``kind`` (``"lm"`` for token streams; chapters may register
others, such as sequence-to-sequence tasks). ``build_source(run_cfg, rank, world)`` turns a run config into
a *source* with the interface the trainer needs:

- ``train_batches(step) -> list[dict]``: this process's micro-batches of optimizer step ``step``,
- ``eval_batches(split, step) -> iterator of dict``: this process's share of the evaluation batches,
- ``eval_splits``: the splits evaluated (e.g. ``("train", "val")``).

Each batch is a dict of tensors passed to the model as keyword arguments, so the trainer never needs to
know what a batch contains.
"""

from __future__ import annotations

import importlib
from typing import Callable

from ..config import suggest
from ..errors import ConfigError
from .lm import LMDataConfig, LMSource, load_tokens, vocab_size
from .lm import build_source as _lm_source

# kind -> (config class, source builder); a chapter's data module registers itself with register_kind.
_KINDS: dict[str, tuple[type, Callable]] = {}
# modules that register further kinds when imported (lazily: they import torch-heavy code)
_PLUGINS = ("lmcompanion.data.seq2seq",)


def register_kind(config_cls: type, build: Callable) -> None:
    _KINDS[config_cls.kind] = (config_cls, build)


register_kind(LMDataConfig, _lm_source)


def _load_plugins() -> None:
    for name in _PLUGINS:
        importlib.import_module(name)


def kinds() -> dict[str, tuple[type, Callable]]:
    _load_plugins()
    return _KINDS


def config_class(kind: str) -> type:
    if kind not in kinds():
        raise ConfigError(f"unknown data kind {kind!r}{suggest(kind, _KINDS)}; known: {sorted(_KINDS)}")
    return _KINDS[kind][0]


def build_source(run_cfg, rank: int = 0, world: int = 1):
    return kinds()[run_cfg.data.kind][1](run_cfg, rank, world)


__all__ = ["LMDataConfig", "LMSource", "build_source", "config_class", "kinds", "load_tokens", "register_kind", "vocab_size"]
