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
"""

from __future__ import annotations

import concurrent.futures as cf
import multiprocessing
import os
import time
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

from ..errors import ConfigError
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


def _init_worker(threads: int) -> None:
    import torch

    torch.set_num_threads(threads)


def _train_one(config, procedure_name: str, profile: str, given, store_root: str, progress) -> tuple[str, float]:
    """In a worker: train one run (its needs are finished: the pool starts it only then)."""
    started = time.perf_counter()
    planned = PlannedRun(config, procedure(procedure_name), profile, given)
    run = planned.train(RunStore(store_root), progress=progress)
    return str(run.path), time.perf_counter() - started


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
    try:
        with cf.ProcessPoolExecutor(max_workers=jobs, mp_context=multiprocessing.get_context("spawn"),
                                    initializer=_init_worker, initargs=(threads,)) as pool:
            flying: dict[cf.Future, PlannedRun] = {}
            while pending or flying:
                for r in [r for r in pending if any(n.id in outcomes and outcomes[n.id].error for n in r.needs)]:
                    pending.remove(r)
                    outcomes[r.id] = Outcome(r, error="not trained: a run it reads failed")
                    _notify(on_done, outcomes[r.id])
                over = budget_s is not None and time.monotonic() - started > budget_s
                while not over and pending and len(flying) < jobs:
                    ready = next((r for r in pending
                                  if all(n.id in outcomes and outcomes[n.id].path for n in r.needs)), None)
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
                    try:
                        path, seconds = fut.result()
                        outcomes[r.id] = Outcome(r, Path(path), seconds)
                    except BrokenProcessPool:
                        outcomes[r.id] = Outcome(r, error=BROKEN)
                    except Exception as exc:  # noqa: BLE001  (reported with the others at the end)
                        outcomes[r.id] = Outcome(r, error=f"{type(exc).__name__}: {exc}")
                    _notify(on_done, outcomes[r.id])
    finally:
        if env_threads is None:
            os.environ.pop("OMP_NUM_THREADS", None)
        else:
            os.environ["OMP_NUM_THREADS"] = env_threads
    return [outcomes[r.id] for r in ordered if r.id in outcomes]


def _notify(on_done, outcome: Outcome) -> None:
    if on_done is not None:
        on_done(outcome)


__all__ = ["Outcome", "train_all"]
