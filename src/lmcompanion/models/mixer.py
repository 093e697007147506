"""Masked mixer language models (B. L. Badger, 2024, "Masked Mixer Language Models").

An MLP-mixer turned into a causal language model: "all the multi-head attention layers [are] replaced with
one-dimensional convolutions over the sequence dimension", whose weights are masked so that token i reads only
tokens t <= i. Every mixer the write-up trains is a configuration of the one model below:

    x      = wte(idx)                                   # (B, L, d)     no positional encoding
    block: x = x + TokenMix(LN_seq(x))                  # mixes tokens, shared by all d features
           x = x + FF(LN_patch(x))                      # Linear(d, 4d) -> GELU -> Linear(4d, d), per token
    logits = lm_head(x)                                 # (B, L, V)     no final norm

The flat TokenMix is one masked L x L matrix with a per-output-token bias, ``out[i, j] = b[i] +
sum_{t <= i} W[i, t] x[t, j]``, held in an ``nn.Conv1d(L, L, 1)`` whose channels are token positions (so its
initialisation is PyTorch's default, as in the original). Variants (``MixerConfig``): the expanded ConvForward
``L -> eL -> GELU -> L`` (``expansion``), parallel convolutions (``n_parallel``), mixer heads (``n_head``), a
kernel over the feature axis (``kernel_size``), a positional channel (``positional``), an extra Linear after the
embedding (``embed_linear``) and weight tying (``tie_weights``).

Names: ``context_size`` is the write-up's ``length``/``tokenized_length`` (L), ``n_embed`` its ``dim``/d_model
(d), ``n_layer`` its ``depth`` (n), ``vocab_size`` its ``n_vocab`` (V).

Differences from the original code, none of which changes what the model computes:

- **The causal mask is a product inside forward.** The original overwrites ``conv.weight.data`` with its lower
  triangle at the start of every forward. We multiply by a fixed ``tril`` mask (a non-persistent buffer) inside
  forward and never touch ``weight.data``. The forward outputs are identical (the original zeroes the upper
  entries before using them; we multiply them by zero). The gradients of kept entries are identical. Upper
  entries get an exact zero gradient from us; in the original they get a gradient that is thrown away at the next
  forward. With weight decay 0, as the original trains (HF Trainer default), AdamW's update of a kept entry depends
  only on that entry's own gradients, so the kept entries follow the same trajectory and the losses are the same.
  Only the checkpoints differ: ours keep the unused upper-triangle values at their initial values for ever, the
  original's hold zeros or a stale update. One caveat: global gradient-norm clipping (HF's ``max_grad_norm=1.0``)
  sees the original's discarded upper-triangle gradients too, so when clipping binds the original scales its
  updates down a little more than we do; without clipping (or when it does not bind) the runs agree.
- **Data arrive shifted** (the package's convention): ``targets[:, t]`` is the token after ``idx[:, t]`` and the
  last position's target is -100, instead of the original's dropping of the last logit and the first label
  inside forward. The model still reads all L positions, and the loss is the same number.
- **Positional channel last** for both positional variants; the original's "every block" code writes index 0
  (equivalent up to a permutation of the parameters).
- **Multi-headed mixer**: the design (per head Linear(d, d/h), its own masked conv, concatenation, Linear(d, d))
  is our reading of the write-up. No runnable original exists (the Sept-2024 code ignores its projections; the
  2025 file fails with more than one head).
- **Tying** follows the original code (``wte.weight = lm_head.weight``: the shared matrix keeps the Linear's
  initialisation); the write-up's listing shows the reverse assignment.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Literal

import torch
import torch.nn as nn
import torch.nn.functional as F

from ..config import ConfigBase, require
from .base import LanguageModel, ModelOutput, cross_entropy
from .layers import MLP, layer_norm


@dataclass(frozen=True)
class MixerConfig(ConfigBase):
    """One masked mixer; the defaults are the flat mixer of the write-up's d=1024 runs."""

    family: ClassVar[str] = "mixer"
    vocab_size: int = 4096  # V: the write-up's TinyStories tokenizer has 4096 tokens
    context_size: int = 512  # L (tokenized_length): the token convs are L x L, so every input has exactly L tokens
    n_embed: int = 1024  # d (d_model, dim): features per token
    n_layer: int = 8  # n (depth): mixer blocks
    expansion: int | None = None  # None: flat (one masked L x L conv); e >= 1: ConvForward L -> eL -> GELU -> L
    n_parallel: int = 1  # masked L x L convs side by side, each through GELU, summed; 1: the single flat conv
    n_head: int = 1  # mixer heads (per head Linear(d, d/h), own masked conv; concat, Linear(d, d)); 1: flat
    kernel_size: int = 1  # k: every token conv's kernel slides over the feature axis ('same' padding)
    positional: Literal["none", "first", "every"] = (
        "none"  # a channel of positions: none, at the input, after every block
    )
    embed_linear: bool = False  # Linear(d, d) with bias on the embedding output, before the blocks
    tie_weights: bool = False  # one matrix for embedding and LM head (the original: wte.weight = lm_head.weight)
    causal: bool = True  # False: no mask, every token reads every token (the retrieval part's bidirectional matcher)

    @property
    def width(self) -> int:
        """Features per token inside the blocks: d, plus one positional channel."""
        return self.n_embed + (self.positional != "none")

    def validate(self) -> None:
        for name in ("vocab_size", "context_size", "n_embed", "n_layer"):
            require(getattr(self, name) >= 1, f"model.{name} must be >= 1, got {getattr(self, name)}")
        require(
            self.expansion is None or self.expansion >= 1,
            f"model.expansion must be an integer >= 1, got {self.expansion}: below 1 the causal mask drops the "
            "later tokens' inputs (the write-up's figure); use expansion=None for the flat mixer",
        )
        require(self.n_parallel >= 1, f"model.n_parallel must be >= 1 (1 = the flat conv), got {self.n_parallel}")
        require(self.n_head >= 1, f"model.n_head must be >= 1 (1 = the flat mixer), got {self.n_head}")
        require(self.kernel_size >= 1, f"model.kernel_size must be >= 1 (1 = the flat conv), got {self.kernel_size}")
        chosen = [
            f"model.{k}={v}"
            for k, v, on in (
                ("expansion", self.expansion, self.expansion is not None),
                ("n_parallel", self.n_parallel, self.n_parallel > 1),
                ("n_head", self.n_head, self.n_head > 1),
            )
            if on
        ]
        require(
            len(chosen) <= 1,
            f"{' and '.join(chosen)} are alternative token mixers (each replaces the flat conv, and the write-up "
            "trains each alone): keep one and reset the others (expansion=None, n_parallel=1, n_head=1)",
        )
        where = " (n_embed + 1 positional channel)" if self.positional != "none" else ""
        require(
            self.width % self.n_head == 0,
            f"model.n_head ({self.n_head}) must divide the block width {self.width}{where}: pick a divisor",
        )


# --------------------------------------------------------------------------------------------------
# Token mixing


def causal_mask(
    out_tokens: int, in_tokens: int, device: str | torch.device | None = None, causal: bool = True
) -> torch.Tensor:
    """(out, in, 1) bool: entry (i, t) is True iff t <= i, the diagonal included (a token reads itself);
    all True when ``causal`` is False."""
    ones = torch.ones(out_tokens, in_tokens, dtype=torch.bool, device=device)
    return (ones.tril() if causal else ones).unsqueeze(-1)


class MaskedTokenConv(nn.Conv1d):
    """A causally masked ``Conv1d(in_tokens, out_tokens, k, padding='same')`` over (B, tokens, features).

    Channels are token positions; the kernel slides over the feature axis. "We shall mask the weights of the
    convolution such that the only non-zero weights supplied to a_n will originate from a_0, a_1, ..., a_{n-1}":
    the output at position n - 1, which predicts a_n, reads positions 0 .. n - 1. So the (out-token, in-token)
    matrix of every tap is multiplied by ``tril``: entry (i, t) is kept iff t <= i (a token sees itself and
    earlier tokens). The bias is per output token, so it leaks nothing. Padding is PyTorch's 'same', as in the
    original kernel-4 mixer: for k=4 one zero feature on the left and two on the right.
    """

    def __init__(self, in_tokens: int, out_tokens: int, kernel_size: int = 1, bias: bool = True, causal: bool = True):
        super().__init__(in_tokens, out_tokens, kernel_size, padding="same", bias=bias)
        self.causal = causal
        # "we mask the weights of the convolution" with tril of the (out, in) matrix, the same for every tap;
        # bool (1 byte an entry, and .half() leaves it alone)
        self.register_buffer(
            "mask", causal_mask(out_tokens, in_tokens, causal=causal), persistent=False
        )  # (out, in, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # (B, in_tokens, C) -> (B, out_tokens, C)
        k = self.kernel_size[0]
        if k > 1:  # what padding='same' does, without PyTorch's warning about even kernels
            x = F.pad(x, ((k - 1) // 2, k - 1 - (k - 1) // 2))  # (B, in_tokens, C + k - 1)
        # "m(W) = W ∘ U": a product here, so weight.data is never written (the masked copy is what conv saves)
        return F.conv1d(x, self.weight * self.mask, self.bias)

    def liveness(self) -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
        """{parameter: (kept by the mask, can get a nonzero gradient)} on the CPU (also for a meta-device model);
        alone, every kept weight is live."""
        kept = causal_mask(self.out_channels, self.in_channels, "cpu", self.causal).expand(self.weight.shape)
        out = {"weight": (kept, kept)}
        if self.bias is not None:
            out["bias"] = (torch.ones(self.bias.shape, dtype=torch.bool),) * 2
        return out


class ExpandedTokenMix(nn.Module):
    """The write-up's ``ConvForward``: Conv1d(L -> eL) -> GELU -> Conv1d(eL -> L), both masked with tril.

    "the lower-triangular mask negates all 'extra' weights for any expansion greater than a factor of one": hidden
    channel h >= L is read by no output token (the second conv keeps (i, h) only for h <= i < L), so its row of the
    first conv can never get a gradient. :meth:`liveness` reports exactly that.
    """

    def __init__(self, length: int, expansion: int, kernel_size: int = 1, causal: bool = True):
        super().__init__()
        self.expand = MaskedTokenConv(length, expansion * length, kernel_size, causal=causal)
        self.gelu = nn.GELU()
        self.contract = MaskedTokenConv(expansion * length, length, kernel_size, causal=causal)

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # (B, L, C)
        return self.contract(self.gelu(self.expand(x)))  # (B, eL, C) inside

    def liveness(self) -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
        read = self.contract.liveness()["weight"][0].any(dim=0).any(dim=-1)  # (eL,): hidden channels some output reads
        out = {f"contract.{k}": v for k, v in self.contract.liveness().items()}
        for name, (kept, _) in self.expand.liveness().items():
            rows = read.view(-1, *([1] * (kept.dim() - 1)))  # a hidden channel's whole row lives or dies
            out[f"expand.{name}"] = (kept, kept & rows)
        return out


class ParallelTokenMix(nn.Module):
    """ "we replace one convolution with two parallel ones": n masked L x L convs, each through GELU, summed."""

    def __init__(self, length: int, n_parallel: int, kernel_size: int = 1, causal: bool = True):
        super().__init__()
        self.convs = nn.ModuleList(
            MaskedTokenConv(length, length, kernel_size, causal=causal) for _ in range(n_parallel)
        )
        self.gelu = nn.GELU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # (B, L, C)
        return sum(self.gelu(conv(x)) for conv in self.convs)


class MultiHeadTokenMix(nn.Module):
    """Mixer heads: "Each head is projected by a unique weight matrix and then a unique mixer is applied to each
    head, and the outputs are concatenated and then re-projected back to match the d_model dimension."

    Head width C / n_head (our reading of the write-up; see the module docstring).
    """

    def __init__(self, length: int, width: int, n_head: int, kernel_size: int = 1, causal: bool = True):
        super().__init__()
        self.proj_head = nn.ModuleList(nn.Linear(width, width // n_head) for _ in range(n_head))
        self.convs = nn.ModuleList(MaskedTokenConv(length, length, kernel_size, causal=causal) for _ in range(n_head))
        self.out_proj = nn.Linear(width, width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # (B, L, C)
        heads = [conv(proj(x)) for proj, conv in zip(self.proj_head, self.convs)]  # n_head x (B, L, C / n_head)
        return self.out_proj(torch.cat(heads, dim=-1))  # (B, L, C)


def token_mixer(c: MixerConfig) -> nn.Module:
    """The TokenMix of one block for config ``c``."""
    L, k, causal = c.context_size, c.kernel_size, c.causal
    if c.expansion is not None:
        return ExpandedTokenMix(L, c.expansion, k, causal)
    if c.n_parallel > 1:
        return ParallelTokenMix(L, c.n_parallel, k, causal)
    if c.n_head > 1:
        return MultiHeadTokenMix(L, c.width, c.n_head, k, causal)
    # the flat mixer: "a single convolution (that must have as many output features as sequence elements)"
    return MaskedTokenConv(L, L, k, causal=causal)


# --------------------------------------------------------------------------------------------------
# The model


class MixerBlock(nn.Module):
    """Pre-LN mixer block (the original's MixerBlock), no dropout."""

    def __init__(self, c: MixerConfig):
        super().__init__()
        # creation order as the original's, so that a seed draws the same initial weights
        self.patch_layernorm = layer_norm(c.width, bias=True)
        self.seq_layernorm = layer_norm(c.width, bias=True)
        self.patch_ff = MLP(c.width, bias=True, dropout=0.0)  # Linear(C, 4C) -> exact GELU -> Linear(4C, C)
        self.conv = token_mixer(c)

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # (B, L, C)
        # "x = self.conv(x) + residual" after seq_layernorm
        x = x + self.conv(self.seq_layernorm(x))
        # "x = self.patch_ff(x) + residual" after patch_layernorm
        return x + self.patch_ff(self.patch_layernorm(x))


class MaskedMixer(LanguageModel):
    """The masked mixer language model; ``forward(idx, targets)`` over exactly ``context_size`` tokens."""

    def __init__(self, config: MixerConfig):
        super().__init__()
        self.config = c = config
        self.wte = nn.Embedding(c.vocab_size, c.n_embed)  # N(0, 1), PyTorch's default
        self.embed_linear = nn.Linear(c.n_embed, c.n_embed) if c.embed_linear else None
        self.blocks = nn.ModuleList(MixerBlock(c) for _ in range(c.n_layer))
        self.lm_head = nn.Linear(c.n_embed, c.vocab_size, bias=False)
        if c.tie_weights:
            self.wte.weight = self.lm_head.weight  # as the original code ties them

    def _with_positions(self, x: torch.Tensor) -> torch.Tensor:
        """(B, L, d) -> (B, L, d + 1): the raw integer positions arange(-L/2, L/2) as the last feature."""
        B, L, _ = x.shape
        # "self.positions = torch.arange(-tokenized_length//2, tokenized_length//2, 1)"
        pos = torch.arange(-L // 2, L // 2, device=x.device, dtype=x.dtype)
        return torch.cat([x, pos.view(1, L, 1).expand(B, L, 1)], dim=-1)

    def hidden(self, idx: torch.Tensor) -> torch.Tensor:
        """The last block's output, what the LM head reads: (B, L) token ids -> (B, L, d).

        The write-up's retrieval embeddings are this at position -2 (the last output is untrained)."""
        c = self.config
        B, T = idx.shape
        if T != c.context_size:
            raise ValueError(
                f"input length {T} but this mixer was built for context_size {c.context_size}: pad "
                f"the input to {c.context_size} tokens (the data source pads on the left)"
            )
        x = self.wte(idx)  # (B, L, d)
        if self.embed_linear is not None:
            x = self.embed_linear(x)  # "an extra linear layer after the word-token embedding"
        if c.positional != "none":
            # "x = torch.cat((x, positional_tensor), dim=-1)"
            x = self._with_positions(x)  # (B, L, d + 1)
        for block in self.blocks:
            x = block(x)
            if c.positional == "every":
                # "apply the positional information to every block via x[..., -1] = positional_tensor"
                x = self._with_positions(x[..., :-1])
        # "output = self.lm_head(x[..., :-1])": the head reads the d non-positional channels
        return x[..., : c.n_embed]

    def forward(self, idx: torch.Tensor, targets: torch.Tensor | None = None) -> ModelOutput:
        logits = self.lm_head(self.hidden(idx))  # (B, L, V)
        loss = cross_entropy(logits, targets) if targets is not None else None
        return ModelOutput(logits, loss, {})

    def generate(self, idx: torch.Tensor, max_new_tokens: int, **_) -> torch.Tensor:
        raise ValueError(
            "a masked mixer reads exactly context_size tokens and its last output is untrained: use "
            "lmcompanion.models.mixer.fixed_window_generate(model, window, n) on a left-padded window"
        )


# --------------------------------------------------------------------------------------------------
# Inference and analysis


@torch.no_grad()
def fixed_window_generate(model: LanguageModel, window: torch.Tensor, n: int) -> torch.Tensor:
    """The write-up's "Mixer Inference": greedy generation inside one fixed window of ``context_size`` tokens.

    ``window`` (B, L) holds a left-padded prompt in its first L - n + 1 positions; its last n - 1 positions are
    placeholders (the original leaves the true continuation there, to print it beside the output), which a causal
    model never reads before overwriting them. For i = n, n-1, ..., 2: one full forward, the argmax of the logits at
    position -i is written at position -i + 1. The last position's output, which is never trained, is never used.
    Returns the n - 1 generated ids (B, n - 1); ``window`` itself is not modified. Any causal
    :class:`LanguageModel` that accepts L tokens (the transformers included) can be run this way.
    """
    B, L = window.shape
    if L != model.context_size:
        raise ValueError(
            f"window length {L} must equal the model's context_size {model.context_size}: left-pad "
            "the prompt to that length"
        )
    if not 2 <= n <= L:
        raise ValueError(f"n must lie in [2, {L}] (n - 1 tokens are generated), got {n}")
    was_training = model.training
    model.eval()
    tokens = window.clone()
    # "for i in range(50, 1, -1): ... out_token = torch.topk(output, dim=1, k=1).indices.flatten()[-i];
    #  tokens[..., -i+1] = out_token"
    for i in range(n, 1, -1):
        logits = model(tokens).logits  # (B, L, V)
        tokens[:, L - i + 1] = logits[:, L - i].argmax(dim=-1)
    model.train(was_training)
    return tokens[:, L - n + 1 :]  # (B, n - 1)


def token_weight_liveness(model: nn.Module) -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
    """For every token-mixing parameter (masked convs, with their biases): (kept by the causal mask, live).

    Live = can ever receive a nonzero gradient: kept by the mask and, in the expanded mixer, feeding a hidden
    channel that some output token reads. Both are boolean tensors of the parameter's shape.
    """
    out, done = {}, []
    for name, module in model.named_modules():
        if any(name.startswith(prefix + ".") for prefix in done) or not hasattr(module, "liveness"):
            continue
        done.append(name)
        out.update({f"{name}.{k}": v for k, v in module.liveness().items()})
    return out


def token_weight_census(model: nn.Module) -> dict[str, int]:
    """Counts of token-mixing scalars: total, live, zeroed by the mask, and kept by the mask but never read."""
    census = {"total": 0, "live": 0, "masked": 0, "unread": 0}
    for kept, live in token_weight_liveness(model).values():
        census["total"] += kept.numel()
        census["live"] += int(live.sum())
        census["masked"] += int((~kept).sum())
        census["unread"] += int((kept & ~live).sum())
    return census


__all__ = [
    "ExpandedTokenMix",
    "MaskedMixer",
    "MaskedTokenConv",
    "MixerBlock",
    "MixerConfig",
    "MultiHeadTokenMix",
    "ParallelTokenMix",
    "causal_mask",
    "fixed_window_generate",
    "token_mixer",
    "token_weight_census",
    "token_weight_liveness",
]
