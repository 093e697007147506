"""The ledger of the AR encoder–decoder write-up: every claim it makes, in its order, with its own words, and the
verdict row that tests it or one line saying why nothing does. A claim names its row by the row's claim text
(:mod:`.rows`): a strictly-better or crossover row through ``_ROW`` (a KeyError here is a renamed row), the others
through their constants; the chapter module refuses a text that is not one of its rows and a row that no claim
names. ``tests/test_ledger.py`` checks that every row named here is shown, at the smoke profile, by one of the
chapter's notebooks.
"""

from __future__ import annotations

from ... import experiments
from ...ledger import Claim
from .rows import CHAPTER, COLLAPSING, CROSSOVERS, FEWER, MEMORY, SMALLER, SPECS, TIME, collapse_claim, printed

_C = CHAPTER
_ROW = {text: text for text, *_ in SPECS + CROSSOVERS}  # a claim's row, by its text (a KeyError: a renamed row)
_MOTIVATION = "motivation for the design, not a measured result; no experiment of the write-up tests it"


def _train_cells(better: str, worse: str) -> str:
    """A results table's train-loss cells, quoted as the write-up prints them (its first table, the two rows' names
    and train losses, from the experiments' titles and published numbers)."""
    a, b = experiments.get(better), experiments.get(worse)
    return f"{a.title} | {a.published['train']} ... {b.title} | {b.published['train']}"


def _table_cell(name: str) -> str:
    """A table row's name and its final embedding loss, quoted as the write-up prints them."""
    return f"{experiments.get(name).title} ... {printed(experiments.get(name).published['aux'])}"


# The write-up's claims, in its order: each names the verdict row that tests it (its claim text, exactly) or says in
# one line why none does.
_DESIGN = "a statement of the design, implemented as described (the landing page's model section)"
_UNMEASURED = "a mechanism the write-up states and does not measure; no run here logs the quantity it names"

CLAIMS = [
    Claim(
        _C,
        "Virtually all SOTA LLMs are decoder-only transformer models.",
        "introduction",
        reason="a description of other models, not a result of the write-up's runs",
    ),
    Claim(
        _C,
        "a new end-to-end auto-regressive encoder-decoder transformer is presented that outperforms, with fewer "
        "parameters, the canonical decoder-only transformer",
        "introduction",
        row=_ROW["the combined model beats the baseline in validation loss"],
    ),
    Claim(_C, "outperforms, with fewer parameters, the canonical decoder-only transformer", "introduction", row=FEWER),
    Claim(
        _C,
        "the earlier layers of a model focus more on general linguistic features (when applied to language), and "
        "the later layers focus more on task-specific features",
        "Motivations",
        reason=_MOTIVATION,
    ),
    Claim(
        _C,
        "In a decoder-only transformer, the model learns when to switch from understanding to predicting.",
        "Motivations",
        reason=_MOTIVATION,
    ),
    Claim(
        _C,
        "the encoder focuses more on understanding, and the decoder more on prediction",
        "Motivations",
        reason=_MOTIVATION,
    ),
    Claim(
        _C,
        "This, along with novel components described in sections that follow, beats – with fewer "
        "parameters – the baseline of a decoder-only transformer.",
        "Motivations",
        row=_ROW["the combined model beats the baseline in validation loss"],
    ),
    Claim(
        _C,
        'an additional "embedding" loss and a positional embedding operation demonstrate improved performance',
        "Architecture",
        reason="a summary of the results below, each tested by its own row",
    ),
    Claim(
        _C,
        "To make this work, the encoder's attention has to be causally masked.",
        "Encoder-Decoder",
        reason="a requirement of the design, implemented; the tests check that no future token leaks through the "
        "encoder, the bridge, the cross-attention or the decoder",
    ),
    Claim(
        _C,
        "For simplicity, the new architecture consists of an equal number of encoder and decoder layers.",
        "Encoder-Decoder",
        reason=_DESIGN,
    ),
    Claim(
        _C,
        "By subtracting positional embedding, the update frequency & magnitude of positional weights is increased.",
        "Positional embedding subtraction",
        reason=_UNMEASURED,
    ),
    Claim(
        _C,
        "By explicitly subtracting the positional embedding before the output layer, such burden should be "
        "lifted, and more compute can be spent elsewhere. Results validate this intuition below.",
        "Positional embedding subtraction",
        row=_ROW["positional subtraction improves validation loss"],
    ),
    Claim(
        _C,
        "this should improve latent separation between token and positional embedding (i.e. more contrastive learning)",
        "Positional embedding subtraction",
        reason="a mechanism the write-up proposes and does not measure; the chapter measures the losses it predicts",
    ),
    Claim(
        _C,
        "Weight tying increases update frequency & magnitude of embedding weights, which then better compresses "
        "the entire forward pass into embedding weights.",
        "Embedding loss",
        reason=_UNMEASURED,
    ),
    Claim(
        _C,
        "Ultimately, this permits hidden layers to compute more complex representations.",
        "Embedding loss",
        reason=_MOTIVATION,
    ),
    Claim(
        _C,
        "it is reasonable to expect some affinity between the encoder output and a more direct aggregation of "
        "the model input embeddings",
        "Embedding loss",
        reason="the premise of the embedding loss; the rows on its final value measure how close the two come",
    ),
    Claim(
        _C,
        "the LayerNorm normalization of E before the averaging does allow the model to learn a non-uniform "
        "aggregation of E",
        "Embedding loss",
        reason="a property of the design the write-up argues for and does not measure; the loss is implemented as "
        "written",
    ),
    Claim(
        _C,
        "Note that $out_{enc}$ is detached because embedding loss is only interested in updating embedding weights.",
        "Embedding loss",
        reason="a statement of the design, implemented; the tests check that a detached embedding loss trains only "
        "the embeddings and its two LayerNorms",
    ),
    Claim(
        _C,
        "All training runs below were done on a wikipedia dataset for 9k steps on a single A100 GPU, unless "
        "otherwise stated.",
        "Results",
        reason="a protocol statement, followed at the paper profile (its steps; the text is not published, so "
        "English Wikipedia stands in for it)",
    ),
    Claim(
        _C,
        "The MSE embedding loss performed better than cosine dissimilarity in validation loss but worse in train loss.",
        "Results",
        row=_ROW["MSE embedding loss beats cosine dissimilarity in validation loss but is worse in train loss"],
    ),
    Claim(
        _C,
        "Both types of embedding loss performed better than an equivalent model without embedding loss.",
        "Results",
        row=_ROW["MSE embedding loss beats no embedding loss (validation)"],
    ),
    Claim(
        _C,
        "Both types of embedding loss performed better than an equivalent model without embedding loss.",
        "Results",
        row=_ROW["cosine embedding loss beats no embedding loss (validation)"],
    ),
    *[
        Claim(
            _C,
            _train_cells(n, "ar_ed/no_loss"),
            "Results (the first table: the rows' train losses)",
            row=_ROW[f"{'MSE' if n == 'ar_ed/mse' else 'cosine'} embedding loss beats no embedding loss (train)"],
        )
        for n in ("ar_ed/mse", "ar_ed/cosine")
    ],
    *[
        Claim(_C, _table_cell(n), "Results (the tables: the row's embedding loss)", row=collapse_claim(n))
        for n in COLLAPSING
    ],
    Claim(
        _C,
        "Adding the positional embedding subtraction strictly improved performance.",
        "Results",
        row=_ROW["positional subtraction improves train loss"],
    ),
    Claim(
        _C,
        "Adding the positional embedding subtraction strictly improved performance.",
        "Results",
        row=_ROW["positional subtraction improves validation loss"],
    ),
    Claim(
        _C,
        "Combining both MSE embedding loss and positional embedding subtraction further improved validation loss.",
        "Results",
        row=_ROW["MSE loss + subtraction beats subtraction alone (validation)"],
    ),
    Claim(
        _C,
        "Combining both MSE embedding loss and positional embedding subtraction further improved validation loss.",
        "Results",
        row=_ROW["MSE loss + subtraction beats the MSE loss alone (validation)"],
    ),
    Claim(
        _C,
        "the new model outperformed the baseline in validation loss but underperformed in train loss",
        "Results",
        row=_ROW["the combined model beats the baseline in validation loss but is worse in train loss"],
    ),
    Claim(_C, "Both completed in a similar amount of time", "Results", row=TIME),
    Claim(_C, "with similar memory demands", "Results", row=MEMORY),
    Claim(_C, "but the baseline had more parameters", "Results", row=FEWER),
    Claim(
        _C,
        '"smaller baseline" was a baseline smaller (i.e. fewer parameters) than "with MSE embedding loss and pos sub"',
        "Results",
        row=SMALLER,
    ),
    Claim(
        _C,
        "Usually, smaller models perform better in validation loss because they overfit less",
        "Results",
        reason="general background the write-up cites, not a result of its runs",
    ),
    Claim(
        _C,
        "By also outperforming \"smaller baseline\", then the new model's better validation loss can't be "
        "attributed to any size explanation.",
        "Results",
        row=_ROW["the combined model beats the smaller baseline (validation)"],
    ),
    Claim(
        _C,
        "By outperforming it, the new model also demonstrated its superiority over dropout.",
        "Results",
        row=_ROW["the combined model beats the 0.2 dropout baseline (validation)"],
    ),
    Claim(
        _C,
        "dropout is known to improve validation loss",
        "Next steps",
        reason="general background the write-up cites, not a result of its runs",
    ),
    Claim(
        _C,
        "but it was not used here for simplicity, except in the baseline",
        "Next steps",
        reason="a statement of the settings: the appendix gives dropout 0.2 only to its 0.2 dropout baseline (its "
        "baseline has 0), and the book's configs are the appendix's",
    ),
    Claim(
        _C,
        "Even the bare-bones no embedding loss and no pos sub outperformed the baseline in validation loss with "
        "fewer parameters.",
        "Conclusions",
        row=_ROW["even without embedding loss or subtraction, the encoder-decoder beats the baseline (validation)"],
    ),
    Claim(
        _C,
        "This probably means that cross-attention on encoder output is sufficient for better performance (or at "
        "least prevents overfitting).",
        "Conclusions",
        reason="an interpretation of the previous result, which has its row; no experiment separates the two readings",
    ),
    Claim(
        _C,
        "When coupled with embedding loss and positional embedding subtraction, performance improved even more.",
        "Conclusions",
        row=_ROW["MSE loss + subtraction beats the bare encoder-decoder, without either (validation)"],
    ),
    Claim(
        _C,
        "positional embedding subtraction should work even for decoder-only transformers, and experiments should "
        "validate this",
        "Conclusions",
        row=_ROW["beyond the write-up: subtraction improves a decoder-only model (validation)"],
    ),
    Claim(
        _C,
        "positional embedding subtraction should work even for decoder-only transformers, and experiments should "
        "validate this",
        "Conclusions",
        row=_ROW["beyond the write-up: subtraction improves a decoder-only model (train)"],
    ),
]


__all__ = ["CHAPTER", "CLAIMS"]
