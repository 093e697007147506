"""The ledger of the DeepSight write-up: every claim it makes, in its order, with its own words, and the verdict row
that tests it or one line saying why nothing does. A claim names its row by the row's claim text (:mod:`.rows`): a
strictly-better row through ``_ROW`` (a KeyError here is a renamed row), the others through their constants; the
chapter module refuses a text that is not one of its rows and a row that no claim names. ``tests/test_ledger.py``
checks that every row named here is shown, at the smoke profile, by one of the chapter's notebooks.
"""

from __future__ import annotations

from ... import experiments
from ...ledger import Claim
from ..ar_ed.rows import printed  # the write-ups print their final losses alike
from .rows import CHAPTER, COSINE, FEWER, MEMORY, NO_TREND, PLANNING, SPECS, TIME, TREND, collapse_claim

_C = CHAPTER
_ROW = {text: text for text, *_ in SPECS}  # a claim's row, by its text (a KeyError here is a renamed row)
_MOTIVATION = "motivation for the design, not a measured result; no experiment of the write-up tests it"


# The write-up's claims, in its order: each names the verdict row that tests it (its claim text, exactly) or says in
# one line why none does.
_DESIGN = (
    "a statement of the design, implemented as described (the planning-target notebook checks the weights by hand)"
)

CLAIMS = [
    Claim(
        _C,
        "Virtually all autoregressive transformer models are trained with the singular objective of next token "
        "prediction.",
        "introduction",
        reason="a description of other models, not a result of the write-up's runs",
    ),
    Claim(
        _C,
        "They don't possess an explicit objective to think – or better, plan – beyond the next token (though "
        "they implicitly do).",
        "introduction",
        reason=_MOTIVATION,
    ),
    Claim(
        _C,
        "DeepSight beats, with fewer parameters, a canonical decoder-only transformer, both in train and "
        "validation loss.",
        "introduction",
        row=_ROW["DeepSight beats the baseline in validation loss"],
    ),
    Claim(
        _C,
        "DeepSight beats, with fewer parameters, a canonical decoder-only transformer, both in train and "
        "validation loss.",
        "introduction",
        row=_ROW["DeepSight beats the baseline in train loss"],
    ),
    Claim(
        _C, "DeepSight beats, with fewer parameters, a canonical decoder-only transformer", "introduction", row=FEWER
    ),
    Claim(
        _C,
        "autoregressive transformer models do develop abilities to plan beyond the next token via the attention "
        "mechanism. Yet, this ability is rather weak and many failure modes can be attributed to this weakness.",
        "Motivations",
        reason=_MOTIVATION,
    ),
    Claim(
        _C,
        "deliberate planning can improve downstream next token prediction",
        "Motivations",
        reason="the hypothesis the results test through the planning-loss rows; no experiment measures planning itself",
    ),
    Claim(
        _C,
        "The encoder-decoder separation is necessary to the formulation of the planning objective.",
        "Architecture",
        reason="a statement of the design: the planning loss is defined on the encoder output",
    ),
    Claim(
        _C,
        "Note that this planning definition doesn't imply that the future becomes somewhat exposed to the present",
        "Planning loss",
        reason="a property of the design, checked by the tests: no next-token prediction sees a later token, and the "
        "planning target draws only on positions up to i + delta with the stated weights",
    ),
    Claim(_C, "it is hard to make one output fulfill two predictive functions", "Planning loss", reason=_MOTIVATION),
    Claim(
        _C,
        "In a decoder-only transformer, the choice is essentially a hidden state, which is too transient.",
        "Planning loss",
        reason=_MOTIVATION,
    ),
    Claim(
        _C,
        "since the encoder focuses more on understanding and decoder more on predicting next token, the encoder "
        "becomes the natural place to expect planning to happen",
        "Planning loss",
        reason=_MOTIVATION,
    ),
    Claim(
        _C,
        "Hence, one can expect an affinity between encoder output and a more direct agggregation of the model "
        "input embeddings.",
        "Planning loss",
        reason="the premise of the planning loss; the rows on its final value measure how close the two come",
    ),
    Claim(
        _C,
        "to reflect the intution that near future tokens are easier to predict than distant future ones",
        "Planning loss",
        reason="the motivation for the 1/k weights, which are implemented as stated (" + "the "
        "planning-target notebook checks them by hand)",
    ),
    Claim(
        _C,
        "because the embedding weights of $E$ are not frozen and thus change, $E_{plan}$ must be re-computed at "
        "every forward pass",
        "Planning loss",
        reason=_DESIGN,
    ),
    Claim(
        _C,
        "Consequentially, the positional embeddings of the additional $\\delta$ tokens won't ever be updated "
        "because $E$ is detached for the planning loss",
        "A note on E_future",
        reason="about the first option, which neither the write-up nor the book uses",
    ),
    Claim(
        _C,
        "This second option is chosen for simplicity.",
        "A note on E_future",
        reason="a design choice, implemented as described (the planning-target notebook checks the weights by hand)",
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
        "The MSE embedding loss performed better than cosine dissimilarity in both validation and train loss.",
        "Results",
        row=_ROW["MSE planning loss beats cosine (validation)"],
    ),
    Claim(
        _C,
        "The MSE embedding loss performed better than cosine dissimilarity in both validation and train loss.",
        "Results",
        row=_ROW["MSE planning loss beats cosine (train)"],
    ),
    Claim(
        _C,
        "MSE outperformed an equivalent model without embedding loss.",
        "Results",
        row=_ROW["MSE planning loss beats no planning loss (validation)"],
    ),
    Claim(
        _C,
        "MSE outperformed an equivalent model without embedding loss.",
        "Results",
        row=_ROW["MSE planning loss beats no planning loss (train)"],
    ),
    Claim(
        _C,
        "Cosine dissimilarity outperformed an equivalent model without embedding loss in train loss and slightly "
        "underperformed in val loss.",
        "Results",
        row=COSINE,
    ),
    *[
        Claim(
            _C,
            f"{experiments.get(n).title} ... {printed(experiments.get(n).published['aux'])}",
            "Results (the tables: the row's planning loss)",
            row=collapse_claim(n),
        )
        for n in PLANNING
    ],
    Claim(
        _C,
        "MSE and cosine dissimilarity both had $\\delta = 11$",
        "Results",
        reason="a statement of the settings, followed (both arms of these rows use delta = 11)",
    ),
    Claim(_C, "Better train loss performance is correlated with bigger future context size.", "Results", row=TREND),
    Claim(_C, "Val loss is not very correlated.", "Results", row=NO_TREND),
    Claim(
        _C,
        "the new model outperformed the baseline in validation and train loss",
        "Results",
        row=_ROW["DeepSight beats the baseline in validation loss"],
    ),
    Claim(
        _C,
        "the new model outperformed the baseline in validation and train loss",
        "Results",
        row=_ROW["DeepSight beats the baseline in train loss"],
    ),
    Claim(_C, "Both completed in a similar amount of time", "Results", row=TIME),
    Claim(_C, "with similar memory demands", "Results", row=MEMORY),
    Claim(_C, "but the baseline had more parameters", "Results", row=FEWER),
]


__all__ = ["CHAPTER", "CLAIMS"]
