"""The formal encoder–decoder transformer: ED-Transformer, ED-Training and ED-Inference, as the write-up states them.

The write-up (seed 001) follows Phuong & Hutter, *Formal Algorithms for Transformers* (2022,
arXiv:2207.09238). Each pseudocode line is quoted in a comment right above the line that implements it.
Where the write-up leaves a piece undefined (the inside of MultiHeadAttention, the layer norm, the per-head
sizes) we take Phuong & Hutter's definition; the chapter's "Where we differ from the original" lists every choice.

**From the write-up's column-major notation to batch-first tensors.** The write-up keeps one token per
*column*: ``Z ∈ R^{d_e × ℓ}``, ``P ∈ (0,1)^{|V| × ℓ}``, indices from 1. We keep a batch of ``B`` sequences with
one token per *row*: ``Z[b, t, :]`` is column ``t + 1`` of the write-up's ``Z`` for sequence ``b``. Then

- a product ``W·Z + b·1ᵀ`` ($W ∈ ℝ^{m × d_e}$) is ``Z @ W.T + b``, i.e. ``nn.Linear`` whose ``weight`` *is* the
  write-up's W (same orientation, shape (m, d_e)); so $W_q^h$, $W_1$, $W_u$, ... are stored exactly as written;
- ``W_e ∈ R^{d_e × |V|}`` and ``W_p ∈ R^{d_e × ℓ_max}`` are ``nn.Embedding`` tables, which store the
  *transpose* (row v is column v of W_e);
- the attention scores ``S = Kᵀ Q ∈ R^{ℓ_z × ℓ_x}`` are stored as ``S[b, h, t_x, t_z]`` (the transpose: queries
  on rows), and ``Mask[t_z, t_x]`` as ``allowed[t_x, t_z]``; "softmax over each column" becomes softmax over
  the last dim;
- ``P_{:, j}`` (the distribution of $x_{j+1}$) is ``logits[b, j - 1].softmax(-1)``.

**Batches and padding.** The write-up runs one (z, x) pair at a time. A batch pads z and x on the right. The
encoder and the cross-attention ignore padded columns of z (``z_valid``), and the decoder's unidirectional mask
already keeps real positions from seeing the padding after them, so each real column of a padded batch equals
the write-up's computation on that example alone (``tests/test_formal_ed.py`` checks this against a literal
loop-over-columns transcription).

**Loss.** ``forward`` returns the *mean* over the batch's non-padded target positions of ``−log P_{x_{j+1}, j}``
(nats per token), so the learning rate does not depend on the answers' lengths and the shared trainer's
curves read in nats/token. The write-up's J(θ) sums over positions; :func:`ed_training` uses that sum, as written.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from typing import Callable, ClassVar, NamedTuple, Sequence

import torch
import torch.nn as nn
import torch.nn.functional as F

from ..config import ConfigBase, require
from ..errors import ConfigError, TrainingDiverged
from .base import Model, ModelOutput

IGNORE = -100  # target id skipped by the loss (F.cross_entropy's ignore_index)


@dataclass(frozen=True)
class FormalEDConfig(ConfigBase):
    """ED-Transformer's hyperparameters, named as in the write-up."""

    family: ClassVar[str] = "formal_ed"
    vocab_size: int = 13  # |V|
    l_max: int = 16  # ℓ_max: the longest z or x (columns of W_p)
    L_enc: int = 2  # encoder layers
    L_dec: int = 2  # decoder layers
    H: int = 4  # attention heads
    d_e: int = 64  # embedding size; each head has d_attn = d_mid = d_e / H
    d_mlp: int = 256  # MLP hidden size
    ln_eps: float = 1e-5  # added to the variance in layer norm (Phuong & Hutter's has none; 0 reproduces it)
    init_std: float = 0.02  # weights ~ N(0, init_std²), biases 0, γ = 1, β = 0 (the write-up gives no init)

    def validate(self) -> None:
        for name in ("vocab_size", "l_max", "L_enc", "L_dec", "H", "d_e", "d_mlp"):
            require(getattr(self, name) >= 1, f"model.{name} must be >= 1, got {getattr(self, name)}")
        require(self.vocab_size >= 3, f"model.vocab_size must hold at least PAD, BOS and EOS, got {self.vocab_size}")
        require(
            self.d_e % self.H == 0,
            f"model.d_e ({self.d_e}) must be divisible by model.H ({self.H}): each head has d_e / H dimensions; "
            f"change H to a divisor of d_e (e.g. {max(h for h in range(1, self.H + 1) if self.d_e % h == 0)})",
        )
        require(self.ln_eps >= 0, f"model.ln_eps must be >= 0, got {self.ln_eps}")
        require(self.init_std > 0, f"model.init_std must be > 0, got {self.init_std}")

    @property
    def d_attn(self) -> int:
        """Query/key (and value) size of one head."""
        return self.d_e // self.H


# --------------------------------------------------------------------------------------------------
# Building blocks


class MultiHeadAttention(nn.Module):
    """MultiHeadAttention(X, Z | 𝒲, Mask): H heads of Attention (with query/key/value biases), then W_o Y + b_o.

    𝒲 = {W_q^h, b_q^h, W_k^h, b_k^h, W_v^h, b_v^h for h ∈ [H]; W_o, b_o}. The H heads' W_q^h are stacked on the
    rows of one (H·d_attn, d_e) matrix: rows h·d_attn ... (h+1)·d_attn − 1 are W_q^h (likewise k, v).
    """

    def __init__(self, d_e: int, H: int):
        super().__init__()
        self.H, self.d = H, d_e // H
        self.W_q = nn.Linear(d_e, H * self.d)  # [W_q^1; ...; W_q^H], [b_q^1; ...; b_q^H]
        self.W_k = nn.Linear(d_e, H * self.d)
        self.W_v = nn.Linear(d_e, H * self.d)
        self.W_o = nn.Linear(H * self.d, d_e)  # W_o ∈ R^{d_e × H·d_mid}, b_o

    def _heads(self, t: torch.Tensor) -> torch.Tensor:
        B, T, _ = t.shape
        return t.view(B, T, self.H, self.d).transpose(1, 2)  # (B, H, T, d_attn)

    def forward(
        self, X: torch.Tensor, Z: torch.Tensor, allowed: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """X (B, ℓ_x, d_e) attends to Z (B, ℓ_z, d_e); ``allowed`` broadcasts to (B, H, ℓ_x, ℓ_z), True = Mask 1.

        Returns the output (B, ℓ_x, d_e) and the attention weights (B, H, ℓ_x, ℓ_z).
        """
        B, lx, _ = X.shape
        # Q ← W_q X + b_q 1ᵀ,  K ← W_k Z + b_k 1ᵀ,  V ← W_v Z + b_v 1ᵀ   (every head at once)
        q, k, v = self._heads(self.W_q(X)), self._heads(self.W_k(Z)), self._heads(self.W_v(Z))  # (B, H, ℓ, d_attn)
        # S ← Kᵀ Q   (stored transposed: S[t_x, t_z])
        S = q @ k.transpose(-2, -1)  # (B, H, ℓ_x, ℓ_z)
        # ∀ t_z, t_x: if ¬Mask[t_z, t_x] then S[t_z, t_x] ← −∞
        if allowed is not None:
            S = S.masked_fill(~allowed, float("-inf"))
        # Ṽ ← V · softmax(S / √d_attn)   (softmax over t_z for each query t_x)
        A = torch.softmax(S / math.sqrt(self.d), dim=-1)
        Y = A @ v  # (B, H, ℓ_x, d_attn)
        # Y ← [Y^1; Y^2; ...; Y^H]
        Y = Y.transpose(1, 2).reshape(B, lx, self.H * self.d)  # (B, ℓ_x, H·d_mid)
        # return W_o Y + b_o 1ᵀ
        return self.W_o(Y), A


class EncoderLayer(nn.Module):
    """One of the L_enc encoder layers: bidirectional self-attention and a ReLU MLP, each followed by layer norm."""

    def __init__(self, c: FormalEDConfig):
        super().__init__()
        self.mha = MultiHeadAttention(c.d_e, c.H)  # 𝒲^l_enc
        self.ln1 = nn.LayerNorm(c.d_e, eps=c.ln_eps)  # γ^l_1, β^l_1
        self.W1 = nn.Linear(c.d_e, c.d_mlp)  # W^l_1, b^l_1
        self.W2 = nn.Linear(c.d_mlp, c.d_e)  # W^l_2, b^l_2
        self.ln2 = nn.LayerNorm(c.d_e, eps=c.ln_eps)  # γ^l_2, β^l_2

    def forward(self, Z: torch.Tensor, allowed: torch.Tensor | None) -> torch.Tensor:
        # Z ← Z + MultiHeadAttention(Z, Z | 𝒲^l_enc, 1)   (allowed only hides batch padding)
        Z = Z + self.mha(Z, Z, allowed)[0]
        # Z ← ColwiseLayerNorm(Z | γ^l_1, β^l_1)
        Z = self.ln1(Z)
        # Z ← Z + W^l_2 max(0, W^l_1 Z + b^l_1 1ᵀ) + b^l_2 1ᵀ
        Z = Z + self.W2(F.relu(self.W1(Z)))
        # Z ← ColwiseLayerNorm(Z | γ^l_2, β^l_2)
        return self.ln2(Z)


class DecoderLayer(nn.Module):
    """One of the L_dec decoder layers: unidirectional self-attention, cross-attention on Z, a ReLU MLP,
    each followed by layer norm."""

    def __init__(self, c: FormalEDConfig):
        super().__init__()
        self.mha_self = MultiHeadAttention(c.d_e, c.H)  # 𝒲^l_dec
        self.ln3 = nn.LayerNorm(c.d_e, eps=c.ln_eps)  # γ^l_3, β^l_3
        self.mha_cross = MultiHeadAttention(c.d_e, c.H)  # 𝒲^l_cross
        self.ln4 = nn.LayerNorm(c.d_e, eps=c.ln_eps)  # γ^l_4, β^l_4
        self.W3 = nn.Linear(c.d_e, c.d_mlp)  # W^l_3, b^l_3
        self.W4 = nn.Linear(c.d_mlp, c.d_e)  # W^l_4, b^l_4
        self.ln5 = nn.LayerNorm(c.d_e, eps=c.ln_eps)  # γ^l_5, β^l_5

    def forward(
        self, X: torch.Tensor, Z: torch.Tensor, uni: torch.Tensor, z_allowed: torch.Tensor | None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        # X ← X + MultiHeadAttention(X, X | 𝒲^l_dec, M_uni)
        X = X + self.mha_self(X, X, uni)[0]
        # X ← ColwiseLayerNorm(X | γ^l_3, β^l_3)
        X = self.ln3(X)
        # X ← X + MultiHeadAttention(X, Z | 𝒲^l_cross, 1)   (allowed only hides batch padding of z)
        cross, A = self.mha_cross(X, Z, z_allowed)
        X = X + cross
        # X ← ColwiseLayerNorm(X | γ^l_4, β^l_4)
        X = self.ln4(X)
        # X ← X + W^l_4 max(0, W^l_3 X + b^l_3 1ᵀ) + b^l_4 1ᵀ
        X = X + self.W4(F.relu(self.W3(X)))
        # X ← ColwiseLayerNorm(X | γ^l_5, β^l_5)
        return self.ln5(X), A


# --------------------------------------------------------------------------------------------------
# ED-Transformer


class FormalED(Model):
    """ED-Transformer(z, x | θ): returns logits whose softmax is the write-up's P, one row per column of P."""

    def __init__(self, config: FormalEDConfig):
        super().__init__()
        self.config = c = config
        self.W_e = nn.Embedding(c.vocab_size, c.d_e)  # weight = W_eᵀ: row v is (W_e)_{:, v}
        self.W_p = nn.Embedding(c.l_max, c.d_e)  # weight = W_pᵀ: row t is (W_p)_{:, t+1}
        self.encoder = nn.ModuleList(EncoderLayer(c) for _ in range(c.L_enc))
        self.decoder = nn.ModuleList(DecoderLayer(c) for _ in range(c.L_dec))
        self.W_u = nn.Linear(c.d_e, c.vocab_size, bias=False)  # W_u ∈ R^{|V| × d_e}, not tied to W_e
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Weights ~ N(0, init_std²), biases 0, layer norm γ = 1 and β = 0."""
        for module in self.modules():
            if isinstance(module, (nn.Linear, nn.Embedding)):
                nn.init.normal_(module.weight, mean=0.0, std=self.config.init_std)
                if getattr(module, "bias", None) is not None:
                    nn.init.zeros_(module.bias)
            elif isinstance(module, nn.LayerNorm):
                nn.init.ones_(module.weight)
                nn.init.zeros_(module.bias)

    @property
    def context_size(self) -> int:
        """ℓ_max: the longest z or x."""
        return self.config.l_max

    def positional_parameters(self) -> list[nn.Parameter]:
        return [self.W_p.weight]

    def num_params(self, exclude_positional: bool = False) -> int:
        """The size of θ. The write-up lists W_p in θ, so by default it is counted (unlike the decoder-only
        write-ups' convention)."""
        return super().num_params(exclude_positional)

    def example_batch(self, batch_size: int = 1, device: str | torch.device | None = None) -> dict[str, torch.Tensor]:
        """z and x of the longest length, every position a target."""
        shape = (batch_size, self.config.l_max)
        zeros = torch.zeros(shape, dtype=torch.long, device=device)
        return {
            "z": zeros,
            "x": zeros.clone(),
            "targets": zeros.clone(),
            "z_valid": torch.ones(shape, dtype=torch.bool, device=device),
        }

    def embed(self, tokens: torch.Tensor) -> torch.Tensor:
        """Embed(s | W_e, W_p): column j is (W_e)_{:, s_j} + (W_p)_{:, j}.  (B, ℓ) -> (B, ℓ, d_e)"""
        if tokens.dim() != 2:
            raise ValueError(f"token ids must be a (batch, length) tensor, got shape {tuple(tokens.shape)}")
        ell = tokens.size(1)
        if not 1 <= ell <= self.config.l_max:
            raise ValueError(
                f"sequence length {ell} is outside 1..l_max={self.config.l_max}; "
                f"raise model.l_max or shorten the sequences"
            )
        return self.W_e(tokens) + self.W_p(torch.arange(ell, device=tokens.device))

    def encode(self, z: torch.Tensor, z_valid: torch.Tensor | None = None) -> torch.Tensor:
        """The encoder: z (B, ℓ_z) -> Z (B, ℓ_z, d_e). ``z_valid`` (B, ℓ_z) marks real tokens (None: all)."""
        allowed = _key_mask(z_valid)
        # Z ← Embed(z | W_e, W_p)
        Z = self.embed(z)
        # for l = 1, ..., L_enc
        for layer in self.encoder:
            Z = layer(Z, allowed)
        return Z

    def decode(
        self, Z: torch.Tensor, x: torch.Tensor, z_valid: torch.Tensor | None = None, *, return_attention: bool = False
    ):
        """The decoder and the unembedding: x (B, ℓ_x) -> logits (B, ℓ_x, |V|) with softmax(logits[:, j-1]) = P_{:, j}.

        With ``return_attention`` also the cross-attention weights of every layer, each (B, H, ℓ_x, ℓ_z).
        """
        ell = x.size(-1)
        # M_uni[t_z, t_x] = [t_z ≤ t_x]: position t_x sees positions 1..t_x   (ours: allowed[t_x, t_z])
        uni = torch.ones(ell, ell, dtype=torch.bool, device=x.device).tril()
        z_allowed = _key_mask(z_valid)
        # X ← Embed(x | W_e, W_p)
        X = self.embed(x)
        maps = []
        # for l = 1, ..., L_dec
        for layer in self.decoder:
            X, A = layer(X, Z, uni, z_allowed)
            maps.append(A)
        # P ← softmax(W_u X)   (we return W_u X; the softmax is taken by the loss and the samplers)
        logits = self.W_u(X)
        return (logits, maps) if return_attention else logits

    def forward(
        self, z: torch.Tensor, x: torch.Tensor, targets: torch.Tensor | None = None, z_valid: torch.Tensor | None = None
    ) -> ModelOutput:
        """ED-Transformer(z, x | θ) on a batch; with targets, the mean of −log P_{target, j} over the non-padded
        (≠ IGNORE) target positions."""
        logits = self.decode(self.encode(z, z_valid), x, z_valid)
        loss = None
        if targets is not None:
            loss = F.cross_entropy(
                _at_least_fp32(logits).reshape(-1, logits.size(-1)), targets.reshape(-1), ignore_index=IGNORE
            )
        return ModelOutput(logits, loss, {})

    def theta(self) -> dict:
        """θ in the write-up's own orientation (d_e × |V|, column vectors), for the literal transcription and for
        comparing with other implementations. Views of the parameters, not copies."""

        def mha(m: MultiHeadAttention) -> dict:
            def split(t: torch.Tensor) -> list[torch.Tensor]:
                return list(t.split(m.d, dim=0))  # the H heads' blocks of rows: W_q^1, ..., W_q^H

            return {
                "W_q": split(m.W_q.weight),
                "b_q": split(m.W_q.bias),
                "W_k": split(m.W_k.weight),
                "b_k": split(m.W_k.bias),
                "W_v": split(m.W_v.weight),
                "b_v": split(m.W_v.bias),
                "W_o": m.W_o.weight,
                "b_o": m.W_o.bias,
            }

        enc = [
            {
                "W_enc": mha(e.mha),
                "gamma1": e.ln1.weight,
                "beta1": e.ln1.bias,
                "W1": e.W1.weight,
                "b1": e.W1.bias,
                "W2": e.W2.weight,
                "b2": e.W2.bias,
                "gamma2": e.ln2.weight,
                "beta2": e.ln2.bias,
            }
            for e in self.encoder
        ]
        dec = [
            {
                "W_dec": mha(d.mha_self),
                "gamma3": d.ln3.weight,
                "beta3": d.ln3.bias,
                "W_cross": mha(d.mha_cross),
                "gamma4": d.ln4.weight,
                "beta4": d.ln4.bias,
                "W3": d.W3.weight,
                "b3": d.W3.bias,
                "W4": d.W4.weight,
                "b4": d.W4.bias,
                "gamma5": d.ln5.weight,
                "beta5": d.ln5.bias,
            }
            for d in self.decoder
        ]
        return {"W_e": self.W_e.weight.T, "W_p": self.W_p.weight.T, "enc": enc, "dec": dec, "W_u": self.W_u.weight}

    @torch.no_grad()
    def load_theta(self, theta: dict) -> "FormalED":
        """Set the parameters from θ in the write-up's orientation (the structure :meth:`theta` returns), e.g. the
        weights of another implementation of the same algorithm. Shapes must match exactly."""

        def copy(mine, theirs, where: str) -> None:
            if isinstance(mine, dict):
                if set(mine) != set(theirs):
                    raise ConfigError(f"θ{where} has keys {sorted(theirs)}, expected {sorted(mine)}")
                for k in mine:
                    copy(mine[k], theirs[k], f"{where}[{k!r}]")
            elif isinstance(mine, list):
                if len(mine) != len(theirs):
                    raise ConfigError(f"θ{where} has {len(theirs)} entries, expected {len(mine)}")
                for i, (a, b) in enumerate(zip(mine, theirs)):
                    copy(a, b, f"{where}[{i}]")
            else:
                theirs = torch.as_tensor(theirs)
                if tuple(theirs.shape) != tuple(mine.shape):
                    raise ConfigError(f"θ{where} has shape {tuple(theirs.shape)}, expected {tuple(mine.shape)}")
                mine.copy_(theirs)  # mine is a view of a parameter: this writes the parameter

        copy(self.theta(), theta, "")
        return self


def _at_least_fp32(t: torch.Tensor) -> torch.Tensor:
    """bf16/fp16 logits (autocast) in float32 for the loss; float32 and float64 as they are."""
    return t.to(torch.promote_types(t.dtype, torch.float32))


def _key_mask(valid: torch.Tensor | None) -> torch.Tensor | None:
    """(B, ℓ_z) real-token flags -> (B, 1, 1, ℓ_z): every query may attend to every real key."""
    return None if valid is None else valid[:, None, None, :].bool()


# --------------------------------------------------------------------------------------------------
# ED-Inference: sampling with a temperature


def check_temperature(tau) -> float:
    """τ as a float in [0, ∞]; anything else (negative, NaN, not a number) is an error naming the valid range."""
    ok = isinstance(tau, numbers.Real) and not isinstance(tau, bool) and not math.isnan(tau) and tau >= 0
    if not ok:
        raise ConfigError(
            f"temperature τ must be a number in [0, ∞]: 0 for the most likely token, 1 for faithful "
            f"sampling, float('inf') for uniform sampling; got {tau!r}"
        )
    return float(tau)


def tempered(logits: torch.Tensor, tau: float) -> torch.Tensor:
    """q ∝ p^{1/τ} with p = softmax(logits) over the last dim, in float64. τ = 0 and τ = ∞ are the limits:

    - τ = 0: q is uniform over the tokens of largest p (one token unless p has exact ties): argmax;
    - τ = ∞: p^0 = 1 on every token with p > 0: uniform over V;
    - otherwise q = softmax((log p − max log p) / τ): the largest exponent is 0, so no overflow, no 0/0.
    """
    tau = check_temperature(tau)
    logp = torch.log_softmax(logits.double(), dim=-1)
    if not torch.isfinite(logp.amax(dim=-1)).all():
        raise ValueError("the logits are not finite (NaN or inf): there is no distribution p to sample from")
    top = logp.amax(dim=-1, keepdim=True)
    if tau == 0:
        w = (logp == top).double()
    elif math.isinf(tau):
        w = (logp > float("-inf")).double()
    else:
        return torch.softmax((logp - top) / tau, dim=-1)
    return w / w.sum(dim=-1, keepdim=True)


def sample_tau(logits: torch.Tensor, tau: float, generator: torch.Generator | None = None) -> torch.Tensor:
    """Sample a token y from q ∝ p^{1/τ} for each row of ``logits`` (…, |V|). Drawn on the CPU, so a seeded
    generator gives the same tokens on every device."""
    q = tempered(logits.detach().cpu(), tau)
    flat = q.reshape(-1, q.size(-1))
    return torch.multinomial(flat, 1, generator=generator).view(q.shape[:-1])


def entropy(q: torch.Tensor) -> torch.Tensor:
    """H(q) in nats over the last dim (0 · log 0 = 0)."""
    return -(q * torch.where(q > 0, q.log(), torch.zeros_like(q))).sum(-1)


class Generation(NamedTuple):
    x: torch.Tensor  # (B, ℓ) long: [bos, y_1, ..., eos], then pad
    entropy: torch.Tensor  # (B,) mean entropy H(q) (nats) of the distributions the tokens were drawn from
    capped: torch.Tensor  # (B,) bool: stopped by the length cap, not by eos


@torch.no_grad()
def ed_inference(
    model: FormalED,
    z: torch.Tensor,
    tau: float,
    *,
    bos: int,
    eos: int,
    pad: int,
    z_valid: torch.Tensor | None = None,
    max_len: int | None = None,
    generator: torch.Generator | None = None,
) -> Generation:
    """ED-Inference(z, θ̂) for a batch of prompts z (B, ℓ_z): start from [bos], append y ~ q ∝ p^{1/τ} until y = eos.

    The write-up loops until eos; W_p has only ℓ_max columns, so x stops at ``max_len`` tokens (default and
    maximum ℓ_max) and such rows are flagged ``capped``. Rows that are done are padded with ``pad``.
    """
    tau = check_temperature(tau)
    cap = model.config.l_max if max_len is None else max_len
    if not 2 <= cap <= model.config.l_max:
        raise ConfigError(
            f"max_len must lie in 2..l_max={model.config.l_max} (x holds bos and at least one token), got {cap}"
        )
    was_training = model.training
    model.eval()
    B, device = z.size(0), z.device
    # Z does not depend on x: encoding once equals re-running the encoder inside every ED-Transformer call
    Z = model.encode(z, z_valid)
    # x ← [bos_token]
    x = torch.full((B, 1), bos, dtype=torch.long, device=device)
    done = torch.zeros(B, dtype=torch.bool)
    h_sum, n = torch.zeros(B, dtype=torch.float64), torch.zeros(B, dtype=torch.float64)
    # while y ≠ eos_token   (and |x| < the cap)
    while not bool(done.all()) and x.size(1) < cap:
        # P ← ED-Transformer(z, x | θ̂);  p ← P_{:, |x|}
        logits = model.decode(Z, x, z_valid)[:, -1].cpu()
        q = tempered(logits, tau)
        # sample a token y from q ∝ p^{1/τ}
        y = torch.multinomial(q, 1, generator=generator).squeeze(1)
        y = y.masked_fill(done, pad)
        h_sum += torch.where(done, 0.0, entropy(q))
        n += (~done).double()
        # x ← [x : y]
        x = torch.cat([x, y[:, None].to(device)], dim=1)
        done |= y == eos
    model.train(was_training)
    return Generation(x, h_sum / n.clamp(min=1), ~done)


# --------------------------------------------------------------------------------------------------
# ED-Training: the literal algorithm


def sequence_loss(model: FormalED, z: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """J(θ) = −Σ_{j=1}^{ℓ_X−1} log P(θ)_{x_{j+1}, j} for one unpadded pair z (ℓ_z,), x (ℓ_X,)."""
    # ℓ_X ← |x|
    l_X = x.numel()
    # P(θ) ← ED-Transformer(z, x | θ)   (log P, one row per column of P)
    log_P = torch.log_softmax(_at_least_fp32(model(z[None], x[None]).logits[0]), dim=-1)  # (ℓ_X, |V|)
    # J(θ) ← −Σ_{j=1}^{ℓ_X−1} log P(θ)_{x_{j+1}, j}   (row j−1 holds column j)
    j = torch.arange(l_X - 1, device=x.device)
    return -log_P[j, x[1:]].sum()


def ed_training(
    model: FormalED,
    examples: Sequence[tuple[torch.Tensor, torch.Tensor]],
    *,
    T: int,
    eta: float,
    callback: Callable[[int, float], None] | None = None,
) -> FormalED:
    """ED-Training((z^i, x^i)_{i∈[n]}, θ | T, η): T epochs over the examples in order, one plain gradient step on
    each example's summed log loss. Updates ``model`` in place and returns it.

    ``callback(step, J)`` is called after every update with the number of updates so far and that example's J
    (before its update).
    """
    if not isinstance(T, int) or T < 1:
        raise ConfigError(f"T (epochs) must be a positive integer, got {T!r}")
    if not eta > 0:
        raise ConfigError(f"η (learning rate) must be > 0, got {eta!r}")
    if not examples:
        raise ConfigError("ED-Training needs at least one example (z, x)")
    if any(x.numel() < 2 for _, x in examples):
        raise ConfigError("every x needs at least two tokens (bos and one more): J sums over j = 1..ℓ_X−1")
    theta = [p for p in model.parameters() if p.requires_grad]
    model.train()
    step = 0
    # for t = 1, ..., T
    for t in range(1, T + 1):
        # for i = 1, ..., n
        for i, (z, x) in enumerate(examples, start=1):
            J = sequence_loss(model, z, x)
            value = J.item()
            if not math.isfinite(value):  # stop before the update that would make θ NaN
                raise TrainingDiverged(
                    f"ED-Training diverged at epoch t={t}, example i={i}: J = {value}. Lower η (it is {eta})."
                )
            # θ ← θ − η · ∇J(θ)
            grads = torch.autograd.grad(J, theta)
            with torch.no_grad():
                for p, g in zip(theta, grads):
                    p.sub_(eta * g)
            step += 1
            if callback is not None:
                callback(step, value)
    # return θ̂ = θ
    return model


@dataclass(frozen=True)
class LiteralConfig(ConfigBase):
    """ED-Training's hyperparameters (T, η) and how much of the train split it loops over."""

    T: int = 2  # epochs
    eta: float = 0.01  # η: the plain gradient step on the summed loss J
    n: int = 1000  # examples: the first n of the train split, in order
    evals: int = 10  # loss evaluations, evenly spaced over the T·n updates

    def validate(self) -> None:
        require(self.T >= 1, f"ED-Training's T (notebook parameter literal_epochs) must be >= 1, got {self.T}")
        require(self.eta > 0, f"ED-Training's η (notebook parameter literal_eta) must be > 0, got {self.eta}")
        require(self.n >= 1, f"ED-Training's n (notebook parameter literal_examples) must be >= 1, got {self.n}")
        require(
            1 <= self.evals <= self.T * self.n,
            f"ED-Training's evals must lie in 1..T·n = {self.T * self.n}, got {self.evals}",
        )


__all__ = [
    "DecoderLayer",
    "EncoderLayer",
    "FormalED",
    "FormalEDConfig",
    "Generation",
    "LiteralConfig",
    "MultiHeadAttention",
    "check_temperature",
    "ed_inference",
    "ed_training",
    "entropy",
    "sample_tau",
    "sequence_loss",
    "tempered",
]
