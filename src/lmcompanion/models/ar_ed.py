"""The auto-regressive encoder-decoder transformer (Y. Yan, 2024), and the encoder-decoder core it shares with
DeepSight.

"The new architecture takes a regular decoder-only architecture with L layers and makes the last L_decoder
layers perform both self-attention and cross-attention on the output of the first L_encoder layers." Both stacks
are causal, so the model is a next-token predictor used end to end:

    E   = dropout(W_tok[x] + W_pos[0..T-1])               # (B, T, C)
    enc = encoder(E)                                      # n_layer pre-LN causal blocks, no final LN
    d   = bridge(enc)                                     # "a linear pass on the encoder output"
    d   = decoder(d, enc)                                 # n_layer blocks: self-attn, causal cross-attn on enc, MLP
    out = LN(d) [- W_pos[1..T]]                           # positional-embedding subtraction (next positions)
    logits = out W_tok^T                                  # tied output layer

``n_layer`` counts the blocks of *each* stack (13 + 13 in the write-up, against the baseline's 26).

Cross-attention is causal: decoder position t reads encoder positions <= t. The encoder is causal too, so an
unmasked cross-attention would let position t see token t+1 through the encoder output at t+1.

The *embedding loss* pulls LN_b(encoder output, detached) toward the cumulative mean of LN_a(E):

    embedding_loss = disaffinity(LN_b(out_enc), cummean_T(LN_a(E)))     (MSE, or (1 - cos) / 2, or -log((cos+1)/2))

and is added, times ``embedding_loss_coeff``, in training only. Config keys and values are the write-up's
appendix YAML (``detach_type: "ENCODER_OUT"``, ...), with the original code's validation rules between them.

Differences from the original code (yif-AI at 55c3ac37), all documented in the chapter:
- the original builds the embedding-loss LayerNorm even in the runs without an embedding loss (a YAML ``null``
  passes its test), adding an unused 300 parameters to those runs' counts; we build it only when it is used.
- ``attn_dropout_in_eval`` (off by default) reproduces the original's attention dropout in eval mode.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Literal

import torch
import torch.nn as nn
import torch.nn.functional as F

from ..config import ConfigBase, require
from .base import LanguageModel, ModelOutput, cross_entropy
from .layers import MLP, Block, CausalSelfAttention, CrossAttention, init_gpt_weights, layer_norm

Disaffinity = Literal["NONE", "MSE", "COSINE", "LOG_COSINE"]


@dataclass(frozen=True)
class CrossAttnConfig(ConfigBase):
    n_head: int | None = None  # None: twice the self-attention heads (the original's default)
    use_bias: bool | None = None  # None: the model's use_bias


@dataclass(frozen=True)
class EncoderDecoderConfig(ConfigBase):
    """Keys shared by the AR encoder-decoder and DeepSight (the write-ups' ``ModelConfig`` plus cross-attention)."""

    vocab_size: int = 50257
    context_size: int = 200  # T
    n_embed: int = 150  # C
    n_head: int = 5  # heads of the encoder and decoder self-attention
    n_layer: int = 13  # blocks per stack (encoder and decoder each)
    dropout_rate: float = 0.0
    use_bias: bool = False
    cross_attn_config: CrossAttnConfig = CrossAttnConfig()
    attn_dropout_in_eval: bool = False  # the original code's quirk: attention dropout stays on in eval mode

    @property
    def cross_n_head(self) -> int:
        n = self.cross_attn_config.n_head
        return 2 * self.n_head if n is None else n

    @property
    def cross_use_bias(self) -> bool:
        b = self.cross_attn_config.use_bias
        return self.use_bias if b is None else b

    def validate(self) -> None:
        for name in ("vocab_size", "context_size", "n_embed", "n_head", "n_layer"):
            require(getattr(self, name) >= 1, f"model.{name} must be >= 1")
        require(
            self.n_embed % self.n_head == 0,
            f"model.n_embed ({self.n_embed}) must be divisible by model.n_head ({self.n_head})",
        )
        require(
            self.cross_n_head >= 1 and self.n_embed % self.cross_n_head == 0,
            f"model.n_embed ({self.n_embed}) must be divisible by model.cross_attn_config.n_head ({self.cross_n_head})",
        )
        require(0.0 <= self.dropout_rate < 1.0, f"model.dropout_rate must lie in [0, 1), got {self.dropout_rate}")


def disaffinity(a: torch.Tensor, b: torch.Tensor, kind: str) -> torch.Tensor:
    """The write-ups' disaffinity scores between two (B, T, C) tensors; 0 is the best score."""
    if kind == "MSE":
        return F.mse_loss(a.float(), b.float())  # mean over B * T * C
    cos = F.cosine_similarity(a.float(), b.float(), dim=-1)  # (B, T)
    if kind == "COSINE":
        return (1 - (cos + 1) / 2).mean()  # "cosine dissimilarity": 0 most similar, 1 most dissimilar
    if kind == "LOG_COSINE":
        return -torch.log((cos + 1) / 2).mean()
    raise ValueError(f"unknown disaffinity {kind!r}")


def cumulative_mean(x: torch.Tensor) -> torch.Tensor:
    """A[i] = (1/i) * sum_{k<=i} x[k] along T (inclusive of i): (B, T, C) -> (B, T, C)."""
    counts = torch.arange(1, x.size(1) + 1, device=x.device, dtype=x.dtype)
    return x.cumsum(dim=1) / counts[None, :, None]


class DecoderBlock(nn.Module):
    """Causal self-attention, causal cross-attention on the encoder output, MLP; each pre-LN and residual.

    ORIGINAL order: d += SelfAttn(ln_1(d)); d += CrossAttn(q=decoder_cross_ln(d), kv=encoder_cross_ln(enc));
    d += MLP(ln_2(d)). ALT swaps the first two.
    """

    def __init__(self, c: EncoderDecoderConfig, order: str = "ORIGINAL"):
        super().__init__()
        self.order = order
        self.ln_1 = layer_norm(c.n_embed, c.use_bias)
        self.attn = CausalSelfAttention(c.n_embed, c.n_head, c.use_bias, c.dropout_rate, c.attn_dropout_in_eval)
        self.encoder_cross_ln = layer_norm(c.n_embed, c.use_bias)
        self.decoder_cross_ln = layer_norm(c.n_embed, c.use_bias)
        self.cross_attn = CrossAttention(
            c.n_embed,
            c.cross_n_head,
            c.cross_use_bias,
            c.dropout_rate,
            causal=True,
            attn_dropout_in_eval=c.attn_dropout_in_eval,
        )
        self.ln_2 = layer_norm(c.n_embed, c.use_bias)
        self.mlp = MLP(c.n_embed, c.use_bias, c.dropout_rate)

    def _self(self, d):
        return d + self.attn(self.ln_1(d))

    def _cross(self, d, enc):
        return d + self.cross_attn(self.decoder_cross_ln(d), self.encoder_cross_ln(enc))

    def forward(self, d: torch.Tensor, enc: torch.Tensor) -> torch.Tensor:
        if self.order == "ALT":
            d = self._self(self._cross(d, enc))
        else:
            d = self._cross(self._self(d), enc)
        return d + self.mlp(self.ln_2(d))


class EncoderDecoderCore(LanguageModel):
    """Embeddings, causal encoder, bridge, decoder, final LN, tied output: what AR-ED and DeepSight share."""

    def __init__(self, c: EncoderDecoderConfig, n_pos: int, order: str = "ORIGINAL"):
        super().__init__()
        self.config = c
        self.wte = nn.Embedding(c.vocab_size, c.n_embed)
        self.wpe = nn.Embedding(n_pos, c.n_embed)
        self.drop = nn.Dropout(c.dropout_rate)
        self.encoder = nn.ModuleList(
            Block(c.n_embed, c.n_head, c.use_bias, c.dropout_rate, c.attn_dropout_in_eval) for _ in range(c.n_layer)
        )
        self.bridge = nn.Linear(c.n_embed, c.n_embed, bias=c.use_bias)  # the original's `decoder_feed_forward`
        self.decoder = nn.ModuleList(DecoderBlock(c, order) for _ in range(c.n_layer))
        self.ln_f = layer_norm(c.n_embed, c.use_bias)
        self.lm_head = nn.Linear(c.n_embed, c.vocab_size, bias=False)
        self.lm_head.weight = self.wte.weight  # weight tying

    def init_weights(self) -> None:
        """nanoGPT's init; residual projections (attention, cross-attention, MLP out) scaled by n_layer per stack."""
        init_gpt_weights(self, self.config.n_layer)

    def positional_parameters(self) -> list[nn.Parameter]:
        return [self.wpe.weight]

    def embed(self, idx: torch.Tensor) -> torch.Tensor:
        """E = dropout(token + position embeddings)."""
        B, T = idx.shape
        if T > self.config.context_size:
            raise ValueError(f"input length {T} exceeds context_size {self.config.context_size}")
        return self.drop(self.wte(idx) + self.wpe(torch.arange(T, device=idx.device)))

    def encode(self, E: torch.Tensor) -> torch.Tensor:
        enc = E
        for block in self.encoder:
            enc = block(enc)
        return enc  # the raw residual stream: no final LN, as in the original

    def decode(self, d: torch.Tensor, enc: torch.Tensor) -> torch.Tensor:
        for block in self.decoder:
            d = block(d, enc)
        return self.ln_f(d)


@dataclass(frozen=True)
class AREDConfig(EncoderDecoderConfig):
    """The AR encoder-decoder write-up's model config (its appendix keys and values)."""

    family: ClassVar[str] = "ar_ed"
    add_ln_before_decoder_ff: bool = False  # LayerNorm on the encoder output before the bridge
    add_pos_embed_to_decoder: bool = False  # add the next positions' embeddings to the decoder input
    detach_type: Literal["NONE", "EMBEDDING", "ENCODER_OUT"] | None = (
        "ENCODER_OUT"  # which side the embedding loss does not train
    )
    embedding_ln_type: Literal["NONE", "INIT", "AVG_CUM_SUM"] | None = (
        "INIT"  # LN on E before (INIT) or after averaging
    )
    embedding_loss_coeff: float | None = 1.0
    embedding_loss_type: Disaffinity = "MSE"
    order_type: Literal["ORIGINAL", "ALT"] = "ORIGINAL"  # decoder block: self- then cross-attention, or the reverse
    sub_pos_embed_to_decoder: Literal["NO", "YES_NO_LN", "YES_LN"] = (
        "YES_NO_LN"  # subtract next positions' embeddings before the output layer
    )
    use_ln_on_encoder_out: bool | None = True  # LN on the encoder output inside the embedding loss

    def validate(self) -> None:
        super().validate()
        keys = ("use_ln_on_encoder_out", "embedding_ln_type", "detach_type")
        if self.embedding_loss_type == "NONE":
            set_keys = [k for k in keys + ("embedding_loss_coeff",) if getattr(self, k) is not None]
            require(
                not set_keys,
                f"model.embedding_loss_type is NONE, so {', '.join('model.' + k for k in set_keys)} must be null "
                "(None): they only configure the embedding loss",
            )
        else:
            missing = [k for k in keys if getattr(self, k) is None]
            require(
                not missing,
                f"model.embedding_loss_type={self.embedding_loss_type} needs "
                f"{', '.join('model.' + k for k in missing)} to be set (not null)",
            )
            if self.embedding_loss_coeff is None:  # the original's rule: a null coefficient means 1
                object.__setattr__(self, "embedding_loss_coeff", 1.0)
            require(
                self.embedding_loss_coeff > 0,
                f"model.embedding_loss_coeff must be > 0, got {self.embedding_loss_coeff}",
            )

    @property
    def extra_position(self) -> bool:
        return self.add_pos_embed_to_decoder or self.sub_pos_embed_to_decoder != "NO"


class AREncoderDecoder(EncoderDecoderCore):
    def __init__(self, config: AREDConfig):
        c = config
        # one extra position row when the decoder uses the embedding of the position after the last input token
        super().__init__(c, n_pos=c.context_size + c.extra_position, order=c.order_type)
        self.ffd_ln = layer_norm(c.n_embed, c.use_bias) if c.add_ln_before_decoder_ff else None
        self.post_sub_pos_ln = layer_norm(c.n_embed, c.use_bias) if c.sub_pos_embed_to_decoder == "YES_LN" else None
        use_loss = c.embedding_loss_type != "NONE"
        self.encoder_out_ln = nn.LayerNorm(c.n_embed, bias=True) if use_loss and c.use_ln_on_encoder_out else None
        self.embeddings_ln = nn.LayerNorm(c.n_embed, bias=True) if use_loss and c.embedding_ln_type != "NONE" else None
        self.init_weights()

    def forward(self, idx: torch.Tensor, targets: torch.Tensor | None = None) -> ModelOutput:
        c = self.config
        T = idx.size(1)
        next_pos = torch.arange(1, T + 1, device=idx.device)  # positions of the tokens being predicted
        E = self.embed(idx)  # (B, T, C)
        enc = self.encode(E)  # (B, T, C)
        # "the input to the first decoder layer is generated by a linear pass on the encoder output"
        d = self.bridge(self.ffd_ln(enc) if self.ffd_ln is not None else enc)
        if c.add_pos_embed_to_decoder:
            d = d + self.wpe(next_pos)
        out = self.decode(d, enc)  # after the final LN
        # "Before the (decoder) output layer, the positional embedding of the 'next tokens' is subtracted"
        if c.sub_pos_embed_to_decoder != "NO":
            out = out - self.wpe(next_pos)
            if self.post_sub_pos_ln is not None:
                out = self.post_sub_pos_ln(out)
        logits = self.lm_head(out)  # (B, T, V)
        if targets is None:
            return ModelOutput(logits)
        loss = cross_entropy(logits, targets)
        aux = {}
        if self.training and c.embedding_loss_type != "NONE":
            aux["embedding"] = self.embedding_loss(E, enc)
            loss = loss + c.embedding_loss_coeff * aux["embedding"]
        return ModelOutput(logits, loss, aux)

    def embedding_loss(self, E: torch.Tensor, enc: torch.Tensor) -> torch.Tensor:
        """disaffinity(LN_b(out_enc), cumulative average of LN_a(E)) with the configured detaching."""
        c = self.config
        if (
            c.detach_type == "ENCODER_OUT"
        ):  # "out_enc is detached because embedding loss is only interested in updating embedding weights"
            enc = enc.detach()
        elif c.detach_type == "EMBEDDING":
            E = E.detach()
        if self.encoder_out_ln is not None:
            enc = self.encoder_out_ln(enc)  # out_enc_ln = LayerNorm_b(out_enc)
        if c.embedding_ln_type == "INIT":
            E = self.embeddings_ln(E)  # E_ln = LayerNorm_a(E), before averaging
        target = cumulative_mean(E)  # E_avg_sum[i] = (1/i) sum_{k<=i} E_ln[k]
        if c.embedding_ln_type == "AVG_CUM_SUM":
            target = self.embeddings_ln(target)
        return disaffinity(enc, target, c.embedding_loss_type)


__all__ = [
    "AREDConfig",
    "AREncoderDecoder",
    "CrossAttnConfig",
    "DecoderBlock",
    "EncoderDecoderConfig",
    "EncoderDecoderCore",
    "cumulative_mean",
    "disaffinity",
]
