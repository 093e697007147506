"""Lanes: a slot trains several runs side by side on its one device (issue 49), and how much that gains.

The runs of a slot go to ``--lanes N`` worker processes on the one GPU (:func:`lmcompanion.experiments.pool.train_all`,
the pool ``make book`` trains with on the CPU's cores), each run in a process of its own, exactly as it would be
trained alone: same config, same key, same code; its metrics differ from a run alone only by the kernels' own
nondeterminism (cuBLAS and cuDNN pick their algorithms by what else runs, and atomics in some backward kernels sum in
varying order), as two runs alone on the same GPU can. The runs the slots measured were small (0.3 to 8% of the GPU's
peak, issue 49): one run at a time leaves most of the device idle between its kernels.

**The lane speed** (:class:`Speed`): the aggregate tokens/s of ``n`` lanes over one lane's. The first slot on a device
measures it (:func:`measure`, a step of kind ``lanes`` at its head, stated at :data:`MEASURE_MIN`): one
representative run of the slot, built (and compiled, where its config compiles) once in each of
``max(LEVELS)`` processes at once, then 1, 2, 4 and 8 of them stepping side by side for :data:`MEASURE_S` seconds
each: their tokens over the wall time. It is filed in ``lanes.json`` beside ``minutes.json``; every later plan reads
it. Until then the plan assumes :data:`ASSUMED` and says so.

**Minutes in lanes.** A run that shared the device took longer than alone; the minutes it files are those of one
lane (its wall minutes times ``speedup(c) / c``, ``c`` the mean number of lanes busy while it ran:
:func:`concurrency`), so the plan's estimates stay minutes of one run alone, and a slot's wall estimate divides its
runs' minutes by the speed-up of its lanes.
"""

from __future__ import annotations

import concurrent.futures as cf
import multiprocessing
import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Mapping, Sequence

import torch

from .. import signals
from ..experiments import PlannedRun
from ..run import RunConfig
from ..train import trainer
from . import reports

LEVELS = (1, 2, 4, 8)  # the numbers of lanes measured
MEASURE_S = 5.0  # seconds each number of lanes trains side by side
# The stated allowance of the measurement on one H100 (until a slot has measured its own): the processes started and
# the model built (and compiled) in each at once, about 30 s, and 4 x 5 s of training.
MEASURE_MIN = 1.0
# Assumed until a slot measures it (stated, not measured): four lanes give twice the aggregate throughput of one.
# The runs of slots 1 and 2 used 0.3 to 8% of the H200's peak (issue 49), so the device is mostly idle between a
# small run's kernels; half of linear is the cautious figure (processes on one GPU without MPS share it by time
# slices, and eight CUDA contexts cost memory and switches).
ASSUMED = {1: 1.0, 4: 2.0}
FORMAT = "lmcompanion-campaign-lanes/1"


@dataclass(frozen=True)
class Speed:
    """Aggregate throughput at ``n`` lanes over one lane's (``table``: lanes -> speed-up), measured on the device
    (``measured``) or assumed (:data:`ASSUMED`)."""

    table: Mapping[int, float]
    measured: bool
    gpu: str | None = None

    def at(self, lanes: float) -> float:
        """The speed-up of ``lanes`` (a mean number of busy lanes too): linear between the known numbers of lanes,
        one lane's below the first and the largest one's beyond it."""
        points = sorted({1: 1.0, **{int(k): float(v) for k, v in self.table.items()}}.items())
        if lanes <= 1:
            return points[0][1]
        for (a, sa), (b, sb) in zip(points, points[1:]):
            if lanes <= b:
                return sa + (sb - sa) * (lanes - a) / (b - a)
        return points[-1][1]

    @property
    def best(self) -> int:
        """The number of lanes with the highest speed-up (the fewest where two tie within 2%)."""
        top = max(self.table.values())
        return min(int(k) for k, v in self.table.items() if v >= 0.98 * top)

    def describe(self, lanes: int) -> str:
        """One sentence: the lanes, their speed-up, and whether it was measured or is assumed."""
        shown = ", ".join(f"{k}: {v:.2f}x" for k, v in sorted(self.table.items()))
        if self.measured:
            return (
                f"{lanes} lane(s), {self.at(lanes):.2f}x the throughput of one (measured on "
                f"{self.gpu or 'this device'} by an earlier slot: {shown})"
            )
        return (
            f"{lanes} lane(s), ASSUMED {self.at(lanes):.2f}x the throughput of one (stated, not measured: {shown}; "
            "the next slot measures it)"
        )


def speed(out: Path | None, profile: str, device: str) -> Speed:
    """The lane speed on ``device``: measured (``lanes.json`` of ``out``) or assumed."""
    report = read(out, profile) if out is not None else None
    entry = ((report or {}).get("devices") or {}).get(device)
    if entry:
        return Speed({int(k): float(v) for k, v in entry["speedup"].items()}, True, entry.get("gpu"))
    return Speed(dict(ASSUMED), False)


def path(out: Path, profile: str) -> Path:
    return reports.reports_dir(out, profile) / "lanes.json"


def read(out: Path, profile: str) -> dict | None:
    return reports.read_report(out, profile, "lanes.json")


def file(out: Path, profile: str, device: str, result: dict) -> dict:
    """File a measurement of ``device`` in ``lanes.json`` (other devices' kept); returns the report."""
    report = read(out, profile) or {}
    report.update(format=FORMAT, profile=profile)
    report.setdefault("devices", {})[device] = result
    reports.write_json(path(out, profile), report)
    return report


def concurrency(spans: Sequence[tuple[float, float]], start: float, end: float) -> float:
    """The mean number of ``spans`` ((start, end) of the runs in lanes) that overlap each moment of [start, end]
    (a run's own span among them): how many lanes were busy, on average, while it ran; at least 1."""
    if end <= start:
        return 1.0
    busy = sum(max(0.0, min(e, end) - max(s, start)) for s, e in spans)
    return max(1.0, busy / (end - start))


def alone_minutes(wall_s: float, busy: float, lane_speed: Speed) -> float:
    """The minutes a run that took ``wall_s`` seconds beside ``busy`` busy lanes (its own included) would take alone."""
    return wall_s / 60 * lane_speed.at(busy) / busy


def representative(runs: Sequence[PlannedRun]) -> PlannedRun | None:
    """The run a slot measures its lanes on: its first run that the shared trainer trains on its own data."""
    return next((r for r in runs if r.procedure.fn is None and r.procedure.source is None and not r.needs), None)


# --- the measurement (in worker processes) -------------------------------------------------------------------------

_WORKER: dict = {}  # in a worker: the session and batches of the measured run, and the barriers


def _init(threads: int, barriers: dict) -> None:
    torch.set_num_threads(threads)
    signals.watch_parent()  # no worker outlives its parent
    _WORKER["barriers"] = barriers


def _step() -> int:
    s, batches = _WORKER["session"], _WORKER["batches"]
    _, _, tokens = trainer.forward_backward(s, batches)
    trainer.update(s, s.cfg.train.lr)
    return tokens


def _sync() -> None:
    if _WORKER["session"].cfg.device == "cuda":
        torch.cuda.synchronize()


def _warm(cfg: RunConfig, timeout: float) -> float:
    """Build the run's session in this worker and take two steps (the compile, where it compiles), then wait until
    every worker has: each worker takes one of these. Returns its seconds."""
    t0 = time.perf_counter()
    try:
        s = trainer.setup(cfg)
        batches = [{k: v.to(s.device) for k, v in b.items()} for b in s.source.train_batches(0)]
        _WORKER.update(session=s, batches=batches)
        _step()
        _step()
        _sync()
    except BaseException:
        _WORKER["barriers"]["warm"].abort()  # the others stop waiting: the measurement fails with this error
        raise
    _WORKER["barriers"]["warm"].wait(timeout)
    return time.perf_counter() - t0


def _lanes(n: int, seconds: float, timeout: float) -> tuple[int, float, float, int]:
    """One of ``n`` lanes: once all ``n`` are here, train for ``seconds``; (tokens, start, end, steps)."""
    _WORKER["barriers"][n].wait(timeout)
    t0, tokens, steps = time.time(), 0, 0
    while steps == 0 or time.time() - t0 < seconds:
        tokens += _step()
        steps += 1
    _sync()
    return tokens, t0, time.time(), steps


def levels_for(device: str) -> tuple[int, ...]:
    """The numbers of lanes measured: :data:`LEVELS` on a GPU; on a CPU (the rehearsal) those within its cores."""
    if device == "cuda":
        return LEVELS
    return tuple(n for n in LEVELS if n <= max(1, os.cpu_count() or 1)) or (1,)


def measure(
    run: PlannedRun,
    levels: Sequence[int] = LEVELS,
    seconds: float = MEASURE_S,
    *,
    threads: int = 1,
    timeout: float = 300.0,
    log: Callable = print,
) -> dict:
    """Aggregate tokens/s of ``run``'s training steps at each number of lanes in ``levels`` (see the module doc):
    ``max(levels)`` processes, each building the run once; then for each number n, n of them stepping side by side for
    ``seconds``. Returns the speed-ups (:class:`Speed`'s table), each level's figures and the wall seconds."""
    t_start = time.perf_counter()
    cfg = run.config
    n = max(levels)
    context = multiprocessing.get_context("spawn")
    barriers = {"warm": context.Barrier(n), **{k: context.Barrier(k) for k in levels}}
    pool = cf.ProcessPoolExecutor(max_workers=n, mp_context=context, initializer=_init, initargs=(threads, barriers))
    try:
        warm = [f.result() for f in [pool.submit(_warm, cfg, timeout) for _ in range(n)]]
        log(f"    lanes: {run.id} built in {n} processes ({max(warm):.0f} s)")
        found = {}
        for k in levels:
            got = [f.result() for f in [pool.submit(_lanes, k, seconds, timeout) for _ in range(k)]]
            wall = max(e for _, _, e, _ in got) - min(s for _, s, _, _ in got)
            found[k] = {
                "tokens_per_s": round(sum(t for t, _, _, _ in got) / wall, 1),
                "seconds": round(wall, 2),
                "steps": [st for _, _, _, st in got],
            }
            log(f"    lanes: {k} side by side: {found[k]['tokens_per_s']:,.0f} tokens/s in all")
    except BaseException:
        signals.forward([p.pid for p in (getattr(pool, "_processes", None) or {}).values()], signal.SIGTERM)
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
    one = found[min(levels)]["tokens_per_s"]
    return {
        "run": run.id,
        "levels": {str(k): v for k, v in found.items()},
        "seconds_per_level": seconds,
        "speedup": {str(k): round(v["tokens_per_s"] / one, 3) for k, v in found.items()},
        "wall_s": round(time.perf_counter() - t_start, 1),
        "threads": threads,
    }


__all__ = [
    "ASSUMED",
    "FORMAT",
    "LEVELS",
    "MEASURE_MIN",
    "MEASURE_S",
    "Speed",
    "alone_minutes",
    "concurrency",
    "file",
    "levels_for",
    "measure",
    "path",
    "read",
    "representative",
    "speed",
]
