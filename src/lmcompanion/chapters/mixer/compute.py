"""Equal compute, equal steps and equal time: the arms' budgets, their curves against counted FLOPs and measured
time, the equal-step and equal-time readings, throughput, and the time estimates of the gpu and paper profiles.

Every function takes runs grouped by experiment name (``S.arms(names, by="name")``) or by the write-up's label, and
reads what a run recorded (its config, evaluations and summary), so recorded runs from other machines work too.
"""

from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from ... import experiments, models, plots, stats
from ... import data
from ...experiments import mixer as exp
from ...formats import number, si
from ...stats import span


# --- what a run computes ----------------------------------------------------------------------------------------


def seconds_per_step(run) -> float:
    """Measured training seconds per step of a finished run (evaluation excluded)."""
    return run.summary["train_time_s"] / run.summary["steps"]


def curve(run) -> pd.DataFrame:
    """A run's evaluations with the compute spent (counted PFLOP) and the training time measured to each step."""
    ev = run.evals().copy()
    ev["PFLOP"] = ev["step"] * run.config.flops_per_step() / 1e15
    ev["seconds"] = ev["step"] * seconds_per_step(run)
    return ev


def arm_table(names: Sequence[str], profile: str) -> pd.DataFrame:
    """How each arm is built at ``profile``: its model, batch, learning rate, counted FLOPs and the step count that
    the profile's budget buys; its size beside the write-up's."""
    budget = exp.budget(profile)
    rows = []
    for name in names:
        cfg = experiments.config(name, profile, device="cpu")
        paper = experiments.config(name, "paper", device="cpu")
        m = cfg.model
        heads = getattr(m, "n_head", 1)
        rows.append(
            {
                "experiment": name,
                "write-up label": experiments.get(name).title,
                "model here": f"{m.family} d={m.n_embed} n={m.n_layer} L={m.context_size}"
                + (f" h={heads}" if heads > 1 else ""),
                "batch": cfg.train.global_batch,
                "lr": f"{cfg.train.lr:g}",
                "params here": f"{models.num_params(m):,}",
                "params (write-up size)": f"{models.num_params(paper.model):,}",
                "FLOPs/step (counted)": si(cfg.flops_per_step(), "FLOP"),
                "steps": f"{cfg.train.max_steps:,}",
                "share of the budget": number(cfg.train.max_steps * cfg.flops_per_step() / budget),
                "sequences seen": f"{cfg.train.max_steps * cfg.train.global_batch:,}",
            }
        )
    return pd.DataFrame(rows).set_index("experiment")


def proportions_table(names: Sequence[str], profile: str, reference: str = "mixer/flat_d512") -> pd.DataFrame:
    """What each arm keeps of the write-up's proportions at ``profile``: its width, depth, context and batch as
    fractions of the write-up's; its heads and head size here and there; its context over its width (L/d); its
    steps, and those steps relative to ``reference``'s, here and at the write-up's size (equal compute decides how
    many steps each arm gets, so this ratio is what a fixed-compute comparison keeps); and whether it runs here."""
    ref_here, ref_paper = exp.steps_for(reference, profile), exp.steps_for(reference, "paper")
    rows = []
    for name in names:
        here, paper = (experiments.config(name, p, device="cpu") for p in (profile, "paper"))
        m, w = here.model, paper.model
        heads = (
            (
                f"{getattr(m, 'n_head', 1)} x {m.n_embed // getattr(m, 'n_head', 1)} / "
                f"{getattr(w, 'n_head', 1)} x {w.n_embed // getattr(w, 'n_head', 1)}"
            )
            if m.family != "mixer"
            else ""
        )
        rows.append(
            {
                "experiment": name,
                "runs here": "yes" if experiments.runs_at(name, profile) else f"no (not at {profile})",
                "width": f"{m.n_embed} = {number(m.n_embed / w.n_embed)} of {w.n_embed}",
                "blocks": f"{m.n_layer} of {w.n_layer}",
                "context L": f"{m.context_size} of {w.context_size}",
                "L / d here (write-up)": f"{number(m.context_size / m.n_embed)} ({number(w.context_size / w.n_embed)})",
                "heads x head size here / write-up": heads,
                "batch": f"{here.train.global_batch} of {paper.train.global_batch}",
                "steps here": f"{here.train.max_steps:,}",
                f"steps / {reference.split('/')[-1]}'s here (write-up)": f"{number(here.train.max_steps / ref_here)} ({number(paper.train.max_steps / ref_paper)})",
            }
        )
    return pd.DataFrame(rows).set_index("experiment")


def budget_table(profile: str) -> pd.DataFrame:
    """The compute budget of a profile: counted training FLOPs per run, and where the number comes from."""
    budget = exp.budget(profile)
    if exp.scale(profile).budget is None:
        where = (
            f"the write-up's 2-parallel d=512 mixer in its 12 h on an RTX 3060: {exp.ANCHOR_STEPS:,} steps x "
            f"{si(exp.flops_per_step(exp.ANCHOR, 'paper'), 'FLOP')} (counted)"
        )
    else:
        where = f"set for the {profile} profile (experiments/mixer.py, SCALES)"
    return pd.DataFrame(
        {"value": [si(budget, "FLOP"), where, "every arm: steps = budget // counted FLOPs per step"]},
        index=pd.Index(["budget per run", "source", "rule"], name=profile),
    )


# --- figures ----------------------------------------------------------------------------------------------------


def _with_time(runs: Sequence) -> list[pd.DataFrame]:
    """Curves of one arm's runs, with time measured as the arm's mean seconds per step (one x for every seed)."""
    per_step = stats.mean([seconds_per_step(r) for r in runs])
    frames = [curve(r) for r in runs]
    for f in frames:
        f["seconds"] = f["step"] * per_step
    return frames


def _unigram(runs: Mapping[str, Sequence]) -> tuple[str, dict[str, float]]:
    """The dashed reference of a loss plot: the unigram loss of the runs' examples, per split (the first run's data
    and context; every arm of a profile shares them)."""
    cfg = next(rs[0] for rs in runs.values() if rs).config
    return "unigram loss", {s: data.unigram_loss(cfg, s) for s in ("train", "val")}


def loss_vs_compute(runs: Mapping[str, Sequence]):
    """Evaluation loss against counted training FLOPs, one line per arm (mean over seeds, min-max band), and the
    unigram loss dashed."""
    return plots.curves(
        {k: [curve(r) for r in rs] for k, rs in runs.items()},
        "PFLOP",
        {"train": "train loss (eval mode)", "val": "validation loss"},
        xlabel="training compute (PFLOP, counted)",
        ylabel="cross-entropy (nats/token)",
        logx=True,
        reference=_unigram(runs),
    )


def loss_vs_time(runs: Mapping[str, Sequence]):
    """Evaluation loss against training time measured on this machine (each arm at its mean seconds per step), and
    the unigram loss dashed."""
    return plots.curves(
        {k: _with_time(rs) for k, rs in runs.items()},
        "seconds",
        {"train": "train loss (eval mode)", "val": "validation loss"},
        xlabel="training time measured here (s)",
        ylabel="cross-entropy (nats/token)",
        logx=True,
        reference=_unigram(runs),
    )


def scaling_figure(runs: Mapping[str, Sequence], families: Mapping[str, Sequence[str]], split: str = "val"):
    """Final ``split`` loss against the write-up's d_model, one line per family (mean over seeds, min-max bars)."""
    import matplotlib as mpl
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5.2, 3.6))
    for family, names in families.items():
        names = sorted((n for n in names if runs.get(n)), key=lambda n: exp.ARMS[n].n_embed)  # one line by width
        d = [exp.ARMS[n].n_embed for n in names]
        vals = [[r.summary["final"][split] for r in runs[n]] for n in names]
        mean = [stats.mean(v) for v in vals]
        err = [[m - min(v) for m, v in zip(mean, vals)], [max(v) - m for m, v in zip(mean, vals)]]
        ax.errorbar(d, mean, yerr=err, marker="o", capsize=3, label=family)
    ax.set(xscale="log", xlabel="the write-up's d_model (scaled by the profile)", ylabel=f"final {split} loss")
    widths = sorted({exp.ARMS[n].n_embed for ns in families.values() for n in ns if runs.get(n)})
    ax.set_xticks(widths, [str(w) for w in widths])
    ax.xaxis.set_minor_formatter(mpl.ticker.NullFormatter())  # only the widths trained are labelled
    ax.legend()
    fig.tight_layout()
    return fig


# --- readings at equal steps and equal time ---------------------------------------------------------------------


def common_step(*arms: Sequence) -> int | None:
    """The last step at which every run of every arm was evaluated (None if there is none)."""
    steps = None
    for runs in arms:
        for r in runs:
            s = set(int(x) for x in r.evals()["step"])
            steps = s if steps is None else steps & s
    return max(steps) if steps else None


def at_step(runs: Sequence, step: int, split: str) -> list[float]:
    """Each run's evaluation of ``split`` at ``step``."""
    out = []
    for r in runs:
        ev = r.evals()
        out.append(float(ev.loc[ev["step"] == step, split].iloc[0]))
    return out


def common_samples(*arms: Sequence) -> int | None:
    """The most training sequences (steps x global batch) after which every run of every arm was evaluated: equal
    samples for arms of different batches (None if there is none)."""
    seen = None
    for runs in arms:
        for r in runs:
            batch = r.config.train.global_batch
            s = {int(x) * batch for x in r.evals()["step"]}
            seen = s if seen is None else seen & s
    return max(seen) if seen else None


def at_samples(runs: Sequence, samples: int, split: str) -> list[float]:
    """Each run's evaluation of ``split`` after ``samples`` training sequences (at step samples / global batch)."""
    return [at_step([r], samples // r.config.train.global_batch, split)[0] for r in runs]


def at_time(runs: Sequence, seconds: float, split: str) -> list[float]:
    """Each run's ``split`` loss after ``seconds`` of its measured training time, interpolated linearly between its
    evaluations (NaN before its first evaluation)."""
    out = []
    for r in runs:
        c = curve(r)
        t, v = c["seconds"].to_numpy(), c[split].to_numpy()
        out.append(float(np.interp(seconds, t, v)) if seconds >= t[0] else float("nan"))
    return out


def equal_time(runs: Mapping[str, Sequence]) -> float:
    """The equal-time point of a comparison: the shortest measured training time of any of its runs."""
    return min(r.summary["train_time_s"] for rs in runs.values() for r in rs)


def equal_steps_table(runs: Mapping[str, Sequence], pairs: Sequence[tuple[str, str]], published: Mapping | None = None):
    """For each pair of arms (names): both arms' losses at their last common evaluation step (equal steps, equal
    sequences when the batches match), beside their final losses (equal compute)."""
    rows = []
    for a, b in pairs:
        if not (runs.get(a) and runs.get(b)):
            continue
        step = common_step(runs[a], runs[b])
        for name in (a, b):
            pub = experiments.get(name).published
            rows.append(
                {
                    "pair": f"{a.split('/')[-1]} vs {b.split('/')[-1]}",
                    "arm": name.split("/")[-1],
                    "equal steps: step": step,
                    "equal steps: train": span(at_step(runs[name], step, "train")),
                    "equal steps: val": span(at_step(runs[name], step, "val")),
                    "equal compute: steps": runs[name][0].summary["steps"],
                    "equal compute: val": span([r.summary["final"]["val"] for r in runs[name]]),
                    "write-up (equal steps)": _published_equal(pub),
                }
            )
    return pd.DataFrame(rows).set_index(["pair", "arm"])


def _published_equal(pub: Mapping) -> str:
    parts = [
        f"{k.replace('_', ' ')} {v}"
        for k, v in pub.items()
        if k.endswith(("_equal_steps", "_one_epoch", "_half_epoch"))
    ]
    return "; ".join(parts)


def equal_time_table(runs: Mapping[str, Sequence]) -> pd.DataFrame:
    """Measured on this machine: each arm's seconds per step and its losses at the comparison's equal training time
    (the shortest run's), interpolated on its curve: the write-up's wall-clock comparison, here."""
    t = equal_time(runs)
    rows = []
    for name, rs in runs.items():
        rows.append(
            {
                "arm": name.split("/")[-1],
                "seconds/step (measured)": span([seconds_per_step(r) for r in rs], ".4f"),
                "tokens/s (measured)": span([r.summary["tokens_per_s"] for r in rs], ".0f"),
                "effective GFLOP/s": span([r.config.flops_per_step() / seconds_per_step(r) / 1e9 for r in rs], ".1f"),
                f"train at {number(t)} s": span(at_time(rs, t, "train")),
                f"val at {number(t)} s": span(at_time(rs, t, "val")),
            }
        )
    return pd.DataFrame(rows).set_index("arm")


def speed_ratio_table(runs: Mapping[str, Sequence], pairs: Sequence[tuple[str, str]]) -> pd.DataFrame:
    """Per pair: how much longer a step of the second arm takes than one of the first, measured here and counted."""
    rows = []
    for fast, slow in pairs:
        if not (runs.get(fast) and runs.get(slow)):
            continue
        measured = stats.mean([seconds_per_step(r) for r in runs[slow]]) / stats.mean(
            [seconds_per_step(r) for r in runs[fast]]
        )
        counted = runs[slow][0].config.flops_per_step() / runs[fast][0].config.flops_per_step()
        rows.append(
            {
                "pair": f"{slow.split('/')[-1]} / {fast.split('/')[-1]}",
                "time per step, measured here": f"{number(measured)}x",
                "FLOPs per step, counted": f"{number(counted)}x",
            }
        )
    return pd.DataFrame(rows).set_index("pair")


# --- the time a profile takes (an estimate, not a measurement) ---------------------------------------------------


MINUTES = "minutes, all planned runs (estimate)"  # the column of time_estimate that holds an arm's planned runs
FLOPS = "FLOPs per run (train, counted)"


def time_estimate(profile: str, names: Sequence[str] | None = None) -> pd.DataFrame:
    """Estimated H100 time of the chapter's runs planned at ``profile`` (:func:`lmcompanion.experiments.plan`: the
    seeds each arm is registered with), by the book's one estimate from counted FLOPs (:mod:`lmcompanion.estimate`):
    not a measurement."""
    rows: dict[str, dict] = {}
    for run in experiments.plan(list(names or exp.ARMS), profile, device="cpu", needs=False):
        cfg, minutes = run.config, run.minutes()
        row = rows.setdefault(
            run.name,
            {
                "experiment": run.name,
                "runs": 0,
                "steps": cfg.train.max_steps,
                FLOPS: cfg.flops(),
                "minutes per run (estimate)": minutes,
                MINUTES: 0.0,
            },
        )
        row["runs"] += 1
        row[MINUTES] += minutes
    df = pd.DataFrame(list(rows.values())).set_index("experiment")
    df.loc["chapter (sum)"] = df.sum(numeric_only=True)  # steps too: the chapter's optimizer steps in all
    df[MINUTES.replace("minutes", "hours")] = df[MINUTES] / 60
    df[["runs", "steps"]] = df[["runs", "steps"]].astype(int)
    df[FLOPS] = [si(x, "FLOP") for x in df[FLOPS]]  # the minutes stay numbers: the book's tables print them
    return df


__all__ = [
    "arm_table",
    "proportions_table",
    "at_samples",
    "at_step",
    "at_time",
    "common_samples",
    "budget_table",
    "common_step",
    "curve",
    "equal_steps_table",
    "equal_time",
    "equal_time_table",
    "loss_vs_compute",
    "loss_vs_time",
    "scaling_figure",
    "MINUTES",
    "seconds_per_step",
    "speed_ratio_table",
    "time_estimate",
]
