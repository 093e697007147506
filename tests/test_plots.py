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
