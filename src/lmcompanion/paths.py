"""Where the package reads data and writes caches and runs.

Three environment variables, each optional:

- ``LMC_DATA_DIR``: a folder with local copies of the corpora (the layout of ``../shared/data``). The Makefile
  and ``.ci/run`` set it when ``../shared/data`` exists. Unset, corpora come from the Hugging Face hub.
- ``LMC_RUNS_DIR``: the run store (default ``runs/`` in the repository, else ``~/.cache/lmcompanion/runs``).
- ``LMC_CACHE_DIR``: tokenizers and token caches (default ``.cache/`` in the repository).
"""

from __future__ import annotations

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


def data_dir() -> Path | None:
    env = os.environ.get("LMC_DATA_DIR")
    return Path(env).expanduser() if env else None
