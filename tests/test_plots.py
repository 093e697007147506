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
    fig = plots.loss_curves({"a": [Finished(0), Finished(0.1)], "b": [Finished(0.2)]}, reference=("chance", 3.4),
                            ylabel="cross-entropy (nats per query)")
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
    fig = plots.curves(frames, "x", {"val": "loss", "gap": "gap"}, xlabel="x", ylabel="y",
                       reference=("unigram loss", {"val": 1.2}))
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
    assert many.get_size_inches()[0] <= plots.MAX_WIDTH  # wrapped to more rows, not shrunk to the page
