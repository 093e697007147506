"""The rows of the retrieval chapter's verdict table, as data, in the write-up's order: the arms each notebook
reads, each claim of its "Accurate Representation and Retrieval" section that a row tests, in its words
(:data:`SPECS`), the arms that decide it, which of their numbers it compares (final values, or each arm at its best
test evaluation, the write-up's "peak"), and the numbers it quotes (read from the experiments' ``published`` dicts by
:func:`lmcompanion.chapters.verdict_forms.quote`). How each row is decided is in the chapter module (its
``__init__``, which registers them as :data:`lmcompanion.chapters.retrieval.ROWS`); the ledger of the section's
claims is :mod:`.claims`.
"""

from __future__ import annotations

import dataclasses

from ...experiments import retrieval as rexp
from ...verdicts import CHECK, COMPUTED, TRAINING
from .. import verdict_forms as vf

CHAPTER = "retrieval"

# --- the arms ---------------------------------------------------------------------------------------------------
MAIN = tuple(f"retrieval/{f}_d{d}_c{p}" for d in (512, 1024) for p in (32, 128) for f in ("flat", "llama"))
MORE_PAIRS = ("retrieval/flat_d512_c32_550k", "retrieval/flat_d512_c128_550k")  # the paper profile only
CONTROLS = (
    "retrieval/flat_d512_c32",
    "retrieval/untrained_d512_c32",
    "retrieval/untrained_d512_c128",
    "retrieval/autoencoder_d512_c32",
    "retrieval/llama_d1024_c32",
    "retrieval/transformer_matcher_llama_d1024_c32",
    "retrieval/transformer_matcher_batch_axis_llama_d1024_c32",
)
# The book's own arms: the positive control and the diagnosis's baseline at the write-up's initialisation and inputs
# (shown with the headline's arms), and the Wikipedia setting.
HEADLINE = ("retrieval/flat_d1024_c32", "retrieval/llama_d1024_c32")
PROTOCOL = (rexp.CONTROL, rexp.AS_ORIGINAL)
WIKI = rexp.WIKI
RUN_NAMES = tuple(dict.fromkeys(MAIN + MORE_PAIRS + CONTROLS + PROTOCOL + WIKI))
METRICS = ("cosine", "l1", "l2")  # retrieval by a distance on the embeddings themselves, no training
TRAINING_PAIRS = "training pairs"  # how a row names an arm gated on its training-pair loss

# --- the rows ---------------------------------------------------------------------------------------------------
R = "retrieval/"
TT = ("train", "test")
PEAK = ("peak_train", "peak_test")


@dataclasses.dataclass(frozen=True)
class Spec:
    """One row, as data: the claim it tests and how its arms decide it. ``kind``:

    - ``"lower"``: ``a``'s matcher ends at a lower test loss than ``b``'s; ``"lower_peak"``: at each arm's best test
      evaluation; ``"lower_train_peak"``: the train loss at each arm's best test evaluation;
    - ``"no_gain"``: ``a`` does not end lower than ``b`` (test);
    - ``"not_below"``: ``a``'s final test loss does not fall below ``level`` (``"chance"``: ln(candidates));
    - ``"overfits"``: ``a``'s final train loss is below its final test loss;
    - ``"still_falling"``: ``a``'s test loss is lower at the end than at the run's middle evaluation;
    - ``"rises_more"``: ``b``'s test loss rises more from its best to the end than ``a``'s;
    - ``"metric"``: on ``a``'s embeddings the trained matcher's top-1 error is lower than the ``metric``'s
      (``"cosine"``, ``"l1"``, ``"l2"``); ``"cosine_better"``: cosine's top-1 error is lower on ``b``'s embeddings
      (a transformer's) than on ``a``'s;
    - ``"off_sphere"``: the norms of ``a``'s embeddings spread (standard deviation over mean) more than those of
      isotropic Gaussian vectors of their width, 1/sqrt(2d): they do not lie on a sphere;
    - ``"bm25"``: BM25's top-1 on ``a``'s test items is at least twice chance (the book's own row: a computed
      baseline, no training);
    - ``"learns"``: every seed of ``a`` ends its test loss at least the learning gate's half nat below chance (the
      book's positive control: a check of the protocol, not a claim of the write-up);
    - ``"fits"``: every seed of ``a`` and of ``b`` ends its *training*-pair loss at least half a nat below chance
      (a check that the protocol lets the headline's matchers fit what they are trained on).

    ``control``: for a claim that something does *not* learn (``not_below``, ``no_gain`` between two controls), the
    arm that must have learned for "no learning" to say anything: the same matcher on embeddings the write-up says
    work (a matcher at chance everywhere would make every such claim hold).
    """

    text: str
    kind: str
    a: str
    b: str = ""
    quote: tuple[vf.Quote, ...] = ()
    note: str = ""
    level: float | str = "chance"
    metric: str = ""
    notebook: str = "04_verdicts"
    control: str = ""
    group: str = TRAINING  # what the row is (lmcompanion.verdicts.KINDS): a claim about training, or computed
    extension: bool = False  # the book's own row, beyond the write-up

    @property
    def names(self) -> tuple[str, ...]:
        """Every experiment whose runs decide the row (its arms, then its control)."""
        return tuple(dict.fromkeys(n for n in (self.a, self.b, self.control) if n))

    @property
    def published(self) -> str:
        return vf.quote(self.quote, self.note)


SPECS = [
    # beyond the write-up: the protocol's checks (the book's own rows, counted apart)
    Spec(
        "beyond the write-up: under the protocol every matcher here is trained with, the matcher learns a match that "
        "is there: on noisy copies (each story's embedding its query's plus noise; 31 candidates, the d_model=1024 "
        "width) every seed's test loss ends at least half a nat below chance (a positive control)",
        "learns",
        R + "noisy_copy_d1024_c32",
        note="the write-up has no such control",
        notebook="02_mixer_vs_transformer",
        group=CHECK,
        extension=True,
    ),
    Spec(
        "beyond the write-up: under that protocol the headline's matchers fit their training pairs: every seed's "
        "final training loss at least half a nat below chance (31 candidates, d_model=1024, mixer and transformer "
        "embeddings)",
        "fits",
        R + "flat_d1024_c32",
        R + "llama_d1024_c32",
        (("mixer", R + "flat_d1024_c32", ("train",)), ("transformer", R + "llama_d1024_c32", ("peak_train",))),
        "train; the transformer's at its peak",
        notebook="02_mixer_vs_transformer",
        group=CHECK,
        extension=True,
    ),
    # beyond the write-up: BM25, a baseline it does not have (the book's own row, counted apart)
    Spec(
        "beyond the write-up: BM25 on the texts finds the true story at least twice as often as chance (top-1, 31 "
        "candidates, the matchers' own test items)",
        "bm25",
        R + "flat_d1024_c32",
        note="the write-up has no such baseline",
        notebook="01_pairs_and_baselines",
        group=COMPUTED,
        extension=True,
    ),
    # the metrics on the embeddings themselves
    Spec(
        "on a trained mixer's embeddings cosine similarity retrieves worse than a trained matcher (top-1, "
        "d_model=1024, 31 candidates)",
        "metric",
        R + "flat_d1024_c32",
        metric="cosine",
        note="'a trained mixer performs very poorly when a cosine distance metric is used' (no number)",
    ),
    Spec(
        "cosine similarity retrieves better from a transformer's embeddings than from a mixer's (top-1, "
        "d_model=1024, 31 candidates)",
        "cosine_better",
        R + "flat_d1024_c32",
        R + "llama_d1024_c32",
        note="'an aligment between this metric on the output and ... the transformer model'; 'No such guarantees are "
        "present for the mixer' (no number)",
    ),
    Spec(
        "on a trained mixer's embeddings L1 distance retrieves worse than a trained matcher (top-1, d_model=1024, 31 "
        "candidates)",
        "metric",
        R + "flat_d1024_c32",
        metric="l1",
        note="'$L^1$ or $L^2$ distance ... is also very inaccurate' (no number)",
    ),
    Spec(
        "on a trained mixer's embeddings L2 distance retrieves worse than a trained matcher (top-1, d_model=1024, 31 "
        "candidates)",
        "metric",
        R + "flat_d1024_c32",
        metric="l2",
        note="'$L^1$ or $L^2$ distance ... is also very inaccurate' (no number)",
    ),
    Spec(
        "a trained mixer's embeddings (d_model=1024) do not lie on a high-dimensional sphere: their norms spread more "
        "than those of random Gaussian vectors of the same width",
        "off_sphere",
        R + "flat_d1024_c32",
        note="'the mixer's last layer does not form a manifold resembling a high-dimensional sphere' (no number)",
        notebook="01_pairs_and_baselines",
    ),
    # d_model 1024, 31 candidates
    Spec(
        "with 31 candidates, mixer embeddings (d_model=1024) reach a lower test loss than transformer embeddings, "
        "each at its best evaluation",
        "lower_peak",
        R + "flat_d1024_c32",
        R + "llama_d1024_c32",
        (("mixer", R + "flat_d1024_c32", TT), ("transformer", R + "llama_d1024_c32", PEAK)),
        "train/test; the transformer's at its peak, the mixer's not said to be one",
    ),
    Spec(
        "with 31 candidates, mixer embeddings (d_model=1024) end at a lower test loss than transformer embeddings",
        "lower",
        R + "flat_d1024_c32",
        R + "llama_d1024_c32",
        (("mixer", R + "flat_d1024_c32", TT), ("transformer", R + "llama_d1024_c32", PEAK)),
        "train/test; the transformer's final loss is not given, only its peak",
    ),
    # d_model 1024, 127 candidates
    Spec(
        "with 127 candidates, mixer embeddings (d_model=1024) reach a lower test loss than transformer embeddings, "
        "each at its best evaluation",
        "lower_peak",
        R + "flat_d1024_c128",
        R + "llama_d1024_c128",
        (("mixer", R + "flat_d1024_c128", TT), ("transformer", R + "llama_d1024_c128", PEAK)),
        "train/test; the transformer's at its peak, the mixer's final and still falling",
    ),
    Spec(
        "with 127 candidates, mixer embeddings (d_model=1024) reach a lower train loss than transformer embeddings, "
        "each at its best test evaluation",
        "lower_train_peak",
        R + "flat_d1024_c128",
        R + "llama_d1024_c128",
        (("mixer", R + "flat_d1024_c128", ("train",)), ("transformer", R + "llama_d1024_c128", ("peak_train",))),
        "train, the transformer's at its peak",
    ),
    Spec(
        "with 127 candidates, mixer embeddings (d_model=1024) end at a lower test loss than transformer embeddings",
        "lower",
        R + "flat_d1024_c128",
        R + "llama_d1024_c128",
        (("mixer", R + "flat_d1024_c128", ("test",)), ("transformer", R + "llama_d1024_c128", ("test",))),
        "test, both final: 'the training run ends at 2.98 test loss'",
    ),
    Spec(
        "with mixer embeddings and 127 candidates the test loss still falls at the end of training",
        "still_falling",
        R + "flat_d1024_c128",
        quote=(("mixer", R + "flat_d1024_c128", ("test",)),),
        note="test; 'the test loss continues to decrease even after 200 epochs'",
    ),
    Spec(
        "with transformer embeddings and 127 candidates the matcher overfits: its test loss rises from its best more "
        "than with mixer embeddings",
        "rises_more",
        R + "flat_d1024_c128",
        R + "llama_d1024_c128",
        (("transformer", R + "llama_d1024_c128", ("peak_test", "test")),),
        "test, its peak and its end",
    ),
    # d_model 512, 31 candidates: the best transformer of the RTX 3060's 12 hours
    Spec(
        "with 31 candidates, mixer embeddings (d_model=512) end at a lower test loss than the best 3060 transformer's",
        "lower",
        R + "flat_d512_c32",
        R + "llama_d512_c32",
        (("transformer", R + "llama_d512_c32", ("test",)), ("mixer", R + "flat_d512_c32", TT)),
        "the transformer's train and test 'at 3.43', the mixer's train/test; final",
    ),
    Spec(
        "the best 3060 transformer's embeddings (d_model=512) give virtually no learning with 31 candidates",
        "not_below",
        R + "llama_d512_c32",
        quote=(("transformer", R + "llama_d512_c32", ("test",)),),
        note="train and test; the level is chance, ln 31",
        control=R + "flat_d512_c32",
    ),
    # 550k pairs (the paper profile only)
    Spec(
        "with 550k pairs instead of 200k the mixer's (d_model=512) test loss falls further with 31 candidates",
        "lower",
        R + "flat_d512_c32_550k",
        R + "flat_d512_c32",
        (("200k pairs", R + "flat_d512_c32", ("test_200k",)), ("550k pairs", R + "flat_d512_c32_550k", ("test",))),
        "test",
    ),
    Spec(
        "with 550k pairs instead of 200k the mixer's (d_model=512) test loss falls further with 127 candidates",
        "lower",
        R + "flat_d512_c128_550k",
        R + "flat_d512_c128",
        (("550k pairs", R + "flat_d512_c128_550k", ("test",)),),
        "test; no number for 200k pairs",
    ),
    # untrained embeddings
    Spec(
        "a trained mixer's embeddings beat an untrained mixer's (d_model=512, 31 candidates)",
        "lower",
        R + "flat_d512_c32",
        R + "untrained_d512_c32",
        (("trained", R + "flat_d512_c32", ("test",)), ("untrained", R + "untrained_d512_c32", ("test_floor",))),
        "test; the untrained's 'not below'",
    ),
    Spec(
        "an untrained mixer's embeddings (d_model=512) give practically no learning with 127 candidates",
        "not_below",
        R + "untrained_d512_c128",
        note="no number; the level is chance, ln 127",
        control=R + "flat_d512_c128",
    ),
    Spec(
        "an untrained mixer's embeddings (d_model=512) overfit with 31 candidates: the train loss ends below the "
        "test loss",
        "overfits",
        R + "untrained_d512_c32",
        note="'severe overfitting' (no number)",
    ),
    Spec(
        "an untrained mixer's embeddings (d_model=512) give a test loss not below 3.2 with 31 candidates",
        "not_below",
        R + "untrained_d512_c32",
        quote=(("untrained", R + "untrained_d512_c32", ("test_floor",)),),
        note="'loss not below 3.2'",
        level=3.2,
        control=R + "flat_d512_c32",
    ),
    # the autoencoder
    Spec(
        "an autoencoder's embeddings are no better than an untrained mixer's for retrieval learning (d_model=512, 31 "
        "candidates)",
        "no_gain",
        R + "autoencoder_d512_c32",
        R + "untrained_d512_c32",
        note="no number",
        control=R + "flat_d512_c32",
    ),
    Spec(
        "a CLM-trained mixer's embeddings beat a mixer autoencoder's (d_model=512, 31 candidates)",
        "lower",
        R + "flat_d512_c32",
        R + "autoencoder_d512_c32",
        (("CLM-trained", R + "flat_d512_c32", ("test",)),),
        "test; no number for the autoencoder",
    ),
    # a transformer as the matcher
    Spec(
        "on a transformer's embeddings a bidirectional mixer matches better than a bidirectional transformer "
        "(d_model=1024, 31 candidates)",
        "lower",
        R + "llama_d1024_c32",
        R + "transformer_matcher_llama_d1024_c32",
        note="'far worse than the bidirectional mixer' (no number)",
    ),
    Spec(
        "on a transformer's embeddings a bidirectional mixer matches better than the original's transformer matcher "
        "(attention across the batch axis; d_model=1024, 31 candidates)",
        "lower",
        R + "llama_d1024_c32",
        R + "transformer_matcher_batch_axis_llama_d1024_c32",
        note="'far worse than the bidirectional mixer' (no number)",
    ),
    Spec(
        "a bidirectional transformer matcher learns practically nothing from a transformer's embeddings "
        "(d_model=1024, 31 candidates)",
        "not_below",
        R + "transformer_matcher_llama_d1024_c32",
        note="'practically no learning occurs' (no number); the level is chance, ln 31",
        control=R + "llama_d1024_c32",
    ),
    # beyond the write-up: the book's own setting, 2.9 (cpu) and 4 (gpu) times the profile's story pairs
    Spec(
        "beyond the write-up: on Wikipedia leads (an article's first sentence against the rest of its body: "
        + ", ".join(f"{rexp.SCALES[p].wiki_pairs:,} pairs at {p}" for p in ("cpu", "gpu", "paper"))
        + "), mixer embeddings (d_model=1024) end at a lower test loss than transformer embeddings (31 candidates)",
        "lower",
        R + "wiki_flat_d1024_c32",
        R + "wiki_llama_d1024_c32",
        note="the book's own setting: the write-up has none",
        notebook="02_mixer_vs_transformer",
        extension=True,
    ),
    # embedding models of various sizes
    Spec(
        "with 127 candidates, mixer embeddings (d_model=512) end at a lower test loss than the best 3060 transformer's",
        "lower",
        R + "flat_d512_c128",
        R + "llama_d512_c128",
        note="'for embedding models of various sizes' (no number)",
    ),
]

ALL_CLAIMS = [r.text for r in SPECS]
BM25 = next(r.text for r in SPECS if r.kind == "bm25")  # the book's baseline row, which the summary states first
LEARNS = next(r.text for r in SPECS if r.kind == "learns")  # the positive control's row (retrieval.lead)
FITS = next(r.text for r in SPECS if r.kind == "fits")  # the headline's matchers on their training pairs

__all__ = [
    "ALL_CLAIMS",
    "BM25",
    "CHAPTER",
    "CONTROLS",
    "FITS",
    "HEADLINE",
    "LEARNS",
    "MAIN",
    "METRICS",
    "MORE_PAIRS",
    "PROTOCOL",
    "RUN_NAMES",
    "SPECS",
    "Spec",
    "TRAINING_PAIRS",
    "WIKI",
]
