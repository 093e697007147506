"""Checkpoints: written atomically (temporary file, fsync, rename) and read with ``weights_only=True``.

A failed write (a full disk, a read-only store, an interrupt) removes its temporary file and leaves the previous
checkpoint as it was.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import torch

from ..errors import CheckpointError
from ..paths import atomic_write, file_sha256  # noqa: F401  (file_sha256: the run store's digests)


def save(state: dict, path: Path) -> None:
    """Write ``state`` to ``path`` atomically; a failed write (a full disk: torch's writer then raises RuntimeError
    "unexpected pos", not OSError) is a :class:`CheckpointError` naming the fix, the previous file intact."""
    path = Path(path)
    try:
        atomic_write(path, lambda f: torch.save(state, f), fsync=True)
    except (OSError, RuntimeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else "the write failed"
        raise CheckpointError(
            f"cannot write {path} ({reason}; {_free(path)} free on its disk): free disk space, or point LMC_RUNS_DIR "
            "at a writable folder with room, and run the same command again; the previous checkpoint, if any, is "
            "intact"
        ) from None


def _free(path: Path) -> str:
    try:
        return f"{shutil.disk_usage(path.parent).free / 2**20:,.0f} MiB"
    except OSError:
        return "unknown space"


def load(path: Path, map_location="cpu") -> dict:
    path = Path(path)
    try:
        return torch.load(path, map_location=map_location, weights_only=True)
    except Exception as exc:  # truncated, corrupt, or not a checkpoint at all
        raise CheckpointError(
            f"checkpoint {path} cannot be read ({type(exc).__name__}: {str(exc).splitlines()[0][:200]}). "
            f"Delete it and run the same command again: the run restarts from scratch (nothing else in "
            f"{path.parent} was changed)."
        ) from None
