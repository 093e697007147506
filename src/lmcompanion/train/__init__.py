"""Training: the model-agnostic loop, schedules, checkpoints, DDP helpers and the run store."""

from .schedules import lr_at
from .seeding import seed_everything
from .store import Run, RunStore, run

__all__ = ["Run", "RunStore", "lr_at", "run", "seed_everything"]
