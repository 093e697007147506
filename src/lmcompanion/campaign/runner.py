"""One slot of the GPU campaign, run as one command (``python -m lmcompanion campaign``): the next slot of the plan
(:func:`lmcompanion.campaign.plan.plan`), computed from what the output folder holds (``book/recorded``, as
committed: never a warm machine's run store).

**Progress.** Every finished run is written at once as a recorded run (:func:`lmcompanion.recorded.write`,
``DIR/<profile>/``), the check and bench reports, the progress and the measured minutes of every step
(``minutes.json``: the next slot's plan reads them) under ``DIR/campaign/<profile>/``. ``--archive FILE`` rewrites,
after every step, a ``.tar.gz`` of the files of DIR this slot made or changed (the GPU machines return at most 8
files, not folders); :mod:`lmcompanion.campaign.restore` puts them back here and commits them.

**The time limit.** ``--max-minutes`` counts from the command's start: no step starts that its estimate (scaled by
how much slower than estimated this command's runs were) says would not end in time, and at the limit the step in
flight is stopped (SIGTERM to this process, the package's one signal policy). A run cut off is lost whole (its
checkpoint stays on a machine that is given back) and is the first run of the next slot; every finished step is in
the archive.
"""

from __future__ import annotations

import io
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

from .. import env, experiments, paths, recorded, signals
from ..errors import LMCError
from ..experiments import PlannedRun
from ..train import Run, RunStore
from . import bench as bench_mod
from . import check as check_mod
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
        self.data = {"format": reports.PROGRESS_FORMAT, "profile": profile, "steps": old.get("steps", {}),
                     "commands": old.get("commands", [])}
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
    return {p.relative_to(out).as_posix(): paths.file_sha256(p) for p in sorted(out.rglob("*")) if p.is_file()} \
        if out.is_dir() else {}


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


def train_run(run: PlannedRun, progress: bool | None) -> Run:
    """Train one planned run in this machine's run store (what a run step does; the slot rehearsal wraps it)."""
    return run.train(RunStore(), progress=progress)


def gpu_name(device: str) -> str | None:
    return torch.cuda.get_device_name() if device == "cuda" and torch.cuda.is_available() else None


def run(profile: str = "gpu", *, device: str = "auto", out: Path | None = None,
        budget_min: float = plan_mod.DEFAULT_SLOT_MIN, max_minutes: float | None = None, seeds: int | None = None,
        archive: Path | None = None, retry_failed: bool = False, progress: bool | None = None,
        pack: dict | None = None, started: float | None = None, log: Callable = print) -> int:
    """Run the next slot (see the module doc). Returns 0 when the slot is done (its failed steps, if any, recorded
    and listed), :data:`MORE_TO_DO` when ``max_minutes`` stopped it with steps left (run the same command again: the
    next slot starts with them). ``pack``: the manifest of the pack the data came from (its commit is recorded in the
    progress: a GPU machine's copy of the tree may have no git history). ``started``: when the command started
    (``time.monotonic()``; default now), from which ``max_minutes`` counts."""
    started = time.monotonic() if started is None else started
    for name, value in (("budget_min", budget_min), ("max_minutes", max_minutes)):
        if value is not None and not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
            raise LMCError(f"{name} must be a finite number of minutes > 0, got {value!r}")
    device = experiments.resolve_device(device, profile)
    out = Path(out) if out is not None else recorded.default_dir()
    for name in reports.FILES:  # every report read back passes before anything is written
        reports.read_report(out, profile, name)
    the_plan = plan_mod.plan(profile, device=device, seeds=seeds, out=out, budget_min=budget_min,
                             retry_failed=retry_failed)
    if not the_plan.slots:
        log(f"campaign at the {profile} profile: every step is done ({len(the_plan.done)}) or failed "
            f"({len(the_plan.failed)}{'; --retry-failed tries them again' if the_plan.failed else ''}) in {out}: "
            "campaign complete")
        return 0
    slot = the_plan.slots[0]
    state = Progress(out, profile, device)
    minutes = reports.Minutes(out, profile)
    before = _snapshot(out)
    gpu = gpu_name(device)
    state.data["commands"].append({"started": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "device": device, "gpu": gpu,
                                   "slot": slot.number, "budget_min": budget_min, "max_minutes": max_minutes,
                                   **env.git_state(),
                                   "pack": {k: (pack or {}).get(k) for k in ("commit", "dirty", "made", "bytes")}
                                   if pack else None})
    rdir = reports.reports_dir(out, profile)
    log(f"campaign at the {profile} profile on {gpu or device}: slot {slot.number}, {len(slot.steps)} steps "
        f"({slot.minutes:.1f} of {budget_min:g} min estimated), {len(the_plan.slots) - 1 if the_plan.slots else 0} "
        f"slot(s) after it; {len(the_plan.done)} steps done earlier; output in {out}")
    stopped, status, deadline, times = None, 0, None, []
    try:
        deadline = _Deadline(max_minutes * 60 - (time.monotonic() - started) if max_minutes is not None else None)
        for i, step in enumerate(slot.steps, 1):
            entry = state.step(step.name)
            need = step.minutes * ratio(times)
            elapsed = (time.monotonic() - started) / 60
            if max_minutes is not None and elapsed + need > max_minutes and elapsed > 0.5:
                stopped, status = (f"--max-minutes {max_minutes:g}: {elapsed:.1f} min used by this command, the next "
                                   f"step needs about {need:.1f}"), MORE_TO_DO
                break
            log(f"[{i}/{len(slot.steps)}] {step.kind} {step.name} (estimated {step.minutes:.2f} min, "
                f"{'measured' if step.measured else 'counted'})")
            entry["attempts"] += 1
            t0 = time.monotonic()
            try:
                with signals.unswallowed():
                    report = _execute(step, out, rdir, profile, device, progress, log)
                entry.update(status="done", error=None)
            except KeyboardInterrupt:  # Ctrl-C, SIGTERM, or the deadline: a run cut off is lost whole
                entry["status"] = "interrupted"
                entry["wall_s"] = round(entry["wall_s"] + time.monotonic() - t0, 1)
                log(f"    interrupted during {step.name}")
                raise
            except Exception as exc:  # noqa: BLE001  (recorded; the slot goes on with the next step)
                entry.update(status="failed", error=f"{type(exc).__name__}: {exc}"[:2000],
                             traceback="".join(traceback.format_exception(exc))[-4000:])
                log(f"    FAILED: {entry['error']}")
                report = None
            wall = time.monotonic() - t0
            state.command_s += wall
            entry["wall_s"] = round(entry["wall_s"] + wall, 1)
            entry["estimate_min"] = round(step.counted, 3)
            if entry["status"] == "done":
                _measured(minutes, step, wall, device, gpu, report)
                if step.kind == "run":
                    times.append((wall, step.minutes * 60))
            state.save()
            minutes.save()
            archive_changed(out, archive, before)
            log(f"    {entry['status']} in {wall:.0f} s; {state.spent_min:.1f} of {budget_min:g} min spent")
    except KeyboardInterrupt:
        if deadline is None or not deadline.fired:
            raise
        log(f"stopped by --max-minutes {max_minutes:g} (the run in flight is lost and will be run again); restore "
            "the archive, commit it, and run the same command again for the next slot")
        return MORE_TO_DO
    finally:
        if deadline is not None:
            deadline.close()
        state.data["commands"][-1]["ended"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
        with signals.deferred():  # a second signal does not split the last report and its archive
            state.save()
            minutes.save()
            archive_changed(out, archive, before)
    summary(slot, the_plan, state, out, profile, device, stopped, log)
    return status


def _measured(minutes: reports.Minutes, step: Step, wall_s: float, device: str, gpu: str | None,
              report: dict | None) -> None:
    """File a finished step's wall minutes where the plan reads them (a check: its parts, from its items' seconds)."""
    if step.kind == "run":
        minutes.add(reports.run_key(step.run), device, wall_s / 60, gpu, what=step.name)
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


def measures(run: Run, device: str) -> str:
    """A finished run's own speed, as its recorded file carries it: tokens/s, peak memory and MFU (on a GPU)."""
    s = run.summary
    parts = [f"{s['tokens_per_s']:,.0f} tokens/s" if s.get("tokens_per_s") else None]
    if s.get("peak_mem_bytes"):
        parts.append(f"peak memory {s['peak_mem_bytes'] / 2**30:.2f} GiB")
    mfu = recorded.mfu(run.config, s, run.env)
    if mfu is not None:
        parts.append(f"MFU {mfu:.3f}")
    return ", ".join(p for p in parts if p)


def _execute(step: Step, out: Path, rdir: Path, profile: str, device: str, progress, log) -> dict | None:
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
        log("    " + ", ".join(f"{k} {result[k]}" for k in ("tokens/s", "s/step", "MFU", "peak memory (GiB)")
                               if k in result))
        return result
    done = train_run(step.run, progress)
    for path in recorded.write([done], out):
        log(f"    recorded {path}: {measures(done, device)}")
    return None


def summary(slot: Slot, the_plan: plan_mod.Plan, state: Progress, out: Path, profile: str, device: str,
            stopped: str | None, log: Callable = print) -> None:
    """What the slot did, what failed, the claims whose runs are now complete, and what is left."""
    status = {s.name: state.step(s.name)["status"] for s in slot.steps}
    done = [s for s in slot.steps if status[s.name] == "done"]
    failed = [s for s in slot.steps if status[s.name] == "failed"]
    if stopped:
        log(f"stopped by {stopped}")
    log(f"slot {slot.number}: {len(done)} of {len(slot.steps)} steps done, {len(failed)} failed; "
        f"{state.spent_min:.1f} min of steps")
    for s in failed:
        log(f"  FAILED {s.name}: {state.step(s.name).get('error', '')[:300]}")
    runs_done = {s.name for s in the_plan.done} | {s.name for s in done}
    for s in the_plan.all_steps:
        if s.kind == "run" and s.claims and any(d.group is s.group for d in done) and all(
                r.name in runs_done for r in the_plan.all_steps if r.kind == "run" and r.group is s.group):
            for c in s.claims:
                log(f"  runs complete for [{s.group.chapter}] {c}")
    failed_before = {s.name for s in the_plan.failed}
    left = [s for s in the_plan.all_steps if s.name not in runs_done and status.get(s.name) != "failed"
            and s.name not in failed_before]
    if left:
        log(f"left: {len(left)} steps, {sum(s.minutes for s in left):.1f} min estimated; restore this slot's archive "
            "here, commit it, and run the same command for the next slot")
    else:
        log("campaign complete")


__all__ = ["MORE_TO_DO", "Progress", "archive_changed", "measures", "ratio", "run", "summary", "train_run"]
