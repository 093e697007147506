"""The efficient hierarchical transformer chapter's analyses: the protocol both ways (the README's schedule and
last-32 validation, the code's constant rate and last-token validation), loss against wall-clock and counted FLOPs,
the counted inference FLOPs, the repeat-mode blind spot (loss by position within a group), and the verdicts."""

from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np
import torch

from .. import experiments, models, stats, tables
from ..data.lm import build_source, load_tokens
from ..experiments.hourglass import scale
from ..models.hourglass import loss_by_group_position
from ..train.schedules import lr_at
from ..verdicts import INCONCLUSIVE, Verdict, between, claim, exact, have, if_learned, in_notebook

CHAPTER = "hourglass"
H = "hourglass/"
ANCHOR = H + "attn_448_96_e6"  # the write-up's experts sweep: 448-96, attention upsampling, 6 soft experts
PROTOCOL = (ANCHOR, H + "attn_448_96_e6_constant_lr", H + "attn_448_96_e6_final_norm")
EXPERTS = (H + "attn_448_96_base", ANCHOR, H + "attn_448_96_e12")  # 0, 6, 12 soft experts
EXPERT_COUNTS = (0, 6, 12)
EXPERT_KNOBS = (H + "attn_448_96_e6_mlp6", H + "attn_448_96_e6_every1", H + "attn_448_96_e6_s0")
LENGTHS = (H + "attn_384_32_e6", H + "attn_512_32_e6", H + "attn_448_32_e6", ANCHOR)
MODES = (ANCHOR, H + "repeat_448_96_e6", H + "attn_448_96_e6_dense", H + "repeat_448_96_e6_dense",
         H + "attn_448_96_e12_latent", H + "attn_448_96_e12")
HEADLINE = (H + "vanilla", H + "attn_384_32_e6", H + "repeat_512_32_e6")
BLIND_SPOT = (ANCHOR, H + "repeat_448_96_e6", H + "vanilla")
COST_ARMS = HEADLINE + (ANCHOR, H + "repeat_448_96_e6")  # the verdict notebook's cost table
ALL = tuple(dict.fromkeys(PROTOCOL + EXPERTS + EXPERT_KNOBS + LENGTHS + MODES + HEADLINE))  # every arm trained

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
    return pd.DataFrame(rows).set_index(["arm", "split"])


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
    ("DenseFormer helps with attention upsampling", "val", H + "attn_448_96_e6_dense", ANCHOR, "04_upsampling"),
    ("attention upsampling beats repeat upsampling (448-96, 6 soft experts)", "val", ANCHOR,
     H + "repeat_448_96_e6", "04_upsampling"),
    ("the best attention model beats the vanilla transformer", "val", H + "attn_384_32_e6", H + "vanilla",
     "05_headline"),
    ("the best repeat model beats the vanilla transformer", "val", H + "repeat_512_32_e6", H + "vanilla",
     "05_headline"),
]


def unigram_loss(data_cfg, split: str = "val") -> float:
    """Cross-entropy (nats per token) on ``split`` of the unigram model fitted to the training split (add-one
    smoothed): the loss a model reaches by learning character frequencies alone, and never context. An arm whose
    validation loss is not below it has learned nothing a comparison could rest on."""
    data = load_tokens(data_cfg)
    counts = np.bincount(np.asarray(data.splits["train"]), minlength=data.vocab_size) + 1.0
    logp = np.log(counts / counts.sum())
    return float(-logp[np.asarray(data.splits[split])].mean())


def unigram_reference(runs: Mapping[str, Sequence]) -> tuple[str, float]:
    """(label, loss) of the unigram model on the validation split of these runs' data, for plots.loss_curves."""
    first = next(rs[0] for rs in runs.values() if rs)
    return "unigram loss", unigram_loss(first.config.data)


def _not_run(text: str, names: Sequence[str]) -> Verdict:
    """A claim whose arms the small profiles leave out (as registered): listed, so the scorecard has every claim."""
    return Verdict(text, "", "not run at this profile", f"{INCONCLUSIVE} (not run at this profile: its arms are left "
                   "out to keep within the time budget; the gpu and paper profiles run them)",
                   seeds="0", chance="")


def _last_token(runs: Mapping[str, Sequence], name: str) -> list[float]:
    return last_token_values(runs[name])


def _fewer_flops(text: str, cheaper: str, dearer: str, profile: str = "paper") -> Verdict:
    """An exact row: training FLOPs per token of two arms, counted at the write-up's sizes."""
    a, b = (models.build(experiments.config(n, profile, device="cpu").model, device="meta").flops_per_token()
            for n in (cheaper, dearer))
    return exact(text, "a statement, no numbers", f"{cheaper.split('/')[-1]}: {a / 1e6:.1f} vs {dearer.split('/')[-1]}: "
                 f"{b / 1e6:.1f} MFLOPs per token", a < b)


def verdict_rows(runs: Mapping[str, Sequence]) -> list[Verdict]:
    """Every claim of the write-up the chapter tests, from the runs of its experiments (name -> runs). Cost claims
    are judged on counted FLOPs: wall-clock on a shared CPU measures the machine's load as much as the model."""
    unigram = unigram_reference(runs)[1] if any(runs.values()) else float("inf")

    def gated(v: Verdict, better: Sequence[float], worse: Sequence[float]) -> Verdict:
        """Comparisons of arms are decided only where one of them learns beyond the unigram loss."""
        return if_learned(v, unigram, better, worse, "the unigram loss")

    def compared(text: str, metric: str, better: str, worse: str) -> Verdict:
        v = between(text, metric, better, worse, runs)
        return gated(v, tables.final(runs[better], metric), tables.final(runs[worse], metric))

    rows = []
    for text, metric, better, worse, nb in CLAIMS:
        if have(runs, better, worse):
            rows += in_notebook([compared(text, metric, better, worse)], f"{CHAPTER}/{nb}")
        elif any(_small_profiles_leave_out(n) for n in (better, worse)):
            rows += in_notebook([_not_run(text, (better, worse))], f"{CHAPTER}/{nb}")
    e12, s0, rep = H + "attn_448_96_e12", H + "attn_448_96_e6_s0", H + "repeat_448_96_e6"

    def p(name: str) -> str:
        return str(experiments.get(name).published.get("val", "?"))

    def val(name: str) -> list[float]:
        return tables.final(runs[name], "val")

    # 02: experts
    if have(runs, e12, ANCHOR):
        rows += in_notebook([gated(claim("more experts help only up to about 6: 12 are no better than 6 (the row "
                                         "tests '6 lower than 12')", f"{p(e12)} (12) vs {p(ANCHOR)} (6)", val(ANCHOR),
                                         val(e12), ("6 experts", "12 experts")), val(ANCHOR), val(e12))],
                            f"{CHAPTER}/02_experts")
    if have(runs, ANCHOR, s0):
        two_shared = experiments.get(H + "attn_384_64_e6_s2").published["val"]
        rows += in_notebook([gated(claim("shared experts match non-shared ones: 1 shared of 6 is not worse than none "
                                         "(the row tests 'lower')", f"{two_shared} (2 shared of 6, 384-64); none not "
                                         "plotted", val(ANCHOR), val(s0), ("1 shared", "0 shared")),
                                   val(ANCHOR), val(s0))], f"{CHAPTER}/02_experts")
    rows += in_notebook([_fewer_flops("... at lower cost: 1 shared expert of 6 costs fewer training FLOPs than none "
                                      "(counted at the write-up's sizes)", ANCHOR, s0)], f"{CHAPTER}/02_experts")
    # 04: upsampling, DenseFormer, latent loss
    dense_repeat = "DenseFormer does not help with repeat upsampling (repeat without it is lower)"
    if have(runs, H + "repeat_448_96_e6_dense", rep):
        rows += in_notebook([compared(dense_repeat, "val", rep, H + "repeat_448_96_e6_dense")],
                            f"{CHAPTER}/04_upsampling")
    elif have(runs, rep):
        rows += in_notebook([_not_run(dense_repeat, (rep, H + "repeat_448_96_e6_dense"))], f"{CHAPTER}/04_upsampling")
    if have(runs, H + "attn_448_96_e12_latent", e12):
        rows += in_notebook([compared("the latent loss does not help (12 experts without it are lower)", "val", e12,
                                      H + "attn_448_96_e12_latent")], f"{CHAPTER}/04_upsampling")
    rows += in_notebook([_fewer_flops("attention upsampling costs more than repeat (training FLOPs per token, counted "
                                      "at the write-up's sizes)", rep, ANCHOR)], f"{CHAPTER}/04_upsampling")
    # 05: the headline, scored both ways, and the inference FLOPs
    for model in (H + "attn_384_32_e6", H + "repeat_512_32_e6"):
        if have(runs, model, H + "vanilla"):
            ours, theirs = _last_token(runs, model), _last_token(runs, H + "vanilla")
            rows += in_notebook([gated(claim(
                f"... scored as the original code scores (last token of each window): {experiments.get(model).title} "
                "beats the vanilla transformer", f"{p(model)} vs {p(H + 'vanilla')} (the plotted numbers are scored "
                "this way)", ours, theirs, (model.split("/")[-1], "vanilla")), ours, theirs)], f"{CHAPTER}/05_headline")
    inf = inference_flops([H + "attn_384_32_e6", H + "repeat_512_32_e6"])
    rows += in_notebook([exact(f"at least {INFERENCE_CUT:.0%} fewer FLOPs at inference than the vanilla "
                               f"transformer ({experiments.get(n).title}; forward FLOPs per token, counted at the "
                               "write-up's sizes)", "at least 50% (attn), more for repeat",
                               f"{inf[n][1]:.1%} fewer", inf[n][1] >= INFERENCE_CUT)
                         for n in (H + "attn_384_32_e6", H + "repeat_512_32_e6")], f"{CHAPTER}/05_headline")
    # 06: the blind spot
    if have(runs, rep):
        per_seed = [position_losses(r) for r in runs[rep]]
        b = runs[rep][0].config.model.blind_spot
        rows += in_notebook([claim(
            "(the notes) in repeat mode the blind offsets of a group predict worse than the offsets that see their "
            "own group", "the notes: repeat-mode train loss over all positions stays well above its last-token "
            "validation loss",
            [float(x[b:].mean()) for x in per_seed], [float(x[:b].mean()) for x in per_seed],
            ("seen offsets", "blind offsets"))], f"{CHAPTER}/06_blind_spot")
    return sorted(rows, key=lambda v: v.notebook)  # in reading order (stable: each notebook's rows keep theirs)




def test_table(runs: Mapping[str, Sequence]):
    """The held-out test split, read once at the end: per arm, the final loss on the test windows (last 32
    positions, the README's protocol) beside the validation loss, and the write-up's test number where it has one."""
    import pandas as pd

    rows = [{"arm": label, "val (final)": stats.span(tables.final(rs, "val"), ".3f"),
             "test (final)": stats.span(tables.final(rs, "test"), ".3f"),
             "write-up test": experiments.get(rs[0].config.name).published.get("test", "not reported")}
            for label, rs in runs.items()]
    return pd.DataFrame(rows).set_index("arm")


__all__ = ["ALL", "ANCHOR", "BLIND_SPOT", "CHAPTER", "CLAIMS", "COST_ARMS", "EXPERTS", "EXPERT_COUNTS", "EXPERT_KNOBS",
           "HEADLINE", "LENGTHS", "MODES", "PROTOCOL", "blind_offsets", "blind_spot_frames",
           "blind_spot_table", "cost_curves", "cost_table", "head_input_parts", "head_input_table", "inference_flops",
           "inference_table", "last_token_values", "lr_schedules", "position_losses", "protocol_table", "skipped_note",
           "test_table", "verdict_rows", "window_losses"]
