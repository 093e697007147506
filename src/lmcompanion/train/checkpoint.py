"""Checkpoints: written atomically (temporary file, fsync, rename) and read with ``weights_only=True``.

A failed write (a full disk, a read-only store, an interrupt) removes its temporary file and leaves the previous
checkpoint as it was.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import torch

from ..errors import CheckpointError


def save(state: dict, path: Path) -> None:
    path = Path(path)
    tmp = path.with_name(f"{path.name}.tmp{os.getpid()}")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(tmp, "wb") as f:
            torch.save(state, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        raise CheckpointError(
            f"cannot write {path} ({exc.strerror or exc}): free disk space, or point LMC_RUNS_DIR at a writable folder "
            f"with room; the previous checkpoint, if any, is intact"
        ) from None
    finally:
        tmp.unlink(missing_ok=True)


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


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()
