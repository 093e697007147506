"""The rows of the masked-mixer chapter's verdict table, as data: each claim of the write-up's CLM part that a
row tests, in the write-up's words, with the arms that decide it and the numbers it quotes (read from the
experiments' ``published`` dicts by :func:`lmcompanion.chapters.verdict_forms.quote`), and the order of the
write-up. How each row is decided is in the chapter module; which claim of the write-up each row tests, or why a
claim has no row, is in :mod:`.claims` (the ledger).
"""

from __future__ import annotations

import dataclasses

from . import analysis
from .. import verdict_forms as vf


@dataclasses.dataclass(frozen=True)
class Pair:
    """A claim about two arms, in the write-up's words, with the numbers it quotes.

    ``kind``: ``"fixed"`` (``a`` ends lower than ``b`` on ``metric`` at equal counted compute), ``"steps"`` (``a``
    is lower than ``b`` at their last common evaluation, i.e. after equal steps, equal samples when the batches are
    equal), ``"samples"`` (``a`` is lower than ``b`` after the same number of training sequences, read where both
    evaluated after it: for arms of different batches), ``"no_gain"`` (``a`` does not end lower than ``b`` by more
    than the chapter's margin of equal losses), ``"no_worse"`` (``a`` does not end higher than ``b`` by more than it),
    ``"similar"`` (they end about equal), or ``"similar_steps"`` (about equal after equal steps). Each kind is a form
    of :mod:`lmcompanion.chapters.verdict_forms`, chosen from the claim's words. ``quote``: (label, experiment, published keys) of each arm
    the write-up names, in its order; ``note`` says which numbers they are."""

    text: str
    kind: str
    a: str
    b: str
    notebook: str
    quote: tuple[vf.Quote, ...]
    note: str = ""
    metric: str = "val"
    section: str = ""  # the write-up's section (set below from the comments' grouping)
    extension: bool = False  # the book's own claim, beyond the write-up

    @property
    def published(self) -> str:
        return vf.quote(self.quote, self.note)


# The write-up's sections, in its order (their titles, as printed)
BACKGROUND = "Background"
BASICS = "Language Mixer Basics"
TRAINING = "Training"
INFERENCE = "Mixer Inference"
FLAT = "Flat Mixers Train Faster"
PARALLEL = "Parallel rather than Sequential Convolutions"
POSITIONAL = "Mixers do not benefit from positional encoding"
SCALING = "Scaling Properties"
HEADS = "Transformers with fewer attention heads are more efficient for TinyStories"
V100 = "Fully Convoluted Mixers for optimal TinyStories training"
MULTIHEAD = "Multi Headed Mixers"
HYBRIDS = "Transformer mixer hybrids learn most efficiently"
GPT = "Masked Mixers outperform early CLM Transformers"
CONCLUSIONS = "Conclusions"
SECTIONS = (
    BACKGROUND,
    BASICS,
    TRAINING,
    INFERENCE,
    FLAT,
    PARALLEL,
    POSITIONAL,
    SCALING,
    HEADS,
    V100,
    MULTIHEAD,
    HYBRIDS,
    GPT,
    CONCLUSIONS,
)


def _in(section: str, *args, **kw) -> "Pair":
    return Pair(*args, section=section, **kw)


M = "mixer/"
TV = ("train", "val")
# The GPT's mixer: "far worse than the 1.76/1.81 mixer loss" names no model, and no run of the write-up's tables or
# text has 1.76/1.81 (1.76 is its eta=0.005 4xV100 Llama, 1.81 its flat d=1024 mixer's training loss).
GPT_MIXER = (
    "no mixer of the write-up's tables or text has 1.76/1.81, so that mixer cannot be identified: the flat "
    "d=512 mixer, of the GPT's width, is compared"
)
# The GPT's learning rate: "the optimized learning rate ... found for llama-style transformers" (the text's eta=0.005
# for its best Llama) as one arm, the code's 5e-4 as the other, as for the Llamas. (suffix, 16 heads, 4 heads, note)
GPT_RATES = (
    ("", "gpt_h16", "gpt", "; the GPTs at the code's learning rate, 5e-4"),
    (" at eta=0.005", "gpt_h16_eta005", "gpt_eta005", "; the GPTs at the text's eta=0.005"),
)
# Every claim of the CLM part decided by training runs, in the write-up's order.
PAIRS = [
    # Training
    _in(
        TRAINING,
        "at fixed compute the expanded mixer (d=256) reaches a lower validation loss than Llama (d=128)",
        "fixed",
        M + "expanded_d256",
        M + "llama_d128",
        "01_mixer_vs_llama",
        (("mixer", M + "expanded_d256", ("val",)), ("Llama", M + "llama_d128", ("val",))),
        "validation, the text's first comparison; its table gives Llama d=128 2.40",
    ),
    _in(
        TRAINING,
        "at fixed compute the expanded mixer (d=256) reaches a lower training loss than Llama (d=128)",
        "fixed",
        M + "expanded_d256",
        M + "llama_d128",
        "01_mixer_vs_llama",
        (("mixer", M + "expanded_d256", ("train",)), ("Llama", M + "llama_d128", ("train",))),
        "training; its table gives Llama d=128 2.38",
        metric="train",
    ),
    _in(
        TRAINING,
        "at equal steps the mixer and Llama are 'nearly identical' (validation)",
        "similar_steps",
        M + "expanded_d256",
        M + "llama_d128",
        "01_mixer_vs_llama",
        (("Llama", M + "llama_d128", ("val_equal_steps",)), ("mixer", M + "expanded_d256", ("val_equal_steps",))),
        "validation at step 160,000",
    ),
    # Flat Mixers Train Faster
    _in(
        FLAT,
        "a flat mixer (d=512) reaches a lower validation loss than the d=256 transformer at fixed compute",
        "fixed",
        M + "flat_d512",
        M + "llama_d256",
        "03_scaling",
        (("flat mixer", M + "flat_d512", TV), ("transformer", M + "llama_d256", TV)),
        "train/validation; the text gives the transformer 2.03 twice, its table 2.02",
    ),
    _in(
        FLAT,
        "at equal samples the flat mixer (d=512) reaches a lower validation loss than the expanded one",
        "steps",
        M + "flat_d512",
        M + "expanded_d512",
        "02_flat_vs_expanded",
        (
            ("expanded", M + "expanded_d512", ("train_one_epoch", "val_one_epoch")),
            ("flat", M + "flat_d512", ("train_one_epoch", "val_one_epoch")),
        ),
        "train/validation after one epoch",
    ),
    _in(
        FLAT,
        "at fixed compute the flat mixer beats the expanded one (d=256, validation)",
        "fixed",
        M + "flat_d256",
        M + "expanded_d256",
        "02_flat_vs_expanded",
        (("flat", M + "flat_d256", ("val",)), ("expanded", M + "expanded_d256", ("table_val",))),
        "the tables",
    ),
    _in(
        FLAT,
        "at fixed compute the flat mixer beats the expanded one (d=512, validation)",
        "fixed",
        M + "flat_d512",
        M + "expanded_d512",
        "02_flat_vs_expanded",
        (("flat", M + "flat_d512", ("table_val",)), ("expanded", M + "expanded_d512", ("val",))),
        "the tables",
    ),
    _in(
        FLAT,
        "at fixed compute the flat mixer beats the expanded one (d=1024, validation)",
        "fixed",
        M + "flat_d1024",
        M + "expanded_d1024",
        "03_scaling",
        (("flat", M + "flat_d1024", ("val",)), ("expanded", M + "expanded_d1024", ("val",))),
        "the tables",
    ),
    _in(
        FLAT,
        "the d=256 transformer lags behind the flat d=1024 mixer at fixed compute (validation)",
        "fixed",
        M + "flat_d1024",
        M + "llama_d256",
        "03_scaling",
        (("transformer", M + "llama_d256", TV), ("mixer", M + "flat_d1024", TV)),
        "train/validation",
    ),
    _in(
        FLAT,
        "Llama d=512 beats d=256 at fixed compute ('a peak of efficiency for the transformer', validation)",
        "fixed",
        M + "llama_d512",
        M + "llama_d256",
        "03_scaling",
        (("d=256", M + "llama_d256", TV), ("d=512", M + "llama_d512", TV)),
        "train/validation",
    ),
    _in(
        FLAT,
        "Llama d=512 (batch 8) beats d=1024 at batch 4 at fixed compute (validation)",
        "fixed",
        M + "llama_d512",
        M + "llama_d1024_b4",
        "03_scaling",
        (("d=512", M + "llama_d512", TV), ("d=1024", M + "llama_d1024_b4", TV)),
        "train/validation; the text's d=1024 Llama, at batch 4",
    ),
    _in(
        FLAT,
        "Llama d=512 beats d=1024 at batch 8 at fixed compute (the transformer table, validation)",
        "fixed",
        M + "llama_d512",
        M + "llama_d1024",
        "03_scaling",
        (("d=512", M + "llama_d512", ("table_train", "table_val")), ("d=1024, b=8", M + "llama_d1024", TV)),
        "train/test, the transformer table",
    ),
    _in(
        FLAT,
        "after the same number of samples Llama d=1024 (batch 4) reaches a higher training loss than d=512 (batch 8)",
        "samples",
        M + "llama_d512",
        M + "llama_d1024_b4",
        "03_scaling",
        (("d=1024", M + "llama_d1024_b4", ("train_440k",)), ("d=512", M + "llama_d512", ("train_440k",))),
        "training, after 440k samples",
        metric="train",
    ),
    _in(
        FLAT,
        "the flat mixer (d=512) reaches a lower validation loss than the optimal transformer (d=512)",
        "fixed",
        M + "flat_d512",
        M + "llama_d512",
        "01_mixer_vs_llama",
        (("transformer", M + "llama_d512", TV), ("flat mixer", M + "flat_d512", TV)),
        "train/validation",
    ),
    # the book's setting (experiments.mixer.WIKIPEDIA_ARMS): the same two arms, models and tokens per run, on Wikipedia
    _in(
        FLAT,
        "beyond the write-up: on Wikipedia, with the same models and tokens per run, the flat mixer (d=512) "
        "reaches a lower validation loss than the optimal transformer (d=512)",
        "fixed",
        M + "flat_d512_wikipedia",
        M + "llama_d512_wikipedia",
        "09_verdicts",
        (),
        "a setting the book adds: no number in the write-up",
        extension=True,
    ),
    _in(
        FLAT,
        "a flat d=1024 mixer at batch 32 reaches a lower validation loss than the optimal transformer (d=512)",
        "fixed",
        M + "flat_d1024_b32",
        M + "llama_d512",
        "03_scaling",
        (("mixer", M + "flat_d1024_b32", TV), ("transformer", M + "llama_d512", TV)),
        "train/validation",
    ),
    _in(
        FLAT,
        "at fixed compute the flat d=1024 mixer beats d=2048 (validation)",
        "fixed",
        M + "flat_d1024",
        M + "flat_d2048",
        "03_scaling",
        (("d=1024", M + "flat_d1024", ("val",)), ("d=2048", M + "flat_d2048", ("val",))),
        "the flat mixer table",
    ),
    # Parallel rather than Sequential Convolutions
    _in(
        PARALLEL,
        "at equal steps 2 parallel convolutions reach a lower training loss than the flat mixer",
        "steps",
        M + "parallel2_d512",
        M + "flat_d512",
        "04_variants",
        (
            ("2 parallel", M + "parallel2_d512", ("train_equal_steps",)),
            ("flat", M + "flat_d512", ("train_equal_steps",)),
        ),
        "training at 354,000 steps",
        metric="train",
    ),
    _in(
        PARALLEL,
        "at fixed compute 2 parallel convolutions are 'very similar or perhaps slightly worse' than the flat mixer",
        "no_gain",
        M + "parallel2_d512",
        M + "flat_d512",
        "04_variants",
        (("flat", M + "flat_d512", ("train",)),),
        "training; no number for the parallel mixer",
    ),
    _in(
        PARALLEL,
        "4 parallel convolutions give 'no apparent fixed-compute loss reduction'",
        "no_gain",
        M + "parallel4_d512",
        M + "flat_d512",
        "04_variants",
        (),
        "no number",
    ),
    # Mixers do not benefit from positional encoding
    _in(
        POSITIONAL,
        "a positional channel at the input gives 'virtually no change in performance'",
        "similar",
        M + "positional_first",
        M + "flat_d1024",
        "04_variants",
        (),
        "no number",
    ),
    _in(
        POSITIONAL,
        "a positional channel written after every block hurts (validation)",
        "fixed",
        M + "flat_d1024",
        M + "positional_every",
        "04_variants",
        (("every block", M + "positional_every", TV),),
        "train/validation; no number for the mixer without it",
    ),
    # Scaling Properties
    _in(
        SCALING,
        "Llama d=256 beats d=128 at fixed compute (the transformer table, validation)",
        "fixed",
        M + "llama_d256",
        M + "llama_d128",
        "03_scaling",
        (
            ("d=128", M + "llama_d128", ("table_train", "table_val")),
            ("d=256", M + "llama_d256", ("train", "table_val")),
        ),
        "train/test, the transformer table (its header: h=16, b=32)",
    ),
    _in(
        SCALING,
        "a 1024-wide mixer with 8 layers reaches a lower evaluation loss than a 64-wide one with 64 layers",
        "fixed",
        M + "flat_d1024_b32",
        M + "deep_d64",
        "03_scaling",
        (("64 wide, 64 layers", M + "deep_d64", ("val",)), ("1024 wide, 8 layers", M + "flat_d1024_b32", ("val",))),
        "evaluation",
    ),
    # Transformers with fewer attention heads are more efficient for TinyStories
    _in(
        HEADS,
        "at equal counted compute (equal steps) 4 heads beat 16 heads for Llama d=512 (validation)",
        "fixed",
        M + "llama_d512_h4",
        M + "llama_d512",
        "03_scaling",
        (("16 heads", M + "llama_d512", ("table_train", "table_val")), ("4 heads", M + "llama_d512_h4", TV)),
        "the heads table",
    ),
    _in(
        HEADS,
        "at equal counted compute (equal steps) 4 heads beat 8 heads for Llama d=512 (validation)",
        "fixed",
        M + "llama_d512_h4",
        M + "llama_d512_h8",
        "03_scaling",
        (("8 heads", M + "llama_d512_h8", TV), ("4 heads", M + "llama_d512_h4", TV)),
        "the heads table",
    ),
    _in(
        HEADS,
        "at equal counted compute (equal steps) 4 heads beat 2 heads for Llama d=512 (validation)",
        "fixed",
        M + "llama_d512_h4",
        M + "llama_d512_h2",
        "03_scaling",
        (("4 heads", M + "llama_d512_h4", TV), ("2 heads", M + "llama_d512_h2", TV)),
        "the heads table",
    ),
    _in(
        HEADS,
        "at equal samples 16 heads beat 2 heads for Llama d=512 (validation)",
        "steps",
        M + "llama_d512",
        M + "llama_d512_h2",
        "03_scaling",
        (
            ("2 heads", M + "llama_d512_h2", ("train_half_epoch", "val_half_epoch")),
            ("16 heads", M + "llama_d512", ("train_half_epoch", "val_half_epoch")),
        ),
        "train/validation after half an epoch",
    ),
    # Fully Convoluted Mixers for optimal TinyStories training
    _in(
        V100,
        "the larger learning rate eta=0.005 slightly improves the 4-head Llama on the 4xV100 (validation)",
        "fixed",
        M + "llama_v100_eta005",
        M + "llama_v100",
        "05_v100",
        (("lr 5e-4", M + "llama_v100", TV), ("eta=0.005", M + "llama_v100_eta005", TV)),
        "train/test",
    ),
    _in(
        V100,
        "the kernel-4 mixer beats the 4-head Llama at lr 5e-4 on the 4xV100 (validation)",
        "fixed",
        M + "kernel4",
        M + "llama_v100",
        "05_v100",
        (("Llama", M + "llama_v100", TV), ("kernel-4 mixer", M + "kernel4", TV)),
        "train/test",
    ),
    _in(
        V100,
        "the kernel-4 mixer beats the 4-head Llama at eta=0.005 on the 4xV100 (validation)",
        "fixed",
        M + "kernel4",
        M + "llama_v100_eta005",
        "05_v100",
        (("Llama", M + "llama_v100_eta005", TV), ("kernel-4 mixer", M + "kernel4", TV)),
        "train/test",
    ),
    _in(
        V100,
        "batch 32 per GPU improves the 4-head Llama on the 4xV100 (validation)",
        "fixed",
        M + "llama_tuned",
        M + "llama_v100",
        "05_v100",
        (("batch 16", M + "llama_v100", TV), ("batch 32", M + "llama_tuned", TV)),
        "train/test",
    ),
    _in(
        V100,
        "the tuned Llama (batch 32 per GPU) reaches 'nearly the same' loss as the kernel-4 mixer (validation)",
        "similar",
        M + "llama_tuned",
        M + "kernel4",
        "05_v100",
        (("kernel-4 mixer", M + "kernel4", TV), ("tuned Llama", M + "llama_tuned", TV)),
        "train/test",
    ),
    _in(
        V100,
        "an extra linear layer after the embedding improves the kernel-4 mixer (validation)",
        "fixed",
        M + "extra_linear",
        M + "kernel4",
        "05_v100",
        (("kernel-4", M + "kernel4", TV), ("extra linear layer", M + "extra_linear", TV)),
        "train/test",
    ),
    _in(
        V100,
        "the optimized mixer is slightly more performant than the optimized transformer (validation)",
        "fixed",
        M + "extra_linear",
        M + "llama_tuned",
        "05_v100",
        (("mixer, extra linear layer", M + "extra_linear", TV), ("tuned Llama", M + "llama_tuned", TV)),
        "train/test, both without Flash Attention 2",
    ),
    # Multi Headed Mixers
    _in(
        MULTIHEAD,
        "the two-headed mixer beats the kernel-4 mixer (training)",
        "fixed",
        M + "heads2",
        M + "kernel4",
        "05_v100",
        (("two-headed", M + "heads2", TV), ("kernel-4", M + "kernel4", TV)),
        "train/test",
        metric="train",
    ),
    # Transformer mixer hybrids learn most efficiently
    _in(
        HYBRIDS,
        "the 4-head Llama (d=512) beats the flat mixer of the same width on the RTX 3060 (validation)",
        "fixed",
        M + "llama_d512_h4",
        M + "flat_d512",
        "05_v100",
        (("Llama", M + "llama_d512_h4", TV), ("flat mixer", M + "flat_d512", ("table_train", "table_val"))),
        "train/test",
    ),
    _in(
        HYBRIDS,
        "the sequential transformer-mixer hybrid beats the 4-head Llama on the RTX 3060 (validation)",
        "fixed",
        M + "hybrid_rtx3060",
        M + "llama_d512_h4",
        "05_v100",
        (("hybrid", M + "hybrid_rtx3060", TV), ("Llama", M + "llama_d512_h4", TV)),
        "train/test",
    ),
    _in(
        HYBRIDS,
        "the sequential transformer-mixer hybrid beats the same transformer without the masked convolution "
        "(4xV100, validation)",
        "fixed",
        M + "hybrid_sequential",
        M + "llama_tuned",
        "05_v100",
        (
            ("hybrid", M + "hybrid_sequential", TV),
            ("without the convolution", M + "llama_tuned", ("fa2_train", "fa2_val")),
        ),
        "train/test, both with Flash Attention 2, a kernel that changes no counted FLOP",
    ),
    _in(
        HYBRIDS,
        "the sequential transformer-mixer hybrid beats the kernel-4 mixer (4xV100, validation)",
        "fixed",
        M + "hybrid_sequential",
        M + "kernel4",
        "05_v100",
        (("hybrid", M + "hybrid_sequential", TV), ("kernel-4 mixer", M + "kernel4", TV)),
        "train/test",
    ),
    _in(
        HYBRIDS,
        "the parallel transformer-mixer hybrid gives no benefit over the transformer (4xV100)",
        "no_gain",
        M + "hybrid_parallel",
        M + "llama_tuned",
        "05_v100",
        (("parallel hybrid", M + "hybrid_parallel", TV), ("transformer", M + "llama_tuned", ("fa2_train", "fa2_val"))),
        "train/test, with Flash Attention 2",
    ),
    # Conclusions: "a highly optimized transformer ... results in approximately as or slightly more efficient a learning
    # paradigm as the masked mixer's lack of focus if the transformer is properly tuned": no worse, not "beats"
    _in(
        CONCLUSIONS,
        "the tuned transformer is 'approximately as or slightly more efficient' a learner than the masked "
        "mixer: the 4-head Llama (d=512) is no worse than the flat mixer of the same width on the RTX 3060 "
        "(validation, within the chapter's margin of equal losses)",
        "no_worse",
        M + "llama_d512_h4",
        M + "flat_d512",
        "05_v100",
        (("Llama", M + "llama_d512_h4", TV), ("flat mixer", M + "flat_d512", ("table_train", "table_val"))),
        "train/test",
    ),
    # Masked Mixers outperform early CLM Transformers: each row at the code's learning rate and at the text's eta
    *[
        _in(
            GPT,
            f"the flat d=512 mixer (in place of the write-up's 1.76/1.81 mixer, which cannot be identified) learns "
            f"more than the original GPT{eta} at fixed compute (validation)",
            "fixed",
            M + "flat_d512",
            M + gpt,
            "05_v100",
            (("GPT", M + gpt, TV), ("mixer", M + "gpt", ("mixer_train", "mixer_val"))),
            "train/test; " + GPT_MIXER + lr,
        )
        for eta, gpt, _, lr in GPT_RATES
    ],
    *[
        _in(
            GPT,
            f"the flat d=512 mixer (in place of the write-up's 1.76/1.81 mixer) is lower even than a GPT with an "
            f"optimized number of heads{eta} (validation)",
            "fixed",
            M + "flat_d512",
            M + gpt4,
            "05_v100",
            (("mixer", M + "gpt", ("mixer_train", "mixer_val")), ("GPT, optimized heads", M + gpt4, TV)),
            "train/test; " + GPT_MIXER + lr,
        )
        for eta, _, gpt4, lr in GPT_RATES
    ],
    *[
        _in(
            GPT,
            f"an optimized number of heads improves the original GPT{eta} (validation)",
            "fixed",
            M + gpt4,
            M + gpt,
            "05_v100",
            (("first heads", M + gpt, TV), ("optimized heads", M + gpt4, TV)),
            "train/test; the first head count is not stated: 16, as the Llama tables" + lr,
        )
        for eta, gpt, gpt4, lr in GPT_RATES
    ],
]

TIMED = "(measured on this machine)"  # ends the claims decided by measured time, which vary from machine to machine

# (text, fast, slow, published, (lo, hi) or None for the direction only, notebook, section): claims about time per
# step, decided by the time measured where the runs were made
SPEED = [
    (
        "a training step of the mixer takes less time than one of Llama (the write-up: 'around six times as fast') "
        + TIMED,
        "mixer/expanded_d256",
        "mixer/llama_d128",
        "'around six times as fast'",
        None,
        "01_mixer_vs_llama",
        TRAINING,
    ),
    (
        "a step of Llama (d=128) takes 10 to 20 times as long as a step of the mixer with twice its d_model " + TIMED,
        "mixer/expanded_d256",
        "mixer/llama_d128",
        "'between 10x and 20x the time'",
        (10.0, 20.0),
        "01_mixer_vs_llama",
        TRAINING,
    ),
    (
        "the expanded mixer's sample throughput is 20-50% smaller than the flat mixer's (d=256) " + TIMED,
        "mixer/flat_d256",
        "mixer/expanded_d256",
        "'20-50% smaller', depending on the expansion factor",
        (1.25, 2.0),
        "02_flat_vs_expanded",
        FLAT,
    ),
    (
        "the expanded mixer's sample throughput is 20-50% smaller than the flat mixer's (d=512) " + TIMED,
        "mixer/flat_d512",
        "mixer/expanded_d512",
        "'20-50% smaller', depending on the expansion factor",
        (1.25, 2.0),
        "02_flat_vs_expanded",
        FLAT,
    ),
    (
        "2 parallel convolutions are slower to train per step than the flat mixer " + TIMED,
        "mixer/flat_d512",
        "mixer/parallel2_d512",
        "'the model is slower to train per step'",
        None,
        "04_variants",
        PARALLEL,
    ),
]

# (text, better, worse, quote, notebook, section): claims the write-up measured at equal wall-clock time (its first
# comparison: 12 hours on one RTX 3060), read also at equal training time on this machine, beside the row at equal
# counted FLOPs (the reproducible reading). A CPU's time is not a GPU's: it follows FLOPs and small operations
# differently, so this row says what the clock of the machine that made the runs gives.
EQUAL_TIME = [
    (
        "at equal training time the expanded mixer (d=256) reaches a lower validation loss than Llama (d=128); "
        "CPU time here, not the write-up's GPU time " + TIMED,
        "mixer/expanded_d256",
        "mixer/llama_d128",
        (("mixer", "mixer/expanded_d256", ("val",)), ("Llama", "mixer/llama_d128", ("val",))),
        "01_mixer_vs_llama",
        TRAINING,
    ),
    # the heads table was made at equal wall-clock time, and "the main reason for this performance increase is that
    # the smaller number of attention heads results in more samples seen during training in a given compute budget"
    *[
        (
            f"at equal training time 4 heads beat {h} heads for Llama d=512 (validation); CPU time here, not the "
            f"write-up's GPU time " + TIMED,
            "mixer/llama_d512_h4",
            other,
            (("4 heads", "mixer/llama_d512_h4", ("val",)), (f"{h} heads", other, (key,))),
            "03_scaling",
            HEADS,
        )
        for h, other, key in (
            ("16", "mixer/llama_d512", "table_val"),
            ("8", "mixer/llama_d512_h8", "val"),
            ("2", "mixer/llama_d512_h2", "val"),
        )
    ],
]

# (text, faster, slower, notebook, section): claims that one arm's training step takes less time than another's,
# decided by the two timed side by side in the verdict notebook (lmcompanion.chapters.cost.time_lower): the write-up's
# reason for the heads table, "more samples seen during training in a given compute budget"
HEADS_TIME = [
    (
        f"a training step of Llama d=512 with {h} heads takes less time than with 16 heads (timed side by side) "
        + TIMED,
        f"mixer/llama_d512_h{h}",
        "mixer/llama_d512",
        "09_verdicts",
        HEADS,
    )
    for h in ("8", "4", "2")
]
HEADS_TIME_QUOTE = "'more samples seen during training in a given compute budget' (no time per step given)"

# "there is minimal overfitting after 5.6 epochs at twelve hours of training for the mixer"
OVERFIT = (
    "the mixer shows minimal overfitting after several epochs: its validation loss at the end is no worse than "
    "at the middle of training (within the chapter's margin of equal losses)",
    "mixer/expanded_d256",
)

# trends across the d_model tables: (label, arms): the table's three widths from 256 to 1024 and two between them
# (the book's; over three settings no trend can be decided at 5%)
TRENDS = {
    "flat mixer": ("mixer/flat_d256", "mixer/flat_d384", "mixer/flat_d512", "mixer/flat_d768", "mixer/flat_d1024"),
    "expanded mixer": (
        "mixer/expanded_d256",
        "mixer/expanded_d384",
        "mixer/expanded_d512",
        "mixer/expanded_d768",
        "mixer/expanded_d1024",
    ),
}


def trend_text(label: str) -> str:
    return (
        f"the {label}'s validation loss falls as d_model grows from 256 to 1024 (five widths: the table's three "
        "and two between them)"
    )


# The claims decided by computation
COUNTS = "our models have the original code's parameter counts at the write-up's sizes"
WORKED = "the masked convolution computes the write-up's 3 x 3 worked example (m(W) and X * m(W))"
LIVENESS = (
    "with the causal mask, every expansion above 1 leaves token-mixing weights that never get a gradient "
    "(and e = 1 none)"
)
MEMORY_LESS = (
    "a mixer needs less training memory than a same-width transformer at every context from 1,024 tokens "
    "(4, 8, 16 layers, d = 1024)"
)
MEMORY_GROWTH = (
    "the mixer's training memory grows far more slowly with context than the transformer's (512 to 2,048 tokens)"
)
BATCH16_LLAMA = (
    "at batch 16 and 512 tokens, in fp16 mixed precision, a Llama (d=128, 8 layers) needs over 10 / 2.4 "
    "times the training memory of a mixer of the same depth and double the width (more than 10 GB against "
    "2.4 GB)"
)
BATCH16_DOUBLE = (
    "at batch 16 and 512 tokens, in fp16 mixed precision, the d=256 transformer needs more than double "
    "the training memory of the flat d=512 mixer"
)
# The limits of the RTX 3060's 12 GB behind the write-up's batch choices (fp16 mixed precision, 8 layers, 512 tokens)
LIMIT_D256 = (
    "the largest 8-layer Llama that fits in 12 GB at batch 16 has d_model=256 (d_model=512 does not fit), "
    "counted in fp16 mixed precision"
)
LIMIT_D512 = "a Llama of d_model=512 fits in 12 GB at batch 8 but not at 16, counted in fp16 mixed precision"
LIMIT_D1024 = "a Llama of d_model=1024 fits in 12 GB at batch 4 but not at 8, counted in fp16 mixed precision"
LIMIT_B32 = (
    "batch 32 is the largest power of two at which the flat d_model=1024 mixer fits in 12 GB, counted in "
    "fp16 mixed precision"
)
LIMITS = (LIMIT_D256, LIMIT_D512, LIMIT_D1024, LIMIT_B32)
WIDTHS = "standard transformers of widths 350 and 1,300 have about 100 million and 995 million parameters"
JL = [f"Johnson-Lindenstrauss: 8 ln m for m = {what} is about {pub}" for what, _, pub in analysis.JL_PUBLISHED]

# Where each row that is not a Pair sits in the write-up
SECTION_OF = {
    WIDTHS: BACKGROUND,
    JL[0]: BACKGROUND,
    JL[1]: BACKGROUND,
    JL[2]: BACKGROUND,
    WORKED: BASICS,
    BATCH16_LLAMA: TRAINING,
    OVERFIT[0]: TRAINING,
    **{t[0]: t[6] for t in SPEED},
    **{t[0]: t[5] for t in EQUAL_TIME},
    **{t[0]: t[4] for t in HEADS_TIME},
    BATCH16_DOUBLE: FLAT,
    LIVENESS: FLAT,
    **{t: FLAT for t in LIMITS},
    trend_text("flat mixer"): SCALING,
    trend_text("expanded mixer"): SCALING,
    COUNTS: SCALING,
    MEMORY_LESS: SCALING,
    MEMORY_GROWTH: SCALING,
    JL[3]: CONCLUSIONS,
}


def section_of(claim: str) -> str:
    """The write-up's section of a row's claim."""
    for p in PAIRS:
        if p.text == claim:
            return p.section
    return SECTION_OF[claim]


def in_write_up_order(rows: list) -> list:
    """Rows (verdicts) sorted by the write-up's sections, keeping their order within a section."""
    return sorted(rows, key=lambda v: SECTIONS.index(section_of(v.claim)))


ALL_CLAIMS = [p.text for p in PAIRS] + list(SECTION_OF)  # every row's claim text
