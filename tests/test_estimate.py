"""The book's one GPU-time estimate (lmcompanion.estimate): its parts add up, and every chapter uses it."""

import dataclasses

import pytest

from lmcompanion import estimate, experiments
from lmcompanion.chapters import mixer, retrieval


def test_the_assumed_utilisation_grows_with_the_step():
    assert [estimate.mfu(f) for f in (1e9, 1e11, 5e11, 1e12, 1e14)] == [0.02, 0.05, 0.05, 0.15, 0.30]


def test_each_training_step_adds_its_flops_at_the_assumed_share_of_the_peak_plus_the_step_overhead():
    cfg = experiments.config("hourglass/vanilla", "paper", device="cpu")
    n = cfg.train.max_steps
    few = dataclasses.replace(cfg, train=dataclasses.replace(cfg.train, max_steps=100, eval_interval=10 * n))
    more = dataclasses.replace(few, train=dataclasses.replace(few.train, max_steps=300))
    step = few.flops_per_step()
    per_step = step / (estimate.H100_BF16 * estimate.mfu(step / cfg.train.grad_accum)) + estimate.STEP_OVERHEAD_S
    assert estimate.seconds(more) - estimate.seconds(few) == pytest.approx(200 * per_step)
    # evaluations: both splits, eval_batches each, at every eval_interval (here one evaluation, at the end)
    fewer_evals = dataclasses.replace(few, train=dataclasses.replace(few.train, eval_batches=1))
    assert estimate.seconds(few) > estimate.seconds(fewer_evals) > 100 * per_step + estimate.RUN_OVERHEAD_S


def test_the_chapters_estimates_are_the_books_one_estimate():
    name = "mixer/flat_d1024"
    table = mixer.compute.time_estimate("paper", 2, [name])
    seconds = estimate.seconds(experiments.config(name, "paper", device="cpu"))
    assert table.loc[name, "minutes per run (estimate)"] == pytest.approx(seconds / 60, abs=0.005)
    assert table.loc[name, "minutes for 2 seeds (estimate)"] == pytest.approx(2 * seconds / 60, abs=0.005)
    assert table.loc[name, "hours for 2 seeds (estimate)"] == pytest.approx(2 * seconds / 3600, abs=0.005)
    df, hours = retrieval.rerun_estimate("paper", 1, ["retrieval/flat_d1024_c32"])
    cfg = experiments.config("retrieval/flat_d1024_c32", "paper", device="cpu")
    assert df.loc["retrieval/flat_d1024_c32", "estimated hours/run (H100)"] == f"{estimate.seconds(cfg) / 3600:.1f}"


def test_the_share_of_the_peak_follows_the_micro_batch_not_the_accumulated_step():
    # the AR encoder-decoder's paper runs accumulate 16 micro-batches of about 1e12 FLOPs: 15%, not the 30% of a
    # 1e13-FLOP step
    cfg = experiments.config("ar_ed/baseline", "paper", device="cpu")
    assert cfg.train.grad_accum > 1
    one_pass = dataclasses.replace(cfg, train=dataclasses.replace(
        cfg.train, batch_size=cfg.train.batch_size * cfg.train.grad_accum, grad_accum=1))
    assert one_pass.flops_per_step() == pytest.approx(cfg.flops_per_step())
    micro = cfg.flops_per_step() / cfg.train.grad_accum
    assert estimate.mfu(micro) < estimate.mfu(one_pass.flops_per_step())
    assert estimate.seconds(cfg) > estimate.seconds(one_pass)
