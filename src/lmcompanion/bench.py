"""Throughput and memory of one experiment's training step: ``python -m lmcompanion bench NAME --profile P``.

It builds the planned run (:func:`lmcompanion.experiments.planned`) exactly as the trainer does
(:func:`lmcompanion.train.trainer.setup`: device, data or the procedure's batch source, model, optimizer, autocast,
compile), takes the real micro-batches of the run's first step, and times ``--steps``
optimizer steps after ``--warmup`` untimed ones. It prints tokens per second, the model FLOPs utilisation (MFU: the
counted training FLOPs per token, ``Model.flops_per_token``, against the GPU's dense bf16 peak) and the peak memory.

``--bare`` also times a bare loop on the same model, optimizer and batches (forward, backward, optimizer step and
nothing else), interleaved with the trainer's step in rounds so that both see the same machine state, and prints
the trainer's overhead. It prints figures; nothing asserts a speed.
"""

from __future__ import annotations

import time

import torch

from .errors import ConfigError
from .estimate import peak_flops
from .experiments import PlannedRun
from .train import trainer


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def bench(run: PlannedRun, steps: int = 20, warmup: int = 5, bare: bool = False, rounds: int = 5) -> dict:
    """Time ``steps`` optimizer steps of a planned run (see the module doc)."""
    if steps < 1 or warmup < 0 or rounds < 1:
        raise ConfigError(f"bench needs --steps >= 1, --warmup >= 0 and --rounds >= 1 (got {steps}, {warmup}, {rounds})")
    proc, cfg = run.procedure, run.config
    if proc.fn is not None and proc.source is None:
        raise ConfigError(f"{cfg.name} is trained by {proc.name} ({proc.description}), not by the trainer's step: "
                          "bench times the trainer's step only")
    for need in run.needs:  # the runs its batches are made from
        need.train()
    with trainer.memory_guard(cfg, "building the model"):
        s = trainer.setup(cfg, source=proc.source(cfg) if proc.source is not None else None)
    if cfg.device == "cuda":
        torch.cuda.reset_peak_memory_stats(s.device)
    batches = [{k: v.to(s.device) for k, v in b.items()} for b in s.source.train_batches(0)]
    lr = cfg.train.lr

    def trainer_step() -> int:
        _, _, tokens = trainer.forward_backward(s, batches)
        trainer.update(s, lr)
        return tokens

    def bare_step() -> int:
        for batch in batches:
            with s.autocast():
                loss = s.run_model(**batch).loss
            (loss / len(batches)).backward()
        s.optimizer.step()
        s.optimizer.zero_grad(set_to_none=True)
        return 0

    def timed(fn, n: int) -> float:
        _sync(s.device)
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        _sync(s.device)
        return time.perf_counter() - t0

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
