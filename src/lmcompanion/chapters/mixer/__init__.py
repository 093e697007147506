"""The masked-mixer chapter (causal language models): which arms each notebook reads, and the verdict of every
claim of the write-up's CLM part.

**Seeds.** How many seeds each arm runs at each profile is declared where the arms are registered
(:mod:`lmcompanion.experiments.mixer`: the headline arms get the profile's seeds, the others the first seed only at
``smoke`` and ``cpu``, where their pairwise verdicts are then "inconclusive at this scale" by construction, and the
chapter says so); the notebooks read them through the plan (``S.arms``). Ask for more seeds with the notebooks'
``n_seeds`` parameter (it applies to every arm), or run the ``gpu`` profile, where every arm gets three.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Mapping, Sequence

from ... import experiments, nb, stats, tables
from ...stats import span
from ...verdicts import (FAILS, HOLDS, INCONCLUSIVE, Verdict, between, chance_text, claim, exact, have, in_notebook,
                         published_pair, trend)
from ...experiments import mixer as exp
from . import analysis, compute

CHAPTER = "mixer"

# --- the arms of each notebook ----------------------------------------------------------------------------------
FIRST = ["mixer/expanded_d256", "mixer/llama_d128"]  # the write-up's first comparison
MAIN = ["mixer/flat_d512", "mixer/llama_d512"]  # its flat mixer against Llama at d=512
FLAT_EXPANDED = ["mixer/flat_d256", "mixer/expanded_d256", "mixer/flat_d512", "mixer/expanded_d512"]
HEADLINE = exp.HEADLINE  # the arms that run every seed at every profile (declared where they are registered)
LLAMA_D = ["mixer/llama_d128", "mixer/llama_d256", "mixer/llama_d512", "mixer/llama_d1024"]
FLAT_D = ["mixer/flat_d256", "mixer/flat_d512", "mixer/flat_d1024", "mixer/flat_d2048"]
EXPANDED_D = ["mixer/expanded_d256", "mixer/expanded_d512", "mixer/expanded_d1024"]
HEADS = ["mixer/llama_d512", "mixer/llama_d512_h8", "mixer/llama_d512_h4", "mixer/llama_d512_h2"]
BATCH = ["mixer/flat_d1024", "mixer/flat_d1024_b32"]
SCALING = list(dict.fromkeys(LLAMA_D + FLAT_D + EXPANDED_D + HEADS + BATCH))
PARALLEL = ["mixer/flat_d512", "mixer/parallel2_d512", "mixer/parallel4_d512"]
POSITIONAL = ["mixer/flat_d1024", "mixer/positional_first", "mixer/positional_every"]
V100 = ["mixer/llama_tuned", "mixer/kernel4", "mixer/extra_linear", "mixer/heads2", "mixer/hybrid_sequential",
        "mixer/hybrid_parallel"]
GPT = ["mixer/flat_d512", "mixer/gpt"]
GENERATION = FIRST  # the write-up's samples: the d=256 mixer and the d=128 Llama of its first comparison
# The arms each notebook trains, in reading order (an arm is trained by the first notebook that uses it).
NOTEBOOK_ARMS = {
    "01_mixer_vs_llama": FIRST + MAIN,
    "02_flat_vs_expanded": FLAT_EXPANDED,
    "03_scaling": SCALING,
    "04_variants": list(dict.fromkeys(PARALLEL + POSITIONAL)),
    "05_v100": list(dict.fromkeys(V100 + GPT)),
    "07_generation": GENERATION,
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
        rows.append({"notebook": notebook, "arms it trains first": len(new), "minutes (estimate)": round(minutes, 1)})
    return pd.DataFrame(rows).set_index("notebook")


def by_title(runs: Mapping[str, Sequence]) -> dict[str, Sequence]:
    """The same runs keyed by the write-up's labels (for tables.results and the figures)."""
    return {experiments.get(n).title: rs for n, rs in runs.items()}


def results(runs: Mapping[str, Sequence]):
    """tables.results of runs keyed by experiment name, beside the write-up's numbers."""
    return tables.results(by_title(runs), published=nb.published(list(runs)))


# --- verdicts ---------------------------------------------------------------------------------------------------


def similar(text: str, published: str, a: Sequence[float], b: Sequence[float], labels: tuple[str, str],
            fmt: str = ".3f") -> Verdict:
    """The claim that two arms are about equal: refuted by a significant difference either way (two-sided, each
    side at 2.5%), otherwise inconclusive (a test cannot show equality). With 3 seeds per arm the smallest
    two-sided chance is 2/20 = 0.10, so such a claim needs at least 4 seeds per arm to be refuted."""
    c = stats.compare(a, b)
    p_two = min(1.0, 2 * min(c.p_claim, c.p_reverse))
    smallest = min(1.0, 2 / math.comb(c.n_a + c.n_b, c.n_a))  # the smallest two-sided chance these seeds allow
    why = (f"{c.n_a} vs {c.n_b} seeds cannot refute it: the smallest two-sided chance is {smallest:.2f}"
           if smallest > stats.ALPHA else "not refuted at 5%; a test cannot show equality")
    verdict = FAILS if p_two <= stats.ALPHA else f"{INCONCLUSIVE} ({why})"
    return Verdict(text, published, f"{labels[0]}: {span(a, fmt)}; {labels[1]}: {span(b, fmt)}", verdict,
                   seeds=f"{c.n_a} vs {c.n_b}", effect=c.effect_text(fmt), chance=chance_text(p_two) + " (two-sided)")


def untestable(text: str, published: str, a: Sequence[float], b: Sequence[float], labels: tuple[str, str],
               fmt: str = ".3f") -> Verdict:
    """A comparison with fewer than two seeds on a side: shown, never decided."""
    return Verdict(text, published, f"{labels[0]}: {span(a, fmt)}; {labels[1]}: {span(b, fmt)}",
                   f"{INCONCLUSIVE} (one seed on a side at this profile: no test is possible)",
                   seeds=f"{len(a)} vs {len(b)}", effect=f"{stats.mean(a) - stats.mean(b):+{fmt}}", chance="")


def _compare(kind, text: str, published: str, a: Sequence[float], b: Sequence[float], labels: tuple[str, str],
             fmt: str = ".3f") -> Verdict:
    if min(len(a), len(b)) < 2:
        return untestable(text, published, a, b, labels, fmt)
    return kind(text, published, a, b, labels, fmt)


def _between(text: str, metric: str, better: str, worse: str, runs) -> Verdict:
    if min(len(runs[better]), len(runs[worse])) >= 2:
        return between(text, metric, better, worse, runs)
    return untestable(text, published_pair(better, worse, metric), tables.final(runs[better], metric), tables.final(runs[worse], metric),
                      (_short(better), _short(worse)))


def _short(name: str) -> str:
    return name.split("/")[-1]


def _pub(name: str, key: str):
    return experiments.get(name).published.get(key)


# (claim, metric, better, worse, notebook[, published]): "better reaches a lower final <metric> than worse" at fixed
# compute; ``published`` (a function, read when the row is made) when the write-up's numbers are not the arms' own
CLAIMS = [
    ("at fixed compute the expanded mixer (d=256) reaches a lower validation loss than Llama (d=128)", "val",
     "mixer/expanded_d256", "mixer/llama_d128", "01_mixer_vs_llama"),
    ("at fixed compute the expanded mixer (d=256) reaches a lower training loss than Llama (d=128)", "train",
     "mixer/expanded_d256", "mixer/llama_d128", "01_mixer_vs_llama"),
    ("at fixed compute the flat mixer (d=512) reaches a lower validation loss than Llama (d=512)", "val",
     "mixer/flat_d512", "mixer/llama_d512", "01_mixer_vs_llama"),
    ("at fixed compute the flat mixer beats the expanded one (d=256, validation)", "val",
     "mixer/flat_d256", "mixer/expanded_d256", "02_flat_vs_expanded"),
    ("at fixed compute the flat mixer beats the expanded one (d=512, validation)", "val",
     "mixer/flat_d512", "mixer/expanded_d512", "02_flat_vs_expanded"),
    ("at fixed compute the flat mixer beats the expanded one (d=1024, validation)", "val",
     "mixer/flat_d1024", "mixer/expanded_d1024", "03_scaling"),
    ("the flat mixer at d=1024 beats d=2048 at fixed compute (validation)", "val",
     "mixer/flat_d1024", "mixer/flat_d2048", "03_scaling"),
    ("Llama d=512 beats d=1024 at fixed compute (validation)", "val",
     "mixer/llama_d512", "mixer/llama_d1024", "03_scaling"),
    ("4 heads beat 16 heads for Llama d=512 (validation)", "val", "mixer/llama_d512_h4", "mixer/llama_d512",
     "03_scaling"),
    ("4 heads beat 8 heads for Llama d=512 (validation)", "val", "mixer/llama_d512_h4", "mixer/llama_d512_h8",
     "03_scaling"),
    ("4 heads beat 2 heads for Llama d=512 (validation)", "val", "mixer/llama_d512_h4", "mixer/llama_d512_h2",
     "03_scaling"),
    ("batch 32 (and its learning rate) beats batch 16 for the flat d=1024 mixer (validation)", "val",
     "mixer/flat_d1024_b32", "mixer/flat_d1024", "03_scaling"),
    ("a positional channel written after every block hurts (validation)", "val",
     "mixer/flat_d1024", "mixer/positional_every", "04_variants"),
    ("the original GPT learns less than the masked mixer at fixed compute (validation)", "val",
     "mixer/flat_d512", "mixer/gpt", "05_v100", lambda: f"{_pub('mixer/gpt', 'mixer_val')} (the mixer it names) vs "
                                                     f"{_pub('mixer/gpt', 'val')}; the flat d=512 mixer tested "
                                                     f"here: {_pub('mixer/flat_d512', 'val')}"),
    ("the sequential transformer-mixer hybrid beats the tuned Llama (validation)", "val",
     "mixer/hybrid_sequential", "mixer/llama_tuned", "05_v100"),
    ("an extra linear layer after the embedding improves the kernel-4 mixer (validation)", "val",
     "mixer/extra_linear", "mixer/kernel4", "05_v100"),
    ("the two-headed mixer beats the kernel-4 mixer (training)", "train", "mixer/heads2", "mixer/kernel4", "05_v100"),
]

# (claim, published, a, b, notebook): "a and b reach about the same final validation loss"
SIMILAR = [
    ("2 parallel convolutions reach 'very similar or perhaps slightly worse' fixed-compute loss than the flat mixer",
     "1.842 (flat) vs about the same", "mixer/parallel2_d512", "mixer/flat_d512", "04_variants"),
    ("4 parallel convolutions give 'no apparent fixed-compute loss reduction'", "no number",
     "mixer/parallel4_d512", "mixer/flat_d512", "04_variants"),
    ("a positional channel at the input gives 'virtually no change in performance'", "no number",
     "mixer/positional_first", "mixer/flat_d1024", "04_variants"),
    ("the parallel transformer-mixer hybrid gives no gain over the tuned Llama", "1.55/1.61 vs 1.55/1.61 (Llama with Flash Attention 2)",
     "mixer/hybrid_parallel", "mixer/llama_tuned", "05_v100"),
]


TIMED = "(measured on this machine)"  # ends the claims decided by measured time, which vary from machine to machine


def timed(rows: Sequence[Verdict], keep: bool = True) -> list[Verdict]:
    """The rows decided by time measured on this machine (``keep=True``) or the others (``keep=False``)."""
    return [v for v in rows if v.claim.endswith(TIMED) == keep]


def _speed_claim(runs, fast: str, slow: str, text: str, published: str) -> Verdict:
    a = [compute.seconds_per_step(r) for r in runs[fast]]
    b = [compute.seconds_per_step(r) for r in runs[slow]]
    return _compare(claim, text, published, a, b, (_short(fast), _short(slow)), fmt=".4f")


def _equal_steps(runs, a: str, b: str, split: str):
    step = compute.common_step(runs[a], runs[b])
    return step, compute.at_step(runs[a], step, split), compute.at_step(runs[b], step, split)


def training_rows(runs: Mapping[str, Sequence]) -> list[Verdict]:
    """The claims decided by training runs (experiment name -> runs; arms without runs are left out)."""
    rows = []
    for text, metric, better, worse, notebook, *published in CLAIMS:
        if have(runs, better, worse):
            v = _between(text, metric, better, worse, runs)
            if published:
                v = dataclasses.replace(v, published=published[0]())
            rows += in_notebook([v], f"{CHAPTER}/{notebook}")
    for text, published, a, b, notebook in SIMILAR:
        if have(runs, a, b):
            v = _compare(similar, text, published, tables.final(runs[a], "val"), tables.final(runs[b], "val"),
                         (_short(a), _short(b)))
            rows += in_notebook([v], f"{CHAPTER}/{notebook}")
    if have(runs, *FIRST):
        step, a, b = _equal_steps(runs, *FIRST, "val")
        rows += in_notebook([
            _compare(similar, f"at equal steps the mixer and Llama are 'nearly identical' (validation, step {step})",
                    f"{_pub(FIRST[0], 'val_equal_steps')} vs {_pub(FIRST[1], 'val_equal_steps')}", a, b,
                    (_short(FIRST[0]), _short(FIRST[1]))),
            _speed_claim(runs, *FIRST, "a training step of the mixer takes less time than one of Llama "
                         f"(the write-up: 'around six times as fast') {TIMED}", "about 6x"),
        ], f"{CHAPTER}/01_mixer_vs_llama")
    for flat, expanded in (FLAT_EXPANDED[:2], FLAT_EXPANDED[2:]):
        if have(runs, flat, expanded):
            rows += in_notebook([_speed_claim(runs, flat, expanded, f"a flat mixer step is faster than an expanded "
                                              f"one ({_short(flat)} vs {_short(expanded)}) {TIMED}",
                                              "flat mixers train faster per step")],
                                f"{CHAPTER}/02_flat_vs_expanded")
    if have(runs, "mixer/parallel2_d512", "mixer/flat_d512"):
        step, a, b = _equal_steps(runs, "mixer/parallel2_d512", "mixer/flat_d512", "train")
        rows += in_notebook([_compare(claim, f"at equal steps 2 parallel convolutions reach a lower training loss than the "
                                   f"flat mixer (step {step})", "1.845 vs 1.886 at 354,000 steps", a, b,
                                   ("parallel2_d512", "flat_d512"))], f"{CHAPTER}/04_variants")
    for label, names in (("flat mixer", FLAT_D[:3]), ("expanded mixer", EXPANDED_D)):
        if have(runs, *names):
            pub = ", ".join(str(_pub(n, "val")) for n in names)
            d = [experiments.get(n).build("paper").model.n_embed for n in names]
            rows += in_notebook([trend(f"the {label}'s validation loss falls as d_model grows from "
                                       f"{d[0]} to {d[-1]}", pub, d, [tables.final(runs[n], "val") for n in names],
                                       direction="down")], f"{CHAPTER}/03_scaling")
    return rows


def count_rows() -> list[Verdict]:
    counts = analysis.count_table()
    return in_notebook([
        exact("our models have the original code's parameter counts at the write-up's sizes",
              f"{len(counts)} models (reference notes)", f"{int(counts['agree'].sum())} of {len(counts)} agree "
              f"({int((counts['counted from'] != 'the original code').sum())} of them with the notes' count of a "
              "design no original runs)", bool(counts["agree"].all())),
    ], f"{CHAPTER}/03_scaling")


def liveness_rows() -> list[Verdict]:
    unread = {e: analysis.unread_weights(e) for e in (1, 2, 4)}
    return in_notebook([
        exact("with the causal mask, every expansion above 1 leaves token-mixing weights that never get a gradient "
              "(and e = 1 none)", "the write-up's argument (figure)",
              ", ".join(f"e={e}: {n:,} unread" for e, n in unread.items()) + " (one block, d = L = 64)",
              unread[1] == 0 and unread[2] > 0 and unread[4] > unread[2]),
    ], f"{CHAPTER}/02_flat_vs_expanded")


def memory_rows(memory: Mapping | None = None) -> list[Verdict]:
    memory = memory or analysis.memory_counts()
    mix, tf = memory["mixer"], memory["transformer"]
    below = bool((mix.loc[:, 1024:] < tf.loc[:, 1024:]).all().all())
    # growth from 512 to 2048 tokens (the longest context where the write-up has both models, 4 and 8 layers), in
    # MB: a constant offset (the CUDA context) cancels
    pub = analysis.MEMORY_PUBLISHED
    layers = [n for n in analysis.MEMORY_LAYERS if pub["transformer"][n][2] is not None]
    grow = {f: {n: memory[f].loc[n, 2048] - memory[f].loc[n, 512] for n in layers} for f in memory}
    published = "; ".join(f"{n} layers: mixer +{pub['mixer'][n][2] - pub['mixer'][n][0]:,}, transformer "
                          f"+{pub['transformer'][n][2] - pub['transformer'][n][0]:,} MB" for n in layers)
    ours = "; ".join(f"{n} layers: mixer +{grow['mixer'][n]:,.0f}, transformer +{grow['transformer'][n]:,.0f} MB"
                     for n in layers)
    return in_notebook([
        exact("a mixer needs less training memory than a same-width transformer at every context from 1,024 tokens "
              "(4, 8, 16 layers, d = 1024)", "the tables of the 'Memory' section", f"{'every' if below else 'not every'} "
              "cell (counted, fp32)", below),
        exact("the mixer's training memory grows far more slowly with context than the transformer's (512 to 2,048 "
              "tokens)", published, ours + " (counted)", all(grow["mixer"][n] < grow["transformer"][n] / 2 for n in layers)),
    ], f"{CHAPTER}/06_memory")


def jl_rows() -> list[Verdict]:
    rows = []
    for what, log10_m, pub in analysis.JL_PUBLISHED:
        n = analysis.jl_dimension(log10_m)
        rows.append(exact(f"Johnson-Lindenstrauss: 8 ln m for m = {what} is about {pub}", f"{pub}",
                          f"{n:,.0f}", abs(n - pub) <= 0.1 * pub))
    return in_notebook(rows, f"{CHAPTER}/08_dimensions")


def exact_rows(memory: Mapping | None = None) -> list[Verdict]:
    """The claims decided by computation: parameter counts, the mask's dead weights, memory, Johnson-Lindenstrauss."""
    return count_rows() + liveness_rows() + memory_rows(memory) + jl_rows()


def verdict_rows(runs: Mapping[str, Sequence], memory: Mapping | None = None) -> list[Verdict]:
    """Every claim of the write-up's CLM part, from the runs of the chapter's experiments (name -> runs)."""
    return training_rows(runs) + exact_rows(memory)


__all__ = ["BATCH", "CHAPTER", "CLAIMS", "EXPANDED_D", "FIRST", "FLAT_D", "FLAT_EXPANDED", "GENERATION", "GPT",
           "HEADLINE", "HEADS", "LLAMA_D", "MAIN", "NOTEBOOK_ARMS", "PARALLEL", "POSITIONAL",
           "SCALING", "SIMILAR", "TIMED", "V100", "analysis", "by_title", "compute", "count_rows",
           "exact_rows", "jl_rows", "liveness_rows", "memory_rows", "notebook_estimates", "results", "similar", "timed", "training_rows", "untestable", "verdict_rows"]
