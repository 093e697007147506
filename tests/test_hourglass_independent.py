"""The hourglass model against an independent re-implementation, logit for logit, given the same weights.

The reference below (``Ref*``) was written from the reference notes ``../shared/reference/efficient-transformer.md``
(sections 2-4, 9 and "Verified by instantiating the original code"), before reading the package's model; it is a
literal forward pass of the original's module structure in plain torch, with its own modules and parameter names.
Where the notes are silent it follows the original code at commit cfb31746 (same model code as d1c302b2, notes §1):
which SwiGLU half is gated, the lm_head bias, one scalar skip lerp per level, the QK-norm following
``normalization``, the Perceiver compressor's layers, and which compressor blocks get soft experts with "enc".
Only the parameter names and the config fields were then taken from ``lmcompanion.models.hourglass``: every package
parameter is randomised, copied into the reference by an explicit name map that must cover both sides, and the
two models' logits are compared in eval mode (dropout off) in float64 on random tokens, for one tiny
configuration per knob. Quirks of the original run as the package's config selects them: global blocks without
ln_1 (``global_ln1=False``), the skip added twice in attention upsampling (``attn_skip_twice``), the Perceiver's
top-left mask (``perceiver_original_mask``); the package's default head is the original's (no final norm), and
``final_norm=True`` applies the norm the original builds. The shared experts are
applied per sample (notes §9.2), not with the original's batch mixing. CPU only, a few seconds.
"""

import math
import re

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from lmcompanion.models.hourglass import Hourglass, HourglassConfig, vanilla_config

# ------------------------------------------------------------------------------------------------
# The reference, from the notes


class RefNorm(nn.Module):
    """§2: RMSNorm eps 1e-6 with weight only; ``normalization='layernorm'``: LayerNorm eps 1e-5, bias if ``bias``."""

    def __init__(self, n, kind, bias):
        super().__init__()
        self.kind = kind
        self.weight = nn.Parameter(torch.ones(n))
        self.bias = nn.Parameter(torch.zeros(n)) if kind == "layernorm" and bias else None

    def forward(self, x):
        if self.kind == "rmsnorm":
            return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * self.weight
        mu = x.mean(-1, keepdim=True)
        y = (x - mu) / torch.sqrt((x - mu).pow(2).mean(-1, keepdim=True) + 1e-5) * self.weight
        return y if self.bias is None else y + self.bias


def causal(q, k, v, n_head, top_left=False, mup=False):
    """Multi-head softmax(q k^T / sqrt(hd)) v on (..., T, C), written out. A query i of Tq attends key j of Tk when
    j <= i + Tk - Tq (each query sits at the end of the keys), or j <= i with ``top_left`` (§Verified, Perceiver).
    ``mup``: the original vanilla's muP scale, q k^T / hd."""
    *lead, Tq, C = q.shape
    Tk, hd = k.shape[-2], C // n_head
    q, k, v = (t.reshape(*t.shape[:-1], n_head, hd).transpose(-2, -3) for t in (q, k, v))  # (..., nh, T, hd)
    s = q @ k.transpose(-1, -2) / (hd if mup else math.sqrt(hd))  # (..., nh, Tq, Tk)
    shift = 0 if top_left else Tk - Tq
    allowed = torch.arange(Tk)[None, :] <= torch.arange(Tq)[:, None] + shift
    y = s.masked_fill(~allowed, float("-inf")).softmax(-1) @ v  # (..., nh, Tq, hd)
    return y.transpose(-2, -3).reshape(*lead, Tq, C)


def activation(h, kind):
    """§2 MLP: GELU; or SwiGLU on an 8n inner layer: first half the value, second the SiLU gate (original)."""
    if kind == "swiglu":
        value, gate = h.chunk(2, -1)
        return F.silu(gate) * value
    return F.gelu(h)


class RefBlock(nn.Module):
    """§2 BlockCausalSA, pre-norm, on (..., T, n_in) -> (..., T, n_out); local when the groups are leading axes.

    x = R(x) + attn(ln_1 x), x = x + mlp(ln_2 x). R is a Linear n_in -> n_out when the widths differ (the qkv Linear
    then maps n_in -> n_out too). ``ln_1=False``: the original's global block, attention on the raw residual.
    Soft experts (§2): E' = E - S attentions over the same input (fused qkv n -> 3 n E', or q n -> E' n with one
    shared k, v), a shared output projection, streams x_e = R(x) + attn_e; a shared inner MLP layer, a per-channel
    4n -> d map plus the sum of the S shared maps (per sample, §9.2), a shared d -> n map with bias; then
    y_e = x_e + that, merged as sum_e softmax_e(y) y_e, elementwise over the channel axis (§9.3).
    """

    def __init__(self, c, n_in, n_out, ln_1=True, soft=False):
        super().__init__()
        self.c, self.soft = c, soft
        self.E = c.nb_soft_experts - c.nb_shared_experts if soft else 1
        self.same_kv = soft and c.same_kv_for_soft_experts
        self.ln_1 = RefNorm(n_in, c.normalization, c.bias) if ln_1 else None
        if self.same_kv:
            self.q = nn.Linear(n_in, self.E * n_out, bias=c.bias)
            self.kv = nn.Linear(n_in, 2 * n_out, bias=c.bias)
        else:
            self.qkv = nn.Linear(n_in, 3 * self.E * n_out, bias=c.bias)
        self.qk_norm = RefNorm(n_out, c.normalization, c.bias) if c.qk_norm else None
        self.attn_out = nn.Linear(n_out, n_out, bias=c.bias)
        self.res_proj = nn.Linear(n_in, n_out, bias=c.bias) if n_in != n_out else None
        self.ln_2 = RefNorm(n_out, c.normalization, c.bias)
        self.fc = nn.Linear(n_out, (8 if c.activation == "swiglu" else 4) * n_out, bias=c.bias)
        if soft:
            d = c.coeff_soft_expert_mlp_dim * n_out // c.nb_soft_experts  # §2: d = coeff n // E (E with the shared)
            self.expert = nn.Parameter(torch.zeros(self.E, 4 * n_out, d))
            self.shared = nn.Parameter(torch.zeros(c.nb_shared_experts, 4 * n_out, d)) if c.nb_shared_experts else None
            self.expert_out = nn.Linear(d, n_out, bias=True)  # bias=True whatever config.bias (§2, d1c)
        else:
            self.mlp_out = nn.Linear(4 * n_out, n_out, bias=c.bias)

    def attention(self, h):  # (..., T, n_in) -> (E', ..., T, n_out), channel axis first
        E = self.E
        if self.same_kv:
            q = torch.stack(self.q(h).chunk(E, -1))  # (E', ..., T, n)
            k, v = (t.expand(E, *t.shape) for t in self.kv(h).chunk(2, -1))
        else:
            q, k, v = (torch.stack(t.chunk(E, -1)) for t in self.qkv(h).chunk(3, -1))  # 3 x (E', ..., T, n)
        if self.qk_norm is not None:  # one norm over the full width, on q and on k, before the head split
            q, k = self.qk_norm(q), self.qk_norm(k)
        return self.attn_out(causal(q, k, v, self.c.n_head, mup=self.c.mup))

    def forward(self, x):
        a = self.attention(x if self.ln_1 is None else self.ln_1(x))
        r = x if self.res_proj is None else self.res_proj(x)
        if not self.soft:
            x = r + a[0]
            return x + self.mlp_out(activation(self.fc(self.ln_2(x)), self.c.activation))
        xe = r + a  # (E', ..., T, n): x broadcast over the channels
        h = activation(self.fc(self.ln_2(xe)), self.c.activation)  # shared inner layer
        m = torch.einsum("e...f,efd->e...d", h, self.expert)  # channel e through its own map
        if self.shared is not None:
            m = m + sum(torch.einsum("e...f,fd->e...d", h, w) for w in self.shared)  # every shared map, every channel
        y = xe + self.expert_out(m)
        if self.c.expert_merge == "max":  # the README: "merging via max and mean of the features was also considered"
            return y.max(0).values
        if self.c.expert_merge == "mean":
            return y.mean(0)
        return (y.softmax(0) * y).sum(0)


class RefPerceiver(nn.Module):
    """§2/§Verified: the last K tokens of a group, projected, query the whole group; QK-norm; output projection.
    Layers as the original's PerceiverEncoder (no pre-norm, residual or MLP)."""

    def __init__(self, c, n_in, n_out, K):
        super().__init__()
        self.c, self.K = c, K
        self.q = nn.Linear(n_in, n_out, bias=c.bias)
        self.kv = nn.Linear(n_in, 2 * n_out, bias=c.bias)
        self.qk_norm = RefNorm(n_out, c.normalization, c.bias) if c.qk_norm else None
        self.out = nn.Linear(n_out, n_out, bias=c.bias)

    def forward(self, x):  # (B, ng, G, n_in) -> (B, ng, K, n_out)
        q, (k, v) = self.q(x[:, :, -self.K :]), self.kv(x).chunk(2, -1)
        if self.qk_norm is not None:
            q, k = self.qk_norm(q), self.qk_norm(k)
        return self.out(causal(q, k, v, self.c.n_head, top_left=self.c.perceiver_original_mask))


class RefTransformerCompressor(nn.Module):
    """§2 TransformerEncoder: one up-projecting local block, n_block_enc - 1 local blocks, keep the last K tokens.
    With soft experts in "enc": the up block, and block j after it when (j + 1) % every == 0 (original)."""

    def __init__(self, c, n_in, n_out, K):
        super().__init__()
        self.K = K
        enc = c.nb_soft_experts > 0 and "enc" in c.soft_experts_in
        self.blocks = nn.ModuleList(
            [RefBlock(c, n_in, n_out, soft=enc)]
            + [
                RefBlock(c, n_out, n_out, soft=enc and (j + 1) % c.apply_soft_experts_every == 0)
                for j in range(c.n_block_enc - 1)
            ]
        )

    def forward(self, x):
        for b in self.blocks:
            x = b(x)  # local: causal inside each group
        return x[:, :, -self.K :]


class RefModel(nn.Module):
    """§2-§3: stem, encoder levels, latent stack, decoder levels, head."""

    def __init__(self, c):
        super().__init__()
        self.c = c
        n, K, L = c.n_embed, c.latent_size, len(c.latent_size)
        self.wte = nn.Embedding(c.vocab_size, n[0])
        self.wpe = nn.Embedding(c.context_size, n[0]) if c.pos_embd == "simple" else None
        self.enc = nn.ModuleList()
        for i in range(L):
            lvl = nn.Module()
            Comp = RefTransformerCompressor if c.encoder_type == "transformer" else RefPerceiver
            lvl.comp = Comp(c, n[i], n[i + 1], K[i])
            lvl.pos = nn.Embedding(K[i], n[i + 1]) if c.use_pos_embd_in_enc_dec else None
            lvl.local = nn.ModuleList(RefBlock(c, n[i + 1], n[i + 1]) for _ in range(c.n_block_local_global))
            lvl.glob = nn.ModuleList(
                RefBlock(c, n[i + 1], n[i + 1], ln_1=c.global_ln1) for _ in range(c.n_block_local_global)
            )
            self.enc.append(lvl)
        # §2 latent: block j has soft experts when (j + 1) % every == 0
        soft = c.nb_soft_experts > 0 and "latent" in c.soft_experts_in
        self.latent = nn.ModuleList(
            RefBlock(c, n[-1], n[-1], ln_1=c.global_ln1, soft=soft and (j + 1) % c.apply_soft_experts_every == 0)
            for j in range(c.n_block_latent)
        )
        self.alpha = nn.Parameter(torch.zeros(c.n_block_latent, c.n_block_latent + 1)) if c.dense_former else None
        self.latent_head = nn.Linear(n[-1], n[-1], bias=True) if c.latent_loss else None
        self.dec = nn.ModuleList()
        for i in range(L):
            a, b = n[L - i], n[L - i - 1]
            in_T = K[L - 1 - i]
            out_T = K[L - 2 - i] if i < L - 1 else c.context_size // c.n_groups
            lvl = nn.Module()
            # §2: group 0's prefix is learned tokens (the notes: only the last out_T - in_T rows are ever read)
            lvl.first = nn.Parameter(torch.zeros(out_T - in_T, a)) if out_T > in_T else None
            lvl.lin = nn.Linear(a, b, bias=c.bias)
            if c.up_sampling == "attn":
                # separate q/k/v Linears + QK-norm; no output projection (the notes' attn-minus-repeat count,
                # 27,484,864 - 27,423,232 = 61,632, is exactly q, k, v and one norm per level)
                lvl.q, lvl.k, lvl.v = (nn.Linear(b, b, bias=c.bias) for _ in range(3))
                lvl.qk_norm = RefNorm(b, c.normalization, c.bias) if c.qk_norm else None
            lvl.local = nn.ModuleList(RefBlock(c, b, b) for _ in range(c.n_block_local_global))
            lvl.glob = nn.ModuleList(RefBlock(c, b, b, ln_1=c.global_ln1) for _ in range(c.n_block_local_global))
            self.dec.append(lvl)
        self.lerp = nn.Parameter(torch.zeros(L)) if c.learnable_skip else None  # one r per level (original)
        self.ln_f = RefNorm(n[0], c.normalization, c.bias) if c.final_norm else None
        self.lm_head = None if c.tie_head else nn.Linear(n[0], c.vocab_size, bias=c.bias)

    def local_global(self, x, lvl):
        """§2: local blocks (inside each group), then as many global blocks over the flattened sequence; or
        alternating local/global pairs with ``interleave_local_global``."""
        B, ng, T, C = x.shape
        if self.c.interleave_local_global:
            for loc, glob in zip(lvl.local, lvl.glob):
                x = glob(loc(x).reshape(B, ng * T, C)).reshape(B, ng, T, C)
            return x
        for blk in lvl.local:
            x = blk(x)
        x = x.reshape(B, ng * T, C)
        for blk in lvl.glob:
            x = blk(x)
        return x.reshape(B, ng, T, C)

    def forward(self, idx):
        """(B, T) -> logits (B, T, V) and the latent loss (or None); T is the already padded length."""
        c, L = self.c, len(self.c.latent_size)
        B, T = idx.shape
        # §2 stem: S0 = wte + absolute positions
        x = self.wte(idx)
        if self.wpe is not None:
            x = x + self.wpe.weight[:T]
        skips = []
        # §2 encoder level i: compress each group, + within-group positions, local then global blocks
        for lvl in self.enc:
            skips.append(x.reshape(B, c.n_groups, -1, x.shape[-1]))  # S_i, in groups
            z = lvl.comp(x.reshape(B, c.n_groups, -1, x.shape[-1]))  # (B, ng, K, C')
            if lvl.pos is not None:
                z = z + lvl.pos.weight
            x = self.local_global(z, lvl).reshape(B, -1, z.shape[-1])
        # §2 latent stack, DenseFormer: input to the next block = sum_m alpha[j, m] * buffer[m]
        buf = [x]
        for j, blk in enumerate(self.latent):
            x = blk(x)
            if self.alpha is not None:
                buf.append(x)
                x = sum(self.alpha[j, m] * buf[m] for m in range(j + 2))
        latent_loss = None
        if self.latent_head is not None:  # §2: a Linear head replaces x; 1 - cos(pred_t, x_t+1)
            pred = self.latent_head(x)
            latent_loss = 1 - F.cosine_similarity(pred[:, :-1], x[:, 1:], dim=-1).mean()
            x = pred
        # §2 decoder level i
        for i, lvl in enumerate(self.dec):
            skip = skips.pop()  # (B, ng, out_T, C_out)
            out_T, Cin = skip.shape[2], x.shape[-1]
            x = x.reshape(B, c.n_groups, -1, Cin)  # (B, ng, in_T, C_in)
            P = out_T - x.shape[2]
            if P:
                # group g > 0: the previous group's latents tiled, their last P; group 0: the learned tokens
                tiled = torch.cat([x] * (P // x.shape[2] + 1), 2)[:, :, -P:]
                first = lvl.first[-P:].expand(B, 1, P, Cin)
                x = torch.cat([torch.cat([first, tiled[:, :-1]], 1), x], 2)  # (B, ng, out_T, C_in)
            x = lvl.lin(x)
            # "the same within-group position table the encoder used"; the stem's table at the last level (§3)
            table = (self.enc[L - 2 - i].pos if i < L - 1 else self.wpe) if c.use_pos_embd_in_enc_dec else None
            if table is not None:
                x = x + table.weight[:out_T]
            if c.up_sampling == "attn":  # Hourglass: q from skip + x, k and v from x, causal within the group
                q, k, v = lvl.q(skip + x), lvl.k(x), lvl.v(x)
                if lvl.qk_norm is not None:
                    q, k = lvl.qk_norm(q), lvl.qk_norm(k)
                x = skip + x + causal(q, k, v, c.n_head)
            x = self.local_global(x, lvl)
            # after the level: + skip (repeat; attn only as the original, twice), or the learnable lerp
            if c.up_sampling == "repeat" or c.attn_skip_twice:
                x = self.lerp[i] * skip + (1 - self.lerp[i]) * x if self.lerp is not None else x + skip
        x = x.reshape(B, T, -1)
        if self.ln_f is not None:
            x = self.ln_f(x)
        logits = x @ self.wte.weight.T if self.lm_head is None else self.lm_head(x)  # tied only for vanilla
        if c.mup:  # the original vanilla's muP: logits divided by the width
            logits = logits / c.n_embed[0]
        return logits, latent_loss


# ------------------------------------------------------------------------------------------------
# Name map: reference parameter -> package parameter

_BLOCK = {
    "ln_1": "ln_1",
    "qkv": "attn.c_attn",
    "q": "attn.q_proj",
    "kv": "attn.kv_proj",
    "qk_norm": "attn.qk_norm",
    "attn_out": "attn.residual_proj",
    "res_proj": "up.0",
    "ln_2": "ln_2",
    "fc": "mlp.c_fc",
    "mlp_out": "mlp.residual_proj",
    "expert": "mlp.experts",
    "shared": "mlp.shared_experts",
    "expert_out": "mlp.experts_proj",
}
_PERCEIVER = {"q": "q_proj", "kv": "kv_proj", "qk_norm": "qk_norm", "out": "residual_proj"}
_DECODER = {
    "first": "first_group_tokens",
    "lin": "proj",
    "q": "q_proj",
    "k": "k_proj",
    "v": "v_proj",
    "qk_norm": "qk_norm",
}
_TOP = {
    "wte": "wte",
    "wpe": "wpe",
    "alpha": "dense_former_weights",
    "latent_head": "latent_head",
    "lerp": "skip_lerp",
    "ln_f": "ln_f",
    "lm_head": "lm_head",
}


def package_name(ref_name: str) -> str:
    def block(prefix, rest):
        head, _, tail = rest.partition(".")
        return f"{prefix}.{_BLOCK[head]}" + (f".{tail}" if tail else "")

    rules = [
        (r"enc\.(\d+)\.comp\.blocks\.(\d+)\.(.+)", lambda i, j, r: block(f"encoders.{i}.compress.blocks.{j}", r)),
        (r"enc\.(\d+)\.comp\.(\w+)\.(\w+)", lambda i, m, p: f"encoders.{i}.compress.{_PERCEIVER[m]}.{p}"),
        (r"enc\.(\d+)\.pos\.weight", lambda i: f"level_pos.{i}.weight"),
        (
            r"(enc|dec)\.(\d+)\.local\.(\d+)\.(.+)",
            lambda e, i, j, r: block(f"{'encoders' if e == 'enc' else 'decoders'}.{i}.local_blocks.{j}", r),
        ),
        (
            r"(enc|dec)\.(\d+)\.glob\.(\d+)\.(.+)",
            lambda e, i, j, r: block(f"{'encoders' if e == 'enc' else 'decoders'}.{i}.global_blocks.{j}", r),
        ),
        (r"latent\.(\d+)\.(.+)", lambda j, r: block(f"latent.{j}", r)),
        (r"dec\.(\d+)\.(\w+)(\.\w+)?", lambda i, m, p: f"decoders.{i}.{_DECODER[m]}{p or ''}"),
        (r"(\w+)(\.\w+)?", lambda m, p: f"{_TOP[m]}{p or ''}"),
    ]
    for pattern, build in rules:
        match = re.fullmatch(pattern, ref_name)
        if match:
            return build(*match.groups())
    raise KeyError(ref_name)


def randomise_(model: nn.Module, seed: int) -> None:
    """Move every package parameter off its init (unit norms, zero biases, identity DenseFormer, ...), so that every
    weight matters to the logits."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.2 * torch.randn(p.shape, generator=g, dtype=p.dtype))


def reference_from(model: Hourglass) -> RefModel:
    """A RefModel holding a copy of ``model``'s weights; the map must cover both models' parameters exactly."""
    ref = RefModel(model.config).double()
    pkg = dict(model.named_parameters())
    mapped = {name: package_name(name) for name, _ in ref.named_parameters()}
    assert sorted(mapped.values()) == sorted(pkg), set(mapped.values()) ^ set(pkg)
    with torch.no_grad():
        for name, p in ref.named_parameters():
            p.copy_(pkg[mapped[name]])
    return ref


# ------------------------------------------------------------------------------------------------
# Configurations

# 32 tokens in 4 groups of 8; level 0 keeps 3 latents per group, level 1 keeps 2: the last decoder tiles 3 latents
# into a 5-token prefix (not a whole number of copies); widths differ at every level, 2 heads; dropout left on in the
# config so that eval mode has to turn it off
BASE = dict(
    vocab_size=13,
    context_size=32,
    n_embed=(16, 24, 32),
    n_head=2,
    dropout=0.1,
    enc_dropout=0.1,
    dec_dropout=0.1,
    n_groups=4,
    latent_size=(3, 2),
    n_block_enc=2,
    n_block_local_global=2,
    n_block_latent=3,
    nb_soft_experts=0,
    nb_shared_experts=0,
)
EXPERTS = dict(nb_soft_experts=4, nb_shared_experts=1, apply_soft_experts_every=2)  # latent block 1: E' = 3, d = 8
ATTN = dict(up_sampling="attn")

CASES = {
    "repeat": {},
    "attn": ATTN,
    "repeat_experts": EXPERTS,
    "attn_experts": {**ATTN, **EXPERTS},
    "experts_every_block_two_shared": dict(nb_soft_experts=5, nb_shared_experts=2, apply_soft_experts_every=1),
    "experts_no_shared": dict(nb_soft_experts=3, nb_shared_experts=0, apply_soft_experts_every=1),
    "experts_same_kv": {**EXPERTS, "same_kv_for_soft_experts": True},
    "experts_coeff_3": {**EXPERTS, "coeff_soft_expert_mlp_dim": 3},
    "experts_in_encoder": dict(
        nb_soft_experts=3, nb_shared_experts=1, apply_soft_experts_every=1, soft_experts_in=("latent", "enc")
    ),
    "dense_former_repeat": dict(dense_former=True),
    "dense_former_attn_experts": {**ATTN, **EXPERTS, "dense_former": True},
    "perceiver": dict(encoder_type="perceiver"),
    "perceiver_original_mask": dict(encoder_type="perceiver", perceiver_original_mask=True),
    "perceiver_attn_experts": {**ATTN, **EXPERTS, "encoder_type": "perceiver"},
    "no_qk_norm": dict(qk_norm=False),
    "layernorm": dict(normalization="layernorm"),
    "layernorm_bias": {**ATTN, **EXPERTS, "normalization": "layernorm", "bias": True},
    "bias": {**EXPERTS, "bias": True},
    "swiglu": {**EXPERTS, "activation": "swiglu"},
    "swiglu_attn_perceiver": dict(activation="swiglu", up_sampling="attn", encoder_type="perceiver"),
    "interleave_local_global": {**ATTN, "interleave_local_global": True},
    "one_block_each": dict(n_block_enc=1, n_block_local_global=1, n_block_latent=1),
    "three_levels": dict(n_embed=(16, 16, 24, 32), latent_size=(4, 3, 2)),
    "no_positions": dict(pos_embd="no", use_pos_embd_in_enc_dec=False),
    "no_level_positions": {**ATTN, "use_pos_embd_in_enc_dec": False},
    "merge_max": {**EXPERTS, "expert_merge": "max"},
    "merge_mean": {**ATTN, **EXPERTS, "expert_merge": "mean"},
    "no_stem_positions": {**ATTN, "pos_embd": "no"},
    "latent_loss": {**EXPERTS, "latent_loss": "cos_similarity"},
    "final_norm": {**ATTN, "final_norm": True},  # head_ln applied (the default, as the original, does not)
    "final_norm_layernorm_bias": {**EXPERTS, "final_norm": True, "normalization": "layernorm", "bias": True},
    # the original's quirks, as the package's switches select them
    "quirk_global_no_ln1": {**EXPERTS, "global_ln1": False},
    "quirk_attn_skip_twice": {**ATTN, "attn_skip_twice": True},
    "quirk_learnable_skip_repeat": dict(learnable_skip=True),
    "quirk_learnable_skip_attn_twice": {**ATTN, "attn_skip_twice": True, "learnable_skip": True},
    "quirks_all_original": {
        **ATTN,
        **EXPERTS,
        "global_ln1": False,
        "attn_skip_twice": True,
        "final_norm": False,
        "dense_former": True,
    },
}


def build(changes: dict, seed: int = 0) -> tuple[Hourglass, RefModel]:
    torch.manual_seed(seed)
    model = Hourglass(HourglassConfig(**{**BASE, **changes})).double().eval()
    randomise_(model, seed + 1)
    return model, reference_from(model).eval()


def tokens(config: HourglassConfig, T: int, seed: int = 2) -> torch.Tensor:
    return torch.randint(config.vocab_size, (3, T), generator=torch.Generator().manual_seed(seed))


# ------------------------------------------------------------------------------------------------
# Tests


@pytest.mark.parametrize("name", list(CASES))
def test_logits_match_reference(name):
    model, ref = build(CASES[name])
    idx = tokens(model.config, model.config.context_size)
    with torch.no_grad():
        out = model(idx)
        logits, latent_loss = ref(idx)
    torch.testing.assert_close(out.logits, logits, rtol=1e-9, atol=1e-9)
    if latent_loss is not None:
        torch.testing.assert_close(out.aux["latent"], latent_loss, rtol=1e-9, atol=1e-9)
    # the copied weights are all read: every reference parameter moves the logits
    logits, _ = ref(idx)
    logits.square().sum().backward()
    unread = [n for n, p in ref.named_parameters() if p.grad is None or not p.grad.abs().sum() > 0]
    assert not unread, unread


@pytest.mark.parametrize("pad_to", ["context_size", "n_groups"])
@pytest.mark.parametrize("up", ["repeat", "attn"])
def test_short_input_matches_reference_on_the_padded_window(pad_to, up):
    """A 22-token input is padded on the right (to 32, or to 24 = 4 groups of 6 as the original pads); by causality
    its logits are those of the reference on any padded window that starts with it."""
    model, ref = build({**EXPERTS, "up_sampling": up, "pad_inputs_to": pad_to})
    full = tokens(model.config, model.config.context_size)
    T, Tp = 22, (32 if pad_to == "context_size" else 24)
    with torch.no_grad():
        torch.testing.assert_close(model(full[:, :T]).logits, ref(full[:, :Tp])[0][:, :T], rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("mup", [False, True])
def test_vanilla_baseline_matches_reference(mup):
    """No levels (notes §5): stem, pre-norm global blocks with QK-norm, final norm, head tied to wte; with the
    original's muP (its vanilla run config), attention scaled by 1/hd and logits divided by the width."""
    torch.manual_seed(0)
    model = (
        Hourglass(
            vanilla_config(
                vocab_size=13, context_size=16, n_embed=(16,), n_head=2, n_block_latent=3, dropout=0.1, mup=mup
            )
        )
        .double()
        .eval()
    )
    randomise_(model, 1)
    ref = reference_from(model).eval()
    idx = tokens(model.config, 16)
    with torch.no_grad():
        torch.testing.assert_close(model(idx).logits, ref(idx)[0], rtol=1e-9, atol=1e-9)
