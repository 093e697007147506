"""The learning gate: a claim about what training reaches is decided only where every arm it rests on has learned.

The rule, fixed before any result was looked at and stated in the prologue's verdict rule, applied by one function
(:func:`lmcompanion.verdicts.gate`) in every chapter:

- **Reference lines.** Every compared quantity has the line a model reaches by learning nothing a claim could rest
  on: for a language model's loss, the *unigram loss* of the same split (token frequencies alone, never context;
  :func:`lmcompanion.data.unigram_loss`); for a retrieval matcher's cross-entropy over K candidates, *chance*,
  ln K; for an accuracy, chance, 1/K.
- **Learned.** An arm has learned, at the step a claim compares (the final evaluation, or the intermediate step,
  time or compute at which the row reads it), when **every seed** lies at least :data:`MARGIN` = 0.5 nats below
  its reference line (a loss), or reaches at least :data:`FACTOR` = 2 times chance (an accuracy).
- **Not decided.** A row with an arm that has not learned is "not decided at this scale: ⟨arm⟩ has not learned",
  whatever its test says: it is never counted as holding or not holding.

Why every seed, and not a one-sample test over seeds: a test shows that the seeds' *mean* is below the line, so
one seed sitting on the line could still pass it; every seed clear of the line means every number a row rests on
comes from a model that learned. Why half a nat: the write-ups' models end 2.5 to 4.5 nats below their unigram
lines (a model of TinyStories at 1.9 against a unigram loss near 6.4); an arm within half a nat of its line has
learned little beyond which tokens are common, and two such arms differ in how fast they start, which none of the
write-ups' claims is about. Why twice chance for an accuracy: it is the same idea on a ratio scale (ln 2 = 0.69
nats of log-likelihood on the right item). The rule only ever turns a decisive verdict into an undecided one, so
the 5% bounds of the verdict rule still hold.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

from .data import unigram_loss
from .errors import ConfigError
from .run import RunConfig

MARGIN = 0.5  # nats below the reference line that every seed of a loss must reach
FACTOR = 2.0  # times chance that every seed of an accuracy must reach
LOSS, ACCURACY = "loss", "accuracy"
_SPLITS = {"train": "training", "val": "validation", "test": "test"}


@dataclass(frozen=True)
class Reference:
    """The line an arm must clear: its name as a reader sees it, its value, and whether it is a loss (lower is
    better) or an accuracy (higher is better)."""

    name: str
    level: float
    kind: str = LOSS


def reference(cfg: RunConfig, metric: str) -> Reference:
    """The reference line of ``metric`` (a run's evaluation key: ``train``, ``val``, ``test``, or a retrieval run's
    ``train_acc``/``test_acc``) for runs of ``cfg``."""
    data = cfg.data
    chance = getattr(data, "chance_line", None)  # data whose line is chance (a matcher's candidates), not frequencies
    if chance is not None:
        return Reference(*chance(cfg.model, metric))
    if metric not in _SPLITS:
        raise ConfigError(
            f"no reference line for the metric {metric!r} of {data.kind} data: one of {', '.join(_SPLITS)}"
        )
    return Reference(f"the unigram loss ({_SPLITS[metric]})", unigram_loss(cfg, metric))


@dataclass(frozen=True)
class Arm:
    """One arm of a row as the gate sees it: its label, its reference line and the values (one per seed) at the step
    the row compares (``at``: "final", "step 50", ...)."""

    label: str
    reference: str
    level: float
    values: tuple[float, ...]
    at: str = "final"
    kind: str = LOSS

    @property
    def distances(self) -> tuple[float, ...]:
        """Per seed: nats below the line (a loss), or times chance (an accuracy)."""
        if self.kind == ACCURACY:
            return tuple(v / self.level for v in self.values)
        return tuple(self.level - v for v in self.values)

    @property
    def learned(self) -> bool:
        """Every seed clears the line by the margin (NaN never does)."""
        need = FACTOR if self.kind == ACCURACY else MARGIN
        return bool(self.values) and all(d >= need for d in self.distances)

    def text(self) -> str:
        """ "flat_d512 0.61–0.66 nats below the unigram loss (validation), final ✓": the smallest and largest
        distance over seeds, where it was read, and whether the arm passes."""
        d = [x for x in self.distances if math.isfinite(x)]
        if not d:
            span = "not measured"
        elif self.kind == ACCURACY:
            span = f"{_range(d, '.2g')}× {self.reference}"
        else:
            span = f"{_range(d, '.2f')} nats below {self.reference}"
        at = "" if self.at == "final" else f", at {self.at}"
        return f"{self.label} {span}{at} {'✓' if self.learned else '✗'}"


def _range(values: Sequence[float], fmt: str) -> str:
    lo, hi = min(values), max(values)
    return f"{lo:{fmt}}" if f"{lo:{fmt}}" == f"{hi:{fmt}}" else f"{lo:{fmt}}–{hi:{fmt}}"


def arm(label: str, runs: Sequence, metric: str, values: Sequence[float] | None = None, at: str = "final") -> Arm:
    """The gate's view of an arm from its runs: the reference line of ``metric`` for their config, and ``values``
    (default: each run's final ``metric``) read at ``at``."""
    if not runs:
        raise ConfigError(f"the arm {label!r} has no runs to gate")
    ref = reference(runs[0].config, metric)
    vals = [r.summary["final"][metric] for r in runs] if values is None else list(values)
    return Arm(label, ref.name, ref.level, tuple(float(v) for v in vals), at, ref.kind)


def not_learned(arms: Sequence[Arm]) -> list[Arm]:
    """The arms that have not learned, in order."""
    return [a for a in arms if not a.learned]


def summary(arms: Sequence[Arm]) -> str:
    """One cell: every arm's distance to its line, with ✓ or ✗ ("" for a row with no gated arm)."""
    return "; ".join(a.text() for a in arms)


__all__ = ["ACCURACY", "Arm", "FACTOR", "LOSS", "MARGIN", "Reference", "arm", "not_learned", "reference", "summary"]
