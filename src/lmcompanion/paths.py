"""Where the package reads data and writes caches and runs.

Four environment variables, each optional:

- ``LMC_DATA_DIR``: a folder with local copies of the corpora (the layout of ``../shared/data``). The Makefile
  and ``.ci/run`` set it when ``../shared/data`` exists. Unset, corpora come from the Hugging Face hub.
- ``LMC_RUNS_DIR``: the run store (default ``runs/`` in the repository, else ``~/.cache/lmcompanion/runs``).
- ``LMC_CACHE_DIR``: tokenizers and token caches (default ``.cache/`` in the repository).
- ``LMC_FLOPS_DIR``: counted FLOPs (default ``flops/`` in the cache folder). They depend on nothing but the model's
  config and code and the torch version, so processes that keep apart caches of data may share them: ``make unit``
  points its workers, each with its own cache folder, at the one ``make nbval`` and ``make book`` read.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path


def repo_root() -> Path | None:
    """The source checkout this package was installed from (editable install), if any."""
    root = Path(__file__).resolve().parents[2]
    if (root / "pyproject.toml").is_file() and (root / "src" / "lmcompanion").is_dir():
        return root
    return None


def _default(sub: str, hidden: bool) -> Path:
    root = repo_root()
    if root is not None:
        return root / (f".{sub}" if hidden else sub)
    return Path.home() / ".cache" / "lmcompanion" / sub


def runs_dir() -> Path:
    env = os.environ.get("LMC_RUNS_DIR")
    return Path(env).expanduser() if env else _default("runs", hidden=False)


def cache_dir() -> Path:
    env = os.environ.get("LMC_CACHE_DIR")
    return Path(env).expanduser() if env else _default("cache", hidden=True)


def flops_dir() -> Path:
    env = os.environ.get("LMC_FLOPS_DIR")
    return Path(env).expanduser() if env else cache_dir() / "flops"


def data_dir() -> Path | None:
    env = os.environ.get("LMC_DATA_DIR")
    return Path(env).expanduser() if env else None


def atomic_write(path: Path, write, *, fsync: bool = False) -> None:
    """Write a file whole or not at all: ``write`` (bytes, a str, or a function given a binary file object) fills a
    temporary file beside ``path`` (named by this process, so two processes never share one), which then replaces
    ``path``. On any failure (a full disk, an interrupt) the temporary file is removed and ``path`` is left as it was;
    the error is raised for the caller to name the fix."""
    path = Path(path)
    tmp = path.with_name(f"{path.name}.tmp{os.getpid()}")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(tmp, "wb") as f:
            if isinstance(write, str):
                f.write(write.encode("utf-8"))
            elif isinstance(write, (bytes, bytearray, memoryview)):
                f.write(write)
            else:
                write(f)
            f.flush()
            if fsync:
                os.fsync(f.fileno())
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def file_sha256(path: Path) -> str:
    """The SHA-256 of a file's bytes, as hex."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()
