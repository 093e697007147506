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

**Lanes.** Each of the ``jobs`` processes is a lane of its own (an executor of one worker process), so that a run
can be sent to a chosen lane, and a process that dies (killed, out of memory) takes only its own run with it: the
lane gets a fresh process for its next run. A run that compiles its model (``train.compile``) goes, where it can, to
the lane that last trained its *shape* (:func:`shape`: what a compiled graph depends on, not the seed), and a freed
lane takes a run of its own shape first: Dynamo's cache keeps the graphs, and a new model of the same shape passes
their guards, so a lane compiles once per shape, not once per run (the campaign's check counts it:
:mod:`lmcompanion.campaign.check`). Where a lane changes shape, Dynamo's cache is emptied first, as a fresh process
would start (its cache holds a few variants per model class, then falls back to eager code). Runs that compile
nothing (every run at ``cpu`` and ``smoke``) start in the plan's order, as before. The GPU campaign runs its lanes
side by side on one GPU (:mod:`lmcompanion.campaign.runner`).

**Each run's own figures** (:attr:`Outcome.facts`): the wall-clock time it started and ended in its lane, the seconds
Dynamo spent compiling for it and the graphs it compiled (:func:`compile_counts`, before and after it), and, on a GPU,
its peak memory counted from its own start: the peak statistics are reset before each run, so its summary's
``peak_mem_bytes`` is its own, not its process's so far; the memory it cached is given back after it, for the other
lanes.

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
import dataclasses
import json
import math
import multiprocessing
import os
import signal
import sys
import time
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Mapping, Sequence

import torch

from .. import resources, signals
from ..errors import ConfigError, LMCError
from ..train.store import RunStore
from .plan import PlannedRun
from .registry import procedure


BROKEN = (
    "not trained: a training process died (killed, or out of memory?); its run resumes from its last "
    "checkpoint when the same command runs again, with fewer --jobs if memory ran out"
)


@dataclass(frozen=True)
class Outcome:
    """One planned run after the pool: its folder when it finished, else the error that stopped it."""

    run: PlannedRun
    path: Path | None = None
    seconds: float = 0.0  # wall time of its training here (0 when it was already in the store)
    reused: bool = False
    error: str | None = None
    # measured in its lane: "started", "ended" (time.time()), "compile_s", "graphs" (see the module doc), "lane"
    facts: Mapping = field(default_factory=dict)


def shape(cfg) -> str | None:
    """What a compiled graph of a run depends on: its model, micro-batch, autocast dtype and device (not its seed,
    data or schedule); None for a run that compiles nothing."""
    if not cfg.train.compile:
        return None
    return json.dumps(
        {
            "model": dataclasses.asdict(cfg.model),
            "batch": cfg.train.batch_size,
            "dtype": cfg.train.dtype,
            "device": cfg.device,
        },
        sort_keys=True,
        default=str,
    )


def compile_counts() -> tuple[int, float]:
    """(graphs Dynamo has compiled in this process so far, seconds it spent compiling, backward graphs included):
    differenced around a run, what the run compiled. Zero where Dynamo has not been loaded (nothing compiled)."""
    utils = sys.modules.get("torch._dynamo.utils")
    if utils is None:
        return 0, 0.0
    spent = utils.calculate_time_spent().get("total_wall_time", 0.0)
    return int(utils.counters["stats"]["unique_graphs"]), float(spent)


_STOP = None  # in a worker: the parent's "stop" flag
_SHAPE: list[str | None] = [None]  # in a worker: the shape of the last compiled run (see the module doc)


def _init_worker(threads: int, stop=None) -> None:
    global _STOP
    _STOP = stop
    torch.set_num_threads(threads)
    os.setsid()  # a terminal's signals reach the parent only; it forwards them (see the module doc)
    signals.ignore()  # idle: only the parent decides
    signals.watch_parent()


def _fresh_for(cfg) -> None:
    """Before a run in a worker: Dynamo's cache emptied where the run's shape differs from the last compiled one
    (as a fresh process would start: see the module doc), and on a GPU the peak-memory statistics reset."""
    now = shape(cfg)
    if now is not None:
        if _SHAPE[0] is not None and _SHAPE[0] != now:
            torch._dynamo.reset()
        _SHAPE[0] = now
    if cfg.device == "cuda" and torch.cuda.is_available():  # (without one, the trainer says what is wrong)
        torch.cuda.reset_peak_memory_stats()


def _train_one(config, procedure_name: str, profile: str, given, store_root: str, progress, callbacks=()):
    """In a worker: train one run (its needs are finished: the pool starts it only then), under the signal policy.
    Returns (its folder, seconds, None, facts), or (None, seconds, (signal, what was kept), facts) when a signal
    stopped it; ``facts``: what :attr:`Outcome.facts` holds."""
    started = time.perf_counter()
    facts = {"started": time.time(), "lane": os.getpid()}
    signals.watch_state.busy = True
    try:
        with signals.policy():  # first, then the flag: a stop sent before the handler was there is seen below
            try:
                if _STOP is not None and _STOP.is_set():
                    return None, 0.0, (signal.SIGTERM, []), facts
                _fresh_for(config)
                graphs, compile_s = compile_counts()
                planned = PlannedRun(config, procedure(procedure_name), profile, given)
                run = planned.train(RunStore(store_root), progress=progress, callbacks=callbacks)
                now_graphs, now_s = compile_counts()
                facts.update(graphs=now_graphs - graphs, compile_s=round(now_s - compile_s, 3), ended=time.time())
            except KeyboardInterrupt as exc:
                return None, time.perf_counter() - started, (signals.signum_of(exc), signals.kept()), facts
            except (OSError, MemoryError, RuntimeError) as exc:
                text = resources.explain(exc, "train-chapter")
                if text is None:
                    raise
                raise LMCError(text) from None
            finally:
                if config.device == "cuda" and torch.cuda.is_initialized():
                    torch.cuda.empty_cache()  # what it cached goes back to the device, for the other lanes
        return str(run.path), time.perf_counter() - started, None, facts
    finally:
        signals.watch_state.busy = False


class _Lanes:
    """``jobs`` lanes, each an executor of one worker process (see the module doc): started when first given a run,
    renewed after its process died; each remembers the shape of the last run it was given."""

    def __init__(self, jobs: int, context, initargs: tuple):
        self.context, self.initargs = context, initargs
        self.pools: list[cf.ProcessPoolExecutor | None] = [None] * jobs
        self.shapes: list[str | None] = [None] * jobs

    def submit(self, lane: int, run: PlannedRun, *args) -> cf.Future:
        if self.pools[lane] is None:
            self.pools[lane] = cf.ProcessPoolExecutor(
                max_workers=1, mp_context=self.context, initializer=_init_worker, initargs=self.initargs
            )
        self.shapes[lane] = shape(run.config)
        return self.pools[lane].submit(_train_one, *args)

    def renew(self, lane: int) -> None:
        """After its process died: the lane's next run gets a fresh process."""
        pool, self.pools[lane], self.shapes[lane] = self.pools[lane], None, None
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)

    def pids(self) -> list[int]:
        return [
            p.pid
            for pool in self.pools
            if pool is not None
            for p in (getattr(pool, "_processes", None) or {}).values()
            if p.pid is not None
        ] or [p.pid for p in multiprocessing.active_children()]

    def shutdown(self) -> None:
        for pool in self.pools:
            if pool is not None:
                pool.shutdown(wait=True, cancel_futures=True)


def train_all(
    runs: Sequence[PlannedRun],
    jobs: int,
    *,
    threads: int = 1,
    store=None,
    progress: bool | None = False,
    budget_s: float | None = None,
    on_done: Callable[[Outcome], None] | None = None,
    on_start: Callable[[PlannedRun], None] | None = None,
    may_start: Callable[[PlannedRun], bool] | None = None,
    callbacks: Sequence[Callable] = (),
) -> list[Outcome]:
    """Train every run of ``runs`` that the store does not hold yet, in ``jobs`` lanes (worker processes, ``threads``
    threads each), in the order given (runs that compile grouped by shape: see the module doc); a run waits until
    the runs it reads are finished (the next one that can start starts meanwhile). Returns one outcome per run, in
    the order given; ``on_start`` is called as each run starts in a lane, ``on_done`` as each one ends. With
    ``budget_s``, no run starts after that many seconds; with ``may_start``, none from the first it refuses (those
    not started are left out). ``callbacks``: called in the worker after each training step (the trainer's;
    picklable: module-level functions)."""
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
    flying: dict[cf.Future, tuple[PlannedRun, int]] = {}
    lanes = _Lanes(jobs, context, (threads, stop))
    gate = _Gate(budget_s, started, may_start)
    try:
        try:
            _schedule(lanes, pending, flying, outcomes, gate, store, progress, on_done, on_start, tuple(callbacks))
        except KeyboardInterrupt as exc:
            _stop(lanes, stop, flying, outcomes, signals.signum_of(exc), on_done)
            raise
        finally:
            lanes.shutdown()
    finally:
        if env_threads is None:
            os.environ.pop("OMP_NUM_THREADS", None)
        else:
            os.environ["OMP_NUM_THREADS"] = env_threads
    return [outcomes[r.id] for r in ordered if r.id in outcomes]


@dataclass
class _Gate:
    """Whether another run may start: not after ``budget_s`` from ``started``, nor once ``may_start`` refused one."""

    budget_s: float | None
    started: float
    may_start: Callable[[PlannedRun], bool] | None
    closed: bool = False

    def over(self) -> bool:
        if self.budget_s is not None and time.monotonic() - self.started > self.budget_s:
            self.closed = True
        return self.closed

    def admits(self, run: PlannedRun) -> bool:
        if not self.over() and self.may_start is not None and not self.may_start(run):
            self.closed = True
        return not self.closed


def _finished(fut: cf.Future, r: PlannedRun) -> Outcome | tuple:
    """A finished future's outcome, or (signal, kept) for a run a signal stopped."""
    try:
        path, seconds, stopped, facts = fut.result()
    except BrokenProcessPool:
        return Outcome(r, error=BROKEN)
    except cf.CancelledError:
        return Outcome(r, error="not trained: stopped before it started")
    except Exception as exc:  # noqa: BLE001  (reported with the others at the end)
        return Outcome(r, error=f"{type(exc).__name__}: {exc}")
    if stopped is not None:
        return stopped
    return Outcome(r, Path(path), seconds, facts=facts)


def _stop(lanes: _Lanes, stop, flying: dict, outcomes: dict, signum: int, on_done) -> None:
    """After a signal: no run starts; every worker is told to stop (the flag, then the signal), and the runs in
    flight end (a checkpoint each, noted for the message); a further signal is forwarded."""
    stop.set()
    pids = lanes.pids()
    signals.forward(pids, signum)
    with signals.forwarding(lambda s: signals.forward(pids, s)):
        for fut in list(flying):
            try:
                fut.result()
            except BaseException:  # noqa: BLE001  (looked at below)
                pass
            r, _ = flying.pop(fut)
            got = _finished(fut, r)
            if isinstance(got, Outcome):
                outcomes[r.id] = got
                if got.error is None:
                    _notify(on_done, got)
            else:
                for text in got[1] or [f"run {r.id} stopped before its first step"]:
                    signals.note(text)
        lanes.shutdown()


def _schedule(
    lanes: _Lanes, pending, flying, outcomes, gate: _Gate, store, progress, on_done, on_start, callbacks
) -> None:
    """Start each run as soon as a lane is free and the runs it reads are finished, until none is left."""
    while pending or flying:
        for r in [r for r in pending if any(n.id in outcomes and outcomes[n.id].error for n in r.needs)]:
            pending.remove(r)
            outcomes[r.id] = Outcome(r, error="not trained: a run it reads failed")
            _notify(on_done, outcomes[r.id])
        while not gate.over() and pending:
            free = [i for i in range(len(lanes.shapes)) if i not in {lane for _, lane in flying.values()}]
            if not free:
                break
            ready = _next_ready(
                pending, outcomes, [r for r, _ in flying.values()], shapes=[lanes.shapes[i] for i in free]
            )
            if ready is None or not gate.admits(ready):
                break
            lane = _lane_for(ready, free, lanes.shapes, pending)
            pending.remove(ready)
            try:
                fut = lanes.submit(
                    lane,
                    ready,
                    ready.config,
                    ready.procedure.name,
                    ready.profile,
                    ready.given,
                    str(store.root),
                    progress,
                    callbacks,
                )
            except BrokenProcessPool:  # the lane's process died between two runs: a fresh one takes the run
                lanes.renew(lane)
                fut = lanes.submit(
                    lane,
                    ready,
                    ready.config,
                    ready.procedure.name,
                    ready.profile,
                    ready.given,
                    str(store.root),
                    progress,
                    callbacks,
                )
            flying[fut] = (ready, lane)
            _notify(on_start, ready)
        if gate.over():
            pending.clear()
        if not flying:
            if pending:  # nothing can start: every pending run reads one that is not planned here
                raise ConfigError(
                    f"{len(pending)} runs read runs that are not in the plan: {', '.join(r.id for r in pending[:3])}"
                )
            break
        finished, _ = cf.wait(flying, return_when=cf.FIRST_COMPLETED)
        for fut in finished:
            r, lane = flying.pop(fut)
            got = _finished(fut, r)
            if isinstance(got, Outcome) and got.error == BROKEN:  # its process died: only its run is lost
                lanes.renew(lane)
            if not isinstance(got, Outcome):  # stopped by a signal sent to the worker alone: as a failure
                got = Outcome(r, error=f"stopped by {signals.name(got[0])}: " + "; ".join(got[1]))
            outcomes[r.id] = got
            _notify(on_done, outcomes[r.id])


def _next_ready(
    pending: Sequence[PlannedRun], outcomes: dict, flying, *, shapes: Sequence[str | None] = ()
) -> PlannedRun | None:
    """The first pending run whose needs are finished, preferring one that reads no run a run in flight reads too:
    runs that read the same run make the same data from it (a retrieval matcher's embeddings, made once under a
    lock), and two started together leave one process waiting on the other's lock while a third run could use it.
    Among those, a run whose shape is that of a free lane (``shapes``) comes first: the lane has compiled it."""
    ready = [r for r in pending if all(n.id in outcomes and outcomes[n.id].path for n in r.needs)]
    busy = {n.id for f in flying for n in f.needs}
    apart = [r for r in ready if not busy & {n.id for n in r.needs}] or ready
    held = {s for s in shapes if s is not None}
    return next((r for r in apart if shape(r.config) in held), apart[0] if apart else None)


def _lane_for(run: PlannedRun, free: Sequence[int], shapes: Sequence[str | None], pending) -> int:
    """The free lane that takes ``run``: the one that compiled its shape, else a lane that has compiled nothing,
    else one whose shape no pending run has (see the module doc)."""
    own = shape(run.config)
    wanted = {shape(r.config) for r in pending if r is not run} - {None}
    for fits in (
        lambda i: own is not None and shapes[i] == own,
        lambda i: shapes[i] is None,
        lambda i: shapes[i] not in wanted,
    ):
        found = next((i for i in free if fits(i)), None)
        if found is not None:
            return found
    return free[0]


def _notify(on_done, outcome) -> None:
    if on_done is not None:
        on_done(outcome)


__all__ = ["Outcome", "compile_counts", "shape", "train_all"]
