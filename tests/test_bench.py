"""Two runs' training steps timed side by side (lmcompanion.bench.side_by_side): that it runs and what it returns;
nothing here asserts a speed (the notebooks measure)."""

import pytest

from lmcompanion import bench, experiments
from lmcompanion.errors import ConfigError


def test_side_by_side_times_both_arms_in_every_round():
    a, b = (experiments.planned(n, "smoke", 0, device="cpu") for n in ("ar_ed/mse_pos_sub", "ar_ed/baseline"))
    t = bench.side_by_side(a, b, steps=1, warmup=0, rounds=3)
    assert t.names == ("ar_ed/mse_pos_sub", "ar_ed/baseline") and t.rounds == 3 and t.steps == 1
    assert all(len(s) == 3 and all(x > 0 for x in s) for s in t.seconds)
    assert t.ratios() == pytest.approx([x / y for x, y in zip(t.per_step(a.name), t.per_step(b.name))])
    table = t.table()
    assert list(table.index) == [1, 2, 3, "mean"] and "ratio" in table.columns


def test_side_by_side_refuses_empty_rounds():
    a = experiments.planned("ar_ed/baseline", "smoke", 0, device="cpu")
    with pytest.raises(ConfigError, match="rounds"):
        bench.side_by_side(a, a, rounds=0)
