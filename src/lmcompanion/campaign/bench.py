"""The benches of a GPU slot: the GPT-2-small shape (:func:`gpt2_small`, the MFU figure that can be compared with an
independent training script on the same shape) first in the first slot, and one model per family of the chapters
(:data:`BENCH`) only where a slot has minutes left at its end: every recorded GPU run carries its own tokens/s, peak
memory and MFU (:func:`lmcompanion.recorded.export`), so the chapters' speed does not wait for these.

Each bench is :func:`lmcompanion.bench.bench` (tokens/s, MFU against the device's dense bf16 peak, peak memory),
written into ``DIR/campaign/<profile>/bench.json``. The GPT-2-small bench is a sweep (:func:`lmcompanion.bench.sweep`,
issue 49, item 8): micro-batches 12 (nanoGPT's, slot 1's MFU of 0.361), 16, 24 and 32, each compiled afresh and timed,
then profiled for a few steps (the share of the time the GPU ran no kernel, its gaps, the kernels that take it), in
the one command, within :data:`SWEEP_ALLOWANCE_S` (the plan's estimate of the step); its figures are the fastest
micro-batch's.
"""

from __future__ import annotations

import dataclasses

import torch

from .. import contents, estimate, experiments
from ..bench import bench, sweep
from ..config import TrainConfig, check_profile
from ..data import LMDataConfig
from ..experiments import PlannedRun, Procedure
from ..models.baseline import BaselineConfig
from ..run import RunConfig

FORMAT = "lmcompanion-campaign-bench/1"
# One gpu model per model family the chapters train with the shared trainer (the retrieval matcher reads another
# run's embeddings, so its bench would first train that run: its speed is in its recorded runs' summaries).
BENCH = contents.bench()  # as each chapter declares it (chapter.toml), in the book's order
# A bench's estimate (stated, until a slot has measured it): building the model and its data (token caches from the
# pack) about 15 s; compiling a model of 12 to 52 blocks about 45 s (Inductor's caches make the runs of the same shape
# that follow cheaper); the timed steps as the book's estimate gives them (lmcompanion.estimate).
BENCH_SETUP_S, BENCH_COMPILE_S = 15.0, 45.0
BENCH_STEPS, BENCH_WARMUP = 10, 3
# At the small profiles (the rehearsal) a bench only has to run its code path: 2 timed steps after 1 untimed.
REHEARSAL_BENCH_STEPS, REHEARSAL_BENCH_WARMUP = 2, 1
# The GPT-2-small sweep (issue 49, item 8: toward an MFU of 0.5 from slot 1's 0.361 at micro-batch 12): the
# micro-batches, the steps each is profiled for, and the time it may take. Slot 1's whole bench took 0.38 min on an H200 (the model
# and its data built, one compile, 14 steps), so four micro-batches, each compiled afresh, take about 1.5 min; no
# micro-batch starts that the longest so far says would end past the allowance, and the plan counts the step at the
# allowance and the set-up. The rehearsal's stand-in sweeps two micro-batches.
SWEEP_BATCHES, REHEARSAL_SWEEP_BATCHES = (12, 16, 24, 32), (4, 8)
SWEEP_ALLOWANCE_S, PROFILE_STEPS = 120.0, 3
GPT2 = "bench/gpt2_small"


class RandomTokens:
    """Uniform random token windows: the GPT-2-small bench's batches (a step's speed does not depend on the ids), a
    function of the step."""

    eval_splits = ("val",)

    def __init__(self, cfg: RunConfig):
        self.cfg, self.V, self.T = cfg, cfg.model.vocab_size, cfg.model.context_size

    def train_batches(self, step: int) -> list[dict[str, torch.Tensor]]:
        tc = self.cfg.train
        g = torch.Generator().manual_seed(1_000_003 * self.cfg.seed + step)
        x = torch.randint(0, self.V, (tc.grad_accum, tc.batch_size, self.T + 1), generator=g)
        return [{"idx": m[:, :-1], "targets": m[:, 1:].clone()} for m in x]

    def eval_batches(self, split: str, step: int):
        yield from self.train_batches(10**6 + step)[:1]


RANDOM_TOKENS = Procedure(
    "random_tokens",
    source=RandomTokens,
    description="the shared trainer on uniform random tokens (a benchmark's batches)",
)


def gpt2_small(profile: str, device: str = "auto") -> PlannedRun:
    """GPT-2 small as nanoGPT trains it: the book's decoder-only baseline (nanoGPT's GPT, no biases, no dropout) with
    12 blocks x 768, 12 heads, context 1,024 and the GPT-2 vocabulary padded to 50,304; micro-batches of 12 sequences
    (nanoGPT's), AdamW with its train.py settings (lr 6e-4, betas 0.9/0.95, weight decay 0.1, fused on CUDA),
    gradient clipping at 1.0, bf16 autocast and ``torch.compile``. At the small profiles a stand-in of the same code
    path (2 blocks x 64, context 64, vocabulary 512, not compiled), for the rehearsal."""
    device = experiments.resolve_device(device, profile)
    small = check_profile(profile) in ("smoke", "cpu")
    model = (
        BaselineConfig(vocab_size=512, context_size=64, n_embed=64, n_head=2, n_layer=2)
        if small
        else BaselineConfig(vocab_size=50_304, context_size=1024, n_embed=768, n_head=12, n_layer=12)
    )
    # its steps: every micro-batch's warm-up, timed and profiled steps (sweep)
    train = TrainConfig(
        batch_size=4 if small else 12,
        grad_accum=1,
        max_steps=BENCH_STEPS + BENCH_WARMUP + PROFILE_STEPS + 1,
        lr=6e-4,
        min_lr=6e-5,
        warmup_steps=0,
        weight_decay=0.1,
        grad_clip=1.0,
        compile=not small,
    )
    cfg = RunConfig(
        name=GPT2, model=model, data=LMDataConfig(corpus="synthetic", tokenizer="char"), train=train, device=device
    )
    return PlannedRun(cfg, RANDOM_TOKENS, profile)


def benched(profile: str, device: str = "auto") -> list[PlannedRun]:
    """What the benches time, in order: GPT-2 small, then one model per family (:data:`BENCH`)."""
    return [gpt2_small(profile, device)] + [experiments.planned(n, profile, 0, device=device) for n in BENCH]


def step_name(run: PlannedRun) -> str:
    return f"bench/{run.name.removeprefix('bench/')}"


def _small(profile: str) -> bool:
    return check_profile(profile) in ("smoke", "cpu")


def counts(profile: str) -> tuple[int, int]:
    """(timed steps, untimed warm-up steps) of a bench at ``profile``."""
    return (REHEARSAL_BENCH_STEPS, REHEARSAL_BENCH_WARMUP) if _small(profile) else (BENCH_STEPS, BENCH_WARMUP)


def minutes(cfg: RunConfig, profile: str) -> float:
    """The stated estimate of one bench of ``cfg`` on one H100 (see :data:`BENCH_SETUP_S`); the GPT-2-small sweep's,
    at the profiles that run it on a GPU, its allowance (:data:`SWEEP_ALLOWANCE_S`) and the set-up."""
    if cfg.name == GPT2 and not _small(profile):
        return (BENCH_SETUP_S + SWEEP_ALLOWANCE_S) / 60
    n = sum(counts(profile)) + 1
    timed = cfg.replace(
        train=cfg.train.replace(max_steps=n, eval_interval=n, eval_batches=1, warmup_steps=0, decay_steps=None)
    )
    seconds = estimate.seconds(timed) - estimate.RUN_OVERHEAD_S + BENCH_SETUP_S
    return (seconds + (BENCH_COMPILE_S if cfg.train.compile else 0.0)) / 60


def bench_step(run: PlannedRun) -> dict:
    """One bench of ``run``: :func:`lmcompanion.bench.bench`'s figures (for GPT-2 small, the sweep's: the fastest
    micro-batch's, with every micro-batch's and its profile), its shape, batch and config hash."""
    n, warmup = counts(run.profile)
    if run.name == GPT2:
        batches = REHEARSAL_SWEEP_BATCHES if _small(run.profile) else SWEEP_BATCHES
        result = sweep(run, batches, steps=n, warmup=warmup, allowance_s=SWEEP_ALLOWANCE_S, profile_steps=PROFILE_STEPS)
    else:
        result = bench(run, steps=n, warmup=warmup)
    m = run.config.model
    result["shape"] = {
        k: v
        for k, v in dataclasses.asdict(m).items()
        if k in ("n_layer", "n_embed", "n_head", "context_size", "vocab_size")
    }
    result["config_hash"] = run.config.hash()
    result["batch"] = {
        "micro_batch": result.get("micro_batch", run.config.train.batch_size),
        "grad_accum": run.config.train.grad_accum,
    }
    result["ok"] = True
    return result


__all__ = [
    "BENCH",
    "FORMAT",
    "GPT2",
    "PROFILE_STEPS",
    "RANDOM_TOKENS",
    "RandomTokens",
    "SWEEP_ALLOWANCE_S",
    "SWEEP_BATCHES",
    "bench_step",
    "benched",
    "counts",
    "gpt2_small",
    "minutes",
    "step_name",
]
