"""Execute a notebook source (a jupytext percent ``.py`` file) with papermill under a profile.

``run_notebook(src, out, profile="cpu", params={...})`` reads the source with jupytext, checks every parameter
name against the source's ``parameters`` cell, each value's type against the literal default there, and the profile
against the known profiles (the errors list the valid choices), executes it with papermill on the ``python3``
kernel, and writes the executed ``.ipynb`` without the metadata that changes on every run (timestamps, random cell
ids, jupytext and papermill bookkeeping), so that re-executing an unchanged notebook gives an identical file.

What the kernel process prints itself (not the notebook's outputs, which come back over its channels) is collected
and shown after the run, less two messages that are none of ours (see ``KERNEL_NOISE``).
"""

from __future__ import annotations

import ast
import datetime
import hashlib
import math
import os
import re
import signal
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any, Mapping

from . import argtypes, paths, resources, signals
from .config import PROFILES, check_profile, suggest
from .env import git_state
from .errors import ConfigError, LMCError

KERNEL = "python3"
# Per-cell time limit of run_notebook when none is given (seconds; unset: none).
TIMEOUT_ENV = "LMC_CELL_TIMEOUT"
# Printed by every kernel, whatever the notebook does: ipykernel's warning that jupyter_client's default transport
# (TCP on localhost) is unencrypted, and the KeyboardInterrupt it logs when jupyter_client interrupts it on shutdown
# (jupyter_client interrupts a kernel before asking it to shut down, even after a notebook that succeeded).
KERNEL_NOISE = re.compile(r"Kernel is running over TCP without encryption|KeyboardInterrupt caught in kernel")


def _missing_extra(exc: ModuleNotFoundError) -> LMCError:
    return LMCError(
        f"executing notebooks needs {exc.name}, which is in the book and test extras: "
        "pip install -e '.[book]' (make install installs it)"
    )


def read_source(src: Path):
    try:
        import jupytext
    except ModuleNotFoundError as exc:
        raise _missing_extra(exc) from None

    src = Path(src)
    if not src.is_file():
        raise ConfigError(f"notebook source {src} does not exist")
    return jupytext.read(src)


def parameters_cell(nb):
    cells = [c for c in nb.cells if c.cell_type == "code" and "parameters" in c.metadata.get("tags", [])]
    if len(cells) != 1:
        raise ConfigError(f"a notebook needs exactly one cell tagged 'parameters' (found {len(cells)})")
    return cells[0]


def parameters_of(nb) -> dict[str, Any]:
    """Name -> default value of every assignment in the ``parameters`` cell (literals only)."""
    out = {}
    source = parameters_cell(nb).source
    try:
        body = ast.parse(source).body
    except SyntaxError as exc:
        raise ConfigError(
            f"the notebook's parameters cell has a syntax error on its line {exc.lineno} "
            f"({exc.msg}): {(exc.text or '').strip()!r}; fix that line (one `name = literal` per line)"
        ) from None
    for node in body:
        target = (
            node.targets[0]
            if isinstance(node, ast.Assign) and len(node.targets) == 1
            else getattr(node, "target", None)
        )
        if isinstance(target, ast.Name) and getattr(node, "value", None) is not None:
            try:
                out[target.id] = ast.literal_eval(node.value)
            except ValueError:
                raise ConfigError(
                    f"the parameters cell sets {target.id} to {ast.unparse(node.value)!r}, which is not "
                    "a literal: papermill can only replace literals (numbers, strings, lists, dicts, "
                    "None)"
                ) from None
    return out


_SCALARS = (bool, int, float, str)


def _accepts(default: Any, value: Any) -> bool:
    """Whether ``value`` may replace the literal ``default`` of a parameters cell."""
    if default is None:  # "None: the profile's ...": None or one value, never a list or a dict
        return value is None or isinstance(value, _SCALARS)
    if isinstance(default, bool):
        return isinstance(value, bool)
    if isinstance(default, int):
        return isinstance(value, int) and not isinstance(value, bool)
    if isinstance(default, float):
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if isinstance(default, (list, tuple)):
        return isinstance(value, (list, tuple))
    return isinstance(value, type(default))  # str, dict, ...


def _kind(value: Any) -> str:
    return "None" if value is None else f"{'an' if type(value).__name__[0] in 'aeiou' else 'a'} {type(value).__name__}"


def _expected(default: Any) -> str:
    if default is None:
        return "None or one value (an int, float, str or bool)"
    return {float: "a float (or an int)", tuple: "a list"}.get(type(default)) or _kind(default)


def check_parameters(nb, params: Mapping[str, Any], src: Path | str = "notebook") -> None:
    """Every name in ``params`` is a parameter of ``nb``, every value of the type its default there has, and the
    profile is a known one; otherwise a ConfigError naming what is wrong, before anything runs."""
    valid = parameters_of(nb)
    unknown = [k for k in params if k not in valid]
    if unknown:
        hints = "".join(suggest(k, valid) for k in unknown)
        raise ConfigError(
            f"{src}: unknown parameter{'s' if len(unknown) > 1 else ''} {', '.join(map(repr, unknown))}{hints}; "
            f"valid parameters: {', '.join(f'{k} (default {v!r})' for k, v in valid.items())}"
        )
    for name, value in params.items():
        default = valid[name]
        if not _accepts(default, value):
            raise ConfigError(
                f"{src}: parameter {name!r} is given {_kind(value)} ({value!r}) but takes {_expected(default)}, "
                f"like its default in the notebook's parameters cell ({name} = {default!r})"
            )
    if "profile" in params:
        check_profile(params["profile"])
    elif "profile" in valid:
        check_profile(valid["profile"])


def _merge_streams(outputs: list) -> list:
    """Adjacent stdout (or stderr) outputs as one: how prints are split into messages depends on timing."""
    merged: list = []
    for out in outputs:
        if (
            out.get("output_type") == "stream"
            and merged
            and merged[-1].get("output_type") == "stream"
            and merged[-1].get("name") == out.get("name")
        ):
            merged[-1]["text"] += out["text"]
        else:
            merged.append(out)
    return merged


def clean(nb, provenance: Mapping[str, Any] | None = None):
    """Drop what changes between identical runs: timestamps, paths, random ids, tool bookkeeping, and the
    timing-dependent split of printed text into several stream outputs. ``provenance`` (profile, parameters,
    source digest, commit, execution time) is kept under ``metadata.lmcompanion`` for the generated pages."""
    nb.metadata.pop("jupytext", None)
    pm = nb.metadata.get("papermill")
    if pm is not None:
        if provenance is not None:
            nb.metadata["lmcompanion"] = {**provenance, "duration_s": round(float(pm.get("duration") or 0.0), 1)}
        nb.metadata["papermill"] = {"parameters": pm.get("parameters", {})}
    for i, cell in enumerate(nb.cells):
        cell["id"] = f"cell-{i}"
        cell.metadata.pop("papermill", None)
        cell.metadata.pop("execution", None)
        if cell.cell_type == "code":
            cell["outputs"] = _merge_streams(cell.get("outputs", []))
    return nb


# Plumbing a reader does not need to see, one click away on the page (Jupyter Book's cell tags, as QuantEcon and d2l
# hide theirs): the parameters cell and papermill's injected copy of it whole; the cell that calls ``nb.setup`` and
# every cell that shows nothing, by their code only (a toggle line where the code was). The three at the top of every
# page say what they hold (myst-nb's per-cell ``code_prompt_show``/``code_prompt_hide``), not "Show code cell".
HIDE_CELL, HIDE_INPUT = "hide-cell", "hide-input"
SETUP_CALL = re.compile(r"\bnb\.setup\(")
PROMPTS = {  # what a folded cell's toggle says, shown and hidden
    "parameters": ("The notebook's parameters and their defaults", "Hide the parameters"),
    "injected-parameters": ("The parameters this page was executed with", "Hide the executed parameters"),
    "setup": ("The set-up code: imports and nb.setup", "Hide the set-up code"),
}


def _label(cell, which: str) -> None:
    show, hide = PROMPTS[which]
    cell.metadata["mystnb"] = {**cell.metadata.get("mystnb", {}), "code_prompt_show": show, "code_prompt_hide": hide}


def tag_plumbing(nb):
    """Tag the cells a reader need not see (see ``HIDE_CELL``): the ``parameters`` and ``injected-parameters`` cells
    ``hide-cell``; the setup cell and every executed code cell without outputs ``hide-input``; the first three
    labelled (``PROMPTS``). Other tags are kept."""
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        tags = list(cell.metadata.get("tags", []))
        which = next((t for t in ("injected-parameters", "parameters") if t in tags), None)
        if which is not None:
            add = HIDE_CELL
            _label(cell, which)
        elif SETUP_CALL.search(cell.source):
            add = HIDE_INPUT
            _label(cell, "setup")
        elif not cell.get("outputs"):
            add = HIDE_INPUT
        else:
            continue
        if add not in tags:
            cell.metadata["tags"] = tags + [add]
    return nb


def _kernel_manager(log, started: dict | None = None):
    """jupyter_client's kernel manager, with the kernel process's own stdout and stderr written to ``log``; the
    kernel's process id goes to ``started["pid"]`` (for the signal policy: a signal is passed on to the kernel)."""
    from jupyter_client.manager import AsyncKernelManager, KernelManager

    class LoggedKernelManager(AsyncKernelManager):
        async def start_kernel(self, **kw):
            kw.setdefault("stdout", log)
            kw.setdefault("stderr", log)
            result = await KernelManager._async_start_kernel(self, **kw)
            process = getattr(self.provisioner, "process", None)
            if started is not None and process is not None:
                started["pid"] = process.pid
            return result

    return LoggedKernelManager


class _KernelSignals:
    """While a notebook executes, the command's signal (:mod:`lmcompanion.signals`) goes to the kernel as an interrupt
    (SIGINT to its process group): a run it trains finishes its step and checkpoint, the cell stops, and the command
    then stops with the signal. A kernel that does not stop within the grace period is killed; a signal before the
    kernel started stops the command at once."""

    def __init__(self, grace: float = signals.GRACE_S):
        self.kernel: dict = {}
        self.signum: int | None = None
        self.grace = grace
        self.timer = None
        self.killed = False

    def __call__(self, signum: int) -> None:
        pid = self.kernel.get("pid")
        if pid is None:
            raise signals.exception(signum)
        self.signum = self.signum or signum
        try:
            os.killpg(os.getpgid(pid), signal.SIGINT)
        except (ProcessLookupError, PermissionError):
            return
        if self.timer is None:
            self.timer = threading.Timer(self.grace, self._kill, (pid,))
            self.timer.daemon = True
            self.timer.start()

    def _kill(self, pid: int) -> None:
        self.killed = True
        try:
            os.killpg(os.getpgid(pid), signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass

    def close(self) -> None:
        if self.timer is not None:
            self.timer.cancel()


def output_path(src: Path, out: Path | str | None) -> Path:
    """Where ``run_notebook`` writes: ``out`` (inside it, as ``<source name>.ipynb``, when it is a folder), else next
    to the source. An output that would overwrite the notebook's own source, or any jupytext source (``.py``), is
    refused before anything is written."""
    src = Path(src)
    out = Path(out) if out is not None else src.with_suffix(".ipynb")
    if out.is_dir():
        out = out / src.with_suffix(".ipynb").name
    same = out.resolve() == src.resolve() or (out.exists() and src.exists() and os.path.samefile(out, src))
    if same:
        raise ConfigError(
            f"the output {out} is the notebook's own source: give -o another file (an .ipynb), or "
            f"leave -o out to write {src.with_suffix('.ipynb')}"
        )
    if out.suffix == ".py":
        raise ConfigError(f"the output {out} would be a .py file (a notebook source): give -o an .ipynb file")
    return out


def _replay_kernel_log(log) -> None:
    """Print what the kernel process printed itself, but for ``KERNEL_NOISE``."""
    log.flush()
    log.seek(0)
    for line in log.read().decode(errors="replace").splitlines():
        if line.strip() and not KERNEL_NOISE.search(line):
            print(line, file=sys.stderr)


def _hint(ename: str, evalue: str) -> str:
    """The fix for a notebook's resource error, which the kernel reports by name only."""
    if ename in ("PermissionError", "ReadOnlyError") or "Read-only file system" in evalue:
        return (
            ". A folder the notebook writes is not writable: set LMC_RUNS_DIR and LMC_CACHE_DIR to writable "
            "folders (relative ones mean the folder run-notebook was started in)"
        )
    if "No space left" in evalue or "Disk quota" in evalue:
        return ". The disk is full: free space and run the same command again (finished runs are kept)"
    if ename == "MemoryError":
        return ". The notebook ran out of memory (RAM): close other programs, or lower its batch (-p overrides ...)"
    return ""


def failed_path(out: Path) -> Path:
    """Where a notebook run that fails or is stopped keeps its partly executed notebook: beside its output."""
    return out.with_name(out.stem + ".failed.ipynb")


def kept_note(kept: Path) -> str:
    """What a message says of a kept partial notebook."""
    return (
        f"the partly executed notebook is kept in {kept} (the next run of this notebook replaces it, and removes "
        "it when the notebook succeeds)"
    )


def run_notebook(
    src: Path | str,
    out: Path | str | None = None,
    *,
    profile: str | None = None,
    params: Mapping[str, Any] | None = None,
    kernel: str = KERNEL,
    progress: bool | None = None,
    timeout: float | None = None,
) -> Path:
    """Execute ``src`` with papermill; write the cleaned result to ``out`` (default: next to the source).

    ``timeout``: seconds any one cell may run (default: $LMC_CELL_TIMEOUT, else no limit); a cell that runs longer
    stops the notebook with an error naming it.
    """
    import nbformat

    try:
        import papermill
        from nbclient.exceptions import CellTimeoutError, DeadKernelError
    except ModuleNotFoundError as exc:
        raise _missing_extra(exc) from None

    src = Path(src)
    params = dict(params or {})
    if profile is not None:
        if "profile" in params and params["profile"] != profile:
            raise ConfigError(f"profile given twice: --profile {profile} and -p profile {params['profile']}")
        params["profile"] = profile
    if timeout is None:
        timeout = argtypes.environment_value(TIMEOUT_ENV)
    elif not (isinstance(timeout, (int, float)) and math.isfinite(timeout) and timeout > 0):
        raise ConfigError(
            f"run_notebook(timeout={timeout!r}): the per-cell timeout (run-notebook --timeout) must be "
            "a finite number of seconds > 0, or None for no limit"
        )
    out = output_path(src, out)
    nb = read_source(src)
    check_parameters(nb, params, src)
    nb.metadata.setdefault("kernelspec", {"name": kernel, "display_name": "Python 3", "language": "python"})
    resources.absolute_env()  # the kernel runs in the notebook's folder: relative LMC_* paths mean this one
    out.parent.mkdir(parents=True, exist_ok=True)
    resources.sweep(out.parent, recursive=False)  # a partial notebook a killed run left
    out.with_name(f".{out.stem}.partial.ipynb").unlink(missing_ok=True)  # the same, named by an older version
    for i, cell in enumerate(nb.cells):  # jupytext gives random ids; fixed ones keep the output stable
        cell["id"] = f"cell-{i}"
    env_before = os.environ.get("LMC_PROGRESS"), os.environ.get("LMC_COMMAND")
    os.environ["LMC_PROGRESS"] = "0"  # no progress bars inside the book's outputs
    # what runs made by this notebook record as the command that made them
    os.environ["LMC_COMMAND"] = " ".join(
        [
            "python -m lmcompanion run-notebook",
            str(src),
            "--profile",
            str(params.get("profile", "(default)")),
            *(f"-p {k} {v!r}" for k, v in params.items() if k != "profile"),
        ]
    )
    tmp = out.with_name(f".{out.stem}.partial{os.getpid()}.ipynb")
    kept = failed_path(out)

    def last_started() -> str:  # the cell that was running when execution stopped
        cells = nbformat.read(tmp, as_version=4).cells if tmp.exists() else []
        started = [i for i, c in enumerate(cells) if c.metadata.get("papermill", {}).get("start_time")]
        return str(started[-1]) if started else "?"

    def keep_partial() -> str:
        if not tmp.exists():
            return ""
        paths.atomic_write(kept, nbformat.writes(clean(nbformat.read(tmp, as_version=4))))
        tmp.unlink()
        note = kept_note(kept)
        return f"\n{note[0].upper()}{note[1:]}."

    to_kernel = _KernelSignals()

    def stopped(where: str) -> KeyboardInterrupt:
        partial = bool(keep_partial())
        if to_kernel.killed:
            text = (
                f"the notebook's kernel did not stop within {to_kernel.grace:g} s of the interrupt {where} and "
                "was killed (a run it was training resumes from its last checkpoint)"
            )
        else:
            text = f"the notebook's kernel was interrupted {where} (a run it was training keeps its checkpoint)"
        signals.note(text + (f"; {kept_note(kept)}" if partial else ""))
        return signals.exception(to_kernel.signum)

    try:
        with tempfile.TemporaryFile() as log:
            try:
                with signals.forwarding(to_kernel):
                    papermill.execute_notebook(
                        nb,
                        str(tmp),
                        parameters=params,
                        kernel_name=kernel,
                        cwd=str(src.parent.resolve()),
                        progress_bar=sys.stderr.isatty() if progress is None else progress,
                        log_output=False,
                        execution_timeout=timeout,
                        kernel_manager_class=_kernel_manager(log, to_kernel.kernel),
                    )
            except CellTimeoutError:
                raise  # the kernel's complaints about being stopped mid-cell are ours to drop
            except BaseException:
                if to_kernel.signum is None:
                    _replay_kernel_log(log)
                raise
            else:
                _replay_kernel_log(log)
            finally:
                to_kernel.close()
    except (papermill.PapermillExecutionError, DeadKernelError) as exc:
        if to_kernel.signum is not None:
            raise stopped(f"in cell {getattr(exc, 'cell_index', last_started())}") from None
        if isinstance(exc, DeadKernelError):
            raise LMCError(
                f"{src}: the kernel died in cell {last_started()}: its process ended or was killed (out "
                "of memory?)" + keep_partial()
            ) from None
        raise LMCError(
            f"{src} failed in cell {exc.cell_index}: {exc.ename}: {exc.evalue}"
            + _hint(exc.ename, exc.evalue)
            + keep_partial()
        ) from None
    except CellTimeoutError:
        raise LMCError(
            f"{src}: cell {last_started()} ran longer than the per-cell timeout of {timeout:g} s "
            f"(run-notebook --timeout, or ${TIMEOUT_ENV}) and was stopped" + keep_partial()
        ) from None
    finally:
        for name, value in zip(("LMC_PROGRESS", "LMC_COMMAND"), env_before):
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
    state = git_state()
    provenance = {
        "source": str(src),
        "source_sha256": hashlib.sha256(src.read_bytes()).hexdigest(),
        "profile": params.get("profile", parameters_of(nb).get("profile")),
        "parameters": params,
        "commit": state["commit"],
        "dirty": state["dirty"],
        "executed": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    }
    executed = tag_plumbing(clean(nbformat.read(tmp, as_version=4), provenance))
    nbformat.write(executed, tmp)
    os.replace(tmp, out)
    kept.unlink(missing_ok=True)  # a failed run's partial notebook: this run replaced it
    if to_kernel.signum is not None:  # the signal came after the last cell: the notebook is whole and written
        signals.note(f"the notebook had finished; its output is in {out}")
        raise signals.exception(to_kernel.signum)
    return out


def code_of(nb) -> list[str]:
    """The code cells' sources, without papermill's injected-parameters cell (to compare a source and its output)."""
    return [
        c.source for c in nb.cells if c.cell_type == "code" and "injected-parameters" not in c.metadata.get("tags", [])
    ]


__all__ = [
    "PROFILES",
    "check_parameters",
    "clean",
    "code_of",
    "parameters_of",
    "read_source",
    "run_notebook",
    "tag_plumbing",
]
