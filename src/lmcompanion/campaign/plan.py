"""The plan of the GPU campaign and its slots: what is left to run, in priority order, cut into slots of at most
:data:`DEFAULT_SLOT_MIN` estimated H100 minutes, each one command on a GPU machine lent for a short while.

**Steps are data.** Each :class:`Step` has a name, a kind (``check``, ``bench`` or ``run``), an estimated time on one
H100 (measured where an earlier slot measured it: :class:`lmcompanion.campaign.reports.Minutes`; else counted) and a
priority. The order (:func:`steps`): the GPT-2-small bench (the MFU figure), then every run the book reads at the
profile, with the seeds each arm is registered with (:func:`lmcompanion.experiments.plan`, the same runs the notebooks
read: at ``gpu`` five for the arms of the chapters' headline comparisons, as at ``cpu``, three for every other arm,
four for the arms of a claim of equality), in :data:`GROUPS` order: first the chapters' headline comparisons
(declared in the experiment registry), cheapest first, then the rest of the arms their verdict rows compare, then
each chapter's illustrating arms; last, one bench per model family (:data:`BENCH`), which only fill a slot's last
minutes.

**Slots** (:func:`slots`): what is not yet in the output folder (``book/recorded``: every slot starts from what is
committed there), in that order (a run a time limit cut off first), each slot as many steps as fit its minutes, led
by the CUDA-path check of the model families it trains that no earlier slot checked
(:mod:`lmcompanion.campaign.check`) and, in the first slot on a device, the measurement of its lanes
(:mod:`lmcompanion.campaign.lanes`). A slot trains its runs side by side in lanes, so its wall estimate counts their
minutes divided by the lanes' speed-up (measured, or assumed until measured, and said so). A bench of a chapter's
model comes last in a slot, only where its minutes are left. Each slot is one command, in one loan of a GPU machine.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from .. import chapters  # noqa: F401  (every chapter registers its rows: lmcompanion.claims)
from .. import claims, contents, experiments
from ..chapters.scale import write_up_passes_text
from ..config import check_profile
from ..data import corpora
from ..errors import LMCError
from ..experiments import PlannedRun
from ..run import RunConfig
from . import bench as bench_mod
from . import check as check_mod
from . import lanes as lanes_mod
from . import reports

DEFAULT_SLOT_MIN = 8.0  # estimated H100 minutes of one slot: one command of under 9 minutes of wall time
BENCH = bench_mod.BENCH


@dataclass(frozen=True)
class Group:
    """The arms of one comparison (or set of comparisons) of a chapter, trained together, each arm with its seeds as
    registered (three at gpu; four for the arms of a claim of equality)."""

    chapter: str
    label: str
    names: tuple[str, ...]
    tier: int  # 1: the chapter's headline comparison (the registry's); 2: the rest of its rows' arms; 3: illustrations


def _headline(chapter: str) -> Group:
    """The chapter's headline comparison (declared once, in the experiment registry) as a tier-1 group."""
    h = experiments.headlines(chapter)[0]
    return Group(chapter, h.label, h.arms, 1)


def _declared() -> tuple[Group, ...]:
    """Tiers 1 and 2 as the chapters declare them (``[campaign]`` in ``chapters/<name>/chapter.toml``), in their
    declared priority: each chapter's headline comparison (tier 1; the arms are the experiment registry's), then its
    other groups (tier 2; ``arms = "headline"`` for the headline arms, trained at five seeds)."""
    ranked = []
    for c in contents.chapters():
        if c.headline_priority is not None:
            ranked.append((c.headline_priority, _headline(c.name)))
        for g in c.groups:
            arms = experiments.headline_arms(c.name) if g.arms == "headline" else g.arms
            ranked.append((g.priority, Group(c.name, g.label, tuple(arms), 2)))
    priorities = [p for p, _ in ranked]
    if len(set(priorities)) != len(priorities):
        raise LMCError(f"two campaign groups declare the same priority: {sorted(priorities)} (chapter.toml files)")
    return tuple(g for _, g in sorted(ranked, key=lambda pg: pg[0]))


# In priority order, as the chapters declare it. Tier 1 first: each chapter's headline comparison, cheapest first
# (the estimated H100 minutes of its runs at gpu, five seeds per arm, runs they read included, are in the
# declarations' comments: `campaign --plan` prints them), so that the first slots decide as many headline claims as
# they can; then tier 2, cheapest first; then tier 3, each chapter's illustrating arms (:func:`_illustrations`). The
# formal chapter's claims are decided at the cpu profile already (its verdicts do not hinge on scale), so its runs
# wait for tier 2.
GROUPS: tuple[Group, ...] = _declared()
TIERS = {1: "the headline comparisons", 2: "the other arms of the chapters' verdict rows", 3: "the illustrating arms"}


def _illustrations(before: tuple[Group, ...]) -> tuple[Group, ...]:
    """Tier 3: each chapter's arms that no group before trains (its illustrating arms: figures, tables and the
    rows they show), chapter by chapter in the order of the headline comparisons."""
    taken = {n for g in before for n in g.names}
    out = []
    for chapter in dict.fromkeys(g.chapter for g in before):
        names = tuple(n for n in experiments.names(chapter) if n not in taken)
        if names:
            out.append(Group(chapter, f"the {chapter} chapter's illustrating arms", names, 3))
    return tuple(out)


GROUPS = GROUPS + _illustrations(GROUPS)


def _arm_claims(chapter: str) -> list[tuple[str, tuple[str, ...]]]:
    """(claim, arms) of every verdict row of a chapter that its trained arms decide (:func:`lmcompanion.claims.arm_claims`,
    the one shape every chapter declares its rows in)."""
    return claims.arm_claims(chapter)


def group_claims() -> dict[Group, tuple[str, ...]]:
    """The claims each group completes: those whose arms are all trained once it and the groups before it are."""
    done: set[str] = set()
    listed: set[str] = set()
    out = {}
    for g in GROUPS:
        done |= set(g.names)
        found = [text for text, arms in _arm_claims(g.chapter) if set(arms) <= done and text not in listed]
        listed |= set(found)
        out[g] = tuple(found)
    return out


@dataclass
class Step:
    name: str  # "check", "lanes", "bench/<what>", or the run's id (<name>[-<procedure>]-s<seed>@<config digest>)
    kind: str  # check | lanes | bench | run
    minutes: float  # estimated minutes on one H100 (measured where `measured`, else counted)
    priority: int  # 1-based position in the order
    run: PlannedRun | None = None  # the run trained (kind run) or benched (kind bench)
    group: Group | None = None  # kind run: the comparison it belongs to
    claims: tuple[str, ...] = ()  # claims whose runs are complete once this step is (the last run of a group)
    families: tuple[str, ...] = ()  # kind check: the model families whose compiled losses are compared with eager
    measured: bool = False  # the estimate is the mean of minutes measured by earlier slots on this device
    covers: tuple[PlannedRun, ...] = ()  # kind check: the slot's runs, whose models it checks
    torchrun: bool = False  # kind check: it runs the torchrun probe (the first check on a device)
    counted: float = 0.0  # the counted (or stated) estimate, kept beside a measured one


def wall(the_steps: Sequence[Step], speedup: float = 1.0) -> float:
    """The estimated wall minutes of ``the_steps`` in one slot: the check, the lanes' measurement and the benches one
    after another, the runs side by side in lanes whose aggregate throughput is ``speedup`` times one run's (but never
    less than the longest run alone)."""
    runs = [s.minutes for s in the_steps if s.kind == "run"]
    serial = sum(s.minutes for s in the_steps if s.kind != "run")
    return serial + (max(sum(runs) / speedup, max(runs)) if runs else 0.0)


@dataclass
class Slot:
    number: int  # 1 + the slots this device ran before (progress.json)
    steps: list[Step] = field(default_factory=list)
    speedup: float = 1.0  # the aggregate speed-up of its lanes (lmcompanion.campaign.lanes)

    @property
    def minutes(self) -> float:
        """Its estimated wall minutes (:func:`wall`)."""
        return wall(self.steps, self.speedup)

    @property
    def runs(self) -> list[Step]:
        return [s for s in self.steps if s.kind == "run"]


def slot_device(profile: str, device: str) -> str:
    """The device a slot at ``profile`` runs on, whose measured minutes and reports count: ``device`` where given;
    for ``auto``, the CPU at the smoke profile and CUDA otherwise (a plan made on a CPU is for the GPU machine)."""
    if device != "auto":
        return device
    return "cpu" if check_profile(profile) == "smoke" else "cuda"


def bench_step(run: PlannedRun, profile: str) -> Step:
    """The campaign's step that benches ``run`` (one of :func:`~lmcompanion.campaign.bench.benched`), with its stated
    estimate; :func:`steps` numbers its priority."""
    return Step(bench_mod.step_name(run), "bench", bench_mod.minutes(run.config, profile), 0, run)


def steps(profile: str = "gpu", *, device: str = "auto", seeds: int | None = None) -> list[Step]:
    """Every step of the campaign at ``profile`` but the check (each slot has its own), in priority order (see the
    module doc), with counted estimates."""
    check_profile(profile)
    benches = bench_mod.benched(profile, device)
    first = bench_step(benches[0], profile)
    runs: list[Step] = []
    seen: set[str] = set()
    decided = group_claims()
    for g in GROUPS:
        group_runs = [
            r for r in experiments.plan(list(g.names), profile, seeds=seeds, device=device) if r.id not in seen
        ]
        seen |= {r.id for r in group_runs}
        for r in group_runs:
            runs.append(Step(r.id, "run", r.minutes(), 0, r, g))
        if group_runs:
            runs[-1].claims = decided[g]
    tail = [bench_step(r, profile) for r in benches[1:]]
    out = [first, *runs, *tail]
    for i, s in enumerate(out):
        s.priority = i + 1
        s.counted = s.minutes
    return out


def measured(all_steps: Sequence[Step], minutes: reports.Minutes, device: str) -> None:
    """Put the minutes earlier slots measured on ``device`` in place of the counted estimates (in place)."""
    for s in all_steps:
        key = reports.run_key(s.run) if s.kind == "run" else f"{s.name}@{s.run.config.hash()}"
        found = minutes.get(key, device)
        if found is not None:
            s.minutes, s.measured = found, True


def check_minutes(minutes: reports.Minutes | None, device: str, compiled: int, torchrun: bool) -> tuple[float, bool]:
    """(the estimated minutes of a check comparing ``compiled`` families and, with ``torchrun``, running the torchrun
    probe; whether every part of it was measured by an earlier slot on ``device``)."""
    parts = [("check/base", check_mod.CHECK_BASE_S, 1), ("check/compile", check_mod.CHECK_COMPILE_S, compiled)]
    if torchrun:
        parts.append(("check/torchrun", check_mod.CHECK_TORCHRUN_S, 1))
    total, all_measured = 0.0, True
    for key, stated_s, n in parts:
        got = minutes.get(key, device) if minutes is not None else None
        all_measured &= got is not None
        total += n * (got if got is not None else stated_s / 60)
    return total, all_measured


def _family(run: PlannedRun) -> str:
    return run.config.model.family


def check_step(
    runs: Sequence[PlannedRun], checked: set[str], torchrun_done: bool, minutes: reports.Minutes | None, device: str
) -> Step | None:
    """The check that leads a slot training ``runs``: their model families that no earlier check covered (None where
    every family is covered): compile-vs-eager for the compiled ones among them (the first where none compiles)."""
    new = [r for r in runs if _family(r) not in checked]
    if not new:
        return None
    families = tuple(dict.fromkeys(_family(r) for r in new if r.config.train.compile)) or (_family(new[0]),)
    est, was_measured = check_minutes(minutes, device, len(families), not torchrun_done)
    return Step(
        "check",
        "check",
        est,
        0,
        families=families,
        measured=was_measured,
        covers=tuple(new),
        torchrun=not torchrun_done,
        counted=check_minutes(None, device, len(families), not torchrun_done)[0],
    )


def slots(
    pending: Sequence[Step],
    budget_min: float = DEFAULT_SLOT_MIN,
    *,
    checked: set[str] | None = None,
    torchrun_done: bool = False,
    minutes: reports.Minutes | None = None,
    device: str = "cuda",
    first: int = 1,
    speedup: float = 1.0,
    measure: Step | None = None,
) -> list[Slot]:
    """``pending`` (steps not done, in priority order) cut into slots of at most ``budget_min`` estimated wall
    minutes (:func:`wall`: the runs side by side in lanes of aggregate ``speedup``). A slot takes the GPT-2-small
    bench and the runs in order while they fit (with the check of the families they add, and in the first slot that
    trains runs the lanes' ``measure`` step where given), then, in the minutes left, the chapters' benches that fit. A single step
    longer than the budget makes a slot of its own (the plan says so)."""
    checked = set(checked or ())
    core = [s for s in pending if not (s.kind == "bench" and s is not _gpt2(pending))]
    tail = [s for s in pending if s.kind == "bench" and s is not _gpt2(pending)]
    out: list[Slot] = []
    while core or tail:
        head = [measure] if measure is not None else []  # in the first slot that trains runs
        taken: list[Step] = []
        check = None
        while core:
            runs = [s.run for s in taken + [core[0]] if s.kind == "run"]
            trial = check_step(runs, checked, torchrun_done, minutes, device) if runs else None
            total = wall(head + taken + [core[0]] + ([trial] if trial else []), speedup)
            if total > budget_min + 1e-9 and taken:
                break
            taken.append(core.pop(0))
            check = trial
        for b in list(tail):
            if wall(head + taken + [b] + ([check] if check else []), speedup) <= budget_min + 1e-9 or not taken:
                taken.append(b)
                tail.remove(b)
        if any(s.kind == "run" for s in taken):
            measure = None
        else:
            head = []
        slot = Slot(first + len(out), ([check] if check else []) + head + taken, speedup)
        if check is not None:
            checked |= {_family(r) for r in check.covers}
            torchrun_done = True
        out.append(slot)
    return out


@dataclass
class Plan:
    """What is left at a profile on a device, from the output folder: its slots, and what is done or failed."""

    profile: str
    device: str  # the device of the slots (slot_device)
    all_steps: list[Step]
    slots: list[Slot]
    done: list[Step]
    failed: list[Step]
    budget_min: float
    lanes: int = 1  # the runs of a slot side by side
    speed: lanes_mod.Speed = field(default_factory=lambda: lanes_mod.Speed({1: 1.0}, False))


def bench_done(step: Step, report: dict | None, device: str) -> bool:
    entry = ((report or {}).get("results") or {}).get(step.name) or {}
    # the hash of the config on the slot's device: a plan made here, on a CPU, for the GPU machine builds its
    # configs for this machine (the device is in the config)
    return (report or {}).get("device") == device and entry.get("config_hash") == step.run.config.replace(
        device=device
    ).hash()


def lanes_of(requested: int | None, speed: lanes_mod.Speed, device: str) -> int:
    """The lanes a slot runs: ``requested`` (``--lanes``), else the number the measured lane speed favours (the
    assumed one until measured); on a CPU no more than its cores."""
    n = requested or speed.best
    return n if device == "cuda" or requested else min(n, max(1, os.cpu_count() or 1))


def plan(
    profile: str = "gpu",
    *,
    device: str = "auto",
    seeds: int | None = None,
    out: Path | None = None,
    budget_min: float = DEFAULT_SLOT_MIN,
    retry_failed: bool = False,
    lanes: int | None = None,
) -> Plan:
    """The slots left at ``profile``: every step (:func:`steps`) not yet done in ``out`` (a run recorded with the
    config the plan gives it today; a bench in ``bench.json``, on this device), nor failed there (unless
    ``retry_failed``), a run that a time limit cut off first, cut into slots (:func:`slots`) with the minutes
    measured by earlier slots on the device and the runs side by side in ``lanes`` (:func:`lanes_of`) at their
    speed-up (``lanes.json``, else assumed), each slot's check covering the families that ``check.json`` does not,
    the first slot that trains runs measuring the lanes where no earlier slot did on the device, numbered after the slots
    ``progress.json`` records on the device. Without ``out``, nothing is done yet."""
    on = slot_device(profile, device)
    all_steps = steps(profile, device=device, seeds=seeds)
    done, failed, pending = [], [], []
    checked, torchrun_done, minutes, earlier, status = set(), False, None, 0, {}
    speed = lanes_mod.speed(out, profile, on)
    n_lanes = lanes_of(lanes, speed, on)
    if out is not None:
        minutes = reports.Minutes(out, profile)
        measured(all_steps, minutes, on)
        bench_report = reports.read_report(out, profile, "bench.json")
        checked, torchrun_done = check_mod.checked(reports.read_report(out, profile, "check.json"), on)
        progress = reports.read_report(out, profile, "progress.json") or {}
        earlier = sum(1 for c in progress.get("commands", []) if isinstance(c, dict) and c.get("device") == on)
        status = progress.get("steps", {})
    for s in all_steps:
        if out is not None and (
            reports.is_recorded(out, s.run) if s.kind == "run" else bench_done(s, bench_report, on)
        ):
            done.append(s)
        elif out is not None and not retry_failed and (status.get(s.name) or {}).get("status") == "failed":
            failed.append(s)
        else:
            pending.append(s)
    # a run cut off by a time limit is the first of the next slot (its lanes' runs too: each was cut off whole)
    pending.sort(key=lambda s: (status.get(s.name) or {}).get("status") != "interrupted")
    stated = lanes_mod.MEASURE_MIN
    measure = None if speed.measured else Step("lanes", "lanes", stated, 0, counted=stated)
    cut = slots(
        pending,
        budget_min,
        checked=checked,
        torchrun_done=torchrun_done,
        minutes=minutes,
        device=on,
        first=earlier + 1,
        speedup=speed.at(n_lanes),
        measure=measure,
    )
    return Plan(profile, on, all_steps, cut, done, failed, budget_min, n_lanes, speed)


def _gpt2(pending: Sequence[Step]) -> Step | None:
    return next((s for s in pending if s.kind == "bench" and s.name == "bench/gpt2_small"), None)


def passes(cfg: RunConfig) -> float | None:
    """Passes over the training data a run makes (:func:`lmcompanion.experiments.passes`), where its text is here (a
    local copy or the generated corpus); None where it would have to be downloaded."""
    if any(not corpora.source_of(c).startswith(("local:", "generated")) for c in corpora_of(cfg)):
        return None
    return experiments.passes(cfg)


def corpora_of(cfg: RunConfig) -> list[str]:
    """The corpora a run's data reads (a retrieval run: its own, whose fingerprint is in its key, and its embedder's
    stories); none for data made in memory."""
    d = cfg.data
    found = [d.corpus] if hasattr(d, "corpus") else []
    if hasattr(d, "embedder"):
        found.append(experiments.get(d.embedder).build(d.embedder_profile).data.corpus)
    return list(dict.fromkeys(found))


def print_plan(the_plan: Plan, *, out=print, with_passes: bool = True) -> None:
    """Every slot with its steps, each with its estimated H100 minutes, whether that estimate is measured or counted,
    its running wall total within the slot (runs side by side in the plan's lanes; and a run's passes over its data),
    the claims each comparison completes, and a ``slot N total`` line per slot; then the lanes assumed or measured,
    and the loans of a GPU machine the whole plan takes (one slot, one command, per loan)."""
    the_slots, budget_min, profile = the_plan.slots, the_plan.budget_min, the_plan.profile
    all_steps = [s for slot in the_slots for s in slot.steps]
    n_measured = sum(s.measured for s in all_steps)
    out(
        f"campaign at the {profile} profile: {len(the_slots)} slot(s) of at most {budget_min:g} estimated H100 min "
        f"each, one command each; {len(the_plan.done)} step(s) done already (the output folder), "
        f"{len(the_plan.failed)} failed; estimates: {n_measured} measured by earlier slots, "
        f"{len(all_steps) - n_measured} counted (lmcompanion.estimate for runs, stated allowances for the check, the "
        "lanes and the benches)"
    )
    out(
        f"lanes: {the_plan.speed.describe(the_plan.lanes)}; a slot's runs train side by side, so its wall estimate "
        "is its other steps plus its runs' minutes (each a run alone) over that speed-up"
    )
    for slot in the_slots:
        out("")
        out(f"slot {slot.number}{' (next: the README command runs it)' if slot is the_slots[0] else ''}")
        out(f"{'#':>3}  {'kind':<5}  {'step':<58}  {'estimate':>10}  {'source':<8}  {'cum.':>6}  {'passes':>8}")
        for i, s in enumerate(slot.steps):
            p = passes(s.run.config) if with_passes and s.kind == "run" else None
            extra = f"  {p:8.1f}" if p is not None else ""
            name = (
                s.name
                if s.kind != "check"
                else (
                    f"check {'+'.join(dict.fromkeys(_family(r) for r in s.covers))} (compile vs eager: {'+'.join(s.families)})"
                )
            )
            if s.kind == "lanes":
                name = f"lanes (aggregate tokens/s at {'/'.join(map(str, lanes_mod.LEVELS))} lanes)"
            out(
                f"{s.priority if s.priority else '-':>3}  {s.kind:<5}  {name:<58}  {s.minutes:6.2f} min  "
                f"{'measured' if s.measured else 'counted':<8}  {wall(slot.steps[: i + 1], slot.speedup):6.1f}{extra}"
            )
            for c in s.claims:
                out(f"{'':>16}completes the runs of: [{s.group.chapter}] {c}")
        kinds = {k: sum(1 for s in slot.steps if s.kind == k) for k in ("check", "bench", "run")}
        decided = sum(len(s.claims) for s in slot.steps)
        over = f" (OVER the slot's {budget_min:g} min: one step alone)" if slot.minutes > budget_min + 1e-9 else ""
        out(
            f"slot {slot.number} total {slot.minutes:.1f} min{over} ({kinds['check']} check, {kinds['bench']} "
            f"benches, {kinds['run']} runs in {the_plan.lanes} lane(s); completes the runs of {decided} claims)"
        )
    if not the_slots:
        out("nothing left: every step is done")
    out("")
    for line in loans(the_plan):
        out(line)
    if with_passes:
        rows = passes_table(all_steps)
        if rows:
            out(
                "passes over the training data, per experiment (here: the offline copies; the write-up's, estimated "
                "from its text's size):"
            )
            width = max(len(r["experiment"]) for r in rows)
            for r in rows:
                out(
                    f"  {r['experiment']:<{width}}  {r['tokens/run']:>13,} tokens/run  {r['passes']:>6.1f} passes"
                    f"  (write-up: {r['write-up']})"
                )


LOAN_MIN = 15  # device minutes of one loan of a GPU machine (README: its start, one command, idle and hand-back)


def loans(the_plan: Plan) -> list[str]:
    """How many loans the plan takes (one slot, one command of at most ``--max-minutes 8.5``, per loan of
    :data:`LOAN_MIN` device minutes), and the loan by which each tier of runs is complete."""
    n = len(the_plan.slots)
    lines = [
        f"loans: {n} loan(s) of a GPU machine ({LOAN_MIN} device minutes each, one slot per loan: one command "
        f"of at most 8.5 minutes) for everything left, at {the_plan.lanes} lane(s) "
        f"({'measured' if the_plan.speed.measured else 'ASSUMED'} speed-up "
        f"{the_plan.speed.at(the_plan.lanes):.2f}x)"
    ]
    for tier, what in TIERS.items():
        last = [i for i, slot in enumerate(the_plan.slots, 1) for s in slot.runs if s.group and s.group.tier == tier]
        runs = sum(1 for slot in the_plan.slots for s in slot.runs if s.group and s.group.tier == tier)
        if last:
            lines.append(f"  {what} ({runs} runs left): complete after loan {max(last)} of {n}")
        else:
            lines.append(f"  {what}: nothing left")
    return lines


def passes_table(all_steps: Sequence[Step]) -> list[dict]:
    """Per experiment of the campaign's runs (first seed): training tokens per run, passes over its training data here
    (:func:`passes`; left out where the data is not here) and the write-up's own passes (its data's
    ``write_up_passes``, from the paper profile's config)."""
    rows, seen = [], set()
    for s in all_steps:
        if s.kind != "run" or s.run.name in seen:
            continue
        seen.add(s.run.name)
        p = passes(s.run.config)
        if p is None:
            continue
        try:
            paper = experiments.config(s.run.name, "paper", device="cpu")
            write_up = write_up_passes_text(paper)
        except LMCError:
            write_up = "not known here"
        rows.append({"experiment": s.run.name, "tokens/run": s.run.config.tokens(), "passes": p, "write-up": write_up})
    return rows


__all__ = [
    "BENCH",
    "DEFAULT_SLOT_MIN",
    "GROUPS",
    "Group",
    "LOAN_MIN",
    "Plan",
    "Slot",
    "TIERS",
    "bench_done",
    "check_minutes",
    "check_step",
    "corpora_of",
    "group_claims",
    "lanes_of",
    "loans",
    "measured",
    "passes",
    "passes_table",
    "plan",
    "print_plan",
    "slot_device",
    "slots",
    "steps",
    "wall",
    "Step",
]
