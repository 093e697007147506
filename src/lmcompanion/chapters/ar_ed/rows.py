"""The rows of the AR encoder–decoder chapter's verdict table, as data: each claim of the write-up that a row tests,
in the write-up's words (or the book's, for its own claims beyond the write-up, :data:`BEYOND`), with the arms that
decide it and the notebook whose runs decide it, the cost claims and the arms timed side by side for them, and the
bound below which an embedding loss is called collapsed. How each row is decided is in the chapter module; which
claim of the write-up each row tests, or why a claim has no row, is in :mod:`.claims` (the ledger).
"""

from __future__ import annotations

from ... import experiments
from .. import cost

CHAPTER = "ar_ed"

# The strictly-better claims (the form: lmcompanion.chapters.verdict_forms), each
# (claim, metric, better, worse, the notebook whose runs decide it).
SPECS = [
    (
        "MSE embedding loss beats no embedding loss (validation)",
        "val",
        "ar_ed/mse",
        "ar_ed/no_loss",
        "01_embedding_loss",
    ),
    (
        "cosine embedding loss beats no embedding loss (validation)",
        "val",
        "ar_ed/cosine",
        "ar_ed/no_loss",
        "01_embedding_loss",
    ),
    ("MSE embedding loss beats no embedding loss (train)", "train", "ar_ed/mse", "ar_ed/no_loss", "01_embedding_loss"),
    (
        "cosine embedding loss beats no embedding loss (train)",
        "train",
        "ar_ed/cosine",
        "ar_ed/no_loss",
        "01_embedding_loss",
    ),
    ("positional subtraction improves train loss", "train", "ar_ed/pos_sub", "ar_ed/no_loss", "02_pos_sub"),
    ("positional subtraction improves validation loss", "val", "ar_ed/pos_sub", "ar_ed/no_loss", "02_pos_sub"),
    (
        "MSE loss + subtraction beats subtraction alone (validation)",
        "val",
        "ar_ed/mse_pos_sub",
        "ar_ed/pos_sub",
        "03_combined",
    ),
    (
        "MSE loss + subtraction beats the MSE loss alone (validation)",
        "val",
        "ar_ed/mse_pos_sub",
        "ar_ed/mse",
        "03_combined",
    ),
    (
        "MSE loss + subtraction beats the bare encoder-decoder, without either (validation)",
        "val",
        "ar_ed/mse_pos_sub",
        "ar_ed/no_loss",
        "03_combined",
    ),
    (
        "the combined model beats the baseline in validation loss",
        "val",
        "ar_ed/mse_pos_sub",
        "ar_ed/baseline",
        "04_baselines",
    ),
    (
        "the combined model beats the smaller baseline (validation)",
        "val",
        "ar_ed/mse_pos_sub",
        "ar_ed/smaller_baseline",
        "04_baselines",
    ),
    (
        "the combined model beats the 0.2 dropout baseline (validation)",
        "val",
        "ar_ed/mse_pos_sub",
        "ar_ed/dropout_baseline",
        "04_baselines",
    ),
    (
        "even without embedding loss or subtraction, the encoder-decoder beats the baseline (validation)",
        "val",
        "ar_ed/no_loss",
        "ar_ed/baseline",
        "04_baselines",
    ),
    (
        "beyond the write-up: subtraction improves a decoder-only model (validation)",
        "val",
        "ar_ed/baseline_pos_sub",
        "ar_ed/baseline",
        "05_decoder_pos_sub",
    ),
    (
        "beyond the write-up: subtraction improves a decoder-only model (train)",
        "train",
        "ar_ed/baseline_pos_sub",
        "ar_ed/baseline",
        "05_decoder_pos_sub",
    ),
]
# The crossovers: "better in validation loss but worse in train loss", each one row with both parts (the crossover
# form: lmcompanion.chapters.verdict_forms), not decided where the runs see their data less than once.
# (claim, (metric, better, worse) of each part, notebook)
CROSSOVERS = [
    (
        "MSE embedding loss beats cosine dissimilarity in validation loss but is worse in train loss",
        ("val", "ar_ed/mse", "ar_ed/cosine"),
        ("train", "ar_ed/cosine", "ar_ed/mse"),
        "01_embedding_loss",
    ),
    (
        "the combined model beats the baseline in validation loss but is worse in train loss",
        ("val", "ar_ed/mse_pos_sub", "ar_ed/baseline"),
        ("train", "ar_ed/baseline", "ar_ed/mse_pos_sub"),
        "04_baselines",
    ),
]
BEYOND = "beyond the write-up:"  # the book's own claims (the write-up's conclusions ask for them) start so
COLLAPSE_BOUND = 1e-6  # the write-up's final embedding losses are 4-9e-9; we call a loss collapsed below this
PRINTED = 4  # significant digits of the write-up's final embedding losses (4.138e-9: 4.138×10⁻⁹ here)
COLLAPSING = ("ar_ed/mse", "ar_ed/cosine", "ar_ed/mse_pos_sub")  # the runs with an embedding loss

# The cost claims: "Both completed in a similar amount of time with similar memory demands, but the baseline had more
# parameters" (the combined model against the baseline). Timed side by side in the verdict notebook.
TIMED = ("ar_ed/mse_pos_sub", "ar_ed/baseline")
FEWER = "the combined model has fewer parameters than the baseline (paper size)"
SMALLER = "the smaller baseline has fewer parameters than the combined model (paper size)"
TIME = cost.time_claim("the combined model")
MEMORY = cost.memory_claim("the combined model")


def collapse_claim(name: str) -> str:
    return f"the embedding loss of '{experiments.get(name).title}' ends near zero (below {COLLAPSE_BOUND:g})"


def printed(x: float) -> str:
    """A final embedding or planning loss as the write-up's tables print it (4.138e-9: four digits, the exponent
    without its leading zero)."""
    mantissa, exponent = f"{x:.{PRINTED - 1}e}".split("e")
    return f"{mantissa}e{int(exponent)}"


__all__ = [
    "BEYOND",
    "CHAPTER",
    "COLLAPSE_BOUND",
    "COLLAPSING",
    "CROSSOVERS",
    "FEWER",
    "MEMORY",
    "PRINTED",
    "SMALLER",
    "SPECS",
    "TIME",
    "TIMED",
    "collapse_claim",
    "printed",
]
