"""Faults by class, on every door.

The doors are the command line's subcommands, found by iterating its parser (the CLI is how the runner, the pool,
the campaign, the benches and import/export are reached), and :data:`DOORS` says how each class of fault applies to
each one. A command added later fails :func:`test_every_command_is_a_door_of_every_class` until it is entered there,
and an argument added later fails :func:`test_every_argument_is_checked_where_it_is_parsed` until it has a checked
type; from then on it is in every test below.

The classes (docs/reliability.md, "Reliability: what the project promises"):

1. arguments: every value is checked where it is parsed; the error names the argument and what it takes; exit 2;
2. typos: a path that does not exist, or a file where a folder is expected (or the reverse), is an error naming it,
   or is accepted by name, never exit 0 having done nothing;
3. files made elsewhere: refused whole, by name, before anything is written (tests/test_untrusted.py has the
   generated hostile inputs for every reader);
4. signals: SIGTERM, SIGINT and SIGHUP end a long command with one true message, 128 + the signal, what finished
   kept, and no process left behind;
5. resources: a folder that cannot be written, a full disk, no memory left: a message naming the fix, no traceback;
6. paths: relative LMC_* paths mean where the command started; an output that names an input is refused; spaces,
   brackets and non-ASCII characters work, in every folder a path names (paths are data, never patterns); a killed
   writer's temporary files are removed by the next command;
7. outputs: every file a command writes for someone else to read (an executed notebook, a recorded run, an export,
   pages, a pack, an archive) is written under a temporary name and renamed when whole;
8. messages: a wrong value names the variable, option, key or file that holds it and what to do, and never advises
   deleting what can be repaired.
"""

import argparse
import errno
import gzip
import hashlib
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest

from lmcompanion import argtypes, cli, experiments, recorded, resources, signals
from lmcompanion.train import RunStore
from lmcompanion.errors import LMCError

from conftest import REPO, tiny_run

SUBPARSERS = next(a for a in cli.parser()._actions if isinstance(a, argparse._SubParsersAction)).choices
WEIRD = "a dir [1] (ü é)"  # spaces, brackets, non-ASCII: every path below is made inside such a folder


@dataclass
class Door:
    """How the classes apply to one command. ``argv``: a complete command line ({dir}: an existing folder, {file}: an
    existing file, {out}: a folder to write in); ``signal``: a command line that runs long enough to be stopped, and
    what shows it is busy (a file pattern under the sandbox, or seconds), or why it is not long; ``resources``: a
    command line that writes to the run store or the cache."""

    argv: list[str]
    signal: tuple | str = "short: reads or prints, writes at most one file atomically"
    resources: list[str] | None = None
    output: list[str] | str = "prints only"


DOORS = {
    "list": Door(["list"]),
    "params": Door(["params", "--all", "--profile", "smoke"]),
    "train": Door(
        ["train", "ar_ed/baseline", "--profile", "smoke"],
        (
            [
                "train",
                "ar_ed/baseline",
                "--profile",
                "smoke",
                "--no-progress",
                "--set",
                "train.max_steps=100000",
                "--set",
                "train.ckpt_interval=20",
            ],
            "runs/*/ckpt.pt",
        ),
        ["train", "ar_ed/baseline", "--profile", "smoke", "--set", "train.max_steps=2"],
        "the run store only (checkpoints and summaries atomically: tests/test_trainer.py)",
    ),
    "run-notebook": Door(
        ["run-notebook", "{file}", "-o", "{out}/x.ipynb"],
        (["run-notebook", "{nb}", "-o", "{out}/long.ipynb"], "runs/*/ckpt.pt"),
        output=["run-notebook", "{file}", "-o", "{out}/x.ipynb"],
    ),
    "runs": Door(["runs"]),
    "retrain": Door(
        ["retrain", "{dir}"],
        (["retrain", "{long_run}", "--no-progress"], "runs/test_long-*/ckpt.pt"),
        output="the run store only, as train",
    ),
    "train-chapter": Door(
        ["train-chapter", "ar_ed", "--profile", "smoke", "--plan"],
        (["train-chapter", "all", "--profile", "smoke", "--jobs", "2", "--no-progress"], "runs/*/ckpt.pt"),
        output="the run store only, as train",
    ),
    "record": Door(["record", "{dir}"], output=["record", "{run}", "-o", "{out}/recorded"]),
    "import-recorded": Door(
        ["import-recorded", "{dir}"],
        resources=["import-recorded", "{recorded}"],
        output="the run store only, each run into a temporary folder renamed whole",
    ),
    "export-retrieval": Door(
        ["export-retrieval", "retrieval/flat_d512_c32", "--profile", "smoke", "-o", "{out}"],
        "long, but it trains through PlannedRun.train, as `train` does (tested there)",
        output=["export-retrieval", "retrieval/flat_d512_c32", "--profile", "smoke", "-o", "{out}"],
    ),
    "pages": Door(["pages", "{dir}", "{out}"], output=["pages", "{executed}", "{out}/pages"]),
    "contents": Door(
        ["contents"],
        output="with --write, the repository's _toc.yml, intro and README, each whole (paths.atomic_write)",
    ),
    "bench": Door(
        ["bench", "ar_ed/baseline", "--profile", "smoke"],
        (["bench", "ar_ed/baseline", "--profile", "smoke", "--steps", "100000"], 14.0),
    ),
    "bench-cpu": Door(
        ["bench-cpu", "ar_ed/baseline", "--profile", "smoke"],
        (["bench-cpu", "ar_ed/baseline", "--profile", "smoke", "--rounds", "100000"], 14.0),
    ),
    "campaign": Door(
        ["campaign", "--profile", "smoke", "--plan"],
        (
            ["campaign", "--profile", "smoke", "--device", "cpu", "--seeds", "1", "-o", "{out}/c", "--no-progress"],
            ("stdout", "] check check", 4.0),
        ),  # in the check (compile, torchrun)
        output=["campaign", "--profile", "smoke", "--pack", "{out}/pack"],
    ),  # the slot's own: below
}

# Arguments whose check needs more than the value (an experiment or chapter name, checked against the registry with
# the closest valid names; a notebook parameter, checked against the notebook's parameters cell before a kernel
# starts: tests/test_reliability.py) or that take any text.
FREE = {
    ("list", "--chapter"),
    ("params", "name"),
    ("train", "name"),
    ("run-notebook", "-p"),
    ("train-chapter", "chapter"),
    ("export-retrieval", "runs"),
    ("pages", "--prefix"),
    ("bench", "name"),
    ("bench-cpu", "chapters"),
}
CHECKED = {getattr(argtypes, n) for n in argtypes.__all__ if callable(getattr(argtypes, n))}


def _actions(command):
    for a in SUBPARSERS[command]._actions:
        if isinstance(a, (argparse._HelpAction, argparse._StoreTrueAction, argparse._VersionAction)):
            continue
        yield (a.option_strings[0] if a.option_strings else a.dest), a


def test_every_command_is_a_door_of_every_class():
    assert set(SUBPARSERS) == set(DOORS), "a command was added or removed: enter it in DOORS, for every class"


def test_every_argument_is_checked_where_it_is_parsed():
    unchecked = []
    for command in SUBPARSERS:
        for name, a in _actions(command):
            typed = a.type in CHECKED or getattr(a.type, "__name__", "") == "revision"
            if not (typed or a.choices or (command, name) in FREE):
                unchecked.append(f"{command} {name} (type {getattr(a.type, '__name__', a.type)})")
    assert not unchecked, "arguments without a checked type (lmcompanion.argtypes): " + ", ".join(unchecked)


@pytest.fixture
def sandbox(tmp_path, monkeypatch):
    root = tmp_path / WEIRD
    (root / "dir").mkdir(parents=True)
    (root / "out").mkdir()
    (root / "file.py").write_text('# %% tags=["parameters"]\nprofile = "cpu"\n\n# %%\nprint(profile)\n')
    monkeypatch.setenv("LMC_RUNS_DIR", str(root / "runs"))
    monkeypatch.setenv("LMC_CACHE_DIR", str(root / "cache"))
    return root


def _fill(argv, root: Path, **extra) -> list[str]:
    names = {"dir": root / "dir", "file": root / "file.py", "out": root / "out", **extra}
    return [re.sub(r"\{(\w+)\}", lambda m: str(names[m.group(1)]), a) for a in argv]


def _main(argv, capsys) -> tuple[int, str]:
    code = cli.main(argv)
    err = capsys.readouterr().err
    assert "Traceback" not in err, err
    return code, err


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    """A finished smoke run made "elsewhere", and its recorded file's folder (made once for the module)."""
    run = RunStore(tmp_path_factory.mktemp("elsewhere")).run(experiments.config("ar_ed/baseline", "smoke"))
    folder = tmp_path_factory.mktemp("recorded")
    recorded.write([run], folder)
    return run, folder


# --- 1. arguments --------------------------------------------------------------------------------------------------

BAD = {
    argtypes.positive_int: ["0", "-1", "1.5", "nan", "x"],
    argtypes.nonnegative_int: ["-1", "2.5", "x"],
    argtypes.seed: ["-1", str(2**31), "x"],
    argtypes.minutes: ["0", "-3", "nan", "inf", "x"],
    argtypes.command_minutes: ["0", "0.5", "nan", "inf"],
    argtypes.seconds: ["0", "-1", "nan", "inf"],
    argtypes.profile: ["tiny", ""],
    argtypes.device: ["gpu", "cuda:9"],
    argtypes.override: ["lr", "=1"],
}


@pytest.mark.parametrize("command", sorted(DOORS))
def test_a_bad_value_of_any_argument_stops_where_it_is_parsed_naming_it(command, sandbox, capsys):
    cases = 0
    for name, a in _actions(command):
        for bad in BAD.get(a.type, []):
            argv = _fill(DOORS[command].argv, sandbox) + [name, bad] if a.option_strings else None
            if argv is None:
                continue
            code, err = _main(argv, capsys)
            assert code == 2 and f"argument {name}" in err and repr(bad) in err, (argv, err)
            cases += 1
    assert cases or not any(a.type in BAD for _, a in _actions(command))


def test_the_cases_the_issue_names(capsys):
    for argv, needle in (
        (["campaign", "--max-minutes", "0"], "argument --max-minutes: expected a finite number"),
        (["campaign", "--budget-min", "nan"], "argument --budget-min: expected a finite number"),
        (["bench-cpu", "--threads", "-1"], "argument --threads: expected a whole number >= 0"),
        (["bench-cpu", "--against", "HEAD~100000"], "argument --against: 'HEAD~100000' is not a commit"),
        (["bench-cpu", "--against", "acd93d5~60"], "has no 'def planned(' in"),
    ):
        code, err = _main(argv, capsys)
        assert code == 2 and needle in err, err


# --- 2. typos: paths that are not there, or not what the argument takes ---------------------------------------------


@pytest.mark.parametrize("command", sorted(DOORS))
def test_a_path_that_is_not_there_or_not_of_its_kind_is_named(command, sandbox, capsys):
    for name, a in _actions(command):
        wrong = {
            argtypes.existing_dir: [("missing", "does not exist"), ("file.py", "is a file")],
            argtypes.existing_file: [("missing.py", "does not exist"), ("dir", "is a folder")],
            argtypes.existing_path: [("missing", "does not exist")],
            argtypes.output_dir: [("file.py", "is a file")],
            argtypes.output_file: [("file.py/x", "is a file")],
        }.get(a.type, [])
        for value, needle in wrong:
            argv = _fill(DOORS[command].argv, sandbox)
            if a.option_strings:
                argv += [name, str(sandbox / value)]
            else:  # a positional: DOORS lists the positionals first, in order
                positionals = [x for _, x in _actions(command) if not x.option_strings]
                argv[1 + positionals.index(a)] = str(sandbox / value)
            code, err = _main(argv, capsys)
            assert code == 2 and needle in err and f"argument {a.dest if not a.option_strings else name}" in err, (
                argv,
                err,
            )


def test_import_recorded_of_a_missing_folder_fails_and_of_one_file_imports_it(sandbox, capsys, made):
    code, err = _main(["import-recorded", str(sandbox / "recorded-typo")], capsys)
    assert code == 2 and "does not exist" in err
    code, err = _main(["import-recorded", str(sandbox / "dir")], capsys)  # a folder with no recorded run
    assert code == 2 and "holds no recorded-run files" in err
    path = next(made[1].rglob("*.json"))
    assert _main(["import-recorded", str(path)], capsys)[0] == 0
    assert len(RunStore().runs()) == 1 and RunStore().runs()[0].config.name == "ar_ed/baseline"
    (sandbox / "notes.txt").write_text("hello")
    code, err = _main(["import-recorded", str(sandbox / "notes.txt")], capsys)
    assert code == 2 and "notes.txt is neither a folder of recorded runs" in err


def test_pages_of_a_folder_without_notebooks_is_an_error(sandbox, capsys):
    code, err = _main(["pages", str(sandbox / "dir"), str(sandbox / "out")], capsys)
    assert code == 2 and "holds no executed notebooks" in err and not any((sandbox / "out").iterdir())


# --- 3. files made elsewhere, per door (the readers' properties: tests/test_untrusted.py) ----------------------------


def test_every_door_that_reads_a_file_made_elsewhere_refuses_a_hostile_one_by_name(sandbox, capsys, tmp_path, made):
    made, rec = made
    good = json.loads(next(rec.rglob("*.json")).read_text())
    # import-recorded: a recorded run whose results are NaN
    bad = dict(good, summary={**good["summary"], "final": {"val": float("nan")}})
    (sandbox / "in" / "smoke").mkdir(parents=True)
    (sandbox / "in" / "smoke" / "nan.json").write_text(json.dumps(bad))
    code, err = _main(["import-recorded", str(sandbox / "in")], capsys)
    assert code == 2 and "nan.json" in err and "NaN is not a number" in err and not RunStore().root.exists()
    # retrain, record, export-retrieval: a run folder whose procedure names another module's function
    folder = sandbox / "shared-run"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(made.config.to_dict()))
    (folder / "procedure.json").write_text(json.dumps({"procedure": "os.system", "settings": None}))
    for argv in (
        ["retrain", str(folder)],
        ["record", str(folder), "-o", str(sandbox / "out")],
        ["export-retrieval", str(folder), "-o", str(sandbox / "out")],
    ):
        code, err = _main(argv, capsys)
        assert code == 2 and "procedure.json" in err, (argv, err)
    assert not any((sandbox / "out").iterdir()) and not RunStore().root.exists()
    # campaign --from-pack: a manifest entry that would unpack outside the cache
    pack = sandbox / "pack"
    (pack / "data").mkdir(parents=True)
    z = gzip.compress(b"text", mtime=0)
    (pack / "data" / "a.gz").write_bytes(z)
    (pack / "manifest.json").write_text(
        json.dumps(
            {
                "format": "lmcompanion-campaign-pack/1",
                "files": {
                    "data/a.gz": {
                        "sha256": hashlib.sha256(z).hexdigest(),
                        "bytes": len(z),
                        "kind": "data",
                        "unpacks_to": "../../../../evil",
                        "unpacked_sha256": hashlib.sha256(b"text").hexdigest(),
                        "unpacked_bytes": 4,
                    }
                },
            }
        )
    )
    code, err = _main(["campaign", "--profile", "smoke", "--from-pack", str(pack), "--plan"], capsys)
    assert code == 2 and "manifest.json" in err and "leaves its folder" in err
    assert not list(tmp_path.rglob("evil"))
    # pages: an executed notebook that is not one
    (sandbox / "nbs").mkdir()
    (sandbox / "nbs" / "a.ipynb").write_text('{"cells": "all", "metadata": {}, "nbformat": 4}')
    code, err = _main(["pages", str(sandbox / "nbs"), str(sandbox / "pages")], capsys)
    assert code == 2 and "a.ipynb is not a valid executed notebook" in err and not (sandbox / "pages").exists()


# --- 4. signals: real processes, stopped from outside ---------------------------------------------------------------

LONG_NOTEBOOK = """# %% tags=["parameters"]
profile = "cpu"

# %%
import sys
sys.path.insert(0, {tests!r})
from conftest import tiny_run
from lmcompanion.train import RunStore
print(RunStore().run(tiny_run("test/long", steps=100000, ckpt_interval=20, eval_interval=1000)).path)
"""


def _marked(mark: str) -> list[int]:
    """The processes whose environment carries ``mark`` (every process a command started inherits it)."""
    found = []
    for env in Path("/proc").glob("[0-9]*/environ"):
        try:
            if mark.encode() in env.read_bytes():
                found.append(int(env.parent.name))
        except OSError:
            continue
    return found


def _stop(argv, busy, sig, tmp_path, cwd=None, group=False):
    """Run ``python -m lmcompanion *argv`` until it is busy (``busy``: a file pattern under ``tmp_path`` that appears,
    seconds, or ("stdout", text, seconds): that long after it printed the text), send ``sig`` (to its process group
    when ``group``, as a terminal's Ctrl-C does), and return (exit status, stderr), after checking that no process it
    started is left."""
    mark = f"LMC_TEST_MARK={uuid.uuid4().hex}"
    env = {**os.environ, "LMC_PROGRESS": "0", "OMP_NUM_THREADS": "1", mark.split("=")[0]: mark.split("=")[1]}
    proc = subprocess.Popen(
        [sys.executable, "-m", "lmcompanion", *argv],
        env=env,
        cwd=cwd or tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    streams = {"out": [], "err": []}

    def read(f, lines):
        for line in iter(f.readline, ""):
            lines.append(line)

    readers = [
        threading.Thread(target=read, args=(f, streams[k]), daemon=True)
        for f, k in ((proc.stdout, "out"), (proc.stderr, "err"))
    ]
    for r in readers:
        r.start()
    deadline = time.monotonic() + 240
    started, seen = time.monotonic(), None
    while time.monotonic() < deadline and proc.poll() is None:
        if isinstance(busy, float) and time.monotonic() - started > busy:
            break
        if isinstance(busy, str) and list(tmp_path.glob(busy)):
            break
        if isinstance(busy, tuple):
            if seen is None and any(busy[1] in line for line in streams["out"]):
                seen = time.monotonic()
            if seen is not None and time.monotonic() - seen > busy[2]:
                break
        time.sleep(0.1)
    assert proc.poll() is None, f"{argv} ended before it was stopped: {''.join(streams['err'])[-2000:]}"
    os.killpg(proc.pid, sig) if group else proc.send_signal(sig)
    proc.wait(timeout=300)
    for r in readers:
        r.join(timeout=30)
    err = "".join(streams["err"])
    for _ in range(50):  # a worker that was told to stop exits within its step
        left = _marked(mark)
        if not left:
            break
        time.sleep(0.2)
    assert not left, f"processes left behind by {argv}: {left}"
    return proc.returncode, err


@pytest.fixture
def signal_sandbox(tmp_path, monkeypatch):
    root = tmp_path / WEIRD
    root.mkdir()
    monkeypatch.setenv("LMC_RUNS_DIR", str(tmp_path / "runs"))
    monkeypatch.setenv("LMC_CACHE_DIR", str(Path(os.environ["LMC_CACHE_DIR"])))  # the session's: caches are reused
    (root / "nb").mkdir()
    (root / "nb" / "long.py").write_text(LONG_NOTEBOOK.format(tests=str(REPO / "tests")))
    long_run = tmp_path / "runs" / "long"
    long_run.mkdir(parents=True)
    (long_run / "config.json").write_text(
        json.dumps(tiny_run("test/long", steps=100000, ckpt_interval=20, eval_interval=1000).to_dict())
    )
    return root


LONG = sorted(c for c, d in DOORS.items() if isinstance(d.signal, tuple))


@pytest.mark.parametrize("command", LONG)
def test_sigterm_stops_every_long_command_with_one_true_message_and_no_process_left(command, signal_sandbox, tmp_path):
    argv, busy = DOORS[command].signal
    argv = _fill(
        argv,
        signal_sandbox,
        nb=signal_sandbox / "nb" / "long.py",
        long_run=tmp_path / "runs" / "long",
        out=tmp_path / "out",
    )
    code, err = _stop(argv, busy, signal.SIGTERM, tmp_path)
    assert code == 128 + signal.SIGTERM, err[-3000:]
    assert err.count("stopped by SIGTERM") == 1 and "Traceback" not in err, err[-3000:]
    if "keeps its checkpoint" in err:  # the message is true: the checkpoint it names is there
        for name in re.findall(r"run (\S+) keeps its checkpoint", err):
            assert list((tmp_path / "runs").glob(f"{name}/ckpt.pt")) or name == "long", (name, err)


@pytest.mark.parametrize("sig, group", [(signal.SIGINT, True), (signal.SIGHUP, False)])
def test_ctrl_c_or_sighup_to_a_pool_stops_its_workers_and_keeps_their_checkpoints(sig, group, signal_sandbox, tmp_path):
    argv, busy = DOORS["train-chapter"].signal
    code, err = _stop(argv, busy, sig, tmp_path, group=group)
    assert code == 128 + sig and err.count("stopped by") == 1 and "Traceback" not in err, err[-3000:]
    kept = re.findall(r"run (\S+) keeps its checkpoint", err)
    assert kept and all((tmp_path / "runs" / k / "ckpt.pt").is_file() for k in kept), err


def test_a_pool_whose_parent_is_killed_leaves_no_worker(signal_sandbox, tmp_path):
    argv, busy = DOORS["train-chapter"].signal
    mark = f"LMC_TEST_MARK={uuid.uuid4().hex}"
    env = {**os.environ, "LMC_PROGRESS": "0", "OMP_NUM_THREADS": "1", "LMC_TEST_MARK": mark.split("=")[1]}
    proc = subprocess.Popen(
        [sys.executable, "-m", "lmcompanion", *argv],
        env=env,
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and not list(tmp_path.glob(busy)):
        time.sleep(0.2)
    proc.kill()
    proc.wait()
    for _ in range(150):
        if not _marked(mark):
            break
        time.sleep(0.2)
    assert not _marked(mark), "workers outlived their killed parent"


# --- 5. resources -----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("command", sorted(c for c, d in DOORS.items() if d.resources))
def test_a_store_or_cache_that_cannot_be_written_names_the_variable(command, sandbox, capsys, made):
    rec = made[1]
    blocker = sandbox / "a-file"
    blocker.write_text("")
    for var in ("LMC_RUNS_DIR", "LMC_CACHE_DIR"):
        os.environ[var] = str(blocker / var.lower())
        try:
            code, err = _main(_fill(DOORS[command].resources, sandbox, recorded=rec), capsys)
        finally:
            os.environ[var] = str(sandbox / var.lower())
        if var == "LMC_CACHE_DIR" and code == 0:
            continue  # this command does not write to the cache
        assert code == 2 and var in err, (command, var, err)


@pytest.mark.parametrize(
    "argv, where",
    [
        (["import-recorded", "{recorded}"], "lmcompanion.recorded.untrusted.parse_json"),
        (["bench", "ar_ed/baseline", "--profile", "smoke", "--steps", "1", "--warmup", "0"], "lmcompanion.cli.bench"),
    ],
)
def test_running_out_of_memory_is_a_message(argv, where, sandbox, capsys, made, monkeypatch):
    rec = made[1]

    def no_memory(*a, **k):
        raise MemoryError()

    monkeypatch.setattr(where, no_memory)
    code, err = _main(_fill(argv, sandbox, recorded=rec), capsys)
    assert code == 2 and "ran out of memory (RAM)" in err, err


def test_a_full_disk_names_the_folder_and_the_fix():
    exc = OSError(errno.ENOSPC, "No space left on device", "/some/where/runs/x/ckpt.pt")
    text = resources.explain(exc, "train")
    assert "free disk space" in text and "run the same command again" in text
    assert "set LMC_CACHE_DIR" in resources.explain(
        PermissionError(errno.EACCES, "Permission denied", str(Path(os.environ["LMC_CACHE_DIR"]) / "tokens" / "x.bin"))
    )


# --- 6. paths ---------------------------------------------------------------------------------------------------------


def test_relative_lmc_paths_mean_where_the_command_started(tmp_path):
    start = tmp_path / WEIRD
    start.mkdir()
    env = {**os.environ, "LMC_RUNS_DIR": "my runs", "LMC_PROGRESS": "0"}
    got = subprocess.run(
        [
            sys.executable,
            "-m",
            "lmcompanion",
            "train",
            "ar_ed/baseline",
            "--profile",
            "smoke",
            "--set",
            "train.max_steps=2",
        ],
        env=env,
        cwd=start,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert got.returncode == 0, got.stderr
    assert Path(got.stdout.splitlines()[0]).parent == start / "my runs"


def test_every_corpus_and_tokenizer_reads_from_a_data_folder_whose_path_is_not_a_pattern(tmp_path, monkeypatch):
    """Paths are data, never patterns: ``datasets`` reads a local file's name as a glob, so a data folder whose path
    had brackets (or spaces, non-ASCII letters) was refused with a 23-frame traceback. Every corpus with local files
    is read from such a folder (small files of each name: what is tested is the path, not the text), and the GPT-2
    tokenizer from its files there."""
    from lmcompanion.data import corpora, tokenizers

    shared = os.environ.get("LMC_DATA_DIR")
    root = tmp_path / WEIRD / "data [x]"
    monkeypatch.setenv("LMC_DATA_DIR", str(root))
    monkeypatch.setenv("LMC_CACHE_DIR", str(tmp_path / WEIRD / "cache [y]"))
    read = 0
    for corpus in corpora.CORPORA.values():
        for split, rel in corpus.files.items():
            text = f'<doc id="1" url="u" title="{corpus.name}">\n{corpus.name}\n\nOne {split} line, ü é.\n</doc>\n'
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_text(text)
            assert f"One {split} line" in corpora.load_raw(corpus.name, split), (corpus.name, split)
            read += 1
    assert read >= 5
    if shared and (Path(shared) / "tiktoken").is_dir():
        (root / "tiktoken").symlink_to(Path(shared) / "tiktoken")
        assert tokenizers.GPT2Tokenizer().encode("hello world") == [31373, 995]


def test_absolute_env_resolves_against_the_start_and_expands_the_home(tmp_path, monkeypatch):
    monkeypatch.setenv("LMC_CACHE_DIR", "c")
    monkeypatch.setenv("LMC_RUNS_DIR", "~/r")
    resources.absolute_env(tmp_path)
    assert os.environ["LMC_CACHE_DIR"] == str(tmp_path / "c")
    assert os.environ["LMC_RUNS_DIR"] == str(Path("~/r").expanduser())


def test_a_notebook_s_relative_run_store_is_where_run_notebook_started(tmp_path):
    start = tmp_path / WEIRD
    (start / "nb [x]").mkdir(parents=True)
    src = start / "nb [x]" / "tiny.py"
    src.write_text(LONG_NOTEBOOK.format(tests=str(REPO / "tests")).replace("steps=100000", "steps=3"))
    env = {**os.environ, "LMC_RUNS_DIR": "rel runs", "LMC_PROGRESS": "0"}
    got = subprocess.run(
        [sys.executable, "-m", "lmcompanion", "run-notebook", str(src), "-o", "out ü/tiny.ipynb"],
        env=env,
        cwd=start,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert got.returncode == 0, got.stderr
    assert list((start / "rel runs").glob("test_long-*/summary.json")) and not (start / "nb [x]" / "rel runs").exists()
    assert (start / "out ü" / "tiny.ipynb").is_file()


def test_an_output_that_names_the_notebook_s_source_is_refused_before_anything_is_written(sandbox, capsys):
    src = sandbox / "file.py"
    before = src.read_bytes()
    for out in (str(src), str(sandbox / "dir" / ".." / "file.py"), str(sandbox / "other.py")):
        code, err = _main(["run-notebook", str(src), "-o", out], capsys)
        assert code == 2 and ("own source" in err or "would be a .py file" in err), err
    assert src.read_bytes() == before and sorted(p.name for p in sandbox.iterdir()) == ["dir", "file.py", "out"]


def test_temporary_files_of_a_killed_writer_are_removed_by_the_next_command(sandbox, capsys, tmp_path, monkeypatch):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    pid = dead.pid
    runs, cache = Path(os.environ["LMC_RUNS_DIR"]), Path(os.environ["LMC_CACHE_DIR"])
    monkeypatch.setenv("LMC_FLOPS_DIR", str(tmp_path / "flops"))  # outside the cache folder, as make unit sets it
    stale = [
        runs / f"x-s0-abc/summary.json.tmp{pid}",
        runs / f".import-{pid}-abc/config.json",
        cache / f"tokens/meta.json.tmp{pid}",
        tmp_path / "flops" / f"0123abcd.json.tmp{pid}",
        sandbox / "out" / f".nb.partial{pid}.ipynb",
        sandbox / "out" / f"gpu/a.json.tmp{pid}",
    ]
    mine = [runs / f"y-s0-abc/summary.json.tmp{os.getpid()}"]  # a live writer's: kept
    for p in stale + mine:
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text("partial")
    assert _main(["record", str(sandbox / "dir"), "-o", str(sandbox / "out")], capsys)[0] == 2  # not a run
    assert not any(p.exists() for p in stale), [p for p in stale if p.exists()]
    assert all(p.exists() for p in mine)


# --- 7. outputs: written whole --------------------------------------------------------------------------------------


class _Writes:
    """Every file opened for writing while installed (builtins.open, io.open, which pathlib uses, and tarfile's own
    reference to open); numpy, nbformat, torch, gzip and shutil write through these."""

    def __init__(self, monkeypatch):
        import builtins
        import io
        import tarfile

        self.paths: list[Path] = []
        for module, name in ((builtins, "open"), (io, "open"), (tarfile, "bltn_open")):
            monkeypatch.setattr(module, name, self._spy(getattr(module, name)))

    def _spy(self, real):
        def opener(file, mode="r", *args, **kwargs):
            if isinstance(file, (str, bytes, os.PathLike)) and any(c in mode for c in "wax+"):
                self.paths.append(Path(os.fsdecode(file)))
            return real(file, mode, *args, **kwargs)

        return opener


def _temporary(path: Path, root: Path) -> bool:
    """Whether ``path`` or a folder of it below ``root`` has a temporary name (one that carries its writer)."""
    return any(resources.writer(p.name) is not None for p in [path, *path.parents] if root in p.parents)


@pytest.mark.parametrize("command", sorted(c for c, d in DOORS.items() if not isinstance(d.output, str)))
def test_every_output_a_command_writes_is_written_whole_under_a_temporary_name(
    command, sandbox, capsys, made, monkeypatch
):
    """A reader of an output (an executed notebook, a recorded run, an export, pages, a pack) never finds a part of
    it at its final name, whatever stops the writer: each is filled under a temporary name and renamed whole."""
    if command in ("export-retrieval", "campaign") and not os.environ.get("LMC_DATA_DIR"):
        pytest.skip("needs the offline corpora: set LMC_DATA_DIR (e.g. ../shared/data)")
    out = sandbox / "out"
    argv = _fill(DOORS[command].output, sandbox, run=made[0].path, executed=REPO / "tests" / "nbval" / "prologue")
    writes = _Writes(monkeypatch)
    code, err = _main(argv, capsys)
    monkeypatch.undo()
    assert code == 0, err
    mine = [p for p in writes.paths if out in p.parents]
    assert mine, f"{command} wrote nothing under {out}"
    direct = sorted({str(p.relative_to(out)) for p in mine if not _temporary(p, out)})
    assert not direct, f"{command} wrote these at their final names: {direct}"
    left = [p for p in out.rglob("*") if _temporary(p, out)]
    assert not left and any(p.is_file() for p in out.rglob("*")), left


def test_every_command_says_what_it_writes_for_others():
    for command, door in DOORS.items():
        assert isinstance(door.output, list) or door.output, (
            f"{command}: give the command line that writes its outputs, or say why it writes none"
        )


def test_an_export_stopped_while_it_writes_leaves_nothing_at_its_name(tmp_path, monkeypatch):
    """The case the issue names: Ctrl-C while export-retrieval writes its .npz left 3 of its 10 arrays there."""
    import numpy as np
    from lmcompanion import paths

    def interrupted(f, **arrays):
        f.write(b"PK\x03\x04 part of an archive")
        raise KeyboardInterrupt

    monkeypatch.setattr(np, "savez", interrupted)
    target = tmp_path / "run.npz"
    with pytest.raises(KeyboardInterrupt):
        paths.atomic_write(target, lambda f: np.savez(f, a=np.zeros(3)))
    assert list(tmp_path.iterdir()) == []
    src = Path(__import__("lmcompanion.chapters.retrieval.analysis", fromlist=["export"]).__file__)
    src = src.read_text()
    assert "paths.atomic_write(path, lambda f: np.savez(f" in src  # the export writes through it


# --- 8. messages: the offending thing named, and a fix that keeps what can be repaired ---------------------------------


BAD_ENV = {
    argtypes.output_dir: "{file}",
    argtypes.existing_dir: "{out}/missing",
    argtypes.switch: "maybe",
    argtypes.seconds: "0",
}


def test_every_environment_variable_the_package_reads_is_checked_by_its_type():
    read = set()
    for path in (REPO / "src" / "lmcompanion").rglob("*.py"):
        read |= set(re.findall(r"\bLMC_[A-Z_]+\b", path.read_text()))
    internal = {"LMC_COMMAND"}  # set by the package for the runs it starts, never by a user
    assert read - internal == set(argtypes.ENVIRONMENT), "enter every LMC_* variable in argtypes.ENVIRONMENT"
    assert {v.type for v in argtypes.ENVIRONMENT.values()} <= set(BAD_ENV)


@pytest.mark.parametrize("name", sorted(argtypes.ENVIRONMENT))
def test_a_wrong_environment_variable_is_named_by_every_door_and_by_a_notebook(name, sandbox, capsys, monkeypatch):
    from lmcompanion import nb

    bad = _fill([BAD_ENV[argtypes.ENVIRONMENT[name].type]], sandbox)[0]
    monkeypatch.setenv(name, bad)
    for command, door in DOORS.items():
        code, err = _main(_fill(door.argv, sandbox), capsys)
        assert code == 2 and f"environment variable {name}" in err and repr(bad) in err and f"unset {name}" in err, (
            command,
            err,
        )
    with pytest.raises(LMCError, match=f"environment variable {name}"):
        nb.setup("smoke")


def test_a_misspelled_key_in_a_run_s_config_is_named_with_its_file_by_every_door_that_reads_it(
    sandbox, capsys, made, tmp_path
):
    import shutil

    folder = tmp_path / WEIRD / "run"
    shutil.copytree(made[0].path, folder)
    cfg = json.loads((folder / "config.json").read_text())
    cfg["train"]["lrr"] = cfg["train"].pop("lr")
    (folder / "config.json").write_text(json.dumps(cfg))
    record = json.loads(next(made[1].rglob("*.json")).read_text())
    record["config"] = cfg
    (tmp_path / "bad.json").write_text(json.dumps(record))
    for argv, file in (
        (["retrain", str(folder)], folder / "config.json"),
        (["record", str(folder), "-o", str(sandbox / "out")], folder / "config.json"),
        (["export-retrieval", str(folder), "-o", str(sandbox / "out")], folder / "config.json"),
        (["import-recorded", str(tmp_path / "bad.json")], tmp_path / "bad.json"),
    ):
        code, err = _main(argv, capsys)
        assert code == 2 and str(file) in err and "train.lrr (did you mean 'train.lr'?)" in err, (argv, err)
        assert "delete" not in err, (argv, err)


def test_a_damaged_run_file_names_the_repair_not_a_deletion(sandbox, capsys, made, tmp_path):
    import shutil

    for name, damage in (
        ("summary.json", "[1, 2"),
        ("env.json", "{}}"),
        ("config.json", "not json"),
        ("procedure.json", '{"procedure": "os.system"}'),
    ):
        folder = tmp_path / name / "run"
        shutil.copytree(made[0].path, folder)
        (folder / name).write_text(damage)
        for command in ("retrain", "record"):
            code, err = _main(
                [command, str(folder), "-o", str(sandbox / "out")] if command == "record" else [command, str(folder)],
                capsys,
            )
            assert code == 2 and str(folder / name) in err and "delete" not in err, (command, name, err)


# --- the same classes on the Python entry points the commands call ----------------------------------------------------


def test_the_python_entry_points_refuse_bad_values_and_missing_paths(tmp_path):
    from lmcompanion import campaign, runner
    from lmcompanion.errors import LMCError
    from lmcompanion.experiments.pool import train_all

    runs = experiments.plan(["ar_ed/baseline"], "smoke", seeds=1, device="cpu")
    for kw in (
        {"jobs": 0},
        {"jobs": 1, "threads": 0},
        {"jobs": 1, "budget_s": float("nan")},
        {"jobs": 1, "budget_s": float("inf")},
    ):
        with pytest.raises(LMCError, match="must be a"):
            train_all(runs, store=RunStore(tmp_path / "runs"), **kw)
    for kw in ({"budget_min": float("nan")}, {"budget_min": 0}, {"max_minutes": 0}, {"max_minutes": float("inf")}):
        with pytest.raises(LMCError, match="must be a finite number of minutes"):
            campaign.run("smoke", device="cpu", out=tmp_path / "out", log=lambda *a: None, **kw)
    src = tmp_path / "nb.py"
    src.write_text('# %% tags=["parameters"]\nprofile = "cpu"\n')
    with pytest.raises(LMCError, match="own source"):
        runner.run_notebook(src, src)
    with pytest.raises(LMCError, match=r"run_notebook\(timeout=nan\).*finite number of seconds > 0"):
        runner.run_notebook(src, tmp_path / "x.ipynb", timeout=float("nan"))
    with pytest.raises(LMCError, match="does not exist"):
        recorded.import_dir(tmp_path / "typo", RunStore(tmp_path / "runs"))
    assert not (tmp_path / "out").exists() and not (tmp_path / "runs").exists() and not (tmp_path / "x.ipynb").exists()


def test_a_signal_a_library_turns_into_its_own_error_still_stops_the_campaign(tmp_path, monkeypatch):
    """Dynamo, compiling during the campaign's check, catches a KeyboardInterrupt and raises its own error: the
    campaign must still stop as the signal says, not record a failed item and go on."""
    from lmcompanion import campaign

    def swallowing(step, *args, **kwargs):
        try:
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(5)
        except KeyboardInterrupt as exc:
            raise RuntimeError("a library's own error") from exc

    monkeypatch.setattr(campaign.runner, "_execute", swallowing)
    with signals.policy(), pytest.raises(KeyboardInterrupt) as got:
        campaign.run("smoke", device="cpu", out=tmp_path / "out", log=lambda *a: None)
    assert signals.signum_of(got.value) == signal.SIGTERM
    progress = json.loads((tmp_path / "out" / "campaign" / "smoke" / "progress.json").read_text())
    assert [v["status"] for v in progress["steps"].values()] == ["interrupted"]
