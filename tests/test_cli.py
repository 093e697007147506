import subprocess
import sys

from lmcompanion.cli import main


def test_params_all_at_paper_profile_reproduces_published_counts(capsys):
    assert main(["params", "--all", "--profile", "paper"]) == 0
    lines = capsys.readouterr().out.splitlines()
    baseline = next(line for line in lines if line.startswith("ar_ed/baseline "))
    assert "16,036,800" in baseline and "matches" in baseline
    assert not any("DIFFERS" in line for line in lines)


def test_list_names_every_experiment(capsys):
    assert main(["list"]) == 0
    assert "ar_ed/smaller_baseline" in capsys.readouterr().out


def test_bad_input_exits_with_a_message_not_a_traceback(capsys):
    assert main(["train", "ar_ed/basline", "--profile", "smoke"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: unknown experiment 'ar_ed/basline' (did you mean 'ar_ed/baseline'?)")
    assert main(["train", "ar_ed/baseline", "--profile", "tiny"]) == 2
    assert "valid profiles: smoke, cpu, gpu, paper" in capsys.readouterr().err


def test_train_command_trains_then_reuses():
    cmd = [
        sys.executable,
        "-m",
        "lmcompanion",
        "train",
        "ar_ed/baseline",
        "--profile",
        "smoke",
        "--no-progress",
        "--set",
        "train.max_steps=4",
        "--set",
        "train.eval_interval=2",
    ]
    first = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert first.returncode == 0, first.stderr
    second = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert second.stdout == first.stdout  # the same finished run, reused


def _one_per_kind():
    """One registered experiment for every (model family, data kind) the registry uses."""
    from lmcompanion import experiments

    seen = {}
    for name in experiments.names():
        cfg = experiments.config(name, "smoke", device="cpu")
        seen.setdefault((type(cfg.model).__name__, type(cfg.data).__name__), name)
    return sorted(seen.values())


def test_bench_runs_for_every_kind_of_experiment(capsys):
    """`bench NAME` works for every model family and data kind the experiments use."""
    names = _one_per_kind()
    assert len(names) >= 4
    for name in names:
        assert main(["bench", name, "--profile", "smoke", "--steps", "1", "--warmup", "0"]) == 0, name
        out = capsys.readouterr().out
        assert "tokens/s" in out and "params" in out, (name, out)


def test_version_prints_the_package_version(capsys):
    import pytest

    import lmcompanion

    with pytest.raises(SystemExit) as exit:
        main(["--version"])
    assert exit.value.code == 0 and capsys.readouterr().out.strip() == f"lmcompanion {lmcompanion.__version__}"


def test_every_command_defaults_to_the_cpu_profile_and_says_so():
    from pathlib import Path

    from lmcompanion.cli import parser
    from lmcompanion.runner import parameters_of, read_source

    sub = next(a for a in parser()._actions if a.dest == "command")
    commands = {name: {a.dest: a for a in s._actions} for name, s in sub.choices.items()}
    with_profile = {name: acts["profile"] for name, acts in commands.items() if "profile" in acts}
    assert len(with_profile) >= 6
    for name, action in with_profile.items():
        assert "default: " in action.help, name
        # run-notebook: the notebook's own; campaign plans a GPU slot (its smoke profile rehearses it on a CPU)
        assert action.default == {"run-notebook": None, "campaign": "gpu"}.get(name, "cpu"), name
    # run-notebook's default is the notebook's own: cpu in every notebook of the book
    for src in sorted(Path(__file__).resolve().parents[1].glob("notebooks/*/*.py")):
        assert parameters_of(read_source(src))["profile"] == "cpu", src
