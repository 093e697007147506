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


def test_cpu_book_reports_every_phase_of_a_chapters_run_against_another_revision():
    """The CPU book's benchmark at smoke: the code of HEAD (imported beside this one) and this code, one row each,
    with every phase timed, the peak measured, and the ratio of their times; no speed is asserted."""
    rows = bench.cpu_book(
        ["ar_ed", "mixer/flat_d512"], profile="smoke", against="HEAD", steps=1, warmup=0, rounds=2, threads=1
    )
    assert [(r["chapter"], r["run"], r["code"]) for r in rows] == [
        ("ar_ed", "ar_ed/baseline", "HEAD"),
        ("ar_ed", "ar_ed/baseline", "this"),
        ("mixer", "mixer/flat_d512", "HEAD"),
        ("mixer", "mixer/flat_d512", "this"),
    ]
    for r in rows:
        assert all(r[f"{p} ms"] > 0 for p in bench.PHASES)
        assert r["step ms (with eval.)"] == pytest.approx(sum(r[f"{p} ms"] for p in bench.PHASES), rel=0.05, abs=0.05)
        assert r["tokens/s"] > 0 and r["GFLOP/s"] > 0 and r["peak GFLOP/s"] > 0 and r["threads"] == 1
        assert r["clock"] == "cpu"  # one thread: its CPU time
        assert r["% of peak"] == pytest.approx(100 * r["GFLOP/s"] / r["peak GFLOP/s"], rel=0.05, abs=0.15)  # rounded
        assert "HEAD / this" in r


def test_cpu_book_representative_is_a_trainer_run_of_the_chapter():
    assert bench.representative("ar_ed", "smoke") == "ar_ed/baseline"
    assert bench.representative("prologue", "smoke") == "ar_ed/baseline"  # the prologue reads the AR chapter's runs
    with pytest.raises(ConfigError, match="revision"):
        bench.load_revision("no-such-revision-xyz")
    with pytest.raises(ConfigError, match="clock"):
        bench.cpu_book(["ar_ed"], profile="smoke", clock="sundial")
