"""The run store: one folder per run, keyed by a hash of its full config and of the code that trains it.

A folder ``<runs>/<name>-s<seed>-<key>/`` holds

- ``config.json``: the full RunConfig (rebuild it with ``RunConfig.from_dict``),
- ``env.json``: provenance (versions, hardware, git commit, time; and the code fingerprint in the key),
- ``metrics.jsonl``: train-loss records and evaluations,
- ``summary.json``: written last, so its presence means the run finished,
- ``model.pt``: the final weights (``ckpt.pt`` while the run is unfinished),
- ``procedure.json``: for runs made by another procedure than the shared trainer, its name and settings.

``store.run(cfg)`` returns the finished run if there is one and trains it otherwise; an unfinished run
resumes from its checkpoint. ``store.run(cfg, procedure=fn, settings=s)`` runs another training procedure
(for example a write-up's algorithm transcribed literally): ``fn(cfg, folder, s)`` writes ``metrics.jsonl`` and
``model.pt`` in the trainer's formats and returns the summary; its name, settings and code join the key. The key includes a fingerprint of the normalized source of the modules that
compute the run (comments and docstrings ignored), so changing the model or the trainer invalidates cached
runs while editing prose does not.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import json
import os
import re
from functools import cached_property
from pathlib import Path

from .. import env, paths
from ..config import RunConfig, digest


def _settings_dict(settings) -> dict | None:
    return dataclasses.asdict(settings) if dataclasses.is_dataclass(settings) else settings


def family_modules(cfg: RunConfig) -> tuple[str, ...]:
    from .. import data, models

    model_mod = models.families()[cfg.model.family][1].__module__
    data_mod = data.kinds()[cfg.data.kind][0].__module__
    return (model_mod, data_mod)


def _write_json(path: Path, obj) -> None:
    tmp = path.with_name(f"{path.name}.tmp{os.getpid()}")
    tmp.write_text(json.dumps(obj, indent=1, sort_keys=True))
    os.replace(tmp, path)


class Run:
    """A run folder: its config, summary, provenance, metrics and weights."""

    def __init__(self, path: Path):
        self.path = Path(path)

    def __repr__(self) -> str:
        return f"Run({self.path.name})"

    @property
    def finished(self) -> bool:
        return (self.path / "summary.json").is_file()

    @cached_property
    def config(self) -> RunConfig:
        return RunConfig.from_dict(json.loads((self.path / "config.json").read_text()))

    @cached_property
    def summary(self) -> dict:
        return json.loads((self.path / "summary.json").read_text())

    @cached_property
    def env(self) -> dict:
        return json.loads((self.path / "env.json").read_text())

    @cached_property
    def procedure(self) -> dict | None:
        """{"procedure": "module.function", "settings": {...}} for runs not made by the shared trainer."""
        path = self.path / "procedure.json"
        return json.loads(path.read_text()) if path.is_file() else None

    @property
    def name(self) -> str:
        return self.config.name

    @property
    def seed(self) -> int:
        return self.config.seed

    def metrics(self):
        """A DataFrame of every metrics record (train records have ``loss``; evaluations ``eval/<split>``)."""
        import pandas as pd

        lines = (self.path / "metrics.jsonl").read_text().splitlines()
        return pd.DataFrame([json.loads(line) for line in lines if line])

    def evals(self):
        """Evaluation records only, columns ``step`` and one per split (``train``, ``val``, ...)."""
        m = self.metrics()
        cols = [c for c in m.columns if c.startswith("eval/")]
        out = m.dropna(subset=cols, how="all")[["step", *cols]]
        return out.rename(columns={c: c[5:] for c in cols}).reset_index(drop=True)

    def load_model(self, device: str = "cpu"):
        """The trained model, in eval mode."""
        from .. import models
        from . import checkpoint

        model = models.build(self.config.model)
        model.load_state_dict(checkpoint.load(self.path / "model.pt", map_location=device))
        return model.to(device).eval()


def _qualname(fn) -> str:
    return f"{fn.__module__}.{fn.__qualname__}"


def _slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("_") or "run"


class RunStore:
    def __init__(self, root: Path | str | None = None):
        self.root = Path(root) if root is not None else paths.runs_dir()

    def key(self, cfg: RunConfig, procedure=None, settings=None) -> str:
        if procedure is None:
            return digest({"config": cfg.to_dict(), "code": env.code_fingerprint(*family_modules(cfg))})
        return digest({"config": cfg.to_dict(), "procedure": _qualname(procedure), "settings": _settings_dict(settings),
                       "code": env.code_fingerprint(*family_modules(cfg), procedure.__module__)})

    def path(self, cfg: RunConfig, procedure=None, settings=None) -> Path:
        tag = f"-{procedure.__name__}" if procedure is not None else ""
        return self.root / f"{_slug(cfg.name)}{tag}-s{cfg.seed}-{self.key(cfg, procedure, settings)}"

    def get(self, cfg: RunConfig, procedure=None, settings=None) -> Run | None:
        """The finished run of this config (and procedure), if the store has one."""
        run = Run(self.path(cfg, procedure, settings))
        return run if run.finished else None

    @contextlib.contextmanager
    def _lock(self, folder: Path):
        with open(folder / ".lock", "w") as f:
            fcntl.flock(f, fcntl.LOCK_EX)  # another process training the same run: wait for it
            try:
                yield
            finally:
                fcntl.flock(f, fcntl.LOCK_UN)

    def run(self, cfg: RunConfig, *, procedure=None, settings=None, force: bool = False, progress: bool | None = None,
            callbacks=()) -> Run:
        """The finished run of ``cfg``: reused from the store, or trained (resuming a checkpoint if any).

        ``procedure(cfg, folder, settings) -> summary`` replaces the shared trainer when given.
        """
        from .trainer import train

        folder = self.path(cfg, procedure, settings)
        run = Run(folder)
        if run.finished and not force:
            return run
        is_main = int(os.environ.get("RANK", "0")) == 0
        folder.mkdir(parents=True, exist_ok=True)
        with self._lock(folder) if is_main else contextlib.nullcontext():  # under DDP, rank 0 holds the lock
            if run.finished and not force:
                return run  # finished by another process while we waited
            if force and is_main:
                (folder / "summary.json").unlink(missing_ok=True)
            world = int(os.environ.get("WORLD_SIZE", "1"))
            if is_main:
                _write_json(folder / "config.json", cfg.to_dict())
                provenance = env.environment(cfg.device, world)
                modules = family_modules(cfg) + ((procedure.__module__,) if procedure is not None else ())
                provenance["code_fingerprint"] = env.code_fingerprint(*modules)
                provenance["key"] = self.key(cfg, procedure, settings)
                _write_json(folder / "env.json", provenance)
                if procedure is not None:
                    _write_json(folder / "procedure.json",
                                {"procedure": _qualname(procedure), "settings": _settings_dict(settings)})
            if procedure is None:
                summary = train(cfg, folder, progress=progress, callbacks=callbacks)
            else:
                summary = procedure(cfg, folder, settings)
            if is_main:
                _write_json(folder / "summary.json", summary)
        return Run(folder)

    def runs(self) -> list[Run]:
        """Every finished run in the store."""
        if not self.root.is_dir():
            return []
        return [Run(p) for p in sorted(self.root.iterdir()) if (p / "summary.json").is_file()]


def run(cfg: RunConfig, **kwargs) -> Run:
    """Train-or-reuse ``cfg`` in the default store (``$LMC_RUNS_DIR``, else ``runs/``)."""
    return RunStore().run(cfg, **kwargs)
