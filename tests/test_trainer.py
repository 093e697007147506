import dataclasses
import json
import math

import pytest
import torch

from lmcompanion import models
from lmcompanion.config import TrainConfig
from lmcompanion.errors import CheckpointError, TrainingDiverged
from lmcompanion.train import RunStore
from lmcompanion.train.trainer import make_optimizer

from conftest import tiny_run


def _records(run):
    return [json.loads(line) for line in (run.path / "metrics.jsonl").read_text().splitlines()]


def test_training_reduces_the_loss_and_writes_the_run_folder(tmp_path):
    run = RunStore(tmp_path).run(tiny_run(steps=40, eval_interval=20))
    evals = run.evals()
    assert list(evals["step"]) == [20, 40]
    uniform = math.log(run.config.model.vocab_size)  # the loss of a model that has learned nothing
    assert evals["val"].iloc[-1] < evals["val"].iloc[0] < uniform - 0.3
    assert {p.name for p in run.path.iterdir()} >= {
        "config.json",
        "env.json",
        "metrics.jsonl",
        "summary.json",
        "model.pt",
    }
    assert not (run.path / "ckpt.pt").exists()
    assert run.env["code_fingerprint"] and run.env["torch"] == torch.__version__
    assert run.summary["final"]["val"] == evals["val"].iloc[-1]


def test_a_finished_run_is_reused_not_retrained(tmp_path):
    store = RunStore(tmp_path)
    cfg = tiny_run()
    first = store.run(cfg)
    stamp = (first.path / "summary.json").stat().st_mtime_ns
    calls = []
    again = store.run(cfg, callbacks=[calls.append])
    assert again.path == first.path and not calls
    assert (again.path / "summary.json").stat().st_mtime_ns == stamp
    assert store.path(dataclasses.replace(cfg, seed=1)) != first.path


def test_an_interrupted_run_resumes_to_the_same_metrics(tmp_path):
    cfg = tiny_run(steps=12, eval_interval=4)
    cfg = dataclasses.replace(cfg, model=dataclasses.replace(cfg.model, dropout_rate=0.1))  # RNG state matters too
    whole = RunStore(tmp_path / "a").run(cfg)

    def stop_after_6(step):
        if step == 6:
            raise KeyboardInterrupt

    store = RunStore(tmp_path / "b")
    with pytest.raises(KeyboardInterrupt):
        store.run(cfg, callbacks=[stop_after_6])
    folder = store.path(cfg)
    assert (folder / "ckpt.pt").exists() and not (folder / "summary.json").exists()
    resumed = store.run(cfg)
    assert resumed.summary["resumed_from"] == 6
    assert _records(resumed) == _records(whole)
    a, b = whole.load_model().state_dict(), resumed.load_model().state_dict()
    assert all(torch.equal(a[k], b[k]) for k in a)


def test_nan_loss_stops_early_and_keeps_what_was_computed(tmp_path):
    cfg = tiny_run(steps=30, eval_interval=5, lr=1e6, warmup_steps=0)
    store = RunStore(tmp_path)
    with pytest.raises(TrainingDiverged, match=r"loss became (nan|inf).*Lower train.lr, set train.grad_clip=1.0"):
        store.run(cfg)
    folder = store.path(cfg)
    assert (folder / "metrics.jsonl").read_text() and not (folder / "summary.json").exists()
    if (folder / "ckpt.pt").exists():  # a checkpoint is kept only when its weights are finite
        state = torch.load(folder / "ckpt.pt", weights_only=True)
        assert all(torch.isfinite(t).all() for t in state["model"].values())


def test_a_corrupt_checkpoint_is_reported_with_the_fix(tmp_path):
    cfg = tiny_run()
    store = RunStore(tmp_path)
    folder = store.path(cfg)
    folder.mkdir(parents=True)
    (folder / "ckpt.pt").write_bytes(b"not a checkpoint")
    with pytest.raises(CheckpointError, match=r"cannot be read .* Delete it and run the same command again"):
        store.run(cfg)
    assert (folder / "ckpt.pt").read_bytes() == b"not a checkpoint"  # nothing is deleted behind the user's back


def test_weight_decay_applies_to_matrices_only():
    model = models.build(tiny_run().model)
    opt = make_optimizer(model, TrainConfig(weight_decay=0.1), "cpu")
    decayed, plain = opt.param_groups
    assert decayed["weight_decay"] == 0.1 and plain["weight_decay"] == 0.0
    assert all(p.dim() >= 2 for p in decayed["params"]) and all(p.dim() < 2 for p in plain["params"])
    n = sum(p.numel() for g in opt.param_groups for p in g["params"])
    assert n == model.num_params(exclude_positional=False)  # the tied matrix once


def test_the_cpu_optimizer_is_multi_tensor_and_bitwise_the_per_parameter_loop():
    """The CPU AdamW runs PyTorch's foreach loop (faster: one call per operation for all parameters) and gives the
    very weights of the per-parameter loop it replaced: the run's numbers do not move."""
    cfg = TrainConfig(weight_decay=0.1, lr=1e-2)
    torch.manual_seed(0)
    a = models.build(tiny_run().model)
    b = models.build(tiny_run().model)
    b.load_state_dict(a.state_dict())
    start = [p.detach().clone() for p in a.parameters()]
    fast = make_optimizer(a, cfg, "cpu")
    assert fast.defaults["foreach"] is True and not fast.defaults["fused"]
    loop = torch.optim.AdamW(
        [
            {**g, "params": [dict(b.named_parameters())[n] for n in names]}
            for g, names in zip(fast.param_groups, _group_names(a, fast))
        ],
        lr=cfg.lr,
        betas=(cfg.beta1, cfg.beta2),
        eps=cfg.eps,
        foreach=False,
    )
    idx = torch.randint(0, tiny_run().model.vocab_size, (4, 9))
    for _ in range(5):
        for model, opt in ((a, fast), (b, loop)):
            model(idx[:, :-1], idx[:, 1:]).loss.backward()
            opt.step()
            opt.zero_grad()
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters()))
    assert all(not torch.equal(p, q) for p, q in zip(a.parameters(), start))  # every weight moved


def _group_names(model, opt):
    names = {id(p): n for n, p in model.named_parameters()}
    return [[names[id(p)] for p in g["params"]] for g in opt.param_groups]


def test_gradient_accumulation_equals_one_big_batch(tmp_path):
    big = tiny_run(steps=3, batch_size=8, grad_accum=1, eval_interval=3)
    accum = tiny_run(steps=3, batch_size=4, grad_accum=2, eval_interval=3)
    a = RunStore(tmp_path / "a").run(big).load_model().state_dict()
    b = RunStore(tmp_path / "b").run(accum).load_model().state_dict()
    assert all(torch.allclose(a[k], b[k], atol=1e-6) for k in a)
