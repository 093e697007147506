"""What the DeepSight chapter computes besides training curves: the planning-target weights checked by hand (and
the code's other options beside the write-up's), the δ sweep's rank correlations, and the collapse of the planning
loss (when it falls, and the two LayerNorms whose gains and biases can make it vanish without any planning).
"""

from __future__ import annotations

from typing import Mapping, Sequence

import torch

from ... import experiments, stats, tables
from ...experiments.deepsight import DELTAS
from ...formats import number
from ...models.deepsight import planning_weights
from .rows import PLANNING, PRINTED, SWEEP

OPTIONS = (("DECAY", "EQUAL"), ("DECAY_W_NORMALIZE", "EQUAL"), ("AVG", "EQUAL"), ("DECAY", "CONTEXT_SIZE"))


# --- the planning target ----------------------------------------------------------------------------------------


def hand_check():
    """For T = 5 and δ = 2, target i (1-based) is (mean(E_1..E_i) + E_{i+1} + E_{i+2}/2) / 2: those fractions written
    out, beside the matrix the model uses. Returns (the model's matrix, the hand computation, whether they agree)."""
    by_hand = torch.tensor(
        [[1 / 2, 1 / 2, 1 / 4, 0, 0], [1 / 4, 1 / 4, 1 / 2, 1 / 4, 0], [1 / 6, 1 / 6, 1 / 6, 1 / 2, 1 / 4]]
    )
    model_w = planning_weights(5, 2)
    return model_w, by_hand, bool(torch.allclose(model_w, by_hand))


def option_panels(T: int = 27, delta: int = 11) -> list[dict]:
    """The weights of the write-up's setting and three of the code's other options, as heatmap panels."""
    return [
        {
            "matrix": planning_weights(T, delta, future, aggregation),
            "xlabel": "input t",
            "ylabel": "target i",
            "title": f"{future}\n{aggregation}",
        }
        for future, aggregation in OPTIONS
    ]


# --- the δ sweep ------------------------------------------------------------------------------------------------


def delta_correlations(runs: Mapping[str, Sequence]):
    """Spearman's rank correlation of δ with the seed-mean final loss, ours beside the write-up's (computed from its
    table the same way)."""
    import pandas as pd

    out = {}
    for split in ("train", "val"):
        published = [experiments.get(n).published[split] for n in SWEEP]
        ours = [stats.mean(tables.final(runs[n], split)) for n in SWEEP]
        out[split] = {
            "write-up": number(stats.spearman(DELTAS, published), sign="+"),
            "ours": number(stats.spearman(DELTAS, ours), sign="+"),
        }
    return pd.DataFrame(out).T.rename_axis("Spearman rank correlation of delta with the final loss")


# --- the collapse -----------------------------------------------------------------------------------------------


def _first_below(run, threshold: float) -> int | None:
    m = run.metrics().dropna(subset=["aux/planning"])
    hit = m[m["aux/planning"] < threshold]
    return int(hit["step"].iloc[0]) if len(hit) else None


def _layer_norms(run) -> tuple[float, float, float]:
    """Mean |gain| of the encoder-output LayerNorm and of the planning-context LayerNorm, and the mean |bias gap|."""
    model = run.load_model()
    pred, plan = model.encoder_out_ln, model.planning_context_ln_2
    gap = (pred.bias - plan.bias).abs().mean().item()
    return pred.weight.abs().mean().item(), plan.weight.abs().mean().item(), gap


def collapse_table(runs: Mapping[str, Sequence]):
    """Per run with a planning loss: its first and last logged value, when it fell below 1e-2 and 1e-4, and the two
    LayerNorms whose gains and biases can make it vanish without any planning."""
    import pandas as pd

    rows = []
    for label, rs in runs.items():
        for r in rs:
            first = r.metrics().dropna(subset=["aux/planning"])["aux/planning"].iloc[0]
            g_pred, g_plan, gap = _layer_norms(r)
            rows.append(
                {
                    "run": label,
                    "seed": r.seed,
                    "first logged": number(first),
                    "final": number(tables.last_train_metric([r], "aux/planning")[0]),
                    "step < 1e-2": _first_below(r, 1e-2),
                    "step < 1e-4": _first_below(r, 1e-4),
                    "mean |gain| encoder-out LN": number(g_pred),
                    "mean |gain| planning LN": number(g_plan),
                    "mean |bias gap|": number(gap),
                }
            )
    return pd.DataFrame(rows).set_index(["run", "seed"]).astype(object).fillna("not reached")


def collapse_sentence(runs: Mapping[str, Sequence]) -> str:
    """What the collapse page shows, computed from its runs: the final planning loss over every run with one (its
    median and range), beside the write-up's (the range of its tables), and how far the two LayerNorms' gains and
    bias gap moved from their initial values (gains 1, gap 0)."""
    import statistics

    runs_ = [r for rs in runs.values() for r in rs]
    finals = [tables.last_train_metric([r], "aux/planning")[0] for r in runs_]
    norms = [_layer_norms(r) for r in runs_]
    g_pred, g_plan, gap = (statistics.median(x[i] for x in norms) for i in range(3))
    pub = [experiments.get(n).published["aux"] for n in PLANNING]
    return (
        f"Over the {len(runs_)} runs with a planning loss, it ends at a median of "
        f"{number(statistics.median(finals))} "
        f"(from {number(min(finals))} to {number(max(finals))}), against the write-up's "
        f"{number(min(pub), PRINTED)} "
        f"to {number(max(pub), PRINTED)} (its tables). At the end the "
        f"mean |gain| of the encoder-output LayerNorm is {number(g_pred)} and of the planning LayerNorm "
        f"{number(g_plan)} (median over runs; 1 at initialization), and the mean |bias gap| "
        f"{number(gap)} (0 at initialization)."
    )


__all__ = ["OPTIONS", "collapse_sentence", "collapse_table", "delta_correlations", "hand_check", "option_panels"]
