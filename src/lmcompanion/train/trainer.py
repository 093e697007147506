"""The model-agnostic training loop.

It knows three things about a run: a data source (``train_batches(step)``, ``eval_batches(split, step)``), a
model whose ``forward(**batch)`` returns a :class:`~lmcompanion.models.ModelOutput`, and a
:class:`~lmcompanion.config.TrainConfig`. Everything model-specific (auxiliary losses and their coefficients)
lives in the model.

:func:`setup` builds everything a loop needs once (device, data, model, optimizer, autocast, compile, DDP);
:func:`forward_backward` and :func:`update` are one optimizer step. :func:`train` runs them; the benchmarks
(``lmcompanion.bench``) time the same two functions against a bare loop.

One optimizer step = ``grad_accum`` micro-batches, split over DDP processes; gradients are synchronised once,
on each process's last micro-batch. AdamW decays only parameters with dim >= 2 and is fused on CUDA, multi-tensor (foreach) on the CPU. On CUDA the
forward passes run under bf16 autocast with TF32 matmuls; ``compile=True`` wraps the model in torch.compile.

Evaluation (every ``eval_interval`` steps and after the last) runs in eval mode over K batches of each split.
Metrics go to ``metrics.jsonl``. Checkpoints (model, optimizer, scaler, the RNG state at the end of the step, the
step, and every metrics record so far) are written atomically, and a run that finds a checkpoint in its folder
resumes from it, byte-identical to a run that was never interrupted.

Interrupts: the first Ctrl-C (SIGINT), SIGTERM (a scheduler, ``timeout``) or SIGHUP (a closing terminal) lets the
current step, its evaluation and its checkpoint finish, then stops; a second one stops at once, but never inside the
critical section (the optimizer update and its bookkeeping, and
writing a checkpoint): there it takes effect when the section ends. So a checkpoint always holds the state after a
whole number of steps. A NaN/inf loss stops the run before the bad update, keeping the metrics and, when its
weights are finite, a checkpoint.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import signal
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable

import torch
from torch.nn.parallel import DistributedDataParallel as DDP

from .. import data as data_mod
from .. import models
from ..errors import SIGNALS, CheckpointError, ConfigError, OutOfMemory, TrainingDiverged, signal_exception
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
    # CUDA: the fused kernel. CPU: the multi-tensor (foreach) loop, which PyTorch picks by default only on CUDA; it
    # applies the same elementwise operations in the same order as the per-parameter loop (bitwise the same
    # weights, tests/test_trainer.py), with one call per operation for all parameters instead of one per parameter.
    # (The CPU fused kernel is faster still but rounds differently.)
    fused = device_type == "cuda"
    return torch.optim.AdamW(
        groups, lr=cfg.lr, betas=(cfg.beta1, cfg.beta2), eps=cfg.eps, fused=fused, foreach=None if fused else True
    )


def autocast_dtype(cfg, device_type: str) -> torch.dtype | None:
    """The autocast dtype, or None for plain fp32."""
    if cfg.dtype == "fp32":
        return None
    if cfg.dtype == "auto":
        if device_type == "cuda" and torch.cuda.is_bf16_supported():
            return torch.bfloat16
        return None
    return torch.bfloat16 if cfg.dtype == "bf16" else torch.float16


def check_device(device: str) -> None:
    if device == "cuda" and not torch.cuda.is_available():
        raise ConfigError(
            "device='cuda' was asked for but no CUDA GPU is visible; use device='cpu' "
            "(--device cpu, or -p device cpu in a notebook) or 'auto'"
        )


def _progress_enabled(progress: bool | None) -> bool:
    if progress is not None:
        return progress
    return os.environ.get("LMC_PROGRESS", "1") not in ("0", "false", "off")


# --------------------------------------------------------------------------------------------------
# Set-up and one step


@dataclass
class Session:
    """Everything a training loop needs, built once by :func:`setup`."""

    cfg: object
    dist: distributed.Dist
    device: torch.device
    source: object
    model: torch.nn.Module  # the plain module (its state_dict is what checkpoints hold)
    run_model: torch.nn.Module  # compiled when train.compile
    ddp_model: torch.nn.Module  # wrapped in DDP under torchrun
    optimizer: torch.optim.Optimizer
    scaler: torch.amp.GradScaler
    autocast: Callable[[], contextlib.AbstractContextManager]


def setup(cfg, source=None) -> Session:
    """Device, data, model (seeded exactly as a run starts), optimizer, autocast, compile and DDP for ``cfg``."""
    tc = cfg.train
    check_device(cfg.device)
    d = distributed.setup(cfg.device)
    distributed.check_accumulation(tc.grad_accum, d)  # on every process, before any collective call
    device = torch.device(f"cuda:{d.local_rank}" if cfg.device == "cuda" else "cpu")
    if cfg.device == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
    seed_everything(cfg.seed, deterministic=tc.deterministic)

    if source is None:  # rank 0 tokenizes and caches, the others then read the cache
        if d.is_main:
            source = data_mod.build_source(cfg, d.rank, d.world)
        distributed.barrier(d)
        if not d.is_main:
            source = data_mod.build_source(cfg, d.rank, d.world)

    torch.manual_seed(cfg.seed)  # the same initial weights on every process
    model = models.build(cfg.model).to(device)
    optimizer = make_optimizer(model, tc, cfg.device)
    run_model = torch.compile(model) if tc.compile else model
    ddp_model = DDP(run_model, device_ids=[d.local_rank] if cfg.device == "cuda" else None) if d.enabled else run_model
    dtype = autocast_dtype(tc, cfg.device)
    amp = (lambda: torch.autocast(device_type=cfg.device, dtype=dtype)) if dtype else contextlib.nullcontext
    scaler = torch.amp.GradScaler(cfg.device, enabled=dtype == torch.float16)
    return Session(cfg, d, device, source, model, run_model, ddp_model, optimizer, scaler, amp)


def forward_backward(s: Session, batches: list[dict]) -> tuple[list[float], list[str], int]:
    """Forward and backward over one step's micro-batches (gradients accumulate; nothing is updated).

    Returns the step's losses averaged over micro-batches and processes ([objective, *aux]), the aux names,
    and the number of target tokens processed by all processes.
    """
    d, n_local = s.dist, len(batches)
    loss_sum = torch.zeros((), device=s.device)
    aux_sums: dict[str, torch.Tensor] = {}
    tokens = 0
    for i, batch in enumerate(batches):
        batch = {k: v.to(s.device, non_blocking=True) for k, v in batch.items()}
        defer_sync = d.enabled and i < n_local - 1  # all-reduce gradients once, on the last micro-batch
        with s.ddp_model.no_sync() if defer_sync else contextlib.nullcontext():
            with s.autocast():
                out = s.ddp_model(**batch)
            s.scaler.scale(out.loss / n_local).backward()
        loss_sum += out.loss.detach().float()
        for name, value in (out.aux or {}).items():
            aux_sums[name] = aux_sums.get(name, 0.0) + value.detach().float()
        counted = batch["targets"] if "targets" in batch else next(iter(batch.values()))
        tokens += counted.numel() * d.world
    logged = torch.stack([loss_sum, *aux_sums.values()]) / n_local
    logged = (distributed.all_reduce_sum(logged, d) / d.world).tolist()
    return logged, list(aux_sums), tokens


def update(s: Session, lr: float) -> None:
    """Clip (if asked), take the optimizer step at learning rate ``lr``, clear the gradients."""
    for group in s.optimizer.param_groups:
        group["lr"] = lr
    if s.cfg.train.grad_clip > 0:
        s.scaler.unscale_(s.optimizer)
        torch.nn.utils.clip_grad_norm_(s.model.parameters(), s.cfg.train.grad_clip)
    s.scaler.step(s.optimizer)
    s.scaler.update()
    s.optimizer.zero_grad(set_to_none=True)


def mean_loss(out, batch) -> dict[str, tuple[torch.Tensor, int]]:
    """The default score of an evaluation batch: its mean loss, one batch counting once."""
    return {"": (out.loss.double(), 1)}


@torch.no_grad()
def evaluate(model, source, step: int, device: torch.device, amp, d: distributed.Dist) -> dict[str, float]:
    """Each split's score over its evaluation batches, in eval mode, over all processes: by default the mean loss of
    K batches (plain cross-entropy); a source with ``score(out, batch) -> {suffix: (sum, count)}`` says what it
    measures (the retrieval matcher: the cross-entropy and top-1 accuracy of every item, as ``split`` and
    ``split_acc``)."""
    score = getattr(source, "score", None) or mean_loss
    model.eval()
    out = {}
    for split in source.eval_splits:
        sums: dict[str, torch.Tensor] = {}
        for batch in source.eval_batches(split, step):
            batch = {k: v.to(device, non_blocking=True) for k, v in batch.items()}
            with amp():
                result = model(**batch)
            for suffix, (total, count) in score(result, batch).items():
                acc = sums.setdefault(suffix, torch.zeros(2, dtype=torch.float64, device=device))
                acc[0] += total
                acc[1] += count
        for suffix, acc in sums.items():
            distributed.all_reduce_sum(acc, d)
            out[split + suffix] = (acc[0] / acc[1]).item()
    model.train()
    return out


# --------------------------------------------------------------------------------------------------
# Interrupts and metrics


class Interrupts:
    """SIGINT, SIGTERM and SIGHUP handling: the first signal asks the loop to stop after the current step; a second
    one stops at once, except inside :meth:`critical`, where it is deferred to the section's end. SIGINT raises
    KeyboardInterrupt, the others :class:`~lmcompanion.errors.Terminated` (a KeyboardInterrupt naming the signal):
    the signals and their exceptions are the one table of :mod:`lmcompanion.errors`, which the command line's policy
    reads too. Outside the main thread (where signals cannot be caught) it does nothing."""

    def __enter__(self):
        self.count, self.depth, self.signum, self._old = 0, 0, signal.SIGINT, {}
        if threading.current_thread() is threading.main_thread():
            self._old = {s: signal.signal(s, self._handler) for s in SIGNALS}
        return self

    def _handler(self, signum, frame):
        self.count += 1
        self.signum = signum
        if self.count >= 2 and self.depth == 0:
            raise self.exception()

    def exception(self) -> KeyboardInterrupt:
        return signal_exception(self.signum)

    @property
    def stop_requested(self) -> bool:
        return self.count >= 1

    @contextlib.contextmanager
    def critical(self):
        self.depth += 1
        try:
            yield
        finally:
            self.depth -= 1
            if self.depth == 0 and self.count >= 2:
                raise self.exception()

    def __exit__(self, *exc):
        for s, old in self._old.items():
            signal.signal(s, old)
        return False


def _out_of_memory(exc: BaseException) -> bool:
    """Whether an exception is an allocation failure (CUDA, the CPU allocator, or Python's MemoryError)."""
    if isinstance(exc, (MemoryError, torch.OutOfMemoryError)):
        return True
    text = str(exc)
    return isinstance(exc, RuntimeError) and (
        "can't allocate memory" in text or "not enough memory" in text or "out of memory" in text.lower()
    )


@contextlib.contextmanager
def memory_guard(cfg, what: str):
    """Turn an allocation failure during ``what`` into :class:`~lmcompanion.errors.OutOfMemory`: what ran out, the
    batch that did not fit, and the settings to lower."""
    try:
        yield
    except (RuntimeError, MemoryError) as exc:
        if not _out_of_memory(exc):
            raise
        tc = cfg.train
        where = "GPU memory" if cfg.device == "cuda" else "memory (RAM)"
        eval_b = tc.eval_batch_size or tc.batch_size
        half = max(1, tc.batch_size // 2)
        raise OutOfMemory(
            f"{what} of {cfg.name} ran out of {where}: micro-batch {tc.batch_size} x {cfg.data.tokens_per_sequence(cfg.model):,} "
            f"tokens (global batch {tc.global_batch}; evaluation batch {eval_b}). Lower train.batch_size (raise "
            f"train.grad_accum to keep the global batch: e.g. --set train.batch_size={half} --set "
            f"train.grad_accum={tc.grad_accum * max(1, tc.batch_size // half)}), or train.eval_batch_size for the "
            "evaluations; a changed batch is a new run. Checkpoints already written are kept."
        ) from None


class _Metrics:
    """Append-only JSONL on the main process; every record is also kept in memory (checkpoints carry them, so a
    resumed run restores the file from its checkpoint even if the file was lost)."""

    def __init__(self, path: Path, records: list[dict], enabled: bool):
        self.path, self.enabled, self.records = path, enabled, list(records)
        if enabled:
            try:
                path.write_text("".join(json.dumps(r) + "\n" for r in self.records))
                self.f = open(path, "a")
            except OSError as exc:
                raise CheckpointError(
                    f"cannot write {path} ({exc.strerror}): free disk space or point LMC_RUNS_DIR at a writable folder"
                ) from None

    def write(self, record: dict) -> None:
        self.records.append(record)
        if self.enabled:
            try:
                self.f.write(json.dumps(record) + "\n")
                self.f.flush()
            except OSError as exc:
                raise CheckpointError(
                    f"cannot write {self.path} ({exc.strerror}): free disk space and run the same "
                    "command again (it resumes from the last checkpoint)"
                ) from None

    def evals(self) -> list[dict]:
        return [
            {"step": r["step"], **{k[5:]: v for k, v in r.items() if k.startswith("eval/")}}
            for r in self.records
            if any(k.startswith("eval/") for k in r)
        ]

    def close(self) -> None:
        if self.enabled:
            self.f.close()


def _finite(model: torch.nn.Module) -> bool:
    return all(bool(torch.isfinite(p).all()) for p in model.parameters())


# --------------------------------------------------------------------------------------------------
# The loop


def train(
    cfg, run_dir: Path, *, source=None, progress: bool | None = None, callbacks: Iterable[Callable[[int], None]] = ()
) -> dict:
    """Train ``cfg`` (a RunConfig) in ``run_dir``, resuming from its checkpoint if one is there.

    ``source`` replaces the batch source the data config builds (a procedure's, e.g. the retrieval matcher's items
    of another run's embeddings); a source with ``eval_at_start`` is also evaluated before the first step.
    Returns the summary: final and best evaluations, throughput, parameter counts. ``callbacks`` are called
    with the number of completed steps at the end of each step (outside the critical section); one that raises
    KeyboardInterrupt stops the run exactly like a second Ctrl-C (tests use this to interrupt and resume).
    """
    run_dir = Path(run_dir)
    tc = cfg.train
    with memory_guard(cfg, "building the model"):
        s = setup(cfg, source=source)
    d, device, model = s.dist, s.device, s.model

    start, train_time, tokens, records = 0, 0.0, 0, []
    ckpt_path = run_dir / CKPT
    if ckpt_path.exists():
        state = checkpoint.load(ckpt_path, map_location=device)
        if state.get("config") != cfg.to_dict():
            raise CheckpointError(f"{ckpt_path} belongs to another config; delete it to start this run afresh")
        model.load_state_dict(state["model"])
        s.optimizer.load_state_dict(state["optimizer"])
        s.scaler.load_state_dict(state["scaler"])
        start, train_time, tokens = int(state["step"]), float(state["train_time"]), int(state["tokens"])
        records = list(state["metrics"])
        torch.set_rng_state(state["rng_cpu"].cpu())
        if cfg.device == "cuda" and "rng_cuda" in state:
            torch.cuda.set_rng_state(state["rng_cuda"].cpu(), device)
    if d.rank:  # different dropout masks on each process, as nanoGPT does
        torch.manual_seed(cfg.seed + 1000 * d.rank + start)

    metrics = _Metrics(run_dir / METRICS, records, enabled=d.is_main)
    ckpt_every = tc.ckpt_interval or tc.eval_interval
    rng = {"cpu": torch.get_rng_state(), "cuda": torch.cuda.get_rng_state(device) if cfg.device == "cuda" else None}

    def save_ckpt(step: int) -> None:
        if d.is_main:
            state = {
                "model": model.state_dict(),
                "optimizer": s.optimizer.state_dict(),
                "scaler": s.scaler.state_dict(),
                "step": step,
                "train_time": train_time,
                "tokens": tokens,
                "rng_cpu": rng["cpu"],
                "config": cfg.to_dict(),
                "metrics": metrics.records,
            }
            if rng["cuda"] is not None:
                state["rng_cuda"] = rng["cuda"]
            checkpoint.save(state, ckpt_path)
        distributed.barrier(d)

    def run_eval(step: int) -> None:
        with memory_guard(cfg, f"the evaluation at step {step}"):
            ev = evaluate(s.run_model, s.source, step, device, s.autocast, d)
        metrics.write({"step": step, **{f"eval/{k}": v for k, v in ev.items()}})

    bar = None
    if _progress_enabled(progress) and d.is_main:
        from tqdm.auto import tqdm

        bar = tqdm(total=tc.max_steps, initial=start, desc=cfg.name, unit="step", dynamic_ncols=True)

    completed = start
    with Interrupts() as interrupts:
        try:
            # an interrupt during the evaluation of the checkpoint's own step: evaluate it now
            due = start and (start % tc.eval_interval == 0 or start == tc.max_steps)
            due = due or (start == 0 and getattr(s.source, "eval_at_start", False))
            if due and not any(e["step"] == start for e in metrics.evals()):
                run_eval(start)
            for step in range(start, tc.max_steps):
                t0 = time.perf_counter()
                lr = lr_at(step, tc)
                with memory_guard(cfg, f"training step {step}"):
                    logged, aux_names, step_tokens = forward_backward(s, s.source.train_batches(step))
                if not all(math.isfinite(v) for v in logged):
                    s.optimizer.zero_grad(set_to_none=True)
                    with interrupts.critical():
                        kept = _finite(model)
                        if kept:
                            save_ckpt(completed)  # the weights after the last good update
                    where = (
                        f"a checkpoint of the last good weights (step {completed}) is in {ckpt_path}"
                        if kept
                        else "the weights were already non-finite, so no checkpoint was written"
                        + (f"; {ckpt_path} holds an earlier step" if ckpt_path.exists() else "")
                    )
                    raise TrainingDiverged(
                        f"run {cfg.name!r} stopped at step {step}: the loss became {logged[0]} (lr {lr:.3g}). "
                        f"Its metrics are in {run_dir / METRICS}; {where}. Lower train.lr, set train.grad_clip=1.0, "
                        "or use train.dtype=fp32, and run again (a changed config is a new run)."
                    )
                with interrupts.critical():  # an update and its bookkeeping are never split by an interrupt
                    with memory_guard(cfg, f"the optimizer update of step {step}"):
                        update(s, lr)
                    if cfg.device == "cuda":
                        torch.cuda.synchronize(device)
                    completed = step + 1
                    tokens += step_tokens
                    train_time += time.perf_counter() - t0
                    rng["cpu"] = torch.get_rng_state()
                    if cfg.device == "cuda":
                        rng["cuda"] = torch.cuda.get_rng_state(device)
                    if completed % tc.log_interval == 0 or completed == tc.max_steps or completed == 1:
                        record = {"step": completed, "loss": logged[0], "lr": lr}
                        record.update({f"aux/{k}": v for k, v in zip(aux_names, logged[1:])})
                        metrics.write(record)

                if completed % tc.eval_interval == 0 or completed == tc.max_steps:
                    run_eval(completed)
                if completed % ckpt_every == 0 and completed < tc.max_steps:
                    with interrupts.critical():
                        save_ckpt(completed)
                if bar is not None:
                    bar.update(1)
                    bar.set_postfix(loss=f"{logged[0]:.4f}")
                for cb in callbacks:
                    cb(completed)
                if interrupts.stop_requested:
                    raise interrupts.exception()
        except KeyboardInterrupt:
            if completed < tc.max_steps:  # keep what was computed; running the same config again resumes here
                with interrupts.critical():
                    save_ckpt(completed)
            raise
        finally:
            if bar is not None:
                bar.close()
            metrics.close()

    if d.is_main:
        checkpoint.save(model.state_dict(), run_dir / WEIGHTS)
    distributed.barrier(d)
    summary = _summary(cfg, model, metrics.evals(), train_time, tokens, start, s.source.eval_splits)
    if d.is_main and ckpt_path.exists():
        ckpt_path.unlink()  # the final weights are in model.pt; the optimizer state is no longer needed
    distributed.teardown(d)
    return summary


def _summary(
    cfg, model, history: list[dict], train_time: float, tokens: int, start: int, splits: tuple[str, ...] = ("val",)
) -> dict:
    final = history[-1] if history else {}
    held_out = "val" if "val" in splits else splits[-1]  # the best evaluation: on validation, else the last split
    best = min(history, key=lambda r: r.get(held_out, math.inf)) if history else {}
    summary = {
        "steps": cfg.train.max_steps,
        "resumed_from": start or None,
        "final": {k: v for k, v in final.items() if k != "step"},
        "best": best,
        "params": model.num_params(),
        "params_total": models.count_params(model.parameters()),
        "train_time_s": round(train_time, 3),
        "tokens": tokens,
        "tokens_per_s": round(tokens / train_time, 1) if train_time > 0 else None,
    }
    if cfg.device == "cuda":
        summary["peak_mem_bytes"] = torch.cuda.max_memory_allocated()
    return summary
