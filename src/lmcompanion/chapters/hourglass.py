"""The efficient hierarchical transformer chapter's analyses: the protocol both ways (the README's schedule and
last-32 validation, the code's constant rate and last-token validation), loss against wall-clock and counted FLOPs,
the two upsampling modes at equal compute, the counted inference FLOPs, the repeat-mode blind spot (loss by position
within a group), the verdicts (with the side-by-side timings of the verdict notebook), and the write-up's claims in
the claims ledger."""

from __future__ import annotations

import dataclasses
import functools
import math
from typing import Mapping, Sequence

import numpy as np
import torch

from .. import experiments, models, recorded, stats, tables
from ..bench import SideBySide
from .. import data
from ..data.lm import build_source
from ..experiments import hourglass as ex
from ..experiments.hourglass import scale
from ..formats import number, si
from ..ledger import Claim, register
from ..models.hourglass import loss_by_group_position
from ..train.schedules import lr_at
from .. import learning
from .. import claims
from ..claims import Context, Row, register as register_rows
from ..verdicts import (CHECK, COMPUTED, COST, Verdict, arms_of, below, between, claim, exact, gate, not_decided,
                        published_gap, similar, trend)
from . import cost
from . import verdict_forms as vf

CHAPTER = "hourglass"
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
PROTOCOL = (ANCHOR, CONSTANT[0], H + "attn_448_96_e6_final_norm", VANILLA, CONSTANT[1])
EXPERTS = (H + "attn_448_96_base", ANCHOR, H + "attn_448_96_e12")  # 0, 6, 12 soft experts
SWEEP = (H + "attn_448_96_base", H + "attn_448_96_e2", H + "attn_448_96_e4", ANCHOR)  # up to 6: gpu and paper
SWEEP_COUNTS = (0, 2, 4, 6)
EXPERT_KNOBS = (H + "attn_448_96_e6_mlp6", H + "attn_448_96_e6_every1", H + "attn_448_96_e6_s0")
MERGES = (H + "attn_448_96_e6_merge_max", H + "attn_448_96_e6_merge_mean")  # the merges the write-up compared
BASE = H + "base_256_32"  # "a base model of 19.55M without soft experts": counted, not trained
LENGTHS = (H + "attn_384_32_e6", H + "attn_512_32_e6", H + "attn_448_32_e6", ANCHOR)
# the compressor, the positions added after each compression and upsampling, the latent vectors' widths
ENCODER_KNOBS = (H + "attn_448_96_e6_perceiver", H + "attn_448_96_e6_no_level_pos", H + "attn_448_96_e6_wide_enc",
                 H + "attn_448_96_e6_wide_latent")
MODES = (ANCHOR, REPEAT, H + "attn_448_96_e6_dense", H + "repeat_448_96_e6_dense",
         H + "attn_448_96_e12_latent", H + "attn_448_96_e12", H + "repeat_448_96_e12_latent", H + "repeat_448_96_e12")
HEADLINE = (VANILLA, BEST_ATTN, BEST_REPEAT)
BLIND_SPOT = (ANCHOR, REPEAT, VANILLA)
COST_ARMS = HEADLINE + (ANCHOR, REPEAT, H + "attn_448_96_e6_perceiver")  # the verdict notebook's cost table
# the notebooks' arms, each finding with its repeat-upsampling twins
EXPERTS_NB = EXPERTS + SWEEP[1:3] + EXPERT_KNOBS + MERGES + twins(EXPERTS + EXPERT_KNOBS + MERGES)
LENGTHS_NB = LENGTHS + ENCODER_KNOBS + twins(LENGTHS + ENCODER_KNOBS)
ALL = tuple(dict.fromkeys(PROTOCOL + EXPERTS_NB + LENGTHS_NB + MODES + HEADLINE))


def skipped_note(names: Sequence[str], profile: str) -> str:
    """Which of ``names`` this profile leaves out, and why (as the experiments are registered: the repeat-upsampling
    twins of some findings, and the middle of the experts sweep, run at the gpu and paper profiles only, to keep the
    book's cpu build inside its budget)."""
    left = [n for n in names if not experiments.runs_at(n, profile)]
    if not left:
        return f"every arm of this page runs at the {profile} profile"
    why = {n: ex.GPU_ONLY_REASON if n in ex.GPU_ONLY else ex.SWEEP_ONLY_REASON if n in ex.SWEEP_ONLY else "budget"
           for n in left}
    lines = [f"left out at the {profile} profile ({len(left)} arms), run at gpu and paper:"]
    for reason in dict.fromkeys(why.values()):
        lines.append(f"- {reason}: " + "; ".join(experiments.get(n).title for n in left if why[n] == reason))
    return "\n".join(lines)


INFERENCE_CUT = 0.5  # "at least 50% flops reduction at inference"


# --- the protocol both ways -------------------------------------------------------------------------------------


def lr_schedules(names: Sequence[str], profile: str):
    """The learning rate at every update of each arm's run (the README's schedule, the code's constant rate), as
    one frame (update, lr) per arm for plots.curves; the arms' runs as a page that shows them together reads them
    (:func:`lmcompanion.experiments.reads_illustrations`)."""
    import pandas as pd

    together = True if experiments.reads_illustrations(names, profile) else None
    out = {}
    for name in names:
        t = experiments.config(name, profile, illustrating=together).train
        out[experiments.get(name).title] = [pd.DataFrame({"update": range(t.max_steps),
                                                          "lr": [lr_at(s, t) for s in range(t.max_steps)]})]
    return out


def _of_chapter(cfg) -> bool:
    return experiments.get(cfg.name).chapter == "hourglass"


@recorded.measure("hourglass/window_losses", applies=_of_chapter, args=(("val",),))
@torch.no_grad()
def window_losses(run, split: str = "val", device: str = "cpu") -> dict[str, float]:
    """The run's model on the protocol's evaluation windows of ``split`` (a start every 32 tokens), scored both ways:
    on each window's last 32 positions (the README) and on its last position only (the original code's
    ``estimate_loss``). Same windows, same weights: only the positions scored differ. A GPU slot records it with the
    run (:func:`lmcompanion.recorded.measure`), so that the rows scored on the last token are decided from recorded
    runs too."""
    cfg = run.config
    last = cfg.data.eval_last or 32
    source = build_source(cfg.replace(data=cfg.data.replace(eval_last=None)))
    model = run.load_model(device)
    tail, final = [], []
    for batch in source.eval_batches(split, 0):
        batch = {k: v.to(device) for k, v in batch.items()}
        logits = model(batch["idx"]).logits
        ce = torch.nn.functional.cross_entropy(logits.float().transpose(1, 2), batch["targets"], reduction="none")
        tail.append(ce[:, -last:].mean(1))
        final.append(ce[:, -1])
    return {f"last {last}": torch.cat(tail).mean().item(), "last token": torch.cat(final).mean().item()}


def protocol_table(runs: Mapping[str, Sequence], splits: Sequence[str] = ("val",)):
    """Per arm and split: the loss scored on the last 32 positions and on the last position of the same windows,
    'mean [min, max]' over seeds."""
    import pandas as pd

    rows = []
    for label, rs in runs.items():
        for split in splits:
            per_seed = [window_losses(r, split) for r in rs]
            row = {"arm": label, "split": split}
            row.update({k: stats.span([p[k] for p in per_seed], ".3f") for k in per_seed[0]})
            rows.append(row)
    return pd.DataFrame(rows).set_index("arm")  # the split a column: one header row


def schedule_table(runs: Mapping[str, Sequence]):
    """The anchor and the vanilla transformer under each schedule (:data:`SCHEDULES`; ``runs`` by experiment name):
    each one's final validation loss, 'mean [min, max]' over seeds, and the anchor's seed mean minus the vanilla
    transformer's, scored on the last 32 tokens of each window and on the last token."""
    import pandas as pd

    rows = []
    for schedule, (anchor, vanilla) in SCHEDULES.items():
        if not (runs.get(anchor) and runs.get(vanilla)):
            continue
        a, v = tables.final(runs[anchor], "val"), tables.final(runs[vanilla], "val")
        la, lv = last_token_values(runs[anchor]), last_token_values(runs[vanilla])
        rows.append({"schedule": schedule, "448-96 anchor": stats.span(a, ".3f"),
                     "vanilla transformer": stats.span(v, ".3f"),
                     "anchor - vanilla": number(stats.mean(a) - stats.mean(v), sign="+"),
                     "anchor - vanilla (last token)": number(stats.mean(la) - stats.mean(lv), sign="+"),
                     "seeds": f"{len(a)} vs {len(v)}"})
    return pd.DataFrame(rows).set_index("schedule")


@torch.no_grad()
def head_input_parts(run, split: str = "val") -> dict[str, float]:
    """The run's model on the evaluation windows of ``split``: the root-mean-square of the token and position
    embeddings (S_0, the skip of the last level: how the current character enters the token-level stream), of the
    last decoder's up-projection of the latents (before its position table), and of the stream that enters the head
    (before the final norm, where there is one), over every position."""
    model = run.load_model()
    seen: dict[str, list[torch.Tensor]] = {"embeddings": [], "up-projection": [], "into the head": []}

    def keep(name):
        return lambda module, args, out=None: seen[name].append((args[0] if out is None else out).float().square())

    hooks = [model.drop.register_forward_hook(keep("embeddings")),
             (model.lm_head if model.ln_f is None else model.ln_f).register_forward_pre_hook(keep("into the head"))]
    if model.decoders:
        hooks.append(model.decoders[-1].proj.register_forward_hook(keep("up-projection")))
    try:
        for batch in build_source(run.config).eval_batches(split, 0):
            model(batch["idx"])
    finally:
        for h in hooks:
            h.remove()
    return {k: torch.cat([t.flatten() for t in v]).mean().sqrt().item() for k, v in seen.items() if v}


def head_input_table(runs: Mapping[str, Sequence], split: str = "val"):
    """Per arm: :func:`head_input_parts` and the up-projection's RMS over the embeddings' (with attention upsampling
    the last decoder's blocks read the normalised sum of the two), 'mean [min, max]' over seeds."""
    import pandas as pd

    rows = []
    for label, rs in runs.items():
        parts = [head_input_parts(r, split) for r in rs]
        row = {"arm": label, "final norm": "yes" if rs[0].config.model.final_norm else "no"}
        row.update({f"RMS: {k}": stats.span([p[k] for p in parts], ".3g") for k in parts[0]})
        if "up-projection" in parts[0]:
            row["up-projection / embeddings"] = stats.span([p["up-projection"] / p["embeddings"] for p in parts], ".3g")
        rows.append(row)
    return pd.DataFrame(rows).set_index("arm")


def last_token_values(runs: Sequence, split: str = "val") -> list[float]:
    return [window_losses(r, split)["last token"] for r in runs]


# --- cost: wall-clock and counted FLOPs -------------------------------------------------------------------------


def cost_curves(runs: Mapping[str, Sequence]) -> dict[str, list]:
    """Each run's validation curve with two cost axes: ``minutes`` (update number times the arm's seed-mean
    training seconds per update, measured in this build) and ``FLOPs`` (update number times the tokens of an
    update times the model's counted training FLOPs per token)."""
    out = {}
    for label, rs in runs.items():
        cfg = rs[0].config
        sec = stats.mean([r.summary["train_time_s"] / r.summary["steps"] for r in rs])
        flops = cfg.flops_per_step()
        frames = []
        for r in rs:
            e = r.evals()[["step", "val"]].copy()
            e["minutes"] = e["step"] * sec / 60
            e["FLOPs"] = e["step"] * flops
            frames.append(e)
        out[label] = frames
    return out


def cost_table(runs: Mapping[str, Sequence]):
    """Per arm: final validation loss, updates, training minutes (measured) and training FLOPs (counted), and the
    write-up's minutes where it has them."""
    import pandas as pd

    rows = []
    for label, rs in runs.items():
        cfg = rs[0].config
        name = cfg.name
        flops = cfg.flops()
        pub = experiments.get(name).published
        rows.append({"arm": label, "val (final)": stats.span(tables.final(rs, "val"), ".3f"),
                     "updates": cfg.train.max_steps,
                     "train minutes (ours)": stats.span([r.summary["train_time_s"] / 60 for r in rs], ".2f"),
                     "train FLOPs (counted)": si(flops, "FLOP"),
                     "write-up val": pub.get("val", ""), "write-up minutes": pub.get("minutes", "")})
    return pd.DataFrame(rows).set_index("arm")


def sources_table(names: Sequence[str]):
    """Where each published loss and minute of ``names`` comes from: the write-up prints none, so each was read off
    a plot of the original repository (:data:`lmcompanion.experiments.hourglass.SOURCES`); one row per experiment
    that has such a number, with the plot's file."""
    import pandas as pd

    rows = [{"arm": experiments.get(n).title,
             "write-up numbers": ", ".join(f"{k} {experiments.get(n).published[k]}" for k in ex.PLOTTED
                                           if k in experiments.get(n).published),
             "read off (by its pixels, about ±0.02)": ex.PLOTS + ex.SOURCES[n]}
            for n in dict.fromkeys(names) if n in ex.SOURCES]
    if not rows:
        return pd.DataFrame({"note": ["no arm of this page has a published loss"]})
    return pd.DataFrame(rows).set_index("arm")


def sources_note() -> str:
    """The sentence under :func:`sources_table`: the repository and commit the plots are read from."""
    return (f"Every file is under `{ex.PLOTS}` in {ex.ORIGINAL} at commit {ex.PLOTS_COMMIT} (the README's commit; the "
            f"same files at the head, {ex.HEAD_COMMIT}). The write-up prints no loss: these numbers are read off the "
            "end of each curve (two epochs; one for the vanilla transformer), and the minutes off the wall-clock axis "
            "of best_models.png (unspecified Colab hardware). Parameter counts are the write-up's text.")


# --- the two upsampling modes at equal compute --------------------------------------------------------------------
# "They have similar performance at the end of the repeat upsampling models trainings ... we still noticed that the
# attention version scales better with compute": the two modes' validation curves on one compute axis (counted
# training FLOPs: update number x the FLOPs of an update), the attention run read at the compute where the repeat run
# ends, and the gap between them at each of the repeat run's evaluations.


def _val_at_flops(run, flops: float) -> float:
    """The run's validation loss at ``flops`` training FLOPs, interpolated linearly between its evaluations (NaN before
    its first evaluation or after its last)."""
    e = run.evals()
    x = e["step"].to_numpy() * run.config.flops_per_step()
    if flops < x[0] or flops > x[-1]:
        return math.nan
    return float(np.interp(flops, x, e["val"].to_numpy()))


def mode_gaps(attn: Sequence, repeat: Sequence) -> list:
    """Per seed (attention seed i against repeat seed i: the same data order), one frame with the compute points
    (``FLOPs``: the repeat run's evaluations that the attention run spans) and, at each, both modes' validation loss
    and their ``gap`` = attention - repeat (negative where attention is ahead)."""
    import pandas as pd

    frames = []
    for a, r in zip(attn, repeat):
        e = r.evals()
        points = e["step"].to_numpy() * r.config.flops_per_step()
        at = [_val_at_flops(a, f) for f in points]
        f = pd.DataFrame({"FLOPs": points, "repeat": e["val"].to_numpy(), "attn": at}).dropna()
        f["gap"] = f["attn"] - f["repeat"]
        frames.append(f.reset_index(drop=True))
    return frames


def end_of_repeat(attn: Sequence, repeat: Sequence) -> tuple[list[float], list[float]]:
    """(attention's validation loss at the compute where each repeat run ends, the repeat runs' final validation loss),
    per seed: "similar performance at the end of the repeat upsampling models trainings"."""
    ends = [r.config.flops_per_step() * r.summary["steps"] for r in repeat]
    return [_val_at_flops(a, f) for a, f in zip(attn, ends)], tables.final(repeat, "val")


MIN_POINTS = 3  # compute points a trend is fitted on: fewer (the smoke profile's two evaluations) decide nothing


def gap_slopes(frames: Sequence) -> list[float]:
    """Per seed: the least-squares slope of the gap (attention - repeat) against log10 of the training FLOPs, in nats
    per tenfold compute; negative where attention pulls ahead as compute grows (NaN with fewer than
    :data:`MIN_POINTS` points)."""
    return [float(np.polyfit(np.log10(f["FLOPs"].to_numpy()), f["gap"].to_numpy(), 1)[0]) if len(f) >= MIN_POINTS
            else math.nan for f in frames]


def mode_table(runs: Mapping[str, Sequence], attn: str = ANCHOR, repeat: str = REPEAT):
    """The two modes side by side: each one's final validation loss, attention's at the compute where the repeat
    runs end, the gap at every compute point, and the gap's slope per decade of compute (per seed: mean [min, max])."""
    import pandas as pd

    a, r = runs[attn], runs[repeat]
    frames = mode_gaps(a, r)
    at_end, final = end_of_repeat(a, r)
    rows = {"attention, final": stats.span(tables.final(a, "val")), "repeat, final": stats.span(final),
            "attention at the repeat runs' final FLOPs": stats.span(at_end)}
    n = min(len(f) for f in frames)
    for k in range(n):
        flops = frames[0]["FLOPs"].iloc[k]
        rows[f"gap (attention - repeat) at {si(flops, 'FLOP')}"] = stats.span([f["gap"].iloc[k] for f in frames])
    rows["gap slope per tenfold FLOPs"] = stats.span(gap_slopes(frames))
    return pd.DataFrame({"validation loss (nats/char)": rows}).rename_axis("upsampling at equal compute")


@functools.lru_cache(maxsize=128)
def counted_flops(name: str, training: bool, profile: str = "paper") -> float:
    """FLOPs per token of experiment ``name``'s model at ``profile`` (the write-up's sizes by default), counted by
    running it once under PyTorch's FLOP counter: a training step's (forward and backward) or the forward pass's."""
    return models.flops_per_token(experiments.config(name, profile, device="cpu").model, training)


def inference_flops(names: Sequence[str], baseline: str = VANILLA, profile: str = "paper") -> dict[str, tuple]:
    """Counted forward FLOPs per token at ``profile`` (the write-up's sizes by default): name -> (FLOPs per token,
    fraction saved against ``baseline``)."""
    per = {n: counted_flops(n, False, profile) for n in dict.fromkeys([baseline, *names])}
    return {n: (f, 1 - f / per[baseline]) for n, f in per.items()}


def inference_table(names: Sequence[str], profile: str = "paper"):
    """Per arm, counted at ``profile`` (the write-up's sizes by default): forward FLOPs per token and the share of
    the vanilla transformer's it saves, and training FLOPs per token against the vanilla transformer's."""
    import pandas as pd

    train = {n: counted_flops(n, True, profile) for n in dict.fromkeys([VANILLA, *names])}
    rows = [{"arm": experiments.get(n).title, "forward FLOPs per token": si(f, "FLOP"),
             "inference FLOPs saved against the vanilla transformer": f"{number(100 * saved)}%",
             "training FLOPs per token": si(train[n], "FLOP"),
             "training FLOPs / the vanilla transformer's": number(train[n] / train[VANILLA])}
            for n, (f, saved) in inference_flops(names, profile=profile).items()]
    return pd.DataFrame(rows).set_index("arm")


# --- the repeat-mode blind spot ---------------------------------------------------------------------------------


@torch.no_grad()
def position_losses(run, split: str = "val", n_groups: int | None = None, device: str = "cpu"):
    """The run's per-token cross-entropy on the evaluation windows of ``split``, every position scored, averaged by
    offset within the group (the vanilla transformer's windows are cut into the hourglass models' groups):
    (group length,) tensor."""
    cfg = run.config
    source = build_source(cfg.replace(data=cfg.data.replace(eval_last=None)))
    model = run.load_model(device)
    n_groups = n_groups or cfg.model.n_groups
    per = [loss_by_group_position(model(b["idx"].to(device)).logits, b["targets"].to(device), n_groups).cpu()
           for b in source.eval_batches(split, 0)]
    return torch.cat(per).nanmean(dim=(0, 1))


def _grouped(cfg) -> bool:
    return _of_chapter(cfg) and getattr(cfg.model, "n_groups", None) is not None


@recorded.measure("hourglass/group_position_losses", applies=_grouped, args=(("val",),))
def group_position_losses(run, split: str = "val", device: str = "cpu") -> list[float]:
    """:func:`position_losses` in the run's own groups, as a list: what the blind-spot row reads (a GPU slot records
    it with the run)."""
    return position_losses(run, split, device=device).tolist()


def blind_spot_frames(runs: Mapping[str, Sequence], n_groups: int, split: str = "val") -> dict[str, list]:
    """Per arm, one frame per seed: offset within the group -> mean loss (for plots.curves)."""
    import pandas as pd

    out = {}
    for label, rs in runs.items():
        frames = []
        for r in rs:
            loss = position_losses(r, split, n_groups)
            frames.append(pd.DataFrame({"offset": range(len(loss)), "loss": loss.numpy()}))
        out[label] = frames
    return out


def blind_spot_table(frames: Mapping[str, list], blind: int):
    """Per arm: the mean loss over the blind offsets (0 .. blind-1 of each group), over the others, over all
    positions, and on the last position of a group."""
    import pandas as pd

    rows = []
    for label, fs in frames.items():
        def agg(sel):
            return stats.span([float(f["loss"][sel(f["offset"])].mean()) for f in fs], ".3f")
        n = len(fs[0])
        rows.append({"arm": label, f"offsets 0-{blind - 1}": agg(lambda o: o < blind),
                     f"offsets {blind}-{n - 1}": agg(lambda o: o >= blind), "all positions": agg(lambda o: o >= 0),
                     "last of the group": agg(lambda o: o == n - 1)})
    return pd.DataFrame(rows).set_index("arm")


def blind_offsets(profile: str, name: str = H + "repeat_448_96_e6") -> tuple[int, int]:
    """(blind offsets per group, group length) of ``name`` at ``profile``."""
    c = experiments.config(name, profile).model
    return c.blind_spot, c.group_len


# --- verdicts ---------------------------------------------------------------------------------------------------
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
FINDINGS = [  # (claim, better (or, for a no-gain finding, the arm with the feature), worse (without it), notebook, both modes)
    (EXPERTS_HELP := "6 soft experts beat none", ANCHOR, H + "attn_448_96_base", "02_experts", True),
    (FREQUENCY := "soft experts in every latent block beat every 4th (attention upsampling)",
     H + "attn_448_96_e6_every1", ANCHOR, "02_experts", False),
    (MLP := "bigger expert MLPs help (d = n against d = n/6)", H + "attn_448_96_e6_mlp6", ANCHOR, "02_experts", True),
    (MERGE_MAX := "the softmax merge of the experts beats a max merge", ANCHOR, H + "attn_448_96_e6_merge_max",
     "02_experts", True),
    (MERGE_MEAN := "the softmax merge of the experts beats a mean merge", ANCHOR, H + "attn_448_96_e6_merge_mean",
     "02_experts", True),
    (ENC_LENGTH := "a longer encoder sequence helps (512-32 against 384-32)", H + "attn_512_32_e6", H + "attn_384_32_e6",
     "03_lengths", True),
    (LATENT_LENGTH := "a longer latent sequence helps (448-96 against 448-32)", ANCHOR, H + "attn_448_32_e6",
     "03_lengths", True),
    (PERCEIVER_WORSE := "the transformer compressor beats the Perceiver compressor, which \"performs less well\"",
     ANCHOR, H + "attn_448_96_e6_perceiver", "03_lengths", True),
    (POSITIONS := "positions added after each compression and each upsampling help (without them the loss is higher)",
     ANCHOR, H + "attn_448_96_e6_no_level_pos", "03_lengths", True),
    (WIDE_ENC := "wider latent vectors in the encoders help (level-1 width 1.5x)", H + "attn_448_96_e6_wide_enc",
     ANCHOR, "03_lengths", True),
    (WIDE_LATENT := "wider latent vectors in the latent space help (latent width 1.5x)",
     H + "attn_448_96_e6_wide_latent", ANCHOR, "03_lengths", True),
    (DENSE := "DenseFormer helps with attention upsampling", H + "attn_448_96_e6_dense", ANCHOR, "04_upsampling",
     False),
    (DENSE_REPEAT := f"DenseFormer does not help with repeat upsampling (no gain: a gain under {similar_margin():g} "
                     "nats)", H + "repeat_448_96_e6_dense", REPEAT, "04_upsampling", False),
    (LATENT_LOSS := f"the latent reconstruction loss does not help (no gain, 12 experts: a gain under "
                    f"{similar_margin():g} nats)", H + "attn_448_96_e12_latent", H + "attn_448_96_e12", "04_upsampling",
     True),
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
_LATENT_SIZE = ('"Increasing the size of MLPs also seems to help, as does increasing the size of the latent vectors in '
                'the encoders or in the latent space"')
_MERGES = '"Merging via max and mean of the features was also considered, but ... this performed less well"'
WORDS = {
    EXPERTS_HELP: '"The more experts there are, the better the results are up to a certain point"',
    MLP: '"Increasing the size of MLPs also seems to help"',
    FREQUENCY: '"Increasing the frequency of layers with soft experts also seems to help in the context of attention '
               'upsampling"',
    PERCEIVER_WORSE: '"The Perceiver encoder is faster than the Transformer but performs less well"',
    POSITIONS: '"we add positional embeddings in each encoder layer after compression and in each decoder layer after '
               'upsampling, which seems to have helped"',
    WIDE_ENC: _LATENT_SIZE, WIDE_LATENT: _LATENT_SIZE,
    ENC_LENGTH: '"large seq lengths in the encoder blocks or the latent blocks is better"',
    LATENT_LENGTH: '"large seq lengths in the encoder blocks or the latent blocks is better"',
    MERGE_MAX: _MERGES, MERGE_MEAN: _MERGES,
    DENSE: '"Using Denseformer in the latent blocks only helps for attention upsampling"',
    DENSE_REPEAT: '"Using Denseformer in the latent blocks only helps for attention upsampling"',
    LATENT_LOSS: '"The latent reconstruction loss employed in Mirasol does not help here"',
}

# The upsampling claims ("We can observe that models with attention upsampling take more time than those using the
# repeat upsampling ... Although they have similar performance at the end of the repeat upsampling models trainings
# ... the attention version scales better with compute"), on the 448-96 anchor in both modes.
REPEAT_FASTER = ("repeat upsampling takes less time per training step than attention upsampling (448-96, 6 soft "
                 "experts; timed side by side)")
PERCEIVER_FASTER = ("the Perceiver compressor takes less time per training step than the transformer compressor "
                    "(timed side by side)")
SCALES_BETTER = ("attention upsampling scales better with compute: its lead over repeat grows with training FLOPs "
                 "(the gap at the repeat runs' evaluations, per seed)")
COUNT_BASE = "the base model without soft experts has 19.55M parameters (as the original counts)"
SHARED_CHEAPER = ("... at lower cost: 1 shared expert of 6 costs fewer training FLOPs than none (counted at the "
                  "write-up's sizes)")
ATTN_COSTS_MORE = "attention upsampling costs more than repeat (training FLOPs per token, counted at the write-up's sizes)"
BLIND = ("in repeat mode the blind offsets of a group (which see their own group only through their own character) "
         "predict worse than the offsets that see it")
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


SIMILAR_AT_END = (f"attention and repeat upsampling reach a similar validation loss at the end of the repeat runs "
                  f"(within {similar_margin():.2f} nats; attention read at the repeat runs' final training FLOPs)")


def _title(name: str) -> str:
    return experiments.get(name).title


def _short(name: str) -> str:
    return name.split("/")[-1]


# the headline: "Both models are, when configure correctly, a lot faster than the vanilla transformer architecture
# while achieving the same validation loss (at least 50% flops reduction at inference when we consider the attention
# upsampling and even more with the repeat version)"
LAST_32, LAST_TOKEN = "last 32", "last token"
_SCORED = {LAST_32: "scored on the last 32 tokens of each window, as the README states",
           LAST_TOKEN: "scored on the last token of each window, as the original code and its plots score"}


BEST_LABEL = {BEST_ATTN: "the best attention model (384-32, 6 soft experts)",
              BEST_REPEAT: "the best repeat model (512-32, 6 soft experts)"}


def same_loss_claim(model: str, scoring: str = LAST_32) -> str:
    return (f"{BEST_LABEL[model]} reaches the same validation loss as the vanilla transformer (within "
            f"{same_margin():.2f} nats either way; {_SCORED[scoring]})")


def faster_claim(model: str) -> str:
    return (f"{BEST_LABEL[model]} is a lot faster than the vanilla transformer: under {LOT_FASTER:.1f} of its time per "
            "training step (timed side by side)")


def fewer_flops_claim(model: str) -> str:
    return (f"{BEST_LABEL[model]} is a lot cheaper than the vanilla transformer: under {LOT_FASTER:.1f} of its training "
            "FLOPs per token (counted at the write-up's sizes)")


def inference_claim(model: str) -> str:
    return (f"at least {INFERENCE_CUT:.0%} fewer FLOPs at inference than the vanilla transformer "
            f"({_title(model)}; forward FLOPs per token, counted at the write-up's sizes)")


EVEN_MORE = ("even more with the repeat version: the best repeat model (512-32) saves a larger share of the vanilla "
             "transformer's inference FLOPs than the best attention model (384-32); counted at the write-up's sizes")
EVEN_MORE_SAME = ("even more with the repeat version, on one model: 448-96 with repeat upsampling saves a larger share "
                  "of the vanilla transformer's inference FLOPs than with attention upsampling; counted at the "
                  "write-up's sizes")

# the experts, per compute: "(generally until at least 6 you can expect good perf/compute)", a lower bound on the
# number of experts worth their compute, tested at equal training FLOPs
PER_COMPUTE = ("6 soft experts give good performance per compute: read at the training FLOPs where the model without "
               "experts ends, the 6-expert model's validation loss is lower")
PER_COMPUTE_TREND = ("up to 6 soft experts, each step up gives good performance per compute: the validation loss at "
                     "the no-expert model's final training FLOPs falls from 0 through 2 and 4 to 6 experts (attention "
                     "upsampling)")
SHARED_MATCH = ("1 shared expert of 6 gives a similar validation loss to none, the classic variant (within "
                f"{similar_margin():.2f} nats either way)")


def schedule_claim(schedule: str) -> str:
    return (f"(beyond the write-up) under {schedule}, the 448-96 anchor reaches the same validation loss as the "
            f"vanilla transformer (within {same_margin():.2f} nats either way)")


def unigram_reference(runs: Mapping[str, Sequence]) -> tuple[str, float]:
    """(label, loss) of the unigram model on the validation split of these runs' data, for plots.loss_curves."""
    first = next(rs[0] for rs in runs.values() if rs)
    return "unigram loss", data.unigram_loss(first.config)


def _count_row(text: str, name: str) -> Verdict:
    """An exact row: the experiment's parameter count at the write-up's size, computed from the model, against the
    write-up's (as the original counts: position tables out, the parameters it builds and never reads in)."""
    ours = models.num_params(experiments.config(name, "paper", device="cpu").model)
    published = experiments.get(name).published["params"]
    return exact(text, f"{published / 1e6:.2f}M ({published:,} by the original's count)", f"{ours:,}",
                 ours == published)


def _last_token(runs: Mapping[str, Sequence], name: str) -> list[float]:
    return last_token_values(runs[name])


def _fewer_flops(text: str, cheaper: str, dearer: str) -> Verdict:
    """An exact row: training FLOPs per token of two arms, counted at the write-up's sizes."""
    a, b = counted_flops(cheaper, True), counted_flops(dearer, True)
    return exact(text, "a statement, no numbers", f"{_short(cheaper)}: {si(a, 'FLOP')} vs {_short(dearer)}: "
                 f"{si(b, 'FLOP')} per token", a < b, kind=COMPUTED)


def _minutes_words(model: str) -> str:
    """The write-up's minutes for ``model`` and the vanilla transformer (best_models.png), per epoch."""
    m, v = experiments.get(model).published["minutes"], experiments.get(VANILLA).published["minutes"]
    return (f'"a lot faster"; best_models.png: {m} min for two epochs against {v} for one (about '
            f"{number(m / 2 / v)} of the time per epoch)")


def _lot_cheaper_row(model: str) -> Verdict:
    """An exact row: ``model``'s training FLOPs per token under :data:`LOT_FASTER` of the vanilla transformer's."""
    a, b = counted_flops(model, True), counted_flops(VANILLA, True)
    return exact(fewer_flops_claim(model), _minutes_words(model),
                 f"{_short(model)}: {si(a, 'FLOP')} vs vanilla: {si(b, 'FLOP')} per token (ratio {number(a / b)})",
                 a / b < LOT_FASTER, kind=COMPUTED)


def _p(name: str) -> str:
    return str(experiments.get(name).published.get("val", "?"))


def _val(runs, name: str) -> list[float]:
    return tables.final(runs[name], "val")


def _compared(text: str, words: str, better: str, worse: str, runs) -> Verdict:
    """``better`` beats ``worse`` on the final validation loss (both arms gated on it), with the write-up's words
    where it has no number."""
    v = between(text, "val", better, worse, runs)
    if v.published == "no published number" and words:
        v = dataclasses.replace(v, published=words)
    return v


def _same_loss_row(model: str, scoring: str, runs) -> Verdict:
    """"The same validation loss" as the vanilla transformer, within :func:`same_margin` either way (two one-sided
    tests), scored the README's way or the code's, both arms gated on the losses compared."""
    text = same_loss_claim(model, scoring)
    if scoring == LAST_32:
        ours, theirs, at = _val(runs, model), _val(runs, VANILLA), "final"
    else:
        ours, theirs, at = _last_token(runs, model), _last_token(runs, VANILLA), "final, the last token of each window"
    v = similar(text, f"{_p(model)} vs {_p(VANILLA)} (best_models.png, scored on the last token)", ours, theirs,
                same_margin(), labels=(_short(model), "vanilla"))
    v = dataclasses.replace(v, published_size=published_gap(model, VANILLA, "val"))
    return gate(v, arms_of(runs, "val", model, VANILLA, values={model: ours, VANILLA: theirs}, at=at))


def _schedule_row(schedule: str, runs) -> Verdict:
    anchor, vanilla = SCHEDULES[schedule]
    v = similar(schedule_claim(schedule), "the write-up ran one schedule (the README's; its code's rate is constant)",
                _val(runs, anchor), _val(runs, vanilla), same_margin(), labels=(_short(anchor), _short(vanilla)))
    return gate(v, arms_of(runs, "val", anchor, vanilla))


def _blind_row(runs) -> Verdict:
    """In repeat mode the blind offsets predict worse than the offsets that see their own group, gated on the repeat
    arm's final validation loss."""
    per_seed = [group_position_losses(r) for r in runs[REPEAT]]
    b = runs[REPEAT][0].config.model.blind_spot
    v = claim(BLIND, '"can limit expressiveness" (no number)', [stats.mean(x[b:]) for x in per_seed],
              [stats.mean(x[:b]) for x in per_seed],
              ("seen offsets", "blind offsets"))
    return gate(v, arms_of(runs, "val", REPEAT))


def _inference_row(model: str) -> Verdict:
    inf = inference_flops([BEST_ATTN, BEST_REPEAT])
    return exact(inference_claim(model), "at least 50% (attn), more for repeat", f"{number(100 * inf[model][1])}% fewer",
                 inf[model][1] >= INFERENCE_CUT, kind=COMPUTED)


def _even_more_row(text: str, repeat: str, attn: str) -> Verdict:
    """The repeat model saves a larger share of the vanilla transformer's inference FLOPs than the attention model."""
    inf = inference_flops([attn, repeat])
    r, a = inf[repeat][1], inf[attn][1]
    return exact(text, '"and even more with the repeat version"', f"{_short(repeat)}: {number(100 * r)}% saved; {_short(attn)}: "
                 f"{number(100 * a)}% saved", r > a, kind=COMPUTED)


def at_compute_of(runs: Sequence, reference: Sequence) -> list[float]:
    """Per seed (run i against reference run i, or the reference's first run where it has fewer): the validation
    loss of ``runs`` at the training FLOPs where the reference run ends (NaN where a run does not reach it)."""
    ends = [r.config.flops_per_step() * r.summary["steps"] for r in reference]
    return [_val_at_flops(r, ends[i] if i < len(ends) else ends[0]) for i, r in enumerate(runs)]


def experts_per_compute(runs: Mapping[str, Sequence], names: Sequence[str], base: str) -> tuple[list, dict]:
    """(the expert counts, {"final": per-seed values, "at the no-expert model's final FLOPs": ...}) of the arms
    ``names`` that have runs, in order: for plots.sweep."""
    have_ = [n for n in names if runs.get(n)]
    counts = [experiments.config(n, "paper", device="cpu").model.nb_soft_experts for n in have_]
    return counts, {"final": [_val(runs, n) for n in have_],
                    "at the no-expert model's final FLOPs": [at_compute_of(runs[n], runs[base]) for n in have_]}


def _per_compute_row(text: str, more: str, fewer: str, runs) -> Verdict:
    """``more`` (soft experts) read at the training FLOPs where ``fewer`` ends beats ``fewer``'s final loss: better
    performance per compute. Both gated where they are read."""
    at = at_compute_of(runs[more], runs[fewer])
    if any(math.isnan(x) for x in at):
        return not_decided(text, "", "a run with experts ends before the no-expert run's final FLOPs",
                           "not measurable at this profile")
    words = '"generally until at least 6 you can expect good perf/compute"'
    number = experiments.get(more).published.get("val")
    v = claim(text, words + (f" ({_title(more)}: {number} at the end of its run; no number for none)" if number else ""),
              at, _val(runs, fewer), (f"{_short(more)} at {_short(fewer)}'s FLOPs", _short(fewer)))
    return gate(v, [learning.arm(_short(more), runs[more], "val", at, f"{_short(fewer)}'s final FLOPs"),
                    learning.arm(_short(fewer), runs[fewer], "val")])


def _per_compute_trend(runs) -> Verdict:
    """The validation loss at the no-expert model's final FLOPs falls with the number of experts up to 6."""
    base = SWEEP[0]
    values = [_val(runs, base)] + [at_compute_of(runs[n], runs[base]) for n in SWEEP[1:]]
    if any(math.isnan(x) for v in values for x in v):
        return not_decided(PER_COMPUTE_TREND, "", "an arm ends before the no-expert run's final FLOPs",
                           "not measurable at this profile")
    v = trend(PER_COMPUTE_TREND, '"generally until at least 6 you can expect good perf/compute"', SWEEP_COUNTS,
              values, direction="down")
    return gate(v, [learning.arm(_short(n), runs[n], "val", vals, "the no-expert model's final FLOPs")
                    for n, vals in zip(SWEEP, values)])


def _shared_match_row(text: str, shared: str, classic: str, runs) -> Verdict:
    v = similar(text, '"guarantees similar performance in terms of log-likelihood to the classic variant"',
                _val(runs, shared), _val(runs, classic), similar_margin(), labels=(_short(shared), _short(classic)))
    return gate(v, arms_of(runs, "val", shared, classic))


S0 = H + "attn_448_96_e6_s0"
PERCEIVER = H + "attn_448_96_e6_perceiver"


def _no_gain(text: str, words: str, arm: str, without: str, runs) -> Verdict:
    """``arm`` (with a feature) gives no gain over ``without`` on the final validation loss, within
    :func:`similar_margin` (:func:`lmcompanion.chapters.verdict_forms.no_gain`), both arms gated on it."""
    pub = published_pair_or_none(arm, without)
    v = vf.no_gain(text, f"{words} ({pub})" if pub else words, _val(runs, arm), _val(runs, without),
                   (_short(arm), _short(without)), margin=similar_margin())
    v = dataclasses.replace(v, published_size=published_gap(arm, without, "val"))
    return gate(v, arms_of(runs, "val", arm, without))


def _pair_row(text: str, finding: str, better: str, worse: str, notebook: str) -> Row:
    words = WORDS.get(finding, "")
    if finding in NO_GAINS:
        return Row(text, notebook, lambda ctx: _no_gain(text, words, better, worse, ctx.runs), arms=(better, worse),
                   published=words)
    return Row(text, notebook, lambda ctx: _compared(text, words, better, worse, ctx.runs), arms=(better, worse),
               published=words or published_pair_or_none(better, worse))


def _in_order(rows: list[Row]) -> list[Row]:
    """The rows in reading order: by notebook, each notebook's rows in the order given."""
    return sorted(rows, key=lambda r: r.notebook)


def verdict_rows(runs: Mapping[str, Sequence], timings: Sequence[SideBySide] = (), profile: str | None = None
                 ) -> list[Verdict]:
    """Every row of the chapter (:data:`ROWS`) from the runs of its experiments (name -> runs) and the verdict
    notebook's side-by-side timings (none: the time rows say they were not timed at this profile). Cost claims are
    judged on counted FLOPs as well: time on a shared CPU is not time on a GPU."""
    return claims.verdicts(CHAPTER, Context(runs, profile, tuple(timings)))


def published_pair_or_none(better: str, worse: str) -> str:
    pb, pw = experiments.get(better).published, experiments.get(worse).published
    return f"{pb['val']} vs {pw['val']}" if "val" in pb and "val" in pw else ""


_SCALES_WORDS = '"in most experiences made we still noticed that the attention version scales better with compute"'


def similar_at_end_row(attn: Sequence, repeat: Sequence) -> Verdict:
    """"Similar performance at the end of the repeat upsampling models trainings" (within :func:`similar_margin`):
    attention read at the compute where the repeat runs end, against the repeat runs' final loss, both gated there."""
    at_end, final = end_of_repeat(attn, repeat)
    best = experiments.get(H + "attn_384_32_e6").published["val"], experiments.get(H + "repeat_512_32_e6").published["val"]
    if any(math.isnan(x) for x in at_end):  # an attention run that does not reach the repeat run's compute
        return not_decided(SIMILAR_AT_END, "", "an attention run ends before the repeat runs' final FLOPs",
                           "not measurable at this profile")
    v = similar(SIMILAR_AT_END, f"similar; the best models end at {best[0]} (attn) and {best[1]} (repeat)",
                at_end, final, similar_margin(), labels=("attn at the repeat runs' end", "repeat, final"))
    return gate(v, [learning.arm(ANCHOR.split("/")[-1], attn, "val", at_end, "the repeat runs' final FLOPs"),
                    learning.arm(REPEAT.split("/")[-1], repeat, "val", final)])


def learned_points(frames: Sequence, attn: Sequence) -> list:
    """The frames of :func:`mode_gaps` cut to the compute points where both modes have learned at every seed (each
    seed's loss at least :data:`lmcompanion.learning.MARGIN` below the validation unigram loss)."""
    level = learning.reference(attn[0].config, "val").level
    n = min(len(f) for f in frames)
    keep = [k for k in range(n) if all(level - f[m].iloc[k] >= learning.MARGIN for f in frames for m in ("attn", "repeat"))]
    return [f.iloc[keep].reset_index(drop=True) for f in frames]


def scales_better_row(attn: Sequence, repeat: Sequence) -> Verdict:
    """"The attention version scales better with compute": the per-seed slope of the gap (attention - repeat)
    against log FLOPs below zero (the threshold rule over the seeds), read only over the compute points where both
    modes have learned (:func:`learned_points`); with fewer than :data:`MIN_POINTS` such points, not decided."""
    frames = mode_gaps(attn, repeat)
    learned = learned_points(frames, attn)
    n_all, n_learned = min(len(f) for f in frames), min(len(f) for f in learned)
    if n_all < MIN_POINTS:
        return not_decided(SCALES_BETTER, _SCALES_WORDS, "too few compute points where both modes have evaluations",
                           "too few evaluations at this profile for a trend")
    if n_learned < MIN_POINTS:
        return not_decided(SCALES_BETTER, _SCALES_WORDS, f"{n_learned} of {n_all} compute points where both modes "
                           "have learned at every seed", f"fewer than {MIN_POINTS} compute points where both modes "
                           "have learned")
    slopes = gap_slopes(learned)
    gaps = [stats.mean([f["gap"].iloc[k] for f in learned]) for k in range(n_learned)]
    v = below(SCALES_BETTER, _SCALES_WORDS, slopes, 0.0, fmt="+.3f", log=False)
    v = dataclasses.replace(
        v, effect=f"{number(stats.mean(slopes), sign='+')} nats per tenfold FLOPs",
        ours=f"gap (attn - repeat) at the {n_learned} compute points where both modes have learned, seed means: "
             + ", ".join(number(g, sign="+") for g in gaps) + f"; slope per tenfold FLOPs: {stats.span(slopes, '+.3f')}")
    first = {m: [f[m].iloc[0] for f in learned] for m in ("attn", "repeat")}
    return gate(v, [learning.arm(ANCHOR.split("/")[-1], attn, "val", first["attn"], "the first point of the trend"),
                    learning.arm(REPEAT.split("/")[-1], repeat, "val", first["repeat"], "the first point of the trend")])


_PAIRS: dict[str, list[Row]] = {}
for _row in finding_rows():
    _PAIRS.setdefault(_row[1], []).append(_pair_row(*_row))


def _pairs(*findings: str) -> list[Row]:
    """The pair rows of ``findings`` (each in both modes where it is tested in both), in the order given."""
    return [r for f in findings for r in _PAIRS[f]]


ROWS = register_rows(CHAPTER, _in_order([
    # 01: the schedule, both ways (the book's extension: the write-up ran one)
    *[Row(schedule_claim(s), "01_protocol", lambda ctx, s=s: _schedule_row(s, ctx.runs), arms=SCHEDULES[s],
          extension=True) for s in SCHEDULES],
    # 02: experts: how many, per compute, how often, how wide, shared, how merged
    *_pairs(EXPERTS_HELP),
    *[Row(in_mode(PER_COMPUTE, rep), "02_experts",
          lambda ctx, m=m, b=b, t=in_mode(PER_COMPUTE, rep): _per_compute_row(t, m, b, ctx.runs), arms=(m, b),
          published='"generally until at least 6 you can expect good perf/compute"')
      for rep, (m, b) in ((False, (ANCHOR, SWEEP[0])), (True, (REPEAT, twin(SWEEP[0]))))],
    Row(PER_COMPUTE_TREND, "02_experts", lambda ctx: _per_compute_trend(ctx.runs), arms=SWEEP,
        published='"generally until at least 6 you can expect good perf/compute"'),
    *_pairs(FREQUENCY, MLP),
    *[Row(in_mode(SHARED_MATCH, rep), "02_experts",
          lambda ctx, s=s, c=c, t=in_mode(SHARED_MATCH, rep): _shared_match_row(t, s, c, ctx.runs), arms=(s, c),
          published='"guarantees similar performance in terms of log-likelihood to the classic variant"')
      for rep, (s, c) in ((False, (ANCHOR, S0)), (True, (REPEAT, twin(S0))))],
    Row(SHARED_CHEAPER, "02_experts", lambda ctx: _fewer_flops(SHARED_CHEAPER, ANCHOR, S0), kind=COMPUTED),
    *_pairs(MERGE_MAX, MERGE_MEAN),
    Row(COUNT_BASE, "02_experts", lambda ctx: _count_row(COUNT_BASE, BASE), kind=CHECK),
    # 03: the encoder and the latents
    *_pairs(ENC_LENGTH, LATENT_LENGTH, WIDE_ENC, WIDE_LATENT, PERCEIVER_WORSE, POSITIONS),
    # 04: the two modes, DenseFormer, the latent loss
    *_pairs(DENSE, DENSE_REPEAT, LATENT_LOSS),
    Row(ATTN_COSTS_MORE, "04_upsampling", lambda ctx: _fewer_flops(ATTN_COSTS_MORE, REPEAT, ANCHOR), kind=COMPUTED),
    Row(SIMILAR_AT_END, "04_upsampling", lambda ctx: similar_at_end_row(ctx.runs[ANCHOR], ctx.runs[REPEAT]),
        arms=(ANCHOR, REPEAT)),
    Row(SCALES_BETTER, "04_upsampling", lambda ctx: scales_better_row(ctx.runs[ANCHOR], ctx.runs[REPEAT]),
        arms=(ANCHOR, REPEAT)),
    # 05: the headline: the same loss (scored both ways), a lot cheaper, the inference FLOPs
    *[Row(same_loss_claim(m, s), "05_headline", lambda ctx, m=m, s=s: _same_loss_row(m, s, ctx.runs),
          arms=(m, VANILLA), gap=(m, VANILLA, "val") if s == LAST_32 else None)  # the eval records score the last 32
      for m in (BEST_ATTN, BEST_REPEAT) for s in (LAST_32, LAST_TOKEN)],
    *[Row(fewer_flops_claim(m), "05_headline", lambda ctx, m=m: _lot_cheaper_row(m), kind=COMPUTED)
      for m in (BEST_ATTN, BEST_REPEAT)],
    Row(COUNT_VANILLA, "05_headline", lambda ctx: _count_row(COUNT_VANILLA, VANILLA), kind=CHECK),
    *[Row(inference_claim(m), "05_headline", lambda ctx, m=m: _inference_row(m), kind=COMPUTED)
      for m in (BEST_ATTN, BEST_REPEAT)],
    Row(EVEN_MORE, "05_headline", lambda ctx: _even_more_row(EVEN_MORE, BEST_REPEAT, BEST_ATTN), kind=COMPUTED),
    Row(EVEN_MORE_SAME, "05_headline", lambda ctx: _even_more_row(EVEN_MORE_SAME, REPEAT, ANCHOR), kind=COMPUTED),
    # 06: the blind spot
    Row(BLIND, "06_blind_spot", lambda ctx: _blind_row(ctx.runs), arms=(REPEAT,)),
    # 07: the times measured side by side
    Row(PERCEIVER_FASTER, "07_verdicts",
        lambda ctx: cost.time_lower(PERCEIVER_FASTER, WORDS[PERCEIVER_WORSE], ctx.timing(PERCEIVER, ANCHOR), PERCEIVER,
                                    ANCHOR, ctx.runs), kind=COST, timed=(PERCEIVER, ANCHOR)),
    Row(REPEAT_FASTER, "07_verdicts",
        lambda ctx: cost.time_lower(REPEAT_FASTER, '"models with attention upsampling take more time than those using '
                                    'the repeat upsampling"', ctx.timing(REPEAT, ANCHOR), REPEAT, ANCHOR, ctx.runs),
        kind=COST, timed=(REPEAT, ANCHOR)),
    *[Row(faster_claim(m), "07_verdicts",
          lambda ctx, m=m: cost.time_lower(faster_claim(m), _minutes_words(m), ctx.timing(m, VANILLA), m, VANILLA,
                                           ctx.runs, limit=LOT_FASTER),
          kind=COST, timed=(m, VANILLA)) for m in (BEST_ATTN, BEST_REPEAT)],
]))
TIMED_CLAIMS = tuple(claims.timed_claims(CHAPTER))  # the rows timed side by side in the verdict notebook
TIMED = tuple(claims.timed_pairs(CHAPTER))  # (the claimed-faster arm, the other)


def test_table(runs: Mapping[str, Sequence]):
    """The held-out test split, read once at the end: per arm, the final loss on the test windows (last 32
    positions, the README's protocol) beside the validation loss, and the write-up's test number where it has one."""
    import pandas as pd

    rows = [{"arm": label, "val (final)": stats.span(tables.final(rs, "val"), ".3f"),
             "test (final)": stats.span(tables.final(rs, "test"), ".3f"),
             "write-up test": experiments.get(rs[0].config.name).published.get("test", "not reported")}
            for label, rs in runs.items()]
    return pd.DataFrame(rows).set_index("arm")


# --- the claims ledger ------------------------------------------------------------------------------------------

_C = CHAPTER
_PLAN = "the author's plan or hypothesis for later work, not a result of the runs reported"
_OTHERS = "a statement about another paper's work, not about this write-up's model"
_DESIGN = "a statement of the design, implemented as described (the landing page's model section)"
_ROWS = {r.text for r in ROWS}


def _both(finding: str) -> list[str]:
    """The rows of a finding tested in both modes (a KeyError here is a renamed row)."""
    rows = [in_mode(finding, False), in_mode(finding, True)]
    missing = [r for r in rows if r not in _ROWS]
    if missing:
        raise KeyError(f"no row {missing}")
    return rows


def _claims(says: str, where: str, rows: Sequence[str]) -> list[Claim]:
    """One ledger line per row that tests ``says``."""
    return [Claim(_C, says, where, row=r) for r in rows]


_HEADLINE_SAYS = ("Both models are, when configure correctly, a lot faster than the vanilla transformer architecture "
                  "while achieving the same validation loss")

# The write-up's claims, in its order, each as it prints it (with "..." where words are left out): each names the
# verdict row that tests it (its claim text, exactly) or says in one line why none does.
_PROCESS = "a statement of how the write-up's work was done, not a result of its runs"

LEDGER = register(_C, [
    Claim(_C, "My primary objective is the development of planning algorithms combined with LLMs, but before getting "
              "there, it will be necessary to find a way to reduce the inference cost of these models.",
          "Core Hypothesis", reason=_PLAN),
    Claim(_C, "We believe that composition is one of the keys to obtaining more generalist and data-efficient models.",
          "Core Hypothesis", reason=_PLAN),
    Claim(_C, "My implementation of this intuition involves separating the different distributions or information from a "
              "single dataset and training several versions of the same model on each of these distributions.",
          "Core Hypothesis", reason="a plan for later work: the write-up's experiments train one model on the whole "
                                    "dataset, and so does the book"),
    Claim(_C, "In addition to potentially better generalization, we also gain efficiency and parallelization capacity "
              "for training the model", "Core Hypothesis", reason=_PLAN),
    Claim(_C, "we envision a potentially more generalist central module to which we will add information from "
              "sub-experts in an adaptive way", "Core Hypothesis", reason=_PLAN),
    Claim(_C, "The paper on the cBTM architecture has already shown that training experts on subsets of the same "
              "dataset discovered by unsupervised learning could match or even exceed the performance of a dense model.",
          "Core Hypothesis", reason=_OTHERS),
    Claim(_C, "However, at inference time, they used a discrete router based on input clustering", "Core Hypothesis",
          reason=_OTHERS),
    Claim(_C, "we am more interested in a router that is learned as in PHATGOOSE, as it seems to promise more "
              "comprehensive performance.", "Core Hypothesis",
          reason="the author's preference for another paper's learned router (PHATGOOSE) in later work; no model of "
                 "the write-up has a router, so nothing here tests it"),
    Claim(_C, "we like the idea of having a gate (linear layer followed by a sigmoid in their case) at the input of an "
              "expert that can tell whether this expert will contribute to the processing of the input or not.",
          "Core Hypothesis", reason=_PLAN),
    Claim(_C, "They chose to train each gate separately, which again has the advantage of being highly parallelizable",
          "Core Hypothesis", reason=_OTHERS),
    Claim(_C, "one might wonder if letting the gates become aware of the existence of the other sub-modules would allow "
              "them to better discern when the information produced by other sub-experts is not relevant enough",
          "Core Hypothesis", reason=_PLAN),
    Claim(_C, "we am thinking of moving towards something similar to CALM", "Core Hypothesis", reason=_PLAN),
    Claim(_C, "They demonstrated that this was much more relevant than fine-tuning the base model on the expert model's "
              "dataset", "Core Hypothesis", reason=_OTHERS),
    Claim(_C, "thus suggesting that it is probably more interesting and efficient to divide the tasks and then compose "
              "than to rely on a large model that does and stores everything", "Core Hypothesis", reason=_PLAN),
    Claim(_C, "which provides excellent results for its size", "Preliminary Explorations", reason=_OTHERS),
    Claim(_C, "we moved towards a more \"any modal\" version without the two separate audio/video and text pathways",
          "Preliminary Explorations", reason=_DESIGN),
    Claim(_C, "To further increase computational efficiency, we introduced a notion of groups in my sequence of tokens, "
              "and each group will provide K latent embeddings", "Preliminary Explorations", reason=_DESIGN),
    Claim(_C, "The Perceiver encoder is faster than the Transformer", "Preliminary Explorations", row=PERCEIVER_FASTER),
    *_claims("but performs less well than the Transformer encoder", "Preliminary Explorations",
             _both(PERCEIVER_WORSE)),
    Claim(_C, "similar to what was observed in Mirasol", "Preliminary Explorations", reason=_OTHERS),
    Claim(_C, "a latent block, the most important one that will take the vast majority of the processing",
          "Preliminary Explorations",
          reason="a statement of the design; the chapter counts each model's FLOPs as a whole, not per part"),
    *_claims("we add positional embeddings in each encoder layer after compression and in each decoder layer after "
             "upsampling, which seems to have helped", "Preliminary Explorations", _both(POSITIONS)),
    Claim(_C, "These layers are shared between the encoder and decoder.", "Preliminary Explorations",
          reason="a statement of the design, implemented: each decoder level adds the position table of the matching "
                 "encoder level"),
    Claim(_C, "for a certain size limit of the sequence in the latent block, it is probably more interesting to have "
              "several channels of the same sequence (i.e., several different q, k, v) rather than to have a very long "
              "sequence", "Preliminary Explorations",
          reason="the postulate behind soft experts; the experts and lengths rows test what the write-up measured"),
    Claim(_C, "if we reduce the initial latent size from K to K/m, we go in the attention module from $K^2$ to "
              "$s * (K/m)^2$", "Preliminary Explorations",
          reason="arithmetic of attention's cost, true by construction; the counted FLOPs rows measure the models"),
    Claim(_C, "They can be likened to experts who will extract totally different information on the same sequence.",
          "Preliminary Explorations",
          reason="a picture of what the channels do; the experts rows measure what they do to the loss"),
    Claim(_C, "we merge them by performing a convex combination of the s different features with the coefficients "
              "coming from a softmax applied to them", "Preliminary Explorations",
          reason="a statement of the design, implemented and checked by a unit test (the merge is a convex "
                 "combination)"),
    *_claims("Merging via max and mean of the features was also considered, but according to the first experiments, "
             "this performed less well than the chosen version", "Preliminary Explorations",
             _both(MERGE_MAX) + _both(MERGE_MEAN)),
    Claim(_C, "which is logical given the absence of non-linearities", "Preliminary Explorations",
          reason="the write-up's explanation of the merge rows' outcome, not a measurement of its own"),
    Claim(_C, "but in return, we spend more computation time", "Preliminary Explorations",
          reason="the softmax adds elementwise work to a few blocks, not counted as FLOPs and too small to time apart "
                 "from the noise of a step"),
    Claim(_C, "the longer the sequence, the more information there will be to extract. The same goes for the size of "
              "the model", "Preliminary Explorations",
          reason="a conjecture; the lengths rows test the measured form (longer encoder and latent sequences help)"),
    Claim(_C, "the dimension of the MLPs applied to each of the s experts is a multiple of the dimension of a vanilla "
              "MLP divided by s. The number of multiples is a hyperparameter.", "Preliminary Explorations",
          reason=_DESIGN),
    Claim(_C, "A variant allowing to share part of the MLPs while using the same number of qkv and specialized MLPs was "
              "also studied", "Preliminary Explorations",
          reason="a statement of what was run; the shared-expert arms are the chapter's (their claims have rows below)"),
    Claim(_C, "This allows, among other things, to dedicate a space to store the information common to the experts and "
              "thus to increase the specialization of the MLPs associated with each of them.",
          "Preliminary Explorations", reason="a mechanism the write-up proposes and does not measure"),
    Claim(_C, "For upsampling in the decoder, we opted for a replication of the nearest previous group until the "
              "appropriate size was reached once the current group sequence was added.", "Preliminary Explorations",
          reason=_DESIGN),
    Claim(_C, "This approach generally performs well", "Preliminary Explorations",
          reason="a judgement of repeat upsampling with no comparison named; every finding is measured in both modes"),
    Claim(_C, "the lack of contextual understanding due to simple replication without taking position into account can "
              "limit expressiveness", "Preliminary Explorations", row=BLIND),
    Claim(_C, "we also investigated their method of upsampling via attention", "Preliminary Explorations",
          reason=_DESIGN),
    Claim(_C, "a base model of 19.55M without soft experts", "Experimental Setup", row=COUNT_BASE),
    Claim(_C, "20.48M (n_layer=26, n_head=8, n_embd=256) for a vanilla transformer", "Experimental Setup",
          row=COUNT_VANILLA),
    Claim(_C, "It was the best we could do to be able to iterate easily", "Experimental Setup", reason=_PROCESS),
    Claim(_C, "the lr schedule has not been extensively tuned", "Experimental Setup",
          reason="a statement of the write-up's process; the protocol notebook runs its schedule and its code's"),
    Claim(_C, "A linear schedule was used which provides same performances as the cosine schedule", "Experimental Setup",
          reason="cites another paper for the schedule; the chapter runs the README's linear schedule and the code's "
                 "constant rate, not a cosine one"),
    Claim(_C, "we considered an lr max of 4.8e-4 and a final lr of 10% of this value", "Experimental Setup",
          reason="a protocol statement, followed at every profile (the protocol notebook draws the schedule)"),
    Claim(_C, "for which we warmup for 50% of the dataset and decay until 85%", "Experimental Setup",
          reason="a protocol statement, followed at every profile (the protocol notebook draws the schedule)"),
    Claim(_C, "all experiments were performed for each of the two upsamplers", "Experimental Setup",
          reason="a statement of what was run: each finding not stated for one mode has a row per mode here, its "
                 "repeat arms at every profile (experts, lengths) or at gpu and paper (the rest)"),
    Claim(_C, "the attention upsampler scales better with the number of parameters", "Experimental Setup",
          reason="needs each mode over a range of model sizes; the chapter's sizes per mode (0, 6, 12 experts) are "
                 "at most three, too few for a trend test at 5%"),
    Claim(_C, "but consumes more computation time, which is to be expected", "Experimental Setup",
          row=REPEAT_FASTER),
    Claim(_C, "We consider the shakespear_char dataset and split it into 80% for training, 10% for validation and 10 "
              "for test.", "Experimental Setup",
          reason="a protocol statement, followed (the same file, split by characters as the original's script does)"),
    Claim(_C, "we evaluate our model on the validation set splitting it into overlapping sequences of size l=769, with "
              "a step size of 32 and calculate the val loss over the last 32 tokens", "Experimental Setup",
          reason="a protocol statement, followed; the protocol notebook also scores the code's last token only"),
    *_claims("The more experts there are, the better the results are up to a certain point", "Key Observations",
             _both(EXPERTS_HELP)),
    *_claims("(generally until at least 6 you can expect good perf/compute)", "Key Observations",
             [in_mode(PER_COMPUTE, False), in_mode(PER_COMPUTE, True), PER_COMPUTE_TREND]),
    *_claims("Increasing the size of MLPs also seems to help", "Key Observations", _both(MLP)),
    *_claims("as does increasing the size of the latent vectors in the encoders or in the latent space",
             "Key Observations", _both(ENC_LENGTH) + _both(LATENT_LENGTH) + _both(WIDE_ENC) + _both(WIDE_LATENT)),
    *_claims("we can allow much larger ones with the repeat upsampling which take less time to compute than the "
             "attention version", "Key Observations", [REPEAT_FASTER, ATTN_COSTS_MORE]),
    Claim(_C, "Increasing the frequency of layers with soft experts also seems to help in the context of attention "
              "upsampling.", "Key Observations", row=FREQUENCY),
    *_claims("Sharing MLPs ... guarantees similar performance in terms of log-likelihood to the classic variant",
             "Key Observations", [in_mode(SHARED_MATCH, False), in_mode(SHARED_MATCH, True)]),
    Claim(_C, "while being faster since there is less attention to compute", "Key Observations", row=SHARED_CHEAPER),
    Claim(_C, "regardless of the total number of experts and the size of the sequence in the latent space",
          "Key Observations", reason="the chapter compares shared experts at one number of experts and one latent "
                                     "length (6 experts, 448-96)"),
    Claim(_C, "So generally the best performing way (log-likelihood/compute) to use the attention upsampling is to "
              "combine it with some shared experts.", "Key Observations",
          reason="a conclusion drawn from the two shared-expert claims, each tested by its rows"),
    *_claims("Using Denseformer in the latent blocks only helps for attention upsampling.", "Key Observations",
             [DENSE, DENSE_REPEAT]),
    *_claims("The latent reconstruction loss employed in Mirasol does not help here.", "Key Observations",
             _both(LATENT_LOSS)),
    Claim(_C, "It is difficult to say whether this is due to the radically different scale (20M vs 3B) or if it is due "
              "to the modality", "Key Observations", reason="the author's speculation on a cause, not a measurement"),
    Claim(_C, "The transformer was trained for one epoch, while variants of our architecture were trained for two "
              "epochs", "Plot", reason="a protocol statement, followed: the vanilla transformer takes half the "
                                       "updates; the scale table gives each run's passes"),
    *_claims("since they are substantially faster", "Plot", [faster_claim(BEST_ATTN), faster_claim(BEST_REPEAT)]),
    Claim(_C, "All models lr were fully decayed (same schedule as stated above, only the amount of data seen "
              "differs).", "Plot", reason="a protocol statement, followed; the protocol notebook also runs the code's "
                                          "constant rate, which never decays, with its own rows"),
    Claim(_C, "We would like to emphasize that these are results for the chosen lr schedule and on the "
              "shakespear_char dataset.", "Plot",
          reason="a caveat on scope; the protocol notebook runs the anchor and the vanilla transformer under both "
                 "schedules"),
    Claim(_C, "More experiments on diverse datasets including evals on downstream tasks as well as tuning the hp and "
              "scaling the models are needed to have the full picture", "Plot", reason=_PLAN),
    *_claims("models with attention upsampling take more time than those using the repeat upsampling as expected",
             "Plot", [REPEAT_FASTER, ATTN_COSTS_MORE]),
    Claim(_C, "Although they have similar performance at the end of the repeat upsampling models trainings.", "Plot",
          row=SIMILAR_AT_END),
    Claim(_C, "So if one is looking purely for speed, the repeat upsampling version offers generally a good tradeoff.",
          "Plot", reason="a conclusion from the time and similar-loss claims, each tested by its row"),
    Claim(_C, "in most experiences made we still noticed that the attention version scales better with compute", "Plot",
          row=SCALES_BETTER),
    *_claims("Both models are, when configure correctly, a lot faster than the vanilla transformer architecture",
             "Plot", [faster_claim(m) for m in (BEST_ATTN, BEST_REPEAT)]
             + [fewer_flops_claim(m) for m in (BEST_ATTN, BEST_REPEAT)]),
    *_claims("while achieving the same validation loss", "Plot",
             [same_loss_claim(m, s) for m in (BEST_ATTN, BEST_REPEAT) for s in (LAST_32, LAST_TOKEN)]),
    Claim(_C, "at least 50% flops reduction at inference when we consider the attention upsampling", "Plot",
          row=inference_claim(BEST_ATTN)),
    # "even more" is tested directly (the repeat model saves more than the attention model); that the repeat model also
    # saves at least 50% follows from it, and is the bound's own row
    *_claims("and even more with the repeat version", "Plot", [EVEN_MORE, EVEN_MORE_SAME]),
    Claim(_C, "at least 50% flops reduction at inference", "Plot (the bound, for the repeat version: even more implies "
                                                             "it)", row=inference_claim(BEST_REPEAT)),
    Claim(_C, "The current implementation is obsolete", "TODO",
          reason="a note on the original's muP code; the chapter offers its forward pass as an option (mup=True) and "
                 "decides nothing with it"),
])
_unknown = sorted({c.row for c in LEDGER if c.row} - _ROWS)
if _unknown:
    raise KeyError(f"the hourglass ledger names rows the chapter does not declare: {_unknown}")
# every row is named by a claim of the ledger (the two schedule rows by the protocol statements' reasons: they are
# the book's extension)
_unnamed = sorted(_ROWS - {c.row for c in LEDGER if c.row} - {schedule_claim(s) for s in SCHEDULES})
if _unnamed:
    raise KeyError(f"hourglass rows no ledger claim names: {_unnamed}")


__all__ = ["ALL", "ANCHOR", "BASE", "BEST_ATTN", "BEST_REPEAT", "BLIND_SPOT", "CHAPTER", "CONSTANT", "COST_ARMS",
           "ENCODER_KNOBS", "EXPERTS", "EXPERTS_NB", "EXPERT_KNOBS", "FINDINGS", "HEADLINE", "LEDGER",
           "LENGTHS", "LENGTHS_NB", "LOT_FASTER", "MERGES", "MODES", "PROTOCOL", "REPEAT", "ROWS", "SCHEDULES", "SWEEP",
           "SWEEP_COUNTS", "TIMED", "TIMED_CLAIMS", "VANILLA", "at_compute_of", "blind_offsets", "blind_spot_frames",
           "blind_spot_table", "cost_curves", "cost_table", "counted_flops", "end_of_repeat", "experts_per_compute",
           "faster_claim", "fewer_flops_claim", "finding_rows", "gap_slopes", "head_input_parts", "head_input_table",
           "in_mode", "inference_claim", "inference_flops", "inference_table", "last_token_values", "learned_points",
           "lr_schedules", "mode_gaps", "mode_table", "position_losses", "protocol_table", "same_loss_claim",
           "same_margin", "scales_better_row", "schedule_claim", "schedule_table", "similar_at_end_row",
           "similar_margin", "skipped_note", "sources_note", "sources_table", "test_table", "twin", "twins",
           "verdict_rows", "window_losses"]
