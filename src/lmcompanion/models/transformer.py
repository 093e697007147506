"""The transformers the masked-mixer write-up compares against, as configurations of one implementation.

- **Llama-style** (the default; HF ``LlamaForCausalLM`` as the write-up builds it): RoPE (theta 10,000, HF's
  rotate-half convention), pre-RMSNorm blocks (eps 1e-6, weight only), SiLU-gated MLP of inner width 4d
  (gate, up d -> 4d; down 4d -> d), no biases, a final RMSNorm, an untied LM head, causal SDPA attention.
- **Original GPT** (HF ``OpenAIGPTLMHeadModel``): learned absolute positions, *post*-LayerNorm blocks
  (x = LN(x + attn(x)); x = LN(x + mlp(x)), eps 1e-5), an MLP 4d with the *tanh* GELU, biases everywhere, dropout
  0.1 on the embeddings, attention probabilities and residuals, a tied head, no final norm. HF's
  ``OpenAIGPTConfig(afn="gelu")`` maps "gelu" to ``gelu_new``, the tanh approximation
  0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), not the exact erf GELU (which differs by up to about 1e-3).
- **Transformer-mixer hybrids** (Llama blocks plus the flat mixer's masked L x L conv, imported from
  :mod:`.mixer`): *sequential* ("transfixer", the original's ``MixerLayer`` on the attention output),
  ``a = attn(RMSNorm(x)); x = x + a + conv(a)``; *parallel*, ``h = RMSNorm(x); x = x + attn(h) + conv(h)``. The
  parallel hybrid has no original code: the write-up's sentence and figure are all there is, so its wiring is
  inferred. A hybrid reads exactly ``context_size`` tokens, like a mixer.

Initialisation as HF's: every Linear and Embedding weight N(0, 0.02), biases 0, norms 1 (and 0); the hybrids'
token conv keeps PyTorch's default (HF's ``_init_weights`` does not touch Conv1d). Counted as the write-up counts
(every unique parameter, the GPT's position table included). Presets: :func:`llama_config`, :func:`gpt_config`.

Names: ``n_embed`` = hidden_size / n_embd (d), ``n_layer`` = num_hidden_layers, ``n_head`` = num_attention_heads,
``context_size`` = n_positions (the longest input).

Training memory is counted by :func:`lmcompanion.memory.training_memory`, one method for every model family.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Literal

import torch
import torch.nn as nn
import torch.nn.functional as F

from ..config import ConfigBase, require
from .base import LanguageModel, ModelOutput, cross_entropy
from .layers import MLP, CausalSelfAttention
from .mixer import MaskedTokenConv


@dataclass(frozen=True)
class TransformerConfig(ConfigBase):
    """One decoder-only transformer; the defaults are the write-up's best Llama (d=512, 4 heads, 8 layers)."""

    family: ClassVar[str] = "transformer"
    vocab_size: int = 4096  # V
    context_size: int = 512  # T: the longest input (rows of a learned position table; the hybrids' conv is T x T)
    n_embed: int = 512  # d (hidden_size)
    n_layer: int = 8  # n (num_hidden_layers)
    n_head: int = 4  # h (num_attention_heads); must divide n_embed
    norm: Literal["rms", "layer"] = "rms"  # RMSNorm (Llama) or LayerNorm (GPT)
    norm_eps: float = 1e-6  # 1e-6 Llama's RMSNorm, 1e-5 GPT's LayerNorm
    positions: Literal["rope", "learned"] = "rope"  # rotary q and k (Llama) or a learned table added to the input (GPT)
    rope_theta: float = 10_000.0  # RoPE base
    block: Literal["pre", "post"] = "pre"  # pre-norm blocks + final norm (Llama), or post-norm, no final norm (GPT)
    # inner 4d: down(SiLU(gate x) * up x) (Llama), Linear-GELU-Linear with the exact GELU, or with the tanh GELU (GPT)
    mlp: Literal["swiglu", "gelu", "gelu_tanh"] = "swiglu"
    bias: bool = False  # biases in every Linear and LayerNorm
    tie_weights: bool = False  # the LM head shares the token embedding matrix
    dropout: float = 0.0  # on the embeddings, the attention probabilities and both residual branches (GPT: 0.1)
    init_std: float = 0.02  # N(0, init_std) for every Linear and Embedding weight (HF initializer_range)
    hybrid: Literal["none", "sequential", "parallel"] = (
        "none"  # the mixer's masked T x T conv after or beside attention
    )
    causal: bool = True  # False: every token attends to every token (the retrieval part's bidirectional matcher)

    def validate(self) -> None:
        for name in ("vocab_size", "context_size", "n_embed", "n_layer", "n_head"):
            require(getattr(self, name) >= 1, f"model.{name} must be >= 1, got {getattr(self, name)}")
        require(
            self.n_embed % self.n_head == 0,
            f"model.n_embed ({self.n_embed}) must be divisible by model.n_head ({self.n_head}): pick a divisor",
        )
        if self.positions == "rope":
            require(
                (self.n_embed // self.n_head) % 2 == 0,
                f"RoPE rotates pairs of features, so the head size n_embed / n_head = "
                f"{self.n_embed // self.n_head} must be even: change model.n_head or model.n_embed",
            )
            require(self.rope_theta > 0, f"model.rope_theta must be > 0, got {self.rope_theta}")
        require(self.norm_eps > 0, f"model.norm_eps must be > 0, got {self.norm_eps}")
        require(self.init_std > 0, f"model.init_std must be > 0, got {self.init_std}")
        require(0.0 <= self.dropout < 1.0, f"model.dropout must lie in [0, 1), got {self.dropout}")
        require(
            self.hybrid == "none" or self.block == "pre",
            f"model.hybrid={self.hybrid!r} adds the mixer conv inside a pre-norm (Llama) block: set model.block='pre'",
        )


def llama_config(
    n_embed: int = 512,
    n_layer: int = 8,
    n_head: int = 4,
    *,
    vocab_size: int = 4096,
    context_size: int = 512,
    hybrid: Literal["none", "sequential", "parallel"] = "none",
) -> TransformerConfig:
    """The write-up's ``LlamaForCausalLM(LlamaConfig(hidden_size=d, intermediate_size=4d, ...))``, or a hybrid."""
    return TransformerConfig(
        vocab_size=vocab_size, context_size=context_size, n_embed=n_embed, n_layer=n_layer, n_head=n_head, hybrid=hybrid
    )


def gpt_config(
    n_embed: int = 512,
    n_layer: int = 8,
    n_head: int = 4,
    *,
    vocab_size: int = 4096,
    context_size: int = 512,
    dropout: float = 0.1,
) -> TransformerConfig:
    """The write-up's ``OpenAIGPTLMHeadModel(OpenAIGPTConfig(n_positions=512, n_embd=d, ...))`` with HF defaults."""
    return TransformerConfig(
        vocab_size=vocab_size,
        context_size=context_size,
        n_embed=n_embed,
        n_layer=n_layer,
        n_head=n_head,
        norm="layer",
        norm_eps=1e-5,
        positions="learned",
        block="post",
        mlp="gelu_tanh",
        bias=True,
        tie_weights=True,
        dropout=dropout,
    )


# --------------------------------------------------------------------------------------------------
# Layers


def rope_cos_sin(T: int, head_size: int, theta: float, device=None) -> tuple[torch.Tensor, torch.Tensor]:
    """cos and sin (T, hs) of HF Llama's rotary embedding, computed in fp32: angle(t, i) = t theta^(-2i / hs)."""
    inv_freq = 1.0 / theta ** (torch.arange(0, head_size, 2, device=device, dtype=torch.int64).float() / head_size)
    freqs = torch.outer(torch.arange(T, device=device, dtype=torch.float32), inv_freq)  # (T, hs / 2)
    emb = torch.cat((freqs, freqs), dim=-1)  # (T, hs): feature i and i + hs/2 share an angle
    return emb.cos(), emb.sin()


def apply_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """x cos + rotate_half(x) sin, rotate_half(x) = (-x2, x1) on the halves of the head: (B, nh, T, hs)."""
    x1, x2 = x.chunk(2, dim=-1)
    return x * cos + torch.cat((-x2, x1), dim=-1) * sin


class RotaryCausalSelfAttention(CausalSelfAttention):
    """The shared causal self-attention (fused q, k, v projection; causal SDPA), with RoPE on q and k when given;
    ``causal=False`` drops the mask (bidirectional attention)."""

    def __init__(self, *args, causal: bool = True, **kwargs):
        super().__init__(*args, **kwargs)
        self.causal = causal

    def forward(self, x: torch.Tensor, rope: tuple[torch.Tensor, torch.Tensor] | None = None) -> torch.Tensor:
        B, T, C = x.shape
        q, k, v = (
            t.view(B, T, self.n_head, C // self.n_head).transpose(1, 2) for t in self.c_attn(x).split(C, dim=2)
        )  # (B, nh, T, hs)
        if rope is not None:
            cos, sin = (t.to(q.dtype) for t in rope)
            q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
        y = F.scaled_dot_product_attention(
            q, k, v, dropout_p=self.dropout if self.training else 0.0, is_causal=self.causal
        )
        y = y.transpose(1, 2).contiguous().view(B, T, C)  # (B, T, C)
        return self.resid_dropout(self.residual_proj(y))


class TanhGeluMLP(MLP):
    """HF OpenAIGPT's MLP: Linear C -> 4C, GELU in its tanh form (``ACT_FNS["gelu"]`` is ``gelu_new``), Linear 4C -> C,
    dropout; the shared MLP's layers and names, only the activation differs."""

    def __init__(self, n_embed: int, bias: bool, dropout: float):
        super().__init__(n_embed, bias, dropout)
        # gelu_new(x) = 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3)))
        self.gelu = nn.GELU(approximate="tanh")


class SwiGLU(nn.Module):
    """Llama's MLP: down(SiLU(gate(x)) * up(x)), inner width 4C."""

    def __init__(self, n_embed: int, bias: bool, dropout: float):
        super().__init__()
        self.gate_proj = nn.Linear(n_embed, 4 * n_embed, bias=bias)
        self.up_proj = nn.Linear(n_embed, 4 * n_embed, bias=bias)
        self.down_proj = nn.Linear(4 * n_embed, n_embed, bias=bias)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # (B, T, C)
        return self.dropout(self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x)))


def norm_layer(c: TransformerConfig) -> nn.Module:
    if c.norm == "rms":
        return nn.RMSNorm(c.n_embed, eps=c.norm_eps)  # weight only
    return nn.LayerNorm(c.n_embed, eps=c.norm_eps, bias=c.bias)


class TransformerBlock(nn.Module):
    def __init__(self, c: TransformerConfig):
        super().__init__()
        self.post, self.hybrid = c.block == "post", c.hybrid
        self.norm_1 = norm_layer(c)
        self.attn = RotaryCausalSelfAttention(c.n_embed, c.n_head, c.bias, c.dropout, causal=c.causal)
        self.norm_2 = norm_layer(c)
        self.mlp = {"swiglu": SwiGLU, "gelu": MLP, "gelu_tanh": TanhGeluMLP}[c.mlp](c.n_embed, c.bias, c.dropout)
        # the flat mixer's masked T x T conv with bias ("MixerLayer(512)")
        self.mixer = MaskedTokenConv(c.context_size, c.context_size, causal=c.causal) if c.hybrid != "none" else None

    def forward(self, x: torch.Tensor, rope=None) -> torch.Tensor:  # (B, T, C)
        if self.post:
            # GPT: "n = ln_1(x + a); h = ln_2(n + m)"
            x = self.norm_1(x + self.attn(x, rope))
            return self.norm_2(x + self.mlp(x))
        h = self.norm_1(x)
        a = self.attn(h, rope)
        if self.hybrid == "sequential":
            x = x + a + self.mixer(a)  # the transfixer: the conv reads the attention output
        elif self.hybrid == "parallel":
            x = x + a + self.mixer(h)  # "add the mixer in parallel with the self-attention module" (inferred)
        else:
            x = x + a
        return x + self.mlp(self.norm_2(x))


# --------------------------------------------------------------------------------------------------
# The model


class Transformer(LanguageModel):
    def __init__(self, config: TransformerConfig):
        super().__init__()
        self.config = c = config
        self.wte = nn.Embedding(c.vocab_size, c.n_embed)
        self.wpe = nn.Embedding(c.context_size, c.n_embed) if c.positions == "learned" else None
        self.drop = nn.Dropout(c.dropout)
        self.blocks = nn.ModuleList(TransformerBlock(c) for _ in range(c.n_layer))
        self.norm_f = norm_layer(c) if c.block == "pre" else None
        self.lm_head = nn.Linear(c.n_embed, c.vocab_size, bias=False)
        if c.tie_weights:
            self.lm_head.weight = self.wte.weight
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """HF's init: Linear and Embedding weights N(0, init_std), biases 0; norms and the hybrid conv keep theirs."""
        for module in self.modules():
            if isinstance(module, (nn.Linear, nn.Embedding)):
                nn.init.normal_(module.weight, mean=0.0, std=self.config.init_std)
                if getattr(module, "bias", None) is not None:
                    nn.init.zeros_(module.bias)

    def positional_parameters(self) -> list[nn.Parameter]:
        return [self.wpe.weight] if self.wpe is not None else []

    def num_params(self, exclude_positional: bool = False) -> int:
        """Every unique parameter: the masked-mixer write-up counts the GPT's position table too."""
        return super().num_params(exclude_positional)

    def hidden(self, idx: torch.Tensor) -> torch.Tensor:
        """The final hidden state, what the LM head reads: (B, T) token ids -> (B, T, C)."""
        c = self.config
        B, T = idx.shape
        if c.hybrid != "none" and T != c.context_size:
            raise ValueError(
                f"input length {T} but this hybrid's mixer conv was built for context_size "
                f"{c.context_size}: pad the input to {c.context_size} tokens "
                "(the data source pads on the left)"
            )
        if T > c.context_size:
            raise ValueError(f"input length {T} exceeds context_size {c.context_size}")
        x = self.wte(idx)  # (B, T, C)
        if self.wpe is not None:
            x = x + self.wpe(torch.arange(T, device=idx.device))
        x = self.drop(x)
        rope = rope_cos_sin(T, c.n_embed // c.n_head, c.rope_theta, idx.device) if c.positions == "rope" else None
        for block in self.blocks:
            x = block(x, rope)
        return self.norm_f(x) if self.norm_f is not None else x

    def forward(self, idx: torch.Tensor, targets: torch.Tensor | None = None) -> ModelOutput:
        logits = self.lm_head(self.hidden(idx))  # (B, T, V)
        loss = cross_entropy(logits, targets) if targets is not None else None
        return ModelOutput(logits, loss, {})


__all__ = [
    "RotaryCausalSelfAttention",
    "SwiGLU",
    "TanhGeluMLP",
    "Transformer",
    "TransformerBlock",
    "TransformerConfig",
    "apply_rope",
    "gpt_config",
    "llama_config",
    "norm_layer",
    "rope_cos_sin",
]
