"""Throughput and memory of one experiment's training step: ``python -m lmcompanion bench NAME --profile P``.

It builds the planned run (:func:`lmcompanion.experiments.planned`) exactly as the trainer does
(:func:`lmcompanion.train.trainer.setup`: device, data or the procedure's batch source, model, optimizer, autocast,
compile), takes the real micro-batches of the run's first step, and times ``--steps``
optimizer steps after ``--warmup`` untimed ones. It prints tokens per second, the model FLOPs utilisation (MFU: the
counted training FLOPs per token, ``Model.flops_per_token``, against the GPU's dense bf16 peak) and the peak memory.

``--bare`` also times a bare loop on the same model, optimizer and batches (forward, backward, optimizer step and
nothing else), interleaved with the trainer's step in rounds so that both see the same machine state, and prints
the trainer's overhead. It prints figures; nothing asserts a speed.

:func:`sweep` benches one run at several micro-batches, smallest first, within a bounded time (no micro-batch is
started that the longest so far says would end past the allowance; the first that does not fit in memory ends it),
each also under the torch profiler for a few steps (:func:`idle_profile`: the share of the steps' time in which the
device ran nothing, its gaps and the operators that take its time). The GPU campaign's GPT-2-small bench is one.

:func:`side_by_side` times two planned runs the same way, in one process: each arm's trainer step (its own model,
optimizer and first micro-batches) in interleaved rounds, the order alternating from round to round, and returns
each arm's seconds per step in every round. A chapter compares two models' time per step across those rounds (the
rounds, not the steps, are the samples: the load of a shared machine drifts over seconds, and interleaving gives
both arms the same drift). It measures the machine it runs on: time per step on a CPU is not time on a GPU.

:func:`cpu_book` (``python -m lmcompanion bench-cpu``) times one representative ``cpu`` run per chapter by phase
(data, forward, backward, optimizer, evaluation) with its share of a ``torch.mm`` peak measured in the same process,
and, given a git revision, that revision's code beside this one in interleaved rounds.
"""

from __future__ import annotations

import atexit
import gc
import importlib
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import torch

from . import experiments, paths
from .formats import number
from .errors import ConfigError, OutOfMemory
from .estimate import peak_flops
from .experiments import PlannedRun
from .stats import mean
from .train import trainer


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _check(steps: int, warmup: int, rounds: int) -> None:
    if steps < 1 or warmup < 0 or rounds < 1:
        raise ConfigError(
            f"bench needs --steps >= 1, --warmup >= 0 and --rounds >= 1 (got {steps}, {warmup}, {rounds})"
        )


def _session(run: PlannedRun):
    """The trainer's session of a planned run (built as the trainer builds it) and the real micro-batches of its
    first step on its device."""
    proc, cfg = run.procedure, run.config
    if proc.fn is not None and proc.source is None:
        raise ConfigError(
            f"{cfg.name} is trained by {proc.name} ({proc.description}), not by the trainer's step: "
            "bench times the trainer's step only"
        )
    for need in run.needs:  # the runs its batches are made from
        need.train()
    with trainer.memory_guard(cfg, "building the model"):
        s = trainer.setup(cfg, source=proc.source(cfg) if proc.source is not None else None)
    batches = [{k: v.to(s.device) for k, v in b.items()} for b in s.source.train_batches(0)]
    return s, batches


def _trainer_step(s, batches) -> int:
    """One optimizer step of the trainer on ``batches`` (at the run's peak learning rate); the tokens it processed."""
    _, _, tokens = trainer.forward_backward(s, batches)
    trainer.update(s, s.cfg.train.lr)
    return tokens


def _timed(fn, n: int, device: torch.device) -> float:
    _sync(device)
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    _sync(device)
    return time.perf_counter() - t0


def bench(
    run: PlannedRun, steps: int = 20, warmup: int = 5, bare: bool = False, rounds: int = 5, profile_steps: int = 0
) -> dict:
    """Time ``steps`` optimizer steps of a planned run (see the module doc); then, with ``profile_steps``, that many
    more under the torch profiler (:func:`idle_profile`, in the result's ``profile``)."""
    _check(steps, warmup, rounds)
    cfg = run.config
    s, batches = _session(run)
    if cfg.device == "cuda":
        torch.cuda.reset_peak_memory_stats(s.device)

    def trainer_step() -> int:
        return _trainer_step(s, batches)

    def bare_step() -> int:
        for batch in batches:
            with s.autocast():
                loss = s.run_model(**batch).loss
            (loss / len(batches)).backward()
        s.optimizer.step()
        s.optimizer.zero_grad(set_to_none=True)
        return 0

    def timed(fn, n: int) -> float:
        return _timed(fn, n, s.device)

    with trainer.memory_guard(cfg, "a benchmarked training step"):
        for _ in range(warmup):
            tokens = trainer_step()
            if bare:
                bare_step()
        tokens = trainer_step()
        t_trainer = t_bare = 0.0
        for _ in range(rounds if bare else 1):  # interleaved rounds: both loops see the same machine state
            t_trainer += timed(trainer_step, steps)
            if bare:
                t_bare += timed(bare_step, steps)
    n_steps = steps * (rounds if bare else 1)
    seconds = t_trainer / n_steps
    model = s.model
    result = {
        "experiment": cfg.name,
        "device": cfg.device,
        "dtype": str(trainer.autocast_dtype(cfg.train, cfg.device) or torch.float32).replace("torch.", ""),
        "compile": cfg.train.compile,
        "threads": torch.get_num_threads(),
        "params": model.num_params(),
        "tokens/step": tokens,
        "s/step": round(seconds, 4),
        "tokens/s": round(tokens / seconds),
        "training FLOP/token (counted)": f"{model.flops_per_token():.4g}",
    }
    if bare:
        result["bare loop s/step"] = round(t_bare / n_steps, 4)
        result["trainer overhead"] = f"{100 * (t_trainer / t_bare - 1):+.1f}%"
    if cfg.device == "cuda":
        name = torch.cuda.get_device_name(s.device)
        peak = peak_flops(name)
        result["gpu"] = name
        result["peak memory (GiB)"] = round(torch.cuda.max_memory_allocated(s.device) / 2**30, 2)
        if peak:
            result["MFU"] = round(model.flops_per_token() * tokens / seconds / peak, 3)
    if profile_steps:
        with trainer.memory_guard(cfg, "a profiled training step"):
            result["profile"] = idle_profile(trainer_step, profile_steps, s.device)
    return result


def idle_profile(fn, n: int, device: torch.device, top: int = 8) -> dict:
    """What the torch profiler sees over ``n`` calls of ``fn`` (training steps) on ``device``: over the span of the
    recorded events, the time in which the device ran nothing (on a GPU no kernel ran; on the CPU no top-level
    operator of this thread: the host's own time between them), its share, its gaps, and the operators that take the
    device's time, by their total."""
    from torch.profiler import ProfilerActivity, profile

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])
    _sync(device)
    with profile(activities=activities) as prof:
        for _ in range(n):
            fn()
        _sync(device)
    return idle_summary(prof.events(), device.type == "cuda", top)


def idle_summary(events, on_gpu: bool, top: int = 8) -> dict:
    """:func:`idle_profile`'s figures from the profiler's events (each with a ``time_range`` in microseconds, a
    ``name``, a ``device_type`` and a ``cpu_parent``)."""
    from torch.autograd import DeviceType

    def device_side(e) -> bool:
        return getattr(e, "device_type", DeviceType.CPU) != DeviceType.CPU

    work = (
        [e for e in events if device_side(e)]
        if on_gpu
        else [e for e in events if not device_side(e) and e.cpu_parent is None]
    )
    spans = sorted((e.time_range.start, e.time_range.end) for e in events)
    if not work or not spans:
        return {"work": "none recorded"}
    start, end = spans[0][0], max(e for _, e in spans)
    busy, gaps, at = 0.0, [], start
    for a, b in sorted((e.time_range.start, e.time_range.end) for e in work):
        if a > at:
            gaps.append(a - at)
        busy += max(0.0, b - max(a, at))
        at = max(at, b)
    if end > at:
        gaps.append(end - at)
    totals: dict[str, float] = {}
    for e in work:
        totals[e.name] = totals.get(e.name, 0.0) + (e.time_range.end - e.time_range.start)
    window = max(end - start, 1e-9)
    return {
        "work": "GPU kernels" if on_gpu else "top-level CPU operators",
        "span (ms)": round(window / 1e3, 3),
        "busy (ms)": round(busy / 1e3, 3),
        "idle fraction": round(1 - busy / window, 4),
        "gaps": len(gaps),
        "largest gap (ms)": round(max(gaps, default=0.0) / 1e3, 3),
        "top": [
            {"name": name[:120], "share of busy": round(t / max(busy, 1e-9), 4)}
            for name, t in sorted(totals.items(), key=lambda kv: -kv[1])[:top]
        ],
    }


def sweep(
    run: PlannedRun,
    batches: Sequence[int],
    steps: int = 10,
    warmup: int = 3,
    allowance_s: float = math.inf,
    profile_steps: int = 0,
    clock=time.perf_counter,
) -> dict:
    """:func:`bench` of ``run`` at each micro-batch of ``batches`` (smallest first; each a fresh session, compiled
    afresh where the run compiles, Dynamo's cache emptied between them), each with ``profile_steps`` profiled steps.
    A micro-batch is started only while the time spent plus the longest micro-batch so far stays within
    ``allowance_s``; the first that does not fit in memory ends the sweep. Returns the fastest micro-batch's figures,
    and ``sweep``: an entry per micro-batch (its figures, or why it was not measured)."""
    if not batches or list(batches) != sorted(set(batches)) or batches[0] < 1:
        raise ConfigError(f"sweep needs increasing micro-batches of at least 1, got {list(batches)}")
    t0, longest, entries, stop = clock(), 0.0, [], None
    for mb in batches:
        spent = clock() - t0
        if stop is None and entries and spent + longest > allowance_s:
            stop = (
                f"not started: {spent:.0f} s of the {allowance_s:.0f} s allowance spent, and the longest "
                f"micro-batch so far took {longest:.0f} s"
            )
        if stop is not None:
            entries.append({"micro_batch": mb, "not measured": stop})
            continue
        cfg = run.config.replace(train=run.config.train.replace(batch_size=mb))
        started = clock()
        try:
            result = bench(PlannedRun(cfg, run.procedure, run.profile), steps, warmup, profile_steps=profile_steps)
        except OutOfMemory as exc:
            entries.append({"micro_batch": mb, "not measured": f"out of memory: {str(exc)[:200]}"})
            stop = f"not started: micro-batch {mb} did not fit in memory"
            continue
        finally:
            _release(cfg)
        longest = max(longest, clock() - started)
        entries.append({"micro_batch": mb, "seconds": round(clock() - started, 1), **result})
    measured = [e for e in entries if "tokens/s" in e]
    if not measured:
        raise OutOfMemory(f"{run.name}: no micro-batch of {list(batches)} fit: {entries[0]['not measured']}")
    best = max(measured, key=lambda e: e["tokens/s"])
    return {**best, "sweep": entries, "allowance_s": allowance_s, "sweep_s": round(clock() - t0, 1)}


def _release(cfg) -> None:
    """What one bench's session left: its graphs (so that the next micro-batch compiles afresh, its own static
    shapes) and, on a GPU, its cached memory."""
    gc.collect()
    if cfg.train.compile:
        torch._dynamo.reset()
    if cfg.device == "cuda":
        torch.cuda.empty_cache()


@dataclass(frozen=True)
class SideBySide:
    """Two arms' trainer steps timed in one process: ``seconds[i][r]`` is arm i's mean seconds per step in round r."""

    names: tuple[str, str]  # the two experiments
    seconds: tuple[tuple[float, ...], tuple[float, ...]]
    steps: int  # timed optimizer steps per arm per round
    device: str
    threads: int  # torch's CPU threads

    @property
    def rounds(self) -> int:
        return len(self.seconds[0])

    def per_step(self, name: str) -> list[float]:
        """One arm's seconds per step, round by round."""
        return list(self.seconds[self.names.index(name)])

    def ratios(self) -> list[float]:
        """The first arm's time per step over the second's, round by round."""
        return [a / b for a, b in zip(*self.seconds)]

    def table(self):
        """One row per round: each arm's seconds per step and their ratio; a last row with the means."""
        import pandas as pd

        a, b = self.names
        rows = [
            {"round": r + 1, f"{a} (s/step)": number(x), f"{b} (s/step)": number(y), "ratio": number(x / y)}
            for r, (x, y) in enumerate(zip(*self.seconds))
        ]
        rows.append(
            {
                "round": "mean",
                f"{a} (s/step)": number(mean(self.seconds[0])),
                f"{b} (s/step)": number(mean(self.seconds[1])),
                "ratio": number(mean(self.ratios())),
            }
        )
        return pd.DataFrame(rows).set_index("round")


def side_by_side(a: PlannedRun, b: PlannedRun, steps: int = 5, warmup: int = 2, rounds: int = 8) -> SideBySide:
    """Time the trainer's optimizer steps of two planned runs in one process, in ``rounds`` interleaved rounds of
    ``steps`` steps per arm after ``warmup`` untimed ones each (the structure of ``bench(..., bare=True)``, with a
    second model in place of the bare loop). The arm that goes first alternates from round to round, so that neither
    always runs on the state the other leaves (caches, clock). Each arm steps through its own first micro-batches at
    its peak learning rate, from its run's initial weights: what a step costs, not what it learns."""
    _check(steps, warmup, rounds)
    if a.config.device != b.config.device:
        raise ConfigError(f"side_by_side compares runs on one device, got {a.config.device} and {b.config.device}")
    arms = [_session(run) for run in (a, b)]
    seconds: tuple[list[float], list[float]] = ([], [])
    with trainer.memory_guard(a.config, "two benchmarked training steps"):
        for s, batches in arms:
            for _ in range(warmup):
                _trainer_step(s, batches)
        for r in range(rounds):
            for i in (0, 1) if r % 2 == 0 else (1, 0):
                s, batches = arms[i]
                seconds[i].append(_timed(lambda: _trainer_step(s, batches), steps, s.device) / steps)
    return SideBySide(
        (a.name, b.name), (tuple(seconds[0]), tuple(seconds[1])), steps, a.config.device, torch.get_num_threads()
    )


# --------------------------------------------------------------------------------------------------
# The CPU book's benchmark: one representative run per chapter, where its time goes, and the code of another
# revision side by side


PHASES = ("data", "forward", "backward", "optimizer", "evaluation")


def mm_peak(n: int = 1024, repeats: int = 10, clock=time.perf_counter) -> float:
    """The machine's measured fp32 peak in FLOP/s: the best of ``repeats`` ``torch.mm`` of two n x n matrices on
    torch's current threads (in this process, so under the load the benchmark itself sees)."""
    a, b = torch.randn(n, n), torch.randn(n, n)
    torch.mm(a, b)
    best = math.inf
    for _ in range(repeats):
        t0 = clock()
        torch.mm(a, b)
        best = min(best, clock() - t0)
    return 2 * n**3 / best


def representative(chapter: str, profile: str = "cpu") -> str | None:
    """A chapter's representative run for the benchmark: the first experiment its notebooks read (registration
    order) that runs at ``profile``, is trained by the shared trainer and reads no other run; None if it has none."""
    for name in experiments.chapter_names(chapter):
        if not experiments.runs_at(name, profile):
            continue
        run = experiments.planned(name, profile, 0, device="cpu")
        if run.procedure.fn is None and run.procedure.source is None and not run.needs:
            return name
    return None


# What another revision's code must have for cpu_book to time it beside this one (checked by the --against type,
# lmcompanion.argtypes.revision, before anything runs): the planner, the trainer's set-up and step, its memory guard,
# and the models' counted FLOPs.
REVISION_NEEDS = (
    ("src/lmcompanion/experiments/plan.py", "def planned("),
    ("src/lmcompanion/train/trainer.py", "def setup("),
    ("src/lmcompanion/train/trainer.py", "def update("),
    ("src/lmcompanion/train/trainer.py", "def evaluate("),
    ("src/lmcompanion/train/trainer.py", "def memory_guard("),
    ("src/lmcompanion/models/base.py", "def flops_per_token("),
)


def load_revision(rev: str, repo: Path | None = None):
    """The package as it is at git revision ``rev`` of its checkout, imported beside this one under another name
    (``lmcompanion_<rev>``; every import inside the package is relative), so that two versions of the code run in
    one process. It reads the same token caches as this checkout (``LMC_CACHE_DIR`` is set to them if unset).
    Its files are unpacked into a temporary folder named by this process (``lmc-rev-<pid>-*``), removed when the
    process ends (or, after a SIGKILL, by the next command: :func:`lmcompanion.resources.sweep_temporary`)."""
    repo = repo or paths.repo_root()
    if repo is None:
        raise ConfigError("--against needs a git checkout of the package (an editable install)")
    try:
        sha = subprocess.run(
            ["git", "rev-parse", "--short=12", "--verify", f"{rev}^{{commit}}"],
            cwd=repo,
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
    except (subprocess.CalledProcessError, FileNotFoundError) as exc:
        raise ConfigError(f"cannot resolve git revision {rev!r} in {repo}: {exc}") from None
    name = f"lmcompanion_{sha}"
    if name in sys.modules:
        return sys.modules[name]
    os.environ.setdefault("LMC_CACHE_DIR", str(paths.cache_dir()))
    tmp = Path(tempfile.mkdtemp(prefix=f"lmc-rev-{os.getpid()}-"))
    atexit.register(shutil.rmtree, tmp, True)  # its modules stay loaded; their files go when the process ends
    try:
        archive = subprocess.run(["git", "archive", sha, "src/lmcompanion"], cwd=repo, check=True, capture_output=True)
        subprocess.run(["tar", "-x", "-C", str(tmp)], input=archive.stdout, check=True)
    except subprocess.CalledProcessError as exc:
        raise ConfigError(
            f"revision {rev} ({sha}) has no package to time (git archive: "
            f"{(exc.stderr or b'').decode(errors='replace').strip()[:200]}): give a later revision"
        ) from None
    (tmp / "src" / "lmcompanion").rename(tmp / name)
    sys.path.insert(0, str(tmp))
    try:
        importlib.import_module(f"{name}.experiments")
        importlib.import_module(f"{name}.train.trainer")
        return sys.modules[name]
    except Exception as exc:  # noqa: BLE001  (its code, not ours: whatever it raises, the revision is the problem)
        raise ConfigError(
            f"the code of revision {rev} ({sha}) cannot be imported beside this one "
            f"({type(exc).__name__}: {str(exc)[:200]}): give a later revision"
        ) from None
    finally:
        sys.path.remove(str(tmp))


@dataclass
class _Arm:
    """One version of the code's session of a run, and its measurements round by round."""

    label: str
    trainer: object  # that version's lmcompanion.train.trainer
    session: object
    flops_per_token: float
    clock: object = time.perf_counter
    step: int = 0
    rounds: list = field(default_factory=list)  # per round: {phase: seconds per optimizer step}, tokens per step

    def _evals(self) -> int:
        tc = self.session.cfg.train
        return tc.max_steps // tc.eval_interval + (tc.max_steps % tc.eval_interval != 0)

    def measure(self, steps: int, evaluate: bool) -> None:
        """``steps`` optimizer steps, each phase timed on its own, then (``evaluate``) one evaluation, whose time
        is spread over the run's steps as the run spreads its evaluations."""
        s, clock = self.session, self.clock
        total = dict.fromkeys(PHASES, 0.0)
        tokens = 0
        for _ in range(steps):
            t0 = clock()
            batches = [{k: v.to(s.device) for k, v in b.items()} for b in s.source.train_batches(self.step)]
            total["data"] += clock() - t0
            for batch in batches:
                t0 = clock()
                with s.autocast():
                    out = s.run_model(**batch)
                t1 = clock()
                (out.loss / len(batches)).backward()
                total["backward"] += clock() - t1
                total["forward"] += t1 - t0
                counted = batch["targets"] if "targets" in batch else next(iter(batch.values()))
                tokens += counted.numel()
            t0 = clock()
            self.trainer.update(s, s.cfg.train.lr)
            total["optimizer"] += clock() - t0
            self.step = (self.step + 1) % s.cfg.train.max_steps
        per_step = {k: v / steps for k, v in total.items()}
        if evaluate:
            t0 = clock()
            self.trainer.evaluate(s.run_model, s.source, self.step, s.device, s.autocast, s.dist)
            per_step["evaluation"] = (clock() - t0) * self._evals() / s.cfg.train.max_steps
        self.rounds.append((per_step, tokens // steps))

    def phase(self, name: str) -> float:
        """Seconds per step in ``name`` (or "total"), the median over rounds."""
        return statistics.median(sum(r.values()) if name == "total" else r[name] for r, _ in self.rounds)

    def totals(self) -> list[float]:
        return [sum(r.values()) for r, _ in self.rounds]

    def flops_per_s(self) -> float:
        """Counted training FLOPs per second of the training step (evaluation left out)."""
        return self.flops_per_token * self.rounds[0][1] / (self.phase("total") - self.phase("evaluation"))

    def row(self, peak: float) -> dict:
        tokens = self.rounds[0][1]
        train = self.phase("total") - self.phase("evaluation")
        flops = self.flops_per_s()
        row = {
            "code": self.label,
            "tokens/s": round(tokens / train),
            "GFLOP/s": round(flops / 1e9, 1),
            "% of peak": round(100 * flops / peak, 1),
        }
        row.update({f"{p} ms": round(1e3 * self.phase(p), 2) for p in PHASES})
        row["step ms (with eval.)"] = round(1e3 * self.phase("total"), 2)
        row["run s (est.)"] = round(self.phase("total") * self.session.cfg.train.max_steps, 1)
        return row


def _arm(label: str, pkg, name: str, profile: str, clock) -> _Arm:
    if pkg is sys.modules[__package__]:
        run = pkg.experiments.planned(name, profile, 0, device="cpu")
        with pkg.train.trainer.memory_guard(run.config, "building the model"):
            s = pkg.train.trainer.setup(run.config)
        return _Arm(label, pkg.train.trainer, s, s.model.flops_per_token(), clock)
    try:  # another revision's code: what it lacks or refuses is the revision's problem, named as such
        run = pkg.experiments.planned(name, profile, 0, device="cpu")
        with pkg.train.trainer.memory_guard(run.config, "building the model"):
            s = pkg.train.trainer.setup(run.config)
        return _Arm(label, pkg.train.trainer, s, s.model.flops_per_token(), clock)
    except (AttributeError, TypeError, KeyError) as exc:
        raise ConfigError(
            f"the code of revision {label} cannot build {name} at {profile} ({type(exc).__name__}: "
            f"{str(exc)[:200]}): give a later revision, or name a chapter it has"
        ) from None


# Every chapter's representative run, and the masked mixer itself (the mixer chapter's first experiment is its
# transformer baseline).
DEFAULT = (*experiments.CHAPTERS, "mixer/flat_d512")


def cpu_book(
    chapters: Sequence[str] | None = None,
    profile: str = "cpu",
    against: str | None = None,
    steps: int = 3,
    warmup: int = 1,
    rounds: int = 4,
    evaluate: bool = True,
    threads: int | None = 1,
    clock: str | None = None,
) -> list[dict]:
    """For one representative run of each chapter (:func:`representative`; ``chapters`` may also name
    experiments; default :data:`DEFAULT`) at ``profile`` on the CPU: tokens per
    second, achieved GFLOP/s (counted training FLOPs, ``Model.flops_per_token``, over the training step's time) and
    their share of the peak :func:`mm_peak` measures in this process, and each phase's milliseconds per optimizer
    step: loading the step's batches (data), forward, backward, the optimizer update, and evaluation (one
    evaluation timed per round, spread over the run's steps the way the run spreads its evaluations).

    ``against`` (a git revision) also builds each run with the code of that revision (:func:`load_revision`) and
    times both versions in ``rounds`` interleaved rounds, the order alternating, so that a shared machine's load
    drifts over both alike; each row then carries the ratio of that revision's time per step to this code's. Every
    number is this machine's, under its load: it prints measurements; nothing asserts a speed.
    ``threads``: torch's CPU threads (1, as the book's build trains each notebook; None keeps torch's setting).
    ``clock``: "cpu" times the CPU time of this thread (``time.thread_time``: with one torch thread every kernel runs
    in it, and the time the thread waits for a core on a loaded machine is left out; contention for caches and
    memory is not), "wall" the elapsed time; default "cpu" with one thread, else "wall". The peak is the best
    :func:`mm_peak` of one before the runs and one after every round, timed by the same clock."""
    _check(steps, warmup, rounds)
    if threads is not None:
        torch.set_num_threads(threads)
    clock = clock or ("cpu" if torch.get_num_threads() == 1 else "wall")
    if clock not in ("cpu", "wall"):
        raise ConfigError(f"clock must be 'cpu' or 'wall', got {clock!r}")
    if clock == "cpu" and torch.get_num_threads() != 1:
        raise ConfigError("the cpu clock times one thread: use threads=1, or clock='wall'")
    tick = time.thread_time if clock == "cpu" else time.perf_counter
    peaks = [mm_peak(clock=tick)]
    this = sys.modules[__package__]
    other = load_revision(against) if against else None
    rows, measured = [], []
    for what in chapters or DEFAULT:
        chapter, name = (experiments.get(what).chapter, what) if "/" in what else (what, representative(what, profile))
        if name is None:
            rows.append({"chapter": chapter, "run": None, "note": f"no trainer run at {profile} reads no other run"})
            continue
        arms = [_arm("this", this, name, profile, tick)]
        if other is not None:
            arms.insert(0, _arm(against, other, name, profile, tick))
        for arm in arms:
            for _ in range(warmup):
                arm.measure(1, evaluate=False)
        for r in range(rounds):
            for arm in arms if r % 2 == 0 else arms[::-1]:
                arm.measure(steps, evaluate)
            peaks.append(mm_peak(clock=tick))
        for arm in arms:
            row = {"chapter": chapter, "run": name, **arm.row(max(peaks))}
            measured.append((row, arm))
            if other is not None:
                ratios = [a / b for a, b in zip(arms[0].totals(), arms[-1].totals())]
                row[f"{against} / this"] = f"{statistics.median(ratios):.3f} [{min(ratios):.3f}, {max(ratios):.3f}]"
            rows.append(row)
    for row, arm in measured:  # against the peak of every round, the later chapters' included
        row["% of peak"] = round(100 * arm.flops_per_s() / max(peaks), 1)
    for row in rows:
        row["peak GFLOP/s"] = round(max(peaks) / 1e9, 1)
        row["threads"] = torch.get_num_threads()
        row["clock"] = clock
    return rows
