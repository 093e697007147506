"""Named experiments taken from the write-ups, at every profile.

An experiment is a function ``profile -> RunConfig`` registered under a name such as ``ar_ed/baseline``, with
the write-up's label and published numbers. ``config(name, profile, seed=..., device=..., overrides=...)``
gives the run config a notebook or the CLI trains; ``lmcompanion.train.run`` trains or reuses it.

Each chapter's module (``ar_ed``, ``deepsight``, ...) registers its experiments in :mod:`.registry` when this
package imports it.
"""

from __future__ import annotations

import dataclasses
from typing import Mapping

from ..config import apply_overrides, check_profile, suggest
from ..errors import ConfigError
from ..run import RunConfig
from . import ar_ed, baselines, deepsight, formal_ed, hourglass, mixer, retrieval  # noqa: F401  (they register their experiments)
from .registry import REGISTRY, Experiment, register

CHAPTERS = ("prologue", "formal_ed", "ar_ed", "deepsight", "mixer", "retrieval", "hourglass")


def all_experiments() -> dict[str, Experiment]:
    return dict(REGISTRY)


def chapters() -> list[str]:
    """The chapters that have experiments, in registration order."""
    return list(dict.fromkeys(e.chapter for e in REGISTRY.values()))


def names(chapter: str | None = None) -> list[str]:
    if chapter is not None and chapter not in chapters():
        raise ConfigError(f"unknown chapter {chapter!r}{suggest(chapter, chapters())}; chapters with experiments: "
                          f"{', '.join(chapters())}")
    return [n for n, e in REGISTRY.items() if chapter is None or e.chapter == chapter]


def get(name: str) -> Experiment:
    if name not in REGISTRY:
        raise ConfigError(
            f"unknown experiment {name!r}{suggest(name, REGISTRY)}; see `python -m lmcompanion list` "
            f"(known: {', '.join(REGISTRY)})"
        )
    return REGISTRY[name]


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
    """The run config of experiment ``name`` at ``profile``, with a seed, a device and dotted-key overrides
    (applied together, then validated; a ``device`` override is checked like the ``device`` argument)."""
    check_profile(profile)
    overrides = dict(overrides or {})
    if "device" in overrides:
        device = str(overrides.pop("device"))
    cfg = get(name).build(profile)
    cfg = dataclasses.replace(cfg, seed=seed, device=resolve_device(device, profile))
    return apply_overrides(cfg, overrides)


__all__ = ["CHAPTERS", "Experiment", "all_experiments", "chapters", "config", "get", "names", "register",
           "resolve_device"]
