"""Command-line argument types: one per kind of value, used by every command, so that a wrong value stops where it is
parsed, with argparse's message naming the argument and what it takes (``argument --max-minutes: expected a finite
number of minutes > 0, got '0'``), exit 2, before anything runs.

A value that passes its type can still be refused later for a reason that needs more than the value (a profile an
experiment does not run at); a value that does not pass never reaches the code.
"""

from __future__ import annotations

import argparse
import math
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Mapping, Sequence

from . import paths
from .config import check_profile
from .errors import ConfigError


def _fail(what: str, text: str):
    return argparse.ArgumentTypeError(f"expected {what}, got {text!r}")


def _int(text: str, low: int, what: str, high: int | None = None) -> int:
    try:
        value = int(str(text).strip())
    except ValueError:
        raise _fail(what, text) from None
    if value < low or (high is not None and value > high):
        raise _fail(what, text)
    return value


def positive_int(text: str) -> int:
    """A whole number >= 1 (jobs, threads, seeds, steps, rounds)."""
    return _int(text, 1, "a whole number >= 1")


def nonnegative_int(text: str) -> int:
    """A whole number >= 0 (a seed, warm-up steps; ``--threads 0``: torch's own choice)."""
    return _int(text, 0, "a whole number >= 0")


MAX_LANES = 64  # the most lanes (runs side by side, a process each, on one device) a campaign slot runs


def lanes(text: str) -> int:
    """A number of lanes of a campaign slot: a whole number from 1 to :data:`MAX_LANES`."""
    return _int(text, 1, f"a number of lanes, a whole number from 1 to {MAX_LANES}", MAX_LANES)


def seed(text: str) -> int:
    """A seed: a whole number from 0 to 2**31 - 1."""
    return _int(text, 0, "a seed, a whole number from 0 to 2147483647", 2**31 - 1)


def _positive_float(text: str, what: str) -> float:
    try:
        value = float(str(text).strip())
    except ValueError:
        raise _fail(what, text) from None
    if not math.isfinite(value) or value <= 0:
        raise _fail(what, text)
    return value


def positive_number(text: str) -> float:
    """A finite number > 0 (epochs, a factor)."""
    return _positive_float(text, "a finite number > 0")


def minutes(text: str) -> float:
    """A finite number of minutes > 0 (a budget, a time limit)."""
    return _positive_float(text, "a finite number of minutes > 0")


def command_minutes(text: str) -> float:
    """A time limit for one command: a finite number of minutes >= 1 (less leaves no time to plan and do a step, so
    the command could only stop and ask to be run again)."""
    value = _positive_float(text, "a finite number of minutes >= 1")
    if value < 1:
        raise _fail("a finite number of minutes >= 1 (set-up and one step need about a minute)", text)
    return value


def seconds(text: str) -> float:
    """A finite number of seconds > 0 (a budget, a time limit)."""
    return _positive_float(text, "a finite number of seconds > 0")


def profile(text: str) -> str:
    """One of the profiles (:data:`lmcompanion.config.PROFILES`)."""
    try:
        return check_profile(text)
    except ConfigError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


DEVICES = ("auto", "cpu", "cuda")


def device(text: str) -> str:
    """auto, cpu or cuda."""
    if text not in DEVICES:
        raise argparse.ArgumentTypeError(f"expected one of {', '.join(DEVICES)}, got {text!r}")
    return text


def override(text: str) -> str:
    """KEY=VALUE (a config field and its value; the field and the value are checked when the config is built)."""
    key, sep, _ = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE (e.g. train.lr=1e-3), got {text!r}")
    return text


# --- paths: what the user typed, checked for what the command does with it ------------------------------------------


def existing_file(text: str) -> str:
    """A file that exists (an input: a notebook source)."""
    path = Path(text).expanduser()
    if not path.exists():
        raise argparse.ArgumentTypeError(f"{text!r} does not exist (a typo?)")
    if path.is_dir():
        raise argparse.ArgumentTypeError(f"{text!r} is a folder; name a file")
    return str(path)


def existing_dir(text: str) -> str:
    """A folder that exists (an input: a run folder, executed notebooks, a pack)."""
    path = Path(text).expanduser()
    if not path.exists():
        raise argparse.ArgumentTypeError(f"{text!r} does not exist (a typo?)")
    if not path.is_dir():
        raise argparse.ArgumentTypeError(f"{text!r} is a file; name the folder that holds it")
    return str(path)


def existing_path(text: str) -> str:
    """A file or a folder that exists (an input the command accepts in either form)."""
    path = Path(text).expanduser()
    if not path.exists():
        raise argparse.ArgumentTypeError(f"{text!r} does not exist (a typo?)")
    return str(path)


def output_dir(text: str) -> str:
    """A folder to write into: it may not exist yet (it is made), but it is not a file."""
    path = Path(text).expanduser()
    if path.exists() and not path.is_dir():
        raise argparse.ArgumentTypeError(f"{text!r} is a file, not a folder to write into")
    return str(path)


def output_file(text: str) -> str:
    """A file to write (replaced whole if it exists), or a folder to write it into where the command allows that;
    its folder must be a folder."""
    path = Path(text).expanduser()
    parent = path.parent
    if parent.exists() and not parent.is_dir():
        raise argparse.ArgumentTypeError(f"{text!r}: {str(parent)!r} is a file, not a folder")
    return str(path)


def revision(needs: Sequence[tuple[str, str]], repo: Path | None = None):
    """A type for a git revision of this checkout that has what a command needs: ``needs`` is (file, text) pairs,
    each file of the revision containing the text (e.g. ("src/lmcompanion/train/trainer.py", "def setup(")). The
    revision must resolve to a commit; the type returns the text as given (the command labels its output with it)."""

    def parse(text: str) -> str:
        root = repo or paths.repo_root()
        if root is None or not (root / ".git").exists():
            raise argparse.ArgumentTypeError(
                "needs a git checkout of the package (an editable install), which this is not"
            )
        if not text or text.startswith("-"):
            raise argparse.ArgumentTypeError(f"expected a git revision (a commit, a tag, HEAD~1), got {text!r}")
        try:
            got = subprocess.run(
                ["git", "rev-parse", "--verify", "--quiet", f"{text}^{{commit}}"],
                cwd=root,
                capture_output=True,
                text=True,
                timeout=30,
            )
        except (OSError, subprocess.SubprocessError) as exc:
            raise argparse.ArgumentTypeError(f"cannot run git to resolve {text!r} ({exc})") from None
        if got.returncode != 0 or not got.stdout.strip():
            raise argparse.ArgumentTypeError(f"{text!r} is not a commit of {root} (git log --oneline lists them)")
        sha = got.stdout.strip()
        for file, needle in needs:
            shown = subprocess.run(["git", "show", f"{sha}:{file}"], cwd=root, capture_output=True, timeout=30)
            if shown.returncode != 0 or needle.encode() not in shown.stdout:
                raise argparse.ArgumentTypeError(
                    f"revision {text} ({sha[:12]}) has no {needle.strip()!r} in {file}, which this command needs: "
                    "give a later revision (git log --oneline -- " + file + ")"
                )
        return text

    parse.__name__ = "revision"
    return parse


# --- environment variables: arguments too, checked by the same types where a command starts --------------------------

SWITCH = ("0", "false", "off", "1", "true", "on")  # as the trainer reads LMC_PROGRESS: the first three mean off


def switch(text: str) -> str:
    """On or off: 0, false or off; 1, true or on."""
    if text not in SWITCH:
        raise argparse.ArgumentTypeError(f"expected one of {', '.join(SWITCH)}, got {text!r}")
    return text


@dataclass(frozen=True)
class Variable:
    """An environment variable the package reads: the type that checks its value (as for a command-line argument),
    what it is for, and a value to give as an example in a message."""

    type: Callable[[str], object]
    what: str
    example: str


ENVIRONMENT = {
    "LMC_RUNS_DIR": Variable(output_dir, "the run store", "runs"),
    "LMC_CACHE_DIR": Variable(output_dir, "tokenizers and token caches", ".cache"),
    "LMC_FLOPS_DIR": Variable(output_dir, "counted FLOPs", ".cache/flops"),
    "LMC_DATA_DIR": Variable(existing_dir, "the offline corpora", "../shared/data"),
    "LMC_PROGRESS": Variable(switch, "progress bars", "0"),
    "LMC_CELL_TIMEOUT": Variable(seconds, "the seconds one notebook cell may run", "3600"),
}


def environment_value(name: str, environ: Mapping[str, str] | None = None):
    """The checked value of the environment variable ``name`` (None: not set, or set to the empty string); a wrong
    value is a :class:`ConfigError` naming the variable, what it takes and the fix."""
    value = (os.environ if environ is None else environ).get(name)
    if not value:
        return None
    var = ENVIRONMENT[name]
    try:
        return var.type(value)
    except argparse.ArgumentTypeError as exc:
        raise ConfigError(
            f"environment variable {name} ({var.what}): {exc}; set it to a valid value (e.g. "
            f"{name}={var.example}) or unset it (unset {name})"
        ) from None


def environment(environ: Mapping[str, str] | None = None) -> None:
    """Check every environment variable of :data:`ENVIRONMENT` that is set (each command does, before it runs)."""
    for name in ENVIRONMENT:
        environment_value(name, environ)


__all__ = [
    "DEVICES",
    "ENVIRONMENT",
    "MAX_LANES",
    "SWITCH",
    "Variable",
    "command_minutes",
    "device",
    "environment",
    "environment_value",
    "existing_dir",
    "existing_file",
    "existing_path",
    "lanes",
    "minutes",
    "nonnegative_int",
    "output_dir",
    "output_file",
    "override",
    "positive_int",
    "positive_number",
    "profile",
    "revision",
    "seconds",
    "seed",
    "switch",
]
