"""Shared fixtures: every test session gets its own run store and cache, so tests never touch runs/ or .cache/."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO.parent / "shared" / "data"


@pytest.fixture(scope="session", autouse=True)
def _isolated_dirs(tmp_path_factory):
    old = {k: os.environ.get(k) for k in ("LMC_RUNS_DIR", "LMC_CACHE_DIR", "LMC_PROGRESS")}
    os.environ["LMC_RUNS_DIR"] = str(tmp_path_factory.mktemp("runs"))
    os.environ["LMC_CACHE_DIR"] = str(tmp_path_factory.mktemp("cache"))
    os.environ["LMC_PROGRESS"] = "0"
    yield
    for k, v in old.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


@pytest.fixture
def data_dir():
    """The offline corpora (../shared/data or $LMC_DATA_DIR); tests that need them skip without them."""
    path = Path(os.environ.get("LMC_DATA_DIR", SHARED_DATA))
    if not (path / "wikipedia").is_dir():
        pytest.skip("no offline corpora: set LMC_DATA_DIR (e.g. ../shared/data)")
    return path


def tiny_run(name="test/tiny", *, steps=12, seed=0, **train_kw):
    """A run config that trains in about a second on the generated corpus."""
    from lmcompanion.config import TrainConfig
    from lmcompanion.run import RunConfig
    from lmcompanion.data import LMDataConfig, vocab_size
    from lmcompanion.models.baseline import BaselineConfig

    data = LMDataConfig(corpus="synthetic", tokenizer="char")
    model = BaselineConfig(vocab_size=vocab_size(data), context_size=16, n_embed=16, n_head=2, n_layer=2)
    kw = dict(batch_size=4, max_steps=steps, eval_interval=4, eval_batches=2, log_interval=1, lr=3e-3,
              warmup_steps=2, deterministic=True)
    kw.update(train_kw)
    return RunConfig(name=name, model=model, data=data, train=TrainConfig(**kw), seed=seed)
