"""The masked-mixer chapter (causal language models): which arms each notebook reads, and the verdict of every
claim of the write-up's CLM part.

**Rows.** The claims are data (:mod:`.rows`: the write-up's words, the two arms, the numbers it quotes, in its
order); this module decides them. A comparison of trained arms is decided only where every arm has learned (the
learning gate, :func:`lmcompanion.verdicts.gate`: every seed half a nat below the unigram loss at the compared step);
a claim of equality needs four seeds per arm, a claim that something is absent can only be refuted. Which claim of the write-up each row tests, or why a claim has none, is
the ledger (:mod:`.claims`), registered here with :mod:`lmcompanion.ledger`.

**Seeds.** How many seeds each arm runs at each profile is declared where the arms are registered
(:mod:`lmcompanion.experiments.mixer` and :mod:`lmcompanion.experiments.plan`: at ``cpu`` five for the headline
comparison's arms and one for every other, which illustrates; at ``gpu`` and ``paper`` three, four for the arms of
claims of equality; one at ``smoke`` outside the headline arms; arms the ``cpu`` budget would starve are not run
there); the notebooks read them through the plan (``S.arms``). A notebook's ``n_seeds`` parameter applies to every arm.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Callable, Mapping, Sequence

from ... import experiments, learning, stats, tables, verdicts
from .. import cost
from ... import claims as claim_rows
from ...claims import Context, Row, register as register_rows
from ...formats import count, number
from ...stats import span
from ...verdicts import CHECK, COMPUTED, COST, NOT_DECIDED, Verdict, arms_of, claim, exact, gate, trend
from ...experiments import mixer as exp
from .. import verdict_forms as vf
from . import analysis, compute, facts
from . import rows as rows_
from .claims import CLAIMS
from .rows import EQUAL_TIME, HEADS_TIME, OVERFIT, PAIRS, SPEED, TIMED, TRENDS, Pair

CHAPTER = "mixer"

# --- the arms of each notebook ----------------------------------------------------------------------------------
FIRST = ["mixer/expanded_d256", "mixer/llama_d128"]  # the write-up's first comparison
MAIN = ["mixer/flat_d512", "mixer/llama_d512"]  # its flat mixer against Llama at d=512
FLAT_EXPANDED = ["mixer/flat_d256", "mixer/expanded_d256", "mixer/flat_d512", "mixer/expanded_d512"]
HEADLINE = exp.HEADLINE  # the arms that run every seed at every profile (declared where they are registered)
LLAMA_D = ["mixer/llama_d128", "mixer/llama_d256", "mixer/llama_d512", "mixer/llama_d1024"]  # the transformer table
LLAMA_B4 = ["mixer/llama_d1024_b4"]  # the text's d=1024 Llama, at batch 4
FLAT_D = ["mixer/flat_d256", "mixer/flat_d512", "mixer/flat_d1024", "mixer/flat_d2048"]
EXPANDED_D = ["mixer/expanded_d256", "mixer/expanded_d512", "mixer/expanded_d1024"]
BETWEEN = ["mixer/flat_d384", "mixer/flat_d768", "mixer/expanded_d384", "mixer/expanded_d768"]  # the trends' widths
HEADS = ["mixer/llama_d512", "mixer/llama_d512_h8", "mixer/llama_d512_h4", "mixer/llama_d512_h2"]
ETA_3060 = ["mixer/llama_d512_h4", "mixer/llama_d512_h4_eta005"]  # the code's learning rate and the text's
BATCH = ["mixer/flat_d1024", "mixer/flat_d1024_b32"]
DEEP = ["mixer/deep_d64", "mixer/flat_d1024_b32"]  # 64 layers of width 64 against 8 of width 1024
SCALING = list(dict.fromkeys(LLAMA_D + LLAMA_B4 + FLAT_D + EXPANDED_D + BETWEEN + HEADS + ETA_3060 + BATCH + DEEP))
PARALLEL = ["mixer/flat_d512", "mixer/parallel2_d512", "mixer/parallel4_d512"]
POSITIONAL = ["mixer/flat_d1024", "mixer/positional_first", "mixer/positional_every"]
V100 = [
    "mixer/llama_v100",
    "mixer/llama_v100_eta005",
    "mixer/llama_tuned",
    "mixer/kernel4",
    "mixer/extra_linear",
    "mixer/heads2",
    "mixer/hybrid_sequential",
    "mixer/hybrid_parallel",
]
HYBRID_3060 = ["mixer/flat_d512", "mixer/llama_d512_h4", "mixer/hybrid_rtx3060"]
GPT = ["mixer/flat_d512", "mixer/gpt_h16", "mixer/gpt", "mixer/gpt_h16_eta005", "mixer/gpt_eta005"]
WIKIPEDIA = list(exp.WIKIPEDIA_ARMS)  # the book's setting: the headline's arms on Wikipedia (gpu and paper only)
# the models of the write-up's samples (analysis.SAMPLES): its first comparison's, the flat d=1024 mixer, the 64-layer
# one and the batch-32 d=1024 one
GENERATION = list(dict.fromkeys(s.arm for s in analysis.SAMPLES))
# The arms each notebook trains, in reading order (an arm is trained by the first notebook that uses it).
NOTEBOOK_ARMS = {
    "01_mixer_vs_llama": FIRST + MAIN,
    "02_flat_vs_expanded": FLAT_EXPANDED,
    "03_scaling": SCALING,
    "04_variants": list(dict.fromkeys(PARALLEL + POSITIONAL)),
    "05_v100": list(dict.fromkeys(V100 + HYBRID_3060 + GPT)),
    "07_generation": GENERATION,
    "09_verdicts": WIKIPEDIA,  # read by its row alone
}


def notebook_estimates(profile: str):
    """Estimated H100 minutes of each notebook at ``profile`` (the planned runs of the arms it trains first), from
    :func:`compute.time_estimate`."""
    import pandas as pd

    done, rows = set(), []
    for notebook, names in NOTEBOOK_ARMS.items():
        new = [n for n in names if n not in done]
        done.update(new)
        minutes = compute.time_estimate(profile, new).loc["chapter (sum)", compute.MINUTES] if new else 0.0
        rows.append({"notebook": notebook, "arms it trains first": len(new), "minutes (estimate)": minutes})
    return pd.DataFrame(rows).set_index("notebook")


def by_title(runs: Mapping[str, Sequence]) -> dict[str, Sequence]:
    """The same runs keyed by the write-up's labels (for tables.results and the figures)."""
    return {experiments.get(n).title: rs for n, rs in runs.items()}


def results(runs: Mapping[str, Sequence], table: bool = False):
    """tables.results of runs keyed by experiment name, beside the write-up's numbers (a one-line note when none of
    the arms runs at this profile). ``table=True``: the numbers of the write-up's d_model tables where its text gives
    others for the same arm (the table's ``table_train``/``table_val``, e.g. Llama d=128's 2.38/2.40, not the first
    comparison's 2.471/2.497)."""
    if not runs:
        import pandas as pd

        return pd.DataFrame({"note": ["these arms are not run at this profile (see the landing page)"]})
    published = experiments.published(list(runs))
    if table:
        published = {
            label: {**pub, **{k: pub[f"table_{k}"] for k in ("train", "val") if f"table_{k}" in pub}}
            for label, pub in published.items()
        }
    return tables.results(by_title(runs), published=published)


# --- verdicts ---------------------------------------------------------------------------------------------------


# The margin of the write-up's claims of equal losses ("nearly identical", "nearly the same", "virtually no
# change"): the two arms' losses within 2% of each other (a factor of 1.02 either way, about 0.05 nats at the
# write-up's losses of 2.4-2.5; its own "nearly identical" pair, 2.497 vs 2.505, is 0.3% apart, and its "nearly the
# same" validation losses, 1.73 vs 1.74, 0.6%: the margin is looser than any pair the write-up calls equal, so a
# claim refuted here is refuted for the write-up's own sense of the words). Fixed once for every such claim, before
# any result was seen, and not revisited after.
EQUAL_MARGIN = 1.02


def similar(
    text: str, published: str, a: Sequence[float], b: Sequence[float], labels: tuple[str, str], fmt: str = ".3f"
) -> Verdict:
    """The claim that two arms' losses are about equal, judged as the prologue's rule judges claims of similarity:
    two one-sided tests against ``EQUAL_MARGIN`` (:func:`lmcompanion.verdicts.similar` on a log scale): holds when
    the ratio of the arms' losses lies inside the margin on both sides, does not hold when it lies beyond it on one
    side (each at 5%), otherwise inconclusive. The margin is stated in the row's effect."""
    v = verdicts.similar(text, published, a, b, EQUAL_MARGIN, ratio=True, labels=labels, fmt=fmt)
    return dataclasses.replace(v, effect=f"{v.effect}; margin x{EQUAL_MARGIN:g} either way")


def _short(name: str) -> str:
    return name.split("/")[-1]


def _pub(name: str, key: str):
    return experiments.get(name).published.get(key)


def _equal_steps(runs, a: str, b: str, split: str):
    step = compute.common_step(runs[a], runs[b])
    return step, compute.at_step(runs[a], step, split), compute.at_step(runs[b], step, split)


def published_size(p: Pair, log: bool = False) -> float | None:
    """The write-up's effect of a pair: its number for ``p.a`` minus its number for ``p.b`` on the row's metric (the
    log of their ratio with ``log``, as the rows judged on a ratio measure theirs), from the numbers the row quotes;
    None where it quotes none for an arm, or where its numbers cannot be told apart by arm (the GPT rows' mixer)."""
    found: dict[str, float] = {}
    for _, name, keys in p.quote:
        arm = p.a if name == p.a else p.b if name == p.b else None
        key = next((k for k in keys if p.metric in k.split("_")), None)
        if arm is None or key is None or arm in found:
            return None
        found[arm] = float(experiments.get(name).published[key])
    if set(found) != {p.a, p.b}:
        return None
    return math.log(found[p.a] / found[p.b]) if log else found[p.a] - found[p.b]


def pair_row(p: Pair, runs: Mapping[str, Sequence]) -> Verdict:
    """The verdict of one two-arm claim from the arms' runs (each arm with runs), both arms gated on the values the
    row compares (the final ones, or those at the arms' last common evaluation)."""
    labels = (_short(p.a), _short(p.b))
    at = "final"
    if p.kind in ("steps", "similar_steps"):
        step, a, b = _equal_steps(runs, p.a, p.b, p.metric)
        at = f"step {step}"
    elif p.kind == "samples":
        n = compute.common_samples(runs[p.a], runs[p.b])
        if n is None:
            return verdicts.not_decided(
                p.text,
                p.published,
                "no evaluation after the same number of samples",
                "the two arms were never evaluated after the same number of sequences",
            )
        a, b = compute.at_samples(runs[p.a], n, p.metric), compute.at_samples(runs[p.b], n, p.metric)
        at = f"{n:,} sequences"
    else:
        a, b = tables.final(runs[p.a], p.metric), tables.final(runs[p.b], p.metric)
    # the row's form (lmcompanion.chapters.verdict_forms), chosen by the pair's kind from the claim's words
    if p.kind in ("fixed", "steps", "samples"):
        v = claim(p.text, p.published, a, b, labels)
    elif p.kind == "no_gain":
        v = vf.no_gain(p.text, p.published, a, b, labels, margin=EQUAL_MARGIN, ratio=True)
    elif p.kind == "no_worse":
        v = vf.no_worse(p.text, p.published, a, b, labels, margin=EQUAL_MARGIN, ratio=True)
    else:
        v = similar(p.text, p.published, a, b, labels)
    v = dataclasses.replace(v, published_size=published_size(p, log=p.kind not in ("fixed", "steps", "samples")))
    v = dataclasses.replace(v, ours=v.ours + f" at {at}") if at != "final" else v
    return gate(small_data(v, runs, p.a, p.b), arms_of(runs, p.metric, p.a, p.b, values={p.a: a, p.b: b}, at=at))


def small_data(v: Verdict, runs: Mapping[str, Sequence], *names: str) -> Verdict:
    """A row decided on stories that an arm reads more than once says so: the offline copy's 2,084 training stories
    are a small-data setting (at ``gpu`` the flat d=512 mixer goes over them five times; at ``cpu`` and ``smoke`` no
    arm of a headline row reads them once), which the book's Wikipedia setting (:data:`WIKIPEDIA`) does not share."""
    cfg = getattr(runs[names[0]][0], "config", None)
    if getattr(getattr(cfg, "data", None), "kind", None) != "stories":  # (a test's stand-in runs have no config)
        return v
    most = max(experiments.passes(runs[n][0].config) or 0.0 for n in names)
    if most <= 1:
        return v
    return dataclasses.replace(
        v,
        ours=f"{v.ours}; a small-data setting: {number(most)} passes over its "
        f"{cfg.data.sequences_per_epoch(cfg.model):,} training stories",
    )


def equal_time_row(
    text: str, published: str, better: str, worse: str, runs: Mapping[str, Sequence], quote: Sequence[vf.Quote] = ()
) -> Verdict:
    """The claim "``better`` reaches a lower validation loss than ``worse`` after the same training time", read on
    each run's curve at the comparison's equal time measured where the runs were made (the shortest run's,
    :func:`compute.equal_time`), both arms gated there; the write-up's effect from the numbers it quotes
    (``quote``: its validation losses after the same 12 hours)."""
    pair = {better: runs[better], worse: runs[worse]}
    t = compute.equal_time(pair)
    a, b = compute.at_time(runs[better], t, "val"), compute.at_time(runs[worse], t, "val")
    labels = (_short(better), _short(worse))
    if any(math.isnan(x) for x in a + b):
        return verdicts.not_decided(
            text,
            published,
            f"{labels[0]}: {span(a)}; {labels[1]}: {span(b)}",
            "an arm has no evaluation before the equal time",
        )
    v = claim(text, published, a, b, labels)
    v = dataclasses.replace(
        v,
        ours=f"{v.ours} after {number(t)} s of training measured here",
        published_size=published_size(Pair(text, "fixed", better, worse, "", tuple(quote))),
    )
    return gate(v, arms_of(runs, "val", better, worse, values={better: a, worse: b}, at=f"{number(t)} s of training"))


def timed(rows: Sequence[Verdict], keep: bool = True) -> list[Verdict]:
    """The rows decided by time measured on this machine (``keep=True``) or the others (``keep=False``)."""
    return [v for v in rows if v.claim.endswith(TIMED) == keep]


def _per_step(runs) -> list[float]:
    return [compute.seconds_per_step(r) for r in runs]


def _speed_claim(runs, fast: str, slow: str, text: str, published: str) -> Verdict:
    a, b = _per_step(runs[fast]), _per_step(runs[slow])
    v = claim(text, published, a, b, (_short(fast), _short(slow)), fmt=".4f")
    return dataclasses.replace(v, ours=f"{v.ours} s/step; ratio {number(stats.mean(b) / stats.mean(a))}x")


def _ratio_claim(runs, fast: str, slow: str, text: str, published: str, lo: float, hi: float) -> Verdict:
    """Each run of ``slow``'s seconds per step over ``fast``'s mean: between lo and hi."""
    base = stats.mean(_per_step(runs[fast]))
    return vf.ratio_within(text, published, [t / base for t in _per_step(runs[slow])], lo, hi)


def overfitting_row(runs: Mapping[str, Sequence]) -> Verdict:
    """ "there is minimal overfitting after 5.6 epochs ... for the mixer": each run's final validation loss no worse
    than its validation loss at the evaluation nearest the run's middle, within the margin of equal losses (the
    no-worse form: "minimal", not "none"), the arm gated at both. Runs that see less than one pass over their data
    cannot overfit it: then not decided."""
    text, name = OVERFIT
    rs = runs[name]
    final, middle = tables.final(rs, "val"), [_at_middle(r, "val") for r in rs]
    published = f"{_pub(name, 'train')}/{_pub(name, 'val')} (train/validation) after 5.6 epochs"
    v = vf.no_worse(text, published, final, middle, ("end", "middle"), EQUAL_MARGIN, ratio=True)
    passes = experiments.passes(rs[0].config)
    v = dataclasses.replace(
        v, ours=f"{v.ours}; {number(passes)} passes over the training stories" if passes else v.ours
    )
    v = gate(
        v,
        [
            learning.arm(_short(name), rs, "val", middle, "the middle evaluation"),
            learning.arm(_short(name), rs, "val", final),
        ],
    )
    if passes is not None and passes < 1 and v.outcome != NOT_DECIDED:
        v = dataclasses.replace(v, verdict=f"{NOT_DECIDED} (less than one pass over the data: overfitting cannot show)")
    return v


def _at_middle(run, split: str) -> float:
    ev = run.evals()
    i = (ev["step"] - run.summary["steps"] / 2).abs().idxmin()
    return float(ev.loc[i, split])


def trend_row(label: str, names: Sequence[str], runs) -> Verdict:
    """The seed-mean final validation loss falls as d_model grows, every arm gated on it."""
    pub = vf.quote(
        [
            (f"d={exp.ARMS[n].n_embed}", n, ("table_val",) if "table_val" in exp.ARMS[n].published else ("val",))
            for n in names
            if exp.ARMS[n].published
        ],
        "validation, the table; d_model "
        + " and ".join(str(exp.ARMS[n].n_embed) for n in names if not exp.ARMS[n].published)
        + " are the book's widths between the table's",
    )
    d = [exp.ARMS[n].n_embed for n in names]
    v = trend(rows_.trend_text(label), pub, d, [tables.final(runs[n], "val") for n in names], direction="down")
    return gate(v, arms_of(runs, "val", *names))


def count_rows() -> list[Verdict]:
    counts = analysis.count_table()
    return [
        exact(
            rows_.COUNTS,
            f"{len(counts)} models (reference notes)",
            f"{int(counts['agree'].sum())} of {len(counts)} agree "
            f"({int((counts['counted from'] != 'the original code').sum())} of them with the notes' count of a "
            "design no original runs)",
            bool(counts["agree"].all()),
        ),
    ]


def liveness_rows() -> list[Verdict]:
    unread = {e: analysis.unread_weights(e) for e in (1, 2, 4)}
    return [
        exact(
            rows_.LIVENESS,
            "the write-up's argument (figure)",
            ", ".join(f"e={e}: {n:,} unread" for e, n in unread.items()) + " (one block, d = L = 64)",
            unread[1] == 0 and unread[2] > 0 and unread[4] > unread[2],
            kind=COMPUTED,
        ),
    ]


def worked_example_rows() -> list[Verdict]:
    table = facts.worked_example_table()
    return [
        exact(
            rows_.WORKED,
            "m(W) = [[2, 1, 1], [0, 1, 4], [0, 0, 1]]; output tokens 2x0, x0 + x1, x0 + 4x1 + x2",
            f"{int(table['agree'].sum())} of {len(table)} matrix rows agree (computed by MaskedTokenConv)",
            bool(table["agree"].all()),
        ),
    ]


def memory_rows(memory: Mapping | None = None) -> list[Verdict]:
    memory = memory or analysis.memory_counts()
    mix, tf = memory["mixer"], memory["transformer"]
    below = bool((mix.loc[:, 1024:] < tf.loc[:, 1024:]).all().all())
    # growth from 512 to 2048 tokens (the longest context where the write-up has both models, 4 and 8 layers), in
    # MB: a constant offset (the CUDA context) cancels
    pub = analysis.MEMORY_PUBLISHED
    layers = [n for n in analysis.MEMORY_LAYERS if pub["transformer"][n][2] is not None]
    grow = {f: {n: memory[f].loc[n, 2048] - memory[f].loc[n, 512] for n in layers} for f in memory}
    published = "; ".join(
        f"{n} layers: mixer +{pub['mixer'][n][2] - pub['mixer'][n][0]:,}, transformer "
        f"+{pub['transformer'][n][2] - pub['transformer'][n][0]:,} MB"
        for n in layers
    )
    ours = "; ".join(
        f"{n} layers: mixer {number(grow['mixer'][n], sign='+')}, transformer "
        f"{number(grow['transformer'][n], sign='+')} MB"
        for n in layers
    )
    return [
        exact(
            rows_.MEMORY_LESS,
            "the memory tables of its Scaling Properties section",
            f"{'every' if below else 'not every'} cell (counted, fp32)",
            below,
            kind=COMPUTED,
        ),
        exact(
            rows_.MEMORY_GROWTH,
            published,
            ours + " (counted)",
            all(grow["mixer"][n] < grow["transformer"][n] / 2 for n in layers),
            kind=COMPUTED,
        ),
    ]


LOWER_BOUND = (
    "a count is a lower bound of the memory a GPU measures: it leaves out the CUDA context, the "
    "allocator's slack and the library's workspace"
)


def _not_comparable(text: str, published: str, ours: str, why: str, form: str) -> Verdict:
    """A computed row whose count cannot be judged against the write-up's measured figure (a count is a lower bound of
    it, :data:`LOWER_BOUND`): *not decided*, with the reason, never a verdict on the measurement. ``form``: the
    claim's (a ratio at least a bound, a limit exact)."""
    v = verdicts.not_decided(text, published, ours, f"not comparable: {why}", kind=COMPUTED, form=form)
    return dataclasses.replace(v, verdict=v.verdict.replace(NOT_DECIDED, "not decided", 1))  # at any scale


def batch16_rows() -> list[Verdict]:
    """The write-up's batch-16 memory figures against our counts in fp16 mixed precision (the shared memory method,
    :func:`facts.counted`). A count is a lower bound of what a GPU measures, by a factor the write-up's own figure for
    the same Llama shows (its 10.7 GB against our count), and a ratio of two lower bounds bounds neither the measured
    figures nor their ratio: both rows read *not comparable*, with the counts beside the write-up's figures."""
    F = facts
    pub = F.BATCH16_GB
    low = pub["llama_d128"][0] / pub["mixer_d256"][0]  # "exceeds 10 GB" against 2.4 GB: at least this ratio
    g = {k: F.gib(k, 16) for k in (F.LLAMA128, F.MIXER256, F.LLAMA256, F.FLAT512)}
    r1, r2 = g[F.LLAMA128] / g[F.MIXER256], g[F.LLAMA256] / g[F.FLAT512]
    how = f"counted, fp16 mixed precision, {F.LLAMA_HEADS} heads"
    below = (
        f"{LOWER_BOUND}; the write-up measured {pub['llama_d128'][1]:g} GB for the Llama our count puts at "
        f"{number(g[F.LLAMA128])} GiB ({number(pub['llama_d128'][1] / g[F.LLAMA128])}x the count), so a ratio of "
        "two counts bounds neither measured figure nor their ratio"
    )
    return [
        _not_comparable(
            rows_.BATCH16_LLAMA,
            f"more than {pub['llama_d128'][0]:g} GB vs {pub['mixer_d256'][0]:g} GB, a ratio above "
            f"{number(low)} (Training); {pub['llama_d128'][1]:g} GB vs {pub['mixer_d256'][1]:g} GB, "
            f"{number(pub['llama_d128'][1] / pub['mixer_d256'][1])}x (Mixer Inference)",
            f"{number(g[F.LLAMA128])} vs {number(g[F.MIXER256])} GiB ({how}; lower bounds): "
            f"{number(r1)}x; with 32 heads {number(F.gib(F.LLAMA128, 16, 32))} GiB, "
            f"{number(F.gib(F.LLAMA128, 16, 32) / g[F.MIXER256])}x",
            below,
            verdicts.AT_LEAST,
        ),
        _not_comparable(
            rows_.BATCH16_DOUBLE,
            f"'more than double' the mixer's {pub['flat_d512'][0]:g} GB",
            f"{number(g[F.LLAMA256])} vs {number(g[F.FLAT512])} GiB ({how}; lower bounds): {number(r2)}x",
            below,
            verdicts.AT_LEAST,
        ),
    ]


def limit_rows() -> list[Verdict]:
    """The 12 GB limits behind the write-up's batch choices, each judged by what a lower bound can show: a model the
    write-up fits whose count already exceeds 12 GiB refutes the row (does not hold); a model it does not fit whose
    count exceeds 12 GiB confirms that cell; a count under 12 GiB confirms nothing (the measured memory is larger, by
    how much a count cannot say). A row holds only where every cell is confirmed; otherwise it is *not comparable*."""
    out = []
    for text, (words, cells) in facts.LIMIT_CELLS.items():
        parts = [
            f"{m} at batch {b}: {number(facts.gib(m, b))} GiB ({'fits' if facts.fits(m, b) else 'does not fit'})"
            for m, b, _ in cells
        ]
        ours = "; ".join(parts) + f" (counted, fp16 mixed precision, a lower bound, against {facts.GPU_GIB} GiB)"
        refuted = [(m, b) for m, b, should in cells if should and not facts.fits(m, b)]
        confirmed = all(not should and not facts.fits(m, b) for m, b, should in cells)
        if refuted or confirmed:
            out.append(exact(text, words, ours, not refuted, kind=COMPUTED))
        else:
            out.append(
                _not_comparable(
                    text,
                    words,
                    ours,
                    f"{LOWER_BOUND}, so a count under {facts.GPU_GIB} GiB cannot show whether the model fits or not",
                    verdicts.EXACT_FORM,
                )
            )
    return out


def jl_rows() -> list[Verdict]:
    rows = []
    for text, (what, log10_m, pub) in zip(rows_.JL, analysis.JL_PUBLISHED):
        n = analysis.jl_dimension(log10_m)
        rows.append(exact(text, f"{pub}", count(n), abs(n - pub) <= 0.1 * pub, kind=COMPUTED))
    return rows


def width_estimate_rows() -> list[Verdict]:
    ok = facts.shapes_within()
    closest = min(
        facts.STANDARD_SHAPES.items(),
        key=lambda kv: max(abs(kv[1](d) / p - 1) for d, p in facts.WIDTH_ESTIMATES.items()),
    )
    counts = " / ".join(f"{number(closest[1](d) / 1e6)}M" for d in facts.WIDTH_ESTIMATES)
    return [
        exact(
            rows_.WIDTHS,
            " and ".join(f"{p / 1e6:,.0f} million (width {d:,})" for d, p in facts.WIDTH_ESTIMATES.items()),
            (
                f"within {facts.ABOUT:.0%} at both widths: {', '.join(ok)}"
                if ok
                else f"no declared standard shape within {facts.ABOUT:.0%} at both widths; the closest, "
                f"{closest[0]}: {counts}"
            ),
            bool(ok),
            kind=COMPUTED,
        ),
    ]


def _one(fn: Callable[[], list[Verdict]], i: int = 0) -> Callable[[Context], Verdict]:
    return lambda ctx: fn()[i]


def _memory(ctx: Context, i: int) -> Verdict:
    return memory_rows(ctx.extra.get("memory"))[i]


def _jl(i: int) -> Callable[[Context], Verdict]:
    return lambda ctx: jl_rows()[i]


def _pair(p: Pair) -> Row:
    return Row(
        p.text,
        p.notebook,
        lambda ctx: pair_row(p, ctx.runs),
        arms=(p.a, p.b),
        published=p.published,
        extension=p.extension,
        gap=(p.a, p.b, p.metric),
    )


def _rows() -> list[Row]:
    """Every row of the chapter, in the write-up's order (:func:`rows_.in_write_up_order`)."""
    out = [_pair(p) for p in PAIRS]
    out.append(Row(OVERFIT[0], "01_mixer_vs_llama", lambda ctx: overfitting_row(ctx.runs), arms=(OVERFIT[1],)))
    for text, fast, slow, published, bounds, notebook, _ in SPEED:
        decide = (
            (lambda ctx, t=text, f=fast, s=slow, p=published: _speed_claim(ctx.runs, f, s, t, p))
            if bounds is None
            else (lambda ctx, t=text, f=fast, s=slow, p=published, b=bounds: _ratio_claim(ctx.runs, f, s, t, p, *b))
        )
        out.append(Row(text, notebook, decide, arms=(fast, slow), kind=COST, published=published))
    for text, better, worse, parts, notebook, _ in EQUAL_TIME:
        published = vf.quote(parts, "validation after the same 12 hours on one RTX 3060")
        out.append(
            Row(
                text,
                notebook,
                lambda ctx, t=text, b=better, w=worse, p=published, q=parts: equal_time_row(t, p, b, w, ctx.runs, q),
                arms=(better, worse),
                published=published,
            )
        )
    for text, faster, slower, notebook, _ in HEADS_TIME:
        out.append(
            Row(
                text,
                notebook,
                lambda ctx, t=text, f=faster, w=slower: cost.time_lower(
                    t, rows_.HEADS_TIME_QUOTE, ctx.timing(f, w), f, w, ctx.runs
                ),
                arms=(faster, slower),
                kind=COST,
                timed=(faster, slower),
                published=rows_.HEADS_TIME_QUOTE,
            )
        )
    for label, names in TRENDS.items():
        out.append(
            Row(
                rows_.trend_text(label),
                "03_scaling",
                lambda ctx, lab=label, ns=names: trend_row(lab, ns, ctx.runs),
                arms=tuple(names),
            )
        )
    out += [
        Row(rows_.COUNTS, "03_scaling", _one(count_rows), kind=CHECK),
        Row(rows_.WORKED, "02_flat_vs_expanded", _one(worked_example_rows), kind=CHECK),
        Row(rows_.LIVENESS, "02_flat_vs_expanded", _one(liveness_rows), kind=COMPUTED),
        Row(rows_.MEMORY_LESS, "06_memory", lambda ctx: _memory(ctx, 0), kind=COMPUTED),
        Row(rows_.MEMORY_GROWTH, "06_memory", lambda ctx: _memory(ctx, 1), kind=COMPUTED),
        Row(rows_.BATCH16_LLAMA, "06_memory", _one(batch16_rows, 0), kind=COMPUTED),
        Row(rows_.BATCH16_DOUBLE, "06_memory", _one(batch16_rows, 1), kind=COMPUTED),
        *[Row(text, "06_memory", _one(limit_rows, i), kind=COMPUTED) for i, text in enumerate(rows_.LIMITS)],
        Row(rows_.WIDTHS, "08_dimensions", _one(width_estimate_rows), kind=COMPUTED),
        *[Row(text, "08_dimensions", _jl(i), kind=COMPUTED) for i, text in enumerate(rows_.JL)],
    ]
    return sorted(out, key=lambda r: rows_.SECTIONS.index(rows_.section_of(r.text)))


ROWS = register_rows(CHAPTER, _rows())


def training_rows(runs: Mapping[str, Sequence], profile: str | None = None) -> list[Verdict]:
    """The rows decided by runs (experiment name -> runs), in the write-up's order. With ``profile``, a claim whose
    arms that profile does not run gets a "not run at this profile" row; claims whose arms have no runs otherwise
    (recorded runs may cover only some arms) are left out."""
    ctx = Context(runs, profile)
    return [v for r in ROWS if r.arms and (v := claim_rows.decide(CHAPTER, r, ctx)) is not None]


# The write-up's claims, each with the row above that tests it or the reason it is not tested (the ledger page).
# (the parameter-count check is the book's own test of its models, named by no claim of the write-up)
claim_rows.register_ledger(CHAPTER, CLAIMS, unnamed=(rows_.COUNTS,))

__all__ = [
    "BATCH",
    "CHAPTER",
    "DEEP",
    "ETA_3060",
    "EXPANDED_D",
    "FIRST",
    "FLAT_D",
    "FLAT_EXPANDED",
    "GENERATION",
    "GPT",
    "HEADLINE",
    "HEADS",
    "HYBRID_3060",
    "LLAMA_D",
    "MAIN",
    "NOTEBOOK_ARMS",
    "OVERFIT",
    "PAIRS",
    "PARALLEL",
    "POSITIONAL",
    "Pair",
    "ROWS",
    "equal_time_row",
    "trend_row",
    "SCALING",
    "SPEED",
    "TIMED",
    "V100",
    "analysis",
    "batch16_rows",
    "CLAIMS",
    "BETWEEN",
    "LLAMA_B4",
    "by_title",
    "compute",
    "count_rows",
    "facts",
    "jl_rows",
    "limit_rows",
    "liveness_rows",
    "memory_rows",
    "notebook_estimates",
    "overfitting_row",
    "pair_row",
    "published_size",
    "results",
    "similar",
    "timed",
    "training_rows",
    "width_estimate_rows",
    "worked_example_rows",
    "WIKIPEDIA",
    "small_data",
]
