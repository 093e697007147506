"""Facts of the efficient hierarchical transformer write-up that are computed or quoted, not trained: the FLOPs per
token of its models at its sizes (counted by running each once under PyTorch's FLOP counter), the inference FLOPs
they save against the vanilla transformer, the unigram loss every comparison of trained arms is gated on, and where
each of its published numbers comes from (read off the original repository's plots: the write-up prints none).
"""

from __future__ import annotations

import functools
from typing import Mapping, Sequence

from ... import data, experiments, models
from ...experiments import hourglass as ex
from ...formats import number, si
from .rows import VANILLA


# --- where the write-up's numbers come from ---------------------------------------------------------------------


def sources_table(names: Sequence[str]):
    """Where each published loss and minute of ``names`` comes from: the write-up prints none, so each was read off
    a plot of the original repository (:data:`lmcompanion.experiments.hourglass.SOURCES`); one row per experiment
    that has such a number, with the plot's file."""
    import pandas as pd

    rows = [
        {
            "arm": experiments.get(n).title,
            "write-up numbers": ", ".join(
                f"{k} {experiments.get(n).published[k]}" for k in ex.PLOTTED if k in experiments.get(n).published
            ),
            "read off (by its pixels, about ±0.02)": ex.PLOTS + ex.SOURCES[n],
        }
        for n in dict.fromkeys(names)
        if n in ex.SOURCES
    ]
    if not rows:
        return pd.DataFrame({"note": ["no arm of this page has a published loss"]})
    return pd.DataFrame(rows).set_index("arm")


def sources_note() -> str:
    """The sentence under :func:`sources_table`: the repository and commit the plots are read from."""
    return (
        f"Every file is under `{ex.PLOTS}` in {ex.ORIGINAL} at commit {ex.PLOTS_COMMIT} (the README's commit; the "
        f"same files at the head, {ex.HEAD_COMMIT}). The write-up prints no loss: these numbers are read off the "
        "end of each curve (two epochs; one for the vanilla transformer), and the minutes off the wall-clock axis "
        "of best_models.png (unspecified Colab hardware). Parameter counts are the write-up's text."
    )


# --- counted FLOPs ----------------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=128)
def counted_flops(name: str, training: bool, profile: str = "paper") -> float:
    """FLOPs per token of experiment ``name``'s model at ``profile`` (the write-up's sizes by default), counted by
    running it once under PyTorch's FLOP counter: a training step's (forward and backward) or the forward pass's."""
    return models.flops_per_token(experiments.config(name, profile, device="cpu").model, training)


def inference_flops(names: Sequence[str], baseline: str = VANILLA, profile: str = "paper") -> dict[str, tuple]:
    """Counted forward FLOPs per token at ``profile`` (the write-up's sizes by default): name -> (FLOPs per token,
    fraction saved against ``baseline``)."""
    per = {n: counted_flops(n, False, profile) for n in dict.fromkeys([baseline, *names])}
    return {n: (f, 1 - f / per[baseline]) for n, f in per.items()}


def inference_table(names: Sequence[str], profile: str = "paper"):
    """Per arm, counted at ``profile`` (the write-up's sizes by default): forward FLOPs per token and the share of
    the vanilla transformer's it saves, and training FLOPs per token against the vanilla transformer's."""
    import pandas as pd

    train = {n: counted_flops(n, True, profile) for n in dict.fromkeys([VANILLA, *names])}
    rows = [
        {
            "arm": experiments.get(n).title,
            "forward FLOPs per token": si(f, "FLOP"),
            "inference FLOPs saved against the vanilla transformer": f"{number(100 * saved)}%",
            "training FLOPs per token": si(train[n], "FLOP"),
            "training FLOPs / the vanilla transformer's": number(train[n] / train[VANILLA]),
        }
        for n, (f, saved) in inference_flops(names, profile=profile).items()
    ]
    return pd.DataFrame(rows).set_index("arm")


# --- the unigram loss -------------------------------------------------------------------------------------------


def unigram_reference(runs: Mapping[str, Sequence]) -> tuple[str, float]:
    """(label, loss) of the unigram model on the validation split of these runs' data, for plots.loss_curves."""
    first = next(rs[0] for rs in runs.values() if rs)
    return "unigram loss", data.unigram_loss(first.config)
