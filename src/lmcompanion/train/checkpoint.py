"""Checkpoints: written atomically (temporary file, fsync, rename) and read with ``weights_only=True``."""

from __future__ import annotations

import os
from pathlib import Path

import torch

from ..errors import CheckpointError


def save(state: dict, path: Path) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{path.name}.tmp{os.getpid()}")
    with open(tmp, "wb") as f:
        torch.save(state, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def load(path: Path, map_location="cpu") -> dict:
    path = Path(path)
    try:
        return torch.load(path, map_location=map_location, weights_only=True)
    except Exception as exc:  # truncated, corrupt, or not a checkpoint at all
        raise CheckpointError(
            f"checkpoint {path} cannot be read ({type(exc).__name__}: {str(exc).splitlines()[0][:200]}). "
            f"Delete it to restart this run from its last finished state (or from scratch), "
            f"or restore a good copy; nothing else in {path.parent} was changed."
        ) from None
