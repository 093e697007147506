"""The headline comparisons (issue 34): each chapter declares here, once, the write-up's central claim(s), the arms
that decide them and why they are the headline (:func:`headline`), and how its ``cpu`` protocol was fixed
(:data:`CPU_RULE`, and where a chapter departs from it). The notebooks, ``train-chapter``, the GPU campaign and the
verdict pages read them from here: a verdict row is a headline row when it compares the headline's arms
(:func:`is_headline`).

A module of its own, apart from :mod:`lmcompanion.experiments.registry`: a procedure's run key covers the modules it
executes (:mod:`lmcompanion.fingerprint`), the retrieval procedure reads the registry, and the headlines' prose is
not executed by any run, so editing it must not change a run's key.
"""

from __future__ import annotations

from dataclasses import dataclass

from .registry import REGISTRY

# How the ``cpu`` profile's steps (or compute budget) were fixed, in every chapter the same way and on the baseline arm
# alone, before any comparison was looked at (issue 34). Each chapter's profile says, where it sets its steps, what
# the rule gave there.
CPU_RULE = (
    "the fewest steps, doubling from the previous default, at which the baseline arm alone (seed 0) ended at "
    "least 0.7 nats below its validation unigram loss: the learning gate's half nat, plus 0.2 of headroom for "
    "arms that learn more slowly than the baseline"
)

# How the illustrating arms are paid for at ``cpu`` (issue 34): the headline arms' longer runs and five seeds must fit
# the cold build's budget, so the chapters whose steps the rule sets (AR encoder-decoder, DeepSight, hourglass) train
# their other arms for half the steps the rule gave (``cpu_illustration_steps``: a fraction of the headline arms'
# steps, a quarter in DeepSight, whose headline arms depart from the rule with twice its steps), with one seed. The
# landing page states the fraction, then this rule.
ILLUSTRATION_RULE = (
    "a page or row that shows a headline arm beside them reads its run at their steps and seed "
    "(trained for that), so runs of different lengths are never compared; that fraction was chosen "
    "from the build's measured cost, before any run at those steps had been made"
)


@dataclass(frozen=True)
class Headline:
    """A chapter's headline comparison: what it compares (``label``), its arms, why it is the headline, and its
    baseline arm (on which alone the ``cpu`` protocol was fixed: :data:`CPU_RULE`). A verdict row is one of its rows
    when it compares at least ``min_arms`` of these arms and no other. ``cpu_shortfall``: where the rule leaves an arm
    short of the learning gate at ``cpu``, why, and what was measured about the cost of closing the gap (one line,
    no measured number: the manual's section on what ``cpu`` cannot reach, docs/measurements.md, gives them with
    their commands); the landing page says it when an arm has not learned in the build. ``cpu_departure``: where the chapter's ``cpu``
    steps depart from :data:`CPU_RULE`, how, why and when the choice was made (one line, said on the landing page).
    ``cpu_illustrates``: measured, the arms cannot learn at ``cpu`` at an affordable cost (``cpu_shortfall`` says
    why), so there they run the illustrations' seeds, like the chapter's other arms, and decide nothing.
    ``cpu_illustration_steps``: the fraction of its protocol's steps that each of the chapter's illustrating runs
    takes at ``cpu`` (:data:`ILLUSTRATION_RULE`; 1: all of them)."""

    chapter: str
    label: str
    arms: tuple[str, ...]
    why: str
    min_arms: int = 2
    baseline: str = ""
    cpu_shortfall: str = ""
    cpu_departure: str = ""
    cpu_illustrates: bool = False
    cpu_illustration_steps: float = 1.0

    def illustrates_at(self, profile: str | None) -> bool:
        """Whether its arms only illustrate at ``profile`` (``cpu_illustrates``, at ``cpu``)."""
        return profile == "cpu" and self.cpu_illustrates


HEADLINES: dict[str, list[Headline]] = {}


def headline(
    chapter: str,
    label: str,
    arms: tuple[str, ...],
    why: str,
    min_arms: int = 2,
    baseline: str | None = None,
    cpu_shortfall: str = "",
    cpu_departure: str = "",
    cpu_illustrates: bool = False,
    cpu_illustration_steps: float = 1.0,
) -> Headline:
    """Declare a headline comparison of ``chapter`` (its arms must be registered experiments of it; ``baseline``, one
    of them, default the last; ``cpu_shortfall``, ``cpu_departure``, ``cpu_illustrates``, ``cpu_illustration_steps``:
    see :class:`Headline`; arms that only illustrate at ``cpu`` need the shortfall that says why; every headline of a
    chapter declares the same ``cpu_illustration_steps``)."""
    unknown = [a for a in arms if a not in REGISTRY]
    baseline = baseline or (arms[-1] if arms else "")
    if unknown or not arms or not 1 <= min_arms <= len(arms) or baseline not in arms:
        raise ValueError(
            f"headline {label!r} of {chapter!r}: arms must be registered experiments "
            f"(unknown: {unknown}), min_arms between 1 and their number, the baseline one of them"
        )
    if cpu_illustrates and not cpu_shortfall:
        raise ValueError(
            f"headline {label!r} of {chapter!r}: arms that only illustrate at cpu need a cpu_shortfall "
            "that says why they cannot learn there"
        )
    if not 0 < cpu_illustration_steps <= 1 or any(
        o.cpu_illustration_steps != cpu_illustration_steps for o in HEADLINES.get(chapter, [])
    ):
        raise ValueError(
            f"headline {label!r} of {chapter!r}: cpu_illustration_steps must be in (0, 1] and the same for "
            f"every headline of the chapter, got {cpu_illustration_steps}"
        )
    h = Headline(
        chapter,
        label,
        tuple(arms),
        why,
        min_arms,
        baseline,
        cpu_shortfall,
        cpu_departure,
        cpu_illustrates,
        cpu_illustration_steps,
    )
    HEADLINES.setdefault(chapter, []).append(h)
    return h


def headlines(chapter: str | None = None) -> list[Headline]:
    """The headline comparisons of ``chapter`` (None: every chapter's), in declaration order."""
    return [h for c, hs in HEADLINES.items() if chapter is None or c == chapter for h in hs]


def headline_arms(chapter: str | None = None, *, deciding_at: str | None = None) -> tuple[str, ...]:
    """Every arm of the headline comparisons of ``chapter`` (None: of every chapter), each once; with
    ``deciding_at="cpu"``, of those whose arms do not only illustrate there (``cpu_illustrates``)."""
    return tuple(dict.fromkeys(a for h in headlines(chapter) if not h.illustrates_at(deciding_at) for a in h.arms))


def illustration_steps(chapter: str, profile: str | None) -> float:
    """The fraction of its protocol's steps an illustrating run of ``chapter`` takes at ``profile`` (1: all of them;
    below 1 at ``cpu`` only, where a chapter declares it: :data:`ILLUSTRATION_RULE`)."""
    if profile != "cpu":
        return 1.0
    return next((h.cpu_illustration_steps for h in headlines(chapter)), 1.0)


def is_headline(chapter: str, arms) -> bool:
    """Whether a row comparing ``arms`` is one of ``chapter``'s headline rows."""
    arms = set(arms)
    return bool(arms) and any(arms <= set(h.arms) and len(arms) >= h.min_arms for h in headlines(chapter))


__all__ = [
    "CPU_RULE",
    "HEADLINES",
    "Headline",
    "ILLUSTRATION_RULE",
    "headline",
    "headline_arms",
    "headlines",
    "illustration_steps",
    "is_headline",
]
