"""What every model gives the trainer, and the helpers all language models share.

The trainer knows nothing about a model except this contract: ``model(**batch)`` returns a
:class:`ModelOutput` whose ``loss`` is the objective to minimise. In training mode that objective includes any
auxiliary terms a write-up adds (embedding loss, planning loss), already multiplied by their coefficients;
``aux`` holds each auxiliary loss *unscaled*, by name, for logging. In eval mode the loss is the plain
cross-entropy, as in the write-ups' estimates.
"""

from __future__ import annotations

import functools
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


class Model(nn.Module):
    """The one interface every model family gives the trainer, the bench and the notebooks.

    - ``context_size``: the longest input the model reads (tokens per sequence);
    - ``num_params()``: the parameter count as the family's write-up counts it;
    - ``flops_per_token()``: training (forward + backward) FLOPs per token, *counted* by
      ``torch.utils.flop_counter`` on a meta-device copy (no memory, no time), so every family is measured the
      same way; ``training=False`` counts the forward pass alone (inference);
    - ``example_batch(batch_size)``: a batch of the shapes the model trains on (zeros), for counting and benching.
    """

    config: object

    @property
    def context_size(self) -> int:
        return self.config.context_size

    def positional_parameters(self) -> list[nn.Parameter]:
        """Parameters the write-up leaves out of its counts (e.g. learned position tables)."""
        return []

    def num_params(self, exclude_positional: bool = True) -> int:
        """Parameter count; by default as the write-ups count it: positional tables excluded, tied matrix once."""
        total = count_params(self.parameters())
        if exclude_positional:
            total -= count_params(self.positional_parameters())
        return total

    def example_batch(self, batch_size: int = 1, device: str | torch.device | None = None) -> dict[str, torch.Tensor]:
        raise NotImplementedError

    def flops_per_token(self, training: bool = True) -> float:
        return counted_flops_per_token(self.config, type(self), training)


@functools.lru_cache(maxsize=4096)
def counted_flops_per_token(config, model_cls: type, training: bool = True) -> float:
    """FLOPs of one forward (+ backward when ``training``) pass over ``example_batch(1)``, per target token.

    Matrix products and attention are counted (``FlopCounterMode``); elementwise work is not, as in the usual
    6N + 12LTC estimate, which this count reproduces for a transformer.
    """
    from torch.utils.flop_counter import FlopCounterMode

    with torch.device("meta"):
        model = model_cls(config)
    batch = model.example_batch(1, device="meta")
    model.train(training)
    counter = FlopCounterMode(display=False)
    with counter:
        if training:
            model(**batch).loss.backward()
        else:
            with torch.no_grad():
                model(**batch)
    tokens = batch["targets"].numel() if "targets" in batch else next(iter(batch.values())).numel()
    return counter.get_total_flops() / tokens


class LanguageModel(Model):
    """Base for decoder-style language models: ``forward(idx, targets=None)`` over (B, T) token ids, and sampling."""

    def example_batch(self, batch_size: int = 1, device: str | torch.device | None = None) -> dict[str, torch.Tensor]:
        shape = (batch_size, self.context_size)
        return {
            "idx": torch.zeros(shape, dtype=torch.long, device=device),
            "targets": torch.zeros(shape, dtype=torch.long, device=device),
        }

    @torch.no_grad()
    def generate(
        self,
        idx: torch.Tensor,
        max_new_tokens: int,
        temperature: float = 1.0,
        top_k: int | None = None,
        generator: torch.Generator | None = None,
    ) -> torch.Tensor:
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
