"""The formal encoder–decoder chapter's analyses, one module per notebook.

- :mod:`.algorithm` (``01_algorithm``): θ, agreement with the literal transcription, the masks;
- :mod:`.training` (``02_training``): the task, ED-Training beside AdamW;
- :mod:`.inference` (``03_inference``): ED-Inference, the temperature, the verdicts;

The runs are configured in ``lmcompanion.experiments.formal_ed`` (the literal ED-Training's procedure in
``lmcompanion.experiments.ed_training``); the model and the write-up's three algorithms are in
``lmcompanion.models.formal_ed``.
"""

from ...ledger import Claim, register

_C = "formal_ed"

# The write-up's claims, in its order; each names the verdict row of notebooks/formal_ed/03_inference that tests it.
CLAIMS = register(_C, [
    Claim(_C, "P̂(x|z) = P̂θ(x1|z) P̂θ(x2|x1, z) … P̂θ(xℓX|x1:ℓX−1, z)", "Definition",
          row="Decoder self-attention is unidirectional (M_uni)"),
    Claim(_C, r"the Encoder-Decoder transformer outputs the probability distribution $P \in (0,1)^{|V| \times |x|}$ "
              r"where $P_{ij} = \hat P_\theta(x_{j+1} \mid x_{1:j}, z)$", "Algorithm",
          row="The batched model computes the write-up's ED-Transformer P"),
    Claim(_C, r"Z ← Z + MultiHeadAttention(Z, Z | $\mathcal{W}_\mathrm{enc}$, 1); "
              r"X ← X + MultiHeadAttention(X, Z | $\mathcal{W}_\mathrm{cross}$, 1)",
          "Algorithm", row="The encoder and the cross-attention see all of z (Mask ≡ 1)"),
    Claim(_C, "Given a dataset $(z^i, x^i)$, initial parameters θ with hyper-parameters T ∈ ℕ and η ∈ (0, ∞), it outputs "
              "the trained parameters θ̂", "Training",
          row="ED-Training (θ ← θ − η∇J per example) reduces the loss"),
    Claim(_C, "τ = 0 samples the most likely continuation", "Inference", row="τ = 0 samples the most likely token"),
    Claim(_C, "τ = 1 gives faithful sampling", "Inference", row="τ = 1 samples faithfully"),
    Claim(_C, "τ = ∞ samples uniformly randomly", "Inference", row="τ = ∞ samples uniformly"),
    Claim(_C, "we can give an encoder-decoder transformer a prompt z ∈ V* as input and receive the output sequence "
              "x ∈ V*", "Inference", row="ED-Inference terminates"),
    Claim(_C, "where the column-wise layer-norm is done by applying layer-norm to each column", "Algorithm",
          reason="a definition of the notation, implemented as written (ColwiseLayerNorm) and covered by the agreement "
                 "row"),
])
