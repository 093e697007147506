"""One slot of the GPU campaign, run as one command (``python -m lmcompanion campaign``): the next slot of the plan
(:func:`lmcompanion.campaign.plan.plan`), computed from what the output folder holds (``book/recorded``, as
committed: never a warm machine's run store).

**Lanes.** The check, the lanes' measurement and the benches run one after another in this process; the runs of
the slot run side by side in ``--lanes N`` worker processes on the one device (:func:`lmcompanion.experiments.pool.
train_all`: the pool ``make book`` trains with; its module doc says how a run is sent to the lane that compiled its
shape, so that a lane compiles once per shape, and how each run's peak memory is its own). A lane whose run fails
fails that run only; the slot goes on. The lane speed and the number of lanes: :mod:`lmcompanion.campaign.lanes`.

**Progress.** Every finished run, from any lane, is written at once as a recorded run (``DIR/<profile>/``), its
summary carrying its own figures (tokens/s, peak memory and MFU as the trainer measured them; the seconds it spent
compiling, the graphs it compiled, and the lanes busy beside it), then the archive is rewritten. The check, lanes and
bench reports, the progress (with the slot's own figures: its runs' tokens over the wall time of its lanes, and
their MFU) and the measured minutes of every step (``minutes.json``, a run's as one run alone: the next slot's plan
reads them) are under ``DIR/campaign/<profile>/``. ``--archive FILE`` rewrites, after every step, a ``.tar.gz`` of
the files of DIR this slot made or changed (the GPU machines return at most 8 files, not folders);
:mod:`lmcompanion.campaign.restore` puts them back here and commits them.

**The time limit.** ``--max-minutes`` counts from the command's start and covers every lane: no step starts that its
estimate (scaled by how much slower than estimated this command's runs were, and for a run by how much its lanes
slow it) says would not end in time, and at the limit every lane is stopped (SIGTERM to this process, the package's
one signal policy, forwarded to the lanes: each run in flight finishes its step and checkpoint). A run cut off is
lost whole (its checkpoint stays on a machine that is given back) and is planned first in the next slot; every run
finished in any lane is in the archive.
"""

from __future__ import annotations

import io
import itertools
import math
import os
import signal
import tarfile
import threading
import time
import traceback
from pathlib import Path
from typing import Callable

import torch

from .. import env, estimate, experiments, models, paths, recorded, signals
from ..errors import LMCError
from ..experiments import PlannedRun, pool
from ..train import Run, RunStore
from . import bench as bench_mod
from . import check as check_mod
from . import lanes as lanes_mod
from . import measures as run_measures
from . import plan as plan_mod
from . import reports
from .plan import Slot, Step

MORE_TO_DO = 75  # exit status of a command stopped by --max-minutes with steps of its slot left: run it again


class Progress:
    """``DIR/campaign/<profile>/progress.json``: per step its status, the wall time of every attempt and its error;
    every command (slot) with its device and the commit it ran."""

    def __init__(self, out: Path, profile: str, device: str):
        self.path = reports.reports_dir(out, profile) / "progress.json"
        old = reports.read_report(out, profile, "progress.json") or {}
        self.data = {
            "format": reports.PROGRESS_FORMAT,
            "profile": profile,
            "steps": old.get("steps", {}),
            "commands": old.get("commands", []),
        }
        self.device = device
        self.command_s = 0.0  # the wall seconds of this command's steps

    def step(self, name: str) -> dict:
        return self.data["steps"].setdefault(name, {"status": "pending", "wall_s": 0.0, "attempts": 0})

    @property
    def spent_min(self) -> float:
        """Minutes of this command's steps."""
        return self.command_s / 60

    def save(self) -> None:
        reports.write_json(self.path, self.data)


def ratio(times: list[tuple[float, float]]) -> float:
    """Measured over estimated seconds of the runs this command finished (at least 1: a plan never grows from it)."""
    measured, est = sum(m for m, _ in times), sum(e for _, e in times)
    return max(1.0, measured / est) if est > 0 else 1.0


def _snapshot(out: Path) -> dict[str, str]:
    """The SHA-256 of every file of ``out`` by its relative path."""
    out = Path(out)
    return (
        {p.relative_to(out).as_posix(): paths.file_sha256(p) for p in sorted(out.rglob("*")) if p.is_file()}
        if out.is_dir()
        else {}
    )


def archive_changed(out: Path, archive: Path | None, before: dict[str, str]) -> list[str]:
    """A .tar.gz of the files of ``out`` that are new or changed since ``before`` (its own name at the top), replaced
    whole; returns their relative paths."""
    if archive is None:
        return []
    out = Path(out)
    now = _snapshot(out)
    changed = [rel for rel, sha in now.items() if before.get(rel) != sha]
    buf = io.BytesIO()
    top = out.resolve().name
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for rel in changed:
            tar.add(str(out / rel), arcname=f"{top}/{rel}", recursive=False)
    try:
        paths.atomic_write(Path(archive), buf.getvalue())
    except OSError as exc:
        raise LMCError(f"cannot write the archive {archive} ({exc.strerror})") from None
    return changed


class _Deadline:
    """At ``seconds`` from now, SIGTERM to this process: a training run finishes its step and checkpoints (the
    trainer's handler), anything else stops at once (this handler). Remembers that it fired."""

    def __init__(self, seconds: float | None):
        self.fired = False
        self.timer = None
        self.old = None
        if seconds is None:
            return
        if threading.current_thread() is threading.main_thread():
            self.old = signal.signal(signal.SIGTERM, self._handler)
        self.timer = threading.Timer(max(0.0, seconds), self._fire)
        self.timer.daemon = True
        self.timer.start()

    def _fire(self):
        self.fired = True
        os.kill(os.getpid(), signal.SIGTERM)

    _handler = staticmethod(signals.handler)  # the package's one signal policy (lmcompanion.signals)

    def close(self):
        if self.timer is not None:
            self.timer.cancel()
        if self.old is not None:
            signal.signal(signal.SIGTERM, self.old)


def gpu_name(device: str) -> str | None:
    return torch.cuda.get_device_name() if device == "cuda" and torch.cuda.is_available() else None


class _Command:
    """What one command (slot) keeps while it runs: its plan, progress, minutes, lanes and time limit."""

    def __init__(
        self,
        the_plan: plan_mod.Plan,
        out: Path,
        archive: Path | None,
        profile: str,
        device: str,
        max_minutes: float | None,
        started: float,
        progress,
        log: Callable,
        callbacks: tuple,
        requested: int | None,
    ):
        self.plan, self.out, self.archive, self.profile, self.device = the_plan, out, archive, profile, device
        self.max_minutes, self.started, self.progress, self.log, self.callbacks = (
            max_minutes,
            started,
            progress,
            log,
            callbacks,
        )
        self.state = Progress(out, profile, device)
        self.minutes = reports.Minutes(out, profile)
        self.before = _snapshot(out)
        self.gpu = gpu_name(device)
        self.rdir = reports.reports_dir(out, profile)
        self.times: list[tuple[float, float]] = []  # (measured alone, estimated) seconds of the runs finished
        self.stopped: str | None = None
        self.speed, self.lanes = the_plan.speed, the_plan.lanes
        self.requested = requested  # --lanes (None: as the lane speed favours)

    def elapsed_min(self) -> float:
        return (time.monotonic() - self.started) / 60

    def fits(self, need_min: float) -> bool:
        """Whether a step of ``need_min`` minutes ends before the limit (see the module doc); says why not."""
        elapsed = self.elapsed_min()
        if self.max_minutes is not None and elapsed + need_min > self.max_minutes and elapsed > 0.5:
            self.stopped = (
                f"--max-minutes {self.max_minutes:g}: {elapsed:.1f} min used by this command, the next "
                f"step needs about {need_min:.1f}"
            )
            return False
        return True

    def saved(self) -> None:
        """The progress and the minutes written, the archive rewritten (a signal does not split them)."""
        with signals.deferred():
            self.state.save()
            self.minutes.save()
            archive_changed(self.out, self.archive, self.before)


def run(
    profile: str = "gpu",
    *,
    device: str = "auto",
    out: Path | None = None,
    budget_min: float = plan_mod.DEFAULT_SLOT_MIN,
    max_minutes: float | None = None,
    seeds: int | None = None,
    archive: Path | None = None,
    retry_failed: bool = False,
    progress: bool | None = None,
    pack: dict | None = None,
    started: float | None = None,
    log: Callable = print,
    lanes: int | None = None,
    callbacks: tuple = (),
) -> int:
    """Run the next slot (see the module doc). Returns 0 when the slot is done (its failed steps, if any, recorded
    and listed), :data:`MORE_TO_DO` when ``max_minutes`` stopped it with steps left (run the same command again: the
    next slot starts with them). ``pack``: the manifest of the pack the data came from (its commit is recorded in the
    progress: a GPU machine's copy of the tree may have no git history). ``started``: when the command started
    (``time.monotonic()``; default now), from which ``max_minutes`` counts. ``lanes``: runs side by side (default:
    :func:`lmcompanion.campaign.plan.lanes_of`). ``callbacks``: called in each lane after each training step
    (module-level functions: the slot rehearsal slows its runs with one)."""
    started = time.monotonic() if started is None else started
    for name, value in (("budget_min", budget_min), ("max_minutes", max_minutes)):
        if value is not None and not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
            raise LMCError(f"{name} must be a finite number of minutes > 0, got {value!r}")
    if lanes is not None and not (isinstance(lanes, int) and 1 <= lanes <= reports.MAX_LANES):
        raise LMCError(f"lanes must be a whole number from 1 to {reports.MAX_LANES}, got {lanes!r}")
    device = experiments.resolve_device(device, profile)
    out = Path(out) if out is not None else recorded.default_dir()
    for name in reports.FILES:  # every report read back passes before anything is written
        reports.read_report(out, profile, name)
    the_plan = plan_mod.plan(
        profile, device=device, seeds=seeds, out=out, budget_min=budget_min, retry_failed=retry_failed, lanes=lanes
    )
    if not the_plan.slots:
        log(
            f"campaign at the {profile} profile: every step is done ({len(the_plan.done)}) or failed "
            f"({len(the_plan.failed)}{'; --retry-failed tries them again' if the_plan.failed else ''}) in {out}: "
            "campaign complete"
        )
        return 0
    slot = the_plan.slots[0]
    cmd = _Command(
        the_plan, out, archive, profile, device, max_minutes, started, progress, log, tuple(callbacks), lanes
    )
    cmd.state.data["commands"].append(
        {
            "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "device": device,
            "gpu": cmd.gpu,
            "slot": slot.number,
            "budget_min": budget_min,
            "max_minutes": max_minutes,
            "lanes": the_plan.lanes,
            **env.git_state(),
            "pack": {k: (pack or {}).get(k) for k in ("commit", "dirty", "made", "bytes")} if pack else None,
        }
    )
    log(
        f"campaign at the {profile} profile on {cmd.gpu or device}: slot {slot.number}, {len(slot.steps)} steps "
        f"({slot.minutes:.1f} of {budget_min:g} min estimated), {len(the_plan.slots) - 1} slot(s) after it; "
        f"{len(the_plan.done)} steps done earlier; output in {out}"
    )
    log(f"lanes: {the_plan.speed.describe(the_plan.lanes)}")
    status, deadline = 0, None
    try:
        deadline = _Deadline(max_minutes * 60 - (time.monotonic() - started) if max_minutes is not None else None)
        i = 0
        while i < len(slot.steps) and not cmd.stopped:
            if slot.steps[i].kind == "run":
                group = list(itertools.takewhile(lambda s: s.kind == "run", slot.steps[i:]))
                _train_lanes(cmd, group, i, len(slot.steps))
                i += len(group)
            else:
                _serial(cmd, slot.steps[i], i + 1, len(slot.steps))
                i += 1
        status = MORE_TO_DO if cmd.stopped else 0
    except KeyboardInterrupt:
        if deadline is None or not deadline.fired:
            raise
        log(
            f"stopped by --max-minutes {max_minutes:g} (the runs in flight are lost and will be run first by the next "
            "slot); restore the archive, commit it, and run the same command again for the next slot"
        )
        return MORE_TO_DO
    finally:
        if deadline is not None:
            deadline.close()
        cmd.state.data["commands"][-1]["ended"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
        cmd.saved()
    summary(slot, the_plan, cmd.state, out, profile, device, cmd.stopped, log)
    return status


def _serial(cmd: _Command, step: Step, i: int, n: int) -> None:
    """One step in this process (the check, the lanes' measurement, a bench), within the time limit."""
    if not cmd.fits(step.minutes * ratio(cmd.times)):
        return
    entry = cmd.state.step(step.name)
    cmd.log(
        f"[{i}/{n}] {step.kind} {step.name} (estimated {step.minutes:.2f} min, "
        f"{'measured' if step.measured else 'counted'})"
    )
    entry["attempts"] += 1
    t0 = time.monotonic()
    try:
        with signals.unswallowed():
            report = _execute(
                step,
                cmd.out,
                cmd.rdir,
                cmd.profile,
                cmd.device,
                cmd.progress,
                cmd.log,
                runs=[s.run for s in cmd.plan.slots[0].runs],
            )
        entry.update(status="done", error=None)
    except KeyboardInterrupt:  # Ctrl-C, SIGTERM, or the deadline
        entry["status"] = "interrupted"
        entry["wall_s"] = round(entry["wall_s"] + time.monotonic() - t0, 1)
        cmd.log(f"    interrupted during {step.name}")
        raise
    except Exception as exc:  # noqa: BLE001  (recorded; the slot goes on with the next step)
        _failed(entry, exc, cmd.log)
        report = None
    wall = time.monotonic() - t0
    cmd.state.command_s += wall
    entry["wall_s"] = round(entry["wall_s"] + wall, 1)
    entry["estimate_min"] = round(step.counted, 3)
    if entry["status"] == "done":
        _measured(cmd.minutes, step, wall, cmd.device, cmd.gpu, report)
        if step.kind == "lanes" and report is not None:
            cmd.speed = lanes_mod.speed(cmd.out, cmd.profile, cmd.device)
            cmd.lanes = plan_mod.lanes_of(cmd.requested, cmd.speed, cmd.device)
            cmd.state.data["commands"][-1]["lanes"] = cmd.lanes
            cmd.log(f"    from now on: {cmd.speed.describe(cmd.lanes)}")
    cmd.saved()
    cmd.log(f"    {entry['status']} in {wall:.0f} s; {cmd.state.spent_min:.1f} min spent")


def _failed(entry: dict, exc: BaseException, log: Callable) -> None:
    entry.update(
        status="failed",
        error=f"{type(exc).__name__}: {exc}"[:2000],
        traceback="".join(traceback.format_exception(exc))[-4000:],
    )
    log(f"    FAILED: {entry['error']}")


def _train_lanes(cmd: _Command, group: list[Step], offset: int, n: int) -> None:
    """The slot's runs side by side in ``cmd.lanes`` lanes (:func:`lmcompanion.experiments.pool.train_all`), each
    recorded the moment it finishes (:func:`_finished_run`); on a signal (the deadline's among them) every run in
    flight is marked interrupted and the signal goes on."""
    steps = {s.name: s for s in group}
    number = {s.name: offset + k + 1 for k, s in enumerate(group)}
    spans: dict[str, list[float]] = {}  # run id -> [start, end]: how many lanes were busy beside each run
    finished: dict[str, Run] = {}  # the steps' runs recorded
    t0 = time.time()
    if cmd.device == "cuda" and torch.cuda.is_initialized():
        torch.cuda.empty_cache()  # what the check and the benches cached here goes back to the device, for the lanes

    def may_start(run: PlannedRun) -> bool:
        step = steps.get(run.id)  # a run a step reads (a matcher's embedder) is trained with it
        slower = cmd.lanes / cmd.speed.at(cmd.lanes)
        return step is None or cmd.fits(step.minutes * ratio(cmd.times) * slower)

    def on_start(run: PlannedRun) -> None:
        spans[run.id] = [time.time(), math.inf]
        step = steps.get(run.id)
        if step is None:
            cmd.log(f"[-] run {run.id} (read by a run of the slot; trained in a lane of its own first)")
            return
        cmd.state.step(step.name)["attempts"] += 1
        cmd.log(
            f"[{number[step.name]}/{n}] run {step.name} (estimated {step.minutes:.2f} min, "
            f"{'measured' if step.measured else 'counted'}; {len(spans)} started in {cmd.lanes} lane(s))"
        )

    def on_done(outcome: pool.Outcome) -> None:
        if outcome.run.id in spans:
            spans[outcome.run.id][1] = time.time()
        step = steps.get(outcome.run.id)
        if step is None:
            return
        try:
            done = _finished_run(cmd, step, outcome, spans)
        except KeyboardInterrupt:  # a signal while it was being recorded: it is run again, from scratch
            cmd.state.step(step.name)["status"] = "interrupted"
            raise
        if done is not None:
            finished[step.name] = done

    try:
        pool.train_all(
            [s.run for s in group],
            cmd.lanes,
            threads=max(1, (os.cpu_count() or 1) // cmd.lanes),
            store=RunStore(),
            progress=cmd.progress,
            on_start=on_start,
            on_done=on_done,
            may_start=may_start,
            callbacks=cmd.callbacks,
        )
    except KeyboardInterrupt:
        for name, (start, end) in spans.items():
            entry = cmd.state.step(name) if name in steps else None
            if entry is not None and end == math.inf:
                entry["status"] = "interrupted"
                entry["wall_s"] = round(entry["wall_s"] + time.time() - start, 1)
                cmd.log(f"    interrupted during {name}")
        raise
    finally:
        cmd.state.command_s += time.time() - t0
        _slot_figures(cmd, finished, spans)


def _finished_run(cmd: _Command, step: Step, outcome: pool.Outcome, spans: dict) -> Run | None:
    """A run a lane finished (or failed): recorded with its own figures, its minutes as one run alone filed, the
    progress and the archive written; the run, or None where it failed."""
    entry = cmd.state.step(step.name)
    entry["estimate_min"] = round(step.counted, 3)
    if outcome.error is not None:
        entry.update(status="failed", error=outcome.error[:2000], traceback=None)
        cmd.log(f"    FAILED {step.name}: {outcome.error[:300]}")
        cmd.saved()
        return None
    done = Run(outcome.path)
    facts, alone_s = {}, 0.0
    if not outcome.reused:  # trained here: what its lane measured
        start, end = spans[step.name]
        busy = lanes_mod.concurrency([tuple(v) for v in spans.values()], start, end)
        alone_s = 60 * lanes_mod.alone_minutes(outcome.seconds, busy, cmd.speed)
        facts = {
            "compile_s": float(outcome.facts.get("compile_s", 0.0)),
            "graphs_compiled": int(outcome.facts.get("graphs", 0)),
            "lanes_busy": round(busy, 2),
        }
    try:
        path = _record(done, cmd.out, facts)
    except Exception as exc:  # noqa: BLE001  (a run that cannot be recorded failed: the slot goes on)
        _failed(entry, exc, cmd.log)
        cmd.saved()
        return None
    entry.update(status="done", error=None)
    entry["wall_s"] = round(entry["wall_s"] + outcome.seconds, 1)
    if not outcome.reused:
        cmd.minutes.add(reports.run_key(step.run), cmd.device, alone_s / 60, cmd.gpu, what=step.name)
        cmd.times.append((alone_s, step.minutes * 60))
    compiled = (
        f"; compiled {facts['graphs_compiled']} graph(s) in {facts['compile_s']:.1f} s"
        if facts and step.run.config.train.compile
        else ""
    )
    cmd.log(
        f"    recorded {path}: {figures(done, cmd.device)}{compiled}"
        + (
            f"; {facts['lanes_busy']:.1f} lane(s) busy while it ran; {outcome.seconds:.0f} s ({alone_s:.0f} s as one run "
            "alone)"
            if facts
            else ""
        )
    )
    _after_run(cmd, step, done, path)
    cmd.saved()
    return done


def _after_run(cmd: _Command, step: Step, done: Run, path: Path) -> None:
    """The one place where what a finished run's recorded file needs beyond its metrics is computed, in this process
    from the run's folder (its weights are there), after it is recorded and before the archive is rewritten (issue 49,
    item 6: the weight-dependent measures)."""
    run_measures.record(done, path, log=cmd.log)


def _record(done: Run, out: Path, facts: dict) -> Path:
    """``done`` written as a recorded run (:func:`lmcompanion.recorded.export`) with ``facts`` measured in its lane
    added to its summary."""
    record = recorded.export(done)
    record["summary"].update(facts)
    return recorded.write_record(Path(out) / record["profile"] / recorded.file_name(record), record)


def _slot_figures(cmd: _Command, finished: dict[str, Run], spans: dict) -> None:
    """The slot's own figures, in its command's progress entry: its runs' tokens over the wall time of its lanes
    (the first run's start to the last one's end), and on a GPU their MFU (their counted FLOPs over that time, at the
    device's peak)."""
    trained = {name: run for name, run in finished.items() if name in spans}
    if not trained:
        return
    wall = max(spans[n][1] for n in trained) - min(spans[n][0] for n in trained)
    tokens = {n: int(r.summary.get("tokens") or 0) for n, r in trained.items()}
    flops = sum(models.flops_per_token(r.config.model) * tokens[n] for n, r in trained.items())
    peak = estimate.peak_flops(cmd.gpu) if cmd.gpu else None
    figures_ = {
        "lanes": cmd.lanes,
        "runs": len(trained),
        "tokens": sum(tokens.values()),
        "wall_s": round(wall, 1),
        "tokens_per_s": round(sum(tokens.values()) / wall, 1) if wall > 0 else None,
        "mfu": float(f"{flops / wall / peak:.4g}") if wall > 0 and peak else None,
        "speedup": round(cmd.speed.at(cmd.lanes), 3),
        "speedup_measured": cmd.speed.measured,
    }
    cmd.state.data["commands"][-1].setdefault("lane_groups", []).append(figures_)
    cmd.log(
        f"    the slot's lanes: {len(trained)} run(s), {figures_['tokens']:,} tokens in {wall:.0f} s: "
        f"{figures_['tokens_per_s'] or 0:,.0f} tokens/s in all"
        + (f", MFU {figures_['mfu']:.3f}" if figures_["mfu"] is not None else "")
    )


def _measured(
    minutes: reports.Minutes, step: Step, wall_s: float, device: str, gpu: str | None, report: dict | None
) -> None:
    """File a finished step's wall minutes where the plan reads them (a check: its parts, from its items' seconds;
    a run's: :func:`_finished_run`)."""
    if step.kind == "lanes":
        minutes.add("lanes/measure", device, wall_s / 60, gpu)
    elif step.kind == "bench":
        minutes.add(f"{step.name}@{step.run.config.hash()}", device, wall_s / 60, gpu)
    elif report is not None:
        items = report.get("items", {})
        compile_s = float(items.get("compile_against_eager", {}).get("seconds", 0.0))
        torchrun_s = float(items.get(check_mod.TORCHRUN[device], {}).get("seconds", 0.0)) if step.torchrun else 0.0
        minutes.add("check/compile", device, compile_s / 60 / max(1, len(step.families)), gpu)
        if step.torchrun:
            minutes.add("check/torchrun", device, torchrun_s / 60, gpu)
        minutes.add("check/base", device, max(0.0, wall_s - compile_s - torchrun_s) / 60, gpu)


def figures(run: Run, device: str) -> str:
    """A finished run's own speed, as its recorded file carries it: tokens/s, peak memory and MFU (on a GPU)."""
    s = run.summary
    parts = [f"{s['tokens_per_s']:,.0f} tokens/s" if s.get("tokens_per_s") else None]
    if s.get("peak_mem_bytes"):
        parts.append(f"peak memory {s['peak_mem_bytes'] / 2**30:.2f} GiB")
    mfu = recorded.mfu(run.config, s, run.env)
    if mfu is not None:
        parts.append(f"MFU {mfu:.3f}")
    return ", ".join(p for p in parts if p)


def _execute(
    step: Step, out: Path, rdir: Path, profile: str, device: str, progress, log, *, runs: list[PlannedRun] = ()
) -> dict | None:
    """One step of this process (a run's are trained in lanes: :func:`_train_lanes`); its report. ``runs``: the
    slot's runs, one of which the lanes are measured on."""
    if step.kind == "lanes":
        run = lanes_mod.representative(runs)
        if run is None:
            raise LMCError(
                "no run of this slot is trained by the shared trainer on its own data: the lanes are "
                "measured by the next slot that has one"
            )
        result = lanes_mod.measure(run, lanes_mod.levels_for(device), log=log)
        result["gpu"] = gpu_name(device)
        lanes_mod.file(out, profile, device, result)
        return result
    if step.kind == "check":
        cfgs = [r.config for r in step.covers]
        # the torchrun probe trains a smoke run of an experiment the shared trainer trains on its own data (a
        # matcher's data is another run's embeddings): the slot's first such run, else the first headline arm
        own = [r.name for r in step.covers if r.procedure.fn is None and r.procedure.source is None]
        name = (own or [plan_mod.GROUPS[0].names[0]])[0] if step.torchrun else None
        report = check_mod.check(cfgs, step.families, profile, device, torchrun=name, log=log)
        merged = check_mod.merge(reports.read_report(out, profile, "check.json"), report)
        reports.write_json(rdir / "check.json", merged)
        if not report["ok"]:
            log(f"    the check FAILED in part: see {rdir / 'check.json'} (the campaign goes on)")
        return report
    if step.kind == "bench":
        path = rdir / "bench.json"
        report = reports.read_report(out, profile, "bench.json") or {}
        if report.get("device") != device:
            report = {}
        report.update(format=bench_mod.FORMAT, profile=profile, device=device)
        result = bench_mod.bench_step(step.run)
        report.setdefault("results", {})[step.name] = result
        reports.write_json(path, report)
        log(
            "    "
            + ", ".join(f"{k} {result[k]}" for k in ("tokens/s", "s/step", "MFU", "peak memory (GiB)") if k in result)
        )
        return result
    raise LMCError(f"a step of kind {step.kind!r} is not run by itself")


def summary(
    slot: Slot,
    the_plan: plan_mod.Plan,
    state: Progress,
    out: Path,
    profile: str,
    device: str,
    stopped: str | None,
    log: Callable = print,
) -> None:
    """What the slot did, what failed, the claims whose runs are now complete, and what is left."""
    status = {s.name: state.step(s.name)["status"] for s in slot.steps}
    done = [s for s in slot.steps if status[s.name] == "done"]
    failed = [s for s in slot.steps if status[s.name] == "failed"]
    if stopped:
        log(f"stopped by {stopped}")
    log(
        f"slot {slot.number}: {len(done)} of {len(slot.steps)} steps done, {len(failed)} failed; "
        f"{state.spent_min:.1f} min of steps"
    )
    for s in failed:
        log(f"  FAILED {s.name}: {state.step(s.name).get('error', '')[:300]}")
    runs_done = {s.name for s in the_plan.done} | {s.name for s in done}
    for s in the_plan.all_steps:
        if (
            s.kind == "run"
            and s.claims
            and any(d.group is s.group for d in done)
            and all(r.name in runs_done for r in the_plan.all_steps if r.kind == "run" and r.group is s.group)
        ):
            for c in s.claims:
                log(f"  runs complete for [{s.group.chapter}] {c}")
    failed_before = {s.name for s in the_plan.failed}
    left = [
        s
        for s in the_plan.all_steps
        if s.name not in runs_done and status.get(s.name) != "failed" and s.name not in failed_before
    ]
    if left:
        log(
            f"left: {len(left)} steps, {sum(s.minutes for s in left):.1f} min estimated; restore this slot's archive "
            "here, commit it, and run the same command for the next slot"
        )
    else:
        log("campaign complete")


__all__ = ["MORE_TO_DO", "Progress", "archive_changed", "figures", "ratio", "run", "summary"]
