"""The DeepSight chapter's analyses: the planning-target weights checked by hand, the δ sweep's rank correlations,
the collapse of the planning loss, and the chapter's verdicts."""

from __future__ import annotations

from typing import Mapping, Sequence

import torch

from .. import experiments, stats, tables
from ..experiments.deepsight import DELTAS
from ..models.deepsight import planning_weights
from ..verdicts import Verdict, below, between, fewer_parameters, have, in_notebook, no_trend, trend

CHAPTER = "deepsight"
SWEEP = tuple(f"deepsight/mse_d{d}" for d in DELTAS)
PLANNING = SWEEP + ("deepsight/cosine_d11",)  # every run with a planning loss
HEADLINE = ("deepsight/mse_d11", "deepsight/no_loss", "deepsight/baseline")
COLLAPSE_BOUND = 1e-6  # the write-up's final planning losses are about 5e-9; we call a loss collapsed below this
OPTIONS = (("DECAY", "EQUAL"), ("DECAY_W_NORMALIZE", "EQUAL"), ("AVG", "EQUAL"), ("DECAY", "CONTEXT_SIZE"))


# --- the planning target ----------------------------------------------------------------------------------------


def hand_check():
    """For T = 5 and δ = 2, target i (1-based) is (mean(E_1..E_i) + E_{i+1} + E_{i+2}/2) / 2: those fractions written
    out, beside the matrix the model uses. Returns (the model's matrix, the hand computation, whether they agree)."""
    by_hand = torch.tensor([[1 / 2, 1 / 2, 1 / 4, 0, 0], [1 / 4, 1 / 4, 1 / 2, 1 / 4, 0],
                            [1 / 6, 1 / 6, 1 / 6, 1 / 2, 1 / 4]])
    model_w = planning_weights(5, 2)
    return model_w, by_hand, bool(torch.allclose(model_w, by_hand))


def option_panels(T: int = 27, delta: int = 11) -> list[dict]:
    """The weights of the write-up's setting and three of the code's other options, as heatmap panels."""
    return [{"matrix": planning_weights(T, delta, future, aggregation), "xlabel": "input t", "ylabel": "target i",
             "title": f"{future}\n{aggregation}"} for future, aggregation in OPTIONS]


# --- the δ sweep ------------------------------------------------------------------------------------------------


def delta_correlations(runs: Mapping[str, Sequence]):
    """Spearman's rank correlation of δ with the seed-mean final loss, ours beside the write-up's (computed from its
    table the same way)."""
    import pandas as pd

    out = {}
    for split in ("train", "val"):
        published = [experiments.get(n).published[split] for n in SWEEP]
        ours = [stats.mean(tables.final(runs[n], split)) for n in SWEEP]
        out[split] = {"write-up": f"{stats.spearman(DELTAS, published):+.2f}", "ours": f"{stats.spearman(DELTAS, ours):+.2f}"}
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
            rows.append({"run": label, "seed": r.seed, "first logged": f"{first:.3g}",
                         "final": f"{tables.last_train_metric([r], 'aux/planning')[0]:.3g}",
                         "step < 1e-2": _first_below(r, 1e-2), "step < 1e-4": _first_below(r, 1e-4),
                         "mean |gain| encoder-out LN": f"{g_pred:.3g}", "mean |gain| planning LN": f"{g_plan:.3g}",
                         "mean |bias gap|": f"{gap:.3g}"})
    return pd.DataFrame(rows).set_index(["run", "seed"]).astype(object).fillna("not reached")


# --- verdicts ---------------------------------------------------------------------------------------------------

CLAIMS = [
    ("MSE planning loss beats cosine (validation)", "val", "deepsight/mse_d11", "deepsight/cosine_d11", "02_loss_types"),
    ("MSE planning loss beats cosine (train)", "train", "deepsight/mse_d11", "deepsight/cosine_d11", "02_loss_types"),
    ("MSE planning loss beats no planning loss (validation)", "val", "deepsight/mse_d11", "deepsight/no_loss", "02_loss_types"),
    ("MSE planning loss beats no planning loss (train)", "train", "deepsight/mse_d11", "deepsight/no_loss", "02_loss_types"),
    ("cosine planning loss beats no planning loss (train)", "train", "deepsight/cosine_d11", "deepsight/no_loss", "02_loss_types"),
    ("... and is slightly worse in validation loss", "val", "deepsight/no_loss", "deepsight/cosine_d11", "02_loss_types"),
    ("DeepSight beats the baseline in validation loss", "val", "deepsight/mse_d11", "deepsight/baseline", "04_baseline"),
    ("DeepSight beats the baseline in train loss", "train", "deepsight/mse_d11", "deepsight/baseline", "04_baseline"),
]


def verdict_rows(runs: Mapping[str, Sequence]) -> list[Verdict]:
    """Every claim of the write-up, from the runs of every experiment of the chapter (name -> runs)."""
    rows = [in_notebook([between(text, metric, better, worse, runs)], f"{CHAPTER}/{nb}")[0]
            for text, metric, better, worse, nb in CLAIMS if have(runs, better, worse)]
    pub = {n: experiments.get(n).published for n in SWEEP}
    final = {split: [tables.final(runs[n], split) for n in SWEEP] for split in ("train", "val")} if have(runs, *SWEEP) else None
    rows += [] if final is None else in_notebook([
        trend("a larger future context gives a better train loss", "train losses " + ", ".join(
              f"{pub[n]['train']}" for n in SWEEP) + f" (rho {stats.spearman(DELTAS, [pub[n]['train'] for n in SWEEP]):+.2f})",
              DELTAS, final["train"], direction="down"),
        no_trend("validation loss is not very correlated with delta",
                 f"Spearman rho {stats.spearman(DELTAS, [pub[n]['val'] for n in SWEEP]):+.2f}", DELTAS, final["val"]),
    ], f"{CHAPTER}/03_future_context")
    rows += in_notebook([fewer_parameters("DeepSight has fewer parameters than the baseline (paper size)",
                                          "deepsight/mse_d11", "deepsight/baseline")], f"{CHAPTER}/04_baseline")
    for name in [n for n in PLANNING if have(runs, n)]:
        exp = experiments.get(name)
        rows += in_notebook([below(f"the planning loss of '{exp.title}' ends near zero (below {COLLAPSE_BOUND:g})",
                                   f"{exp.published['aux']:.3e}", tables.last_train_metric(runs[name], "aux/planning"),
                                   COLLAPSE_BOUND)], f"{CHAPTER}/05_collapse")
    return rows


__all__ = ["CHAPTER", "CLAIMS", "COLLAPSE_BOUND", "HEADLINE", "OPTIONS", "PLANNING", "SWEEP", "collapse_table",
           "delta_correlations", "hand_check", "option_panels", "verdict_rows"]
