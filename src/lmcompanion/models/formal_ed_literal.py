"""A slow, literal transcription of the write-up's ED-Transformer: loops over columns and heads, as written.

It shares nothing with ``lmcompanion.models.formal_ed`` except θ, which it takes in the write-up's own orientation
(``FormalED.theta()`` gives exactly that): ``W_e ∈ R^{d_e×|V|}``, ``W_p ∈ R^{d_e×ℓ_max}``, ``W_q^h ∈ R^{d_attn×d_e}``,
..., ``W_u ∈ R^{|V|×d_e}``. Matrices hold one token per column. The write-up counts from 1 and Python from 0, so
the write-up's column ``j`` of ``M`` is ``M[:, j - 1]`` here. The inside of MultiHeadAttention and of the layer
norm, which the write-up leaves to its linked notes, is Phuong & Hutter's (Algorithms 4, 5 and 6), with the ε
of our config added to the variance.
"""

from __future__ import annotations

import math

import torch


def layer_norm(e, gamma, beta, eps):
    """ê = (e − m) / √(v + ε) ⊙ γ + β, with m and v the mean and variance of the d_e entries of e."""
    d_e = e.shape[0]
    m = sum(e[i] for i in range(d_e)) / d_e
    v = sum((e[i] - m) ** 2 for i in range(d_e)) / d_e
    return (e - m) / torch.sqrt(v + eps) * gamma + beta


def colwise_layer_norm(Z, gamma, beta, eps):
    """Layer norm applied to each column of Z."""
    return torch.stack([layer_norm(Z[:, t - 1], gamma, beta, eps) for t in range(1, Z.shape[1] + 1)], dim=1)


def attention(X, Z, W_q, b_q, W_k, b_k, W_v, b_v, mask):
    """One head: the columns of X (queries) attend to the columns of Z (keys and values).

    ``mask(t_z, t_x)`` is Mask[t_z, t_x] (1-based): whether query column t_x may look at column t_z.
    """
    l_x, l_z, d_attn = X.shape[1], Z.shape[1], W_q.shape[0]
    q = {t: W_q @ X[:, t - 1] + b_q for t in range(1, l_x + 1)}
    k = {t: W_k @ Z[:, t - 1] + b_k for t in range(1, l_z + 1)}
    v = {t: W_v @ Z[:, t - 1] + b_v for t in range(1, l_z + 1)}
    columns = []
    for t_x in range(1, l_x + 1):
        # S[t_z, t_x] = k_{t_z}ᵀ q_{t_x}, or −∞ where the mask forbids it
        s = torch.stack(
            [k[t_z] @ q[t_x] if mask(t_z, t_x) else torch.tensor(-math.inf, dtype=X.dtype) for t_z in range(1, l_z + 1)]
        )
        s = s / math.sqrt(d_attn)
        alpha = torch.exp(s - s.max())
        alpha = alpha / alpha.sum()  # softmax over t_z
        columns.append(sum(alpha[t_z - 1] * v[t_z] for t_z in range(1, l_z + 1)))
    return torch.stack(columns, dim=1)  # d_attn × ℓ_x


def multi_head_attention(X, Z, W, mask):
    """MultiHeadAttention(X, Z | 𝒲, Mask): Y = [Y^1; ...; Y^H], return W_o Y + b_o 1ᵀ."""
    H = len(W["W_q"])
    Y = torch.cat(
        [
            attention(X, Z, W["W_q"][h], W["b_q"][h], W["W_k"][h], W["b_k"][h], W["W_v"][h], W["b_v"][h], mask)
            for h in range(H)
        ],
        dim=0,
    )
    return W["W_o"] @ Y + W["b_o"][:, None]


def embed(s, W_e, W_p):
    """Column j is (W_e)_{:, s_j} + (W_p)_{:, j}."""
    return torch.stack([W_e[:, s[j - 1]] + W_p[:, j - 1] for j in range(1, len(s) + 1)], dim=1)


def mlp(X, W_a, b_a, W_b, b_b):
    """W_b max(0, W_a X + b_a 1ᵀ) + b_b 1ᵀ, column by column."""
    return torch.stack([W_b @ torch.clamp(W_a @ X[:, t] + b_a, min=0) + b_b for t in range(X.shape[1])], dim=1)


def ed_transformer(z, x, theta, eps=1e-5):
    """P = ED-Transformer(z, x | θ) ∈ (0,1)^{|V| × |x|} for token lists z and x (no padding)."""
    no_mask = lambda t_z, t_x: True  # noqa: E731
    uni = lambda t_z, t_x: t_z <= t_x  # noqa: E731  M_uni: column t_x sees columns 1..t_x

    # Encoding the context sequence z
    Z = embed(z, theta["W_e"], theta["W_p"])
    for p in theta["enc"]:  # l = 1, ..., L_enc
        Z = Z + multi_head_attention(Z, Z, p["W_enc"], no_mask)
        Z = colwise_layer_norm(Z, p["gamma1"], p["beta1"], eps)
        Z = Z + mlp(Z, p["W1"], p["b1"], p["W2"], p["b2"])
        Z = colwise_layer_norm(Z, p["gamma2"], p["beta2"], eps)

    # Decoding the primary sequence x
    X = embed(x, theta["W_e"], theta["W_p"])
    for p in theta["dec"]:  # l = 1, ..., L_dec
        X = X + multi_head_attention(X, X, p["W_dec"], uni)
        X = colwise_layer_norm(X, p["gamma3"], p["beta3"], eps)
        X = X + multi_head_attention(X, Z, p["W_cross"], no_mask)
        X = colwise_layer_norm(X, p["gamma4"], p["beta4"], eps)
        X = X + mlp(X, p["W3"], p["b3"], p["W4"], p["b4"])
        X = colwise_layer_norm(X, p["gamma5"], p["beta5"], eps)

    # P = softmax(W_u X), column by column
    logits = theta["W_u"] @ X
    columns = []
    for j in range(1, X.shape[1] + 1):
        e = torch.exp(logits[:, j - 1] - logits[:, j - 1].max())
        columns.append(e / e.sum())
    return torch.stack(columns, dim=1)
