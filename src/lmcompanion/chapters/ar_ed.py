"""The AR encoder–decoder chapter's analyses: its verdicts, built from the runs of its notebooks."""

from __future__ import annotations

from typing import Mapping, Sequence

from .. import experiments, tables
from ..verdicts import Verdict, below, between, fewer_parameters, have, in_notebook

CHAPTER = "ar_ed"
# claim, metric, better, worse, the notebook whose runs decide it
CLAIMS = [
    ("MSE embedding loss beats cosine dissimilarity in validation loss", "val", "ar_ed/mse", "ar_ed/cosine", "01_embedding_loss"),
    ("... but is worse in train loss", "train", "ar_ed/cosine", "ar_ed/mse", "01_embedding_loss"),
    ("MSE embedding loss beats no embedding loss (validation)", "val", "ar_ed/mse", "ar_ed/no_loss", "01_embedding_loss"),
    ("cosine embedding loss beats no embedding loss (validation)", "val", "ar_ed/cosine", "ar_ed/no_loss", "01_embedding_loss"),
    ("MSE embedding loss beats no embedding loss (train)", "train", "ar_ed/mse", "ar_ed/no_loss", "01_embedding_loss"),
    ("cosine embedding loss beats no embedding loss (train)", "train", "ar_ed/cosine", "ar_ed/no_loss", "01_embedding_loss"),
    ("positional subtraction improves train loss", "train", "ar_ed/pos_sub", "ar_ed/no_loss", "02_pos_sub"),
    ("positional subtraction improves validation loss", "val", "ar_ed/pos_sub", "ar_ed/no_loss", "02_pos_sub"),
    ("MSE loss + subtraction beats subtraction alone (validation)", "val", "ar_ed/mse_pos_sub", "ar_ed/pos_sub", "03_combined"),
    ("MSE loss + subtraction beats the MSE loss alone (validation)", "val", "ar_ed/mse_pos_sub", "ar_ed/mse", "03_combined"),
    ("the combined model beats the baseline in validation loss", "val", "ar_ed/mse_pos_sub", "ar_ed/baseline", "04_baselines"),
    ("... but the baseline is better in train loss", "train", "ar_ed/baseline", "ar_ed/mse_pos_sub", "04_baselines"),
    ("the combined model beats the smaller baseline (validation)", "val", "ar_ed/mse_pos_sub", "ar_ed/smaller_baseline", "04_baselines"),
    ("the combined model beats the 0.2 dropout baseline (validation)", "val", "ar_ed/mse_pos_sub", "ar_ed/dropout_baseline", "04_baselines"),
    ("even without embedding loss or subtraction, the encoder-decoder beats the baseline (validation)", "val",
     "ar_ed/no_loss", "ar_ed/baseline", "04_baselines"),
    ("beyond the write-up: subtraction improves a decoder-only model (validation)", "val", "ar_ed/baseline_pos_sub",
     "ar_ed/baseline", "05_decoder_pos_sub"),
    ("beyond the write-up: subtraction improves a decoder-only model (train)", "train", "ar_ed/baseline_pos_sub",
     "ar_ed/baseline", "05_decoder_pos_sub"),
]
# The headline claims (the write-up's conclusions), which get the most seeds at the cpu profile.
HEADLINE = ("ar_ed/mse_pos_sub", "ar_ed/baseline", "ar_ed/pos_sub", "ar_ed/no_loss")
COLLAPSE_BOUND = 1e-6  # the write-up's final embedding losses are 4-9e-9; we call a loss collapsed below this


def verdict_rows(runs: Mapping[str, Sequence]) -> list[Verdict]:
    """Every claim of the write-up, from the runs of every experiment of the chapter (name -> runs)."""
    rows = [in_notebook([between(text, metric, better, worse, runs)], f"{CHAPTER}/{nb}")[0]
            for text, metric, better, worse, nb in CLAIMS if have(runs, better, worse)]
    rows += in_notebook([fewer_parameters("the combined model has fewer parameters than the baseline (paper size)",
                                          "ar_ed/mse_pos_sub", "ar_ed/baseline")], f"{CHAPTER}/04_baselines")
    for name in [n for n in ("ar_ed/mse", "ar_ed/cosine", "ar_ed/mse_pos_sub") if have(runs, n)]:
        exp = experiments.get(name)
        rows += in_notebook([below(f"the embedding loss of '{exp.title}' ends near zero (below {COLLAPSE_BOUND:g})",
                                   f"{exp.published['aux']:.3e}",
                                   tables.last_train_metric(runs[name], "aux/embedding"), COLLAPSE_BOUND)],
                            f"{CHAPTER}/01_embedding_loss" if name != "ar_ed/mse_pos_sub" else f"{CHAPTER}/03_combined")
    return rows


__all__ = ["CHAPTER", "CLAIMS", "HEADLINE", "verdict_rows"]
