"""The registry of named experiments: ``register`` (a decorator the chapter modules use), the table it fills, and the
named procedures that train an experiment's runs.

An experiment declares, where it is registered, everything a planner needs (:mod:`lmcompanion.experiments.plan`):

- ``build(profile) -> RunConfig``: its config at each profile;
- ``profiles``: the profiles it runs at (an arm too costly for the small profiles names only ``gpu`` and ``paper``);
- ``first_seed_only``: the profiles at which it runs only the first of the profile's seeds (an arm that feeds a
  table rather than a comparison, kept inside a small profile's budget);
- ``n_seeds``: profile -> how many seeds it runs there where that differs from the profile's default (an arm of a
  claim of equality, which two-sided needs four seeds per arm to be refuted at 5%);
- ``procedure``: the name of the procedure that trains it (:data:`PROCEDURES`): ``"trainer"``, the shared trainer,
  unless it says otherwise;
- ``also_in``: other chapters whose notebooks read its runs.

Each chapter also declares here, once, its **headline comparisons** (:func:`headline`): the write-up's central
claim(s), the arms that decide them and why they are the headline. The notebooks, ``train-chapter``, the GPU
campaign and the verdict pages read them from here: a verdict row is a headline row when it compares the headline's
arms (:func:`is_headline`). A chapter whose write-up trained nothing (the formal one) says so
(:func:`trained_nothing`): its verdicts then name no share of the write-up's tokens.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from ..config import PROFILES, suggest
from ..errors import ConfigError
from ..run import RunConfig

TRAINER = "trainer"


@dataclass(frozen=True)
class Procedure:
    """How the runs of an experiment are trained.

    ``fn(cfg, folder, settings, *, progress, callbacks) -> summary`` is a run-store procedure (None: the shared
    trainer, :func:`lmcompanion.train.trainer.train`). ``settings(cfg, profile)`` gives its settings (part of the run's
    key), ``needs(cfg)`` the configs of the runs it reads (trained first, by the shared trainer), ``source(cfg, store)``
    the batch source the trainer steps through (for the benchmark), and ``minutes(cfg, settings)`` its estimated time
    on one H100 where the trainer's estimate does not apply.
    """

    name: str
    fn: Callable | None = None
    settings: Callable[[RunConfig, str], Any] | None = None
    needs: Callable[[RunConfig], list[RunConfig]] | None = None
    source: Callable[..., Any] | None = None
    minutes: Callable[[RunConfig, Any], float] | None = None
    description: str = "the shared trainer"


PROCEDURES: dict[str, Procedure] = {TRAINER: Procedure(TRAINER)}


def register_procedure(procedure: Procedure) -> Procedure:
    if procedure.name in PROCEDURES:
        raise ValueError(f"procedure {procedure.name!r} is registered twice")
    PROCEDURES[procedure.name] = procedure
    return procedure


def procedure(name: str) -> Procedure:
    if name not in PROCEDURES:
        raise ConfigError(f"unknown procedure {name!r}{suggest(name, PROCEDURES)}; known: {', '.join(PROCEDURES)}")
    return PROCEDURES[name]


@dataclass(frozen=True)
class Experiment:
    name: str  # "<chapter>/<arm>"
    chapter: str
    title: str  # the write-up's own label for the run
    build: Callable[[str], RunConfig]  # profile -> config (seed 0, device cpu)
    published: Mapping[str, float] = field(default_factory=dict)  # the write-up's numbers: train, val, aux, params
    notes: str = ""
    profiles: tuple[str, ...] = tuple(PROFILES)  # the profiles it runs at
    first_seed_only: tuple[str, ...] = ()  # profiles at which it runs the first seed only
    n_seeds: Mapping[str, int] = field(default_factory=dict)  # profile -> seeds, where not the profile's default
    procedure: str = TRAINER  # the name of its procedure in PROCEDURES
    also_in: tuple[str, ...] = ()  # other chapters whose notebooks read its runs (the prologue reads ar_ed/baseline)
    why_not_everywhere: str = ""  # why it leaves out the profiles it does not run at (one line)

    def runs_at(self, profile: str) -> bool:
        return profile in self.profiles


REGISTRY: dict[str, Experiment] = {}


# How the ``cpu`` profile's steps (or compute budget) were fixed, in every chapter the same way and on the baseline arm
# alone, before any comparison was looked at (issue 34). Each chapter's profile says, where it sets its steps, what
# the rule gave there.
CPU_RULE = ("the fewest steps, doubling from the previous default, at which the baseline arm alone (seed 0) ended at "
            "least 0.7 nats below its validation unigram loss: the learning gate's half nat, plus 0.2 of headroom for "
            "arms that learn more slowly than the baseline")


@dataclass(frozen=True)
class Headline:
    """A chapter's headline comparison: what it compares (``label``), its arms, why it is the headline, and its
    baseline arm (on which alone the ``cpu`` protocol was fixed: :data:`CPU_RULE`). A verdict row is one of its rows
    when it compares at least ``min_arms`` of these arms and no other. ``cpu_shortfall``: where the rule leaves an arm
    short of the learning gate at ``cpu``, why, and what was measured about the cost of closing the gap (one line,
    no measured number: the README's section on what ``cpu`` cannot reach gives them with their commands); the
    landing page says it when an arm has not learned in the build. ``cpu_departure``: where the chapter's ``cpu``
    steps depart from :data:`CPU_RULE`, how, why and when the choice was made (one line, said on the landing page).
    ``cpu_illustrates``: measured, the arms cannot learn at ``cpu`` at an affordable cost (``cpu_shortfall`` says
    why), so there they run the illustrations' seeds, like the chapter's other arms, and decide nothing."""

    chapter: str
    label: str
    arms: tuple[str, ...]
    why: str
    min_arms: int = 2
    baseline: str = ""
    cpu_shortfall: str = ""
    cpu_departure: str = ""
    cpu_illustrates: bool = False


HEADLINES: dict[str, list[Headline]] = {}
TRAINED_NOTHING: set[str] = set()  # chapters whose write-up reports no training run of its own


def get(name: str) -> Experiment:
    """The registered experiment ``name`` (an unknown name is an error listing the known ones)."""
    if name not in REGISTRY:
        raise ConfigError(
            f"unknown experiment {name!r}{suggest(name, REGISTRY)}; see `python -m lmcompanion list` "
            f"(known: {', '.join(REGISTRY)})"
        )
    return REGISTRY[name]


def headline(chapter: str, label: str, arms: tuple[str, ...], why: str, min_arms: int = 2,
             baseline: str | None = None, cpu_shortfall: str = "", cpu_departure: str = "",
             cpu_illustrates: bool = False) -> Headline:
    """Declare a headline comparison of ``chapter`` (its arms must be registered experiments of it; ``baseline``, one
    of them, default the last; ``cpu_shortfall``, ``cpu_departure``, ``cpu_illustrates``: see :class:`Headline`;
    arms that only illustrate at ``cpu`` need the shortfall that says why)."""
    unknown = [a for a in arms if a not in REGISTRY]
    baseline = baseline or (arms[-1] if arms else "")
    if unknown or not arms or not 1 <= min_arms <= len(arms) or baseline not in arms:
        raise ValueError(f"headline {label!r} of {chapter!r}: arms must be registered experiments "
                         f"(unknown: {unknown}), min_arms between 1 and their number, the baseline one of them")
    if cpu_illustrates and not cpu_shortfall:
        raise ValueError(f"headline {label!r} of {chapter!r}: arms that only illustrate at cpu need a cpu_shortfall "
                         "that says why they cannot learn there")
    h = Headline(chapter, label, tuple(arms), why, min_arms, baseline, cpu_shortfall, cpu_departure, cpu_illustrates)
    HEADLINES.setdefault(chapter, []).append(h)
    return h


def headlines(chapter: str | None = None) -> list[Headline]:
    """The headline comparisons of ``chapter`` (None: every chapter's), in declaration order."""
    return [h for c, hs in HEADLINES.items() if chapter is None or c == chapter for h in hs]


def headline_arms(chapter: str | None = None, *, deciding_at: str | None = None) -> tuple[str, ...]:
    """Every arm of the headline comparisons of ``chapter`` (None: of every chapter), each once; with
    ``deciding_at="cpu"``, of those whose arms do not only illustrate there (``cpu_illustrates``)."""
    return tuple(dict.fromkeys(a for h in headlines(chapter) for a in h.arms
                               if not (deciding_at == "cpu" and h.cpu_illustrates)))


def is_headline(chapter: str, arms) -> bool:
    """Whether a row comparing ``arms`` is one of ``chapter``'s headline rows."""
    arms = set(arms)
    return bool(arms) and any(arms <= set(h.arms) and len(arms) >= h.min_arms for h in headlines(chapter))


def trained_nothing(chapter: str) -> None:
    """Declare that ``chapter``'s write-up reports no training run (its runs are the book's own)."""
    TRAINED_NOTHING.add(chapter)


def register(name: str, *, title: str, published: Mapping[str, float] | None = None, notes: str = "",
             profiles: tuple[str, ...] | None = None, first_seed_only: tuple[str, ...] = (),
             n_seeds: Mapping[str, int] | None = None, procedure: str = TRAINER, also_in: tuple[str, ...] = (),
             why_not_everywhere: str = ""):
    """Decorator: register ``fn(profile) -> RunConfig`` as experiment ``name``, with where and how it runs
    (``why_not_everywhere``: why it leaves out some profiles, which :func:`where_they_run` says)."""
    profiles = tuple(PROFILES) if profiles is None else tuple(profiles)
    n_seeds = dict(n_seeds or {})
    unknown = [p for p in (*profiles, *first_seed_only, *n_seeds) if p not in PROFILES]
    if unknown:
        raise ValueError(f"experiment {name!r} names unknown profiles {unknown}")
    if set(first_seed_only) & set(n_seeds) or not all(isinstance(n, int) and n >= 1 for n in n_seeds.values()):
        raise ValueError(f"experiment {name!r}: n_seeds takes a positive count per profile, and a profile is either "
                         "first_seed_only or in n_seeds")

    def deco(fn: Callable[[str], RunConfig]):
        if name in REGISTRY:
            raise ValueError(f"experiment {name!r} is registered twice")
        REGISTRY[name] = Experiment(name, name.split("/")[0], title, fn, dict(published or {}), notes, profiles,
                                    tuple(first_seed_only), n_seeds, procedure, tuple(also_in), why_not_everywhere)
        return fn

    return deco


def where_they_run(chapter: str) -> str:
    """One paragraph, generated from the registry, that the landing pages and notebooks show wherever they say which
    arms a profile leaves out: the chapter's experiments that do not run at every profile, grouped by where they run,
    each group with its registered reason; "" when every experiment runs everywhere."""
    groups: dict[tuple[tuple[str, ...], str], list[str]] = {}
    for e in REGISTRY.values():
        if e.chapter == chapter and set(e.profiles) != set(PROFILES):
            groups.setdefault((tuple(p for p in PROFILES if p in e.profiles), e.why_not_everywhere), []).append(e.name)
    if not groups:
        return ""
    parts = []
    for (profiles, why), names in groups.items():
        missing = [p for p in PROFILES if p not in profiles]
        where = ("at no profile" if not profiles else f"at {_ticks(profiles)} only" if len(profiles) <= len(missing)
                 else f"at every profile but {_ticks(missing)}")
        parts.append(f"{', '.join(f'`{n}`' for n in names)} run{'s' if len(names) == 1 else ''} {where}"
                     + (f" ({why})" if why else ""))
    return "Where the arms run (from the experiment registry): " + "; ".join(parts) + "."


def _ticks(profiles) -> str:
    names = [f"`{p}`" for p in profiles]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


__all__ = ["CPU_RULE", "Experiment", "HEADLINES", "Headline", "PROCEDURES", "Procedure", "REGISTRY", "TRAINED_NOTHING", "get", "TRAINER",
           "headline", "headline_arms", "headlines", "is_headline", "procedure", "register", "register_procedure",
           "trained_nothing", "where_they_run"]
