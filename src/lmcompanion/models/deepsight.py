"""DeepSight (Y. Yan, 2024; renamed DeepPlan in its code): the AR encoder-decoder core plus a planning loss.

The encoder output at position i is pulled toward a *planning context* built from the (detached) input
embeddings of the present context (positions <= i) and a future context of size delta (positions i+1..i+delta):

    E_present[i] = (1/i) sum_{k=1}^{i} E_k                 cumulative mean, inclusive of i
    E_future[i]  = sum_{k=1}^{delta} k^{-1} E_{i+k}          decaying weights, not normalised
    E_plan       = (E_present + E_future) / 2
    planning_loss = disaffinity(LayerNorm(out_enc), LayerNorm(E_plan))

Positions i > T - delta have no full future and are left out ("option 2" of the write-up), so the loss covers
T - delta positions. The loss is added (times ``planning_loss_coeff``) in training only; the next-token path is
the AR encoder-decoder without positional subtraction and never sees the future.

Because every target is a fixed linear combination of embedding rows, we build the whole aggregation as one
(T - delta) x T weight matrix: row i holds the weight of each input position in planning target i. That matrix
is exactly the write-up's formula (and the original code's cumulative sum plus future buffer); the chapter draws
it as a heatmap. Options (the original code's enums): future weights AVG (1/delta), DECAY (1/k, the write-up),
DECAY_W_NORMALIZE (1/k over the harmonic number); present/future aggregation EQUAL (halves, the write-up),
CONTEXT_SIZE ((i+1)/(i+1+delta) vs delta/(i+1+delta)) or NONE (future only); LayerNorm before and/or after the
aggregation (POST_AGGR is the write-up's).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Literal

import torch
import torch.nn as nn

from ..config import require
from .ar_ed import Disaffinity, EncoderDecoderConfig, EncoderDecoderCore, disaffinity
from .base import ModelOutput, cross_entropy

PLANNING_KEYS = (
    "future_context_size",
    "present_future_context_aggregation_type",
    "planning_loss_coeff",
    "planning_context_ln_type",
    "future_context_aggregation_type",
)


@dataclass(frozen=True)
class DeepSightConfig(EncoderDecoderConfig):
    family: ClassVar[str] = "deepsight"
    context_size: int = 400
    future_context_size: int | None = 11  # delta: future tokens planned for, the next token included
    planning_loss_type: Disaffinity = "MSE"
    planning_loss_coeff: float | None = 1.0
    future_context_aggregation_type: Literal["AVG", "DECAY", "DECAY_W_NORMALIZE"] | None = "DECAY"
    present_future_context_aggregation_type: Literal["EQUAL", "CONTEXT_SIZE", "NONE"] | None = "EQUAL"
    planning_context_ln_type: Literal["NONE", "PRE_AGGR", "POST_AGGR", "BOTH"] | None = "POST_AGGR"

    def validate(self) -> None:
        super().validate()
        if self.planning_loss_type == "NONE":
            set_keys = [k for k in PLANNING_KEYS if getattr(self, k) is not None]
            require(
                not set_keys,
                f"model.planning_loss_type is NONE, so {', '.join('model.' + k for k in set_keys)} "
                "must be null (None): they only configure the planning loss",
            )
            return
        missing = [k for k in PLANNING_KEYS if getattr(self, k) is None]
        require(
            not missing,
            f"model.planning_loss_type={self.planning_loss_type} needs "
            f"{', '.join('model.' + k for k in missing)} to be set (not null)",
        )
        delta = self.future_context_size
        require(
            1 < delta < self.context_size,
            f"model.future_context_size (delta={delta}) must satisfy 1 < delta < context_size ({self.context_size}): "
            "the planning loss needs at least one position with a full future context",
        )
        require(self.planning_loss_coeff > 0, f"model.planning_loss_coeff must be > 0, got {self.planning_loss_coeff}")


def planning_weights(T: int, delta: int, future: str = "DECAY", aggregation: str = "EQUAL") -> torch.Tensor:
    """(T - delta, T): row i (0-based) gives the weight of every input position in planning target i."""
    n = T - delta
    W = torch.zeros(n, T, dtype=torch.float64)
    i = torch.arange(n)
    k = torch.arange(1, delta + 1, dtype=torch.float64)
    w_future = {
        "DECAY": 1.0 / k,
        "DECAY_W_NORMALIZE": (1.0 / k) / (1.0 / k).sum(),
        "AVG": torch.full((delta,), 1.0 / delta, dtype=torch.float64),
    }[future]
    if aggregation == "EQUAL":
        present_coeff, future_coeff = (
            torch.full((n,), 0.5, dtype=torch.float64),
            torch.full((n,), 0.5, dtype=torch.float64),
        )
    elif aggregation == "CONTEXT_SIZE":
        present_coeff = (i + 1) / (i + 1 + delta)
        future_coeff = delta / (i + 1 + delta)
    else:  # NONE: the future context alone
        present_coeff, future_coeff = torch.zeros(n, dtype=torch.float64), torch.ones(n, dtype=torch.float64)
    present = torch.tril(torch.ones(n, T, dtype=torch.float64)) / (i + 1)[:, None].to(torch.float64)  # mean of 0..i
    W += present_coeff[:, None] * present
    cols = i[:, None] + torch.arange(1, delta + 1)[None, :]  # positions i+1 .. i+delta
    W.scatter_add_(1, cols, (future_coeff[:, None] * w_future[None, :]))
    return W.float()


class DeepSight(EncoderDecoderCore):
    def __init__(self, config: DeepSightConfig):
        c = config
        super().__init__(c, n_pos=c.context_size, order="ORIGINAL")
        use_loss = c.planning_loss_type != "NONE"
        # LN on the encoder output for the loss; the original builds it even without a planning loss (300 unused
        # parameters in that run's count); like the AR encoder-decoder, we build it only when it is used.
        self.encoder_out_ln = nn.LayerNorm(c.n_embed, bias=True) if use_loss else None
        ln_type = c.planning_context_ln_type
        self.planning_context_ln_1 = nn.LayerNorm(c.n_embed, bias=True) if ln_type in ("PRE_AGGR", "BOTH") else None
        self.planning_context_ln_2 = nn.LayerNorm(c.n_embed, bias=True) if ln_type in ("POST_AGGR", "BOTH") else None
        if use_loss:
            W = planning_weights(
                c.context_size,
                c.future_context_size,
                c.future_context_aggregation_type,
                c.present_future_context_aggregation_type,
            )
            self.register_buffer("plan_weights", W, persistent=False)
        self.init_weights()

    def forward(self, idx: torch.Tensor, targets: torch.Tensor | None = None) -> ModelOutput:
        c = self.config
        E = self.embed(idx)
        enc = self.encode(E)
        logits = self.lm_head(self.decode(self.bridge(enc), enc))
        if targets is None:
            return ModelOutput(logits)
        loss = cross_entropy(logits, targets)
        aux = {}
        if self.training and c.planning_loss_type != "NONE":
            aux["planning"] = self.planning_loss(E, enc)
            loss = loss + c.planning_loss_coeff * aux["planning"]
        return ModelOutput(logits, loss, aux)

    def planning_target(self, E: torch.Tensor) -> torch.Tensor:
        """E_plan (LayerNorms included) for positions 0 .. T-delta-1, from detached embeddings: (B, T-delta, C)."""
        T = E.size(1)
        E = E.detach()  # "E is first detached because it is used to construct the ground truth"
        if self.planning_context_ln_1 is not None:
            E = self.planning_context_ln_1(E)
        W = self.plan_weights[: T - self.config.future_context_size, :T].to(E.dtype)
        plan = torch.einsum("it,btc->bic", W, E)  # E_plan = (E_present + E_future) / 2, one row per position
        if self.planning_context_ln_2 is not None:
            plan = self.planning_context_ln_2(plan)  # E_plan_ln = LayerNorm(E_plan)
        return plan

    def planning_loss(self, E: torch.Tensor, enc: torch.Tensor) -> torch.Tensor:
        """disaffinity(LayerNorm(out_enc), E_plan_ln) over the T - delta positions with a full future."""
        n = E.size(1) - self.config.future_context_size
        if n < 1:
            raise ValueError(
                f"input length {E.size(1)} leaves no position with {self.config.future_context_size} future tokens"
            )
        prediction = self.encoder_out_ln(enc[:, :n])  # out_enc_ln, not detached: trains the encoder
        return disaffinity(prediction, self.planning_target(E), self.config.planning_loss_type)
