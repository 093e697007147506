"""What every model gives the trainer, and the helpers all language models share.

The trainer knows nothing about a model except this contract: ``model(**batch)`` returns a
:class:`ModelOutput` whose ``loss`` is the objective to minimise. In training mode that objective includes any
auxiliary terms a write-up adds (embedding loss, planning loss), already multiplied by their coefficients;
``aux`` holds each auxiliary loss *unscaled*, by name, for logging. In eval mode the loss is the plain
cross-entropy, as in the write-ups' estimates.
"""

from __future__ import annotations

from typing import NamedTuple

import torch
import torch.nn as nn
import torch.nn.functional as F


class ModelOutput(NamedTuple):
    logits: torch.Tensor  # (B, T, V)
    loss: torch.Tensor | None = None  # the objective (scalar); None without targets
    aux: dict[str, torch.Tensor] | None = None  # unscaled auxiliary losses, by name


def cross_entropy(logits: torch.Tensor, targets: torch.Tensor, ignore_index: int = -100) -> torch.Tensor:
    """Mean next-token cross-entropy over every (batch, position); ``ignore_index`` targets are skipped."""
    return F.cross_entropy(logits.reshape(-1, logits.size(-1)).float(), targets.reshape(-1), ignore_index=ignore_index)


def count_params(params) -> int:
    """Number of scalars in distinct tensors (a tied matrix counts once)."""
    seen, total = set(), 0
    for p in params:
        if id(p) not in seen:
            seen.add(id(p))
            total += p.numel()
    return total


class LanguageModel(nn.Module):
    """Base for decoder-style language models: parameter counting as the write-ups count, and sampling."""

    config: object

    def positional_parameters(self) -> list[nn.Parameter]:
        """Parameters the write-ups leave out of their counts (learned position tables)."""
        return []

    def num_params(self, exclude_positional: bool = True) -> int:
        """Parameter count; by default as the write-ups count it: position embeddings excluded, tied matrix once."""
        total = count_params(self.parameters())
        if exclude_positional:
            total -= count_params(self.positional_parameters())
        return total

    @torch.no_grad()
    def generate(self, idx: torch.Tensor, max_new_tokens: int, temperature: float = 1.0, top_k: int | None = None,
                 generator: torch.Generator | None = None) -> torch.Tensor:
        """Append ``max_new_tokens`` sampled tokens to ``idx`` (B, T); the context is cropped to context_size.

        temperature 0 picks the most likely token; top_k keeps only the k most likely before sampling.
        """
        if temperature < 0:
            raise ValueError(f"temperature must be >= 0, got {temperature}")
        was_training = self.training
        self.eval()
        T_max = self.config.context_size
        for _ in range(max_new_tokens):
            logits = self(idx[:, -T_max:]).logits[:, -1, :].float()  # (B, V)
            if temperature == 0:
                nxt = logits.argmax(dim=-1, keepdim=True)
            else:
                logits = logits / temperature
                if top_k is not None:
                    kth = torch.topk(logits, min(top_k, logits.size(-1))).values[:, [-1]]
                    logits = logits.masked_fill(logits < kth, float("-inf"))
                nxt = torch.multinomial(F.softmax(logits, dim=-1), 1, generator=generator)
            idx = torch.cat([idx, nxt], dim=1)
        self.train(was_training)
        return idx

    def flops_per_token(self) -> float:
        """Training FLOPs per token (forward + backward), PaLM-style estimate: 6N + 12 * L * T * C.

        Used only by the benchmarks for model FLOPs utilisation (MFU); families override ``_flop_shape``.
        """
        n_layer, n_embed = self._flop_shape()
        return 6 * self.num_params(exclude_positional=True) + 12 * n_layer * self.config.context_size * n_embed

    def _flop_shape(self) -> tuple[int, int]:
        cfg = self.config
        return cfg.n_layer, cfg.n_embed
