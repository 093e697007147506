"""Time and memory claims, judged the same way in every chapter.

**Time per step** is measured side by side (:func:`lmcompanion.bench.side_by_side`): the two models' trainer steps in
one process, in interleaved rounds, so both see the same load of the machine; the rounds are the samples. A claim
that two models train "in a similar amount of time" is a claim of no large difference: it **holds** when the ratio of
their times per step is within :data:`SIMILAR` either way by two one-sided tests over the rounds at 5%
(:func:`lmcompanion.verdicts.similar`), and does not hold when it is beyond that margin by the same test. A claim
that one model is faster is the one-sided test of the per-round ratios against 1 (:func:`lmcompanion.verdicts.below`
on a log scale). Time on a CPU is not time on a GPU: a CPU runs small models' many small operations one after the
other, where a GPU's time follows the FLOPs and the memory traffic. A verdict on time says what it says on the
machine that measured it.

**Training memory** is counted by one method for every model family (:func:`lmcompanion.memory.step_memory`: one
micro-batch of the run, the loss with its auxiliary terms, AdamW's state, fp32, eager), at the write-up's size and
micro-batch (the ``paper`` profile), whatever the profile of the page; a run trained on a GPU records its own peak
(``summary["peak_mem_bytes"]``), which is shown beside the count and decides the row where both arms have one.
"Similar memory demands" holds when the ratio is within :data:`SIMILAR` either way.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Mapping, Sequence

from .. import experiments, memory, stats
from ..bench import SideBySide
from ..claims import Row
from ..formats import number
from ..verdicts import COMPUTED, COST, INCONCLUSIVE, Verdict, below, exact, similar

# "A similar amount of time", "similar memory demands": no larger than a factor 1.25 either way (chosen before any
# measurement: a quarter more time or memory is what a reader would notice; the write-ups give no numbers).
SIMILAR = 1.25
MEMORY_PROFILE = "paper"  # the write-up's size and micro-batch


def time_claim(subject: str) -> str:
    """The text of a chapter's "similar time" claim for ``subject`` against the baseline."""
    return (
        f"{subject} takes a similar time per training step as the baseline (within {SIMILAR:g}x either way; "
        "timed side by side)"
    )


def memory_claim(subject: str) -> str:
    """The text of a chapter's "similar memory demands" claim for ``subject`` against the baseline."""
    return (
        f"{subject} needs similar training memory to the baseline (within {SIMILAR:g}x either way; counted at "
        "the write-up's size, or measured on a GPU)"
    )


def _short(name: str) -> str:
    return name.split("/")[-1]


def _own_times(runs: Mapping[str, Sequence], *names: str) -> str:
    """Each arm's seconds per step from its runs' own training time (not side by side), where it has runs."""
    parts = [
        f"{_short(n)}: {stats.span([r.summary['train_time_s'] / r.summary['steps'] for r in runs[n]], '.4f')} s/step"
        for n in names
        if runs.get(n) and all(r.summary.get("train_time_s") for r in runs[n])
    ]
    return "; ".join(parts)


def _not_timed(text: str, published: str, names: Sequence[str], runs: Mapping[str, Sequence]) -> Verdict:
    own = _own_times(runs, *names)
    return Verdict(
        text,
        published,
        "not timed side by side at this profile" + (f" (the runs' own training time: {own})" if own else ""),
        f"{INCONCLUSIVE} (not timed side by side at this profile)",
        seeds="0",
        chance="",
    )


def _timed(timing: SideBySide | None, *names: str) -> bool:
    return timing is not None and set(names) <= set(timing.names)


def time_similar(
    text: str, published: str, timing: SideBySide | None, a: str, b: str, runs: Mapping[str, Sequence] | None = None
) -> Verdict:
    """The claim "``a`` takes a similar time per training step as ``b``" (within :data:`SIMILAR` either way), on the
    rounds of a side-by-side timing; without one, a row that says it was not timed here."""
    if not _timed(timing, a, b):
        return _not_timed(text, published, (a, b), runs or {})
    v = similar(
        text,
        published,
        timing.per_step(a),
        timing.per_step(b),
        SIMILAR,
        paired=True,
        ratio=True,
        labels=(_short(a), _short(b)),
        fmt=".4f",
        unit="rounds",
    )
    return dataclasses.replace(v, ours=f"s/step on {timing.device}: {v.ours}")


def time_lower(
    text: str,
    published: str,
    timing: SideBySide | None,
    faster: str,
    slower: str,
    runs: Mapping[str, Sequence] | None = None,
    limit: float = 1.0,
) -> Verdict:
    """The claim "``faster`` takes less time per training step than ``slower``": the per-round ratio
    faster / slower below ``limit`` (1: less time; below 1: less by that factor) by a one-sided t-test over the
    rounds (on a log scale)."""
    if not _timed(timing, faster, slower):
        return _not_timed(text, published, (faster, slower), runs or {})
    fast, slow = timing.per_step(faster), timing.per_step(slower)
    ratios = [x / y for x, y in zip(fast, slow)]
    v = below(text, published, ratios, limit, fmt=".3f", log=True)
    return dataclasses.replace(
        v,
        seeds=f"{len(ratios)} rounds",
        effect=f"x{number(stats.mean(ratios))} (mean ratio)",
        ours=f"s/step on {timing.device}: {_short(faster)}: {stats.span(fast, '.4f')}; "
        f"{_short(slower)}: {stats.span(slow, '.4f')}; ratio {stats.span(ratios, '.3f')}",
    )


@functools.lru_cache(maxsize=64)
def counted(name: str, profile: str = MEMORY_PROFILE) -> dict[str, int]:
    """Bytes of one training step of experiment ``name``'s run at ``profile`` (:func:`lmcompanion.memory.step_memory`)."""
    return memory.step_memory(experiments.config(name, profile, device="cpu"))


def _gib(n: float) -> str:
    return f"{number(n / 2**30)} GiB"


def memory_similar(text: str, published: str, a: str, b: str, runs: Mapping[str, Sequence] | None = None) -> Verdict:
    """The claim "``a`` needs similar training memory to ``b``" (within :data:`SIMILAR` either way): the peak both
    arms' runs recorded on a GPU where they have one, else the count at the write-up's size; exact either way."""
    runs = runs or {}
    ca, cb = counted(a)["training_step"], counted(b)["training_step"]
    ma, mb = memory.recorded_peak(runs.get(a, [])), memory.recorded_peak(runs.get(b, []))
    text_counted = (
        f"counted at the write-up's size (one micro-batch, fp32, with AdamW's state): {_short(a)}: "
        f"{_gib(ca)}, {_short(b)}: {_gib(cb)}, ratio {number(ca / cb)}"
    )
    if ma and mb:
        gpu = next((r.env.get("gpu") for r in runs[a] if r.env.get("gpu")), "a GPU")
        ratio = stats.mean(ma) / stats.mean(mb)
        ours = (
            f"measured on {gpu} (the runs' recorded peak): {_short(a)}: {_gib(stats.mean(ma))}, {_short(b)}: "
            f"{_gib(stats.mean(mb))}, ratio {number(ratio)}; {text_counted}"
        )
    else:
        ratio = ca / cb
        ours = f"{text_counted}; measured on a GPU: not recorded yet"
    return exact(text, published, ours, 1 / SIMILAR <= ratio <= SIMILAR)


def memory_table(names: Sequence[str], profile: str, runs: Mapping[str, Sequence] | None = None):
    """Per experiment: one training step's memory counted at the write-up's size (the weights with AdamW's state; the
    peak during forward and backward: activations, temporaries and the gradients as they appear; the total) and at
    ``profile``, and the peak its runs recorded on a GPU where they have one."""
    import pandas as pd

    runs = runs or {}
    rows = []
    for name in names:
        paper, here = counted(name), counted(name, profile)
        cfg = experiments.config(name, MEMORY_PROFILE, device="cpu")
        measured = memory.recorded_peak(runs.get(name, []))
        rows.append(
            {
                "experiment": name,
                "micro-batch (write-up)": f"{cfg.train.batch_size} x {cfg.model.context_size}",
                "weights and AdamW state (write-up)": _gib(
                    paper["parameters"] + paper["buffers"] + paper["optimizer_state"]
                ),
                "peak during the pass (write-up)": _gib(paper["peak_during_pass"]),
                "training step (write-up)": _gib(paper["training_step"]),
                f"training step ({profile})": f"{number(here['training_step'] / 2**20)} MiB",
                "measured on a GPU": _gib(stats.mean(measured)) if measured else "not recorded yet",
            }
        )
    return pd.DataFrame(rows).set_index("experiment")


def similar_cost_rows(
    time_text: str, memory_text: str, a: str, b: str, *, memory_notebook: str, time_notebook: str
) -> list[Row]:
    """The rows of "a similar amount of time with similar memory demands" (``a`` against ``b``; the write-ups give no
    numbers): memory counted at the write-up's size or measured on a GPU (:func:`memory_similar`), and time per step
    timed side by side in the verdict notebook (:func:`time_similar`)."""
    return [
        Row(
            memory_text,
            memory_notebook,
            lambda ctx: memory_similar(memory_text, '"similar memory demands" (no numbers)', a, b, ctx.runs),
            kind=COMPUTED,
        ),
        Row(
            time_text,
            time_notebook,
            lambda ctx: time_similar(
                time_text, '"a similar amount of time" (no numbers)', ctx.timing(a, b), a, b, ctx.runs
            ),
            kind=COST,
            timed=(a, b),
        ),
    ]


__all__ = [
    "similar_cost_rows",
    "MEMORY_PROFILE",
    "SIMILAR",
    "counted",
    "memory_similar",
    "memory_table",
    "time_lower",
    "time_similar",
]
