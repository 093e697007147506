"""Shared transformer layers (nanoGPT style), used by the baseline and the encoder-decoder models.

Shapes: ``B`` batch, ``T`` sequence length, ``C`` width (n_embed), ``nh`` heads, ``hs = C // nh`` head size.
Attention runs through ``F.scaled_dot_product_attention`` (fused kernels on CUDA, math on CPU).

Dropout sits where the write-ups' code puts it: on the attention probabilities (inside SDPA), on the attention
output and on the MLP output; not in the MLP's hidden layer. The yif-AI code passes the attention dropout to
SDPA even in eval mode; ``attn_dropout_in_eval=True`` reproduces that (off by default).
"""

from __future__ import annotations

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def layer_norm(n_embed: int, bias: bool) -> nn.LayerNorm:
    """LayerNorm over the last dim, eps 1e-5, learnable weight and (optionally) bias."""
    return nn.LayerNorm(n_embed, eps=1e-5, bias=bias)


def _heads(x: torch.Tensor, n_head: int) -> torch.Tensor:
    B, T, C = x.shape
    return x.view(B, T, n_head, C // n_head).transpose(1, 2)  # (B, nh, T, hs)


def _merge(y: torch.Tensor) -> torch.Tensor:
    B, nh, T, hs = y.shape
    return y.transpose(1, 2).contiguous().view(B, T, nh * hs)  # (B, T, C)


class CausalSelfAttention(nn.Module):
    """softmax(QK^T / sqrt(hs) + causal mask) V over ``n_head`` heads; one fused C -> 3C projection (q, k, v)."""

    def __init__(self, n_embed: int, n_head: int, bias: bool, dropout: float, attn_dropout_in_eval: bool = False):
        super().__init__()
        assert n_embed % n_head == 0, "n_embed must be divisible by n_head"
        self.n_head, self.dropout, self.attn_dropout_in_eval = n_head, dropout, attn_dropout_in_eval
        self.c_attn = nn.Linear(n_embed, 3 * n_embed, bias=bias)
        self.residual_proj = nn.Linear(n_embed, n_embed, bias=bias)
        self.resid_dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        q, k, v = self.c_attn(x).split(x.size(-1), dim=2)
        q, k, v = (_heads(t, self.n_head) for t in (q, k, v))  # (B, nh, T, hs)
        p = self.dropout if (self.training or self.attn_dropout_in_eval) else 0.0
        y = F.scaled_dot_product_attention(q, k, v, dropout_p=p, is_causal=True)
        return self.resid_dropout(self.residual_proj(_merge(y)))


class CrossAttention(nn.Module):
    """Queries from ``x``, keys and values from ``memory``: q is a C -> C projection, (k, v) one C -> 2C projection.

    ``causal=True`` masks like self-attention: position t attends to memory positions <= t (the AR
    encoder-decoder's cross-attention, where the memory is the causal encoder's output).
    """

    def __init__(
        self, n_embed: int, n_head: int, bias: bool, dropout: float, causal: bool, attn_dropout_in_eval: bool = False
    ):
        super().__init__()
        assert n_embed % n_head == 0, "n_embed must be divisible by the cross-attention n_head"
        self.n_head, self.dropout, self.causal = n_head, dropout, causal
        self.attn_dropout_in_eval = attn_dropout_in_eval
        self.q = nn.Linear(n_embed, n_embed, bias=bias)
        self.kv = nn.Linear(n_embed, 2 * n_embed, bias=bias)
        self.residual_proj = nn.Linear(n_embed, n_embed, bias=bias)
        self.resid_dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor, memory: torch.Tensor) -> torch.Tensor:
        q = _heads(self.q(x), self.n_head)  # (B, nh, T, hs)
        k, v = (_heads(t, self.n_head) for t in self.kv(memory).split(memory.size(-1), dim=2))  # (B, nh, S, hs)
        p = self.dropout if (self.training or self.attn_dropout_in_eval) else 0.0
        y = F.scaled_dot_product_attention(q, k, v, dropout_p=p, is_causal=self.causal)
        return self.resid_dropout(self.residual_proj(_merge(y)))


class MLP(nn.Module):
    """Linear C -> 4C, exact GELU, Linear 4C -> C, dropout."""

    def __init__(self, n_embed: int, bias: bool, dropout: float):
        super().__init__()
        self.c_fc = nn.Linear(n_embed, 4 * n_embed, bias=bias)
        self.gelu = nn.GELU()  # exact erf form, not the tanh approximation
        self.residual_proj = nn.Linear(4 * n_embed, n_embed, bias=bias)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.dropout(self.residual_proj(self.gelu(self.c_fc(x))))


class Block(nn.Module):
    """Pre-LN transformer block: x += attn(ln_1(x)); x += mlp(ln_2(x))."""

    def __init__(self, n_embed: int, n_head: int, bias: bool, dropout: float, attn_dropout_in_eval: bool = False):
        super().__init__()
        self.ln_1 = layer_norm(n_embed, bias)
        self.attn = CausalSelfAttention(n_embed, n_head, bias, dropout, attn_dropout_in_eval)
        self.ln_2 = layer_norm(n_embed, bias)
        self.mlp = MLP(n_embed, bias, dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


def init_gpt_weights(model: nn.Module, n_layer: int) -> None:
    """nanoGPT's initialisation: N(0, 0.02) for Linear and Embedding weights, zero biases, and
    N(0, 0.02 / sqrt(2 * n_layer)) for every residual projection (``*.residual_proj.weight``)."""
    for module in model.modules():
        if isinstance(module, nn.Linear):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)
            if module.bias is not None:
                nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)
    for name, p in model.named_parameters():
        if name.endswith("residual_proj.weight"):
            nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * n_layer))
