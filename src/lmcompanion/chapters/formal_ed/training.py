"""The formal chapter's second notebook: the task, ED-Training kept in the run store, and the two ways of training
side by side (curves, exact match)."""

from __future__ import annotations

from dataclasses import replace
from typing import Mapping, Sequence

from ...data import unigram_loss
from ...data.seq2seq import Seq2SeqDataConfig, dataset
from ...formats import number
from ...stats import span
from ...train import Run
from ...verdicts import AT_LEAST, INCONCLUSIVE, Verdict, below, claim
from .inference import exact_match


def _curve(run: Run, examples_per_step: int):
    """Train-loss records and evaluations of one run, against the number of examples seen."""
    import pandas as pd

    m = run.metrics()
    train = m.dropna(subset=["loss"])[["step", "loss"]] if "loss" in m else pd.DataFrame({"step": [], "loss": []})
    frame = pd.merge(train, run.evals(), on="step", how="outer").sort_values("step").reset_index(drop=True)
    return frame.assign(examples=frame["step"] * examples_per_step)


def curves(literal_runs: Sequence[Run], adamw_runs: Sequence[Run]) -> dict[str, list]:
    """Per method, one frame per seed: examples seen, training loss and the train/val evaluations."""
    return {
        "ED-Training (literal, SGD per example)": [_curve(r, 1) for r in literal_runs],
        "AdamW, batched (shared trainer)": [_curve(r, r.config.train.global_batch) for r in adamw_runs],
    }


def unigram_reference(cfg) -> tuple[str, dict[str, float]]:
    """("unigram loss", {panel column: loss}) for the training curves: the answer tokens' unigram loss on the train
    split (the training-loss panel) and on the held-out one (:func:`lmcompanion.data.unigram_loss`)."""
    return "unigram loss", {"loss": unigram_loss(cfg, "train"), "val": unigram_loss(cfg, "val")}


def task_table(data: Seq2SeqDataConfig):
    """The splits: how many examples, their lengths, and that no held-out source is in train."""
    import pandas as pd

    splits = dataset(data)
    train_set = set(splits["train"].sources)
    return pd.DataFrame([{"split": name, "examples": f"{len(s):,}",
                          "source lengths": f"{min(map(len, s.sources))}..{max(map(len, s.sources))}",
                          "mean length": number(sum(map(len, s.sources)) / len(s)),
                          "sources also in train": "(itself)" if name == "train" else
                          f"{sum(src in train_set for src in s.sources)}"} for name, s in splits.items()]
                        ).set_index("split")


def encoding_table(data: Seq2SeqDataConfig, n: int = 3):
    """The first ``n`` training examples as the model receives them: z, z_valid, x (input) and targets."""
    import pandas as pd

    s = dataset(data)["train"]
    width = data.width
    rows = []
    for i in range(n):
        for key, t in (("z", s.z[i]), ("z_valid", s.z_valid[i].long()), ("x (input)", s.x[i]),
                       ("targets", s.targets[i])):
            cells = [str(v) for v in t.tolist()] + [""] * (width - t.numel())
            rows.append({"example": f"{s.sources[i]} → {s.answers[i]}", "tensor": key,
                         **{f"col {j}": c for j, c in enumerate(cells)}})
    return pd.DataFrame(rows).set_index(["example", "tensor"])


def accuracy_table(groups: Mapping[str, Sequence], data: Seq2SeqDataConfig, *, limit: int | None = 2000):
    """Per method (label -> runs, trainer or literal): final train/val loss and exact match at τ = 0 on (the first
    ``limit`` examples of) train and val, as 'mean [min, max]' over seeds."""
    import pandas as pd

    rows = []
    for label, runs in groups.items():
        accs = {"train": [], "val": []}
        for run in runs:
            model = run.load_model()
            for split in accs:
                accs[split].append(exact_match(model, data, split, limit=limit))
        rows.append({"method": label, "seeds": len(runs),
                     "train loss (final)": span([r.summary["final"]["train"] for r in runs], ".4f"),
                     "val loss (final)": span([r.summary["final"]["val"] for r in runs], ".4f"),
                     "exact match, train (τ = 0)": span(accs["train"], ".3f"),
                     "exact match, val (τ = 0)": span(accs["val"], ".3f"),
                     "examples checked (train, val)": ", ".join(
                         f"{min(limit or len(s), len(s)):,}" for s in dataset(data).values())})
    return pd.DataFrame(rows).set_index("method")


def verdict_literal_training(literal_runs: Sequence[Run]) -> Verdict:
    before = [r.summary["initial"]["val"] for r in literal_runs]
    after = [r.summary["final"]["val"] for r in literal_runs]
    return claim("ED-Training (θ ← θ − η∇J per example) reduces the loss", "T epochs of plain SGD on J(θ)",
                 after, before, ("held-out loss after", "before"))


def verdict_accuracy(accuracies: Sequence[float], target: float | None, profile: str) -> Verdict:
    """Every seed's held-out exact match against our bar (a one-sided one-sample t-test of the error rates)."""
    text = "Trained with AdamW, the model solves the task"
    ours = f"held-out exact match at τ = 0: {span(accuracies, '.4f')}"
    if target is None:
        return Verdict(text, "(no experiment in the write-up)", ours, f"{INCONCLUSIVE} (not judged at the {profile} "
                       "profile)", seeds=f"{len(accuracies)} seeds", chance="", form=AT_LEAST)
    # at least a bound: the accuracy at least the bar, tested as its error rate at most one minus the bar
    v = below(text, "(no experiment in the write-up)", [1 - a for a in accuracies], 1 - target, log=False)
    return replace(v, ours=f"{ours}; our bar at this profile: ≥ {target}", form=AT_LEAST)
