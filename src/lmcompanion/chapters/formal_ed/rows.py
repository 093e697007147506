"""The rows of the formal encoder–decoder chapter's verdict table, as data: the arms whose runs decide some of them
and the claim text of every row, in the order of the verdict table: the checks of the write-up's algorithms that a
computation decides, then the claims decided by training runs (the book's own two last). Every row is shown by the
chapter's last notebook (:data:`NOTEBOOK`), which computes what decides it. How each row is decided is in the chapter
module; which claim of the write-up each row tests is in :mod:`.claims` (the ledger).
"""

from __future__ import annotations

from ...experiments.formal_ed import LITERAL, NAME

CHAPTER = "formal_ed"
NOTEBOOK = "03_inference"  # the notebook whose page shows every row

# --- the arms ---------------------------------------------------------------------------------------------------
# NAME: the AdamW runs (the shared trainer); LITERAL: the literal ED-Training runs (SGD per example). Both are
# configured in lmcompanion.experiments.formal_ed.
ARMS = (NAME, LITERAL)

# --- the rows ---------------------------------------------------------------------------------------------------
# checks of the write-up's algorithms, decided by computation (the first notebook's agreement table and masks, the
# third's temperature checks and sweep)
AGREEMENT = "The batched model computes the write-up's ED-Transformer P"
UNI = "Decoder self-attention is unidirectional (M_uni)"
FULL = "The encoder and the cross-attention see all of z (Mask ≡ 1)"
TAU0, TAU1, TAUINF = "τ = 0 samples the most likely token", "τ = 1 samples faithfully", "τ = ∞ samples uniformly"
TERMINATES = "ED-Inference terminates"
# claims about training, decided by the runs
REDUCES = "ED-Training (θ ← θ − η∇J per example) reduces the loss"
SOLVES = "Trained with AdamW, the model solves the task"  # the book's own row (the write-up reports no experiment)
ORDER = "Greedy (τ = 0) answers are more often right than uniform (τ = ∞) ones"  # the book's own row

ALL_CLAIMS = [AGREEMENT, UNI, FULL, TAU0, TAU1, TAUINF, TERMINATES, REDUCES, SOLVES, ORDER]

__all__ = [
    "AGREEMENT",
    "ALL_CLAIMS",
    "ARMS",
    "CHAPTER",
    "FULL",
    "LITERAL",
    "NAME",
    "NOTEBOOK",
    "ORDER",
    "REDUCES",
    "SOLVES",
    "TAU0",
    "TAU1",
    "TAUINF",
    "TERMINATES",
    "UNI",
]
