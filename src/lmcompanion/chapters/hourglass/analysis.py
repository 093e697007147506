"""What the efficient hierarchical transformer chapter computes from trained models besides their training curves:
the protocol both ways (the README's schedule and last-32 validation, the code's constant rate and last-token
validation, and what enters the head), the repeat-mode blind spot (loss by position within a group) and the held-out
test split. The two measures that read a run's weights (:func:`window_losses`, :func:`group_position_losses`) are
declared with :func:`lmcompanion.recorded.measure`, so a GPU slot records them with its runs.
"""

from __future__ import annotations

from typing import Mapping, Sequence

import torch

from ... import experiments, recorded, stats, tables
from ...data.lm import build_source
from ...formats import number
from ...models.hourglass import loss_by_group_position
from ...train.schedules import lr_at
from .rows import H, SCHEDULES


# --- the protocol both ways -------------------------------------------------------------------------------------


def lr_schedules(names: Sequence[str], profile: str):
    """The learning rate at every update of each arm's run (the README's schedule, the code's constant rate), as
    one frame (update, lr) per arm for plots.curves; the arms' runs as a page that shows them together reads them
    (:func:`lmcompanion.experiments.page_protocol`)."""
    import pandas as pd

    protocol = experiments.page_protocol(names, profile)
    out = {}
    for name in names:
        t = experiments.config(name, profile, protocol=protocol).train
        out[experiments.get(name).title] = [
            pd.DataFrame({"update": range(t.max_steps), "lr": [lr_at(s, t) for s in range(t.max_steps)]})
        ]
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
        rows.append(
            {
                "schedule": schedule,
                "448-96 anchor": stats.span(a, ".3f"),
                "vanilla transformer": stats.span(v, ".3f"),
                "anchor - vanilla": number(stats.mean(a) - stats.mean(v), sign="+"),
                "anchor - vanilla (last token)": number(stats.mean(la) - stats.mean(lv), sign="+"),
                "seeds": f"{len(a)} vs {len(v)}",
            }
        )
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

    hooks = [
        model.drop.register_forward_hook(keep("embeddings")),
        (model.lm_head if model.ln_f is None else model.ln_f).register_forward_pre_hook(keep("into the head")),
    ]
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
    per = [
        loss_by_group_position(model(b["idx"].to(device)).logits, b["targets"].to(device), n_groups).cpu()
        for b in source.eval_batches(split, 0)
    ]
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
        rows.append(
            {
                "arm": label,
                f"offsets 0-{blind - 1}": agg(lambda o: o < blind),
                f"offsets {blind}-{n - 1}": agg(lambda o: o >= blind),
                "all positions": agg(lambda o: o >= 0),
                "last of the group": agg(lambda o: o == n - 1),
            }
        )
    return pd.DataFrame(rows).set_index("arm")


def blind_offsets(profile: str, name: str = H + "repeat_448_96_e6") -> tuple[int, int]:
    """(blind offsets per group, group length) of ``name`` at ``profile``."""
    c = experiments.config(name, profile).model
    return c.blind_spot, c.group_len


# --- the held-out test split ------------------------------------------------------------------------------------


def test_table(runs: Mapping[str, Sequence]):
    """The held-out test split, read once at the end: per arm, the final loss on the test windows (last 32
    positions, the README's protocol) beside the validation loss, and the write-up's test number where it has one."""
    import pandas as pd

    rows = [
        {
            "arm": label,
            "val (final)": stats.span(tables.final(rs, "val"), ".3f"),
            "test (final)": stats.span(tables.final(rs, "test"), ".3f"),
            "write-up test": experiments.get(rs[0].config.name).published.get("test", "not reported"),
        }
        for label, rs in runs.items()
    ]
    return pd.DataFrame(rows).set_index("arm")
