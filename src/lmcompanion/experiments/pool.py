"""Train planned runs several at a time, in worker processes with a fixed number of threads each.

``make book`` trains every run the book's notebooks read (``train-chapter all --jobs N``) before it executes them,
so that the notebooks only read finished runs. Before, the notebooks trained their runs themselves, two notebooks at
a time: a notebook that needed a run another notebook was training waited on that run's lock with its core idle.
Scheduling runs instead of notebooks keeps every core busy until the last run: runs start in the plan's order (a
chapter's runs seed by seed, the chapters in the order they register, the costly language models of the first
chapters before the small matchers of the last), each as soon as a process is free and the runs it reads are
finished. (Ordering by estimated cost instead was tried: counting the FLOPs of the book's 62 model shapes takes
about 45 s of one core, more than it could save at the end of the queue, where no run takes a minute.)

Each run is trained exactly as a notebook or ``train`` would train it (:meth:`PlannedRun.train`, the same key and
the same store), in a process whose threads are set before torch starts. On one machine, a run trained here has
the same metrics, bit for bit, as one trained by ``python -m lmcompanion train`` or by a notebook (checked by hand
for an hourglass and a masked-mixer run at ``cpu``). A run that fails does not stop the others (the runs
that read it are skipped); the failures are reported at the end.

Signals follow the package's one policy (:mod:`lmcompanion.signals`). The workers run in their own process group
and ignore signals while idle, so that a terminal's Ctrl-C, a SIGTERM or a SIGHUP reaches the parent only, once; the
parent then starts no run, tells the workers to stop (a shared flag, and the same signal forwarded to each: a busy
worker's trainer finishes its step and checkpoint), waits for them, notes which run kept which checkpoint, and raises
the signal's exception, so the command ends with one true message and 128 + the signal. A further signal while it
waits is forwarded too (the trainers then stop at once, outside an update or a checkpoint write). A worker whose
parent died (SIGKILL) stops its run at the next step and exits: no worker outlives the pool.
"""

from __future__ import annotations

import concurrent.futures as cf
import math
import multiprocessing
import os
import signal
import time
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

from .. import resources, signals
from ..errors import ConfigError, LMCError
from ..train.store import RunStore
from .plan import PlannedRun
from .registry import procedure


BROKEN = ("not trained: a training process died (killed, or out of memory?); its run resumes from its last "
          "checkpoint when the same command runs again, with fewer --jobs if memory ran out")


@dataclass(frozen=True)
class Outcome:
    """One planned run after the pool: its folder when it finished, else the error that stopped it."""

    run: PlannedRun
    path: Path | None = None
    seconds: float = 0.0  # wall time of its training here (0 when it was already in the store)
    reused: bool = False
    error: str | None = None


_STOP = None  # in a worker: the parent's "stop" flag


def _init_worker(threads: int, stop=None) -> None:
    import torch

    global _STOP
    _STOP = stop
    torch.set_num_threads(threads)
    os.setsid()  # a terminal's signals reach the parent only; it forwards them (see the module doc)
    signals.ignore()  # idle: only the parent decides
    signals.watch_parent()


def _train_one(config, procedure_name: str, profile: str, given, store_root: str, progress):
    """In a worker: train one run (its needs are finished: the pool starts it only then), under the signal policy.
    Returns (its folder, seconds, None), or (None, seconds, (signal, what was kept)) when a signal stopped it."""
    started = time.perf_counter()
    signals.watch_state.busy = True
    try:
        with signals.policy():  # first, then the flag: a stop sent before the handler was there is seen below
            try:
                if _STOP is not None and _STOP.is_set():
                    return None, 0.0, (signal.SIGTERM, [])
                planned = PlannedRun(config, procedure(procedure_name), profile, given)
                run = planned.train(RunStore(store_root), progress=progress)
            except KeyboardInterrupt as exc:
                return None, time.perf_counter() - started, (signals.signum_of(exc), signals.kept())
            except (OSError, MemoryError, RuntimeError) as exc:
                text = resources.explain(exc, "train-chapter")
                if text is None:
                    raise
                raise LMCError(text) from None
        return str(run.path), time.perf_counter() - started, None
    finally:
        signals.watch_state.busy = False


def _workers(pool) -> list[int]:
    procs = getattr(pool, "_processes", None) or {}
    return [p.pid for p in procs.values() if p.pid is not None] or [
        p.pid for p in multiprocessing.active_children()]


def train_all(runs: Sequence[PlannedRun], jobs: int, *, threads: int = 1, store=None, progress: bool | None = False,
              budget_s: float | None = None, on_done: Callable[[Outcome], None] | None = None) -> list[Outcome]:
    """Train every run of ``runs`` that the store does not hold yet, ``jobs`` at a time (``jobs`` worker processes,
    ``threads`` threads each), in the order given; a run waits until the runs it reads are finished (the next one
    that can start starts meanwhile). Returns one outcome per run, in the order given; ``on_done`` is called as each
    one ends. With ``budget_s``, no run starts after that many seconds (those not started are left out)."""
    if not isinstance(jobs, int) or jobs < 1:
        raise ConfigError(f"jobs must be a positive number of processes, got {jobs!r}")
    if not isinstance(threads, int) or threads < 1:
        raise ConfigError(f"threads must be a positive number of threads, got {threads!r}")
    if budget_s is not None and not (isinstance(budget_s, (int, float)) and math.isfinite(budget_s)):
        raise ConfigError(f"budget_s must be a finite number of seconds (<= 0: no run starts), got {budget_s!r}")
    store = store or RunStore()
    ordered: dict[str, PlannedRun] = {}
    for r in runs:  # a run's needs are planned too, before it (plan(needs=True) already puts them there)
        for need in r.needs:
            ordered.setdefault(need.id, need)
        ordered.setdefault(r.id, r)
    ordered = list(ordered.values())
    outcomes: dict[str, Outcome] = {}
    pending: list[PlannedRun] = []
    for r in ordered:
        done = r.get(store)
        if done is not None:
            outcomes[r.id] = Outcome(r, done.path, reused=True)
            _notify(on_done, outcomes[r.id])
        else:
            pending.append(r)
    started = time.monotonic()
    env_threads = os.environ.get("OMP_NUM_THREADS")
    os.environ["OMP_NUM_THREADS"] = str(threads)  # read by each worker's torch when it starts
    context = multiprocessing.get_context("spawn")
    stop = context.Event()
    flying: dict[cf.Future, PlannedRun] = {}
    try:
        with cf.ProcessPoolExecutor(max_workers=jobs, mp_context=context,
                                    initializer=_init_worker, initargs=(threads, stop)) as pool:
            try:
                _schedule(pool, pending, flying, outcomes, jobs, budget_s, started, store, progress, on_done)
            except KeyboardInterrupt as exc:
                _stop(pool, stop, flying, outcomes, signals.signum_of(exc), on_done)
                raise
    finally:
        if env_threads is None:
            os.environ.pop("OMP_NUM_THREADS", None)
        else:
            os.environ["OMP_NUM_THREADS"] = env_threads
    return [outcomes[r.id] for r in ordered if r.id in outcomes]


def _finished(fut: cf.Future, r: PlannedRun) -> Outcome | tuple:
    """A finished future's outcome, or (signal, kept) for a run a signal stopped."""
    try:
        path, seconds, stopped = fut.result()
    except BrokenProcessPool:
        return Outcome(r, error=BROKEN)
    except cf.CancelledError:
        return Outcome(r, error="not trained: stopped before it started")
    except Exception as exc:  # noqa: BLE001  (reported with the others at the end)
        return Outcome(r, error=f"{type(exc).__name__}: {exc}")
    if stopped is not None:
        return stopped
    return Outcome(r, Path(path), seconds)


def _stop(pool, stop, flying: dict, outcomes: dict, signum: int, on_done) -> None:
    """After a signal: no run starts; every worker is told to stop (the flag, then the signal), and the runs in
    flight end (a checkpoint each, noted for the message); a further signal is forwarded."""
    stop.set()
    pids = _workers(pool)
    signals.forward(pids, signum)
    with signals.forwarding(lambda s: signals.forward(pids, s)):
        for fut in list(flying):
            try:
                fut.result()
            except BaseException:  # noqa: BLE001  (looked at below)
                pass
            r = flying.pop(fut)
            got = _finished(fut, r)
            if isinstance(got, Outcome):
                outcomes[r.id] = got
                if got.error is None:
                    _notify(on_done, got)
            else:
                for text in got[1] or [f"run {r.id} stopped before its first step"]:
                    signals.note(text)
        pool.shutdown(wait=True, cancel_futures=True)


def _schedule(pool, pending, flying, outcomes, jobs, budget_s, started, store, progress, on_done) -> None:
    """Start each run as soon as a process is free and the runs it reads are finished, until none is left."""
    while pending or flying:
        for r in [r for r in pending if any(n.id in outcomes and outcomes[n.id].error for n in r.needs)]:
            pending.remove(r)
            outcomes[r.id] = Outcome(r, error="not trained: a run it reads failed")
            _notify(on_done, outcomes[r.id])
        over = budget_s is not None and time.monotonic() - started > budget_s
        while not over and pending and len(flying) < jobs:
            ready = _next_ready(pending, outcomes, flying.values())
            if ready is None:
                break
            pending.remove(ready)
            try:
                fut = pool.submit(_train_one, ready.config, ready.procedure.name, ready.profile, ready.given,
                                  str(store.root), progress)
            except BrokenProcessPool:  # a worker died (killed, out of memory): nothing more can start
                for r in [ready, *pending]:
                    outcomes[r.id] = Outcome(r, error=BROKEN)
                    _notify(on_done, outcomes[r.id])
                pending.clear()
                break
            flying[fut] = ready
        if over:
            pending.clear()
        if not flying:
            if pending:  # nothing can start: every pending run reads one that is not planned here
                raise ConfigError(f"{len(pending)} runs read runs that are not in the plan: "
                                  f"{', '.join(r.id for r in pending[:3])}")
            break
        finished, _ = cf.wait(flying, return_when=cf.FIRST_COMPLETED)
        for fut in finished:
            r = flying.pop(fut)
            got = _finished(fut, r)
            if not isinstance(got, Outcome):  # stopped by a signal sent to the worker alone: as a failure
                got = Outcome(r, error=f"stopped by {signals.name(got[0])}: " + "; ".join(got[1]))
            outcomes[r.id] = got
            _notify(on_done, outcomes[r.id])


def _next_ready(pending: Sequence[PlannedRun], outcomes: dict, flying) -> PlannedRun | None:
    """The first pending run whose needs are finished, preferring one that reads no run a run in flight reads too:
    runs that read the same run make the same data from it (a retrieval matcher's embeddings, made once under a
    lock), and two started together leave one process waiting on the other's lock while a third run could use it."""
    ready = [r for r in pending if all(n.id in outcomes and outcomes[n.id].path for n in r.needs)]
    busy = {n.id for f in flying for n in f.needs}
    return next((r for r in ready if not busy & {n.id for n in r.needs}), ready[0] if ready else None)


def _notify(on_done, outcome: Outcome) -> None:
    if on_done is not None:
        on_done(outcome)


__all__ = ["Outcome", "train_all"]
