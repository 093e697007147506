"""The ledger of the efficient-transformer write-up (K. Plumard, *efficient_transformer*, 2024, its README): every
claim it makes, in its order, with its own words, and the verdict row that tests it or one line saying why nothing
does. A claim names its row by the row's claim text (:mod:`.rows`); the chapter module refuses a text that is
not one of its rows and a row that no claim names (the schedule rows aside: the book's extension), so a renamed row
cannot leave a claim pointing nowhere. ``tests/test_ledger.py`` checks that every row named here is shown, at the
smoke profile, by one of the chapter's notebooks.
"""

from __future__ import annotations

from typing import Sequence

from ...ledger import Claim
from .rows import (
    ATTN_COSTS_MORE,
    BEST_ATTN,
    BEST_REPEAT,
    BLIND,
    COUNT_BASE,
    COUNT_VANILLA,
    DENSE,
    DENSE_REPEAT,
    ENC_LENGTH,
    EVEN_MORE,
    EVEN_MORE_SAME,
    EXPERTS_HELP,
    FREQUENCY,
    LAST_32,
    LAST_TOKEN,
    LATENT_LENGTH,
    LATENT_LOSS,
    MERGE_MAX,
    MERGE_MEAN,
    MLP,
    PERCEIVER_FASTER,
    PERCEIVER_WORSE,
    PER_COMPUTE,
    PER_COMPUTE_TREND,
    POSITIONS,
    REPEAT_FASTER,
    SCALES_BETTER,
    SHARED_CHEAPER,
    SHARED_MATCH,
    SIMILAR_AT_END,
    WIDE_ENC,
    WIDE_LATENT,
    faster_claim,
    fewer_flops_claim,
    in_mode,
    inference_claim,
    same_loss_claim,
)

CHAPTER = "hourglass"

_C = CHAPTER
_PLAN = "the author's plan or hypothesis for later work, not a result of the runs reported"
_OTHERS = "a statement about another paper's work, not about this write-up's model"
_DESIGN = "a statement of the design, implemented as described (the landing page's model section)"


def _both(finding: str) -> list[str]:
    """The rows of a finding tested in both modes (the chapter module refuses a row that it does not declare)."""
    return [in_mode(finding, False), in_mode(finding, True)]


def _claims(says: str, where: str, rows: Sequence[str]) -> list[Claim]:
    """One ledger line per row that tests ``says``."""
    return [Claim(_C, says, where, row=r) for r in rows]


_HEADLINE_SAYS = (
    "Both models are, when configure correctly, a lot faster than the vanilla transformer architecture "
    "while achieving the same validation loss"
)

# The write-up's claims, in its order, each as it prints it (with "..." where words are left out): each names the
# verdict row that tests it (its claim text, exactly) or says in one line why none does.
_PROCESS = "a statement of how the write-up's work was done, not a result of its runs"

CLAIMS = [
    Claim(
        _C,
        "My primary objective is the development of planning algorithms combined with LLMs, but before getting "
        "there, it will be necessary to find a way to reduce the inference cost of these models.",
        "Core Hypothesis",
        reason=_PLAN,
    ),
    Claim(
        _C,
        "We believe that composition is one of the keys to obtaining more generalist and data-efficient models.",
        "Core Hypothesis",
        reason=_PLAN,
    ),
    Claim(
        _C,
        "My implementation of this intuition involves separating the different distributions or information "
        "from a single dataset and training several versions of the same model on each of these distributions.",
        "Core Hypothesis",
        reason="a plan for later work: the write-up's experiments train one model on the whole "
        "dataset, and so does the book",
    ),
    Claim(
        _C,
        "In addition to potentially better generalization, we also gain efficiency and parallelization capacity "
        "for training the model",
        "Core Hypothesis",
        reason=_PLAN,
    ),
    Claim(
        _C,
        "we envision a potentially more generalist central module to which we will add information from "
        "sub-experts in an adaptive way",
        "Core Hypothesis",
        reason=_PLAN,
    ),
    Claim(
        _C,
        "The paper on the cBTM architecture has already shown that training experts on subsets of the same "
        "dataset discovered by unsupervised learning could match or even exceed the performance of a dense "
        "model.",
        "Core Hypothesis",
        reason=_OTHERS,
    ),
    Claim(
        _C,
        "However, at inference time, they used a discrete router based on input clustering",
        "Core Hypothesis",
        reason=_OTHERS,
    ),
    Claim(
        _C,
        "we am more interested in a router that is learned as in PHATGOOSE, as it seems to promise more "
        "comprehensive performance.",
        "Core Hypothesis",
        reason="the author's preference for another paper's learned router (PHATGOOSE) in later work; no model of "
        "the write-up has a router, so nothing here tests it",
    ),
    Claim(
        _C,
        "we like the idea of having a gate (linear layer followed by a sigmoid in their case) at the input of an "
        "expert that can tell whether this expert will contribute to the processing of the input or not.",
        "Core Hypothesis",
        reason=_PLAN,
    ),
    Claim(
        _C,
        "They chose to train each gate separately, which again has the advantage of being highly parallelizable",
        "Core Hypothesis",
        reason=_OTHERS,
    ),
    Claim(
        _C,
        "one might wonder if letting the gates become aware of the existence of the other sub-modules would "
        "allow them to better discern when the information produced by other sub-experts is not relevant enough",
        "Core Hypothesis",
        reason=_PLAN,
    ),
    Claim(_C, "we am thinking of moving towards something similar to CALM", "Core Hypothesis", reason=_PLAN),
    Claim(
        _C,
        "They demonstrated that this was much more relevant than fine-tuning the base model on the expert "
        "model's dataset",
        "Core Hypothesis",
        reason=_OTHERS,
    ),
    Claim(
        _C,
        "thus suggesting that it is probably more interesting and efficient to divide the tasks and then compose "
        "than to rely on a large model that does and stores everything",
        "Core Hypothesis",
        reason=_PLAN,
    ),
    Claim(_C, "which provides excellent results for its size", "Preliminary Explorations", reason=_OTHERS),
    Claim(
        _C,
        'we moved towards a more "any modal" version without the two separate audio/video and text pathways',
        "Preliminary Explorations",
        reason=_DESIGN,
    ),
    Claim(
        _C,
        "To further increase computational efficiency, we introduced a notion of groups in my sequence of "
        "tokens, and each group will provide K latent embeddings",
        "Preliminary Explorations",
        reason=_DESIGN,
    ),
    Claim(_C, "The Perceiver encoder is faster than the Transformer", "Preliminary Explorations", row=PERCEIVER_FASTER),
    *_claims("but performs less well than the Transformer encoder", "Preliminary Explorations", _both(PERCEIVER_WORSE)),
    Claim(_C, "similar to what was observed in Mirasol", "Preliminary Explorations", reason=_OTHERS),
    Claim(
        _C,
        "a latent block, the most important one that will take the vast majority of the processing",
        "Preliminary Explorations",
        reason="a statement of the design; the chapter counts each model's FLOPs as a whole, not per part",
    ),
    *_claims(
        "we add positional embeddings in each encoder layer after compression and in each decoder layer after "
        "upsampling, which seems to have helped",
        "Preliminary Explorations",
        _both(POSITIONS),
    ),
    Claim(
        _C,
        "These layers are shared between the encoder and decoder.",
        "Preliminary Explorations",
        reason="a statement of the design, implemented: each decoder level adds the position table of the matching "
        "encoder level",
    ),
    Claim(
        _C,
        "for a certain size limit of the sequence in the latent block, it is probably more interesting to have "
        "several channels of the same sequence (i.e., several different q, k, v) rather than to have a very long "
        "sequence",
        "Preliminary Explorations",
        reason="the postulate behind soft experts; the experts and lengths rows test what the write-up measured",
    ),
    Claim(
        _C,
        "if we reduce the initial latent size from K to K/m, we go in the attention module from $K^2$ to $s * (K/m)^2$",
        "Preliminary Explorations",
        reason="arithmetic of attention's cost, true by construction; the counted FLOPs rows measure the models",
    ),
    Claim(
        _C,
        "They can be likened to experts who will extract totally different information on the same sequence.",
        "Preliminary Explorations",
        reason="a picture of what the channels do; the experts rows measure what they do to the loss",
    ),
    Claim(
        _C,
        "we merge them by performing a convex combination of the s different features with the coefficients "
        "coming from a softmax applied to them",
        "Preliminary Explorations",
        reason="a statement of the design, implemented and checked by a unit test (the merge is a convex combination)",
    ),
    *_claims(
        "Merging via max and mean of the features was also considered, but according to the first experiments, "
        "this performed less well than the chosen version",
        "Preliminary Explorations",
        _both(MERGE_MAX) + _both(MERGE_MEAN),
    ),
    Claim(
        _C,
        "which is logical given the absence of non-linearities",
        "Preliminary Explorations",
        reason="the write-up's explanation of the merge rows' outcome, not a measurement of its own",
    ),
    Claim(
        _C,
        "but in return, we spend more computation time",
        "Preliminary Explorations",
        reason="the softmax adds elementwise work to a few blocks, not counted as FLOPs and too small to time apart "
        "from the noise of a step",
    ),
    Claim(
        _C,
        "the longer the sequence, the more information there will be to extract. The same goes for the size of "
        "the model",
        "Preliminary Explorations",
        reason="a conjecture; the lengths rows test the measured form (longer encoder and latent sequences help)",
    ),
    Claim(
        _C,
        "the dimension of the MLPs applied to each of the s experts is a multiple of the dimension of a vanilla "
        "MLP divided by s. The number of multiples is a hyperparameter.",
        "Preliminary Explorations",
        reason=_DESIGN,
    ),
    Claim(
        _C,
        "A variant allowing to share part of the MLPs while using the same number of qkv and specialized MLPs "
        "was also studied",
        "Preliminary Explorations",
        reason="a statement of what was run; the shared-expert arms are the chapter's (their claims have rows below)",
    ),
    Claim(
        _C,
        "This allows, among other things, to dedicate a space to store the information common to the experts and "
        "thus to increase the specialization of the MLPs associated with each of them.",
        "Preliminary Explorations",
        reason="a mechanism the write-up proposes and does not measure",
    ),
    Claim(
        _C,
        "For upsampling in the decoder, we opted for a replication of the nearest previous group until the "
        "appropriate size was reached once the current group sequence was added.",
        "Preliminary Explorations",
        reason=_DESIGN,
    ),
    Claim(
        _C,
        "This approach generally performs well",
        "Preliminary Explorations",
        reason="a judgement of repeat upsampling with no comparison named; every finding is measured in both modes",
    ),
    Claim(
        _C,
        "the lack of contextual understanding due to simple replication without taking position into account can "
        "limit expressiveness",
        "Preliminary Explorations",
        row=BLIND,
    ),
    Claim(
        _C, "we also investigated their method of upsampling via attention", "Preliminary Explorations", reason=_DESIGN
    ),
    Claim(_C, "a base model of 19.55M without soft experts", "Experimental Setup", row=COUNT_BASE),
    Claim(
        _C,
        "20.48M (n_layer=26, n_head=8, n_embd=256) for a vanilla transformer",
        "Experimental Setup",
        row=COUNT_VANILLA,
    ),
    Claim(_C, "It was the best we could do to be able to iterate easily", "Experimental Setup", reason=_PROCESS),
    Claim(
        _C,
        "the lr schedule has not been extensively tuned",
        "Experimental Setup",
        reason="a statement of the write-up's process; the protocol notebook runs its schedule and its code's",
    ),
    Claim(
        _C,
        "A linear schedule was used which provides same performances as the cosine schedule",
        "Experimental Setup",
        reason="cites another paper for the schedule; the chapter runs the README's linear schedule and the code's "
        "constant rate, not a cosine one",
    ),
    Claim(
        _C,
        "we considered an lr max of 4.8e-4 and a final lr of 10% of this value",
        "Experimental Setup",
        reason="a protocol statement, followed at every profile (the protocol notebook draws the schedule)",
    ),
    Claim(
        _C,
        "for which we warmup for 50% of the dataset and decay until 85%",
        "Experimental Setup",
        reason="a protocol statement, followed at every profile (the protocol notebook draws the schedule)",
    ),
    Claim(
        _C,
        "all experiments were performed for each of the two upsamplers",
        "Experimental Setup",
        reason="a statement of what was run: each finding not stated for one mode has a row per mode here, its "
        "repeat arms at every profile (experts, lengths) or at gpu and paper (the rest)",
    ),
    Claim(
        _C,
        "the attention upsampler scales better with the number of parameters",
        "Experimental Setup",
        reason="needs each mode over a range of model sizes; the chapter's sizes per mode (0, 6, 12 experts) are "
        "at most three, too few for a trend test at 5%",
    ),
    Claim(_C, "but consumes more computation time, which is to be expected", "Experimental Setup", row=REPEAT_FASTER),
    Claim(
        _C,
        "We consider the shakespear_char dataset and split it into 80% for training, 10% for validation and 10 "
        "for test.",
        "Experimental Setup",
        reason="a protocol statement, followed (the same file, split by characters as the original's script does)",
    ),
    Claim(
        _C,
        "we evaluate our model on the validation set splitting it into overlapping sequences of size l=769, with "
        "a step size of 32 and calculate the val loss over the last 32 tokens",
        "Experimental Setup",
        reason="a protocol statement, followed; the protocol notebook also scores the code's last token only",
    ),
    *_claims(
        "The more experts there are, the better the results are up to a certain point",
        "Key Observations",
        _both(EXPERTS_HELP),
    ),
    *_claims(
        "(generally until at least 6 you can expect good perf/compute)",
        "Key Observations",
        [in_mode(PER_COMPUTE, False), in_mode(PER_COMPUTE, True), PER_COMPUTE_TREND],
    ),
    *_claims("Increasing the size of MLPs also seems to help", "Key Observations", _both(MLP)),
    *_claims(
        "as does increasing the size of the latent vectors in the encoders or in the latent space",
        "Key Observations",
        _both(ENC_LENGTH) + _both(LATENT_LENGTH) + _both(WIDE_ENC) + _both(WIDE_LATENT),
    ),
    *_claims(
        "we can allow much larger ones with the repeat upsampling which take less time to compute than the "
        "attention version",
        "Key Observations",
        [REPEAT_FASTER, ATTN_COSTS_MORE],
    ),
    Claim(
        _C,
        "Increasing the frequency of layers with soft experts also seems to help in the context of attention "
        "upsampling.",
        "Key Observations",
        row=FREQUENCY,
    ),
    *_claims(
        "Sharing MLPs ... guarantees similar performance in terms of log-likelihood to the classic variant",
        "Key Observations",
        [in_mode(SHARED_MATCH, False), in_mode(SHARED_MATCH, True)],
    ),
    Claim(_C, "while being faster since there is less attention to compute", "Key Observations", row=SHARED_CHEAPER),
    Claim(
        _C,
        "regardless of the total number of experts and the size of the sequence in the latent space",
        "Key Observations",
        reason="the chapter compares shared experts at one number of experts and one latent length (6 experts, 448-96)",
    ),
    Claim(
        _C,
        "So generally the best performing way (log-likelihood/compute) to use the attention upsampling is to "
        "combine it with some shared experts.",
        "Key Observations",
        reason="a conclusion drawn from the two shared-expert claims, each tested by its rows",
    ),
    *_claims(
        "Using Denseformer in the latent blocks only helps for attention upsampling.",
        "Key Observations",
        [DENSE, DENSE_REPEAT],
    ),
    *_claims(
        "The latent reconstruction loss employed in Mirasol does not help here.", "Key Observations", _both(LATENT_LOSS)
    ),
    Claim(
        _C,
        "It is difficult to say whether this is due to the radically different scale (20M vs 3B) or if it is due "
        "to the modality",
        "Key Observations",
        reason="the author's speculation on a cause, not a measurement",
    ),
    Claim(
        _C,
        "The transformer was trained for one epoch, while variants of our architecture were trained for two epochs",
        "Plot",
        reason="a protocol statement, followed: the vanilla transformer takes half the "
        "updates; the scale table gives each run's passes",
    ),
    *_claims("since they are substantially faster", "Plot", [faster_claim(BEST_ATTN), faster_claim(BEST_REPEAT)]),
    Claim(
        _C,
        "All models lr were fully decayed (same schedule as stated above, only the amount of data seen differs).",
        "Plot",
        reason="a protocol statement, followed; the protocol notebook also runs the code's "
        "constant rate, which never decays, with its own rows",
    ),
    Claim(
        _C,
        "We would like to emphasize that these are results for the chosen lr schedule and on the "
        "shakespear_char dataset.",
        "Plot",
        reason="a caveat on scope; the protocol notebook runs the anchor and the vanilla transformer under both "
        "schedules",
    ),
    Claim(
        _C,
        "More experiments on diverse datasets including evals on downstream tasks as well as tuning the hp and "
        "scaling the models are needed to have the full picture",
        "Plot",
        reason=_PLAN,
    ),
    *_claims(
        "models with attention upsampling take more time than those using the repeat upsampling as expected",
        "Plot",
        [REPEAT_FASTER, ATTN_COSTS_MORE],
    ),
    Claim(
        _C,
        "Although they have similar performance at the end of the repeat upsampling models trainings.",
        "Plot",
        row=SIMILAR_AT_END,
    ),
    Claim(
        _C,
        "So if one is looking purely for speed, the repeat upsampling version offers generally a good tradeoff.",
        "Plot",
        reason="a conclusion from the time and similar-loss claims, each tested by its row",
    ),
    Claim(
        _C,
        "in most experiences made we still noticed that the attention version scales better with compute",
        "Plot",
        row=SCALES_BETTER,
    ),
    *_claims(
        "Both models are, when configure correctly, a lot faster than the vanilla transformer architecture",
        "Plot",
        [faster_claim(m) for m in (BEST_ATTN, BEST_REPEAT)] + [fewer_flops_claim(m) for m in (BEST_ATTN, BEST_REPEAT)],
    ),
    *_claims(
        "while achieving the same validation loss",
        "Plot",
        [same_loss_claim(m, s) for m in (BEST_ATTN, BEST_REPEAT) for s in (LAST_32, LAST_TOKEN)],
    ),
    Claim(
        _C,
        "at least 50% flops reduction at inference when we consider the attention upsampling",
        "Plot",
        row=inference_claim(BEST_ATTN),
    ),
    # "even more" is tested directly (the repeat model saves more than the attention model); that the repeat model also
    # saves at least 50% follows from it, and is the bound's own row
    *_claims("and even more with the repeat version", "Plot", [EVEN_MORE, EVEN_MORE_SAME]),
    Claim(
        _C,
        "at least 50% flops reduction at inference",
        "Plot (the bound, for the repeat version: even more implies it)",
        row=inference_claim(BEST_REPEAT),
    ),
    Claim(
        _C,
        "The current implementation is obsolete",
        "TODO",
        reason="a note on the original's muP code; the chapter offers its forward pass as an option (mup=True) and "
        "decides nothing with it",
    ),
]
