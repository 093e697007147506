import dataclasses

import pytest

from lmcompanion.config import PROFILES, TrainConfig, apply_overrides, check_profile, parse_overrides
from lmcompanion.run import RunConfig
from lmcompanion.errors import ConfigError
from lmcompanion.models.baseline import BaselineConfig

from conftest import tiny_run


def test_profiles_are_the_four_documented_ones():
    assert list(PROFILES) == ["smoke", "cpu", "gpu", "paper"]
    with pytest.raises(ConfigError, match=r"unknown profile 'gpx'.*did you mean 'gpu'.*smoke, cpu, gpu, paper"):
        check_profile("gpx")


def test_field_types_are_checked_at_construction():
    with pytest.raises(ConfigError, match=r"TrainConfig.batch_size must be int, got '8'"):
        TrainConfig(batch_size="8")
    with pytest.raises(ConfigError, match=r"schedule must be 'cosine' \| 'linear' \| 'linear_floor' \| 'constant'"):
        TrainConfig(schedule="cosin")
    assert TrainConfig(lr=1).lr == 1.0 and isinstance(TrainConfig(lr=1).lr, float)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"batch_size": 0}, "batch_size must be >= 1"),
        ({"lr": 1e-3, "min_lr": 1e-2}, "min_lr must lie in"),
        ({"warmup_steps": 10, "decay_steps": 5}, "decay_steps .* must exceed"),
        ({"grad_clip": -1.0}, "grad_clip must be >= 0"),
    ],
)
def test_impossible_train_settings_are_rejected(kwargs, message):
    with pytest.raises(ConfigError, match=message):
        TrainConfig(**kwargs)


def test_model_validation_names_the_fix():
    with pytest.raises(ConfigError, match=r"n_embed \(100\) must be divisible by model.n_head \(3\)"):
        BaselineConfig(n_embed=100, n_head=3)


def test_overrides_parse_coerce_and_validate():
    cfg = tiny_run()
    out = apply_overrides(cfg, parse_overrides(["train.lr=1e-2", "model.n_layer=3", "train.compile=true", "seed=4"]))
    assert (out.train.lr, out.model.n_layer, out.train.compile, out.seed) == (1e-2, 3, True, 4)
    with pytest.raises(ConfigError, match=r"unknown config key 'train.lrr' \(did you mean 'train.lr'\?\); valid keys:"):
        apply_overrides(cfg, {"train.lrr": 1})
    with pytest.raises(ConfigError, match="'train' is a group of settings"):
        apply_overrides(cfg, {"train": 1})
    with pytest.raises(ConfigError, match="n_layer must be int"):
        apply_overrides(cfg, {"model.n_layer": "deep"})
    with pytest.raises(ConfigError, match="must look like key=value"):
        parse_overrides(["train.lr"])


def test_run_config_round_trips_through_json_and_hashes_stably():
    cfg = tiny_run()
    again = RunConfig.from_dict(cfg.to_dict())
    assert again == cfg and again.hash() == cfg.hash()
    assert dataclasses.replace(cfg, seed=1).hash() != cfg.hash()


def test_vocab_mismatch_between_model_and_tokenizer_is_caught():
    from lmcompanion.data import LMDataConfig

    with pytest.raises(ConfigError, match=r"model.vocab_size=100 but the gpt2 tokenizer has 50257"):
        RunConfig(
            name="x",
            model=BaselineConfig(vocab_size=100),
            data=LMDataConfig(corpus="wikipedia", tokenizer="gpt2"),
            train=TrainConfig(),
        )
