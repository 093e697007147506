"""The plan of the GPU campaign and its slots: what is left to run, in priority order, cut into slots of at most
:data:`DEFAULT_SLOT_MIN` estimated H100 minutes, each one command on a GPU machine lent for a short while.

**Steps are data.** Each :class:`Step` has a name, a kind (``check``, ``bench`` or ``run``), an estimated time on one
H100 (measured where an earlier slot measured it: :class:`lmcompanion.campaign.reports.Minutes`; else counted) and a
priority. The order (:func:`steps`): the GPT-2-small bench (the MFU figure), then the runs that decide each
chapter's headline claims, three seeds per arm (the seeds each arm is registered with, as
:func:`lmcompanion.experiments.plan` gives them: four for the arms of a claim of equality; the same runs the
notebooks read), in :data:`GROUPS` order: first the chapters' headline comparisons (declared in the experiment
registry), cheapest first, then the rest of their headline arms; last, one bench per model family (:data:`BENCH`),
which only fill a slot's last minutes.

**Slots** (:func:`slots`): what is not yet in the output folder (``book/recorded``: every slot starts from what is
committed there), in that order, each slot as many steps as fit its minutes, led by the CUDA-path check of the model
families it trains that no earlier slot checked (:mod:`lmcompanion.campaign.check`). A bench of a chapter's model
comes last in a slot, only where its minutes are left.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from .. import claims, experiments, nb
from ..chapters import ar_ed as ar_ed_chapter  # noqa: F401  (each chapter registers its rows: lmcompanion.claims)
from ..chapters import deepsight as deepsight_chapter  # noqa: F401
from ..chapters import formal_ed as formal_ed_chapter  # noqa: F401
from ..chapters import hourglass as hourglass_chapter  # noqa: F401
from ..chapters import mixer as mixer_chapter
from ..chapters import retrieval as retrieval_chapter  # noqa: F401
from ..config import check_profile
from ..data import corpora
from ..errors import LMCError
from ..experiments import PlannedRun
from ..run import RunConfig
from . import bench as bench_mod
from . import check as check_mod
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
    tier: int  # 1: the chapter's headline comparison (the registry's); 2: the rest of its headline arms


_RETRIEVAL_REST = ("retrieval/flat_d1024_c128", "retrieval/llama_d1024_c128", "retrieval/flat_d512_c32",
                   "retrieval/llama_d512_c32", "retrieval/flat_d512_c128", "retrieval/llama_d512_c128")


def _headline(chapter: str) -> Group:
    """The chapter's headline comparison (declared once, in the experiment registry) as a tier-1 group."""
    h = experiments.headlines(chapter)[0]
    return Group(chapter, h.label, h.arms, 1)


# In priority order. Tier 1 first: each chapter's headline comparison, cheapest first (the estimated H100 minutes of
# its seeds, runs they read included, are in the comments: `campaign --plan` prints them), so that the first slots
# decide as many headline claims as they can; then tier 2, cheapest first. The formal chapter's claims are decided at
# the cpu profile already (its verdicts do not hinge on scale), so its runs wait for tier 2.
GROUPS: tuple[Group, ...] = (
    _headline("mixer"),  # 1.5 min
    _headline("hourglass"),  # 3.2 min (four seeds per arm: a claim of equality)
    _headline("retrieval"),  # 4.8 min
    _headline("ar_ed"),  # 7.4 min
    _headline("deepsight"),  # 13.6 min
    Group("mixer", "flat against expanded mixers at d=256 and d=512", ("mixer/flat_d256", "mixer/expanded_d512"),
          2),  # 1.9 min
    Group("mixer", "the write-up's first comparison: the expanded mixer d=256 against Llama d=128",
          tuple(mixer_chapter.FIRST), 2),  # 3.7 min (four seeds per arm: a claim of equality)
    Group("deepsight", "no planning loss (against the MSE planning loss)", ("deepsight/no_loss",), 2),  # 7.0 min
    Group("ar_ed", "positional subtraction alone and no embedding loss", ("ar_ed/pos_sub", "ar_ed/no_loss"), 2),  # 7.5
    Group("formal_ed", "the ED-Transformer trained with AdamW and by the literal ED-Training",
          experiments.headline_arms("formal_ed"), 2),  # 7.8 min
    Group("retrieval", "matching at d=1024 with 127 candidates and at d=512", _RETRIEVAL_REST, 2),  # 12.5
)


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
    name: str  # "check", "bench/<what>", or the run's id (<name>[-<procedure>]-s<seed>@<config digest>)
    kind: str  # check | bench | run
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


@dataclass
class Slot:
    number: int  # 1 + the slots this device ran before (progress.json)
    steps: list[Step] = field(default_factory=list)

    @property
    def minutes(self) -> float:
        return sum(s.minutes for s in self.steps)

    @property
    def runs(self) -> list[Step]:
        return [s for s in self.steps if s.kind == "run"]


def slot_device(profile: str, device: str) -> str:
    """The device a slot at ``profile`` runs on, whose measured minutes and reports count: ``device`` where given;
    for ``auto``, the CPU at the smoke profile and CUDA otherwise (a plan made on a CPU is for the GPU machine)."""
    if device != "auto":
        return device
    return "cpu" if check_profile(profile) == "smoke" else "cuda"


def steps(profile: str = "gpu", *, device: str = "auto", seeds: int | None = None) -> list[Step]:
    """Every step of the campaign at ``profile`` but the check (each slot has its own), in priority order (see the
    module doc), with counted estimates."""
    check_profile(profile)
    benches = bench_mod.benched(profile, device)
    first = Step(bench_mod.step_name(benches[0]), "bench", bench_mod.minutes(benches[0].config, profile), 0, benches[0])
    runs: list[Step] = []
    seen: set[str] = set()
    decided = group_claims()
    for g in GROUPS:
        group_runs = [r for r in experiments.plan(list(g.names), profile, seeds=seeds, device=device)
                      if r.id not in seen]
        seen |= {r.id for r in group_runs}
        for r in group_runs:
            runs.append(Step(r.id, "run", r.minutes(), 0, r, g))
        if group_runs:
            runs[-1].claims = decided[g]
    tail = [Step(bench_mod.step_name(r), "bench", bench_mod.minutes(r.config, profile), 0, r) for r in benches[1:]]
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


def check_step(runs: Sequence[PlannedRun], checked: set[str], torchrun_done: bool,
               minutes: reports.Minutes | None, device: str) -> Step | None:
    """The check that leads a slot training ``runs``: their model families that no earlier check covered (None where
    every family is covered): compile-vs-eager for the compiled ones among them (the first where none compiles)."""
    new = [r for r in runs if _family(r) not in checked]
    if not new:
        return None
    families = tuple(dict.fromkeys(_family(r) for r in new if r.config.train.compile)) or (_family(new[0]),)
    est, was_measured = check_minutes(minutes, device, len(families), not torchrun_done)
    return Step("check", "check", est, 0, families=families, measured=was_measured, covers=tuple(new),
                torchrun=not torchrun_done, counted=check_minutes(None, device, len(families), not torchrun_done)[0])


def slots(pending: Sequence[Step], budget_min: float = DEFAULT_SLOT_MIN, *, checked: set[str] | None = None,
          torchrun_done: bool = False, minutes: reports.Minutes | None = None, device: str = "cuda",
          first: int = 1) -> list[Slot]:
    """``pending`` (steps not done, in priority order) cut into slots of at most ``budget_min`` estimated minutes.
    A slot takes the GPT-2-small bench and the runs in order while they fit (with the check of the families they add),
    then, in the minutes left, the chapters' benches that fit. A single step longer than the budget makes a slot of
    its own (the plan says so)."""
    checked = set(checked or ())
    core = [s for s in pending if not (s.kind == "bench" and s is not _gpt2(pending))]
    tail = [s for s in pending if s.kind == "bench" and s is not _gpt2(pending)]
    out: list[Slot] = []
    while core or tail:
        taken: list[Step] = []
        check = None
        while core:
            runs = [s.run for s in taken + [core[0]] if s.kind == "run"]
            trial = check_step(runs, checked, torchrun_done, minutes, device) if runs else None
            total = sum(s.minutes for s in taken) + core[0].minutes + (trial.minutes if trial else 0.0)
            if total > budget_min + 1e-9 and taken:
                break
            taken.append(core.pop(0))
            check = trial
        used = sum(s.minutes for s in taken) + (check.minutes if check else 0.0)
        for b in list(tail):
            if used + b.minutes <= budget_min + 1e-9 or not taken:
                taken.append(b)
                tail.remove(b)
                used += b.minutes
        slot = Slot(first + len(out), ([check] if check else []) + taken)
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


def bench_done(step: Step, report: dict | None, device: str) -> bool:
    entry = ((report or {}).get("results") or {}).get(step.name) or {}
    # the hash of the config on the slot's device: a plan made here, on a CPU, for the GPU machine builds its
    # configs for this machine (the device is in the config)
    return (report or {}).get("device") == device and entry.get("config_hash") == step.run.config.replace(
        device=device).hash()


def plan(profile: str = "gpu", *, device: str = "auto", seeds: int | None = None, out: Path | None = None,
         budget_min: float = DEFAULT_SLOT_MIN, retry_failed: bool = False) -> Plan:
    """The slots left at ``profile``: every step (:func:`steps`) not yet done in ``out`` (a run recorded with the
    config the plan gives it today; a bench in ``bench.json``, on this device), nor failed there (unless
    ``retry_failed``), cut into slots (:func:`slots`) with the minutes measured by earlier slots on the device, each
    slot's check covering the families that ``check.json`` does not, numbered after the slots ``progress.json``
    records on the device. Without ``out``, nothing is done yet."""
    on = slot_device(profile, device)
    all_steps = steps(profile, device=device, seeds=seeds)
    done, failed, pending = [], [], []
    checked, torchrun_done, minutes, earlier = set(), False, None, 0
    if out is not None:
        minutes = reports.Minutes(out, profile)
        measured(all_steps, minutes, on)
        bench_report = reports.read_report(out, profile, "bench.json")
        checked, torchrun_done = check_mod.checked(reports.read_report(out, profile, "check.json"), on)
        progress = reports.read_report(out, profile, "progress.json") or {}
        earlier = sum(1 for c in progress.get("commands", []) if isinstance(c, dict) and c.get("device") == on)
        status = progress.get("steps", {})
    for s in all_steps:
        if out is not None and (reports.is_recorded(out, s.run) if s.kind == "run" else
                                bench_done(s, bench_report, on)):
            done.append(s)
        elif out is not None and not retry_failed and (status.get(s.name) or {}).get("status") == "failed":
            failed.append(s)
        else:
            pending.append(s)
    cut = slots(pending, budget_min, checked=checked, torchrun_done=torchrun_done, minutes=minutes, device=on,
                first=earlier + 1)
    return Plan(profile, on, all_steps, cut, done, failed, budget_min)


def _gpt2(pending: Sequence[Step]) -> Step | None:
    return next((s for s in pending if s.kind == "bench" and s.name == "bench/gpt2_small"), None)


def passes(cfg: RunConfig) -> float | None:
    """Passes over the training data a run makes (:func:`lmcompanion.nb.passes`), where its text is here (a local
    copy or the generated corpus); None where it would have to be downloaded."""
    if any(not corpora.source_of(c).startswith(("local:", "generated")) for c in corpora_of(cfg)):
        return None
    return nb.passes(cfg)


def corpora_of(cfg: RunConfig) -> list[str]:
    """The corpora a run's data reads (a retrieval run: its own, whose fingerprint is in its key, and its embedder's
    stories); none for data made in memory."""
    d = cfg.data
    found = [d.corpus] if hasattr(d, "corpus") else []
    if hasattr(d, "embedder"):
        found.append(experiments.get(d.embedder).build(d.embedder_profile).data.corpus)
    return list(dict.fromkeys(found))


def print_plan(the_slots: Sequence[Slot], budget_min: float, profile: str, *, done: int = 0, failed: int = 0,
               out=print, with_passes: bool = True) -> None:
    """Every slot with its steps, each with its estimated H100 minutes, whether that estimate is measured or counted,
    its running total within the slot (and a run's passes over its data), the claims each comparison decides, and a
    ``slot N total`` line per slot."""
    all_steps = [s for slot in the_slots for s in slot.steps]
    n_measured = sum(s.measured for s in all_steps)
    out(f"campaign at the {profile} profile: {len(the_slots)} slot(s) of at most {budget_min:g} estimated H100 min "
        f"each, one command each; {done} step(s) done already (the output folder), {failed} failed; estimates: "
        f"{n_measured} measured by earlier slots, {len(all_steps) - n_measured} counted (lmcompanion.estimate for runs, "
        "stated allowances for the check and the benches)")
    for slot in the_slots:
        out("")
        out(f"slot {slot.number}{' (next: the README command runs it)' if slot is the_slots[0] else ''}")
        out(f"{'#':>3}  {'kind':<5}  {'step':<58}  {'estimate':>10}  {'source':<8}  {'cum.':>6}  {'passes':>8}")
        cum = 0.0
        for s in slot.steps:
            cum += s.minutes
            p = passes(s.run.config) if with_passes and s.kind == "run" else None
            extra = f"  {p:8.1f}" if p is not None else ""
            name = s.name if s.kind != "check" else (
                f"check {'+'.join(dict.fromkeys(_family(r) for r in s.covers))} (compile vs eager: {'+'.join(s.families)})")
            out(f"{s.priority if s.priority else '-':>3}  {s.kind:<5}  {name:<58}  {s.minutes:6.2f} min  "
                f"{'measured' if s.measured else 'counted':<8}  {cum:6.1f}{extra}")
            for c in s.claims:
                out(f"{'':>16}completes the runs of: [{s.group.chapter}] {c}")
        kinds = {k: sum(1 for s in slot.steps if s.kind == k) for k in ("check", "bench", "run")}
        decided = sum(len(s.claims) for s in slot.steps)
        over = f" (OVER the slot's {budget_min:g} min: one step alone)" if slot.minutes > budget_min + 1e-9 else ""
        out(f"slot {slot.number} total {slot.minutes:.1f} min{over} ({kinds['check']} check, {kinds['bench']} "
            f"benches, {kinds['run']} runs; completes the runs of {decided} claims)")
    if not the_slots:
        out("nothing left: every step is done")
    if with_passes:
        rows = passes_table(all_steps)
        if rows:
            out("passes over the training data, per experiment (here: the offline copies; the write-up's, estimated "
                "from its text's size):")
            width = max(len(r["experiment"]) for r in rows)
            for r in rows:
                out(f"  {r['experiment']:<{width}}  {r['tokens/run']:>13,} tokens/run  {r['passes']:>6.1f} passes"
                    f"  (write-up: {r['write-up']})")


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
            write_up = nb.write_up_passes(paper)
        except LMCError:
            write_up = "not known here"
        rows.append({"experiment": s.run.name, "tokens/run": s.run.config.tokens(), "passes": p, "write-up": write_up})
    return rows


__all__ = ["BENCH", "DEFAULT_SLOT_MIN", "GROUPS", "Group", "Plan", "Slot", "bench_done", "plan", "Step", "check_minutes", "check_step",
           "corpora_of", "group_claims", "measured", "passes", "passes_table", "print_plan", "slot_device", "slots",
           "steps"]
