"""The model-agnostic training loop.

It knows three things about a run: a data source (``train_batches(step)``, ``eval_batches(split, step)``), a
model whose ``forward(**batch)`` returns a :class:`~lmcompanion.models.ModelOutput`, and a
:class:`~lmcompanion.config.TrainConfig`. Everything model-specific (auxiliary losses and their coefficients)
lives in the model.

One optimizer step = ``grad_accum`` micro-batches, split over DDP processes; gradients are synchronised once,
on each process's last micro-batch. AdamW decays only parameters with dim >= 2 and is fused on CUDA. On CUDA the
forward passes run under bf16 autocast with TF32 matmuls; ``compile=True`` wraps the model in torch.compile.

Evaluation (every ``eval_interval`` steps and after the last) runs in eval mode over K batches of each split.
Metrics go to ``metrics.jsonl``; checkpoints (model, optimizer, RNG state, step) are written atomically, and a
run that finds a checkpoint in its folder resumes from it. A NaN/inf loss stops the run before the bad update,
keeping a checkpoint of the last good weights and every metric logged so far.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import signal
import threading
import time
from pathlib import Path
from typing import Callable, Iterable

import torch
from torch.nn.parallel import DistributedDataParallel as DDP

from .. import data as data_mod
from .. import models
from ..errors import CheckpointError, TrainingDiverged
from . import checkpoint, distributed
from .schedules import lr_at
from .seeding import seed_everything

CKPT = "ckpt.pt"
WEIGHTS = "model.pt"
METRICS = "metrics.jsonl"


def make_optimizer(model: torch.nn.Module, cfg, device_type: str) -> torch.optim.AdamW:
    """AdamW with weight decay on parameters of dim >= 2 (matrices, embeddings) and none on the rest."""
    params = [p for p in model.parameters() if p.requires_grad]
    unique = list({id(p): p for p in params}.values())
    groups = [
        {"params": [p for p in unique if p.dim() >= 2], "weight_decay": cfg.weight_decay},
        {"params": [p for p in unique if p.dim() < 2], "weight_decay": 0.0},
    ]
    fused = device_type == "cuda"
    return torch.optim.AdamW(groups, lr=cfg.lr, betas=(cfg.beta1, cfg.beta2), eps=cfg.eps, fused=fused)


def autocast_dtype(cfg, device_type: str) -> torch.dtype | None:
    """The autocast dtype, or None for plain fp32."""
    if cfg.dtype == "fp32":
        return None
    if cfg.dtype == "auto":
        if device_type == "cuda" and torch.cuda.is_bf16_supported():
            return torch.bfloat16
        return None
    return torch.bfloat16 if cfg.dtype == "bf16" else torch.float16


def _progress_enabled(progress: bool | None) -> bool:
    if progress is not None:
        return progress
    return os.environ.get("LMC_PROGRESS", "1") not in ("0", "false", "off")


class _Metrics:
    """Append-only JSONL; on resume, records after the checkpoint's step are dropped."""

    def __init__(self, path: Path, keep_until: int | None, enabled: bool):
        self.path, self.enabled = path, enabled
        if not enabled:
            return
        if keep_until is None:
            path.write_text("")
        elif path.exists():
            kept = [line for line in path.read_text().splitlines() if line and json.loads(line)["step"] <= keep_until]
            path.write_text("".join(line + "\n" for line in kept))
        self.f = open(path, "a")

    def write(self, record: dict) -> None:
        if self.enabled:
            self.f.write(json.dumps(record) + "\n")
            self.f.flush()

    def close(self) -> None:
        if self.enabled:
            self.f.close()


@torch.no_grad()
def evaluate(model, source, step: int, device: torch.device, amp, d: distributed.Dist) -> dict[str, float]:
    """Mean loss of K batches per split, in eval mode (plain cross-entropy), over all processes."""
    model.eval()
    out = {}
    for split in source.eval_splits:
        acc = torch.zeros(2, dtype=torch.float64, device=device)
        for batch in source.eval_batches(split, step):
            batch = {k: v.to(device, non_blocking=True) for k, v in batch.items()}
            with amp():
                loss = model(**batch).loss
            acc[0] += loss.double()
            acc[1] += 1
        distributed.all_reduce_sum(acc, d)
        out[split] = (acc[0] / acc[1]).item()
    model.train()
    return out


class _GracefulStop:
    """The first Ctrl-C (SIGINT) lets the current step finish and then stops with a checkpoint; a second one
    interrupts at once. Outside the main thread (where signals cannot be caught) it does nothing."""

    def __enter__(self):
        self.requested = False
        self._old = None
        if threading.current_thread() is threading.main_thread():
            self._old = signal.signal(signal.SIGINT, self._handler)
        return self

    def _handler(self, signum, frame):
        if self.requested:
            raise KeyboardInterrupt
        self.requested = True

    def __exit__(self, *exc):
        if self._old is not None:
            signal.signal(signal.SIGINT, self._old)
        return False


def train(cfg, run_dir: Path, *, progress: bool | None = None,
          callbacks: Iterable[Callable[[int], None]] = ()) -> dict:
    """Train ``cfg`` (a RunConfig) in ``run_dir``, resuming from its checkpoint if one is there.

    Returns the summary: final and best evaluations, throughput, parameter counts. ``callbacks`` are called
    with the number of completed steps at the end of each step; one that raises KeyboardInterrupt stops the
    run exactly like Ctrl-C (tests use this to interrupt and resume).
    """
    run_dir = Path(run_dir)
    tc = cfg.train
    d = distributed.setup(cfg.device)
    distributed.check_accumulation(tc.grad_accum, d)  # on every process, before any collective call
    device = torch.device(f"cuda:{d.local_rank}" if cfg.device == "cuda" else "cpu")
    if cfg.device == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
    seed_everything(cfg.seed, deterministic=tc.deterministic)

    # Data first: rank 0 tokenizes and caches, the others then read the cache.
    if d.is_main:
        source = data_mod.build_source(cfg, d.rank, d.world)
    distributed.barrier(d)
    if not d.is_main:
        source = data_mod.build_source(cfg, d.rank, d.world)

    torch.manual_seed(cfg.seed)  # the same initial weights on every process
    model = models.build(cfg.model).to(device)
    optimizer = make_optimizer(model, tc, cfg.device)

    start, train_time, tokens = 0, 0.0, 0
    ckpt_path = run_dir / CKPT
    if ckpt_path.exists():
        state = checkpoint.load(ckpt_path, map_location=device)
        if state.get("config") != cfg.to_dict():
            raise CheckpointError(f"{ckpt_path} belongs to another config; move it away to start this run afresh")
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        start, train_time, tokens = int(state["step"]), float(state["train_time"]), int(state["tokens"])
        torch.set_rng_state(state["rng_cpu"].cpu())
        if cfg.device == "cuda" and "rng_cuda" in state:
            torch.cuda.set_rng_state(state["rng_cuda"].cpu(), device)
    if d.rank:  # different dropout masks on each process, as nanoGPT does
        torch.manual_seed(cfg.seed + 1000 * d.rank + start)

    run_model = torch.compile(model) if tc.compile else model
    ddp_model = DDP(run_model, device_ids=[d.local_rank] if cfg.device == "cuda" else None) if d.enabled else run_model

    dtype = autocast_dtype(tc, cfg.device)
    amp = (lambda: torch.autocast(device_type=cfg.device, dtype=dtype)) if dtype else contextlib.nullcontext
    scaler = torch.amp.GradScaler(cfg.device, enabled=dtype == torch.float16)

    metrics = _Metrics(run_dir / METRICS, keep_until=start if start else None, enabled=d.is_main)
    history = _read_evals(run_dir / METRICS) if (start and d.is_main) else []
    ckpt_every = tc.ckpt_interval or tc.eval_interval

    def save_ckpt(step: int) -> None:
        if d.is_main:
            state = {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "step": step,
                     "train_time": train_time, "tokens": tokens, "rng_cpu": torch.get_rng_state(),
                     "config": cfg.to_dict()}
            if cfg.device == "cuda":
                state["rng_cuda"] = torch.cuda.get_rng_state(device)
            checkpoint.save(state, ckpt_path)
        distributed.barrier(d)

    bar = None
    if _progress_enabled(progress) and d.is_main:
        from tqdm.auto import tqdm

        bar = tqdm(total=tc.max_steps, initial=start, desc=cfg.name, unit="step", dynamic_ncols=True)

    completed = start
    try:
        with _GracefulStop() as stop:
            for step in range(start, tc.max_steps):
                t0 = time.perf_counter()
                lr = lr_at(step, tc)
                for group in optimizer.param_groups:
                    group["lr"] = lr
                batches = source.train_batches(step)
                n_local = len(batches)
                loss_sum = torch.zeros((), device=device)
                aux_sums: dict[str, torch.Tensor] = {}
                for i, batch in enumerate(batches):
                    batch = {k: v.to(device, non_blocking=True) for k, v in batch.items()}
                    defer_sync = d.enabled and i < n_local - 1  # all-reduce gradients once, on the last micro-batch
                    with ddp_model.no_sync() if defer_sync else contextlib.nullcontext():
                        with amp():
                            out = ddp_model(**batch)
                        scaler.scale(out.loss / n_local).backward()
                    loss_sum += out.loss.detach().float()
                    for name, value in (out.aux or {}).items():
                        aux_sums[name] = aux_sums.get(name, 0.0) + value.detach().float()
                    counted = batch["targets"] if "targets" in batch else next(iter(batch.values()))
                    tokens += counted.numel() * d.world
                logged = torch.stack([loss_sum, *aux_sums.values()]) / n_local
                logged = (distributed.all_reduce_sum(logged, d) / d.world).tolist()
                if not all(math.isfinite(v) for v in logged):
                    optimizer.zero_grad(set_to_none=True)
                    save_ckpt(completed)  # the weights are still those after the last good update
                    raise TrainingDiverged(
                        f"run {cfg.name!r} stopped at step {step}: the loss became {logged[0]} (lr {lr:.3g}). "
                        f"Its metrics and a checkpoint of the last good weights (step {completed}) are kept in "
                        f"{run_dir}. Lower train.lr, set train.grad_clip=1.0, or use train.dtype=fp32, and run "
                        "again (a changed config is a new run)."
                    )
                if tc.grad_clip > 0:
                    scaler.unscale_(optimizer)
                    torch.nn.utils.clip_grad_norm_(model.parameters(), tc.grad_clip)
                scaler.step(optimizer)
                scaler.update()
                optimizer.zero_grad(set_to_none=True)
                completed = step + 1
                if cfg.device == "cuda":
                    torch.cuda.synchronize(device)
                train_time += time.perf_counter() - t0

                if completed % tc.log_interval == 0 or completed == tc.max_steps or completed == start + 1:
                    record = {"step": completed, "loss": logged[0], "lr": lr}
                    record.update({f"aux/{k}": v for k, v in zip(aux_sums, logged[1:])})
                    metrics.write(record)
                if completed % tc.eval_interval == 0 or completed == tc.max_steps:
                    ev = evaluate(run_model, source, completed, device, amp, d)
                    metrics.write({"step": completed, **{f"eval/{k}": v for k, v in ev.items()}})
                    history.append({"step": completed, **ev})
                if completed % ckpt_every == 0 and completed < tc.max_steps:
                    save_ckpt(completed)
                if bar is not None:
                    bar.update(1)
                    bar.set_postfix(loss=f"{logged[0]:.4f}")
                for cb in callbacks:
                    cb(completed)
                if stop.requested:
                    raise KeyboardInterrupt
    except KeyboardInterrupt:
        if completed < tc.max_steps:  # keep what was computed; running the same config again resumes here
            save_ckpt(completed)
        raise
    finally:
        if bar is not None:
            bar.close()
        metrics.close()

    if d.is_main:
        checkpoint.save(model.state_dict(), run_dir / WEIGHTS)
    distributed.barrier(d)
    summary = _summary(cfg, model, history, train_time, tokens, start)
    if d.is_main and ckpt_path.exists():
        ckpt_path.unlink()  # the final weights are in model.pt; the optimizer state is no longer needed
    distributed.teardown(d)
    return summary


def _read_evals(path: Path) -> list[dict]:
    evals = []
    if path.exists():
        for line in path.read_text().splitlines():
            rec = json.loads(line)
            if any(k.startswith("eval/") for k in rec):
                evals.append({"step": rec["step"], **{k[5:]: v for k, v in rec.items() if k.startswith("eval/")}})
    return evals


def _summary(cfg, model, history: list[dict], train_time: float, tokens: int, start: int) -> dict:
    final = history[-1] if history else {}
    best = min(history, key=lambda r: r.get("val", math.inf)) if history else {}
    summary = {
        "steps": cfg.train.max_steps,
        "resumed_from": start or None,
        "final": {k: v for k, v in final.items() if k != "step"},
        "best": best,
        "params": model.num_params() if hasattr(model, "num_params") else None,
        "params_total": sum(p.numel() for p in {id(p): p for p in model.parameters()}.values()),
        "train_time_s": round(train_time, 3),
        "tokens": tokens,
        "tokens_per_s": round(tokens / train_time, 1) if train_time > 0 else None,
    }
    if cfg.device == "cuda":
        summary["peak_mem_bytes"] = torch.cuda.max_memory_allocated()
    return summary
