"""The masked-mixer write-up's retrieval models (B. L. Badger, "Masked Mixer Language Models", §"Accurate
Representation and Retrieval"), and where its embeddings are read.

**Embeddings** (:func:`embed`). A text, tokenized and left-padded exactly as the CLM trained on it, is embedded by a
trained causal language model without its LM head, at one position:

    mixer:        e = hidden(idx)[:, -2]     # the last block's output, second-to-last position (no final norm):
                                             # "the last output is never trained" (its target is ignored)
    transformer:  e = hidden(idx)[:, -1]     # after the final RMSNorm, last position (HF hidden_states[-1])
    autoencoder:  e = encoder(idx)[:, -1]    # the last token's last hidden state (what the decoder receives)

**Matching model** (:class:`Matcher`, family ``"matcher"``). One item is an (n_ctx, d) matrix: row 0 the query
(summary) embedding, rows 1 .. n_ctx - 1 candidate story embeddings, exactly one of them the query's own story.

    x      = [q; c_1; ...; c_{n_ctx-1}]                   # (B, n_ctx, d), no embedding layer
    h      = blocks(x)                                    # 8 *bidirectional* blocks of width d
    s_j    = head(h_j)  for j = 1 .. n_ctx - 1            # Linear(d -> 1) with bias: one score per candidate
    loss   = CE(softmax_j s_j, label)                     # label = the true candidate's index (row - 1)

``kind="mixer"``: the write-up's ``RetrievalMixer``, mixer blocks (pre-LN, an n_ctx x n_ctx token conv with bias,
FF x4 with GELU) with the causal mask *off* (``MixerConfig(causal=False)``), the same block the CLM uses.

**Where a candidate's score can see the query.** The head reads candidate rows only, and the only path from the
query row to a candidate row is the token-mixing conv: in the first block, row j gets ``W[j, 0] * LN(q)`` besides
its own story and ``W[j, t] * LN(c_t)`` of the 30 other candidates. With PyTorch's default initialisation (the
original's) ``W[j, 0]`` is uniform in +-1/sqrt(n_ctx), a different sign and size for every row, and the other
candidates' terms are about sqrt(30) times the query's: the feed-forward layers, shared by all rows, see almost no
query, so the loss stays at chance until the conv has learned to route the query into every row (a plateau that
the write-up's hundreds of thousands of steps cross, and a few hundred steps do not). ``init="query"`` starts
the first block's query column at 1 (``W[j, 0] = 1`` for every row j; everything else PyTorch's default), so every
candidate row reads the query from the first step. It is the book's, not the write-up's (the chapter says which
profiles use it, and why).
``kind="transformer"``: the bidirectional transformer it is compared with. The original stacks 8 PyTorch
``TransformerDecoderLayer(d, 4 heads, 4d)`` called as ``layer(x, x)`` with no mask; we use the shared Llama-style
block with the mask off (``TransformerConfig(causal=False)``, RoPE, RMSNorm, a final norm), so the query row is
told apart by its position as the mixer's is. The original leaves ``batch_first=False`` while its inputs are
(B, n_ctx, d), so its attention runs across the *batch* axis, not across the candidates; ``batch_axis=True``
reproduces that (the reference notes §7: it may be why the write-up saw "practically no learning").

**Mixer autoencoder** (:class:`MixerAutoencoder`, family ``"mixer_autoencoder"``): the write-up's control. A causal
mixer encoder; its last position's last hidden state, repeated at every position, is read by a causal mixer decoder
and an LM head that reconstructs the text. The data give next-token targets, so decoder position t predicts token
t + 1 (every token but the first, pads ignored): reconstruction from the embedding alone, since the decoder never
sees a token.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Literal

import torch
import torch.nn as nn
import torch.nn.functional as F

from ..config import ConfigBase, require
from .base import LanguageModel, Model, ModelOutput, cross_entropy
from .mixer import MaskedMixer, MixerBlock, MixerConfig
from .transformer import Transformer, TransformerBlock, TransformerConfig, norm_layer, rope_cos_sin

# Where each CLM family's embedding is read (a position of its hidden states, (B, L, d)).
EMBED_POSITION = {"mixer": -2, "transformer": -1}


@torch.no_grad()
def embed(model: nn.Module, idx: torch.Tensor) -> torch.Tensor:
    """(B, L) left-padded token ids -> (B, d) embeddings at the family's documented position (see the module doc)."""
    if isinstance(model, MixerAutoencoder):
        return model.embed(idx)
    if isinstance(model, MaskedMixer):
        return model.hidden(idx)[:, EMBED_POSITION["mixer"]]  # never the last position: its output is untrained
    if isinstance(model, Transformer):
        return model.hidden(idx)[:, EMBED_POSITION["transformer"]]  # hidden() applies the final norm
    raise TypeError(
        f"no embedding rule for {type(model).__name__}: embed a masked mixer, a transformer or a mixer autoencoder"
    )


# --------------------------------------------------------------------------------------------------
# The matching model


@dataclass(frozen=True)
class MatcherConfig(ConfigBase):
    """The retrieval model; the defaults are the write-up's mixer matcher at d_model 1024 with 32 positions."""

    family: ClassVar[str] = "matcher"
    kind: Literal["mixer", "transformer"] = "mixer"  # bidirectional mixer blocks, or bidirectional transformer blocks
    n_embed: int = 1024  # d: the embedding width (no embedding layer: the blocks read the embeddings)
    n_layer: int = 8  # blocks
    context_size: int = 32  # n_ctx: the query row plus n_ctx - 1 candidates (the write-up: 32 or 128)
    n_head: int = 4  # attention heads (kind="transformer"; the original's 4)
    batch_axis: bool = False  # kind="transformer": attend across the batch axis, as the original's batch_first=False
    init: Literal["default", "query"] = "default"  # kind="mixer": PyTorch's default (the original), or the first
    # block's query column at 1, so that every candidate row reads the query from the start (the module doc)

    def validate(self) -> None:
        for name in ("n_embed", "n_layer", "n_head"):
            require(getattr(self, name) >= 1, f"model.{name} must be >= 1, got {getattr(self, name)}")
        require(
            self.context_size >= 3,
            f"model.context_size is the query plus the candidates and must be >= 3 "
            f"(at least two candidates), got {self.context_size}",
        )
        if self.kind == "transformer":
            require(
                self.n_embed % self.n_head == 0 and (self.n_embed // self.n_head) % 2 == 0,
                f"model.n_head ({self.n_head}) must divide model.n_embed ({self.n_embed}) into even head sizes "
                "(RoPE): pick another n_head",
            )
        else:
            require(not self.batch_axis, "model.batch_axis applies to kind='transformer' only: leave it False")
        require(
            self.init == "default" or self.kind == "mixer",
            "model.init='query' sets a mixer matcher's token-mixing weights: leave it 'default' for kind='transformer'",
        )

    @property
    def candidates(self) -> int:
        return self.context_size - 1

    def blocks_config(self):
        if self.kind == "mixer":
            # vocab_size is unused by a block; 1 keeps the config valid
            return MixerConfig(
                vocab_size=1, context_size=self.context_size, n_embed=self.n_embed, n_layer=self.n_layer, causal=False
            )
        return TransformerConfig(
            vocab_size=1,
            context_size=self.context_size,
            n_embed=self.n_embed,
            n_layer=self.n_layer,
            n_head=self.n_head,
            causal=False,
        )


class Matcher(Model):
    """``forward(x, targets)``: x (B, n_ctx, d) = [query; candidates], targets (B,) the true candidate's index."""

    def __init__(self, config: MatcherConfig):
        super().__init__()
        self.config = c = config
        bc = c.blocks_config()
        if c.kind == "mixer":
            self.blocks = nn.ModuleList(MixerBlock(bc) for _ in range(c.n_layer))
            self.norm_f = None  # the write-up's RetrievalMixer has no final norm
            if c.init == "query":  # after the default draws, so that the rest of the weights are the same
                with torch.no_grad():
                    self.blocks[0].conv.weight[:, 0] = 1.0  # (out row, in row 0 = the query, tap): every row reads q
        else:
            self.blocks = nn.ModuleList(TransformerBlock(bc) for _ in range(c.n_layer))
            self.norm_f = norm_layer(bc)
        self.head = nn.Linear(c.n_embed, 1)  # "Linear(d -> 1)" with bias

    def scores(self, x: torch.Tensor) -> torch.Tensor:
        """(B, n_ctx, d) -> (B, n_ctx - 1): one score per candidate row."""
        c = self.config
        if c.kind == "mixer":
            for block in self.blocks:
                x = block(x)
        else:
            if c.batch_axis:  # the original: (B, n_ctx, d) read as (seq=B, batch=n_ctx, d)
                x = x.transpose(0, 1)
            rope = rope_cos_sin(x.size(1), c.n_embed // c.n_head, 10_000.0, x.device)
            for block in self.blocks:
                x = block(x, rope)
            x = self.norm_f(x)
            if c.batch_axis:
                x = x.transpose(0, 1)
        return self.head(x[:, 1:]).squeeze(-1)  # rows 1 .. n_ctx - 1: the candidates

    def forward(self, x: torch.Tensor, targets: torch.Tensor | None = None) -> ModelOutput:
        logits = self.scores(x)  # (B, n_ctx - 1)
        loss = F.cross_entropy(logits.float(), targets) if targets is not None else None
        return ModelOutput(logits, loss, {})

    def example_batch(self, batch_size: int = 1, device=None) -> dict[str, torch.Tensor]:
        c = self.config
        return {
            "x": torch.zeros(batch_size, c.context_size, c.n_embed, device=device),
            "targets": torch.zeros(batch_size, dtype=torch.long, device=device),
        }


# --------------------------------------------------------------------------------------------------
# The autoencoder control


@dataclass(frozen=True)
class AutoencoderConfig(ConfigBase):
    """A flat masked-mixer encoder and decoder of the same shape (each ``n_layer`` blocks)."""

    family: ClassVar[str] = "mixer_autoencoder"
    vocab_size: int = 4096
    context_size: int = 512
    n_embed: int = 1024
    n_layer: int = 8

    def validate(self) -> None:
        for name in ("vocab_size", "context_size", "n_embed", "n_layer"):
            require(getattr(self, name) >= 1, f"model.{name} must be >= 1, got {getattr(self, name)}")

    def mixer(self) -> MixerConfig:
        return MixerConfig(
            vocab_size=self.vocab_size, context_size=self.context_size, n_embed=self.n_embed, n_layer=self.n_layer
        )


class MixerAutoencoder(LanguageModel):
    def __init__(self, config: AutoencoderConfig):
        super().__init__()
        self.config = c = config
        mc = c.mixer()
        self.wte = nn.Embedding(c.vocab_size, c.n_embed)
        self.encoder = nn.ModuleList(MixerBlock(mc) for _ in range(c.n_layer))
        self.decoder = nn.ModuleList(MixerBlock(mc) for _ in range(c.n_layer))
        self.lm_head = nn.Linear(c.n_embed, c.vocab_size, bias=False)

    def embed(self, idx: torch.Tensor) -> torch.Tensor:
        """(B, L) -> (B, d): the encoder's last hidden state at the last position (it has read every token)."""
        if idx.size(1) != self.config.context_size:
            raise ValueError(
                f"input length {idx.size(1)} but this autoencoder was built for context_size "
                f"{self.config.context_size}: pad the input to that length"
            )
        x = self.wte(idx)
        for block in self.encoder:
            x = block(x)
        return x[:, -1]

    def forward(self, idx: torch.Tensor, targets: torch.Tensor | None = None) -> ModelOutput:
        e = self.embed(idx)  # (B, d)
        x = e.unsqueeze(1).expand(-1, idx.size(1), -1)  # the embedding repeated at every position
        for block in self.decoder:
            x = block(x)
        logits = self.lm_head(x)
        loss = cross_entropy(logits, targets) if targets is not None else None
        return ModelOutput(logits, loss, {})

    def generate(self, idx: torch.Tensor, max_new_tokens: int, **_) -> torch.Tensor:
        raise ValueError("a mixer autoencoder reconstructs its input; it does not continue it")


__all__ = ["AutoencoderConfig", "EMBED_POSITION", "Matcher", "MatcherConfig", "MixerAutoencoder", "embed"]
