"""Equal compute: each arm's validation curve against measured wall-clock and counted training FLOPs, the two
upsampling modes compared at equal compute (attention read where the repeat runs end, the gap at each of the repeat
runs' evaluations and its slope per tenfold FLOPs), and the experts read at the compute where the model without
experts ends.

Every function takes runs grouped by label or by experiment name and reads what a run recorded (its config,
evaluations and summary), so recorded runs from other machines work too.
"""

from __future__ import annotations

import math
from typing import Mapping, Sequence

import numpy as np

from ... import experiments, learning, stats, tables
from ...formats import si
from .rows import ANCHOR, REPEAT


# --- cost: wall-clock and counted FLOPs -------------------------------------------------------------------------


def cost_curves(runs: Mapping[str, Sequence]) -> dict[str, list]:
    """Each run's validation curve with two cost axes: ``minutes`` (update number times the arm's seed-mean
    training seconds per update, measured in this build) and ``FLOPs`` (update number times the tokens of an
    update times the model's counted training FLOPs per token)."""
    out = {}
    for label, rs in runs.items():
        cfg = rs[0].config
        sec = stats.mean([r.summary["train_time_s"] / r.summary["steps"] for r in rs])
        flops = cfg.flops_per_step()
        frames = []
        for r in rs:
            e = r.evals()[["step", "val"]].copy()
            e["minutes"] = e["step"] * sec / 60
            e["FLOPs"] = e["step"] * flops
            frames.append(e)
        out[label] = frames
    return out


def cost_table(runs: Mapping[str, Sequence]):
    """Per arm: final validation loss, updates, training minutes (measured) and training FLOPs (counted), and the
    write-up's minutes where it has them."""
    import pandas as pd

    rows = []
    for label, rs in runs.items():
        cfg = rs[0].config
        name = cfg.name
        flops = cfg.flops()
        pub = experiments.get(name).published
        rows.append(
            {
                "arm": label,
                "val (final)": stats.span(tables.final(rs, "val"), ".3f"),
                "updates": cfg.train.max_steps,
                "train minutes (ours)": stats.span([r.summary["train_time_s"] / 60 for r in rs], ".2f"),
                "train FLOPs (counted)": si(flops, "FLOP"),
                "write-up val": pub.get("val", ""),
                "write-up minutes": pub.get("minutes", ""),
            }
        )
    return pd.DataFrame(rows).set_index("arm")


# --- the two upsampling modes at equal compute ------------------------------------------------------------------
# "They have similar performance at the end of the repeat upsampling models trainings ... we still noticed that the
# attention version scales better with compute": the two modes' validation curves on one compute axis (counted
# training FLOPs: update number x the FLOPs of an update), the attention run read at the compute where the repeat run
# ends, and the gap between them at each of the repeat run's evaluations.


def _val_at_flops(run, flops: float) -> float:
    """The run's validation loss at ``flops`` training FLOPs, interpolated linearly between its evaluations (NaN before
    its first evaluation or after its last)."""
    e = run.evals()
    x = e["step"].to_numpy() * run.config.flops_per_step()
    if flops < x[0] or flops > x[-1]:
        return math.nan
    return float(np.interp(flops, x, e["val"].to_numpy()))


def mode_gaps(attn: Sequence, repeat: Sequence) -> list:
    """Per seed (attention seed i against repeat seed i: the same data order), one frame with the compute points
    (``FLOPs``: the repeat run's evaluations that the attention run spans) and, at each, both modes' validation loss
    and their ``gap`` = attention - repeat (negative where attention is ahead)."""
    import pandas as pd

    frames = []
    for a, r in zip(attn, repeat):
        e = r.evals()
        points = e["step"].to_numpy() * r.config.flops_per_step()
        at = [_val_at_flops(a, f) for f in points]
        f = pd.DataFrame({"FLOPs": points, "repeat": e["val"].to_numpy(), "attn": at}).dropna()
        f["gap"] = f["attn"] - f["repeat"]
        frames.append(f.reset_index(drop=True))
    return frames


def end_of_repeat(attn: Sequence, repeat: Sequence) -> tuple[list[float], list[float]]:
    """(attention's validation loss at the compute where each repeat run ends, the repeat runs' final validation loss),
    per seed: "similar performance at the end of the repeat upsampling models trainings"."""
    ends = [r.config.flops_per_step() * r.summary["steps"] for r in repeat]
    return [_val_at_flops(a, f) for a, f in zip(attn, ends)], tables.final(repeat, "val")


MIN_POINTS = 3  # compute points a trend is fitted on: fewer (the smoke profile's two evaluations) decide nothing


def gap_slopes(frames: Sequence) -> list[float]:
    """Per seed: the least-squares slope of the gap (attention - repeat) against log10 of the training FLOPs, in nats
    per tenfold compute; negative where attention pulls ahead as compute grows (NaN with fewer than
    :data:`MIN_POINTS` points)."""
    return [
        float(np.polyfit(np.log10(f["FLOPs"].to_numpy()), f["gap"].to_numpy(), 1)[0])
        if len(f) >= MIN_POINTS
        else math.nan
        for f in frames
    ]


def mode_table(runs: Mapping[str, Sequence], attn: str = ANCHOR, repeat: str = REPEAT):
    """The two modes side by side: each one's final validation loss, attention's at the compute where the repeat
    runs end, the gap at every compute point, and the gap's slope per decade of compute (per seed: mean [min, max])."""
    import pandas as pd

    a, r = runs[attn], runs[repeat]
    frames = mode_gaps(a, r)
    at_end, final = end_of_repeat(a, r)
    rows = {
        "attention, final": stats.span(tables.final(a, "val")),
        "repeat, final": stats.span(final),
        "attention at the repeat runs' final FLOPs": stats.span(at_end),
    }
    n = min(len(f) for f in frames)
    for k in range(n):
        flops = frames[0]["FLOPs"].iloc[k]
        rows[f"gap (attention - repeat) at {si(flops, 'FLOP')}"] = stats.span([f["gap"].iloc[k] for f in frames])
    rows["gap slope per tenfold FLOPs"] = stats.span(gap_slopes(frames))
    return pd.DataFrame({"validation loss (nats/char)": rows}).rename_axis("upsampling at equal compute")


def learned_points(frames: Sequence, attn: Sequence) -> list:
    """The frames of :func:`mode_gaps` cut to the compute points where both modes have learned at every seed (each
    seed's loss at least :data:`lmcompanion.learning.MARGIN` below the validation unigram loss)."""
    level = learning.reference(attn[0].config, "val").level
    n = min(len(f) for f in frames)
    keep = [
        k for k in range(n) if all(level - f[m].iloc[k] >= learning.MARGIN for f in frames for m in ("attn", "repeat"))
    ]
    return [f.iloc[keep].reset_index(drop=True) for f in frames]


# --- the experts at equal compute -------------------------------------------------------------------------------


def at_compute_of(runs: Sequence, reference: Sequence) -> list[float]:
    """Per seed (run i against reference run i, or the reference's first run where it has fewer): the validation
    loss of ``runs`` at the training FLOPs where the reference run ends (NaN where a run does not reach it)."""
    ends = [r.config.flops_per_step() * r.summary["steps"] for r in reference]
    return [_val_at_flops(r, ends[i] if i < len(ends) else ends[0]) for i, r in enumerate(runs)]


def experts_per_compute(runs: Mapping[str, Sequence], names: Sequence[str], base: str) -> tuple[list, dict]:
    """(the expert counts, {"final": per-seed values, "at the no-expert model's final FLOPs": ...}) of the arms
    ``names`` that have runs, in order: for plots.sweep."""
    have_ = [n for n in names if runs.get(n)]
    counts = [experiments.config(n, "paper", device="cpu").model.nb_soft_experts for n in have_]
    return counts, {
        "final": [tables.final(runs[n], "val") for n in have_],
        "at the no-expert model's final FLOPs": [at_compute_of(runs[n], runs[base]) for n in have_],
    }
