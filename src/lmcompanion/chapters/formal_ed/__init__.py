"""The formal encoder–decoder chapter's analyses, one module per notebook.

- :mod:`.algorithm` (``01_algorithm``): θ, agreement with the literal transcription, the masks;
- :mod:`.training` (``02_training``): the task, ED-Training beside AdamW;
- :mod:`.inference` (``03_inference``): ED-Inference, the temperature, the verdicts;

The runs are configured in ``lmcompanion.experiments.formal_ed`` (the literal ED-Training's procedure in
``lmcompanion.experiments.ed_training``); the model and the write-up's three algorithms are in
``lmcompanion.models.formal_ed``.
"""
