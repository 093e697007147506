"""The formal encoder–decoder chapter's analyses, one module per notebook.

- :mod:`.algorithm` (``01_algorithm``): θ, agreement with the literal transcription, the masks;
- :mod:`.training` (``02_training``): the task, ED-Training beside AdamW;
- :mod:`.inference` (``03_inference``): ED-Inference, the temperature, the verdicts;

The runs are configured in ``lmcompanion.experiments.formal_ed`` (the literal ED-Training's procedure in
``lmcompanion.experiments.ed_training``); the model and the write-up's three algorithms are in
``lmcompanion.models.formal_ed``.
"""

from ...claims import Context, Row, register as register_rows
from ...experiments.formal_ed import LITERAL, NAME
from ...ledger import Claim, register
from ...verdicts import CHECK, Verdict, arms_of, gate
from . import algorithm, inference, training

_C = "formal_ed"

# The verdict rows of the chapter's last notebook, decided from what it computes (``Context.extra``): the agreement
# table and the mask checks (``algorithm``), the temperature checks and the sweep (``inference``), the held-out
# accuracy of every AdamW seed and the profile's bar; the runs are the AdamW runs and the literal ED-Training runs.
AGREEMENT = "The batched model computes the write-up's ED-Transformer P"
UNI, FULL = "Decoder self-attention is unidirectional (M_uni)", "The encoder and the cross-attention see all of z (Mask ≡ 1)"
TAU0, TAU1, TAUINF = "τ = 0 samples the most likely token", "τ = 1 samples faithfully", "τ = ∞ samples uniformly"
TERMINATES = "ED-Inference terminates"
REDUCES = "ED-Training (θ ← θ − η∇J per example) reduces the loss"
SOLVES = "Trained with AdamW, the model solves the task"
ORDER = "Greedy (τ = 0) answers are more often right than uniform (τ = ∞) ones"


def _reduces(ctx: Context) -> Verdict:
    """ED-Training lowers the held-out loss, the trained model gated on it (its loss after training)."""
    return gate(training.verdict_literal_training(ctx.runs[LITERAL]), arms_of(ctx.runs, "val", LITERAL))


def _solves(ctx: Context) -> Verdict:
    return gate(training.verdict_accuracy(ctx.extra["accuracy"], ctx.extra["target"], ctx.profile or "recorded"),
                arms_of(ctx.runs, "val", NAME))


def _order(ctx: Context) -> Verdict:
    return gate(inference.verdict_tau_order(ctx.extra["sweep"]), arms_of(ctx.runs, "val", NAME))


ROWS = register_rows(_C, [
    Row(AGREEMENT, "03_inference", lambda ctx: algorithm.verdict_agreement(ctx.extra["agreement"]), kind=CHECK),
    Row(UNI, "03_inference", lambda ctx: algorithm.verdict_masks(ctx.extra["masks"])[0], kind=CHECK),
    Row(FULL, "03_inference", lambda ctx: algorithm.verdict_masks(ctx.extra["masks"])[1], kind=CHECK),
    *[Row(text, "03_inference", lambda ctx, i=i: inference.verdict_temperatures(ctx.extra["checks"])[i], kind=CHECK)
      for i, text in enumerate((TAU0, TAU1, TAUINF))],
    Row(TERMINATES, "03_inference", lambda ctx: inference.verdict_termination(ctx.extra["sweep"]), kind=CHECK),
    Row(REDUCES, "03_inference", _reduces, arms=(LITERAL,)),
    Row(SOLVES, "03_inference", _solves, arms=(NAME,), extension=True),
    Row(ORDER, "03_inference", _order, arms=(NAME,), extension=True),
])

# The write-up's claims, in its order; each names the verdict row of notebooks/formal_ed/03_inference that tests it.
CLAIMS = register(_C, [
    Claim(_C, r"$\hat{P}(x|z)=\hat{P}_{\theta}(x_{1}|z)\hat{P}_{\theta}(x_{2}|x_{1},z)\dots "
              r"\hat{P}_{\theta}(x_{\ell_{X}}|x_{1:\ell_{X}-1},z)$", "Definition",
          row="Decoder self-attention is unidirectional (M_uni)"),
    Claim(_C, r"the Encoder-Decoder transformer outputs the probability distribution $P\in (0,1)^{|V|,|x|}$ where "
              r"$P_{ij}=\hat{P}_{\theta}(x_{j+1}|x_{1:j},z)$", "Algorithm",
          row="The batched model computes the write-up's ED-Transformer P"),
    Claim(_C, r"Z ← Z + MultiHeadAttention(Z, Z | $\mathcal{W}_\mathrm{enc}$, 1); "
              r"X ← X + MultiHeadAttention(X, Z | $\mathcal{W}_\mathrm{cross}$, 1)",
          "Algorithm (its pseudocode, transcribed)", row="The encoder and the cross-attention see all of z (Mask ≡ 1)",
          quoted=False),
    Claim(_C, r"Given a dataset $(z^i,x^i)_{i\in[n]}$, initial parameters $\theta$ with hyper-parameters "
              r"$T\in \mathbb{N}$ and $\eta\in (0,\infty)$, it outputs the trained parameters $\hat{\theta}$", "Training",
          row="ED-Training (θ ← θ − η∇J per example) reduces the loss"),
    Claim(_C, r"$\tau=0$ samples the most likely continuation", "Inference", row="τ = 0 samples the most likely token"),
    Claim(_C, r"$\tau=1$ gives faithful sampling", "Inference", row="τ = 1 samples faithfully"),
    Claim(_C, r"$\tau =\infty$ samples uniformly randomly", "Inference", row="τ = ∞ samples uniformly"),
    Claim(_C, r"we can give an encoder-decoder transformer a prompt $z\in V^*$ as input and receive the output sequence "
              r"$x\in V^*$", "Inference", row="ED-Inference terminates"),
    Claim(_C, "where the column-wise layer-norm is done by applying layer-norm to each column", "Algorithm",
          reason="a definition of the notation, implemented as written (ColwiseLayerNorm) and covered by the agreement "
                 "row"),
])
