"""Checkpoints: written atomically (temporary file, fsync, rename) and read with ``weights_only=True``.

A failed write (a full disk, a read-only store, an interrupt) removes its temporary file and leaves the previous
checkpoint as it was.
"""

from __future__ import annotations

from pathlib import Path

import torch

from ..errors import CheckpointError
from ..paths import atomic_write, file_sha256  # noqa: F401  (file_sha256: the run store's digests)


def save(state: dict, path: Path) -> None:
    try:
        atomic_write(Path(path), lambda f: torch.save(state, f), fsync=True)
    except OSError as exc:
        raise CheckpointError(
            f"cannot write {path} ({exc.strerror or exc}): free disk space, or point LMC_RUNS_DIR at a writable folder "
            f"with room; the previous checkpoint, if any, is intact"
        ) from None


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
