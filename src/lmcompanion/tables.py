"""Every table in the book: results of runs grouped by arm, beside the write-up's published numbers."""

from __future__ import annotations

from typing import Mapping, Sequence

import pandas as pd

from .stats import span


def final(runs: Sequence, split: str) -> list[float]:
    """The last estimate of ``split`` in each run (what the write-ups' tables report)."""
    return [r.summary["final"][split] for r in runs]


def best(runs: Sequence, split: str = "val") -> list[float]:
    """The lowest estimate of ``split`` over each run."""
    return [min(r.evals()[split]) for r in runs]


def last_train_metric(runs: Sequence, key: str) -> list[float]:
    """The last logged value of a per-step training metric (e.g. ``aux/embedding``) in each run."""
    return [float(r.metrics().dropna(subset=[key])[key].iloc[-1]) for r in runs]


def results(groups: Mapping[str, Sequence], *, published: Mapping[str, Mapping[str, float]] | None = None,
            aux: tuple[str, str] | None = None, params: bool = True, fmt: str = ".3f") -> pd.DataFrame:
    """One row per arm: final train/val estimates, best val, optional auxiliary loss, parameter count;
    each as 'mean [min, max]' over seeds, and the write-up's number beside ours where it has one.

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
            row[name] = span(last_train_metric(runs, key), ".2e") if has else "N/A"
        if params:
            row["params"] = f"{runs[0].summary['params']:,}"
        if pub:
            # as text, as the write-up prints them: pandas rounds the floats of a column that mixes floats and text
            # (4.138e-09 beside "N/A" showed 0.0)
            row["write-up train"] = str(pub.get("train", ""))
            row["write-up val"] = str(pub.get("val", ""))
            if aux is not None:
                row[f"write-up {aux[1]}"] = str(pub.get("aux", "N/A"))
            if params and "params" in pub:
                row["write-up params"] = f"{pub['params']:,}"
        rows.append(row)
    return pd.DataFrame(rows).set_index("arm").fillna("")


def one_header_row(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` with its index's name moved to the top-left corner of the column header (``columns.name``), where
    pandas' HTML puts it on the header's own row: a named index otherwise gets a second, mostly blank header row.
    Tables with several index or column levels, or whose columns are already named, are returned as they are."""
    if (df.index.nlevels != 1 or df.columns.nlevels != 1 or df.index.name is None
            or df.columns.name is not None):
        return df
    out = df.copy(deep=False)
    out.columns = out.columns.rename(df.index.name)
    out.index = out.index.rename(None)
    return out


def html(df: pd.DataFrame) -> str:
    """The book's HTML of a table (installed as the notebooks' DataFrame formatter by ``nb.setup``): pandas' own,
    with one header row (:func:`one_header_row`)."""
    return one_header_row(df)._repr_html_()


def environment(run) -> pd.DataFrame:
    """The provenance of one run as a two-column table."""
    keys = ["time", "device", "gpu", "cpu", "cpu_count", "torch_threads", "torch", "cuda", "python", "platform",
            "commit", "dirty", "code_fingerprint", "world_size"]
    env = run.env
    return pd.DataFrame({"value": [str(env[k]) for k in keys if k in env]}, index=[k for k in keys if k in env])
