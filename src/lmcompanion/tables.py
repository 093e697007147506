"""Every table in the book: results of runs grouped by arm, beside the write-up's published numbers."""

from __future__ import annotations

import math
import re
from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from .formats import count, estimate, number, si, span
from .stats import mean


def final(runs: Sequence, split: str) -> list[float]:
    """The last estimate of ``split`` in each run (what the write-ups' tables report)."""
    return [r.summary["final"][split] for r in runs]


def best(runs: Sequence, split: str = "val") -> list[float]:
    """The lowest estimate of ``split`` over each run."""
    return [min(r.evals()[split]) for r in runs]


def last_train_metric(runs: Sequence, key: str) -> list[float]:
    """The last logged value of a per-step training metric (e.g. ``aux/embedding``) in each run."""
    return [float(r.metrics().dropna(subset=[key])[key].iloc[-1]) for r in runs]


def results(
    groups: Mapping[str, Sequence],
    *,
    published: Mapping[str, Mapping[str, float]] | None = None,
    aux: tuple[str, str] | None = None,
    params: bool = True,
    fmt: str = ".3f",
) -> pd.DataFrame:
    """One row per arm: final train/val estimates, best val (left out where it equals the final one in every row),
    optional auxiliary loss, parameter count; each as 'mean [min, max]' over seeds, and the write-up's number beside
    ours where it has one.

    ``aux`` is (metrics key, column label), e.g. ("aux/embedding", "embedding loss").
    """
    published = published or {}
    rows = []
    for label, runs in groups.items():
        pub = published.get(label, {})
        row = {"arm": label, "seeds": len(runs)}
        row["train (final)"] = span(final(runs, "train"), fmt)
        row["val (final)"] = span(final(runs, "val"), fmt)
        row["val (best)"] = span(best(runs, "val"), fmt)
        if aux is not None:
            key, name = aux
            has = all(key in r.metrics().columns for r in runs)
            row[name] = span(last_train_metric(runs, key), ".3g") if has else "N/A"
        if params:
            row["params"] = count(runs[0].summary["params"])
        if pub:
            # as text, as the write-up prints them: pandas rounds the floats of a column that mixes floats and text
            # (4.138e-09 beside "N/A" showed 0.0)
            row["write-up train"] = str(pub.get("train", ""))
            row["write-up val"] = str(pub.get("val", ""))
            if aux is not None:
                row[f"write-up {aux[1]}"] = str(pub.get("aux", "N/A"))
            if params and "params" in pub:
                row["write-up params"] = count(pub["params"])
        rows.append(row)
    if all(r["val (best)"] == r["val (final)"] for r in rows):  # no arm's loss rose after its best: one column says it
        for r in rows:
            del r["val (best)"]
    return pd.DataFrame(rows).set_index("arm").fillna("")


def sig3(x: float) -> str:
    """Three significant digits, with thousands separators (2.91, 0.0123, 1,230): the book's format for a value
    (:func:`lmcompanion.formats.number`)."""
    return number(float(x))


def ranking_sentence(
    groups: Mapping[str, Sequence],
    split: str = "val",
    *,
    what: str = "validation loss",
    published: Mapping[str, Mapping[str, float]] | None = None,
    published_key: str | None = None,
    level: tuple[str, float] | None = None,
) -> str:
    """One sentence of what a results page shows, computed from its runs: the arms' final ``split`` (mean over
    seeds, three significant digits) from lowest to highest, the write-up's order of the same arms where it
    publishes all of them (``published[label][published_key or split]``), and, with ``level`` (its name and
    value, e.g. chance), how many arms end below it in every seed."""
    means = {label: mean(final(rs, split)) for label, rs in groups.items() if rs}
    order = sorted(means, key=means.get)
    seeds = sorted({len(rs) for rs in groups.values() if rs})
    text = (
        f"Final {what}, mean over {' or '.join(map(str, seeds))} seed{'s' if seeds != [1] else ''}, lowest first: "
        + "; ".join(f"{label} {sig3(means[label])}" for label in order)
        + "."
    )
    key = published_key or split
    theirs = {label: (published or {}).get(label, {}).get(key) for label in order}
    if len(order) > 1 and all(isinstance(v, (int, float)) for v in theirs.values()):
        their_order = sorted(order, key=theirs.get)
        text += (
            " The write-up ranks them the same way."
            if their_order == order
            else " The write-up ranks them otherwise: "
            + "; ".join(f"{label} {theirs[label]}" for label in their_order)
            + "."
        )
    if level is not None:
        name, value = level
        below = [label for label in order if max(final(groups[label], split)) < value]
        text += f" {len(below)} of {len(order)} arms end below {name} ({sig3(value)}) in every seed" + (
            f": {', '.join(below)}." if below and len(below) < len(order) else "."
        )
    return text


def one_header_row(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` with its index's name moved to the top-left corner of the column header (``columns.name``), where
    pandas' HTML puts it on the header's own row: a named index otherwise gets a second, mostly blank header row.
    Tables with several index or column levels, or whose columns are already named, are returned as they are."""
    if df.index.nlevels != 1 or df.columns.nlevels != 1 or df.index.name is None or df.columns.name is not None:
        return df
    out = df.copy(deep=False)
    out.columns = out.columns.rename(df.index.name)
    out.index = out.index.rename(None)
    return out


__all__ = [
    "best",
    "count",
    "environment",
    "estimate",
    "final",
    "html",
    "last_train_metric",
    "number",
    "one_header_row",
    "ranking_sentence",
    "results",
    "si",
    "sig3",
    "span",
]

_CODE = re.compile(r"`([^`<>\n]+)`")
_MATH = re.compile(r"\$([^$<>\n]+?)\$")
_CODE_SPAN = re.compile(r"(<code>.*?</code>)", re.S)


def _cell(value):
    """A cell's value as the book prints it: a float in the book's number format (:mod:`lmcompanion.formats`; a
    whole float, e.g. a count that pandas turned into a float beside a missing value, as an integer)."""
    if isinstance(value, bool) or not isinstance(value, (float, np.floating)):
        return value
    value = float(value)
    if math.isfinite(value) and value.is_integer() and abs(value) < 1e15:
        return count(value)
    return number(value) if math.isfinite(value) else value


def _math(html_text: str) -> str:
    """TeX between dollars (``$L^1$``) as MathJax typesets it in the book's HTML (the markup Sphinx gives a
    ``{math}`` role: MathJax processes elements of class ``math`` only, and notebook outputs are otherwise
    excluded), outside code."""
    parts = _CODE_SPAN.split(html_text)
    return "".join(
        p if p.startswith("<code>") else _MATH.sub(r'<span class="math notranslate nohighlight">\(\1\)</span>', p)
        for p in parts
    )


_TEXT = re.compile(r">([^<>]+)<")
_BREAK = re.compile(r"(?<=[^\W_]{3}[/_])(?=\w)")  # after three letters or digits: "d_model" stays whole
_KEPT = re.compile(r"(`[^`<>\n]+`|\$[^$<>\n]+?\$)")  # code and mathematics, as _CODE and _MATH find them


def _breaks(html_text: str) -> str:
    """A line-break opportunity (``<wbr>``) after every / and _ that follows three letters or digits inside a word of
    the table's text (experiment names such as ``mixer/expanded_d256``; not "d_ model"), so that a narrow column wraps
    them instead of widening the table; not inside code or mathematics (between backticks or dollars), while the rest
    of a cell's text around them still gets them (a verdict "at `smoke` scale" naming
    transformer_matcher_batch_axis_llama_d1024_c32 widened its table)."""

    def text(m: re.Match) -> str:
        parts = _KEPT.split(m.group(1))  # text, kept span, text, ...
        return ">" + "".join(p if i % 2 else _BREAK.sub("<wbr>", p) for i, p in enumerate(parts)) + "<"

    return _TEXT.sub(text, html_text)


def html(df: pd.DataFrame) -> str:
    """The book's HTML of a table (installed as the notebooks' DataFrame formatter by ``nb.setup``): pandas' own,
    with one header row (:func:`one_header_row`), floats in the book's number format (:func:`_cell`), text between
    backticks (`cpu`, a command) set as code, as Markdown would set it (an HTML table shows the backticks
    themselves), TeX between dollars typeset (:func:`_math`), and names that may wrap after / and _ (:func:`_breaks`)."""
    objects = any(d == object for d in df.dtypes)  # noqa: E721  (a dtype equals object: not a type check)
    shown = df.map(_cell) if any(kind in "fc" for kind in df.dtypes.map(lambda d: d.kind)) or objects else df
    return _math(_CODE.sub(r"<code>\1</code>", _breaks(one_header_row(shown)._repr_html_())))


def environment(run) -> pd.DataFrame:
    """The provenance of one run as a two-column table."""
    keys = [
        "time",
        "device",
        "gpu",
        "cpu",
        "cpu_count",
        "torch_threads",
        "torch",
        "cuda",
        "python",
        "platform",
        "commit",
        "dirty",
        "code_fingerprint",
        "world_size",
    ]
    env = run.env
    return pd.DataFrame({"value": [str(env[k]) for k in keys if k in env]}, index=[k for k in keys if k in env])
