"""Faults and bad inputs: each case ends with a clear message naming the fix, and nothing computed is lost or wrong.

The cases are those of the reliability table (docs/reliability.md). Every test here failed on the code before the fix.
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
from pathlib import Path

import pytest
import torch

from lmcompanion import cli, experiments, run, runner
from lmcompanion.config import apply_overrides
from lmcompanion.data import LMDataConfig, load_tokens
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
    cmd = [
        sys.executable,
        "-m",
        "lmcompanion",
        "train",
        "ar_ed/baseline",
        "--profile",
        "smoke",
        "--set",
        "train.max_steps=200",
        "--set",
        "train.ckpt_interval=10",
    ]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 120
    while time.time() < deadline and proc.poll() is None and not list((tmp_path / "runs").glob("*/ckpt.pt")):
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
    assert clean.returncode == 0, clean.stderr
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


@pytest.mark.parametrize(
    "content, message",
    [(b"\xff\xfe\xfa not utf-8", "is not UTF-8"), (b"a\x00b\x00" * 100, "NUL bytes"), (b"a" * 5000, "single distinct")],
)
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


@pytest.mark.parametrize(
    "argv, message",
    [
        (["list", "--chapter", "ar_edd"], "did you mean 'ar_ed'"),
        (
            ["bench", "ar_ed/baseline", "--profile", "smoke", "--steps", "0"],
            "argument --steps: expected a whole number >= 1",
        ),
        (["train", "ar_ed/basline", "--profile", "smoke"], "did you mean 'ar_ed/baseline'"),
        (
            ["train-chapter", "ar_ed", "--profile", "smoke", "--seeds", "0", "--plan"],
            "argument --seeds: expected a whole number >= 1",
        ),
        (["train-chapter", "mixers", "--profile", "smoke", "--plan"], "did you mean 'mixer'"),
        (
            ["train", "ar_ed/baseline", "--profile", "smoke", "--seed", "-1"],
            "argument --seed: expected a seed, a whole number from 0",
        ),
    ],
)
def test_bad_command_lines_get_a_message(argv, message, capsys):
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_lmc_progress_0_silences_the_command_line(monkeypatch, capsys):
    monkeypatch.setenv("LMC_PROGRESS", "0")
    assert cli.main(["train", "ar_ed/baseline", "--profile", "smoke", "--set", "train.max_steps=3"]) == 0
    assert "step/s" not in capsys.readouterr().err


# --- the last cases (issue 28) -------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["config.json", "env.json", "summary.json", "procedure.json"])
def test_every_file_a_finished_run_is_read_from_is_covered_by_its_integrity_record(tmp_path, name, capsys):
    """A reuse reads the config, the provenance, the summary (and a procedure's settings): damaging any of them, even
    into valid JSON, leaves the run unfinished, so it is retrained (and load_model names the repair)."""
    from lmcompanion.experiments import ed_training

    store = RunStore(tmp_path)
    cfg = experiments.config("formal_ed/adamw", "smoke")
    lit = ed_training.LiteralConfig(T=1, eta=0.01, n=4, evals=1)
    done = store.run(cfg, procedure=ed_training.literal_training, settings=lit)
    assert done.finished
    path = done.path / name
    record = json.loads(path.read_text())
    if name == "summary.json":
        record["final"]["val"] = 0.0  # a better number than the run made
    elif name == "procedure.json":
        record["settings"]["eta"] = 1.0
    elif name == "config.json":
        record["train"]["lr"] = 1.0
    else:
        record["torch"] = "9.9.9"
    path.write_text(json.dumps(record, indent=1, sort_keys=True))
    assert not done.finished and name in done.problem()
    with pytest.raises(CheckpointError, match="lmcompanion retrain"):
        done.load_model()
    again = store.run(cfg, procedure=ed_training.literal_training, settings=lit)
    assert again.finished and "retraining" in capsys.readouterr().err
    assert json.loads((again.path / name).read_text()) != record


def test_a_recorded_runs_marker_is_covered_too(tmp_path):
    from lmcompanion import recorded

    store = RunStore(tmp_path / "runs")
    made = store.run(experiments.config("ar_ed/baseline", "smoke"))
    out = tmp_path / "rec"
    recorded.write([made], out)
    run = recorded.import_dir(out, RunStore(tmp_path / "imported"))[0]
    marker = run.path / "recorded.json"
    marker.write_text(marker.read_text().replace('"smoke"', '"paper"'))
    assert not run.finished and "recorded.json" in run.problem()


def _sigterm_run(tmp_path, extra=()):
    env = {**os.environ, "LMC_RUNS_DIR": str(tmp_path / "runs"), "LMC_PROGRESS": "0", "OMP_NUM_THREADS": "1"}
    cmd = [
        sys.executable,
        "-m",
        "lmcompanion",
        "train",
        "ar_ed/baseline",
        "--profile",
        "smoke",
        "--set",
        "train.max_steps=400",
        "--set",
        "train.ckpt_interval=5",
        *extra,
    ]
    return env, cmd


@pytest.fixture(scope="module")
def sigterm_clean_metrics(tmp_path_factory):
    """The metrics of the signal tests' run trained once without interruption, by the same command in a fresh store
    (the run is deterministic, so both signals' resumed runs are compared with this one run)."""
    env, cmd = _sigterm_run(tmp_path_factory.mktemp("sigterm-clean"))
    clean = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert clean.returncode == 0, clean.stderr
    return next(Path(env["LMC_RUNS_DIR"]).glob("*/metrics.jsonl")).read_bytes()


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_sigterm_or_sighup_finishes_the_step_and_checkpoint_and_resumes_byte_identical(
    tmp_path, sig, sigterm_clean_metrics
):
    """What a scheduler, `timeout` or a closing terminal sends: handled as Ctrl-C is (the step, its checkpoint, a
    message, exit 128 + the signal), with no temporary file left; the same command then resumes."""
    env, cmd = _sigterm_run(tmp_path)
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 120
    while time.time() < deadline and proc.poll() is None and not list((tmp_path / "runs").glob("*/ckpt.pt")):
        time.sleep(0.02)
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 128 + sig, err
    assert "Traceback" not in err and "resume" in err and signal.Signals(sig).name in err
    assert list((tmp_path / "runs").glob("*/ckpt.pt")) and not list((tmp_path / "runs").glob("*/*.tmp*"))
    again = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr
    assert next((tmp_path / "runs").glob("*/metrics.jsonl")).read_bytes() == sigterm_clean_metrics


def test_a_stray_temporary_file_is_removed_when_the_run_resumes_or_finishes(tmp_path):
    store = RunStore(tmp_path)
    cfg = tiny_run(steps=8, ckpt_interval=2)
    with pytest.raises(KeyboardInterrupt):
        store.run(cfg, callbacks=[lambda step: (_ for _ in ()).throw(KeyboardInterrupt) if step == 4 else None])
    folder = store.path(cfg)
    (folder / "ckpt.pt.tmp4242").write_bytes(b"half a checkpoint")  # what a killed writer leaves
    (folder / "summary.json.tmp99").write_text("{")
    done = store.run(cfg)
    assert done.finished and not list(folder.glob("*.tmp*"))


_FULL_DISK = r"""
import resource, signal, sys
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG, as a full disk fails
from lmcompanion import cli
from lmcompanion.experiments import config
from lmcompanion.train import RunStore, trainer
cfg = config("ar_ed/baseline", "smoke", overrides={"train.max_steps": 40, "train.ckpt_interval": 10})
store = RunStore()
calls = []
def limit(step):
    if step == 10 and not calls:  # the first checkpoint is written; the disk is full from here on
        calls.append(step)
        resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))
sys.exit(cli.report(lambda: store.run(cfg, callbacks=[limit])))
"""


def test_a_full_disk_during_training_ends_with_the_message_and_keeps_the_previous_checkpoint(tmp_path):
    """A real write failure from outside (RLIMIT_FSIZE: torch's writer fails with 'unexpected pos', not OSError):
    the promised message, no traceback, the previous checkpoint intact, and the run resumes once there is room."""
    env = {**os.environ, "LMC_RUNS_DIR": str(tmp_path / "runs"), "LMC_PROGRESS": "0", "OMP_NUM_THREADS": "1"}
    got = subprocess.run([sys.executable, "-c", _FULL_DISK], env=env, capture_output=True, text=True, timeout=300)
    assert got.returncode == 2, got.stderr
    assert "free disk space" in got.stderr and "Traceback" not in got.stderr and "unexpected pos" not in got.stderr
    folder = next((tmp_path / "runs").iterdir())
    state = checkpoint.load(folder / "ckpt.pt")
    assert state["step"] == 10 and not list(folder.glob("*.tmp*"))
    cfg = experiments.config("ar_ed/baseline", "smoke", overrides={"train.max_steps": 40, "train.ckpt_interval": 10})
    done = RunStore(tmp_path / "runs").run(cfg)
    assert done.summary["resumed_from"] == 10


@pytest.mark.parametrize(
    "argv",
    [
        [
            "bench",
            "ar_ed/baseline",
            "--profile",
            "smoke",
            "--steps",
            "1",
            "--warmup",
            "0",
            "--set",
            "train.batch_size=200000",
        ],
        [
            "train",
            "ar_ed/baseline",
            "--profile",
            "smoke",
            "--set",
            "train.batch_size=200000",
            "--set",
            "train.max_steps=1",
        ],
    ],
)
def test_a_batch_too_large_for_memory_names_what_ran_out_and_the_setting_to_lower(tmp_path, argv):
    """A real allocation failure (the address space capped from outside): what ran out and which setting to lower,
    no allocator traceback."""
    code = (
        "import resource, sys; resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30)); "
        "from lmcompanion.cli import main; sys.exit(main(sys.argv[1:]))"
    )
    env = {**os.environ, "LMC_RUNS_DIR": str(tmp_path / "runs"), "LMC_PROGRESS": "0", "OMP_NUM_THREADS": "1"}
    got = subprocess.run([sys.executable, "-c", code, *argv], env=env, capture_output=True, text=True, timeout=300)
    assert got.returncode == 2, got.stderr[-2000:]
    assert "out of memory" in got.stderr and "train.batch_size" in got.stderr
    assert "Traceback" not in got.stderr and "DefaultCPUAllocator" not in got.stderr


# One command per case, each in a fresh process, so that `make unit` spreads them over its workers (the hourglass
# paper plan alone counts FLOPs for about a minute of CPU time).
@pytest.mark.parametrize(
    "argv",
    [
        ["list"],
        ["params", "--all", "--profile", "paper"],
        ["params", "--all", "--profile", "cpu"],
        ["train-chapter", "hourglass", "--profile", "paper", "--plan"],
        ["train-chapter", "retrieval", "--profile", "gpu", "--plan"],
        ["train-chapter", "mixer", "--profile", "cpu", "--plan"],
    ],
    ids=["list", "params-paper", "params-cpu", "plan-hourglass-paper", "plan-retrieval-gpu", "plan-mixer-cpu"],
)
def test_counting_and_planning_need_neither_network_nor_data(tmp_path, argv):
    """Offline and without LMC_DATA_DIR: list, params and plans of every chapter at every profile."""
    env = {k: v for k, v in os.environ.items() if k != "LMC_DATA_DIR"}
    env.update(
        HF_HUB_OFFLINE="1",
        HF_DATASETS_OFFLINE="1",
        LMC_CACHE_DIR=str(tmp_path / "cache"),
        LMC_RUNS_DIR=str(tmp_path / "runs"),
        HTTPS_PROXY="http://127.0.0.1:9",
        HTTP_PROXY="http://127.0.0.1:9",
    )
    # the timeout guards against a hang, not a speed check: the hourglass paper plan counts FLOPs for about a minute of
    # CPU time, and took over 300 s on the 2-core machine at a load average of 10
    got = subprocess.run(
        [sys.executable, "-m", "lmcompanion", *argv], env=env, capture_output=True, text=True, timeout=900
    )
    assert got.returncode == 0, f"{argv}: {got.stderr[-1500:]}"
    assert not (tmp_path / "cache").exists() or not any((tmp_path / "cache").rglob("*.bin"))


@pytest.fixture(scope="module")
def recorded_file(tmp_path_factory):
    from lmcompanion import recorded

    made = RunStore(tmp_path_factory.mktemp("gpu-machine")).run(experiments.config("ar_ed/baseline", "smoke"))
    return recorded.write([made], tmp_path_factory.mktemp("recorded"))[0]


@pytest.mark.parametrize(
    "field, value, message",
    [
        ("format", "lmcompanion-recorded-run/2", "this version of the book reads"),
        ("experiment", "../../../etc/passwd", "is not one of this book's"),
        ("seed", "0/../../x", "is not a non-negative integer"),
        ("seed", True, "is not a non-negative integer"),
        ("profile", "laptop", "is not one of"),
        ("config", {"name": "ar_ed/baseline"}, "its config does not build"),
        ("metrics", [{"step": 1, "loss": "0.1; rm -rf /"}], "not numbers"),
        ("metrics", "all good", "not a non-empty list"),
        ("summary", {"final": {"val": 1.0}}, "summary's 'steps'"),
        ("provenance", {"key": "../../../../tmp/x"}, "is not a run key"),
    ],
)
def test_a_recorded_file_is_validated_completely_before_anything_is_written(
    recorded_file, tmp_path, field, value, message
):
    """Recorded files are made by others: a wrong type, an unknown version or a value that would name a path stops
    the import with a message naming the file and the field, and nothing is written, not even the valid files'
    runs."""
    from lmcompanion import recorded

    folder = tmp_path / "rec" / "smoke"
    folder.mkdir(parents=True)
    shutil.copy(recorded_file, folder / "good.json")
    record = json.loads(recorded_file.read_text())
    record[field] = value
    (folder / "zz-bad.json").write_text(json.dumps(record))
    store = RunStore(tmp_path / "runs")
    with pytest.raises(Exception) as exc:
        recorded.import_dir(tmp_path / "rec", store)
    assert message in str(exc.value) and "zz-bad.json" in str(exc.value)
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())


def test_a_recorded_file_that_is_not_json_or_too_large_is_refused(recorded_file, tmp_path, monkeypatch):
    from lmcompanion import recorded

    folder = tmp_path / "rec"
    folder.mkdir()
    (folder / "a.json").write_bytes(b"\xff\xfe not json")
    with pytest.raises(Exception, match="not UTF-8 JSON"):
        recorded.import_dir(folder, RunStore(tmp_path / "runs"))
    (folder / "a.json").write_text("[1, 2]")
    with pytest.raises(Exception, match="not an object"):
        recorded.import_dir(folder, RunStore(tmp_path / "runs"))
    shutil.copy(recorded_file, folder / "a.json")
    monkeypatch.setattr(recorded, "MAX_BYTES", 100)
    with pytest.raises(Exception, match="more than a recorded run can be"):
        recorded.import_dir(folder, RunStore(tmp_path / "runs"))


def test_an_import_that_fails_halfway_leaves_no_half_imported_run(recorded_file, tmp_path, monkeypatch):
    from lmcompanion import recorded

    def full_disk(folder, summary):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(recorded, "write_summary", full_disk)
    store = RunStore(tmp_path / "runs")
    with pytest.raises(Exception, match="nothing was left half-imported"):
        recorded.import_dir(recorded_file.parent, store)
    assert list((tmp_path / "runs").iterdir()) == []  # no run folder, no temporary folder
    monkeypatch.undo()
    run = recorded.import_dir(recorded_file.parent, store)[0]
    assert run.finished and run.path.name.startswith("ar_ed_baseline-s0-recorded-")
    assert "embeddings" not in run.summary


def test_a_damaged_or_foreign_tokenizer_cache_is_rebuilt(tmp_path, monkeypatch):
    """Caches are read back with the same suspicion: an unreadable or foreign tokenizer file is built again."""
    from lmcompanion.data import stories

    monkeypatch.setenv("LMC_CACHE_DIR", str(tmp_path / "cache"))
    cfg = experiments.config("mixer/flat_d256", "smoke").data
    tok = stories.tokenizer(cfg)
    path = next((tmp_path / "cache").rglob(f"{cfg.tokenizer_name}.json"))
    path.write_text("{not a tokenizer")
    assert stories.tokenizer(cfg).encode("Once upon a time") == tok.encode("Once upon a time")
    foreign = stories.StoryTokenizer.train(["a b c"] * 50, 12, "x")
    path.write_text(foreign.tok.to_str())
    assert stories.tokenizer(cfg).vocab_size == cfg.vocab_size


def test_a_foreign_embeddings_cache_is_made_again(tmp_path, monkeypatch):
    from lmcompanion.experiments import retrieval as rexp

    planned = experiments.planned("retrieval/untrained_d512_c32", "smoke", 0, device="cpu")
    emb, path = rexp.embeddings(planned.config)
    torch.save({"query_train": torch.zeros(3, 7)}, path)  # another file under its name
    again, _ = rexp.embeddings(planned.config)
    assert set(again) == set(emb) and all(torch.equal(again[k], emb[k]) for k in emb)


@pytest.mark.parametrize(
    "name, value, given, expected",
    [
        (
            "overrides",
            "[1, 2]",
            "a list ([1, 2])",
            "a dict",
        ),  # failed in the notebook's third cell: "dictionary update sequence"
        ("seed", "0.5", "a float (0.5)", "an int"),
        ("profile", "3", "an int (3)", "a str"),
        ("n_seeds", "{'a': 1}", "a dict ({'a': 1})", "None or one value"),
    ],
)
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
    src.write_text(
        '# %% tags=["parameters"]\nprofile = "cpu"\n\n# %%\nprint("before")\n\n# %%\nimport os\nos._exit(3)\n'
    )
    assert cli.main(["run-notebook", str(src)]) == 2
    err = capsys.readouterr().err
    assert "the kernel died in cell 2" in err and "Traceback" not in err
    assert (tmp_path / "die.failed.ipynb").exists() and not (tmp_path / "die.ipynb").exists()
