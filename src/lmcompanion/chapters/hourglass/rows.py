"""The rows of the efficient hierarchical transformer chapter's verdict table, as data: its arms, each claim of the
write-up that a row tests, in the write-up's words (:data:`WORDS`) or in the chapter's where the write-up gives no
sentence to quote, the findings tested in both upsampling modes (:data:`FINDINGS`), and the margins fixed from the
write-up's own numbers before any run (:func:`similar_margin`, :func:`same_margin`, :data:`LOT_FASTER`). How each
row is decided is in the chapter module; which claim of the write-up each row tests, or why a claim has no row, is
in :mod:`.claims` (the ledger).
"""

from __future__ import annotations

from typing import Sequence

from ... import experiments
from ...formats import number
from .. import cost

CHAPTER = "hourglass"

# --- the arms ---------------------------------------------------------------------------------------------------
H = "hourglass/"
ANCHOR = H + "attn_448_96_e6"  # the write-up's experts sweep: 448-96, attention upsampling, 6 soft experts
REPEAT = H + "repeat_448_96_e6"  # the anchor with repeat upsampling
VANILLA = H + "vanilla"
BEST_ATTN, BEST_REPEAT = H + "attn_384_32_e6", H + "repeat_512_32_e6"  # the write-up's best models (best_models.png)


def twin(name: str) -> str:
    """The repeat-upsampling twin of an attention-upsampling arm ("All experiments were performed for each of the
    two upsamplers")."""
    return name.replace(H + "attn_", H + "repeat_", 1)


def twins(names: Sequence[str]) -> tuple[str, ...]:
    return tuple(twin(n) for n in names)


CONSTANT = (H + "attn_448_96_e6_constant_lr", H + "vanilla_constant_lr")  # the code's constant rate
SCHEDULES = {"the README's schedule": (ANCHOR, VANILLA), "the code's constant rate": CONSTANT}
SWEEP = (H + "attn_448_96_base", H + "attn_448_96_e2", H + "attn_448_96_e4", ANCHOR)  # up to 6: gpu and paper
SWEEP_COUNTS = (0, 2, 4, 6)
BASE = H + "base_256_32"  # "a base model of 19.55M without soft experts": counted, not trained
S0 = H + "attn_448_96_e6_s0"
PERCEIVER = H + "attn_448_96_e6_perceiver"

INFERENCE_CUT = 0.5  # "at least 50% flops reduction at inference"


# --- the findings -----------------------------------------------------------------------------------------------
# Every finding of the write-up is tested in both upsampling modes ("Overall, all experiments were performed for each
# of the two upsamplers"): each pair below gives a row for the attention arms and one for their repeat twins, except
# the findings the write-up states for attention upsampling only.

ATTN_MODE, REPEAT_MODE = " (attention upsampling)", " (repeat upsampling)"


def similar_margin() -> float:
    """The margin of "similar performance" in nats: the gap between the write-up's best attention and best repeat
    models at the end of their training (best_models.png), which it calls similar. It is also the margin of the
    findings that something "does not help" (no gain): a gain smaller than a gap the write-up calls similar."""
    best_attn, best_repeat = (experiments.get(n).published["val"] for n in (BEST_ATTN, BEST_REPEAT))
    return round(abs(best_repeat - best_attn), 3)


# The findings decided in the strictly-better form, except those the write-up says "does not help" (NO_GAINS): no
# gain within similar_margin() (lmcompanion.chapters.verdict_forms), never "hurts".
# Each: (claim, better (or, for a no-gain finding, the arm with the feature), worse (without it), notebook, both modes)
FINDINGS = [
    (EXPERTS_HELP := "6 soft experts beat none", ANCHOR, H + "attn_448_96_base", "02_experts", True),
    (
        FREQUENCY := "soft experts in every latent block beat every 4th (attention upsampling)",
        H + "attn_448_96_e6_every1",
        ANCHOR,
        "02_experts",
        False,
    ),
    (MLP := "bigger expert MLPs help (d = n against d = n/6)", H + "attn_448_96_e6_mlp6", ANCHOR, "02_experts", True),
    (
        MERGE_MAX := "the softmax merge of the experts beats a max merge",
        ANCHOR,
        H + "attn_448_96_e6_merge_max",
        "02_experts",
        True,
    ),
    (
        MERGE_MEAN := "the softmax merge of the experts beats a mean merge",
        ANCHOR,
        H + "attn_448_96_e6_merge_mean",
        "02_experts",
        True,
    ),
    (
        ENC_LENGTH := "a longer encoder sequence helps (512-32 against 384-32)",
        H + "attn_512_32_e6",
        H + "attn_384_32_e6",
        "03_lengths",
        True,
    ),
    (
        LATENT_LENGTH := "a longer latent sequence helps (448-96 against 448-32)",
        ANCHOR,
        H + "attn_448_32_e6",
        "03_lengths",
        True,
    ),
    (
        PERCEIVER_WORSE := 'the transformer compressor beats the Perceiver compressor, which "performs less well"',
        ANCHOR,
        H + "attn_448_96_e6_perceiver",
        "03_lengths",
        True,
    ),
    (
        POSITIONS
        := "positions added after each compression and each upsampling help (without them the loss is higher)",
        ANCHOR,
        H + "attn_448_96_e6_no_level_pos",
        "03_lengths",
        True,
    ),
    (
        WIDE_ENC := "wider latent vectors in the encoders help (level-1 width 1.5x)",
        H + "attn_448_96_e6_wide_enc",
        ANCHOR,
        "03_lengths",
        True,
    ),
    (
        WIDE_LATENT := "wider latent vectors in the latent space help (latent width 1.5x)",
        H + "attn_448_96_e6_wide_latent",
        ANCHOR,
        "03_lengths",
        True,
    ),
    (
        DENSE := "DenseFormer helps with attention upsampling",
        H + "attn_448_96_e6_dense",
        ANCHOR,
        "04_upsampling",
        False,
    ),
    (
        DENSE_REPEAT := f"DenseFormer does not help with repeat upsampling (no gain: a gain under {similar_margin():g} "
        "nats)",
        H + "repeat_448_96_e6_dense",
        REPEAT,
        "04_upsampling",
        False,
    ),
    (
        LATENT_LOSS := f"the latent reconstruction loss does not help (no gain, 12 experts: a gain under "
        f"{similar_margin():g} nats)",
        H + "attn_448_96_e12_latent",
        H + "attn_448_96_e12",
        "04_upsampling",
        True,
    ),
]
NO_GAINS = (DENSE_REPEAT, LATENT_LOSS)


def in_mode(text: str, repeat: bool) -> str:
    """The row of a finding tested in both modes, in one of them (inside the text's closing parenthesis, if any)."""
    mode = (REPEAT_MODE if repeat else ATTN_MODE).strip(" ()")
    return f"{text[:-1]}; {mode})" if text.endswith(")") else f"{text} ({mode})"


def finding_rows() -> list[tuple[str, str, str, str, str]]:
    """(row text, the finding's text, better, worse, notebook) of every pair row, each finding in both modes where
    the write-up does not restrict it to one."""
    out = []
    for text, better, worse, notebook, both in FINDINGS:
        if not both:
            out.append((text, text, better, worse, notebook))
            continue
        out.append((in_mode(text, False), text, better, worse, notebook))
        out.append((in_mode(text, True), text, twin(better), twin(worse), notebook))
    return out


# The write-up's own words, where a claim has no published number (the published column of its row).
_LATENT_SIZE = (
    '"Increasing the size of MLPs also seems to help, as does increasing the size of the latent vectors in '
    'the encoders or in the latent space"'
)
_MERGES = '"Merging via max and mean of the features was also considered, but ... this performed less well"'
WORDS = {
    EXPERTS_HELP: '"The more experts there are, the better the results are up to a certain point"',
    MLP: '"Increasing the size of MLPs also seems to help"',
    FREQUENCY: '"Increasing the frequency of layers with soft experts also seems to help in the context of attention '
    'upsampling"',
    PERCEIVER_WORSE: '"The Perceiver encoder is faster than the Transformer but performs less well"',
    POSITIONS: '"we add positional embeddings in each encoder layer after compression and in each decoder layer after '
    'upsampling, which seems to have helped"',
    WIDE_ENC: _LATENT_SIZE,
    WIDE_LATENT: _LATENT_SIZE,
    ENC_LENGTH: '"large seq lengths in the encoder blocks or the latent blocks is better"',
    LATENT_LENGTH: '"large seq lengths in the encoder blocks or the latent blocks is better"',
    MERGE_MAX: _MERGES,
    MERGE_MEAN: _MERGES,
    DENSE: '"Using Denseformer in the latent blocks only helps for attention upsampling"',
    DENSE_REPEAT: '"Using Denseformer in the latent blocks only helps for attention upsampling"',
    LATENT_LOSS: '"The latent reconstruction loss employed in Mirasol does not help here"',
}

# The upsampling claims ("We can observe that models with attention upsampling take more time than those using the
# repeat upsampling ... Although they have similar performance at the end of the repeat upsampling models trainings
# ... the attention version scales better with compute"), on the 448-96 anchor in both modes.
REPEAT_FASTER = (
    "repeat upsampling takes less time per training step than attention upsampling (448-96, 6 soft "
    "experts; timed side by side)"
)
PERCEIVER_FASTER = (
    "the Perceiver compressor takes less time per training step than the transformer compressor (timed side by side)"
)
SCALES_BETTER = (
    "attention upsampling scales better with compute: its lead over repeat grows with training FLOPs "
    "(the gap at the repeat runs' evaluations, per seed)"
)
COUNT_BASE = "the base model without soft experts has 19.55M parameters (as the original counts)"
SHARED_CHEAPER = (
    "... at lower cost: 1 shared expert of 6 costs fewer training FLOPs than none (counted at the write-up's sizes)"
)
ATTN_COSTS_MORE = (
    "attention upsampling costs more than repeat (training FLOPs per token, counted at the write-up's sizes)"
)
BLIND = (
    "in repeat mode the blind offsets of a group (which see their own group only through their own character) "
    "predict worse than the offsets that see it"
)
COUNT_VANILLA = "the vanilla transformer has 20.48M parameters (as the original counts)"

# "A lot faster": beyond the book's margin of a similar time (cost.SIMILAR, a factor 1.25 either way, fixed before any
# measurement), so below 1 / 1.25 = 0.8 of the vanilla transformer's time per step (or FLOPs per token).
LOT_FASTER = 1 / cost.SIMILAR


def same_margin() -> float:
    """The margin of "the same validation loss" in nats, fixed from the write-up's numbers alone: the largest gap
    between one of its two best models and the vanilla transformer in the plot that sentence describes
    (best_models.png), which it calls the same: 0.09 (2.475 against 2.565)."""
    vanilla = experiments.get(VANILLA).published["val"]
    return round(max(abs(experiments.get(n).published["val"] - vanilla) for n in (BEST_ATTN, BEST_REPEAT)), 3)


SIMILAR_AT_END = (
    f"attention and repeat upsampling reach a similar validation loss at the end of the repeat runs "
    f"(within {similar_margin():.2f} nats; attention read at the repeat runs' final training FLOPs)"
)


def _title(name: str) -> str:
    return experiments.get(name).title


# the headline: "Both models are, when configure correctly, a lot faster than the vanilla transformer architecture
# while achieving the same validation loss (at least 50% flops reduction at inference when we consider the attention
# upsampling and even more with the repeat version)"
LAST_32, LAST_TOKEN = "last 32", "last token"
_SCORED = {
    LAST_32: "scored on the last 32 tokens of each window, as the README states",
    LAST_TOKEN: "scored on the last token of each window, as the original code and its plots score",
}


BEST_LABEL = {
    BEST_ATTN: "the best attention model (384-32, 6 soft experts)",
    BEST_REPEAT: "the best repeat model (512-32, 6 soft experts)",
}


def same_loss_claim(model: str, scoring: str = LAST_32) -> str:
    return (
        f"{BEST_LABEL[model]} reaches the same validation loss as the vanilla transformer (within "
        f"{same_margin():.2f} nats either way; {_SCORED[scoring]})"
    )


def faster_claim(model: str) -> str:
    return (
        f"{BEST_LABEL[model]} is a lot faster than the vanilla transformer: under {LOT_FASTER:.1f} of its time per "
        "training step (timed side by side)"
    )


def fewer_flops_claim(model: str) -> str:
    return (
        f"{BEST_LABEL[model]} is a lot cheaper than the vanilla transformer: under {LOT_FASTER:.1f} of its "
        "training FLOPs per token (counted at the write-up's sizes)"
    )


def inference_claim(model: str) -> str:
    return (
        f"at least {INFERENCE_CUT:.0%} fewer FLOPs at inference than the vanilla transformer "
        f"({_title(model)}; forward FLOPs per token, counted at the write-up's sizes)"
    )


EVEN_MORE = (
    "even more with the repeat version: the best repeat model (512-32) saves a larger share of the vanilla "
    "transformer's inference FLOPs than the best attention model (384-32); counted at the write-up's sizes"
)
EVEN_MORE_SAME = (
    "even more with the repeat version, on one model: 448-96 with repeat upsampling saves a larger share "
    "of the vanilla transformer's inference FLOPs than with attention upsampling; counted at the "
    "write-up's sizes"
)

# the experts, per compute: "(generally until at least 6 you can expect good perf/compute)", a lower bound on the
# number of experts worth their compute, tested at equal training FLOPs
PER_COMPUTE = (
    "6 soft experts give good performance per compute: read at the training FLOPs where the model without "
    "experts ends, the 6-expert model's validation loss is lower"
)
PER_COMPUTE_TREND = (
    "up to 6 soft experts, each step up gives good performance per compute: the validation loss at "
    "the no-expert model's final training FLOPs falls from 0 through 2 and 4 to 6 experts (attention "
    "upsampling)"
)
SHARED_MATCH = (
    "1 shared expert of 6 gives a similar validation loss to none, the classic variant (within "
    f"{similar_margin():.2f} nats either way)"
)


def schedule_claim(schedule: str) -> str:
    return (
        f"(beyond the write-up) under {schedule}, the 448-96 anchor reaches the same validation loss as the "
        f"vanilla transformer (within {same_margin():.2f} nats either way)"
    )


def minutes_words(model: str) -> str:
    """The write-up's minutes for ``model`` and the vanilla transformer (best_models.png), per epoch."""
    m, v = experiments.get(model).published["minutes"], experiments.get(VANILLA).published["minutes"]
    return (
        f'"a lot faster"; best_models.png: {m} min for two epochs against {v} for one (about '
        f"{number(m / 2 / v)} of the time per epoch)"
    )


def published_pair_or_none(better: str, worse: str) -> str:
    pb, pw = experiments.get(better).published, experiments.get(worse).published
    return f"{pb['val']} vs {pw['val']}" if "val" in pb and "val" in pw else ""


SCALES_WORDS = '"in most experiences made we still noticed that the attention version scales better with compute"'
