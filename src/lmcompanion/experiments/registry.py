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

Each chapter also declares, once, its **headline comparisons**
(:mod:`lmcompanion.experiments.headline_comparisons`). A chapter whose write-up trained nothing (the formal one) says
so (:func:`trained_nothing`): its verdicts then name no share of the write-up's tokens.
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


TRAINED_NOTHING: set[str] = set()  # chapters whose write-up reports no training run of its own


def get(name: str) -> Experiment:
    """The registered experiment ``name`` (an unknown name is an error listing the known ones)."""
    if name not in REGISTRY:
        raise ConfigError(
            f"unknown experiment {name!r}{suggest(name, REGISTRY)}; see `python -m lmcompanion list` "
            f"(known: {', '.join(REGISTRY)})"
        )
    return REGISTRY[name]


def trained_nothing(chapter: str) -> None:
    """Declare that ``chapter``'s write-up reports no training run (its runs are the book's own)."""
    TRAINED_NOTHING.add(chapter)


def register(
    name: str,
    *,
    title: str,
    published: Mapping[str, float] | None = None,
    notes: str = "",
    profiles: tuple[str, ...] | None = None,
    first_seed_only: tuple[str, ...] = (),
    n_seeds: Mapping[str, int] | None = None,
    procedure: str = TRAINER,
    also_in: tuple[str, ...] = (),
    why_not_everywhere: str = "",
):
    """Decorator: register ``fn(profile) -> RunConfig`` as experiment ``name``, with where and how it runs
    (``why_not_everywhere``: why it leaves out some profiles, which :func:`where_they_run` says)."""
    profiles = tuple(PROFILES) if profiles is None else tuple(profiles)
    n_seeds = dict(n_seeds or {})
    unknown = [p for p in (*profiles, *first_seed_only, *n_seeds) if p not in PROFILES]
    if unknown:
        raise ValueError(f"experiment {name!r} names unknown profiles {unknown}")
    if set(first_seed_only) & set(n_seeds) or not all(isinstance(n, int) and n >= 1 for n in n_seeds.values()):
        raise ValueError(
            f"experiment {name!r}: n_seeds takes a positive count per profile, and a profile is either "
            "first_seed_only or in n_seeds"
        )

    def deco(fn: Callable[[str], RunConfig]):
        if name in REGISTRY:
            raise ValueError(f"experiment {name!r} is registered twice")
        REGISTRY[name] = Experiment(
            name,
            name.split("/")[0],
            title,
            fn,
            dict(published or {}),
            notes,
            profiles,
            tuple(first_seed_only),
            n_seeds,
            procedure,
            tuple(also_in),
            why_not_everywhere,
        )
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
        where = (
            "at no profile"
            if not profiles
            else f"at {_ticks(profiles)} only"
            if len(profiles) <= len(missing)
            else f"at every profile but {_ticks(missing)}"
        )
        parts.append(
            f"{', '.join(f'`{n}`' for n in names)} run{'s' if len(names) == 1 else ''} {where}"
            + (f" ({why})" if why else "")
        )
    return "Where the arms run (from the experiment registry): " + "; ".join(parts) + "."


def _ticks(profiles) -> str:
    names = [f"`{p}`" for p in profiles]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


__all__ = [
    "Experiment",
    "PROCEDURES",
    "Procedure",
    "REGISTRY",
    "TRAINED_NOTHING",
    "get",
    "TRAINER",
    "procedure",
    "register",
    "register_procedure",
    "trained_nothing",
    "where_they_run",
]
