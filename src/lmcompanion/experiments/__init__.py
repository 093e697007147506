"""Named experiments taken from the write-ups, at every profile.

An experiment is a function ``profile -> RunConfig`` registered under a name such as ``ar_ed/baseline``, with
the write-up's label and published numbers. ``config(name, profile, seed=..., device=..., overrides=...)``
gives the run config a notebook or the CLI trains; ``lmcompanion.train.run`` trains or reuses it.

Each chapter's module (``ar_ed``, ``deepsight``, ...) registers its experiments when this package is imported.
"""

from __future__ import annotations

import dataclasses
import importlib
from dataclasses import dataclass, field
from typing import Callable, Mapping

from ..config import RunConfig, apply_overrides, check_profile, suggest
from ..errors import ConfigError


@dataclass(frozen=True)
class Experiment:
    name: str  # "<chapter>/<arm>"
    chapter: str
    title: str  # the write-up's own label for the run
    build: Callable[[str], RunConfig]  # profile -> config (seed 0, device cpu)
    published: Mapping[str, float] = field(default_factory=dict)  # the write-up's numbers: train, val, aux, params
    notes: str = ""


_REGISTRY: dict[str, Experiment] = {}
_MODULES = (
    "lmcompanion.experiments.baselines",
    "lmcompanion.experiments.ar_ed",
    "lmcompanion.experiments.deepsight",
    "lmcompanion.experiments.formal_ed",
)
_loaded = False


def register(name: str, *, title: str, published: Mapping[str, float] | None = None, notes: str = ""):
    """Decorator: register ``fn(profile) -> RunConfig`` as experiment ``name``."""

    def deco(fn: Callable[[str], RunConfig]):
        if name in _REGISTRY:
            raise ValueError(f"experiment {name!r} is registered twice")
        _REGISTRY[name] = Experiment(name, name.split("/")[0], title, fn, dict(published or {}), notes)
        return fn

    return deco


def _load() -> None:
    global _loaded
    if _loaded:
        return
    _loaded = True
    for module in _MODULES:
        importlib.import_module(module)


def all_experiments() -> dict[str, Experiment]:
    _load()
    return dict(_REGISTRY)


def names(chapter: str | None = None) -> list[str]:
    return [n for n, e in all_experiments().items() if chapter is None or e.chapter == chapter]


def get(name: str) -> Experiment:
    registry = all_experiments()
    if name not in registry:
        raise ConfigError(
            f"unknown experiment {name!r}{suggest(name, registry)}; see `python -m lmcompanion list` "
            f"(known: {', '.join(registry)})"
        )
    return registry[name]


def resolve_device(device: str, profile: str) -> str:
    """'auto' -> 'cuda' when a GPU is visible, else 'cpu'; the smoke profile always runs on the CPU."""
    import torch

    if device not in ("auto", "cpu", "cuda"):
        raise ConfigError(f"unknown device {device!r}; valid: auto, cpu, cuda")
    if device == "auto":
        return "cuda" if profile != "smoke" and torch.cuda.is_available() else "cpu"
    if device == "cuda" and not torch.cuda.is_available():
        raise ConfigError("device='cuda' was asked for but no CUDA GPU is visible; use device='cpu' or 'auto'")
    return device


def config(name: str, profile: str = "cpu", *, seed: int = 0, device: str = "auto",
           overrides: Mapping[str, object] | None = None) -> RunConfig:
    """The run config of experiment ``name`` at ``profile``, with a seed, a device and dotted-key overrides."""
    check_profile(profile)
    cfg = get(name).build(profile)
    cfg = dataclasses.replace(cfg, seed=seed, device=resolve_device(device, profile))
    return apply_overrides(cfg, overrides or {})


__all__ = ["Experiment", "all_experiments", "config", "get", "names", "register", "resolve_device"]
