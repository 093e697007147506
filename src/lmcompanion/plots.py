"""Every figure in the book, in one style. Functions take runs (grouped by arm) and return a Figure.

Seeds of one arm are drawn as their mean with a shaded band from the lowest to the highest seed, so the
spread the verdicts account for is visible in the curves too.
"""

from __future__ import annotations

from typing import Mapping, Sequence

import matplotlib as mpl
import matplotlib.pyplot as plt
import numpy as np

COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#17becf", "#7f7f7f", "#bcbd22"]


def style() -> None:
    """The book's matplotlib style (called by ``lmcompanion.nb.setup``; in a notebook, figures are also stored at
    twice their pixel density, sharp on high-DPI screens at the same size)."""
    try:
        from matplotlib_inline.backend_inline import set_matplotlib_formats

        set_matplotlib_formats("retina")
    except ModuleNotFoundError:  # outside a notebook's kernel
        pass
    mpl.rcParams.update({
        "figure.figsize": (7.0, 3.4),
        "figure.dpi": 110,
        "savefig.bbox": "tight",
        "axes.grid": True,
        "grid.alpha": 0.3,
        "axes.spines.top": False,
        "axes.spines.right": False,
        "axes.prop_cycle": mpl.cycler(color=COLORS),
        "font.size": 9.5,
        "legend.frameon": False,
        "legend.fontsize": 8.5,
    })


def legend_outside(fig, ax) -> None:
    """One legend for the figure, below its panels (off the data, and as wide as the figure, not a panel), from the
    lines of ``ax``; nothing when they have no labels."""
    handles, labels = ax.get_legend_handles_labels()
    if handles:
        fig.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, 0.0), ncols=min(len(labels), 3))


def _band(ax, steps, values: np.ndarray, label: str, color: str) -> None:
    """Mean over seeds (rows) with a min-max band."""
    # a single evaluation (an arm that its budget buys few steps) would be an invisible line of one point: a marker
    ax.plot(steps, values.mean(0), label=label, color=color, lw=1.6, marker="o" if len(steps) == 1 else None)
    if values.shape[0] > 1:
        ax.fill_between(steps, values.min(0), values.max(0), color=color, alpha=0.18, lw=0)


def _stack(frames, column: str):
    steps = frames[0]["step"].to_numpy()
    n = min(len(f) for f in frames)
    return steps[:n], np.stack([f[column].to_numpy()[:n] for f in frames])


Reference = tuple[str, "float | Mapping[str, float]"]


def _reference(ax, reference: Reference | list[Reference] | None, column: str) -> None:
    """``reference`` (label, value), e.g. the unigram loss, as a dashed horizontal line; its value may be one number
    for every panel or one per panel's column (a panel whose column it lacks gets none). A list of references draws
    each (e.g. chance with 31 and with 127 candidates), in different dashes."""
    if reference is None:
        return
    for (label, value), style in zip(reference if isinstance(reference, list) else [reference], ("--", ":", "-.")):
        if isinstance(value, Mapping):
            if column not in value:
                continue
            value = value[column]
        ax.axhline(value, color="0.4", linestyle=style, linewidth=1, label=label)


def loss_curves(groups: Mapping[str, Sequence], splits: Sequence[str] = ("train", "val"), *,
                title: str | None = None, logy: bool = False, reference: Reference | None = None,
                ylabel: str = "cross-entropy (nats/token)"):
    """Evaluation loss against step, one panel per split; one line (mean over seeds, min-max band) per arm; and
    ``reference`` (label, loss or {split: loss}), e.g. the unigram loss, as a dashed horizontal line."""
    fig, axes = plt.subplots(1, len(splits), sharey=True, squeeze=False, figsize=(3.6 * len(splits) + 0.6, 3.4))
    for ax, split in zip(axes[0], splits):
        for color, (label, runs) in zip(COLORS, groups.items()):
            steps, values = _stack([r.evals() for r in runs], split)
            _band(ax, steps, values, label, color)
        _reference(ax, reference, split)
        ax.set_title(f"{split} loss (eval mode)")
        ax.set_xlabel("step")
        if logy:
            ax.set_yscale("log")
    axes[0][0].set_ylabel(ylabel)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    legend_outside(fig, axes[0][-1])
    return fig


def train_metric(groups: Mapping[str, Sequence], key: str, *, ylabel: str, title: str | None = None,
                 logy: bool = True):
    """A per-step training metric (e.g. ``aux/embedding``) against step, mean over seeds with a min-max band."""
    fig, ax = plt.subplots()
    for color, (label, runs) in zip(COLORS, groups.items()):
        frames = [r.metrics().dropna(subset=[key])[["step", key]].reset_index(drop=True) for r in runs]
        steps, values = _stack(frames, key)
        _band(ax, steps, values, label, color)
    ax.set_xlabel("step")
    ax.set_ylabel(ylabel)
    if logy:
        ax.set_yscale("log")
    if title:
        ax.set_title(title)
    fig.tight_layout()
    legend_outside(fig, ax)
    return fig


def sweep(x: Sequence, series: Mapping[str, Sequence[Sequence[float]]], *, xlabel: str, ylabel: str,
          title: str | None = None):
    """One panel per series: for each x, the mean over seeds with a bar from the lowest to the highest seed.

    ``series[name][j]`` holds the per-seed values at ``x[j]``.
    """
    fig, axes = plt.subplots(1, len(series), squeeze=False, figsize=(3.6 * len(series) + 0.6, 3.2))
    for ax, color, (name, values) in zip(axes[0], COLORS, series.items()):
        means = np.array([np.mean(v) for v in values])
        lo = means - np.array([np.min(v) for v in values])
        hi = np.array([np.max(v) for v in values]) - means
        ax.errorbar(x, means, yerr=[lo, hi], color=color, marker="o", capsize=3, lw=1.4)
        ax.set_title(name)
        ax.set_xlabel(xlabel)
        ax.set_xticks(list(x))
    axes[0][0].set_ylabel(ylabel)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return fig


TICK_FONT = 9  # a labelled tick of a matrix (a token): the book's smallest text that still reads at 100%
TICK_INCHES = 0.2  # the room each labelled tick gets, so that labels at TICK_FONT do not overlap
MAX_WIDTH = 11.0  # inches: a figure wider than this is shrunk to the page and its text with it


def heatmap(matrix, *, xlabel: str, ylabel: str, title: str | None = None, xticks=None, yticks=None,
            cmap: str = "viridis", colorbar: str | None = None, ax=None):
    """A matrix as an image (rows = y, columns = x)."""
    fig = None
    if ax is None:
        fig, ax = plt.subplots(figsize=(4.8, 3.8))
    im = ax.imshow(np.asarray(matrix), cmap=cmap, aspect="auto", interpolation="nearest")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(False)
    if xticks is not None:
        ax.set_xticks(range(len(xticks)), xticks, fontsize=TICK_FONT)
    if yticks is not None:
        ax.set_yticks(range(len(yticks)), yticks, fontsize=TICK_FONT)
    if title:
        ax.set_title(title)
    if colorbar is not None:
        ax.figure.colorbar(im, ax=ax, label=colorbar, shrink=0.85)
    if fig is not None:
        fig.tight_layout()
    return fig or ax.figure


def curves(groups: Mapping[str, Sequence], x: str, panels: Mapping[str, str], *, xlabel: str, ylabel: str,
           logx: bool = False, logy: bool = False, title: str | None = None, reference: Reference | None = None):
    """Columns of per-seed DataFrames against column ``x``: one panel per entry of ``panels`` (column -> panel
    title), one line per group (mean over seeds, min-max band), and ``reference`` as in :func:`loss_curves` (by
    column). Rows where a panel's column is missing are skipped, and so is x = 0 on a log axis."""
    fig, axes = plt.subplots(1, len(panels), squeeze=False, figsize=(3.6 * len(panels) + 0.6, 3.4))
    for ax, (column, panel_title) in zip(axes[0], panels.items()):
        for color, (label, frames) in zip(COLORS, groups.items()):
            kept = [f.dropna(subset=[column]) for f in frames if column in f.columns]
            if logx:
                kept = [f[f[x] > 0] for f in kept]
            kept = [f[[x, column]].rename(columns={x: "step"}).reset_index(drop=True) for f in kept]
            if not kept or not len(kept[0]):
                continue
            steps, values = _stack(kept, column)
            _band(ax, steps, values, label, color)
        _reference(ax, reference, column)
        ax.set_title(panel_title)
        ax.set_xlabel(xlabel)
        if logx:
            ax.set_xscale("log")
            ax.xaxis.set_minor_formatter(mpl.ticker.NullFormatter())
        if logy:
            ax.set_yscale("log")
            ax.yaxis.set_minor_formatter(mpl.ticker.NullFormatter())
    axes[0][0].set_ylabel(ylabel)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    legend_outside(fig, axes[0][0])
    return fig


def heatmaps(panels: Sequence[Mapping], *, ncols: int | None = None, cmap: str = "viridis",
             vmin: float | None = None, vmax: float | None = None, colorbar: str | None = None,
             title: str | None = None, panel_size: tuple[float, float] = (3.0, 2.7)):
    """Several matrices side by side in one figure. Each panel is a mapping with ``matrix``, ``title``, ``xlabel``,
    ``ylabel`` and optionally ``xticks`` and ``yticks`` (as :func:`heatmap`); one colour scale for all. Panels grow
    with their labelled ticks, :data:`TICK_INCHES` each, so the labels stay legible."""
    n = len(panels)
    most = {k: max((len(p.get(k) or ()) for p in panels), default=0) for k in ("xticks", "yticks")}
    panel_size = (max(panel_size[0], TICK_INCHES * most["xticks"] + 1.2),
                  max(panel_size[1], TICK_INCHES * most["yticks"] + 1.2))
    ncols = max(1, min(ncols or n, int((MAX_WIDTH - 0.8) // panel_size[0])))  # wider panels wrap to more rows
    nrows = -(-n // ncols)
    fig, axes = plt.subplots(nrows, ncols, squeeze=False, layout="constrained",
                             figsize=(panel_size[0] * ncols + 0.8, panel_size[1] * nrows + 0.3))
    for ax in axes.flat[n:]:
        ax.axis("off")
    for ax, panel in zip(axes.flat, panels):
        heatmap(panel["matrix"], xlabel=panel.get("xlabel", ""), ylabel=panel.get("ylabel", ""),
                title=panel.get("title"), xticks=panel.get("xticks"), yticks=panel.get("yticks"), cmap=cmap, ax=ax)
        ax.images[-1].set_clim(vmin, vmax)
    if colorbar is not None:
        fig.colorbar(axes.flat[0].images[-1], ax=list(axes.flat[:n]), label=colorbar, shrink=0.85)
    if title:
        fig.suptitle(title)
    return fig
