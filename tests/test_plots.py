"""The book's figure style (lmcompanion.plots): legends off the data, reference lines, labels."""

import matplotlib

matplotlib.use("Agg")

import pandas as pd  # noqa: E402

from lmcompanion import plots  # noqa: E402


class Finished:
    def __init__(self, shift):
        self._ev = pd.DataFrame({"step": [1, 2, 3], "train": [3.0 + shift, 2.5, 2.0], "val": [3.1 + shift, 2.6, 2.1]})

    def evals(self):
        return self._ev


def test_the_legend_sits_below_the_panels_with_the_reference_line_and_the_y_label_given():
    fig = plots.loss_curves(
        {"a": [Finished(0), Finished(0.1)], "b": [Finished(0.2)]},
        reference=("chance", 3.4),
        ylabel="cross-entropy (nats per query)",
    )
    assert all(ax.get_legend() is None for ax in fig.axes)  # no legend over the curves
    (legend,) = fig.legends
    assert [t.get_text() for t in legend.get_texts()] == ["a", "b", "chance"]
    fig.canvas.draw()
    box, panels = legend.get_window_extent(), [ax.get_window_extent() for ax in fig.axes]
    assert box.y1 <= min(p.y0 for p in panels)  # below every panel
    assert fig.axes[0].get_ylabel() == "cross-entropy (nats per query)"
    assert any(line.get_linestyle() == "--" and line.get_ydata()[0] == 3.4 for line in fig.axes[-1].lines)


def test_curves_put_their_legend_below_too():
    frames = {"a": [pd.DataFrame({"x": [1, 2], "y": [1.0, 0.5]})]}
    fig = plots.curves(frames, "x", {"y": "panel"}, xlabel="x", ylabel="y")
    assert fig.axes[0].get_legend() is None and len(fig.legends) == 1


def test_a_reference_per_split_draws_each_panel_its_own_line_and_none_where_it_has_no_value():
    fig = plots.loss_curves({"a": [Finished(0)]}, reference=("unigram loss", {"train": 3.3, "val": 3.4}))
    dashed = [[line.get_ydata()[0] for line in ax.lines if line.get_linestyle() == "--"] for ax in fig.axes]
    assert dashed == [[3.3], [3.4]]
    frames = {"a": [pd.DataFrame({"x": [1, 2], "val": [1.0, 0.5], "gap": [0.1, 0.0]})]}
    fig = plots.curves(
        frames, "x", {"val": "loss", "gap": "gap"}, xlabel="x", ylabel="y", reference=("unigram loss", {"val": 1.2})
    )
    dashed = [[line.get_ydata()[0] for line in ax.lines if line.get_linestyle() == "--"] for ax in fig.axes]
    assert dashed == [[1.2], []]


def test_labelled_ticks_are_legible_and_panels_grow_to_fit_them():
    import numpy as np

    tokens = [f"t{i}" for i in range(30)]
    fig = plots.heatmaps([{"matrix": np.eye(30), "xlabel": "x", "ylabel": "y", "xticks": tokens, "yticks": tokens}])
    ax = fig.axes[0]
    assert all(t.get_fontsize() >= 9 for t in ax.get_xticklabels() + ax.get_yticklabels())
    assert fig.get_size_inches()[0] >= 30 * plots.TICK_INCHES
    many = plots.heatmaps([{"matrix": np.eye(30), "xlabel": "x", "ylabel": "y", "xticks": tokens}] * 4, ncols=4)
    panels = [ax for ax in many.axes if ax.images]
    rows = {ax.get_subplotspec().rowspan.start for ax in panels}
    assert len(rows) == 2  # a grid of two a row, not a column of four taller than a screen
    labels = [t.get_text() for t in panels[0].get_xticklabels()]
    assert len(labels) == 30 and labels[0] == "t0" and "" in labels  # every tick kept, every k-th labelled
    width = panels[0].get_position().width * many.get_size_inches()[0]
    assert sum(bool(t) for t in labels) * plots.TICK_INCHES <= width  # the labels shown have their room
    assert all(t.get_fontsize() >= 9 for t in panels[0].get_xticklabels())  # legible, not shrunk


def _displayed_width(fig) -> float:
    """The width in CSS pixels the book shows a figure at: the width its notebook output records."""
    data, metadata = plots.retina_png(fig)
    assert set(metadata) == {"width"}  # no height: the browser keeps the file's aspect ratio at every width
    return metadata["width"]


def test_no_figure_of_several_panels_is_wider_than_the_page():
    """Panels that do not fit side by side in the text column wrap to more rows (no figure is shrunk to the page,
    its text with it), and a legend of long labels takes fewer columns instead of widening the figure."""
    import numpy as np

    plots.style()
    page = plots.PAGE_WIDTH * plots.DPI + 2  # + rounding
    long = {f"a rather long arm label number {i}, d_model=512": [Finished(0), Finished(0.1)] for i in range(5)}
    figs = {
        "loss curves": plots.loss_curves(long, reference=("unigram loss", 3.3)),
        "three splits": plots.loss_curves(long, splits=("train", "val", "val")),
        "sweep": plots.sweep([0, 1], {k: [[1, 2], [2, 3]] for k in "abc"}, xlabel="x", ylabel="y"),
        "curves": plots.curves(
            {"a": [pd.DataFrame({"x": [1, 2], "y": [1.0, 0.5]})]},
            "x",
            {"y": "one", "z": "two", "w": "three"},
            xlabel="x",
            ylabel="y",
        ),
        "heatmaps": plots.heatmaps(
            [{"matrix": np.eye(12), "xlabel": "x", "ylabel": "y", "xticks": list("abcdefghijkl")}] * 4,
            colorbar="weight",
        ),
    }
    wide = {name: _displayed_width(fig) for name, fig in figs.items() if _displayed_width(fig) > page}
    assert not wide, f"wider than the page ({page:.0f} px): {wide}"
    assert len({ax.get_subplotspec().rowspan.start for ax in figs["sweep"].axes if ax.get_visible()}) == 2
    (legend,) = figs["loss curves"].legends
    assert legend._ncols < 3  # long labels: fewer a row
    longest = {"a label far longer than the figure is wide, " * 3: [Finished(0)], "b": [Finished(0.1)]}
    fig = plots.loss_curves(longest)
    assert _displayed_width(fig) <= page  # wrapped onto more lines
    assert "\n" in fig.legends[0].get_texts()[0].get_text()


def test_a_figure_records_only_its_width():
    fig = plots.loss_curves({"a": [Finished(0)]})
    data, metadata = plots.retina_png(fig)
    import struct

    w, h = struct.unpack(">II", data[16:24])  # the PNG's IHDR: width and height in pixels (twice the density)
    assert metadata == {"width": w // 2} and h > 0
