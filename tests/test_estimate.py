"""The book's one GPU-time estimate (lmcompanion.estimate): its parts add up, and every chapter uses it."""

import dataclasses

import pytest

from lmcompanion import estimate, experiments, formats
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
    table = mixer.compute.time_estimate("paper", [name])
    seconds = estimate.seconds(experiments.config(name, "paper", device="cpu"))
    runs = len(experiments.seeds_of(name, "paper"))
    assert table.loc[name, "runs"] == runs == 4  # an arm of a claim of equality: four seeds (experiments/mixer.py)
    assert table.loc[name, "minutes per run (estimate)"] == pytest.approx(seconds / 60, abs=0.005)
    assert table.loc[name, mixer.compute.MINUTES] == pytest.approx(runs * seconds / 60, abs=0.005)
    assert table.loc[name, mixer.compute.MINUTES.replace("minutes", "hours")] == pytest.approx(
        runs * seconds / 3600, abs=0.005
    )
    df, hours = retrieval.rerun_estimate("paper", ["retrieval/flat_d1024_c32"])
    cfg = experiments.config("retrieval/flat_d1024_c32", "paper", device="cpu")
    assert df.loc["retrieval/flat_d1024_c32", "estimated hours/run (H100)"] == formats.number(
        estimate.seconds(cfg) / 3600
    )
    assert hours == pytest.approx(3 * estimate.seconds(cfg) / 3600)


def test_every_planned_run_has_an_estimate_and_the_literal_procedure_its_own():
    """The plan's per-run minutes are the book's estimate for trainer runs, and ED-Training's own (one update per
    example) for the literal runs."""
    for run in experiments.plan("formal_ed", "paper", device="cpu"):
        assert run.minutes() > 0
        if run.procedure.name == "trainer":
            assert run.minutes() == pytest.approx(estimate.seconds(run.config) / 60)
        else:
            lit = run.settings
            assert run.config.train.max_steps != lit.T * lit.n  # the AdamW steps are not what ED-Training runs
            assert run.minutes() > estimate.RUN_OVERHEAD_S / 60


def test_the_share_of_the_peak_follows_the_micro_batch_not_the_accumulated_step():
    # the AR encoder-decoder's paper runs accumulate 16 micro-batches of about 1e12 FLOPs: 15%, not the 30% of a
    # 1e13-FLOP step
    cfg = experiments.config("ar_ed/baseline", "paper", device="cpu")
    assert cfg.train.grad_accum > 1
    one_pass = dataclasses.replace(
        cfg, train=dataclasses.replace(cfg.train, batch_size=cfg.train.batch_size * cfg.train.grad_accum, grad_accum=1)
    )
    assert one_pass.flops_per_step() == pytest.approx(cfg.flops_per_step())
    micro = cfg.flops_per_step() / cfg.train.grad_accum
    assert estimate.mfu(micro) < estimate.mfu(one_pass.flops_per_step())
    assert estimate.seconds(cfg) > estimate.seconds(one_pass)


def test_a_flop_count_is_kept_in_the_cache_by_config_training_code_and_torch(tmp_path, monkeypatch):
    """The count is read back in a later process (here: the in-memory cache cleared and the counter refused), and an
    entry that is not what a count writes is counted again and replaced; the entry's name changes with the model's
    config, training or not, the family's code and the torch version."""
    from lmcompanion import fingerprint, models
    from lmcompanion.models import base

    monkeypatch.delenv("LMC_FLOPS_DIR", raising=False)
    monkeypatch.setenv("LMC_CACHE_DIR", str(tmp_path))
    cfg = experiments.config("hourglass/vanilla", "smoke", device="cpu").model
    models.flops_per_token.cache_clear()
    counted = models.flops_per_token(cfg)
    entry = tmp_path / "flops" / f"{models.flops_key(cfg)}.json"  # LMC_FLOPS_DIR unset: in the cache folder
    assert entry.is_file() and counted > 0

    def refuse(*a, **k):
        raise AssertionError("counted again: the cache was not read")

    models.flops_per_token.cache_clear()
    monkeypatch.setattr(models, "counted_flops_per_token", refuse)
    assert models.flops_per_token(cfg) == counted
    # damaged: counted again (here by the real counter) and replaced
    monkeypatch.setattr(models, "counted_flops_per_token", base.counted_flops_per_token)
    for bad in ('{"key": "x", "flops": 1}', "not json", '{"key": "%s", "flops": -1}' % models.flops_key(cfg)):
        entry.write_text(bad)
        models.flops_per_token.cache_clear()
        assert models.flops_per_token(cfg) == counted
        assert f'"flops": {counted}' in entry.read_text()
    # LMC_FLOPS_DIR set: there (make unit shares one folder between workers whose cache folders differ)
    monkeypatch.setenv("LMC_FLOPS_DIR", str(tmp_path / "shared"))
    models.flops_per_token.cache_clear()
    assert models.flops_per_token(cfg) == counted and (tmp_path / "shared" / entry.name).is_file()
    keys = {
        models.flops_key(cfg),
        models.flops_key(cfg, training=False),
        models.flops_key(dataclasses.replace(cfg, n_head=cfg.n_head * 2)),
    }
    monkeypatch.setattr(models.torch, "__version__", "0.0")
    keys.add(models.flops_key(cfg))
    monkeypatch.undo()
    monkeypatch.setattr(fingerprint, "digest", lambda modules: "another code")
    keys.add(models.flops_key(cfg))
    assert len(keys) == 5
    models.flops_per_token.cache_clear()
