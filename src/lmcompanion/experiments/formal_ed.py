"""The formal encoder–decoder chapter's runs at every profile.

The same ED-Transformer is trained two ways on the same generated task (reverse a string of digits):

- ``formal_ed/adamw`` (a registered experiment): batches of examples through the shared trainer, AdamW with
  warmup and cosine decay, the loss averaged per target token;
- ``formal_ed/ed_training``: the write-up's ED-Training, trained by the named procedure ``"ed_training"``
  (:mod:`.ed_training`): one example at a time, in order, T epochs, plain gradient steps on the summed loss J(θ),
  with the profile's :class:`LiteralConfig` (:func:`literal_config`). It starts from the same initial weights as the
  AdamW run of the same seed and is kept in the run store like a trainer run.

The measurements the chapter's notebooks show live in ``lmcompanion.chapters.formal_ed`` (its analyses in ``analysis``).

``paper`` here means a model and data large enough that the task is solved near perfectly on one GPU: the
write-up reports no experiment, so there is no published number to match; the bar each profile must reach
(:attr:`Protocol.target`) is ours and is stated before the runs.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from .. import estimate
from ..config import TrainConfig, check_profile
from ..run import RunConfig
from ..data.seq2seq import Seq2SeqDataConfig
from ..models.formal_ed import FormalEDConfig, LiteralConfig
from .ed_training import literal_training
from .headline_comparisons import headline
from .registry import Procedure, register, register_procedure, trained_nothing

NAME = "formal_ed/adamw"
LITERAL = "formal_ed/ed_training"
NOTEBOOKS = (
    "notebooks/formal_ed/01_algorithm.py",
    "notebooks/formal_ed/02_training.py",
    "notebooks/formal_ed/03_inference.py",
)
INF = float("inf")


# --------------------------------------------------------------------------------------------------
# Profiles


@dataclass(frozen=True)
class Protocol:
    """Everything a profile sets for this chapter."""

    model: FormalEDConfig
    data: Seq2SeqDataConfig
    train: TrainConfig  # the batched AdamW run
    literal: LiteralConfig  # the write-up's ED-Training
    temperatures: tuple[float, ...]  # the τ grid of the inference results
    prompts: int  # held-out sources per τ
    samples: int  # samples per source (for diversity)
    target: float | None  # our bar: held-out exact match at τ = 0 of every AdamW seed (None: not judged)


def _adamw(
    steps: int,
    batch: int,
    lr: float,
    *,
    evals: int = 10,
    eval_batches: int = 8,
    warmup: int | None = None,
    deterministic: bool = False,
    compile: bool = False,
) -> TrainConfig:
    """AdamW (β2 0.98, weight decay 0.01, clip 1.0), linear warmup over 5% of the steps, cosine to lr/10."""
    return TrainConfig(
        batch_size=batch,
        grad_accum=1,
        max_steps=steps,
        lr=lr,
        min_lr=float(f"{lr / 10:.6g}"),
        schedule="cosine",
        warmup_steps=warmup if warmup is not None else max(1, steps // 20),
        beta1=0.9,
        beta2=0.98,
        weight_decay=0.01,
        grad_clip=1.0,
        eval_interval=max(1, steps // evals),
        eval_batches=eval_batches,
        eval_batch_size=128,
        log_interval=max(1, steps // 100),
        deterministic=deterministic,
        compile=compile,
    )


_TAUS = (0.0, 0.25, 0.5, 1.0, 1.5, 2.0, 4.0, INF)

PROTOCOLS: dict[str, Protocol] = {
    # Seconds, for CI and the nbval references; the numbers mean nothing.
    "smoke": Protocol(
        model=FormalEDConfig(l_max=6, L_enc=1, L_dec=1, H=2, d_e=16, d_mlp=32),
        data=Seq2SeqDataConfig(min_len=1, max_len=4, n_train=512, n_val=64),
        train=_adamw(40, 16, 3e-3, evals=2, eval_batches=1, warmup=4, deterministic=True),
        literal=LiteralConfig(T=1, eta=0.03, n=48, evals=3),
        temperatures=(0.0, 1.0, 4.0, INF),
        prompts=16,
        samples=2,
        target=None,
    ),
    # A few minutes for the whole chapter on 2 CPU cores.
    "cpu": Protocol(
        model=FormalEDConfig(l_max=10, L_enc=2, L_dec=2, H=4, d_e=64, d_mlp=128),
        data=Seq2SeqDataConfig(min_len=1, max_len=8, n_train=20_000, n_val=1_000),
        train=_adamw(600, 64, 1e-3),
        literal=LiteralConfig(T=2, eta=0.03, n=1500, evals=10),
        temperatures=_TAUS,
        prompts=200,
        samples=4,
        target=0.9,
    ),
    # One GPU, minutes: longer strings, a wider model.
    "gpu": Protocol(
        model=FormalEDConfig(l_max=18, L_enc=3, L_dec=3, H=4, d_e=128, d_mlp=512),
        data=Seq2SeqDataConfig(min_len=1, max_len=16, n_train=100_000, n_val=2_000),
        train=_adamw(4000, 128, 1e-3, eval_batches=10),
        literal=LiteralConfig(T=1, eta=0.01, n=10_000, evals=10),
        temperatures=_TAUS,
        prompts=1000,
        samples=8,
        target=0.98,
    ),
    # One GPU: a base-sized model on strings of up to 20 digits, solved near perfectly.
    "paper": Protocol(
        model=FormalEDConfig(l_max=22, L_enc=4, L_dec=4, H=8, d_e=256, d_mlp=1024),
        data=Seq2SeqDataConfig(min_len=1, max_len=20, n_train=200_000, n_val=2_000),
        train=_adamw(10_000, 256, 5e-4, eval_batches=10),
        literal=LiteralConfig(T=1, eta=0.005, n=20_000, evals=20),
        temperatures=_TAUS,
        prompts=2000,
        samples=8,
        target=0.99,
    ),
}


def protocol(profile: str) -> Protocol:
    return PROTOCOLS[check_profile(profile)]


@register(NAME, title="ED-Transformer trained with AdamW (batched, shared trainer)", published={})
def _adamw_run(profile: str) -> RunConfig:
    p = protocol(profile)
    return RunConfig(name=NAME, model=p.model, data=p.data, train=p.train)


def literal_config(
    profile: str, *, T: int | None = None, eta: float | None = None, n: int | None = None
) -> LiteralConfig:
    """The profile's ED-Training settings, with the notebook's named overrides (None keeps the profile's)."""
    base = protocol(profile).literal
    changes = {k: v for k, v in {"T": T, "eta": eta, "n": n}.items() if v is not None}
    return dataclasses.replace(base, **changes)


def _literal_settings(cfg: RunConfig, profile: str) -> LiteralConfig:
    return literal_config(profile)


def _literal_minutes(cfg: RunConfig, lit: LiteralConfig) -> float:
    """One update per example (T x n of them), each one example's forward and backward, plus its evaluations."""
    one = cfg.train.replace(
        batch_size=1,
        grad_accum=1,
        max_steps=lit.T * lit.n,
        warmup_steps=0,
        eval_interval=max(1, lit.T * lit.n // lit.evals),
    )
    return estimate.seconds(cfg.replace(train=one)) / 60


register_procedure(
    Procedure(
        "ed_training",
        literal_training,
        settings=_literal_settings,
        minutes=_literal_minutes,
        description="the write-up's ED-Training: one example at a time, plain gradient steps",
    )
)


@register(
    LITERAL,
    title="ED-Transformer trained by ED-Training as written (one example at a time)",
    published={},
    procedure="ed_training",
)
def _literal_run(profile: str) -> RunConfig:
    return dataclasses.replace(_adamw_run(profile), name=LITERAL)


# The formal write-up states algorithms and trains nothing; its one training algorithm, ED-Training, is the
# chapter's headline beside the book's own AdamW runs.
trained_nothing("formal_ed")
headline(
    "formal_ed",
    "the write-up's ED-Training and the book's AdamW training of the same ED-Transformer",
    (NAME, LITERAL),
    "ED-Training is the one training algorithm the write-up states; AdamW, the book's own, shows what the model "
    "can learn on the task",
    min_arms=1,
    baseline=NAME,
    cpu_departure=f"its {PROTOCOLS['cpu'].train.max_steps} AdamW steps (and the literal ED-Training's settings) "
    "were fixed when the chapter was written, before the rule existed, and were not re-derived by it",
)
