"""Learning-rate schedules, as functions of the 0-based optimizer step.

- ``cosine``: the write-ups' code (nanoGPT's schedule with ``s = step + 1``): linear warmup ``lr * s / warmup``
  while ``s < warmup``, then a half cosine from ``lr`` to ``min_lr`` reached at ``s = decay_steps``, then
  ``min_lr``. The AR encoder-decoder runs use decay_steps = 700,000 over 9,000 steps, so after warmup their
  learning rate is nearly constant (8.997e-4 at the last step).
- ``linear``: Hugging Face's ``get_linear_schedule_with_warmup``: ``lr * step / warmup`` during warmup, then a
  linear decay that reaches 0 at ``decay_steps``.
- ``linear_floor``: the efficient-transformer README's "linear schedule ... for which we warmup for 50% of the
  dataset and decay until 85%" to "a final lr of 10%": ``lr * step / warmup`` during warmup (as ``linear``), then a
  linear decay from ``lr`` to ``min_lr`` reached at ``decay_steps``, then ``min_lr``.
- ``constant``: linear warmup (as ``cosine``), then ``lr``.
"""

from __future__ import annotations

import math


def lr_at(step: int, cfg) -> float:
    lr, warmup = cfg.lr, cfg.warmup_steps
    decay = cfg.decay_steps if cfg.decay_steps is not None else cfg.max_steps
    if cfg.schedule in ("linear", "linear_floor"):
        if step < warmup:
            return lr * step / warmup
        floor = cfg.min_lr if cfg.schedule == "linear_floor" else 0.0
        return floor + (lr - floor) * max(0.0, (decay - step) / max(1, decay - warmup))
    s = step + 1
    if s < warmup:
        return lr * s / warmup
    if cfg.schedule == "constant":
        return lr
    if s > decay:
        return cfg.min_lr
    ratio = (s - warmup) / max(1, decay - warmup)  # a run no longer than its warmup never decays
    return cfg.min_lr + 0.5 * (1.0 + math.cos(math.pi * ratio)) * (lr - cfg.min_lr)
