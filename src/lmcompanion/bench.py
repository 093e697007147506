"""Throughput and memory of one experiment's training step: ``python -m lmcompanion bench NAME --profile P``.

It builds the planned run (:func:`lmcompanion.experiments.planned`) exactly as the trainer does
(:func:`lmcompanion.train.trainer.setup`: device, data or the procedure's batch source, model, optimizer, autocast,
compile), takes the real micro-batches of the run's first step, and times ``--steps``
optimizer steps after ``--warmup`` untimed ones. It prints tokens per second, the model FLOPs utilisation (MFU: the
counted training FLOPs per token, ``Model.flops_per_token``, against the GPU's dense bf16 peak) and the peak memory.

``--bare`` also times a bare loop on the same model, optimizer and batches (forward, backward, optimizer step and
nothing else), interleaved with the trainer's step in rounds so that both see the same machine state, and prints
the trainer's overhead. It prints figures; nothing asserts a speed.

:func:`side_by_side` times two planned runs the same way, in one process: each arm's trainer step (its own model,
optimizer and first micro-batches) in interleaved rounds, the order alternating from round to round, and returns
each arm's seconds per step in every round. A chapter compares two models' time per step across those rounds (the
rounds, not the steps, are the samples: the load of a shared machine drifts over seconds, and interleaving gives
both arms the same drift). It measures the machine it runs on: time per step on a CPU is not time on a GPU.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import torch

from .errors import ConfigError
from .estimate import peak_flops
from .experiments import PlannedRun
from .stats import mean
from .train import trainer


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _check(steps: int, warmup: int, rounds: int) -> None:
    if steps < 1 or warmup < 0 or rounds < 1:
        raise ConfigError(f"bench needs --steps >= 1, --warmup >= 0 and --rounds >= 1 (got {steps}, {warmup}, {rounds})")


def _session(run: PlannedRun):
    """The trainer's session of a planned run (built as the trainer builds it) and the real micro-batches of its
    first step on its device."""
    proc, cfg = run.procedure, run.config
    if proc.fn is not None and proc.source is None:
        raise ConfigError(f"{cfg.name} is trained by {proc.name} ({proc.description}), not by the trainer's step: "
                          "bench times the trainer's step only")
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


def bench(run: PlannedRun, steps: int = 20, warmup: int = 5, bare: bool = False, rounds: int = 5) -> dict:
    """Time ``steps`` optimizer steps of a planned run (see the module doc)."""
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
    result = {"experiment": cfg.name, "device": cfg.device,
              "dtype": str(trainer.autocast_dtype(cfg.train, cfg.device) or torch.float32).replace("torch.", ""),
              "compile": cfg.train.compile, "threads": torch.get_num_threads(), "params": model.num_params(),
              "tokens/step": tokens, "s/step": round(seconds, 4), "tokens/s": round(tokens / seconds),
              "training FLOP/token (counted)": f"{model.flops_per_token():.4g}"}
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
    return result


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
        rows = [{"round": r + 1, f"{a} (s/step)": f"{x:.4f}", f"{b} (s/step)": f"{y:.4f}", "ratio": f"{x / y:.3f}"}
                for r, (x, y) in enumerate(zip(*self.seconds))]
        rows.append({"round": "mean", f"{a} (s/step)": f"{mean(self.seconds[0]):.4f}",
                     f"{b} (s/step)": f"{mean(self.seconds[1]):.4f}", "ratio": f"{mean(self.ratios()):.3f}"})
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
            for i in ((0, 1) if r % 2 == 0 else (1, 0)):
                s, batches = arms[i]
                seconds[i].append(_timed(lambda: _trainer_step(s, batches), steps, s.device) / steps)
    return SideBySide((a.name, b.name), (tuple(seconds[0]), tuple(seconds[1])), steps, a.config.device,
                      torch.get_num_threads())
