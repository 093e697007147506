"""The registry of named experiments: ``register`` (a decorator the chapter modules use) and the table it fills."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Mapping

from ..run import RunConfig


@dataclass(frozen=True)
class Experiment:
    name: str  # "<chapter>/<arm>"
    chapter: str
    title: str  # the write-up's own label for the run
    build: Callable[[str], RunConfig]  # profile -> config (seed 0, device cpu)
    published: Mapping[str, float] = field(default_factory=dict)  # the write-up's numbers: train, val, aux, params
    notes: str = ""


REGISTRY: dict[str, Experiment] = {}


def register(name: str, *, title: str, published: Mapping[str, float] | None = None, notes: str = ""):
    """Decorator: register ``fn(profile) -> RunConfig`` as experiment ``name``."""

    def deco(fn: Callable[[str], RunConfig]):
        if name in REGISTRY:
            raise ValueError(f"experiment {name!r} is registered twice")
        REGISTRY[name] = Experiment(name, name.split("/")[0], title, fn, dict(published or {}), notes)
        return fn

    return deco


__all__ = ["Experiment", "REGISTRY", "register"]
