"""Models: one module per write-up plus shared layers.

Each family is a frozen config dataclass (with a ``family`` class attribute) and an ``nn.Module`` built from it.
``build(config)`` makes the module; ``families()`` lists what is registered. A chapter adds its family by
listing its module in ``_MODULES``; the module calls :func:`register` at import.
"""

from __future__ import annotations

import importlib

import torch

from ..config import suggest
from ..errors import ConfigError
from .base import LanguageModel, ModelOutput, count_params

_FAMILIES: dict[str, tuple[type, type]] = {}
_MODULES = (
    "lmcompanion.models.baseline",
    "lmcompanion.models.ar_ed",
    "lmcompanion.models.deepsight",
    "lmcompanion.models.formal_ed",
)


def register(config_cls: type, model_cls: type) -> None:
    _FAMILIES[config_cls.family] = (config_cls, model_cls)


def families() -> dict[str, tuple[type, type]]:
    if not _FAMILIES:
        for name in _MODULES:
            importlib.import_module(name)
    return _FAMILIES


def config_class(family: str) -> type:
    if family not in families():
        raise ConfigError(f"unknown model family {family!r}{suggest(family, _FAMILIES)}; known: {sorted(_FAMILIES)}")
    return _FAMILIES[family][0]


def build(config, device: str | torch.device | None = None) -> torch.nn.Module:
    """Instantiate the model of a config (on ``device``; ``"meta"`` builds it without memory, for counting)."""
    model_cls = families()[config.family][1] if config.family in families() else None
    if model_cls is None:
        config_class(config.family)  # raises, naming the known families
    if device is None:
        return model_cls(config)
    with torch.device(device):
        return model_cls(config)


def num_params(config) -> int:
    """The parameter count as the write-ups count it, without allocating the weights."""
    return build(config, device="meta").num_params()


__all__ = ["LanguageModel", "ModelOutput", "build", "config_class", "count_params", "families", "num_params", "register"]
