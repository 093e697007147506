"""Faults and bad inputs: each case ends with a clear message naming the fix, and nothing computed is lost or wrong.

The cases are the ones of the README's reliability table. Every test here failed on the code before the fix.
"""

import ast
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import pytest
import torch

from lmcompanion import cli, experiments, fingerprint, run, runner
from lmcompanion.config import apply_overrides
from lmcompanion.data import LMDataConfig, corpora, load_tokens
from lmcompanion.errors import CheckpointError, ConfigError, DataError, TrainingDiverged
from lmcompanion.train import RunStore, checkpoint, trainer

from conftest import REPO, SHARED_DATA, tiny_run


def _records(r):
    return [json.loads(line) for line in (r.path / "metrics.jsonl").read_text().splitlines()]


# --- interrupts ---------------------------------------------------------------------------------------------------


def test_a_second_ctrl_c_inside_an_optimizer_step_never_splits_it(tmp_path, monkeypatch):
    """Two SIGINTs 'between' the two halves of an AdamW step (its two parameter groups): the step must complete
    before the run stops, so the checkpoint holds one step for every tensor and the resumed run equals an
    uninterrupted one. (Before the fix the interrupt landed between the halves: step counters {k, k+1}.)"""
    cfg = tiny_run(steps=12, ckpt_interval=4)
    whole = RunStore(tmp_path / "a").run(cfg)
    original = torch.optim.AdamW.step
    calls = {"n": 0}

    def split_step(self, *args, **kwargs):
        calls["n"] += 1
        groups = self.param_groups
        try:
            self.param_groups = groups[:1]
            original(self)
            if calls["n"] == 7:
                signal.raise_signal(signal.SIGINT)
                signal.raise_signal(signal.SIGINT)
            self.param_groups = groups[1:]
            original(self)
        finally:
            self.param_groups = groups

    store = RunStore(tmp_path / "b")
    monkeypatch.setattr(torch.optim.AdamW, "step", split_step)
    with pytest.raises(KeyboardInterrupt):
        store.run(cfg)
    monkeypatch.setattr(torch.optim.AdamW, "step", original)
    state = torch.load(store.path(cfg) / "ckpt.pt", weights_only=True)
    assert state["step"] == 7
    counters = {float(s["step"]) for s in state["optimizer"]["state"].values()}
    assert counters == {7.0}, f"the checkpoint mixes tensors of several steps: {counters}"
    resumed = store.run(cfg)
    assert resumed.summary["resumed_from"] == 7
    assert _records(resumed) == _records(whole)
    assert not list(store.path(cfg).glob("*.tmp*")), "a temporary checkpoint was left behind"


def test_an_interrupt_during_evaluation_is_evaluated_again_on_resume(tmp_path, monkeypatch):
    cfg = tiny_run(steps=12, eval_interval=4, ckpt_interval=4)
    whole = RunStore(tmp_path / "a").run(cfg)
    original = trainer.evaluate
    calls = {"n": 0}

    def interrupted(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 2:  # the evaluation at step 8, after step 8's update
            signal.raise_signal(signal.SIGINT)
            signal.raise_signal(signal.SIGINT)
        return original(*args, **kwargs)

    store = RunStore(tmp_path / "b")
    monkeypatch.setattr(trainer, "evaluate", interrupted)
    with pytest.raises(KeyboardInterrupt):
        store.run(cfg)
    monkeypatch.setattr(trainer, "evaluate", original)
    assert torch.load(store.path(cfg) / "ckpt.pt", weights_only=True)["step"] == 8
    assert _records(store.run(cfg)) == _records(whole)


def test_a_ctrl_c_from_outside_resumes_byte_identical(tmp_path):
    """A real process, interrupted with SIGINT twice, then run again with the same command."""
    env = {**os.environ, "LMC_RUNS_DIR": str(tmp_path / "runs"), "LMC_PROGRESS": "0", "OMP_NUM_THREADS": "1"}
    cmd = [sys.executable, "-m", "lmcompanion", "train", "ar_ed/baseline", "--profile", "smoke",
           "--set", "train.max_steps=200", "--set", "train.ckpt_interval=10"]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 120
    while time.time() < deadline and not list((tmp_path / "runs").glob("*/ckpt.pt")):
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    time.sleep(0.001)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert "Traceback" not in err and "resume" in err
    assert not list((tmp_path / "runs").glob("*/*.tmp*"))
    again = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr
    env2 = {**env, "LMC_RUNS_DIR": str(tmp_path / "clean")}
    clean = subprocess.run(cmd, env=env2, capture_output=True, text=True, timeout=300)
    a = next((tmp_path / "runs").glob("*/metrics.jsonl")).read_text()
    b = next((tmp_path / "clean").glob("*/metrics.jsonl")).read_text()
    assert a == b


# --- data identity -------------------------------------------------------------------------------------------------


@pytest.fixture
def copied_data(tmp_path):
    """A private copy of the offline corpora (shakespeare only), which the tests may damage."""
    if not (SHARED_DATA / "tinyshakespeare").is_dir():
        pytest.skip("no offline corpora in ../shared/data")
    root = tmp_path / "data"
    (root / "tinyshakespeare").mkdir(parents=True)
    shutil.copy(SHARED_DATA / "tinyshakespeare" / "input.txt", root / "tinyshakespeare" / "input.txt")
    return root


def test_a_cache_or_run_made_from_other_data_is_never_reused(copied_data, monkeypatch, tmp_path):
    cfg = LMDataConfig(corpus="shakespeare_char", tokenizer="char")
    truncated = tmp_path / "truncated"
    (truncated / "tinyshakespeare").mkdir(parents=True)
    text = (copied_data / "tinyshakespeare" / "input.txt").read_text()
    (truncated / "tinyshakespeare" / "input.txt").write_text(text[: len(text) // 3])
    monkeypatch.setenv("LMC_DATA_DIR", str(truncated))
    short = load_tokens(cfg)
    run_cfg = experiments.config("ar_ed/baseline", "smoke", overrides={"data.corpus": "shakespeare_char"})
    run_cfg = apply_overrides(run_cfg, {"model.vocab_size": short.vocab_size})
    key_short = run.spec(run_cfg).key
    monkeypatch.setenv("LMC_DATA_DIR", str(copied_data))
    full = load_tokens(cfg)
    assert full.splits["train"].size > 2 * short.splits["train"].size
    assert full.fingerprint != short.fingerprint
    assert run.spec(run_cfg).key != key_short  # the run store cannot return the run trained on the short copy


def test_an_empty_corpus_stops_early_and_leaves_no_cache(copied_data, monkeypatch):
    path = copied_data / "tinyshakespeare" / "input.txt"
    good = path.read_text()
    path.write_text("")
    monkeypatch.setenv("LMC_DATA_DIR", str(copied_data))
    cfg = LMDataConfig(corpus="shakespeare_char", tokenizer="char")
    with pytest.raises(DataError, match="is empty"):
        load_tokens(cfg)
    path.write_text(good)  # fixed: works at once, no stale cache in the way
    assert load_tokens(cfg).vocab_size == 65


@pytest.mark.parametrize("content, message", [(b"\xff\xfe\xfa not utf-8", "is not UTF-8"),
                                              (b"a\x00b\x00" * 100, "NUL bytes"), (b"a" * 5000, "single distinct")])
def test_a_corpus_that_is_not_text_stops_early(copied_data, monkeypatch, content, message):
    (copied_data / "tinyshakespeare" / "input.txt").write_bytes(content)
    monkeypatch.setenv("LMC_DATA_DIR", str(copied_data))
    with pytest.raises(DataError, match=message):
        load_tokens(LMDataConfig(corpus="shakespeare_char", tokenizer="char"))


def test_a_damaged_token_cache_is_rebuilt():
    cfg = LMDataConfig(corpus="synthetic", tokenizer="char")
    first = load_tokens(cfg)
    path = first.splits["train"].filename
    del first
    with open(path, "r+b") as f:
        f.truncate(100)
    assert load_tokens(cfg).splits["train"].size > 1000


def test_the_run_records_the_data_fingerprint(tmp_path):
    r = RunStore(tmp_path).run(tiny_run(steps=2))
    assert r.env["data_fingerprint"].startswith("generated:") and r.env["code_modules"]


# --- damaged runs --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("damage", ["delete", "truncate", "foreign"])
def test_a_finished_run_with_a_damaged_model_is_retrained(tmp_path, damage, capsys):
    store = RunStore(tmp_path)
    cfg = tiny_run(steps=4)
    done = store.run(cfg)
    weights = done.path / "model.pt"
    if damage == "delete":
        weights.unlink()
    elif damage == "truncate":
        weights.write_bytes(weights.read_bytes()[:100])
    else:  # a model.pt of another run of the same shape
        other = store.run(tiny_run(steps=4, seed=1))
        shutil.copy(other.path / "model.pt", weights)
    with pytest.raises(CheckpointError, match="lmcompanion retrain"):
        done.load_model()  # what a notebook would call: the message names the one command that repairs it
    again = store.run(cfg)  # what re-executing the notebook does
    assert "retraining" in capsys.readouterr().err
    assert again.finished and again.load_model() is not None


def test_a_partial_metrics_line_or_corrupt_summary_makes_the_run_unfinished(tmp_path):
    store = RunStore(tmp_path)
    a, b = store.run(tiny_run(steps=3)), store.run(tiny_run(steps=3, seed=1))
    with open(a.path / "metrics.jsonl", "a") as f:
        f.write('{"step": 9, "lo')
    (b.path / "summary.json").write_text("{not json")
    assert store.runs() == []  # one bad run does not break the listing
    assert {r.path for r, _ in store.damaged()} == {a.path, b.path}
    assert store.run(tiny_run(steps=3)).finished


def test_a_deleted_metrics_file_is_restored_from_the_checkpoint(tmp_path):
    cfg = tiny_run(steps=12, eval_interval=2, ckpt_interval=6)
    whole = RunStore(tmp_path / "a").run(cfg)
    store = RunStore(tmp_path / "b")
    with pytest.raises(KeyboardInterrupt):
        store.run(cfg, callbacks=[lambda step: (_ for _ in ()).throw(KeyboardInterrupt) if step == 6 else None])
    (store.path(cfg) / "metrics.jsonl").unlink()
    assert _records(store.run(cfg)) == _records(whole)


# --- configs -------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("order", [0, 1, 2])
def test_overrides_that_only_make_sense_together_can_be_given_in_any_order(order):
    items = [("data.tokenizer", "bpe"), ("data.vocab_size", 5000), ("model.vocab_size", 5000)]
    items = items[order:] + items[:order]
    cfg = experiments.config("ar_ed/baseline", "smoke", overrides=dict(items))
    assert cfg.data.vocab_size == cfg.model.vocab_size == 5000


def test_non_finite_numbers_are_rejected():
    with pytest.raises(ConfigError, match="finite"):
        experiments.config("ar_ed/baseline", "smoke", overrides={"train.lr": float("1e400")})


def test_device_cuda_without_a_gpu_is_a_message_not_a_traceback(capsys):
    if torch.cuda.is_available():
        pytest.skip("a GPU is visible")
    assert cli.main(["train", "ar_ed/baseline", "--profile", "smoke", "--set", "device=cuda"]) == 2
    err = capsys.readouterr().err
    assert "no CUDA GPU is visible" in err and "Traceback" not in err


def test_divergence_never_keeps_a_checkpoint_of_non_finite_weights(tmp_path):
    cfg = tiny_run(steps=30, eval_interval=5, lr=1e30, warmup_steps=0)
    store = RunStore(tmp_path)
    with pytest.raises(TrainingDiverged) as err:
        store.run(cfg)
    ckpt = store.path(cfg) / "ckpt.pt"
    if ckpt.exists():
        state = torch.load(ckpt, weights_only=True)
        assert all(torch.isfinite(t).all() for t in state["model"].values())
    else:
        assert "no checkpoint was written" in str(err.value)


def test_divergence_with_finite_weights_keeps_them(tmp_path, monkeypatch):
    original = trainer.forward_backward
    calls = {"n": 0}

    def nan_at_step_5(s, batches):
        calls["n"] += 1
        logged, names, tokens = original(s, batches)
        return ([float("nan")] + logged[1:] if calls["n"] == 5 else logged), names, tokens

    monkeypatch.setattr(trainer, "forward_backward", nan_at_step_5)
    store = RunStore(tmp_path)
    cfg = tiny_run(steps=10)
    with pytest.raises(TrainingDiverged, match=r"last good weights \(step 4\)"):
        store.run(cfg)
    assert torch.load(store.path(cfg) / "ckpt.pt", weights_only=True)["step"] == 4


# --- the store and the filesystem ----------------------------------------------------------------------------------


def test_a_store_that_cannot_be_written_names_the_fix(tmp_path):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    with pytest.raises(CheckpointError, match="LMC_RUNS_DIR"):
        RunStore(blocker / "runs").run(tiny_run(steps=2))


def test_a_full_disk_leaves_no_temporary_checkpoint(tmp_path, monkeypatch):
    def full(obj, f, *args, **kwargs):
        f.write(b"partial")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(torch, "save", full)
    with pytest.raises(CheckpointError, match="No space left on device.*free disk space"):
        checkpoint.save({"x": torch.zeros(2)}, tmp_path / "ckpt.pt")
    assert list(tmp_path.iterdir()) == []


def test_a_run_waiting_for_another_process_says_so(tmp_path, capsys, monkeypatch):
    import fcntl

    monkeypatch.setenv("LMC_PROGRESS", "1")  # outside a notebook (notebooks keep stderr clean)
    store = RunStore(tmp_path)
    cfg = tiny_run(steps=2)
    folder = store.path(cfg)
    folder.mkdir(parents=True)
    holder = open(folder / ".lock", "w")
    fcntl.flock(holder, fcntl.LOCK_EX)
    threading.Timer(1.0, lambda: (fcntl.flock(holder, fcntl.LOCK_UN), holder.close())).start()
    store.run(cfg)
    assert "waiting: another process is training this run" in capsys.readouterr().err


def test_a_run_waits_for_a_second_process_holding_its_lock(tmp_path, capsys, monkeypatch):
    """The same with a real second process taking the run's lock through filelock, as the store does on every
    platform (the store used fcntl, which cannot be imported on Windows)."""
    monkeypatch.setenv("LMC_PROGRESS", "1")
    store = RunStore(tmp_path)
    cfg = tiny_run(steps=2)
    folder = store.path(cfg)
    folder.mkdir(parents=True)
    hold = "import filelock, sys, time\nwith filelock.FileLock(sys.argv[1]):\n    print('held', flush=True)\n    time.sleep(1.5)\n"
    holder = subprocess.Popen([sys.executable, "-c", hold, str(folder / ".lock")], stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "held"
    started = time.monotonic()
    assert store.run(cfg).finished
    assert holder.wait(timeout=60) == 0 and time.monotonic() - started > 0.5
    assert "waiting: another process is training this run" in capsys.readouterr().err


# --- notebooks and the command line --------------------------------------------------------------------------------


def test_a_syntax_error_in_the_parameters_cell_names_the_line(tmp_path):
    src = tmp_path / "nb.py"
    src.write_text('# %% tags=["parameters"]\nprofile = "cpu"\nseed = = 1\n\n# %%\nprint(seed)\n')
    with pytest.raises(ConfigError, match="syntax error on its line 2"):
        runner.check_parameters(runner.read_source(src), {})


@pytest.mark.parametrize("argv, message", [
    (["list", "--chapter", "ar_edd"], "did you mean 'ar_ed'"),
    (["bench", "ar_ed/baseline", "--profile", "smoke", "--steps", "0"], "--steps >= 1"),
    (["train", "ar_ed/basline", "--profile", "smoke"], "did you mean 'ar_ed/baseline'"),
])
def test_bad_command_lines_get_a_message(argv, message, capsys):
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_lmc_progress_0_silences_the_command_line(monkeypatch, capsys):
    monkeypatch.setenv("LMC_PROGRESS", "0")
    assert cli.main(["train", "ar_ed/baseline", "--profile", "smoke", "--set", "train.max_steps=3"]) == 0
    assert "step/s" not in capsys.readouterr().err


@pytest.mark.parametrize("name, value, given, expected", [
    ("overrides", "[1, 2]", "a list ([1, 2])", "a dict"),  # failed in the notebook's third cell: "dictionary update sequence"
    ("seed", "0.5", "a float (0.5)", "an int"),
    ("profile", "3", "an int (3)", "a str"),
    ("n_seeds", "{'a': 1}", "a dict ({'a': 1})", "None or one value"),
])
def test_a_parameter_of_the_wrong_type_is_named_before_anything_runs(tmp_path, capsys, name, value, given, expected):
    src = REPO / "notebooks" / "prologue" / "baseline.py"
    out = tmp_path / "baseline.ipynb"
    assert cli.main(["run-notebook", str(src), "-o", str(out), "-p", name, value]) == 2
    err = capsys.readouterr().err
    assert f"parameter {name!r} is given {given} but takes {expected}" in err and "Traceback" not in err
    assert list(tmp_path.iterdir()) == []  # no kernel started, no partial notebook
    with pytest.raises(ConfigError, match=f"parameter {name!r} is given {re.escape(given)}"):  # the Python API too
        runner.run_notebook(src, out, params={name: ast.literal_eval(value)})
    assert list(tmp_path.iterdir()) == []



def test_a_cell_past_the_per_cell_timeout_is_stopped_and_named(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("LMC_CELL_TIMEOUT", raising=False)
    src = tmp_path / "slow.py"
    src.write_text('# %% tags=["parameters"]\nprofile = "cpu"\n\n# %%\nimport time\ntime.sleep(60)\n')
    started = time.monotonic()
    assert cli.main(["run-notebook", str(src), "--timeout", "2"]) == 2
    err = capsys.readouterr().err
    assert "cell 1 ran longer than the per-cell timeout of 2 s" in err and "Traceback" not in err
    assert (tmp_path / "slow.failed.ipynb").exists() and not (tmp_path / "slow.ipynb").exists()
    assert time.monotonic() - started < 50 and "LMC_CELL_TIMEOUT" not in os.environ  # this command's limit only


def test_a_kernel_that_dies_names_the_cell_and_keeps_the_partial_notebook(tmp_path, capsys):
    src = tmp_path / "die.py"
    src.write_text('# %% tags=["parameters"]\nprofile = "cpu"\n\n# %%\nprint("before")\n\n# %%\nimport os\nos._exit(3)\n')
    assert cli.main(["run-notebook", str(src)]) == 2
    err = capsys.readouterr().err
    assert "the kernel died in cell 2" in err and "Traceback" not in err
    assert (tmp_path / "die.failed.ipynb").exists() and not (tmp_path / "die.ipynb").exists()
