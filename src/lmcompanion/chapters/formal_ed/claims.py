"""The ledger of the formal encoder–decoder write-up (the transformer defined by its algorithms, ED-Transformer,
ED-Training and ED-Inference): every claim, in its order, with its own words (or its pseudocode, transcribed), and
the verdict row that tests it (:mod:`.rows`, every one shown by ``notebooks/formal_ed/03_inference``) or one line
saying why nothing does.
"""

from __future__ import annotations

from ...ledger import Claim
from . import rows

_C = rows.CHAPTER

CLAIMS = [
    Claim(
        _C,
        r"$\hat{P}(x|z)=\hat{P}_{\theta}(x_{1}|z)\hat{P}_{\theta}(x_{2}|x_{1},z)\dots "
        r"\hat{P}_{\theta}(x_{\ell_{X}}|x_{1:\ell_{X}-1},z)$",
        "Definition",
        row=rows.UNI,
    ),
    Claim(
        _C,
        r"the Encoder-Decoder transformer outputs the probability distribution $P\in (0,1)^{|V|,|x|}$ where "
        r"$P_{ij}=\hat{P}_{\theta}(x_{j+1}|x_{1:j},z)$",
        "Algorithm",
        row=rows.AGREEMENT,
    ),
    Claim(
        _C,
        r"Z ← Z + MultiHeadAttention(Z, Z | $\mathcal{W}_\mathrm{enc}$, 1); "
        r"X ← X + MultiHeadAttention(X, Z | $\mathcal{W}_\mathrm{cross}$, 1)",
        "Algorithm (its pseudocode, transcribed)",
        row=rows.FULL,
        quoted=False,
    ),
    Claim(
        _C,
        r"Given a dataset $(z^i,x^i)_{i\in[n]}$, initial parameters $\theta$ with hyper-parameters "
        r"$T\in \mathbb{N}$ and $\eta\in (0,\infty)$, it outputs the trained parameters $\hat{\theta}$",
        "Training",
        row=rows.REDUCES,
    ),
    Claim(_C, r"$\tau=0$ samples the most likely continuation", "Inference", row=rows.TAU0),
    Claim(_C, r"$\tau=1$ gives faithful sampling", "Inference", row=rows.TAU1),
    Claim(_C, r"$\tau =\infty$ samples uniformly randomly", "Inference", row=rows.TAUINF),
    Claim(
        _C,
        r"we can give an encoder-decoder transformer a prompt $z\in V^*$ as input and receive the output "
        r"sequence $x\in V^*$",
        "Inference",
        row=rows.TERMINATES,
    ),
    Claim(
        _C,
        "where the column-wise layer-norm is done by applying layer-norm to each column",
        "Algorithm",
        reason="a definition of the notation, implemented as written (ColwiseLayerNorm) and covered by the agreement "
        "row",
    ),
]
