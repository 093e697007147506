"""The ledger of the write-up's retrieval part ("Masked Mixer Language Models", B. L. Badger, 2024, its section
"Accurate Representation and Retrieval" and the conclusions about it): every claim, in its order, with its own
words, and the verdict row that tests it (:mod:`.rows`) or one line saying why nothing does. The causal
language-model part is the mixer chapter's (:mod:`lmcompanion.chapters.mixer.claims`).
"""

from __future__ import annotations

from ...ledger import Claim
from . import rows

CHAPTER = "retrieval"
SECTION = "Accurate Representation and Retrieval"
CONCLUSIONS = "Conclusions"
R = {r.text: r.text for r in rows.SPECS}


def _row(start: str) -> str:
    """The claim text of the one row that starts with ``start`` (an error if none or several do)."""
    hits = [t for t in rows.ALL_CLAIMS if t.startswith(start)]
    if len(hits) != 1:
        raise ValueError(f"{len(hits)} rows of the retrieval chapter start with {start!r}")
    return hits[0]


def _tested(says: str, row_start: str, where: str = SECTION) -> Claim:
    return Claim(CHAPTER, says, where, row=_row(row_start))


def _untested(says: str, reason: str, where: str = SECTION) -> Claim:
    return Claim(CHAPTER, says, where, reason=reason)


CLAIMS = [
    _untested(
        "In some sense it is unsuprising that the transformer has relatively poor input representational "
        "accuracy compared to the masked mixer.",
        "input representation is the subject of another write-up (language-discreteness), not of this one",
    ),
    _untested(
        "only paying attention to some inputs is clearly not ideal for mapping one sequence to another",
        "an argument from first principles; the rows below test its consequence for retrieval",
    ),
    _tested(
        "Some preliminary results find that indeed a trained mixer performs very poorly when a cosine distance "
        "metric is used to perform retrieval tasks",
        "on a trained mixer's embeddings cosine similarity",
    ),
    _tested(
        "there is an aligment between this metric on the output and the method by which information passes "
        "between tokens in the transformer model",
        "cosine similarity retrieves better from a transformer's",
    ),
    _tested(
        "the most intuitive one ($L^1$ or $L^2$ distance on the vectorized output layer) is also very inaccurate",
        "on a trained mixer's embeddings L1 distance",
    ),
    _tested(
        "the most intuitive one ($L^1$ or $L^2$ distance on the vectorized output layer) is also very inaccurate",
        "on a trained mixer's embeddings L2 distance",
    ),
    _tested(
        "the mixer's last layer does not form a manifold resembling a high-dimensional sphere or anything similar",
        "a trained mixer's embeddings (d_model=1024) do not lie on a high-dimensional sphere",
    ),
    _untested(
        "the more established methods of training the language model itself on labeled or unlabeled matches "
        "(for instance, the [e5 mistral instruct method](https://arxiv.org/abs/2401.00368)) are not "
        "particularly well-suited here",
        "a choice of method; no other method is run here",
    ),
    _untested(
        "the model architecture should not affect the results here assuming that it is powerful enough to "
        "perform the vector-to-vector mapping",
        "an assumption of the method; the transformer-matcher rows below test one other architecture",
    ),
    _untested(
        "one can perform a B-tree -like algorithm for finding matches from $n$ samples in $n \\log n$ forward "
        "passes of the sequence matching model",
        "an algorithmic remark; no search over a corpus is run here",
    ),
    _untested(
        "The retrieval pairs themselves are one-sentence summaries, and were generated for the first 200k "
        "tinystories samples by the instruction-tuned version of Llama-3 (8b).",
        "the method's data, not published: the book reads TinyStories' own summaries online and a stated "
        "extractive substitute offline (the landing page and the pairs notebook say which)",
    ),
    _untested(
        "We have seen that the embeddings formed by masked mixers contain much more information about the input "
        "than those formed by transformers",
        "input representation is the subject of another write-up (language-discreteness), not of this one",
    ),
    _tested(
        "the mixer's embeddings lead to a train/test loss of 0.05/0.29 whereas the transformer of the same "
        "output dimension (1024) peaks at 0.01/0.40",
        "with 31 candidates, mixer embeddings (d_model=1024) reach",
    ),
    _tested(
        "the mixer's embeddings lead to a train/test loss of 0.05/0.29 whereas the transformer of the same "
        "output dimension (1024) peaks at 0.01/0.40",
        "with 31 candidates, mixer embeddings (d_model=1024) end",
    ),
    _tested(
        "for a context size of 128, the mixer achieves train/test losses of 0.01/0.76",
        "with 127 candidates, mixer embeddings (d_model=1024) reach a lower test loss",
    ),
    _tested(
        "the transformer only manages peak losses of 0.61/2.27",
        "with 127 candidates, mixer embeddings (d_model=1024) reach a lower train loss",
    ),
    _tested("the training run ends at 2.98 test loss", "with 127 candidates, mixer embeddings (d_model=1024) end"),
    _tested("the test loss continues to decrease even after 200 epochs", "with mixer embeddings and 127 candidates"),
    _tested("with severe overfitting", "with transformer embeddings and 127 candidates the matcher overfits"),
    _untested(
        "the mixer is able to form a more high-dimensional embedding with the same compute resources as a transformer",
        "an argument about compute; the mixer chapter's rows compare the two at equal compute",
    ),
    _tested(
        "yields a 512-dimensional embedding that results in very poor matching model training even for the "
        "limited 32 context window size",
        "with 31 candidates, mixer embeddings (d_model=512) end",
    ),
    _tested("virtually no train or test loss after 200 epochs at 3.43", "the best 3060 transformer's embeddings"),
    _tested(
        "the test loss decreases from 0.1 to 0.053",
        "with 550k pairs instead of 200k the mixer's (d_model=512) test loss falls further with 31",
    ),
    _tested(
        "likewise for a 128-sized batch we have a test loss of 0.12",
        "with 550k pairs instead of 200k the mixer's (d_model=512) test loss falls further with 127",
    ),
    _tested(
        "an untrained mixer, while able to accurately represent its input, yields very poor embeddings for "
        "retrieval training",
        "a trained mixer's embeddings beat an untrained mixer's",
    ),
    _tested(
        "an untrained 512-dimensional masked mixer's embeddings lead to practically no learning for batches of "
        "size 128",
        "an untrained mixer's embeddings (d_model=512) give practically no learning",
    ),
    _tested(
        "even for batches of size 32 there is severe overfitting",
        "an untrained mixer's embeddings (d_model=512) overfit",
    ),
    _tested("with loss not below 3.2", "an untrained mixer's embeddings (d_model=512) give a test loss not below"),
    _untested(
        "This encoder-decoder may be trained remarkably effectively (with <2.0 cross-entropy loss)",
        "a language-model loss level, which depends on the tokenizer and the scale; our autoencoder's loss is "
        "shown in the controls notebook",
    ),
    _tested(
        "the encoder's embedding is no better than that from an untrained model for retrieval learning",
        "an autoencoder's embeddings are no better",
    ),
    _tested(
        "This suggests that the causal language model training process itself is important to language retrieval.",
        "a CLM-trained mixer's embeddings beat",
    ),
    _tested(
        "It may be wondered if this is a result of some kind of incompatibility between a transformer's embedding "
        "and the ability of a mixer to learn that model's manifold, but this is not the case",
        "on a transformer's embeddings a bidirectional mixer matches better than a bidirectional transformer",
    ),
    _tested(
        "this model is far worse than the bidirectional mixer",
        "on a transformer's embeddings a bidirectional mixer matches better than a bidirectional transformer",
    ),
    _tested(
        "this model is far worse than the bidirectional mixer",
        "on a transformer's embeddings a bidirectional mixer matches better than the original's",
    ),
    _tested("practically no learning occurs", "a bidirectional transformer matcher learns practically nothing"),
    _tested(
        "for embedding models of various sizes, embeddings derived from masked mixers lead to far better "
        "performance on a retrieval training task when compared to transformers",
        "with 127 candidates, mixer embeddings (d_model=512) end",
    ),
    _tested(
        "This supports the hypothesis that the full sequence-to-sequence mapping that is performed during "
        "retrieval benefits greatly from the increased informational content in the masked mixer's embedding",
        "with 31 candidates, mixer embeddings (d_model=1024) end",
    ),
    _tested(
        "masked mixers as they exist today are far more effective at retrieval tasks",
        "with 127 candidates, mixer embeddings (d_model=1024) end",
        CONCLUSIONS,
    ),
    _untested(
        "For this task, inference would be approximately identical as one typically loads full context for "
        "each forward pass for retrieval tasks",
        "inference cost is not measured here",
        CONCLUSIONS,
    ),
    _tested(
        "This is experimentally supported when training a retrieval model on mixer or transformer embeddings.",
        "with 31 candidates, mixer embeddings (d_model=1024) end",
        CONCLUSIONS,
    ),
    _tested(
        "the masked mixer far outperforms the transformer for tasks involving matching one sequence of words to "
        "another",
        "with 31 candidates, mixer embeddings (d_model=1024) end",
        CONCLUSIONS,
    ),
]

__all__ = ["CHAPTER", "CLAIMS"]
