"""The one road from experiments to runs: :func:`plan` turns (a chapter or experiment names, a profile, seeds) into
the list of runs to train or read, each with its procedure, its settings and the runs it reads first.

Every caller uses it: the notebooks (``Settings.arms`` in :mod:`lmcompanion.nb`), ``train``, ``train-chapter`` and
``bench`` on the command line, the recorded-runs lookup and the cost tables. What a run is planned with comes from
where its experiment is registered (:mod:`.registry`): the profiles it runs at, whether it runs the first seed only,
and its procedure. So the command a GPU session uses trains exactly the runs the notebooks read.

Which protocol an arm is trained and read at is answered in one place: :func:`arm` gives, for an experiment and a
profile, whether it illustrates there, the protocols it trains at (:class:`Protocol`: its own, and for some headline
arms also the illustrations') and the seeds and steps of a run at each; :func:`page_protocol` gives the protocol a page
or row that shows several arms together reads them at. Every function that plans a run takes its :class:`Protocol`.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import math
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from .. import estimate, signals
from ..config import PROFILES, apply_overrides, check_profile, suggest
from ..errors import ConfigError
from ..run import RunConfig, spec
from ..train.store import Run, RunStore, run_id
from ..train.trainer import CKPT, check_device
from .headline_comparisons import headline_arms, illustration_steps
from .registry import REGISTRY, Procedure, get, procedure

# Seeds per arm unless a notebook's n_seeds (or the CLI's --seeds) says otherwise. Three is the fewest with which a
# comparison can be decisive at the 5% level (the prologue's verdict rule); the smoke profile only checks that
# everything runs. The write-ups ran one seed per arm: n_seeds=1 at the paper profile reproduces that, at a third of
# the cost, but can decide no comparison. At ``cpu`` the headline comparisons' arms (declared in the registry) run
# five, so that a decision does not rest on the order of one seed (the smallest p is 1/252, not 1/20), and every
# other arm runs one: it illustrates (its figures and tables), and its rows say that no test is possible
# (:data:`ILLUSTRATION_SEEDS`). So do the arms of a headline measured unable to learn at ``cpu`` at an affordable cost
# (``cpu_illustrates`` in the registry: the retrieval matchers).
DEFAULT_SEEDS = {"smoke": 2, "cpu": 5, "gpu": 3, "paper": 3}
ILLUSTRATION_SEEDS = {"cpu": 1}  # profile -> seeds of an arm that decides no headline comparison there
# At ``gpu`` the headline comparisons' arms run five seeds, as at ``cpu``, and every other arm the profile's three
# (four for the arms of a claim of equality, as registered): there every arm can be tested, and the GPU campaign trains
# the whole book (issue 49).
HEADLINE_SEEDS = {"gpu": 5}  # profile -> seeds of a headline arm, where that is more than its count as registered
# In the chapters that declare it (``cpu_illustration_steps`` in the registry's headlines), an illustrating run also
# trains for a fraction of its protocol's steps at ``cpu``; a page or verdict row that puts a headline arm beside
# illustrating ones reads the headline arm's run at the illustrations' protocol (its steps and seed:
# :func:`page_protocol`), which the chapter's plan trains for that (:attr:`ArmProtocol.trains_at`, :func:`plan`), so
# that no page compares runs of different lengths.


class Protocol(enum.Enum):
    """The protocol a run is trained and read at: its steps and seeds."""

    OWN = "own"  # the arm's own, as registered (where an arm illustrates, its own is the illustrations')
    ILLUSTRATIONS = "illustrations"  # its chapter's illustrations' (ILLUSTRATION_SEEDS, illustration_steps)


@dataclass(frozen=True)
class ArmProtocol:
    """Experiment ``name`` at ``profile``: whether it illustrates there, the protocols it trains at, and the seeds
    and the share of its steps of a run at each (:func:`arm`). One place answers them for every caller: the plan,
    the notebooks' pages (:func:`page_protocol`), the verdict rows and the landing pages."""

    name: str
    profile: str

    @property
    def illustrates(self) -> bool:
        """Whether it only illustrates: it decides no headline comparison, at a profile whose other arms illustrate
        (:data:`ILLUSTRATION_SEEDS`); its own protocol is then the illustrations'."""
        return self.profile in ILLUSTRATION_SEEDS and self.name not in headline_arms(deciding_at=self.profile)

    def _at_illustrations(self, protocol: Protocol) -> bool:
        """Whether a run at ``protocol`` takes the illustrations' seeds and steps (only where the profile has them)."""
        return self.profile in ILLUSTRATION_SEEDS and (protocol is Protocol.ILLUSTRATIONS or self.illustrates)

    @property
    def trains_at(self) -> tuple[Protocol, ...]:
        """The protocols its runs are trained at: its own; a headline arm whose chapter's illustrations take fewer
        steps at the profile also theirs, a shorter run read where it is shown beside them."""
        if not self.illustrates and self.steps(Protocol.ILLUSTRATIONS) < 1:
            return (Protocol.OWN, Protocol.ILLUSTRATIONS)
        return (Protocol.OWN,)

    def seeds(self, protocol: Protocol = Protocol.OWN) -> tuple[int, ...]:
        """The seeds it runs with at ``protocol``: the profile's default count from 0 (or the count the experiment
        declares for the profile; a headline arm at least :data:`HEADLINE_SEEDS` where the profile has it), only
        seed 0 where the experiment runs the first seed only, or the illustrations' seeds
        (:data:`ILLUSTRATION_SEEDS`); none where it does not run at the profile."""
        exp = get(self.name)
        if not exp.runs_at(self.profile):
            return ()
        if self._at_illustrations(protocol):
            return tuple(range(ILLUSTRATION_SEEDS[self.profile]))
        if self.profile in exp.first_seed_only:
            return (0,)
        n = exp.n_seeds.get(self.profile, DEFAULT_SEEDS[self.profile])
        if self.name in headline_arms(deciding_at=self.profile):
            n = max(n, HEADLINE_SEEDS.get(self.profile, n))
        return tuple(range(n))

    def steps(self, protocol: Protocol = Protocol.OWN) -> float:
        """The fraction of the steps its experiment is built with that a run at ``protocol`` takes (below 1 at the
        illustrations' protocol of a chapter that declares it: :func:`illustration_steps`)."""
        return illustration_steps(get(self.name).chapter, self.profile) if self._at_illustrations(protocol) else 1.0


def arm(name: str, profile: str) -> ArmProtocol:
    """Experiment ``name``'s protocols at ``profile`` (:class:`ArmProtocol`)."""
    get(name)
    return ArmProtocol(name, check_profile(profile))


def page_protocol(names: Sequence[str], profile: str) -> Protocol:
    """The protocol a page or row that shows ``names`` together reads them at: the illustrations' where one of them
    illustrates and its own protocol takes fewer steps (its chapter's illustrations do), so that no page compares runs
    of different lengths (a headline arm is then read from its run at that protocol: :attr:`ArmProtocol.trains_at`);
    else each arm's own."""
    return Protocol.ILLUSTRATIONS if any(arm(n, profile).steps() < 1 for n in names) else Protocol.OWN


MIN_EVALS = 5  # the fewest evaluations a shortened run makes (steps_scaled)


def steps_scaled(train: Any, fraction: float) -> Any:
    """A training config over ``fraction`` of its steps (rounded up), its schedule's points (warmup, decay horizon)
    at the same fractions of the run, so the schedule keeps its shape; evaluations, logs and checkpoints keep their
    spacing in steps, so a shorter run is estimated as often per step as a longer one (and fewer times in all), but
    at least :data:`MIN_EVALS` times, so that its curves keep a shape."""
    if fraction == 1:
        return train
    steps = max(2, math.ceil(train.max_steps * fraction))

    def part(n: int | None) -> int | None:  # a point of the schedule, at the same fraction of the run
        return n if not n else max(1, math.floor(n * steps / train.max_steps + 0.5))  # halves round up

    return dataclasses.replace(
        train,
        max_steps=steps,
        warmup_steps=part(train.warmup_steps),
        decay_steps=part(train.decay_steps),
        eval_interval=max(1, min(train.eval_interval, steps // MIN_EVALS)),
        log_interval=min(train.log_interval, steps),
        ckpt_interval=min(train.ckpt_interval, steps),
    )


@dataclass(frozen=True)
class PlannedRun:
    """One run of a plan: its config (seed and device included), how it is trained, and what it reads first."""

    config: RunConfig
    procedure: Procedure
    profile: str
    given: Any = None  # settings given in place of the procedure's own for the profile
    needs: tuple["PlannedRun", ...] = ()  # runs it reads, trained before it

    @functools.cached_property
    def settings(self) -> Any:
        """The procedure's settings (None for the shared trainer); computed when first asked for (a procedure's
        settings may need the data, e.g. the key of the run it reads: a plan needs neither data nor network)."""
        if self.given is not None or self.procedure.settings is None:
            return self.given
        return self.procedure.settings(self.config, self.profile)

    @property
    def name(self) -> str:
        return self.config.name

    @property
    def seed(self) -> int:
        return self.config.seed

    @property
    def id(self) -> str:
        """``<name>[-<procedure>]-s<seed>@<config digest>``: the form of the smoke references' keys."""
        return run_id(self.config, self.procedure.fn)

    def spec(self):
        """The run's identity (:class:`lmcompanion.run.RunSpec`): its key and the code and data fingerprints in it."""
        fn = self.procedure.fn
        return spec(self.config, *((f"{fn.__module__}.{fn.__qualname__}", self.settings) if fn else ()))

    def key(self) -> str:
        """The run's key (config, procedure and settings, data fingerprint, code): its folder in the store."""
        return self.spec().key

    def get(self, store: RunStore | None = None) -> Run | None:
        """The finished, intact run in the store (None when it must be trained)."""
        return (store or RunStore()).get(self.config, self.procedure.fn, self.settings)

    def train(
        self, store: RunStore | None = None, *, force: bool = False, progress: bool | None = None, callbacks=()
    ) -> Run:
        """The finished run: reused from the store, or trained (the runs it reads first, each reused if finished)."""
        store = store or RunStore()
        for need in self.needs:
            if need.get(store) is None:
                need.train(store, progress=progress)
        try:
            return store.run(
                self.config,
                procedure=self.procedure.fn,
                settings=self.settings,
                force=force,
                progress=progress,
                callbacks=callbacks,
            )
        except KeyboardInterrupt:  # a signal (lmcompanion.signals): say whether the run kept a checkpoint
            signals.note_run(store.path(self.config, self.procedure.fn, self.settings), CKPT)
            raise

    def minutes(self) -> float:
        """Estimated minutes on one H100 (:mod:`lmcompanion.estimate`; the procedure's own estimate where it has
        one), this run only."""
        if self.procedure.minutes is not None:
            return self.procedure.minutes(self.config, self.settings)
        return estimate.seconds(self.config) / 60


def chapter_names(chapter: str) -> list[str]:
    """The experiments a chapter's notebooks read: its own, and those of other chapters it declares it reads."""
    names = [n for n, e in REGISTRY.items() if e.chapter == chapter or chapter in e.also_in]
    if not names:
        known = sorted({e.chapter for e in REGISTRY.values()} | {c for e in REGISTRY.values() for c in e.also_in})
        raise ConfigError(
            f"unknown chapter {chapter!r}{suggest(chapter, known)}; chapters with experiments: {', '.join(known)}"
        )
    return names


def runs_at(name: str, profile: str) -> bool:
    """Whether experiment ``name`` runs at ``profile`` (as registered)."""
    return get(name).runs_at(check_profile(profile))


def seeds_of(
    name: str, profile: str, seeds: Sequence[int] | None = None, *, protocol: Protocol = Protocol.OWN
) -> tuple[int, ...]:
    """The seeds experiment ``name`` runs with at ``profile``: ``seeds`` when given (every arm gets them), else those
    of its runs at ``protocol`` (:meth:`ArmProtocol.seeds`: its own as registered, or the illustrations', which a
    headline arm also has at ``cpu``). None where it does not run at the profile."""
    if not get(name).runs_at(check_profile(profile)):
        return ()
    return tuple(seeds) if seeds is not None else arm(name, profile).seeds(protocol)


def resolve_device(device: str, profile: str) -> str:
    """'auto' -> 'cuda' when a GPU is visible, else 'cpu'; the smoke profile always runs on the CPU."""
    import torch

    if device not in ("auto", "cpu", "cuda"):
        raise ConfigError(f"unknown device {device!r}; valid: auto, cpu, cuda")
    if device == "auto":
        return "cuda" if profile != "smoke" and torch.cuda.is_available() else "cpu"
    check_device(device)
    return device


def config(
    name: str,
    profile: str = "cpu",
    *,
    seed: int = 0,
    device: str = "auto",
    overrides: Mapping[str, object] | None = None,
    protocol: Protocol = Protocol.OWN,
) -> RunConfig:
    """The run config of experiment ``name`` at ``profile``, with a seed, a device and dotted-key overrides
    (applied together, then validated; a ``device`` override is checked like the ``device`` argument). A run at
    ``protocol`` takes its fraction of the steps (:meth:`ArmProtocol.steps`, :func:`steps_scaled`: the
    illustrations' at ``cpu`` in the chapters that declare it); an override of the steps still wins."""
    check_profile(profile)
    overrides = dict(overrides or {})
    if "device" in overrides:
        device = str(overrides.pop("device"))
    cfg = get(name).build(profile)
    if getattr(cfg, "train", None) is not None:
        cfg = dataclasses.replace(cfg, train=steps_scaled(cfg.train, arm(name, profile).steps(protocol)))
    cfg = dataclasses.replace(cfg, seed=seed, device=resolve_device(device, profile))
    return apply_overrides(cfg, overrides)


def planned(
    name: str,
    profile: str,
    seed: int,
    *,
    device: str = "auto",
    overrides: Mapping[str, object] | None = None,
    settings: Any = None,
    protocol: Protocol = Protocol.OWN,
) -> PlannedRun:
    """One run of experiment ``name``: its config at ``profile`` with ``seed`` at ``protocol`` (see :func:`config`),
    its procedure and settings (the procedure's own for the profile unless ``settings`` is given), and the runs it
    reads."""
    exp = get(name)
    cfg = config(name, profile, seed=seed, device=device, overrides=overrides, protocol=protocol)
    proc = procedure(exp.procedure)
    needs = tuple(_needed(c, proc, profile) for c in (proc.needs(cfg) if proc.needs else []))
    return PlannedRun(cfg, proc, profile, settings, needs)


def _needed(cfg: RunConfig, proc: Procedure, profile: str) -> PlannedRun:
    """A run another run reads: trained by the procedure of its own experiment when that is registered (it always is:
    embedders are the mixer chapter's runs), with its config as the reader's procedure built it."""
    exp = REGISTRY.get(cfg.name)
    own = procedure(exp.procedure) if exp is not None else procedure("trainer")
    if own.fn is not None:
        raise ConfigError(
            f"{proc.name} reads runs of {cfg.name}, which is trained by {own.name}: only runs of the "
            "shared trainer can be read by another run"
        )
    return PlannedRun(cfg, own, profile)


def plan(
    what: str | Sequence[str],
    profile: str = "cpu",
    *,
    seeds: int | Sequence[int] | None = None,
    device: str = "auto",
    overrides: Mapping[str, object] | None = None,
    first_seed: int = 0,
    needs: bool = True,
    protocol: Protocol = Protocol.OWN,
) -> list[PlannedRun]:
    """The runs of a chapter (``what`` a chapter name) or of experiments (a list of names) at ``profile``.

    ``seeds``: None for each experiment's seeds as registered (the profile's default count, or the first seed only);
    a count ``n`` (seeds ``first_seed`` .. ``first_seed + n - 1``) or a list of seeds for every experiment. Experiments
    that do not run at the profile are left out. Runs come seed by seed (every experiment's first seed, then every
    second seed, ...), so a cut-off session covers every arm first; with ``needs`` the runs a run reads come before
    it, once.

    ``protocol``: each experiment's own (as registered) or the illustrations' (:class:`Protocol`). A chapter's plan
    (``what`` a chapter name, at its own protocol) has every run its arms train: after them, the shorter runs its
    headline arms also train at the illustrations' protocol, for the pages that show them beside illustrating arms
    (:attr:`ArmProtocol.trains_at`). Notebooks ask for a page's arms at :func:`page_protocol`.
    """
    check_profile(profile)
    names = chapter_names(what) if isinstance(what, str) else list(dict.fromkeys(what))
    for name in names:
        get(name)
    if isinstance(seeds, int):
        if seeds < 1:
            raise ConfigError(f"seeds must be a positive number of seeds, got {seeds}")
        seeds = range(first_seed, first_seed + seeds)
    per_name = {n: seeds_of(n, profile, seeds, protocol=protocol) for n in names}
    if seeds is None:  # as registered, counted from first_seed
        per_name = {n: tuple(s + first_seed for s in ss) for n, ss in per_name.items()}
    runs: dict[str, PlannedRun] = {}
    for i in range(max((len(s) for s in per_name.values()), default=0)):
        for name in names:
            if i >= len(per_name[name]):
                continue
            run = planned(name, profile, per_name[name][i], device=device, overrides=overrides, protocol=protocol)
            for need in run.needs if needs else ():
                runs.setdefault(need.id, need)
            runs.setdefault(run.id, run)
    if isinstance(what, str) and protocol is Protocol.OWN:
        short = [n for n in names if Protocol.ILLUSTRATIONS in arm(n, profile).trains_at and per_name[n]]
        for run in (
            plan(
                short,
                profile,
                seeds=seeds,
                device=device,
                overrides=overrides,
                first_seed=first_seed,
                needs=needs,
                protocol=Protocol.ILLUSTRATIONS,
            )
            if short
            else ()
        ):
            runs.setdefault(run.id, run)
    return list(runs.values())


def minutes_total(runs: Sequence[PlannedRun]) -> float:
    return sum(r.minutes() for r in runs)


__all__ = [
    "DEFAULT_SEEDS",
    "HEADLINE_SEEDS",
    "ILLUSTRATION_SEEDS",
    "PROFILES",
    "ArmProtocol",
    "PlannedRun",
    "Protocol",
    "arm",
    "chapter_names",
    "config",
    "minutes_total",
    "page_protocol",
    "plan",
    "planned",
    "resolve_device",
    "runs_at",
    "seeds_of",
    "steps_scaled",
]
