"""The decoder-only baseline the write-ups compare against: nanoGPT's GPT.

Token + learned absolute position embeddings, dropout, ``n_layer`` pre-LN blocks (causal SDPA attention,
exact-GELU 4x MLP), a final LayerNorm and an output layer tied to the token embedding. Initialisation as
nanoGPT (N(0, 0.02), residual projections scaled by 1/sqrt(2 n_layer)).

Counted as the AR encoder-decoder write-up counts (position table excluded, tied matrix once):
C=160, 10 heads, 26 layers, V=50257 gives 16,036,800; C=156, 12 heads, 26 layers gives 15,441,192.

Beyond the write-up: ``sub_pos_embed`` subtracts the *next* position's embedding from the final hidden state
before the output layer, the AR encoder-decoder write-up's "positional embedding subtraction", which its
conclusions say "should work even for decoder-only transformers".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Literal

import torch
import torch.nn as nn

from ..config import ConfigBase, require
from .base import LanguageModel, ModelOutput, cross_entropy
from .layers import Block, init_gpt_weights, layer_norm


@dataclass(frozen=True)
class BaselineConfig(ConfigBase):
    family: ClassVar[str] = "baseline"
    vocab_size: int = 50257
    context_size: int = 200  # T: the longest input
    n_embed: int = 160  # C
    n_head: int = 10
    n_layer: int = 26
    dropout_rate: float = 0.0
    use_bias: bool = False  # biases in Linear and LayerNorm layers
    attn_dropout_in_eval: bool = False  # the yif-AI code's quirk: attention dropout stays on in eval mode
    sub_pos_embed: Literal["NO", "YES_NO_LN", "YES_LN"] = (
        "NO"  # subtract the next position's embedding before the output layer
    )

    def validate(self) -> None:
        for name in ("vocab_size", "context_size", "n_embed", "n_head", "n_layer"):
            require(getattr(self, name) >= 1, f"model.{name} must be >= 1")
        require(
            self.n_embed % self.n_head == 0,
            f"model.n_embed ({self.n_embed}) must be divisible by model.n_head ({self.n_head})",
        )
        require(0.0 <= self.dropout_rate < 1.0, f"model.dropout_rate must lie in [0, 1), got {self.dropout_rate}")


class Baseline(LanguageModel):
    def __init__(self, config: BaselineConfig):
        super().__init__()
        self.config = c = config
        # one extra position row when subtracting the embedding of the position after the last input token
        n_pos = c.context_size + (c.sub_pos_embed != "NO")
        self.wte = nn.Embedding(c.vocab_size, c.n_embed)
        self.wpe = nn.Embedding(n_pos, c.n_embed)
        self.drop = nn.Dropout(c.dropout_rate)
        self.blocks = nn.ModuleList(
            Block(c.n_embed, c.n_head, c.use_bias, c.dropout_rate, c.attn_dropout_in_eval) for _ in range(c.n_layer)
        )
        self.ln_f = layer_norm(c.n_embed, c.use_bias)
        self.post_sub_pos_ln = layer_norm(c.n_embed, c.use_bias) if c.sub_pos_embed == "YES_LN" else None
        self.lm_head = nn.Linear(c.n_embed, c.vocab_size, bias=False)
        self.lm_head.weight = self.wte.weight  # weight tying
        init_gpt_weights(self, c.n_layer)

    def positional_parameters(self) -> list[nn.Parameter]:
        return [self.wpe.weight]

    def forward(self, idx: torch.Tensor, targets: torch.Tensor | None = None) -> ModelOutput:
        B, T = idx.shape
        if T > self.config.context_size:
            raise ValueError(f"input length {T} exceeds context_size {self.config.context_size}")
        pos = torch.arange(T, device=idx.device)
        x = self.drop(self.wte(idx) + self.wpe(pos))  # (B, T, C)
        for block in self.blocks:
            x = block(x)
        x = self.ln_f(x)
        if self.config.sub_pos_embed != "NO":
            x = x - self.wpe(pos + 1)  # the position of the token being predicted
            if self.post_sub_pos_ln is not None:
                x = self.post_sub_pos_ln(x)
        logits = self.lm_head(x)  # (B, T, V)
        loss = cross_entropy(logits, targets) if targets is not None else None
        return ModelOutput(logits, loss, {})
