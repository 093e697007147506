"""Models: one module per write-up plus shared layers, behind one interface (:class:`base.Model`).

Each family is a frozen config dataclass (with a ``family`` class attribute) and a :class:`base.Model` built from
it. This package is the registry: it imports every family module the chapters declare (``chapter.toml``, read by
:mod:`lmcompanion.contents`) and maps the family name to its (config, model) classes. The family modules never
import this package back. ``build(config)`` makes the module; ``num_params(config)`` counts without allocating.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import importlib
import json

import torch

from .. import contents, fingerprint, paths, untrusted
from ..config import suggest
from ..errors import ConfigError, LMCError
from .base import LanguageModel, Model, ModelOutput, count_params, counted_flops_per_token


def _declared() -> dict[str, tuple[type, type]]:
    """family -> (config class, model class), from the chapters' declarations (:mod:`lmcompanion.contents`)."""
    out = {}
    for module, config_name, model_name in contents.families():
        found = importlib.import_module(f"{__name__}.{module}")
        config, model = getattr(found, config_name), getattr(found, model_name)
        if config.family in out:
            raise ConfigError(
                f"model family {config.family!r} is declared twice (chapter.toml files): declare it in "
                "the chapter that brings it"
            )
        out[config.family] = (config, model)
    return out


FAMILIES: dict[str, tuple[type, type]] = _declared()


def families() -> dict[str, tuple[type, type]]:
    return FAMILIES


def config_class(family: str) -> type:
    if family not in FAMILIES:
        raise ConfigError(f"unknown model family {family!r}{suggest(family, FAMILIES)}; known: {sorted(FAMILIES)}")
    return FAMILIES[family][0]


def model_class(family: str) -> type:
    config_class(family)  # raises, naming the known families
    return FAMILIES[family][1]


def module_of(family: str) -> str:
    """The module that implements a family (what a run of it executes)."""
    return model_class(family).__module__


def build(config, device: str | torch.device | None = None) -> Model:
    """Instantiate the model of a config (on ``device``; ``"meta"`` builds it without memory, for counting)."""
    model_cls = model_class(config.family)
    if device is None:
        return model_cls(config)
    with torch.device(device):
        return model_cls(config)


@functools.lru_cache(maxsize=4096)
def flops_per_token(config, training: bool = True) -> float:
    """Counted FLOPs per token of ``config``'s model (:func:`~lmcompanion.models.base.counted_flops_per_token`): a
    training step's, or with ``training=False`` a forward pass's; the count builds the model once on the meta
    device, so a caller need not build it first.

    A count takes a second or more for a write-up-sized model (each operation's shape is worked out in Python on
    the meta device), and the plans, estimates and verdict pages of every process count the same models again, so
    each count is also kept in a folder (``LMC_FLOPS_DIR``, default ``flops/`` in ``LMC_CACHE_DIR``), named by what
    decides it: the model's config, training or not, the digest of the code (the family's module and what it
    imports, as a run key covers it, and this module) and the torch version (whose counter gives the formulas). An
    entry that is not what a count writes is counted again and replaced; a cache that cannot be written only makes
    the next process count again."""
    model_cls = model_class(config.family)
    key = flops_key(config, training)
    path = paths.flops_dir() / f"{key}.json"
    try:
        entry = untrusted.read_json(path, untrusted.COUNTED_FLOPS) if path.is_file() else None
    except LMCError:
        entry = None
    if entry is not None and entry["key"] == key:
        return float(entry["flops"])
    flops = counted_flops_per_token(config, model_cls, training)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        paths.atomic_write(
            path, json.dumps({"key": key, "flops": flops, "family": config.family, "training": training}) + "\n"
        )
    except (OSError, LMCError):
        pass
    return flops


def flops_key(config, training: bool = True) -> str:
    """The name of a FLOP count in the cache (see :func:`flops_per_token`)."""
    blob = json.dumps(
        {
            "config": dataclasses.asdict(config),
            "family": config.family,
            "training": bool(training),
            "code": fingerprint.digest((*fingerprint.closure(module_of(config.family)), __name__)),
            "torch": torch.__version__,
        },
        sort_keys=True,
        default=str,
    )
    return hashlib.sha256(blob.encode()).hexdigest()[:24]


def num_params(config) -> int:
    """The parameter count as the write-ups count it, without allocating the weights."""
    return build(config, device="meta").num_params()


__all__ = [
    "FAMILIES",
    "LanguageModel",
    "Model",
    "ModelOutput",
    "build",
    "config_class",
    "count_params",
    "families",
    "flops_key",
    "flops_per_token",
    "model_class",
    "module_of",
    "num_params",
]
