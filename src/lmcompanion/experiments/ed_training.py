"""The write-up's ED-Training as a run-store procedure: one example at a time, in order, T epochs, plain gradient
steps on the summed loss J(θ) (``lmcompanion.models.formal_ed.ed_training``), kept in the run store like a trainer run.

It is the procedure ``"ed_training"`` of the experiment ``formal_ed/ed_training`` (registered in :mod:`.formal_ed`).
This module is the procedure's whole code path beyond the model, the data and the trainer's evaluation, so its run
key covers exactly that (and never the chapter's tables or verdicts).
"""

from __future__ import annotations

import contextlib
import json
import time
from pathlib import Path

import torch

from .. import models
from ..config import require
from ..data import build_source
from ..models.formal_ed import LiteralConfig, ed_training
from ..train import checkpoint
from ..train.distributed import Dist
from ..train.seeding import seed_everything
from ..train.trainer import evaluate


def _evaluate(model, source, device) -> dict[str, float]:
    return evaluate(model, source, 0, device, contextlib.nullcontext, Dist())


def literal_training(cfg, run_dir: Path, lit: LiteralConfig, **_) -> dict:
    """A run-store procedure: the write-up's ED-Training of ``cfg``'s model on the first ``lit.n`` training
    examples, in order, for ``lit.T`` epochs. It starts from the weights the trainer would start ``cfg`` from (same
    seed), evaluates on the trainer's evaluation batches, and writes ``metrics.jsonl`` (the mean J/(ℓ_X − 1) since
    the last evaluation as ``loss``, then the evaluations) and ``model.pt`` in the trainer's formats."""
    require(
        lit.n <= cfg.data.n_train,
        f"ED-Training's n={lit.n} exceeds data.n_train={cfg.data.n_train}: lower "
        "the notebook parameter literal_examples or raise data.n_train",
    )
    device = torch.device(cfg.device)
    seed_everything(cfg.seed, deterministic=cfg.train.deterministic)
    torch.manual_seed(cfg.seed)  # as the trainer does right before building the model
    model = models.build(cfg.model).to(device)
    source = build_source(cfg)
    train = source.splits["train"]
    examples = [tuple(t.to(device) for t in train.example(i)) for i in range(lit.n)]
    total = lit.T * lit.n
    eval_at = {round(k * total / lit.evals) for k in range(1, lit.evals + 1)}
    evals = [{"step": 0, **_evaluate(model, source, device)}]
    window: list[float] = []
    spent = {"eval": 0.0}
    with open(run_dir / "metrics.jsonl", "w") as metrics:

        def write(record: dict) -> None:
            metrics.write(json.dumps(record) + "\n")
            metrics.flush()

        write({"step": 0, **{f"eval/{k}": v for k, v in evals[0].items() if k != "step"}})

        def after_update(step: int, J: float) -> None:
            _, x = examples[(step - 1) % lit.n]
            window.append(J / (x.numel() - 1))  # nats per predicted token, as the trainer logs
            if step in eval_at:
                t0 = time.perf_counter()
                write({"step": step, "loss": sum(window) / len(window), "lr": lit.eta})
                ev = _evaluate(model, source, device)
                write({"step": step, **{f"eval/{k}": v for k, v in ev.items()}})
                evals.append({"step": step, **ev})
                model.train()
                window.clear()
                spent["eval"] += time.perf_counter() - t0

        start = time.perf_counter()
        ed_training(model, examples, T=lit.T, eta=lit.eta, callback=after_update)
        train_time = time.perf_counter() - start - spent["eval"]
    model.eval()
    checkpoint.save(model.state_dict(), run_dir / "model.pt")
    best = min(evals, key=lambda r: r["val"])
    return {
        "steps": total,
        "initial": {k: v for k, v in evals[0].items() if k != "step"},
        "final": {k: v for k, v in evals[-1].items() if k != "step"},
        "best": best,
        "params": model.num_params(),
        "train_time_s": round(train_time, 3),
    }


literal_training.settings_class = LiteralConfig  # how `lmcompanion retrain` rebuilds the settings from procedure.json
