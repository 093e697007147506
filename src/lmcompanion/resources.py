"""What every command does about its folders and its machine: paths as the user typed them, temporary files a killed
process left, and resource errors that name their fix.

- :func:`absolute_env`: a relative ``LMC_RUNS_DIR``, ``LMC_CACHE_DIR``, ``LMC_FLOPS_DIR`` or ``LMC_DATA_DIR`` means
  the folder where the command was started; it is made absolute there, once, so that a notebook's kernel (which runs
  in the notebook's folder), a pool's workers and torchrun's processes all read the same folder.
- :func:`sweep`: every temporary file or folder the package writes carries its writer's process id
  (``name.tmp<pid>`` of an atomic write, ``.import-<pid>-*`` of an import, ``.<notebook>.partial<pid>.ipynb`` of a
  notebook run, ``lmc-rev-<pid>-*`` and ``lmc-ddp-<pid>-*`` in the temporary folder); one whose writer is gone (killed
  with SIGKILL, or the machine lost power) is removed by the next command that finds it.
- :func:`explain`: a full disk, a read-only or forbidden folder, and running out of memory become one line that names
  the file and the fix (the variable to point elsewhere, the option to lower), not a traceback.
"""

from __future__ import annotations

import errno
import os
import re
import shutil
import tempfile
from pathlib import Path

from . import paths

ENV_PATHS = ("LMC_RUNS_DIR", "LMC_CACHE_DIR", "LMC_FLOPS_DIR", "LMC_DATA_DIR")
_TEMPORARY = re.compile(
    r"\.tmp(?P<a>\d+)$|^\.import-(?P<b>\d+)-|\.partial(?P<c>\d+)\.ipynb$|^lmc-(?:rev|ddp)-(?P<d>\d+)-"
)


def absolute_env(start: Path | None = None) -> None:
    """Make each relative path of :data:`ENV_PATHS` absolute against ``start`` (default: the current folder), with
    ``~`` expanded, so that every process started from here reads the folder the user meant."""
    start = Path(start) if start is not None else Path.cwd()
    for name in ENV_PATHS:
        value = os.environ.get(name)
        if value:
            path = Path(value).expanduser()
            if not path.is_absolute():
                os.environ[name] = str(start / path)
            elif str(path) != value:
                os.environ[name] = str(path)


def pid_alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's live process
    except OverflowError:
        return False
    return True


def writer(name: str) -> int | None:
    """The process id a temporary entry's name carries (None: not one of ours)."""
    m = _TEMPORARY.search(name)
    if m is None:
        return None
    return int(next(g for g in m.groups() if g is not None))


def sweep(folder: Path | str, recursive: bool = True) -> list[Path]:
    """Remove the temporary files and folders under ``folder`` whose writer is no longer running; returns them."""
    folder = Path(folder)
    removed: list[Path] = []
    if not folder.is_dir():
        return removed
    walker = os.walk(folder) if recursive else [(str(folder), *_split(folder))]
    for root, dirs, files in walker:
        for entry in list(dirs) + list(files):
            pid = writer(entry)
            if pid is None or pid_alive(pid):
                continue
            path = Path(root) / entry
            try:
                if path.is_dir() and not path.is_symlink():
                    shutil.rmtree(path)
                    if entry in dirs:
                        dirs.remove(entry)
                else:
                    path.unlink()
                removed.append(path)
            except OSError:
                pass  # not ours to remove (another user's, a read-only folder): left as it is
    return removed


def _split(folder: Path) -> tuple[list[str], list[str]]:
    dirs, files = [], []
    try:
        for e in os.scandir(folder):
            (dirs if e.is_dir(follow_symlinks=False) else files).append(e.name)
    except OSError:
        pass
    return dirs, files


def sweep_temporary() -> list[Path]:
    """The package's own temporary folders in the system's temporary folder (an old revision's code, a probe)."""
    return sweep(tempfile.gettempdir(), recursive=False)


# --- resource errors ----------------------------------------------------------------------------------------------

_FORBIDDEN = {errno.EACCES, errno.EPERM, errno.EROFS, errno.ENOTDIR}
_FULL = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG}


def _owner(path: Path) -> str:
    """The setting that chooses the folder ``path`` is in."""
    p = Path(os.path.abspath(path))
    for var, root in (("LMC_RUNS_DIR", paths.runs_dir()), ("LMC_CACHE_DIR", paths.cache_dir())):
        root = Path(os.path.abspath(root))
        if p == root or root in p.parents:
            return f"set {var} to a writable folder with room (it is {root})"
    return "choose another folder (the command's -o/--output, where it has one) or make this one writable"


def explain(exc: BaseException, command: str = "the command") -> str | None:
    """One line naming the fix for a resource error (None: not one)."""
    if isinstance(exc, MemoryError) or (
        isinstance(exc, RuntimeError)
        and (
            "can't allocate memory" in str(exc)
            or "not enough memory" in str(exc)
            or "out of memory" in str(exc).lower()
        )
    ):
        fixes = {
            "bench": "lower the batch (--set train.batch_size=N) or --steps",
            "bench-cpu": "bench fewer chapters at a time, or --profile smoke",
            "import-recorded": "a recorded-run file is far larger than a run's metrics can be: check the files "
            "you were given",
            "train": "lower train.batch_size (with train.grad_accum to keep the global batch)",
            "train-chapter": "fewer --jobs (each process holds its own model and data)",
        }
        return (
            f"{command} ran out of memory (RAM): {fixes.get(command, 'close other programs or use a machine with more memory')}"
            "; everything finished before is kept, so run it again after that"
        )
    if isinstance(exc, OSError) and exc.errno in _FORBIDDEN | _FULL:
        where = exc.filename or "a file"
        if exc.errno in _FULL:
            try:
                free = f"{shutil.disk_usage(Path(where).parent).free / 2**20:,.0f} MiB free"
            except (OSError, TypeError, ValueError):
                free = "disk full"
            return (
                f"cannot write {where} ({exc.strerror}; {free}): free disk space, or {_owner(Path(where))}; "
                "then run the same command again (what finished before is kept)"
            )
        return f"cannot write {where} ({exc.strerror}): {_owner(Path(where))}"
    return None


__all__ = ["ENV_PATHS", "absolute_env", "explain", "pid_alive", "sweep", "sweep_temporary", "writer"]
