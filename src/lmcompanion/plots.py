"""Every figure in the book, in one style. Functions take runs (grouped by arm) and return a Figure.

Seeds of one arm are drawn as their mean with a shaded band from the lowest to the highest seed, so the
spread the verdicts account for is visible in the curves too.

matplotlib is imported by the functions that draw, not with the module: the command line imports this module with
the chapters, and most of its commands draw nothing (matplotlib was about 0.45 s of every command's start-up on the
2-core build machine; ``tests/test_architecture.py`` keeps it out of the command line's imports).
"""

from __future__ import annotations

import textwrap
from typing import Mapping, Sequence

import numpy as np

COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#17becf", "#7f7f7f", "#bcbd22"]


PAGE_WIDTH = 6.8  # inches: the book's text column (760 to 790 px at figure.dpi, less some slack): no figure is wider
DPI = 110  # figure.dpi: a figure's inch is this many CSS pixels on the page
DRAWN_WIDTH = PAGE_WIDTH - 0.2  # the widest figure to draw: a saved figure gains 0.1 in of padding on each side


def style() -> None:
    """The book's matplotlib style (called by ``lmcompanion.nb.setup``; in a notebook, figures are also stored at
    twice their pixel density, sharp on high-DPI screens at the same size: :func:`install_png_formatter`)."""
    import matplotlib as mpl

    install_png_formatter()
    mpl.rcParams.update(
        {
            "figure.figsize": (DRAWN_WIDTH, 3.4),
            "figure.dpi": DPI,
            "savefig.bbox": "tight",
            "axes.grid": True,
            "grid.alpha": 0.3,
            "axes.spines.top": False,
            "axes.spines.right": False,
            "axes.prop_cycle": mpl.cycler(color=COLORS),
            "font.size": 9.5,
            "legend.frameon": False,
            "legend.fontsize": 8.5,
        }
    )


def retina_png(fig):
    """A figure as PNG data at twice its pixel density, with its display width (in CSS pixels) and no height.

    matplotlib-inline's "retina" format stores both the width and the height, and the book's HTML then gives the
    image both as a fixed style: when the text column is narrower than the figure, the width shrinks and the height
    does not, and the figure is squashed sideways. With the width alone the browser keeps the file's aspect ratio at
    every width."""
    from IPython.core.pylabtools import retina_figure

    out = retina_figure(fig)
    if out is None:  # an empty figure shows nothing, as IPython's own formatter
        return None
    data, metadata = out
    return data, {"width": metadata["width"]}


def install_png_formatter() -> None:
    """In a notebook's kernel, figures are shown through :func:`retina_png` (nothing outside one)."""
    import matplotlib as mpl

    try:
        from IPython import get_ipython
        from matplotlib_inline.backend_inline import set_matplotlib_formats
    except ModuleNotFoundError:  # outside a notebook's kernel
        return
    shell = get_ipython()
    if shell is None:
        return
    set_matplotlib_formats("png")  # the inline backend's own formatter, replaced for figures just below
    shell.display_formatter.formatters["image/png"].for_type(mpl.figure.Figure, retina_png)


PANEL_WIDTH = 3.0  # inches: one panel of a row of panels (two fill the page)
SINGLE_WIDTH = 4.8  # inches: a figure of one panel (wide enough for its legend below it)


def panel_grid(
    n: int, panel_width: float = PANEL_WIDTH, ncols: int | None = None, margin: float = 0.6
) -> tuple[int, int]:
    """(rows, columns) for ``n`` panels of ``panel_width`` inches beside ``margin`` inches of labels: as many side by
    side as fit in :data:`PAGE_WIDTH` (and at most ``ncols``), the rest on more rows, so that no panel is shrunk to
    fit the page."""
    fit = max(1, int((DRAWN_WIDTH - margin) / panel_width + 1e-9))
    cols = max(1, min(n, ncols or n, fit))
    return -(-n // cols), cols


def panel_figure(n: int, height: float = 3.2, **kw):
    """A figure of ``n`` panels laid out by :func:`panel_grid` within the page's width, and its first ``n`` axes
    (row by row; the grid's unused cells are hidden). ``kw`` goes to ``plt.subplots`` (e.g. ``sharey``)."""
    import matplotlib.pyplot as plt

    rows, cols = panel_grid(n)
    width = min(DRAWN_WIDTH, PANEL_WIDTH * cols + 0.6 if cols > 1 else SINGLE_WIDTH)
    fig, grid = plt.subplots(rows, cols, squeeze=False, figsize=(width, height * rows), **kw)
    for ax in grid.flat[n:]:
        ax.set_visible(False)
    return fig, list(grid.flat[:n])


def _first_in_row(axes) -> list:
    """The axes that start a row of a :func:`panel_figure` (they carry the y label)."""
    return [ax for ax in axes if ax.get_subplotspec().is_first_col()]


def legend_outside(fig, ax) -> None:
    """One legend for the figure, below its panels (off the data, and as wide as the figure, not a panel), from the
    lines of ``ax``; nothing when they have no labels. Up to three labels a row, fewer where long labels would make
    the legend wider than the figure (the saved figure would grow to hold it, past the page's width)."""
    handles, labels = ax.get_legend_handles_labels()
    if not handles:
        return
    renderer = fig.canvas.get_renderer()
    width = fig.get_window_extent(renderer).width
    for ncols in range(min(len(labels), 3), 0, -1):
        legend = fig.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, 0.0), ncols=ncols)
        if legend.get_window_extent(renderer).width <= width:
            return
        legend.remove()
    # one a row is still too wide: a label longer than the figure wraps onto more lines
    chars = max(len(label) for label in labels)
    while chars > 20:
        chars = int(chars * 0.8)
        legend = fig.legend(
            handles,
            [textwrap.fill(label, chars) for label in labels],
            loc="upper center",
            bbox_to_anchor=(0.5, 0.0),
            ncols=1,
        )
        if legend.get_window_extent(renderer).width <= width:
            return
        legend.remove()
    fig.legend(
        handles, [textwrap.fill(label, 20) for label in labels], loc="upper center", bbox_to_anchor=(0.5, 0.0), ncols=1
    )


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


def loss_curves(
    groups: Mapping[str, Sequence],
    splits: Sequence[str] = ("train", "val"),
    *,
    title: str | None = None,
    logy: bool = False,
    reference: Reference | None = None,
    ylabel: str = "cross-entropy (nats/token)",
):
    """Evaluation loss against step, one panel per split; one line (mean over seeds, min-max band) per arm; and
    ``reference`` (label, loss or {split: loss}), e.g. the unigram loss, as a dashed horizontal line."""
    fig, axes = panel_figure(len(splits), sharey=True)
    for ax, split in zip(axes, splits):
        for color, (label, runs) in zip(COLORS, groups.items()):
            steps, values = _stack([r.evals() for r in runs], split)
            _band(ax, steps, values, label, color)
        _reference(ax, reference, split)
        ax.set_title(f"{split} loss (eval mode)")
        ax.set_xlabel("step")
        if logy:
            ax.set_yscale("log")
    for ax in _first_in_row(axes):
        ax.set_ylabel(ylabel)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    legend_outside(fig, axes[-1])
    return fig


def train_metric(groups: Mapping[str, Sequence], key: str, *, ylabel: str, title: str | None = None, logy: bool = True):
    """A per-step training metric (e.g. ``aux/embedding``) against step, mean over seeds with a min-max band."""
    import matplotlib.pyplot as plt

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


def sweep(
    x: Sequence, series: Mapping[str, Sequence[Sequence[float]]], *, xlabel: str, ylabel: str, title: str | None = None
):
    """One panel per series: for each x, the mean over seeds with a bar from the lowest to the highest seed.

    ``series[name][j]`` holds the per-seed values at ``x[j]``.
    """
    fig, axes = panel_figure(len(series))
    for ax, color, (name, values) in zip(axes, COLORS, series.items()):
        means = np.array([np.mean(v) for v in values])
        lo = means - np.array([np.min(v) for v in values])
        hi = np.array([np.max(v) for v in values]) - means
        ax.errorbar(x, means, yerr=[lo, hi], color=color, marker="o", capsize=3, lw=1.4)
        ax.set_title(name)
        ax.set_xlabel(xlabel)
        ax.set_xticks(list(x))
    for ax in _first_in_row(axes):
        ax.set_ylabel(ylabel)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return fig


TICK_FONT = 9  # a labelled tick of a matrix (a token): the book's smallest text that still reads at 100%
TICK_INCHES = 0.2  # the room each labelled tick gets, so that labels at TICK_FONT do not overlap


def heatmap(
    matrix,
    *,
    xlabel: str,
    ylabel: str,
    title: str | None = None,
    xticks=None,
    yticks=None,
    cmap: str = "viridis",
    colorbar: str | None = None,
    ax=None,
):
    """A matrix as an image (rows = y, columns = x)."""
    import matplotlib.pyplot as plt

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


def curves(
    groups: Mapping[str, Sequence],
    x: str,
    panels: Mapping[str, str],
    *,
    xlabel: str,
    ylabel: str,
    logx: bool = False,
    logy: bool = False,
    title: str | None = None,
    reference: Reference | None = None,
):
    """Columns of per-seed DataFrames against column ``x``: one panel per entry of ``panels`` (column -> panel
    title), one line per group (mean over seeds, min-max band), and ``reference`` as in :func:`loss_curves` (by
    column). Rows where a panel's column is missing are skipped, and so is x = 0 on a log axis."""
    import matplotlib as mpl

    fig, axes = panel_figure(len(panels))
    for ax, (column, panel_title) in zip(axes, panels.items()):
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
    for ax in _first_in_row(axes):
        ax.set_ylabel(ylabel)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    legend_outside(fig, axes[0])
    return fig


def heatmaps(
    panels: Sequence[Mapping],
    *,
    ncols: int | None = None,
    cmap: str = "viridis",
    vmin: float | None = None,
    vmax: float | None = None,
    colorbar: str | None = None,
    title: str | None = None,
    panel_size: tuple[float, float] = (3.0, 2.7),
):
    """Several matrices side by side in one figure. Each panel is a mapping with ``matrix``, ``title``, ``xlabel``,
    ``ylabel`` and optionally ``xticks`` and ``yticks`` (as :func:`heatmap`); one colour scale for all. Panels grow
    with their labelled ticks, :data:`TICK_INCHES` each, so the labels stay legible; where that would leave one panel
    per row, only every k-th x tick is labelled, the smallest k that fits two panels in a row (a grid, not a column
    taller than a screen)."""
    import matplotlib.pyplot as plt

    n = len(panels)
    most = {k: max((len(p.get(k) or ()) for p in panels), default=0) for k in ("xticks", "yticks")}
    # the narrowest a panel may be drawn (its labelled ticks legible), and the size asked for
    margin = 0.7 + (0.6 if colorbar is not None else 0.0)  # the y label, and the colour bar beside the panels
    # Several panels that would each need the page's width for every x label (a long source sequence) stack into a
    # column taller than a screen: label every step-th tick instead, the fewest steps that put two panels in a row.
    step = 1
    wide = lambda k: max(2.2, TICK_INCHES * -(-most["xticks"] // k) + 1.2)  # noqa: E731
    while n > 1 and (ncols or 2) > 1 and panel_grid(n, wide(step), ncols, margin)[1] < 2 and step < most["xticks"]:
        step += 1
    least = (wide(step), max(2.0, TICK_INCHES * -(-most["yticks"] // step) + 1.2))  # the rows' labels thinned alike
    want = (max(panel_size[0], least[0]), max(panel_size[1], least[1]))
    nrows, ncols = panel_grid(n, least[0], ncols, margin)  # as many a row as fit at their narrowest; more rows
    scale = min(1.0, max(least[0] / want[0], (DRAWN_WIDTH - margin) / ncols / want[0]))
    size = (want[0] * scale, max(least[1], want[1] * scale))
    fig, axes = plt.subplots(
        nrows, ncols, squeeze=False, layout="constrained", figsize=(size[0] * ncols + margin, size[1] * nrows + 0.3)
    )
    for ax in axes.flat[n:]:
        ax.axis("off")
    for ax, panel in zip(axes.flat, panels):
        xticks, yticks = (
            [t if i % step == 0 else "" for i, t in enumerate(ticks)] if ticks is not None else None
            for ticks in (panel.get("xticks"), panel.get("yticks"))
        )
        heatmap(
            panel["matrix"],
            xlabel=panel.get("xlabel", ""),
            ylabel=panel.get("ylabel", ""),
            title=panel.get("title"),
            xticks=xticks,
            yticks=yticks,
            cmap=cmap,
            ax=ax,
        )
        ax.images[-1].set_clim(vmin, vmax)
    if colorbar is not None:
        fig.colorbar(axes.flat[0].images[-1], ax=list(axes.flat[:n]), label=colorbar, shrink=0.85)
    if title:
        fig.suptitle(title)
    return fig
