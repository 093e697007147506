"""An hourglass-shaped transformer with soft experts (K. Plumard, *efficient_transformer*, 2024), for shakespeare_char.

"We introduced a notion of groups in my sequence of tokens, and each group will provide K latent embeddings, and
then we upsample somewhat like in Hierarchical Perceiver." The sequence is cut into ``n_groups`` equal groups that
stay aligned at every level, so group g always covers the same stretch of text:

    S_0 = dropout(W_tok[x] + W_pos[0..T-1])                        (B, T, C_0) = (B, n_groups, G, C_0), G = T / n_groups
    encoder level i (C_i -> C_i+1, K_i latents per group):
        z   = compressor(S_i)        causal within each group; keep the LAST K_i tokens ("as in Mirasol")
        z   = enc_dropout(z) + Emb_i[0..K_i-1]                     within-group positions
        S_i+1 = global^n(local^n(z))                               (B, n_groups, K_i, C_i+1)
    latent: n_block_latent global blocks on the n_groups * K_L-1 tokens; every k-th one a soft-expert block
    decoder level back to S_i's shape (C_i+1 -> C_i; K_i -> K_i-1 tokens per group, G at the last level):
        prefix = the previous group's latents tiled (group 0: learned tokens), then the group's own latents
        u   = dec_dropout(Linear(prefix ++ own)) + the within-group table of S_i's level (the stem's for S_0)
        "repeat": x = global^n(local^n(u)) + S_i
        "attn":   x = global^n(local^n(S_i + u + Attn(q = S_i + u, k = v = u)))   (Hourglass; the original adds S_i again)
    logits = lm_head(x)                                            untied; no final norm, as the original (final_norm)

Causality holds because a kept latent sits at the position of the last token it summarises and the prefix slots of
group g hold only group g-1. The price is the *repeat-mode blind spot*: the first G - K_0 positions of every group
see their own group only through their own embedding (``group_position_losses`` measures it).

Soft experts ("several channels of the same sequence, i.e. several different q, k, v"): a block with E soft experts
of which S are shared runs E' = E - S full causal attentions on the same input, gives each channel its own
low-rank MLP output map (plus the S shared maps), and merges the channels with an elementwise softmax over the
channel axis of their own outputs: out = sum_e softmax_e(y) * y_e. The write-up "also considered" merging "via max
and mean of the features" (``expert_merge``): out = max_e y_e, or mean_e y_e, elementwise; the original's code has
only the softmax merge.

Config names and the original's (``AnyModalMirasolConfig`` at d1c302b2; the run config is ``run_config()``):

    vocab_size <- vocab_size            context_size <- block_size          n_embed <- n_embd (list -> tuple)
    len(latent_size) <- n_layer_enc_dec n_head, dropout, enc_dropout, dec_dropout, bias, activation, normalization,
    pos_embd, use_pos_embd_in_enc_dec, noisy_embd_alpha, n_groups, latent_size, nb_soft_experts, nb_shared_experts,
    apply_soft_experts_every, coeff_soft_expert_mlp_dim: same names
    encoder_type <- enc_type ('tranfo_enc' -> "transformer", 'perceiver')
    n_block_enc <- n_block_transformer_enc          n_block_local_global <- n_block_local_global_causal_sa
    interleave_local_global <- interleave_local_global_csa                n_block_latent <- n_block_latent_attn
    same_kv_for_soft_experts <- use_same_key_for_soft_experts (use_same_kv_... at HEAD)
    soft_experts_in <- apply_soft_experts_in_blocks  dense_former <- use_dense_former_in_latent
    latent_loss <- latent_causal_loss_type           latent_loss_coeff <- forward(global_coeff_latent_causal_loss=0.2)
    up_sampling <- up_sampling_type                  learnable_skip <- lernable_skip_hiearchy
    gradient_checkpointing <- apply_gradient_checkpointing (its sequential factor is not kept: memory only)
    qk_norm: always on in the original. New switches for the original's quirks, each documented at its field:
    global_ln1, attn_skip_twice, perceiver_original_mask, tie_head (the vanilla baseline), pad_inputs_to; and
    final_norm, which applies head_ln (the original builds it and never applies it, as our default).
    mup <- muP (the vanilla baseline's: attention scaled by 1 / head size, logits divided by the width, the muP init;
    the original's per-layer learning rates are not kept: the shared trainer gives every parameter one rate);
    expert_merge: new, the merges the write-up compares with the softmax (not in the original's code).
    Not implemented: nb_mem_token (0 in every reported run), muP for the hierarchical model (off in the run config,
    and the original cannot build it with it), init_weight='spike_no_more' (the run config uses 'nanogpt').

Choices where the write-up is silent: no final norm before the head by default, as the original (it builds
``head_ln`` but never applies it) and as in the runs behind the write-up's numbers; ``final_norm=True`` applies it.
A final norm was this module's default until the chapter's ``cpu`` runs showed it keeping the hourglass models at
the unigram loss: the norm makes the loss blind to the scale of the token-level stream, and at that profile's
learning rate the decoder's up-projection, a path with no norm between the latent stack and that stream, grows the
constant the head needs for the character frequencies until the current character's embedding is lost under it
(the chapter's protocol notebook trains the anchor both ways at every profile). Soft experts are off with ``nb_soft_experts=0``
(and then ``nb_shared_experts=0``; ``base_config``); the latent loss is mixed as the original mixes it,
loss = (1 - c) CE + c latent, in training (eval: plain CE); ``learnable_skip`` needs a skip after the level, so it
is rejected with attention upsampling unless ``attn_skip_twice``.

Counts: ``num_params()`` counts as the original counts (19,552,768 for ``base_config()``, 27,423,232 for
``run_config()``, 27,484,864 with ``up_sampling="attn"``, 20,484,096 for ``vanilla_config()``): position tables
excluded, and the parameters the original builds but never reads added (``original_unused_params()``: 92,160 of
the first-group token table, the 64 of head_ln unless ``final_norm=True``, and with ``global_ln1=False`` the 5,248
of the global blocks' first norms). With ``global_ln1=True`` those norms are real, read parameters of this module,
so ``num_params(as_original=False)`` is 19,460,544 for ``base_config()`` (64 more with ``final_norm=True``) and
19,455,296 with ``global_ln1=False``.

Where this implementation differs from the original code, by default or always:
- global blocks have their first norm (``global_ln1=True``; False reproduces the original, whose global blocks feed
  the raw residual to the attention);
- attention upsampling adds the skip once, Hourglass-style (``attn_skip_twice=False``; True is the original);
- the shared experts are applied per sample (the original pairs batch element b with other samples when
  nb_shared_experts > 1);
- the Perceiver compressor is causal with each latent seeing the group up to its own position
  (``perceiver_original_mask=True`` gives the original's top-left mask: latent j sees the group's first j+1 tokens);
- inputs are right-padded to ``context_size`` (``pad_inputs_to``), so a prefix gets the predictions it gets inside a
  full window; the original pads to a multiple of n_groups, which moves the group boundaries with the length;
- ``noisy_embd_alpha`` adds NEFTune's elementwise noise in training only (the original adds one random scalar to the
  whole batch, in eval too);
- three knobs the original could not run are implemented as described: ``interleave_local_global`` (fails on a
  shape), soft experts in the encoder (fails at construction), the latent loss (an undefined variable);
- the original's first-group token table of the last decoder is built for block_size - K_0 rows of which only
  G - K_0 are read; we build the rows that are read. ``num_params()`` still counts as the original counts
  (``original_unused_params()`` lists what it adds); ``num_params(as_original=False)`` counts this module.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar, Literal

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint

from ..config import ConfigBase, require
from .base import LanguageModel, ModelOutput, cross_entropy
from .layers import init_gpt_weights, layer_norm


@dataclass(frozen=True)
class HourglassConfig(ConfigBase):
    """The defaults are the write-up's run config (d1c ``config/train_config.py``), i.e. ``run_config()``."""

    family: ClassVar[str] = "hourglass"
    # ---- stem, widths, head
    vocab_size: int = 65  # V: 65 characters for shakespeare_char
    context_size: int = 768  # T: the original's block_size; a multiple of n_groups when there are levels
    n_embed: tuple[int, ...] = (
        64,
        128,
        256,
    )  # n_embd: the stem's width, then each level's (the last: the latent width)
    n_head: int = 8  # heads of every attention; divides every width
    dropout: float = 0.1  # embedding, attention-probability, residual and expert-MLP dropout
    enc_dropout: float = 0.1  # on each compressor's output
    dec_dropout: float = 0.0  # on each decoder's up-projection
    bias: bool = (
        False  # biases in Linear layers and LayerNorms (the experts' d -> n map always has one, as the original)
    )
    activation: Literal["gelu", "swiglu"] = "gelu"  # swiglu: the inner Linear is n -> 8n, SiLU(gate) * value
    normalization: Literal["rmsnorm", "layernorm"] = "rmsnorm"  # RMSNorm eps 1e-6 weight only, or LayerNorm eps 1e-5
    qk_norm: bool = True  # one norm over the full width on q and on k before the head split (always on in the original)
    pos_embd: Literal["simple", "no"] = "simple"  # learned absolute positions at the stem (context_size rows), or none
    use_pos_embd_in_enc_dec: bool = True  # learned within-group positions after each compressor and each upsampler
    noisy_embd_alpha: float = 0.0  # NEFTune: uniform noise * alpha / sqrt(T C) on token embeddings in training; 0 = off
    final_norm: bool = False  # a norm before lm_head (True); the original builds head_ln but never applies it
    tie_head: bool = False  # lm_head shares the token embedding (the vanilla baseline); the hourglass' head is untied
    # ---- groups and levels
    n_groups: int = 16  # groups per sequence at every level; with no levels it only lays out group_position_losses
    latent_size: tuple[int, ...] = (16, 2)  # K_i: latents kept per group at encoder level i; one level per entry
    # right-pad inputs to the full window, or (the original) to a multiple of n_groups, which moves group boundaries
    pad_inputs_to: Literal["context_size", "n_groups"] = "context_size"
    # the compressor: local blocks then keep the last K tokens, or a cross-attention with the last K as queries
    encoder_type: Literal["transformer", "perceiver"] = "transformer"
    perceiver_original_mask: bool = False  # the original's top-left mask: latent j sees the group's first j + 1 tokens
    n_block_enc: int = 2  # transformer compressor: one up-projecting local block + (n_block_enc - 1) local blocks
    n_block_local_global: int = 2  # per level (encoder and decoder): this many local blocks, then as many global blocks
    interleave_local_global: bool = False  # alternate local and global blocks instead
    global_ln1: bool = True  # global blocks normalise the attention input; False = the original (raw residual)
    # ---- latent stack
    n_block_latent: int = 16  # global blocks at width n_embed[-1] on n_groups * latent_size[-1] tokens
    nb_soft_experts: int = 12  # E, shared experts included; 0 = no soft experts anywhere
    nb_shared_experts: int = 1  # S < E: MLP output maps applied to every channel; E - S q,k,v channels
    same_kv_for_soft_experts: bool = False  # one k, v shared by the channels (q: n -> E'n, kv: n -> 2n)
    apply_soft_experts_every: int = 4  # block j (0-based) is a soft-expert block when (j + 1) % this == 0
    coeff_soft_expert_mlp_dim: int = 1  # each expert map is 4n -> d with d = coeff * n // E
    expert_merge: Literal["softmax", "max", "mean"] = "softmax"  # how the channels merge (the write-up's alternatives)
    soft_experts_in: tuple[Literal["latent", "enc"], ...] = ("latent",)  # "enc": in the transformer compressor
    dense_former: bool = False  # DenseFormer weighted averages between latent blocks
    latent_loss: Literal["cos_similarity"] | None = None  # Mirasol's latent prediction loss after the latent stack
    latent_loss_coeff: float = 0.2  # c: training loss = (1 - c) CE + c latent (the original's mix)
    # ---- decoder
    up_sampling: Literal["repeat", "attn"] = "repeat"  # tile the previous group, or that plus Hourglass attention
    attn_skip_twice: bool = False  # attn: add the skip after the blocks too (the original); False = once (Hourglass)
    learnable_skip: bool = False  # x = r S + (1 - r) x with a learned r per level (randn init) instead of x + S
    gradient_checkpointing: bool = False  # recompute the latent blocks in the backward pass (memory only)
    # muP, the vanilla baseline's (the original's HEAD vanilla config sets muP=True): attention scaled by 1/hs instead
    # of 1/sqrt(hs), logits divided by the width, and the muP init; a model with levels cannot have it (nor could the
    # original's). The original's per-layer learning rates (lr / fan-in) are not kept: one rate for every parameter.
    mup: bool = False

    # ---- derived sizes
    @property
    def levels(self) -> int:
        """Encoder levels (= decoder levels): the original's n_layer_enc_dec."""
        return len(self.latent_size)

    @property
    def group_len(self) -> int:
        """G: tokens per group at the input (48 for the run config)."""
        return self.context_size // self.n_groups

    @property
    def blind_spot(self) -> int:
        """Offsets per group filled from the previous group at the token level (G - K_0; 32 for the run config)."""
        return self.group_len - self.latent_size[0] if self.levels else 0

    @property
    def n_resid(self) -> int:
        """The init's layer count: 2 L (2 n_block_local_global) + n_block_latent (32 for the run config)."""
        return 2 * self.levels * (2 * self.n_block_local_global) + self.n_block_latent

    @property
    def expert_channels(self) -> int:
        """E' = E - S: q,k,v channels of a soft-expert block."""
        return self.nb_soft_experts - self.nb_shared_experts

    def expert_width(self, n: int) -> int:
        """d = coeff * n // E: the output width of each expert map at width n."""
        return self.coeff_soft_expert_mlp_dim * n // self.nb_soft_experts

    def soft_experts_at(self, where: str, j: int) -> bool:
        """Whether block j of the latent stack ("latent") or of a compressor after its first block ("enc") is a
        soft-expert block."""
        return (
            self.nb_soft_experts > 0 and where in self.soft_experts_in and (j + 1) % self.apply_soft_experts_every == 0
        )

    def validate(self) -> None:
        for name in (
            "vocab_size",
            "context_size",
            "n_head",
            "n_groups",
            "apply_soft_experts_every",
            "coeff_soft_expert_mlp_dim",
        ):
            require(getattr(self, name) >= 1, f"model.{name} must be >= 1, got {getattr(self, name)}")
        for name in ("n_block_latent", "n_block_local_global", "nb_soft_experts", "nb_shared_experts"):
            require(getattr(self, name) >= 0, f"model.{name} must be >= 0, got {getattr(self, name)}")
        for name in ("dropout", "enc_dropout", "dec_dropout"):
            require(0.0 <= getattr(self, name) < 1.0, f"model.{name} must lie in [0, 1), got {getattr(self, name)}")
        require(
            self.noisy_embd_alpha >= 0, f"model.noisy_embd_alpha must be >= 0 (0 = off), got {self.noisy_embd_alpha}"
        )
        require(
            len(self.n_embed) == self.levels + 1,
            f"model.n_embed has {len(self.n_embed)} widths but model.latent_size has {self.levels} levels: give one "
            f"width per level plus the stem's (e.g. n_embed=(64, 128, 256) with latent_size=(16, 2))",
        )
        for n in self.n_embed:
            require(
                n >= 1 and n % self.n_head == 0,
                f"every width in model.n_embed={self.n_embed} must be a positive multiple of model.n_head "
                f"({self.n_head}): change the widths or n_head",
            )
        self._validate_levels()
        self._validate_experts()
        require(
            0.0 <= self.latent_loss_coeff < 1.0,
            f"model.latent_loss_coeff must lie in [0, 1) (loss = (1 - c) CE + c latent), got {self.latent_loss_coeff}",
        )
        require(not self.dense_former or self.n_block_latent >= 1, "model.dense_former needs model.n_block_latent >= 1")
        require(
            not self.mup or not self.levels,
            "model.mup is the vanilla baseline's option (no levels): the original cannot build the hierarchical "
            "model with muP either; set mup=False or latent_size=()",
        )

    def _validate_levels(self) -> None:
        if not self.levels:
            require(
                self.latent_loss is None,
                "model.latent_loss predicts the next latent: it needs at least one level "
                "(set model.latent_size, or latent_loss=None)",
            )
            return
        require(
            self.context_size % self.n_groups == 0,
            f"model.context_size ({self.context_size}) must split into model.n_groups ({self.n_groups}) equal groups: "
            f"set context_size to a multiple of n_groups (e.g. {self.n_groups * max(1, self.group_len)}) "
            f"or change n_groups",
        )
        tokens = self.group_len  # tokens per group entering each level
        for i, k in enumerate(self.latent_size):
            require(
                1 <= k <= tokens,
                f"model.latent_size[{i}] = {k} is larger than a group at that level ({tokens} tokens) or < 1: "
                f"lower latent_size[{i}] to at most {tokens}"
                + (", or raise context_size / lower n_groups" if i == 0 else ""),
            )
            tokens = k
        require(
            self.encoder_type == "perceiver" or self.n_block_enc >= 1,
            "model.n_block_enc must be >= 1 for the transformer compressor (it holds the up-projecting block)",
        )
        require(
            not (self.learnable_skip and self.up_sampling == "attn" and not self.attn_skip_twice),
            "model.learnable_skip lerps the skip added after each decoder level, which attention upsampling with "
            "attn_skip_twice=False does not add: set attn_skip_twice=True (the original) or learnable_skip=False",
        )

    def _validate_experts(self) -> None:
        require(
            len(set(self.soft_experts_in)) == len(self.soft_experts_in),
            f"model.soft_experts_in={self.soft_experts_in} repeats an entry: list each of 'latent', 'enc' once",
        )
        if self.nb_soft_experts == 0:
            require(
                self.nb_shared_experts == 0,
                "model.nb_soft_experts=0 turns soft experts off: set nb_shared_experts=0 too",
            )
            return
        require(
            self.nb_shared_experts < self.nb_soft_experts,
            f"model.nb_shared_experts ({self.nb_shared_experts}) must be fewer than model.nb_soft_experts "
            f"({self.nb_soft_experts}): shared experts are counted within nb_soft_experts and at least one q,k,v "
            f"channel must remain; lower nb_shared_experts to at most {self.nb_soft_experts - 1} or raise nb_soft_experts",
        )
        if "enc" in self.soft_experts_in and self.levels:
            require(
                self.encoder_type == "transformer",
                "soft experts in 'enc' live in the transformer compressor's blocks: set encoder_type='transformer' "
                "or remove 'enc' from soft_experts_in",
            )
        widths = ([self.n_embed[-1]] if "latent" in self.soft_experts_in else []) + (
            list(self.n_embed[1:]) if "enc" in self.soft_experts_in else []
        )
        for n in widths:
            require(
                self.expert_width(n) >= 1,
                f"the expert width coeff_soft_expert_mlp_dim * n // nb_soft_experts is 0 at width {n}: "
                f"raise model.coeff_soft_expert_mlp_dim or lower model.nb_soft_experts",
            )


# --------------------------------------------------------------------------------------------------
# Presets and the write-up's naming


def run_config(**changes) -> HourglassConfig:
    """The write-up's run config (notes §3-4): 768 tokens, widths (64, 128, 256), 16 groups, latent sizes (16, 2)
    ("256-32"), 16 latent blocks, 12 soft experts of which 1 shared in every 4th latent block, repeat upsampling."""
    return HourglassConfig(**changes)


def base_config(**changes) -> HourglassConfig:
    """The run config without soft experts: "a base model of 19.55M without soft experts" ("Baseline A-B")."""
    return HourglassConfig(**{"nb_soft_experts": 0, "nb_shared_experts": 0, **changes})


def vanilla_config(**changes) -> HourglassConfig:
    """The vanilla baseline "(n_layer=26, n_head=8, n_embd=256) ... following the architecture used in nanoGPT":
    no levels, 26 pre-norm blocks with QK-norm, learned absolute positions, final RMSNorm, tied head; 20.48M."""
    vanilla = dict(
        n_embed=(256,),
        latent_size=(),
        n_block_latent=26,
        nb_soft_experts=0,
        nb_shared_experts=0,
        final_norm=True,
        tie_head=True,
        global_ln1=True,
    )
    return HourglassConfig(**{**vanilla, **changes})


def seq_length_label(config: HourglassConfig) -> str:
    """The write-up's legend "Seq Length A-B": A = n_groups * latent_size[0], B = n_groups * latent_size[1]."""
    return "-".join(str(config.n_groups * k) for k in config.latent_size)


def latent_size_for(label: str, n_groups: int = 16) -> tuple[int, ...]:
    """The inverse of ``seq_length_label``: "384-64" with 16 groups -> (24, 4)."""
    lengths = [int(a) for a in label.split("-")]
    require(
        all(a % n_groups == 0 for a in lengths),
        f"every length in {label!r} must be a multiple of n_groups ({n_groups}) to give latents per group",
    )
    return tuple(a // n_groups for a in lengths)


# --------------------------------------------------------------------------------------------------
# Attention, MLPs, blocks


def _norm(c: HourglassConfig, n: int) -> nn.Module:
    """RMSNorm (eps 1e-6, weight only) or LayerNorm (eps 1e-5, bias as config.bias)."""
    return nn.RMSNorm(n, eps=1e-6) if c.normalization == "rmsnorm" else layer_norm(n, c.bias)


def attend(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    n_head: int,
    dropout_p: float,
    mask: torch.Tensor | None = None,
    mup: bool = False,
) -> torch.Tensor:
    """softmax(q k^T / sqrt(hs) + mask) v over ``n_head`` heads on (..., T, C) tensors with any leading axes;
    causal when no boolean ``mask`` (True = attend) is given; muP scales by 1 / hs instead."""
    *lead, Tq, C = q.shape
    hs = C // n_head
    q, k, v = (t.reshape(-1, t.size(-2), n_head, hs).transpose(1, 2) for t in (q, k, v))  # (N, nh, T, hs)
    y = F.scaled_dot_product_attention(
        q, k, v, attn_mask=mask, dropout_p=dropout_p, is_causal=mask is None, scale=1.0 / hs if mup else None
    )
    return y.transpose(1, 2).reshape(*lead, Tq, C)  # (..., T, C)


class Attention(nn.Module):
    """Causal multi-head self-attention along the second-to-last axis of (..., T, C): *local* when the groups sit in
    the leading axes (B, n_groups, len, C), *global* on (B, T, C). The qkv Linear maps n_in -> n_out (an up-projecting
    local block attends at its output width).

    With ``channels`` = E' (soft experts) it runs E' independent attentions over the same sequence, "s different
    linear layers that will provide me with s query, s key and s value vectors", and returns (..., E', T, C).
    """

    def __init__(self, c: HourglassConfig, n_in: int, n_out: int, channels: int | None = None):
        super().__init__()
        self.n_out, self.n_head, self.dropout, self.mup = n_out, c.n_head, c.dropout, c.mup
        self.channels = channels
        E = channels or 1
        self.same_kv = bool(channels) and c.same_kv_for_soft_experts
        if self.same_kv:
            self.q_proj = nn.Linear(n_in, E * n_out, bias=c.bias)
            self.kv_proj = nn.Linear(n_in, 2 * n_out, bias=c.bias)
        else:
            self.c_attn = nn.Linear(n_in, 3 * E * n_out, bias=c.bias)
        self.qk_norm = _norm(c, n_out) if c.qk_norm else nn.Identity()
        self.residual_proj = nn.Linear(n_out, n_out, bias=c.bias)  # shared by the channels
        self.resid_dropout = nn.Dropout(c.dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        E, C = self.channels or 1, self.n_out
        if self.same_kv:
            q = self.q_proj(x).unflatten(-1, (E, C)).movedim(-2, -3)  # (..., E', T, C)
            k, v = (t.unsqueeze(-3).expand(q.shape) for t in self.kv_proj(x).split(C, dim=-1))  # (..., E', T, C)
        else:
            qkv = self.c_attn(x).split(E * C, dim=-1)  # 3 x (..., T, E' C)
            q, k, v = (t.unflatten(-1, (E, C)).movedim(-2, -3) for t in qkv)  # (..., E', T, C)
        # QK-norm: one norm over the full width, before the split into heads
        q, k = self.qk_norm(q), self.qk_norm(k)
        y = attend(q, k, v, self.n_head, self.dropout if self.training else 0.0, mup=self.mup)  # (..., E', T, C)
        y = self.resid_dropout(self.residual_proj(y))
        return y if self.channels else y.squeeze(-3)


def _activate(h: torch.Tensor, activation: str) -> torch.Tensor:
    """GELU (exact), or SwiGLU on (value, gate) halves: SiLU(gate) * value."""
    if activation == "swiglu":
        value, gate = h.chunk(2, dim=-1)
        return F.silu(gate) * value
    return F.gelu(h)


class MLP(nn.Module):
    """Linear n -> 4n, GELU, Linear 4n -> n, dropout; with SwiGLU the inner Linear is n -> 8n."""

    def __init__(self, c: HourglassConfig, n: int):
        super().__init__()
        self.activation = c.activation
        self.c_fc = nn.Linear(n, (8 if c.activation == "swiglu" else 4) * n, bias=c.bias)
        self.residual_proj = nn.Linear(4 * n, n, bias=c.bias)
        self.dropout = nn.Dropout(c.dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.dropout(self.residual_proj(_activate(self.c_fc(x), self.activation)))


class SoftExpertMLP(nn.Module):
    """The soft experts' MLP on (..., E', T, n): a shared inner layer, per-channel expert maps, a shared d -> n map.

    "Each will go through a dedicated MLP ... the dimension of the MLPs applied to each of the s experts is a
    multiple of the dimension of a vanilla MLP divided by s"; "a variant allowing to share part of the MLPs".
    """

    def __init__(self, c: HourglassConfig, n: int):
        super().__init__()
        self.activation = c.activation
        E_, S, d = c.expert_channels, c.nb_shared_experts, c.expert_width(n)
        self.c_fc = nn.Linear(n, (8 if c.activation == "swiglu" else 4) * n, bias=c.bias)  # shared across channels
        # randn as the original; the model's init rescales them
        self.experts = nn.Parameter(torch.randn(E_, 4 * n, d))  # one 4n -> d map per channel, no bias
        self.shared_experts = nn.Parameter(torch.randn(S, 4 * n, d)) if S else None  # applied to every channel
        self.experts_proj = nn.Linear(d, n, bias=True)  # shared d -> n; the original d1c always has a bias here
        self.dropout = nn.Dropout(c.dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = _activate(self.c_fc(x), self.activation)  # (..., E', T, 4n)
        w = self.experts  # (E', 4n, d): channel e through its own map
        if self.shared_experts is not None:
            # plus the S shared maps on every channel: h W_e + sum_s h W_s = h (W_e + sum_s W_s), per sample (the
            # original pairs batch element b with other samples' h when S > 1)
            w = w + self.shared_experts.sum(dim=0)
        z = self.dropout(h @ w)  # (..., E', T, 4n) @ (E', 4n, d) -> (..., E', T, d); one dropout after the sum
        return self.dropout(self.experts_proj(z))  # (..., E', T, n)


def merge_experts(y: torch.Tensor, how: str = "softmax") -> torch.Tensor:
    """(..., E', T, C) -> (..., T, C): "a convex combination of the s different features with the coefficients coming
    from a softmax applied to them": out = sum_e softmax_e(y) * y_e, elementwise per feature, no router. "Merging via
    max and mean of the features was also considered": ``how="max"``, out = max_e y_e; ``"mean"``, out = mean_e y_e."""
    if how == "max":
        return y.amax(dim=-3)
    if how == "mean":
        return y.mean(dim=-3)
    return (y.softmax(dim=-3) * y).sum(dim=-3)


class Block(nn.Module):
    """Pre-norm block on (..., T, n_in) -> (..., T, n_out): x = R(x) + attn(ln_1 x); x = x + mlp(ln_2 x).

    R is the identity, or Linear(n_in -> n_out) + dropout for an up-projecting local block. ``ln_1=False`` is the
    original's global block (attention on the raw residual). A soft-expert block runs the same recipe once per
    channel, x_e = R(x) + attn_e(ln_1 x), y_e = x_e + mlp_e(ln_2 x_e), and merges the channels.
    """

    def __init__(self, c: HourglassConfig, n_in: int, n_out: int, ln_1: bool = True, soft_experts: bool = False):
        super().__init__()
        self.soft_experts, self.merge = soft_experts, c.expert_merge
        self.ln_1 = _norm(c, n_in) if ln_1 else None
        self.attn = Attention(c, n_in, n_out, c.expert_channels if soft_experts else None)
        self.up = nn.Sequential(nn.Linear(n_in, n_out, bias=c.bias), nn.Dropout(c.dropout)) if n_in != n_out else None
        self.ln_2 = _norm(c, n_out)
        self.mlp = SoftExpertMLP(c, n_out) if soft_experts else MLP(c, n_out)

    def streams(self, x: torch.Tensor) -> torch.Tensor:
        """The block's output before any merge: (..., T, n_out), or (..., E', T, n_out) for a soft-expert block."""
        a = self.attn(x if self.ln_1 is None else self.ln_1(x))
        r = x if self.up is None else self.up(x)
        x = (r.unsqueeze(-3) if self.soft_experts else r) + a  # soft experts: x_e = x + attn_e
        return x + self.mlp(self.ln_2(x))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.streams(x)
        return merge_experts(y, self.merge) if self.soft_experts else y


def local_global(
    x: torch.Tensor, local_blocks: nn.ModuleList, global_blocks: nn.ModuleList, interleave: bool
) -> torch.Tensor:
    """(B, n_groups, L, C) -> same: local blocks (causal within each group), then global blocks (causal over the
    flattened n_groups * L tokens); or alternating pairs with ``interleave``."""
    B, ng, L, C = x.shape
    if interleave:
        for local, glob in zip(local_blocks, global_blocks):
            x = glob(local(x).reshape(B, ng * L, C)).view(B, ng, L, C)
        return x
    for local in local_blocks:
        x = local(x)  # (B, ng, L, C)
    x = x.reshape(B, ng * L, C)
    for glob in global_blocks:
        x = glob(x)  # (B, ng * L, C)
    return x.view(B, ng, L, C)


def _level_blocks(c: HourglassConfig, n: int) -> tuple[nn.ModuleList, nn.ModuleList]:
    local = nn.ModuleList(Block(c, n, n) for _ in range(c.n_block_local_global))
    glob = nn.ModuleList(Block(c, n, n, ln_1=c.global_ln1) for _ in range(c.n_block_local_global))
    return local, glob


# --------------------------------------------------------------------------------------------------
# Compressors, encoder and decoder levels


class TransformerCompressor(nn.Module):
    """ "A Transformer encoder from which we retrieve the last K tokens after processing, as in Mirasol": one
    up-projecting local block, (n_block_enc - 1) local blocks, then the last K tokens of each group."""

    def __init__(self, c: HourglassConfig, n_in: int, n_out: int, K: int):
        super().__init__()
        self.K = K
        soft = c.nb_soft_experts > 0 and "enc" in c.soft_experts_in  # the original makes the up block a soft one
        self.blocks = nn.ModuleList(
            [Block(c, n_in, n_out, soft_experts=soft)]
            + [Block(c, n_out, n_out, soft_experts=c.soft_experts_at("enc", j)) for j in range(c.n_block_enc - 1)]
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # (B, ng, G, n_in) -> (B, ng, K, n_out)
        for block in self.blocks:
            x = block(x)
        return x[..., -self.K :, :]


class PerceiverCompressor(nn.Module):
    """ "A Perceiver encoder": the last K tokens of each group, projected, are queries of a causal cross-attention
    over the whole group; latent j (at group position G - K + j) sees the group's tokens up to its own position.
    No residual and no MLP, as the original."""

    def __init__(self, c: HourglassConfig, n_in: int, n_out: int, K: int):
        super().__init__()
        self.K, self.n_out, self.n_head, self.dropout = K, n_out, c.n_head, c.dropout
        self.original_mask = c.perceiver_original_mask
        self.q_proj = nn.Linear(n_in, n_out, bias=c.bias)
        self.kv_proj = nn.Linear(n_in, 2 * n_out, bias=c.bias)
        self.qk_norm = _norm(c, n_out) if c.qk_norm else nn.Identity()
        self.residual_proj = nn.Linear(n_out, n_out, bias=c.bias)
        self.resid_dropout = nn.Dropout(c.dropout)

    def mask(self, G: int, device) -> torch.Tensor:
        """(K, G) boolean, True = attend: aligned at the bottom right (correct), or top left (the original's)."""
        return torch.ones(self.K, G, dtype=torch.bool, device=device).tril(0 if self.original_mask else G - self.K)

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # (B, ng, G, n_in) -> (B, ng, K, n_out)
        q = self.qk_norm(self.q_proj(x[..., -self.K :, :]))  # (B, ng, K, n_out)
        k, v = self.kv_proj(x).split(self.n_out, dim=-1)  # (B, ng, G, n_out)
        p = self.dropout if self.training else 0.0
        y = attend(q, self.qk_norm(k), v, self.n_head, p, self.mask(x.size(-2), x.device))  # (B, ng, K, n_out)
        return self.resid_dropout(self.residual_proj(y))


class EncoderLevel(nn.Module):
    """Compress each group C_i -> C_i+1 and G_i -> K_i tokens, add within-group positions, then local/global blocks."""

    def __init__(self, c: HourglassConfig, i: int):
        super().__init__()
        self.interleave = c.interleave_local_global
        n_in, n_out, K = c.n_embed[i], c.n_embed[i + 1], c.latent_size[i]
        compressor = TransformerCompressor if c.encoder_type == "transformer" else PerceiverCompressor
        self.compress = compressor(c, n_in, n_out, K)
        self.enc_dropout = nn.Dropout(c.enc_dropout)
        self.local_blocks, self.global_blocks = _level_blocks(c, n_out)

    def forward(self, x: torch.Tensor, pos: nn.Embedding | None) -> torch.Tensor:
        x = self.enc_dropout(self.compress(x))  # (B, ng, G_i, n_in) -> (B, ng, K, n_out)
        # "we add positional embeddings in each encoder layer after compression"
        if pos is not None:
            x = x + pos(torch.arange(x.size(-2), device=x.device))
        return local_global(x, self.local_blocks, self.global_blocks, self.interleave)


class DecoderLevel(nn.Module):
    """Decoder level i (counted from the latent outward): C_in -> C_out, in_T -> out_T tokens per group."""

    def __init__(self, c: HourglassConfig, i: int):
        super().__init__()
        L = c.levels
        self.n_head, self.dropout, self.interleave = c.n_head, c.dropout, c.interleave_local_global
        n_in, n_out = c.n_embed[L - i], c.n_embed[L - i - 1]
        self.in_T = c.latent_size[L - 1 - i]
        out_T = c.latent_size[L - 2 - i] if i < L - 1 else c.group_len
        # group 0 has no previous group: learned tokens (randn, as the original); only the rows that are read
        self.first_group_tokens = nn.Parameter(torch.randn(out_T - self.in_T, n_in)) if out_T > self.in_T else None
        self.proj = nn.Linear(n_in, n_out, bias=c.bias)
        self.dec_dropout = nn.Dropout(c.dec_dropout)
        self.attn_upsampling = c.up_sampling == "attn"
        if self.attn_upsampling:
            self.q_proj, self.k_proj, self.v_proj = (nn.Linear(n_out, n_out, bias=c.bias) for _ in range(3))
            self.qk_norm = _norm(c, n_out) if c.qk_norm else nn.Identity()
        self.local_blocks, self.global_blocks = _level_blocks(c, n_out)

    def upsample(self, x: torch.Tensor, out_T: int) -> torch.Tensor:  # (B, ng, in_T, C) -> (B, ng, out_T, C)
        """ "A replication of the nearest previous group until the appropriate size was reached once the current
        group sequence was added": prefix = the previous group's latents tiled (their last out_T - in_T), then own."""
        B, ng, in_T, C = x.shape
        n_prefix = out_T - in_T
        if n_prefix == 0:
            return x
        first = self.first_group_tokens[-n_prefix:].expand(B, 1, n_prefix, C)  # (B, 1, n_prefix, C)
        tiled = x[:, :-1].repeat(1, 1, n_prefix // in_T + 1, 1)[:, :, -n_prefix:]  # (B, ng - 1, n_prefix, C)
        return torch.cat([torch.cat([first, tiled], dim=1), x], dim=2)

    def forward(self, x: torch.Tensor, skip: torch.Tensor, pos: nn.Embedding | None) -> torch.Tensor:
        out_T = skip.size(2)  # skip: (B, ng, out_T, C_out), the encoder-side input of this level
        x = self.dec_dropout(self.proj(self.upsample(x, out_T)))  # (B, ng, out_T, C_out)
        # "... and in each decoder layer after upsampling"
        if pos is not None:
            x = x + pos(torch.arange(out_T, device=x.device))
        if self.attn_upsampling:
            # Hourglass: "the residual plus the upsampled sequence attends over the upsampled sequence", per group
            q = self.qk_norm(self.q_proj(skip + x))
            k, v = self.qk_norm(self.k_proj(x)), self.v_proj(x)
            x = skip + x + attend(q, k, v, self.n_head, self.dropout if self.training else 0.0)  # no output projection
        return local_global(x, self.local_blocks, self.global_blocks, self.interleave)


# --------------------------------------------------------------------------------------------------
# The model


class Hourglass(LanguageModel):
    """The original's ``AnyModalMirasol``: stem, encoder levels, latent stack, decoder levels, head. With no levels
    (``vanilla_config()``) it is the write-up's nanoGPT baseline: stem, n_block_latent blocks, final norm, tied head."""

    def __init__(self, config: HourglassConfig):
        super().__init__()
        self.config = c = config
        L, n0, nL = c.levels, c.n_embed[0], c.n_embed[-1]
        self.wte = nn.Embedding(c.vocab_size, n0)
        self.wpe = nn.Embedding(c.context_size, n0) if c.pos_embd == "simple" else None
        self.drop = nn.Dropout(c.dropout)
        # one within-group position table per level, "shared between the encoder and decoder"
        self.level_pos = (
            nn.ModuleList(nn.Embedding(c.latent_size[i], c.n_embed[i + 1]) for i in range(L))
            if c.use_pos_embd_in_enc_dec
            else None
        )
        self.encoders = nn.ModuleList(EncoderLevel(c, i) for i in range(L))
        self.latent = nn.ModuleList(
            Block(c, nL, nL, ln_1=c.global_ln1, soft_experts=c.soft_experts_at("latent", j))
            for j in range(c.n_block_latent)
        )
        if c.dense_former:
            # DenseFormer: row j weighs (latent input, block outputs 0..j); initialised to the plain residual stream
            n = c.n_block_latent
            self.dense_former_weights = nn.Parameter(torch.cat([torch.zeros(n, 1), torch.eye(n)], dim=1))  # (n, n + 1)
        self.latent_head = nn.Linear(nL, nL, bias=True) if c.latent_loss else None
        self.decoders = nn.ModuleList(DecoderLevel(c, i) for i in range(L))
        self.skip_lerp = nn.Parameter(torch.randn(L)) if c.learnable_skip else None
        self.ln_f = _norm(c, n0) if c.final_norm else None
        self.lm_head = nn.Linear(n0, c.vocab_size, bias=c.bias)
        if c.tie_head:
            self.lm_head.weight = self.wte.weight
        self._init_weights()

    def _init_weights(self) -> None:
        """'nanogpt': N(0, 0.02) for Linear and Embedding weights, zero biases; attention and MLP output projections
        and the expert maps N(0, 0.02 / sqrt(2 n_resid)); the experts' d -> n map keeps 0.02. muP (the vanilla
        baseline's): every Linear N(0, 0.02 / sqrt(n)), the MLP's output map (fan-in 4n) N(0, 0.02 / sqrt(4n)), the
        token embedding (tied to the head) zero, the position table N(0, 0.02)."""
        c = self.config
        init_gpt_weights(self, c.n_resid)  # scales every *.residual_proj.weight by n_resid
        for name, p in self.named_parameters():
            if name.endswith("experts"):
                nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * c.n_resid))
        if c.mup:
            n = c.n_embed[0]
            for module in self.modules():
                if isinstance(module, nn.Linear):
                    nn.init.normal_(module.weight, mean=0.0, std=0.02 / math.sqrt(n))
            for block in self.latent:
                nn.init.normal_(block.mlp.residual_proj.weight, mean=0.0, std=0.02 / math.sqrt(4 * n))
            nn.init.zeros_(self.wte.weight)

    # ---- counting

    def positional_parameters(self) -> list[nn.Parameter]:
        tables = [self.wpe] if self.wpe is not None else []
        return [t.weight for t in tables + list(self.level_pos or [])]

    def original_unused_params(self) -> dict[str, int]:
        """Parameters the original builds but its forward never reads, by name (none with no levels: the vanilla
        baseline uses all of its own). ``num_params()`` adds them, to count as the write-up counts."""
        c = self.config
        if not c.levels:
            return {}
        L, norm = c.levels, (2 if c.normalization == "layernorm" and c.bias else 1)
        unused = {"first_group_tokens": 0}
        for i in range(L):
            in_T, n_in = c.latent_size[L - 1 - i], c.n_embed[L - i]
            out_T = c.latent_size[L - 2 - i] if i < L - 1 else c.group_len  # what this level reads and builds
            # the original allocates out_T - in_T rows (in_T rows when that is 0), with out_T = block_size at the last level
            original_T = c.latent_size[L - 2 - i] if i < L - 1 else c.context_size
            unused["first_group_tokens"] += (((original_T - in_T) or in_T) - (out_T - in_T)) * n_in
        if not c.global_ln1:  # the original builds ln_1 in every global block and skips it
            widths = [*c.n_embed[1:], *c.n_embed[:-1]]  # encoder and decoder levels
            unused["global_ln_1"] = norm * (c.n_block_local_global * sum(widths) + c.n_block_latent * c.n_embed[-1])
        if not c.final_norm:
            unused["head_ln"] = norm * c.n_embed[0]
        return {k: v for k, v in unused.items() if v}

    def num_params(self, exclude_positional: bool = True, as_original: bool = True) -> int:
        """As the write-up counts: position tables excluded and, with ``as_original``, the original's built-but-unused
        parameters included (``original_unused_params``). ``as_original=False``: this module's parameters."""
        extra = sum(self.original_unused_params().values()) if as_original else 0
        return super().num_params(exclude_positional) + extra

    # ---- forward

    def padded_length(self, T: int) -> int:
        c = self.config
        if not c.levels:
            return T
        return c.context_size if c.pad_inputs_to == "context_size" else -(-T // c.n_groups) * c.n_groups

    def _pos(self, k: int) -> nn.Embedding | None:
        """Level k's within-group position table; k = 0 is the stem's table (read by the last decoder)."""
        if not self.config.use_pos_embd_in_enc_dec:
            return None
        return self.wpe if k == 0 else self.level_pos[k - 1]

    def embed(self, idx: torch.Tensor) -> torch.Tensor:
        """S_0 = dropout(token + position embeddings): (B, T) -> (B, T, C_0)."""
        B, T = idx.shape
        tok = self.wte(idx)  # (B, T, C_0)
        if self.config.noisy_embd_alpha and self.training:
            tok = tok + self.config.noisy_embd_alpha / math.sqrt(T * tok.size(-1)) * (2 * torch.rand_like(tok) - 1)
        if self.wpe is not None:
            tok = tok + self.wpe(torch.arange(T, device=idx.device))
        return self.drop(tok)

    def latent_stack(self, x: torch.Tensor) -> torch.Tensor:  # (B, N, C_L) -> (B, N, C_L)
        buffer = [x]  # DenseFormer: the latent input and every raw block output
        for j, block in enumerate(self.latent):
            if self.config.gradient_checkpointing and self.training:
                x = checkpoint(block, x, use_reentrant=False)
            else:
                x = block(x)
            if self.config.dense_former:
                buffer.append(x)
                # "after block i, a learned weighted average over the embedding and all previous block outputs"
                x = sum(w * b for w, b in zip(self.dense_former_weights[j], buffer))
        return x

    def hourglass(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor | None]:
        """(B, T, C_0) -> (B, T, C_0) through encoder levels, latent stack and decoder levels; and the latent loss."""
        c = self.config
        B, T, n0 = x.shape
        x = x.view(B, c.n_groups, T // c.n_groups, n0) if c.levels else x  # (B, ng, G, C_0)
        skips = []
        for i, encoder in enumerate(self.encoders):
            skips.append(x)  # S_i
            x = encoder(x, self._pos(i + 1))  # (B, ng, K_i, C_i+1)
        grouped = x.shape
        x = self.latent_stack(x.reshape(B, -1, c.n_embed[-1]))  # (B, ng * K_L-1, C_L)
        latent_loss = None
        if c.latent_loss:
            # Mirasol: a head predicts the next latent; 1 - cos(pred_t, x_t+1); the prediction replaces x
            target, x = x[:, 1:], self.latent_head(x)
            latent_loss = 1.0 - F.cosine_similarity(x[:, :-1], target, dim=-1).mean()
        x = x.view(grouped)
        for i, decoder in enumerate(self.decoders):
            skip = skips.pop()
            x = self.add_skip(i, decoder(x, skip, self._pos(c.levels - 1 - i)), skip)  # (B, ng, K or G, C)
        return x.reshape(B, T, n0), latent_loss

    def add_skip(self, i: int, x: torch.Tensor, skip: torch.Tensor) -> torch.Tensor:
        c = self.config
        if c.up_sampling == "attn" and not c.attn_skip_twice:
            return x  # Hourglass: the skip went in once, inside the upsampler
        if self.skip_lerp is not None:
            r = self.skip_lerp[i]
            return r * skip + (1 - r) * x
        return x + skip

    def forward(self, idx: torch.Tensor, targets: torch.Tensor | None = None) -> ModelOutput:
        c = self.config
        B, T = idx.shape
        if T > c.context_size:
            raise ValueError(f"input length {T} exceeds context_size {c.context_size}")
        Tp = self.padded_length(T)
        if c.levels and Tp // c.n_groups < c.latent_size[0]:
            raise ValueError(
                f"input length {T} gives groups of {Tp // c.n_groups} tokens, fewer than latent_size[0] = "
                f"{c.latent_size[0]}: pass at least {c.n_groups * c.latent_size[0]} tokens or use "
                f"pad_inputs_to='context_size'"
            )
        # inputs padded on the right (token 0): causality keeps the padding out of every real position
        x, latent_loss = self.hourglass(self.embed(F.pad(idx, (0, Tp - T))))
        x = x[:, :T]  # (B, T, C_0)
        logits = self.lm_head(x if self.ln_f is None else self.ln_f(x))  # (B, T, V)
        if c.mup:
            logits = logits / c.n_embed[0]  # muP: the output layer's multiplier 1 / width
        loss, aux = None, {}
        if latent_loss is not None:
            aux["latent"] = latent_loss
        if targets is not None:
            loss = cross_entropy(logits, targets)
            if latent_loss is not None and self.training:
                loss = (1.0 - c.latent_loss_coeff) * loss + c.latent_loss_coeff * latent_loss
        return ModelOutput(logits, loss, aux)

    def group_position_losses(self, idx: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        """Per-token cross-entropy laid out as the model groups the (padded) input: (B, n_groups, group length);
        NaN where there is no target. ``nanmean(dim=(0, 1))`` is the loss by offset within the group."""
        length = self.padded_length(idx.size(1)) if self.config.levels else None
        return loss_by_group_position(self(idx).logits, targets, self.config.n_groups, length)


def loss_by_group_position(
    logits: torch.Tensor, targets: torch.Tensor, n_groups: int, length: int | None = None
) -> torch.Tensor:
    """(B, T, V), (B, T) -> (B, n_groups, length / n_groups): per-token cross-entropy by (group, offset in group),
    for any model's logits (the vanilla baseline's too). ``length`` is the padded length the groups split (default:
    T rounded up to a multiple of n_groups); ignored targets (-100) and the padding are NaN. In repeat mode the
    first ``blind_spot`` offsets of each group see their own group only through their own embedding."""
    B, T = targets.shape
    length = -(-T // n_groups) * n_groups if length is None else length
    if length % n_groups or length < T:
        raise ValueError(f"length {length} must be a multiple of n_groups ({n_groups}) and at least T ({T})")
    losses = F.cross_entropy(logits.float().transpose(1, 2), targets, ignore_index=-100, reduction="none")  # (B, T)
    losses = losses.masked_fill(targets == -100, float("nan"))
    return F.pad(losses, (0, length - T), value=float("nan")).view(B, n_groups, length // n_groups)


__all__ = [
    "Hourglass",
    "HourglassConfig",
    "base_config",
    "latent_size_for",
    "loss_by_group_position",
    "merge_experts",
    "run_config",
    "seq_length_label",
    "vanilla_config",
]
