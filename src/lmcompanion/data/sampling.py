"""Deterministic seeds for batch sampling: the batches of step ``s`` are a pure function of (seed, s), so a resumed
run, or a step split over DDP processes, draws exactly the same examples."""

from __future__ import annotations


def mix_seed(*ints: int) -> int:
    """A deterministic 63-bit seed from several integers (no Python hash randomization)."""
    h = 0x9E3779B97F4A7C15
    for i in ints:
        h = (h ^ (int(i) + 0x9E3779B97F4A7C15 + (h << 6) + (h >> 2))) & 0x7FFFFFFFFFFFFFFF
    return h
