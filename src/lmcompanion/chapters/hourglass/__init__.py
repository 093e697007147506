"""The efficient hierarchical transformer chapter (K. Plumard, *efficient_transformer*, 2024): which arms each
notebook reads, and the verdict of every claim of the write-up.

**Rows.** The claims are data (:mod:`.rows`: the arms, the write-up's words, the findings tested in both upsampling
modes, the margins fixed from its numbers); this module decides them (with the side-by-side timings of the verdict
notebook), each comparison of trained arms gated on the arms having learned (:func:`lmcompanion.verdicts.gate`).
Which claim of the write-up each row tests, or why a claim has none, is the ledger (:mod:`.claims`), registered here
with :mod:`lmcompanion.ledger`.

**Analyses.** The protocol both ways (the README's schedule and last-32 validation, the code's constant rate and
last-token validation), the repeat-mode blind spot (loss by position within a group) and the test split are in
:mod:`.analysis`; loss against wall-clock and counted FLOPs, and the two upsampling modes at equal compute, in
:mod:`.compute`; the counted inference FLOPs, the unigram loss and where the write-up's numbers come from in
:mod:`.facts`. Every name the notebooks use is re-exported here.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Mapping, Sequence

from ... import experiments, learning, models, stats, tables
from ... import claims as claim_rows
from ...claims import Row, register as register_rows
from ...experiments import hourglass as ex
from ...formats import number, si
from ...verdicts import (
    CHECK,
    COMPUTED,
    COST,
    Verdict,
    arms_of,
    below,
    between,
    claim,
    exact,
    gate,
    not_decided,
    published_gap,
    similar,
    trend,
)
from .. import cost
from .. import verdict_forms as vf
from . import analysis, compute, facts
from .analysis import (
    blind_offsets,
    blind_spot_frames,
    blind_spot_table,
    group_position_losses,
    head_input_parts,
    head_input_table,
    last_token_values,
    lr_schedules,
    position_losses,
    protocol_table,
    schedule_table,
    test_table,
    window_losses,
)
from .claims import CLAIMS
from .compute import (
    MIN_POINTS,
    at_compute_of,
    cost_curves,
    cost_table,
    end_of_repeat,
    experts_per_compute,
    gap_slopes,
    learned_points,
    mode_gaps,
    mode_table,
)
from .facts import counted_flops, inference_flops, inference_table, sources_note, sources_table, unigram_reference
from .rows import (
    ANCHOR,
    ATTN_COSTS_MORE,
    BASE,
    BEST_ATTN,
    BEST_REPEAT,
    BLIND,
    CONSTANT,
    COUNT_BASE,
    COUNT_VANILLA,
    DENSE,
    DENSE_REPEAT,
    ENC_LENGTH,
    EVEN_MORE,
    EVEN_MORE_SAME,
    EXPERTS_HELP,
    FINDINGS,
    FREQUENCY,
    H,
    INFERENCE_CUT,
    LAST_32,
    LAST_TOKEN,
    LATENT_LENGTH,
    LATENT_LOSS,
    LOT_FASTER,
    MERGE_MAX,
    MERGE_MEAN,
    MLP,
    NO_GAINS,
    PERCEIVER,
    PERCEIVER_FASTER,
    PERCEIVER_WORSE,
    PER_COMPUTE,
    PER_COMPUTE_TREND,
    POSITIONS,
    REPEAT,
    REPEAT_FASTER,
    S0,
    SCALES_BETTER,
    SCALES_WORDS,
    SCHEDULES,
    SHARED_CHEAPER,
    SHARED_MATCH,
    SIMILAR_AT_END,
    SWEEP,
    SWEEP_COUNTS,
    VANILLA,
    WIDE_ENC,
    WIDE_LATENT,
    WORDS,
    faster_claim,
    fewer_flops_claim,
    finding_rows,
    in_mode,
    inference_claim,
    minutes_words,
    published_pair_or_none,
    same_loss_claim,
    same_margin,
    schedule_claim,
    similar_margin,
    twin,
    twins,
)

CHAPTER = "hourglass"

# --- the arms of each notebook ----------------------------------------------------------------------------------
PROTOCOL = (ANCHOR, CONSTANT[0], H + "attn_448_96_e6_final_norm", VANILLA, CONSTANT[1])
EXPERTS = (H + "attn_448_96_base", ANCHOR, H + "attn_448_96_e12")  # 0, 6, 12 soft experts
EXPERT_KNOBS = (H + "attn_448_96_e6_mlp6", H + "attn_448_96_e6_every1", H + "attn_448_96_e6_s0")
MERGES = (H + "attn_448_96_e6_merge_max", H + "attn_448_96_e6_merge_mean")  # the merges the write-up compared
LENGTHS = (H + "attn_384_32_e6", H + "attn_512_32_e6", H + "attn_448_32_e6", ANCHOR)
# the compressor, the positions added after each compression and upsampling, the latent vectors' widths
ENCODER_KNOBS = (
    H + "attn_448_96_e6_perceiver",
    H + "attn_448_96_e6_no_level_pos",
    H + "attn_448_96_e6_wide_enc",
    H + "attn_448_96_e6_wide_latent",
)
MODES = (
    ANCHOR,
    REPEAT,
    H + "attn_448_96_e6_dense",
    H + "repeat_448_96_e6_dense",
    H + "attn_448_96_e12_latent",
    H + "attn_448_96_e12",
    H + "repeat_448_96_e12_latent",
    H + "repeat_448_96_e12",
)
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
    why = {
        n: ex.GPU_ONLY_REASON if n in ex.GPU_ONLY else ex.SWEEP_ONLY_REASON if n in ex.SWEEP_ONLY else "budget"
        for n in left
    }
    lines = [f"left out at the {profile} profile ({len(left)} arms), run at gpu and paper:"]
    for reason in dict.fromkeys(why.values()):
        lines.append(f"- {reason}: " + "; ".join(experiments.get(n).title for n in left if why[n] == reason))
    return "\n".join(lines)


# --- verdicts ---------------------------------------------------------------------------------------------------


def _short(name: str) -> str:
    return name.split("/")[-1]


def _count_row(text: str, name: str) -> Verdict:
    """An exact row: the experiment's parameter count at the write-up's size, computed from the model, against the
    write-up's (as the original counts: position tables out, the parameters it builds and never reads in)."""
    ours = models.num_params(experiments.config(name, "paper", device="cpu").model)
    published = experiments.get(name).published["params"]
    return exact(
        text, f"{published / 1e6:.2f}M ({published:,} by the original's count)", f"{ours:,}", ours == published
    )


def _last_token(runs: Mapping[str, Sequence], name: str) -> list[float]:
    return last_token_values(runs[name])


def _fewer_flops(text: str, cheaper: str, dearer: str) -> Verdict:
    """An exact row: training FLOPs per token of two arms, counted at the write-up's sizes."""
    a, b = counted_flops(cheaper, True), counted_flops(dearer, True)
    return exact(
        text,
        "a statement, no numbers",
        f"{_short(cheaper)}: {si(a, 'FLOP')} vs {_short(dearer)}: {si(b, 'FLOP')} per token",
        a < b,
        kind=COMPUTED,
    )


def _lot_cheaper_row(model: str) -> Verdict:
    """An exact row: ``model``'s training FLOPs per token under :data:`LOT_FASTER` of the vanilla transformer's."""
    a, b = counted_flops(model, True), counted_flops(VANILLA, True)
    return exact(
        fewer_flops_claim(model),
        minutes_words(model),
        f"{_short(model)}: {si(a, 'FLOP')} vs vanilla: {si(b, 'FLOP')} per token (ratio {number(a / b)})",
        a / b < LOT_FASTER,
        kind=COMPUTED,
    )


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
    """ "The same validation loss" as the vanilla transformer, within :func:`same_margin` either way (two one-sided
    tests), scored the README's way or the code's, both arms gated on the losses compared."""
    text = same_loss_claim(model, scoring)
    if scoring == LAST_32:
        ours, theirs, at = _val(runs, model), _val(runs, VANILLA), "final"
    else:
        ours, theirs, at = _last_token(runs, model), _last_token(runs, VANILLA), "final, the last token of each window"
    v = similar(
        text,
        f"{_p(model)} vs {_p(VANILLA)} (best_models.png, scored on the last token)",
        ours,
        theirs,
        same_margin(),
        labels=(_short(model), "vanilla"),
    )
    v = dataclasses.replace(v, published_size=published_gap(model, VANILLA, "val"))
    return gate(v, arms_of(runs, "val", model, VANILLA, values={model: ours, VANILLA: theirs}, at=at))


def _schedule_row(schedule: str, runs) -> Verdict:
    anchor, vanilla = SCHEDULES[schedule]
    v = similar(
        schedule_claim(schedule),
        "the write-up ran one schedule (the README's; its code's rate is constant)",
        _val(runs, anchor),
        _val(runs, vanilla),
        same_margin(),
        labels=(_short(anchor), _short(vanilla)),
    )
    return gate(v, arms_of(runs, "val", anchor, vanilla))


def _blind_row(runs) -> Verdict:
    """In repeat mode the blind offsets predict worse than the offsets that see their own group, gated on the repeat
    arm's final validation loss."""
    per_seed = [group_position_losses(r) for r in runs[REPEAT]]
    b = runs[REPEAT][0].config.model.blind_spot
    v = claim(
        BLIND,
        '"can limit expressiveness" (no number)',
        [stats.mean(x[b:]) for x in per_seed],
        [stats.mean(x[:b]) for x in per_seed],
        ("seen offsets", "blind offsets"),
    )
    return gate(v, arms_of(runs, "val", REPEAT))


def _inference_row(model: str) -> Verdict:
    inf = inference_flops([BEST_ATTN, BEST_REPEAT])
    return exact(
        inference_claim(model),
        "at least 50% (attn), more for repeat",
        f"{number(100 * inf[model][1])}% fewer",
        inf[model][1] >= INFERENCE_CUT,
        kind=COMPUTED,
    )


def _even_more_row(text: str, repeat: str, attn: str) -> Verdict:
    """The repeat model saves a larger share of the vanilla transformer's inference FLOPs than the attention model."""
    inf = inference_flops([attn, repeat])
    r, a = inf[repeat][1], inf[attn][1]
    return exact(
        text,
        '"and even more with the repeat version"',
        f"{_short(repeat)}: {number(100 * r)}% saved; {_short(attn)}: {number(100 * a)}% saved",
        r > a,
        kind=COMPUTED,
    )


def _per_compute_row(text: str, more: str, fewer: str, runs) -> Verdict:
    """``more`` (soft experts) read at the training FLOPs where ``fewer`` ends beats ``fewer``'s final loss: better
    performance per compute. Both gated where they are read."""
    at = at_compute_of(runs[more], runs[fewer])
    if any(math.isnan(x) for x in at):
        return not_decided(
            text, "", "a run with experts ends before the no-expert run's final FLOPs", "not measurable at this profile"
        )
    words = '"generally until at least 6 you can expect good perf/compute"'
    number = experiments.get(more).published.get("val")
    v = claim(
        text,
        words
        + (f" ({experiments.get(more).title}: {number} at the end of its run; no number for none)" if number else ""),
        at,
        _val(runs, fewer),
        (f"{_short(more)} at {_short(fewer)}'s FLOPs", _short(fewer)),
    )
    return gate(
        v,
        [
            learning.arm(_short(more), runs[more], "val", at, f"{_short(fewer)}'s final FLOPs"),
            learning.arm(_short(fewer), runs[fewer], "val"),
        ],
    )


def _per_compute_trend(runs) -> Verdict:
    """The validation loss at the no-expert model's final FLOPs falls with the number of experts up to 6."""
    base = SWEEP[0]
    values = [_val(runs, base)] + [at_compute_of(runs[n], runs[base]) for n in SWEEP[1:]]
    if any(math.isnan(x) for v in values for x in v):
        return not_decided(
            PER_COMPUTE_TREND,
            "",
            "an arm ends before the no-expert run's final FLOPs",
            "not measurable at this profile",
        )
    v = trend(
        PER_COMPUTE_TREND,
        '"generally until at least 6 you can expect good perf/compute"',
        SWEEP_COUNTS,
        values,
        direction="down",
    )
    return gate(
        v,
        [
            learning.arm(_short(n), runs[n], "val", vals, "the no-expert model's final FLOPs")
            for n, vals in zip(SWEEP, values)
        ],
    )


def _shared_match_row(text: str, shared: str, classic: str, runs) -> Verdict:
    v = similar(
        text,
        '"guarantees similar performance in terms of log-likelihood to the classic variant"',
        _val(runs, shared),
        _val(runs, classic),
        similar_margin(),
        labels=(_short(shared), _short(classic)),
    )
    return gate(v, arms_of(runs, "val", shared, classic))


def _no_gain(text: str, words: str, arm: str, without: str, runs) -> Verdict:
    """``arm`` (with a feature) gives no gain over ``without`` on the final validation loss, within
    :func:`similar_margin` (:func:`lmcompanion.chapters.verdict_forms.no_gain`), both arms gated on it."""
    pub = published_pair_or_none(arm, without)
    v = vf.no_gain(
        text,
        f"{words} ({pub})" if pub else words,
        _val(runs, arm),
        _val(runs, without),
        (_short(arm), _short(without)),
        margin=similar_margin(),
    )
    v = dataclasses.replace(v, published_size=published_gap(arm, without, "val"))
    return gate(v, arms_of(runs, "val", arm, without))


def _pair_row(text: str, finding: str, better: str, worse: str, notebook: str) -> Row:
    words = WORDS.get(finding, "")
    if finding in NO_GAINS:
        return Row(
            text,
            notebook,
            lambda ctx: _no_gain(text, words, better, worse, ctx.runs),
            arms=(better, worse),
            published=words,
        )
    return Row(
        text,
        notebook,
        lambda ctx: _compared(text, words, better, worse, ctx.runs),
        arms=(better, worse),
        published=words or published_pair_or_none(better, worse),
    )


def _in_order(rows: list[Row]) -> list[Row]:
    """The rows in reading order: by notebook, each notebook's rows in the order given."""
    return sorted(rows, key=lambda r: r.notebook)


def similar_at_end_row(attn: Sequence, repeat: Sequence) -> Verdict:
    """ "Similar performance at the end of the repeat upsampling models trainings" (within :func:`similar_margin`):
    attention read at the compute where the repeat runs end, against the repeat runs' final loss, both gated there."""
    at_end, final = end_of_repeat(attn, repeat)
    best = (
        experiments.get(H + "attn_384_32_e6").published["val"],
        experiments.get(H + "repeat_512_32_e6").published["val"],
    )
    if any(math.isnan(x) for x in at_end):  # an attention run that does not reach the repeat run's compute
        return not_decided(
            SIMILAR_AT_END,
            "",
            "an attention run ends before the repeat runs' final FLOPs",
            "not measurable at this profile",
        )
    v = similar(
        SIMILAR_AT_END,
        f"similar; the best models end at {best[0]} (attn) and {best[1]} (repeat)",
        at_end,
        final,
        similar_margin(),
        labels=("attn at the repeat runs' end", "repeat, final"),
    )
    return gate(
        v,
        [
            learning.arm(ANCHOR.split("/")[-1], attn, "val", at_end, "the repeat runs' final FLOPs"),
            learning.arm(REPEAT.split("/")[-1], repeat, "val", final),
        ],
    )


def scales_better_row(attn: Sequence, repeat: Sequence) -> Verdict:
    """ "The attention version scales better with compute": the per-seed slope of the gap (attention - repeat)
    against log FLOPs below zero (the threshold rule over the seeds), read only over the compute points where both
    modes have learned (:func:`learned_points`); with fewer than :data:`MIN_POINTS` such points, not decided."""
    frames = mode_gaps(attn, repeat)
    learned = learned_points(frames, attn)
    n_all, n_learned = min(len(f) for f in frames), min(len(f) for f in learned)
    if n_all < MIN_POINTS:
        return not_decided(
            SCALES_BETTER,
            SCALES_WORDS,
            "too few compute points where both modes have evaluations",
            "too few evaluations at this profile for a trend",
        )
    if n_learned < MIN_POINTS:
        return not_decided(
            SCALES_BETTER,
            SCALES_WORDS,
            f"{n_learned} of {n_all} compute points where both modes have learned at every seed",
            f"fewer than {MIN_POINTS} compute points where both modes have learned",
        )
    slopes = gap_slopes(learned)
    gaps = [stats.mean([f["gap"].iloc[k] for f in learned]) for k in range(n_learned)]
    v = below(SCALES_BETTER, SCALES_WORDS, slopes, 0.0, fmt="+.3f", log=False)
    v = dataclasses.replace(
        v,
        effect=f"{number(stats.mean(slopes), sign='+')} nats per tenfold FLOPs",
        ours=f"gap (attn - repeat) at the {n_learned} compute points where both modes have learned, seed means: "
        + ", ".join(number(g, sign="+") for g in gaps)
        + f"; slope per tenfold FLOPs: {stats.span(slopes, '+.3f')}",
    )
    first = {m: [f[m].iloc[0] for f in learned] for m in ("attn", "repeat")}
    return gate(
        v,
        [
            learning.arm(ANCHOR.split("/")[-1], attn, "val", first["attn"], "the first point of the trend"),
            learning.arm(REPEAT.split("/")[-1], repeat, "val", first["repeat"], "the first point of the trend"),
        ],
    )


_PAIRS: dict[str, list[Row]] = {}
for _row in finding_rows():
    _PAIRS.setdefault(_row[1], []).append(_pair_row(*_row))


def _pairs(*findings: str) -> list[Row]:
    """The pair rows of ``findings`` (each in both modes where it is tested in both), in the order given."""
    return [r for f in findings for r in _PAIRS[f]]


ROWS = register_rows(
    CHAPTER,
    _in_order(
        [
            # 01: the schedule, both ways (the book's extension: the write-up ran one)
            *[
                Row(
                    schedule_claim(s),
                    "01_protocol",
                    lambda ctx, s=s: _schedule_row(s, ctx.runs),
                    arms=SCHEDULES[s],
                    extension=True,
                )
                for s in SCHEDULES
            ],
            # 02: experts: how many, per compute, how often, how wide, shared, how merged
            *_pairs(EXPERTS_HELP),
            *[
                Row(
                    in_mode(PER_COMPUTE, rep),
                    "02_experts",
                    lambda ctx, m=m, b=b, t=in_mode(PER_COMPUTE, rep): _per_compute_row(t, m, b, ctx.runs),
                    arms=(m, b),
                    published='"generally until at least 6 you can expect good perf/compute"',
                )
                for rep, (m, b) in ((False, (ANCHOR, SWEEP[0])), (True, (REPEAT, twin(SWEEP[0]))))
            ],
            Row(
                PER_COMPUTE_TREND,
                "02_experts",
                lambda ctx: _per_compute_trend(ctx.runs),
                arms=SWEEP,
                published='"generally until at least 6 you can expect good perf/compute"',
            ),
            *_pairs(FREQUENCY, MLP),
            *[
                Row(
                    in_mode(SHARED_MATCH, rep),
                    "02_experts",
                    lambda ctx, s=s, c=c, t=in_mode(SHARED_MATCH, rep): _shared_match_row(t, s, c, ctx.runs),
                    arms=(s, c),
                    published='"guarantees similar performance in terms of log-likelihood to the classic variant"',
                )
                for rep, (s, c) in ((False, (ANCHOR, S0)), (True, (REPEAT, twin(S0))))
            ],
            Row(SHARED_CHEAPER, "02_experts", lambda ctx: _fewer_flops(SHARED_CHEAPER, ANCHOR, S0), kind=COMPUTED),
            *_pairs(MERGE_MAX, MERGE_MEAN),
            Row(COUNT_BASE, "02_experts", lambda ctx: _count_row(COUNT_BASE, BASE), kind=CHECK),
            # 03: the encoder and the latents
            *_pairs(ENC_LENGTH, LATENT_LENGTH, WIDE_ENC, WIDE_LATENT, PERCEIVER_WORSE, POSITIONS),
            # 04: the two modes, DenseFormer, the latent loss
            *_pairs(DENSE, DENSE_REPEAT, LATENT_LOSS),
            Row(
                ATTN_COSTS_MORE,
                "04_upsampling",
                lambda ctx: _fewer_flops(ATTN_COSTS_MORE, REPEAT, ANCHOR),
                kind=COMPUTED,
            ),
            Row(
                SIMILAR_AT_END,
                "04_upsampling",
                lambda ctx: similar_at_end_row(ctx.runs[ANCHOR], ctx.runs[REPEAT]),
                arms=(ANCHOR, REPEAT),
            ),
            Row(
                SCALES_BETTER,
                "04_upsampling",
                lambda ctx: scales_better_row(ctx.runs[ANCHOR], ctx.runs[REPEAT]),
                arms=(ANCHOR, REPEAT),
            ),
            # 05: the headline: the same loss (scored both ways), a lot cheaper, the inference FLOPs
            *[
                Row(
                    same_loss_claim(m, s),
                    "05_headline",
                    lambda ctx, m=m, s=s: _same_loss_row(m, s, ctx.runs),
                    arms=(m, VANILLA),
                    gap=(m, VANILLA, "val") if s == LAST_32 else None,
                )  # the eval records score the last 32
                for m in (BEST_ATTN, BEST_REPEAT)
                for s in (LAST_32, LAST_TOKEN)
            ],
            *[
                Row(fewer_flops_claim(m), "05_headline", lambda ctx, m=m: _lot_cheaper_row(m), kind=COMPUTED)
                for m in (BEST_ATTN, BEST_REPEAT)
            ],
            Row(COUNT_VANILLA, "05_headline", lambda ctx: _count_row(COUNT_VANILLA, VANILLA), kind=CHECK),
            *[
                Row(inference_claim(m), "05_headline", lambda ctx, m=m: _inference_row(m), kind=COMPUTED)
                for m in (BEST_ATTN, BEST_REPEAT)
            ],
            Row(EVEN_MORE, "05_headline", lambda ctx: _even_more_row(EVEN_MORE, BEST_REPEAT, BEST_ATTN), kind=COMPUTED),
            Row(
                EVEN_MORE_SAME, "05_headline", lambda ctx: _even_more_row(EVEN_MORE_SAME, REPEAT, ANCHOR), kind=COMPUTED
            ),
            # 06: the blind spot
            Row(BLIND, "06_blind_spot", lambda ctx: _blind_row(ctx.runs), arms=(REPEAT,)),
            # 07: the times measured side by side
            Row(
                PERCEIVER_FASTER,
                "07_verdicts",
                lambda ctx: cost.time_lower(
                    PERCEIVER_FASTER, WORDS[PERCEIVER_WORSE], ctx.timing(PERCEIVER, ANCHOR), PERCEIVER, ANCHOR, ctx.runs
                ),
                kind=COST,
                timed=(PERCEIVER, ANCHOR),
            ),
            Row(
                REPEAT_FASTER,
                "07_verdicts",
                lambda ctx: cost.time_lower(
                    REPEAT_FASTER,
                    '"models with attention upsampling take more time than those using the repeat upsampling"',
                    ctx.timing(REPEAT, ANCHOR),
                    REPEAT,
                    ANCHOR,
                    ctx.runs,
                ),
                kind=COST,
                timed=(REPEAT, ANCHOR),
            ),
            *[
                Row(
                    faster_claim(m),
                    "07_verdicts",
                    lambda ctx, m=m: cost.time_lower(
                        faster_claim(m),
                        minutes_words(m),
                        ctx.timing(m, VANILLA),
                        m,
                        VANILLA,
                        ctx.runs,
                        limit=LOT_FASTER,
                    ),
                    kind=COST,
                    timed=(m, VANILLA),
                )
                for m in (BEST_ATTN, BEST_REPEAT)
            ],
        ]
    ),
)
TIMED_CLAIMS = tuple(claim_rows.timed_claims(CHAPTER))  # the rows timed side by side in the verdict notebook
TIMED = tuple(claim_rows.timed_pairs(CHAPTER))  # (the claimed-faster arm, the other)


# The write-up's claims, each with the row above that tests it or the reason it is not tested (the ledger page).
claim_rows.register_ledger(CHAPTER, CLAIMS)


__all__ = [
    "ALL",
    "ANCHOR",
    "BASE",
    "BEST_ATTN",
    "BEST_REPEAT",
    "BLIND_SPOT",
    "CHAPTER",
    "CLAIMS",
    "CONSTANT",
    "COST_ARMS",
    "DENSE_REPEAT",
    "ENCODER_KNOBS",
    "EVEN_MORE",
    "EXPERTS",
    "EXPERTS_NB",
    "EXPERT_KNOBS",
    "FINDINGS",
    "H",
    "HEADLINE",
    "LATENT_LOSS",
    "LENGTHS",
    "LENGTHS_NB",
    "LOT_FASTER",
    "MERGES",
    "MODES",
    "PROTOCOL",
    "REPEAT",
    "ROWS",
    "SCHEDULES",
    "SWEEP",
    "SWEEP_COUNTS",
    "TIMED",
    "TIMED_CLAIMS",
    "VANILLA",
    "analysis",
    "at_compute_of",
    "blind_offsets",
    "blind_spot_frames",
    "blind_spot_table",
    "compute",
    "cost_curves",
    "cost_table",
    "counted_flops",
    "end_of_repeat",
    "experts_per_compute",
    "facts",
    "faster_claim",
    "fewer_flops_claim",
    "finding_rows",
    "gap_slopes",
    "head_input_parts",
    "head_input_table",
    "in_mode",
    "inference_claim",
    "inference_flops",
    "inference_table",
    "last_token_values",
    "learned_points",
    "lr_schedules",
    "mode_gaps",
    "mode_table",
    "position_losses",
    "protocol_table",
    "same_loss_claim",
    "same_margin",
    "scales_better_row",
    "schedule_claim",
    "schedule_table",
    "similar_at_end_row",
    "similar_margin",
    "skipped_note",
    "sources_note",
    "sources_table",
    "test_table",
    "twin",
    "twins",
    "unigram_reference",
    "window_losses",
]
