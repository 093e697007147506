"""The efficient hierarchical transformer chapter's analyses: the protocol both ways (the README's schedule and
last-32 validation, the code's constant rate and last-token validation), loss against wall-clock and counted FLOPs,
the two upsampling modes at equal compute, the counted inference FLOPs, the repeat-mode blind spot (loss by position
within a group), the verdicts (with the side-by-side timings of the verdict notebook), and the write-up's claims in
the claims ledger."""

from __future__ import annotations

import dataclasses
import math
from typing import Mapping, Sequence

import numpy as np
import torch

from .. import experiments, models, stats, tables
from ..bench import SideBySide
from .. import data
from ..data.lm import build_source
from ..experiments.hourglass import scale
from ..ledger import Claim, register
from ..models.hourglass import loss_by_group_position
from ..train.schedules import lr_at
from .. import learning
from .. import claims
from ..claims import Context, Row, register as register_rows
from ..verdicts import (CHECK, COMPUTED, COST, Verdict, arms_of, below, between, claim, exact, gate, not_decided,
                        similar)
from . import cost

CHAPTER = "hourglass"
H = "hourglass/"
ANCHOR = H + "attn_448_96_e6"  # the write-up's experts sweep: 448-96, attention upsampling, 6 soft experts
PROTOCOL = (ANCHOR, H + "attn_448_96_e6_constant_lr", H + "attn_448_96_e6_final_norm")
EXPERTS = (H + "attn_448_96_base", ANCHOR, H + "attn_448_96_e12")  # 0, 6, 12 soft experts
EXPERT_COUNTS = (0, 6, 12)
EXPERT_KNOBS = (H + "attn_448_96_e6_mlp6", H + "attn_448_96_e6_every1", H + "attn_448_96_e6_s0")
MERGES = (H + "attn_448_96_e6_merge_max", H + "attn_448_96_e6_merge_mean")  # the merges the write-up compared
BASE = H + "base_256_32"  # "a base model of 19.55M without soft experts": counted, not trained
LENGTHS = (H + "attn_384_32_e6", H + "attn_512_32_e6", H + "attn_448_32_e6", ANCHOR)
# the compressor, the positions added after each compression and upsampling, the latent vectors' widths
ENCODER_KNOBS = (H + "attn_448_96_e6_perceiver", H + "attn_448_96_e6_no_level_pos", H + "attn_448_96_e6_wide_enc",
                 H + "attn_448_96_e6_wide_latent")
REPEAT = H + "repeat_448_96_e6"  # the anchor with repeat upsampling
MODES = (ANCHOR, REPEAT, H + "attn_448_96_e6_dense", H + "repeat_448_96_e6_dense",
         H + "attn_448_96_e12_latent", H + "attn_448_96_e12")
HEADLINE = (H + "vanilla", H + "attn_384_32_e6", H + "repeat_512_32_e6")
BLIND_SPOT = (ANCHOR, REPEAT, H + "vanilla")
COST_ARMS = HEADLINE + (ANCHOR, REPEAT, H + "attn_448_96_e6_perceiver")  # the verdict notebook's cost table
# the pairs the verdict notebook times side by side: (the claimed-faster arm, the other)
TIMED = ((REPEAT, ANCHOR), (H + "attn_448_96_e6_perceiver", ANCHOR))
ALL = tuple(dict.fromkeys(PROTOCOL + EXPERTS + EXPERT_KNOBS + MERGES + LENGTHS + ENCODER_KNOBS + MODES + HEADLINE))

def skipped_note(names: Sequence[str], profile: str) -> str:
    """Which of ``names`` this profile leaves out (as the experiments are registered: the costliest findings that
    are not headline arms run at the gpu and paper profiles only, to keep the chapter inside its cpu budget)."""
    left = [experiments.get(n).title for n in names if not experiments.runs_at(n, profile)]
    return (f"left out at the {profile} profile (budget), run at gpu and paper: " + "; ".join(left)) if left else \
        f"every arm runs at the {profile} profile"


def _small_profiles_leave_out(name: str) -> bool:
    return not experiments.runs_at(name, "cpu")


INFERENCE_CUT = 0.5  # "at least 50% flops reduction at inference"


# --- the protocol both ways -------------------------------------------------------------------------------------


def lr_schedules(names: Sequence[str], profile: str):
    """The learning rate at every update of each arm's run (the README's schedule, the code's constant rate), as
    one frame (update, lr) per arm for plots.curves."""
    import pandas as pd

    out = {}
    for name in names:
        t = experiments.config(name, profile).train
        out[experiments.get(name).title] = [pd.DataFrame({"update": range(t.max_steps),
                                                          "lr": [lr_at(s, t) for s in range(t.max_steps)]})]
    return out


@torch.no_grad()
def window_losses(run, split: str = "val") -> dict[str, float]:
    """The run's model on the protocol's evaluation windows of ``split`` (a start every 32 tokens), scored both ways:
    on each window's last 32 positions (the README) and on its last position only (the original code's
    ``estimate_loss``). Same windows, same weights: only the positions scored differ."""
    cfg = run.config
    last = cfg.data.eval_last or 32
    source = build_source(cfg.replace(data=cfg.data.replace(eval_last=None)))
    model = run.load_model()
    tail, final = [], []
    for batch in source.eval_batches(split, 0):
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
                     "train PFLOPs (counted)": f"{flops / 1e15:.4g}",
                     "write-up val": pub.get("val", ""), "write-up minutes": pub.get("minutes", "")})
    return pd.DataFrame(rows).set_index("arm")


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
        rows[f"gap (attention - repeat) at {flops:.3g} FLOPs"] = stats.span([f["gap"].iloc[k] for f in frames])
    rows["gap slope per tenfold FLOPs"] = stats.span(gap_slopes(frames))
    return pd.DataFrame({"validation loss (nats/char)": rows}).rename_axis("upsampling at equal compute")


def inference_flops(names: Sequence[str], baseline: str = H + "vanilla", profile: str = "paper") -> dict[str, tuple]:
    """Counted forward FLOPs per token at ``profile`` (the write-up's sizes by default): name -> (FLOPs per token,
    fraction saved against ``baseline``)."""
    per = {n: models.build(experiments.config(n, profile, device="cpu").model).flops_per_token(training=False)
           for n in dict.fromkeys([baseline, *names])}
    return {n: (f, 1 - f / per[baseline]) for n, f in per.items()}


def inference_table(names: Sequence[str], profile: str = "paper"):
    import pandas as pd

    rows = [{"arm": experiments.get(n).title, "forward MFLOPs per token": f"{f / 1e6:.2f}",
             "saved against the vanilla transformer": f"{saved:.0%}"}
            for n, (f, saved) in inference_flops(names, profile=profile).items()]
    return pd.DataFrame(rows).set_index("arm")


# --- the repeat-mode blind spot ---------------------------------------------------------------------------------


@torch.no_grad()
def position_losses(run, split: str = "val", n_groups: int | None = None):
    """The run's per-token cross-entropy on the evaluation windows of ``split``, every position scored, averaged by
    offset within the group (the vanilla transformer's windows are cut into the hourglass models' groups):
    (group length,) tensor."""
    cfg = run.config
    source = build_source(cfg.replace(data=cfg.data.replace(eval_last=None)))
    model = run.load_model()
    n_groups = n_groups or cfg.model.n_groups
    per = [loss_by_group_position(model(b["idx"]).logits, b["targets"], n_groups)
           for b in source.eval_batches(split, 0)]
    return torch.cat(per).nanmean(dim=(0, 1))


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

CLAIMS = [  # (claim, metric, better, worse, notebook)
    ("6 soft experts beat none", "val", ANCHOR, H + "attn_448_96_base", "02_experts"),
    ("soft experts in every latent block beat every 4th (attn)", "val", H + "attn_448_96_e6_every1", ANCHOR,
     "02_experts"),
    ("bigger expert MLPs help (d = n against d = n/6)", "val", H + "attn_448_96_e6_mlp6", ANCHOR, "02_experts"),
    ("a longer encoder sequence helps (512-32 against 384-32)", "val", H + "attn_512_32_e6", H + "attn_384_32_e6",
     "03_lengths"),
    ("a longer latent sequence helps (448-96 against 448-32)", "val", ANCHOR, H + "attn_448_32_e6", "03_lengths"),
    (PERCEIVER_WORSE := "the transformer compressor beats the Perceiver compressor (the Perceiver \"performs less "
                        "well\")", "val", ANCHOR, H + "attn_448_96_e6_perceiver", "03_lengths"),
    (POSITIONS := "positions added after each compression and each upsampling help (without them the loss is higher)",
     "val", ANCHOR, H + "attn_448_96_e6_no_level_pos", "03_lengths"),
    (WIDE_ENC := "wider latent vectors in the encoders help (level-1 width 1.5x)", "val",
     H + "attn_448_96_e6_wide_enc", ANCHOR, "03_lengths"),
    (WIDE_LATENT := "wider latent vectors in the latent space help (latent width 1.5x)", "val",
     H + "attn_448_96_e6_wide_latent", ANCHOR, "03_lengths"),
    (MERGE_MAX := "the softmax merge of the experts beats a max merge", "val", ANCHOR, H + "attn_448_96_e6_merge_max",
     "02_experts"),
    (MERGE_MEAN := "the softmax merge of the experts beats a mean merge", "val", ANCHOR,
     H + "attn_448_96_e6_merge_mean", "02_experts"),
    ("DenseFormer helps with attention upsampling", "val", H + "attn_448_96_e6_dense", ANCHOR, "04_upsampling"),
    ("the best attention model beats the vanilla transformer", "val", H + "attn_384_32_e6", H + "vanilla",
     "05_headline"),
    ("the best repeat model beats the vanilla transformer", "val", H + "repeat_512_32_e6", H + "vanilla",
     "05_headline"),
]
# The write-up's own words, where a claim has no published number (the published column of its row).
_LATENT_SIZE = '"increasing the size of the latent vectors in the encoders or in the latent space" "also seems to help"'
_MERGES = '"Merging via max and mean of the features was also considered, but ... this performed less well"'
WORDS = {
    PERCEIVER_WORSE: '"The Perceiver encoder is faster than the Transformer but performs less well"',
    POSITIONS: '"we add positional embeddings in each encoder layer after compression and in each decoder layer after '
               'upsampling, which seems to have helped"',
    WIDE_ENC: _LATENT_SIZE, WIDE_LATENT: _LATENT_SIZE, MERGE_MAX: _MERGES, MERGE_MEAN: _MERGES,
}

# The upsampling claims ("We can observe that models with attention upsampling take more time than those using the
# repeat upsampling ... Although they have similar performance at the end of the repeat upsampling models trainings
# ... the attention version scales better with compute"), on the 448-96 anchor in both modes.
REPEAT_FASTER = ("repeat upsampling takes less time per training step than attention upsampling (448-96, 6 soft experts; "
                 "timed side by side)")
PERCEIVER_FASTER = "the Perceiver compressor takes less time per training step than the transformer compressor (timed side by side)"
TIMED_CLAIMS = (REPEAT_FASTER, PERCEIVER_FASTER)  # the rows timed side by side in the verdict notebook
SCALES_BETTER = ("attention upsampling scales better with compute: its lead over repeat grows with training FLOPs "
                 "(the gap at the repeat runs' evaluations, per seed)")
COUNT_BASE = "the base model without soft experts has 19.55M parameters (as the original counts)"
UP_TO_6 = "more experts help only up to about 6: 12 are no better than 6 (the row tests '6 lower than 12')"
SHARED_MATCH = "shared experts match non-shared ones: 1 shared of 6 is not worse than none (the row tests 'lower')"
SHARED_CHEAPER = ("... at lower cost: 1 shared expert of 6 costs fewer training FLOPs than none (counted at the "
                  "write-up's sizes)")
DENSE_REPEAT = "DenseFormer does not help with repeat upsampling (repeat without it is lower)"
LATENT_LOSS = "the latent loss does not help (12 experts without it are lower)"
ATTN_COSTS_MORE = "attention upsampling costs more than repeat (training FLOPs per token, counted at the write-up's sizes)"
BLIND = ("(the notes) in repeat mode the blind offsets of a group predict worse than the offsets that see their own "
         "group")
COUNT_VANILLA = "the vanilla transformer has 20.48M parameters (as the original counts)"


def similar_margin() -> float:
    """The margin of "similar performance" in nats: the gap between the write-up's best attention and best repeat models
    at the end of their training (best_models.png), which it calls similar."""
    best_attn, best_repeat = (experiments.get(n).published["val"] for n in (H + "attn_384_32_e6", H + "repeat_512_32_e6"))
    return round(abs(best_repeat - best_attn), 3)


SIMILAR_AT_END = (f"attention and repeat upsampling reach a similar validation loss at the end of the repeat runs "
                  f"(within {similar_margin():.2f} nats; attention read at the repeat runs' final training FLOPs)")


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


def _fewer_flops(text: str, cheaper: str, dearer: str, profile: str = "paper") -> Verdict:
    """An exact row: training FLOPs per token of two arms, counted at the write-up's sizes."""
    a, b = (models.build(experiments.config(n, profile, device="cpu").model, device="meta").flops_per_token()
            for n in (cheaper, dearer))
    return exact(text, "a statement, no numbers", f"{cheaper.split('/')[-1]}: {a / 1e6:.1f} vs {dearer.split('/')[-1]}: "
                 f"{b / 1e6:.1f} MFLOPs per token", a < b, kind=COMPUTED)


def _p(name: str) -> str:
    return str(experiments.get(name).published.get("val", "?"))


def _val(runs, name: str) -> list[float]:
    return tables.final(runs[name], "val")


def _compared(text: str, metric: str, better: str, worse: str, runs) -> Verdict:
    """``better`` beats ``worse`` on the final ``metric`` (both arms gated on it), with the write-up's words where it
    has no number."""
    v = between(text, metric, better, worse, runs)
    if v.published == "no published number" and text in WORDS:
        v = dataclasses.replace(v, published=WORDS[text])
    return v


def _val_claim(text: str, published: str, better: str, worse: str, labels: tuple[str, str], runs) -> Verdict:
    """A claim on two arms' final validation losses, both gated on them."""
    return gate(claim(text, published, _val(runs, better), _val(runs, worse), labels),
                arms_of(runs, "val", better, worse))


def _last_token_row(model: str, runs) -> Verdict:
    """The headline scored as the original code scores (the last token of each window), gated on those losses."""
    vanilla = H + "vanilla"
    ours, theirs = _last_token(runs, model), _last_token(runs, vanilla)
    v = claim(last_token_claim(model), f"{_p(model)} vs {_p(vanilla)} (the plotted numbers are scored this way)",
              ours, theirs, (model.split("/")[-1], "vanilla"))
    return gate(v, arms_of(runs, "val", model, vanilla, values={model: ours, vanilla: theirs},
                           at="final, the last token of each window"))


def _blind_row(runs) -> Verdict:
    """In repeat mode the blind offsets predict worse than the offsets that see their own group, gated on the repeat
    arm's final validation loss."""
    per_seed = [position_losses(r) for r in runs[REPEAT]]
    b = runs[REPEAT][0].config.model.blind_spot
    v = claim(BLIND, "the notes: repeat-mode train loss over all positions stays well above its last-token "
              "validation loss", [float(x[b:].mean()) for x in per_seed], [float(x[:b].mean()) for x in per_seed],
              ("seen offsets", "blind offsets"))
    return gate(v, arms_of(runs, "val", REPEAT))


def _inference_row(model: str) -> Verdict:
    inf = inference_flops([H + "attn_384_32_e6", H + "repeat_512_32_e6"])
    return exact(inference_claim(model), "at least 50% (attn), more for repeat", f"{inf[model][1]:.1%} fewer",
                 inf[model][1] >= INFERENCE_CUT, kind=COMPUTED)


def _published_of(text: str, better: str, worse: str) -> str:
    return WORDS.get(text, published_pair_or_none(better, worse))


E12, S0 = H + "attn_448_96_e12", H + "attn_448_96_e6_s0"
PERCEIVER = H + "attn_448_96_e6_perceiver"
_NOTEBOOK_OF = {text: nb for text, _, _, _, nb in CLAIMS}


def _pair_row(text: str, metric: str, better: str, worse: str, notebook: str) -> Row:
    return Row(text, notebook, lambda ctx: _compared(text, metric, better, worse, ctx.runs), arms=(better, worse),
               published=_published_of(text, better, worse))


def _in_order(rows: list[Row]) -> list[Row]:
    """The rows in reading order: by notebook, each notebook's rows in the order given."""
    return sorted(rows, key=lambda r: r.notebook)


def verdict_rows(runs: Mapping[str, Sequence], timings: Sequence[SideBySide] = (), profile: str | None = None
                 ) -> list[Verdict]:
    """Every row of the chapter (:data:`ROWS`) from the runs of its experiments (name -> runs) and the verdict
    notebook's side-by-side timings of :data:`TIMED` (none: the time rows say they were not timed at this profile).
    Cost claims are judged on counted FLOPs as well: time on a shared CPU is not time on a GPU."""
    return claims.verdicts(CHAPTER, Context(runs, profile, tuple(timings)))


def last_token_claim(model: str) -> str:
    return (f"... scored as the original code scores (last token of each window): {experiments.get(model).title} "
            "beats the vanilla transformer")


def inference_claim(model: str) -> str:
    return (f"at least {INFERENCE_CUT:.0%} fewer FLOPs at inference than the vanilla transformer "
            f"({experiments.get(model).title}; forward FLOPs per token, counted at the write-up's sizes)")


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
        v, effect=f"{stats.mean(slopes):+.3f} nats per tenfold FLOPs",
        ours=f"gap (attn - repeat) at the {n_learned} compute points where both modes have learned, seed means: "
             + ", ".join(f"{g:+.3f}" for g in gaps) + f"; slope per tenfold FLOPs: {stats.span(slopes, '+.3f')}")
    first = {m: [f[m].iloc[0] for f in learned] for m in ("attn", "repeat")}
    return gate(v, [learning.arm(ANCHOR.split("/")[-1], attn, "val", first["attn"], "the first point of the trend"),
                    learning.arm(REPEAT.split("/")[-1], repeat, "val", first["repeat"], "the first point of the trend")])


ROWS = register_rows(CHAPTER, _in_order([
    *[_pair_row(*c) for c in CLAIMS],
    # 02: experts
    Row(UP_TO_6, "02_experts", lambda ctx: _val_claim(UP_TO_6, f"{_p(E12)} (12) vs {_p(ANCHOR)} (6)", ANCHOR, E12,
                                                      ("6 experts", "12 experts"), ctx.runs), arms=(ANCHOR, E12)),
    Row(SHARED_MATCH, "02_experts",
        lambda ctx: _val_claim(SHARED_MATCH, f"{experiments.get(H + 'attn_384_64_e6_s2').published['val']} (2 shared "
                               "of 6, 384-64); none not plotted", ANCHOR, S0, ("1 shared", "0 shared"), ctx.runs),
        arms=(ANCHOR, S0)),
    Row(SHARED_CHEAPER, "02_experts", lambda ctx: _fewer_flops(SHARED_CHEAPER, ANCHOR, S0), kind=COMPUTED),
    Row(COUNT_BASE, "02_experts", lambda ctx: _count_row(COUNT_BASE, BASE), kind=CHECK),
    # 04: upsampling, DenseFormer, latent loss
    Row(DENSE_REPEAT, "04_upsampling",
        lambda ctx: _compared(DENSE_REPEAT, "val", REPEAT, H + "repeat_448_96_e6_dense", ctx.runs),
        arms=(REPEAT, H + "repeat_448_96_e6_dense")),
    Row(LATENT_LOSS, "04_upsampling", lambda ctx: _compared(LATENT_LOSS, "val", E12, H + "attn_448_96_e12_latent",
                                                            ctx.runs), arms=(E12, H + "attn_448_96_e12_latent")),
    Row(ATTN_COSTS_MORE, "04_upsampling", lambda ctx: _fewer_flops(ATTN_COSTS_MORE, REPEAT, ANCHOR), kind=COMPUTED),
    Row(SIMILAR_AT_END, "04_upsampling", lambda ctx: similar_at_end_row(ctx.runs[ANCHOR], ctx.runs[REPEAT]),
        arms=(ANCHOR, REPEAT)),
    Row(SCALES_BETTER, "04_upsampling", lambda ctx: scales_better_row(ctx.runs[ANCHOR], ctx.runs[REPEAT]),
        arms=(ANCHOR, REPEAT)),
    # 05: the headline, scored both ways, and the inference FLOPs
    *[Row(last_token_claim(m), "05_headline", lambda ctx, m=m: _last_token_row(m, ctx.runs), arms=(m, H + "vanilla"))
      for m in (H + "attn_384_32_e6", H + "repeat_512_32_e6")],
    Row(COUNT_VANILLA, "05_headline", lambda ctx: _count_row(COUNT_VANILLA, H + "vanilla"), kind=CHECK),
    *[Row(inference_claim(m), "05_headline", lambda ctx, m=m: _inference_row(m), kind=COMPUTED)
      for m in (H + "attn_384_32_e6", H + "repeat_512_32_e6")],
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
]))


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
_ROW = {c[0]: c[0] for c in CLAIMS}  # a claim's row, by its text (a KeyError here is a renamed row)
_PLAN = "the author's plan or hypothesis for later work, not a result of the runs reported"
_OTHERS = "a statement about another paper's work, not about this write-up's model"

# The write-up's claims, in its order: each names the verdict row that tests it (its claim text, exactly) or says in
# one line why none does.
LEDGER = register(_C, [
    Claim(_C, "We believe that composition is one of the keys to obtaining more generalist and data-efficient models.",
          "Core Hypothesis", reason=_PLAN),
    Claim(_C, "In addition to potentially better generalization, we also gain efficiency and parallelization capacity "
              "for training the model", "Core Hypothesis", reason=_PLAN),
    Claim(_C, "The paper on the cBTM architecture has already shown that training experts on subsets of the same "
              "dataset discovered by unsupervised learning could match or even exceed the performance of a dense model.",
          "Core Hypothesis", reason=_OTHERS),
    Claim(_C, "They demonstrated that this was much more relevant than fine-tuning the base model on the expert model's "
              "dataset", "Core Hypothesis", reason=_OTHERS),
    Claim(_C, "The Perceiver encoder is faster than the Transformer", "Preliminary Explorations", row=PERCEIVER_FASTER),
    Claim(_C, "but performs less well than the Transformer encoder", "Preliminary Explorations", row=PERCEIVER_WORSE),
    Claim(_C, "we add positional embeddings in each encoder layer after compression and in each decoder layer after "
              "upsampling, which seems to have helped", "Preliminary Explorations", row=POSITIONS),
    Claim(_C, "for a certain size limit of the sequence in the latent block, it is probably more interesting to have "
              "several channels of the same sequence (i.e., several different q, k, v) rather than to have a very long "
              "sequence", "Preliminary Explorations",
          reason="the postulate behind soft experts; the experts and lengths rows test what the write-up measured"),
    Claim(_C, "if we reduce the initial latent size from K to K/m, we go in the attention module from $K^2$ to "
              "$s * (K/m)^2$", "Preliminary Explorations",
          reason="arithmetic of attention's cost, true by construction; the counted FLOPs rows measure the models"),
    Claim(_C, "Merging via max and mean of the features was also considered, but according to the first experiments, "
              "this performed less well than the chosen version", "Preliminary Explorations", row=MERGE_MAX),
    Claim(_C, "Merging via max and mean of the features was also considered, but according to the first experiments, "
              "this performed less well than the chosen version", "Preliminary Explorations", row=MERGE_MEAN),
    Claim(_C, "but in return, we spend more computation time", "Preliminary Explorations",
          reason="the softmax adds elementwise work to a few blocks, not counted as FLOPs and too small to time apart "
                 "from the noise of a step"),
    Claim(_C, "the longer the sequence, the more information there will be to extract. The same goes for the size of "
              "the model", "Preliminary Explorations",
          reason="a conjecture; the lengths rows test the measured form (longer encoder and latent sequences help)"),
    Claim(_C, "This allows, among other things, to dedicate a space to store the information common to the experts and "
              "thus to increase the specialization of the MLPs associated with each of them.",
          "Preliminary Explorations", reason="a mechanism the write-up proposes and does not measure"),
    Claim(_C, "the lack of contextual understanding due to simple replication without taking position into account can "
              "limit expressiveness", "Preliminary Explorations", row=BLIND),
    Claim(_C, "a base model of 19.55M without soft experts", "Experimental Setup", row=COUNT_BASE),
    Claim(_C, "20.48M (n_layer=26, n_head=8, n_embd=256) for a vanilla transformer", "Experimental Setup",
          row=COUNT_VANILLA),
    Claim(_C, "A linear schedule was used which provides same performances as the cosine schedule", "Experimental Setup",
          reason="cites another paper for the schedule; the chapter runs the README's linear schedule and the code's "
                 "constant rate, not a cosine one"),
    Claim(_C, "the attention upsampler scales better with the number of parameters", "Experimental Setup",
          reason="needs both modes at several model sizes; the chapter trains one size per mode (the experts sweep is "
                 "attention-only)"),
    Claim(_C, "but consumes more computation time, which is to be expected", "Experimental Setup",
          row=REPEAT_FASTER),
    Claim(_C, "we evaluate our model on the validation set splitting it into overlapping sequences of size l=769, with "
              "a step size of 32 and calculate the val loss over the last 32 tokens", "Experimental Setup",
          reason="a protocol statement, followed; the protocol notebook also scores the code's last token only"),
    Claim(_C, "The more experts there are, the better the results are up to a certain point", "Key Observations",
          row=_ROW["6 soft experts beat none"]),
    Claim(_C, "(generally until at least 6 you can expect good perf/compute)", "Key Observations", row=UP_TO_6),
    Claim(_C, "Increasing the size of MLPs also seems to help", "Key Observations",
          row=_ROW["bigger expert MLPs help (d = n against d = n/6)"]),
    Claim(_C, "as does increasing the size of the latent vectors in the encoders or in the latent space",
          "Key Observations", row=_ROW["a longer encoder sequence helps (512-32 against 384-32)"]),
    Claim(_C, "as does increasing the size of the latent vectors in the encoders or in the latent space",
          "Key Observations", row=_ROW["a longer latent sequence helps (448-96 against 448-32)"]),
    Claim(_C, "as does increasing the size of the latent vectors in the encoders or in the latent space",
          "Key Observations", row=WIDE_ENC),
    Claim(_C, "as does increasing the size of the latent vectors in the encoders or in the latent space",
          "Key Observations", row=WIDE_LATENT),
    Claim(_C, "we can allow much larger ones with the repeat upsampling which take less time to compute than the "
              "attention version", "Key Observations", row=REPEAT_FASTER),
    Claim(_C, "Increasing the frequency of layers with soft experts also seems to help in the context of attention "
              "upsampling.", "Key Observations", row=_ROW["soft experts in every latent block beat every 4th (attn)"]),
    Claim(_C, "Sharing MLPs between experts ... guarantees similar performance in terms of log-likelihood to the classic "
              "variant", "Key Observations", row=SHARED_MATCH),
    Claim(_C, "while being faster since there is less attention to compute", "Key Observations", row=SHARED_CHEAPER),
    Claim(_C, "So generally the best performing way (log-likelihood/compute) to use the attention upsampling is to "
              "combine it with some shared experts.", "Key Observations",
          reason="a conclusion drawn from the two shared-expert claims, each tested by its row"),
    Claim(_C, "Using Denseformer in the latent blocks only helps for attention upsampling.", "Key Observations",
          row=_ROW["DenseFormer helps with attention upsampling"]),
    Claim(_C, "Using Denseformer in the latent blocks only helps for attention upsampling.", "Key Observations",
          row=DENSE_REPEAT),
    Claim(_C, "The latent reconstruction loss employed in Mirasol does not help here.", "Key Observations",
          row=LATENT_LOSS),
    Claim(_C, "models with attention upsampling take more time than those using the repeat upsampling as expected",
          "Plot", row=REPEAT_FASTER),
    Claim(_C, "models with attention upsampling take more time than those using the repeat upsampling as expected",
          "Plot", row=ATTN_COSTS_MORE),
    Claim(_C, "Although they have similar performance at the end of the repeat upsampling models trainings.", "Plot",
          row=SIMILAR_AT_END),
    Claim(_C, "So if one is looking purely for speed, the repeat upsampling version offers generally a good tradeoff.",
          "Plot", reason="a conclusion from the time and similar-loss claims, each tested by its row"),
    Claim(_C, "in most experiences made we still noticed that the attention version scales better with compute", "Plot",
          row=SCALES_BETTER),
    Claim(_C, "Both models are, when configure correctly, a lot faster than the vanilla transformer architecture while "
              "achieving the same validation loss", "Plot",
          row=_ROW["the best attention model beats the vanilla transformer"]),
    Claim(_C, "Both models are, when configure correctly, a lot faster than the vanilla transformer architecture while "
              "achieving the same validation loss", "Plot", row=_ROW["the best repeat model beats the vanilla transformer"]),
    *[Claim(_C, "achieving the same validation loss (the plotted losses, scored on the last token of each window)",
            "Plot", row=last_token_claim(n)) for n in (H + "attn_384_32_e6", H + "repeat_512_32_e6")],
    Claim(_C, "at least 50% flops reduction at inference when we consider the attention upsampling", "Plot",
          row=inference_claim(H + "attn_384_32_e6")),
    Claim(_C, "and even more with the repeat version", "Plot", row=inference_claim(H + "repeat_512_32_e6")),
])


__all__ = ["ALL", "ANCHOR", "ROWS", "learned_points", "scales_better_row", "similar_at_end_row", "BASE", "BLIND_SPOT", "CHAPTER", "CLAIMS", "COST_ARMS", "ENCODER_KNOBS", "EXPERTS",
           "EXPERT_COUNTS", "EXPERT_KNOBS", "HEADLINE", "LEDGER", "LENGTHS", "MERGES", "MODES", "PROTOCOL", "REPEAT",
           "TIMED", "TIMED_CLAIMS", "blind_offsets", "blind_spot_frames", "blind_spot_table", "cost_curves",
           "cost_table", "end_of_repeat", "gap_slopes", "head_input_parts", "head_input_table", "inference_flops",
           "inference_table", "last_token_values", "lr_schedules", "mode_gaps", "mode_table", "position_losses",
           "protocol_table", "similar_margin", "skipped_note", "test_table", "verdict_rows", "window_losses"]
