"""The run store: one folder per run, named by the run's key (:func:`lmcompanion.run.spec`).

A folder ``<runs>/<name>[-<procedure>]-s<seed>-<key>/`` holds

- ``config.json``: the full RunConfig (rebuild it with ``RunConfig.from_dict``),
- ``env.json``: provenance: versions, hardware, git commit, time, and every part of the key (procedure, code
  fingerprint and the modules it covers, data fingerprint),
- ``metrics.jsonl``: train-loss records and evaluations,
- ``model.pt``: the final weights (``ckpt.pt`` while the run is unfinished),
- ``procedure.json``: for runs made by another procedure than the shared trainer, its name and settings,
- ``summary.json``: written last, with the SHA-256 of every other file a reuse reads (:data:`COVERED`: the weights,
  the metrics, the config, the provenance, the procedure's settings, a recorded run's marker) and of its own other
  fields.

A run is *finished and intact* when its summary is readable, matches its own digest, and every file it covers
matches its recorded digest (and no covered file has appeared since). Anything else is not finished: ``store.run(cfg)`` resumes it from its checkpoint, or retrains it (a damaged, missing or
foreign ``model.pt`` included), so a cached run is always exactly the run its key names. ``Run.load_model`` on a
damaged run raises an error that names the one command that repairs it.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import sys
import time
from functools import cached_property
from pathlib import Path

import filelock

from .. import env, models, paths
from ..errors import CheckpointError, LMCError
from ..run import TRAINER, RunConfig, spec
from . import checkpoint
from .trainer import CKPT, METRICS, WEIGHTS, train

SUMMARY = "summary.json"


class NoRunFiles(CheckpointError):
    """A recorded run (made elsewhere, committed with its metrics and provenance) asked for a file that only the run's
    own folder holds: its weights, or what it wrote beside them (a retrieval run's embeddings). Declared here, not in
    :mod:`lmcompanion.errors`: that module is part of every run's code digest, and a class added there would retrain
    every cached run."""


RECORDED = "recorded.json"  # marks a run imported from a recorded file (lmcompanion.recorded): no weights
DIGESTS = "files_sha256"  # summary key: file name -> SHA-256
SUMMARY_DIGEST = "summary_sha256"  # summary key: the SHA-256 of the summary's other fields
# Every file a finished run is read from besides its summary: each present one is in the summary's digests.
COVERED = (WEIGHTS, METRICS, "config.json", "env.json", "procedure.json", RECORDED)
_STRAY = re.compile(r"\.tmp\d+$")  # a temporary file of an atomic write (paths.atomic_write), left by a killed writer


def _summary_digest(summary: dict) -> str:
    rest = {k: v for k, v in summary.items() if k != SUMMARY_DIGEST}
    return hashlib.sha256(json.dumps(rest, sort_keys=True).encode()).hexdigest()


def write_summary(folder: Path, summary: dict) -> None:
    """Seal a finished run: its summary, written last, with the digests of every covered file present in ``folder``
    and of its own other fields."""
    summary = dict(summary)
    summary[DIGESTS] = {name: checkpoint.file_sha256(folder / name) for name in COVERED if (folder / name).is_file()}
    summary[SUMMARY_DIGEST] = _summary_digest(summary)
    _write_json(folder / SUMMARY, summary)


def remove_stray(folder: Path) -> None:
    """Remove the temporary files a killed writer left in a run folder (only the run's own process, holding its
    lock, writes there)."""
    for f in folder.glob("*.tmp*"):
        if _STRAY.search(f.name) and f.is_file():
            f.unlink(missing_ok=True)


def _write_json(path: Path, obj) -> None:
    try:
        paths.atomic_write(path, json.dumps(obj, indent=1, sort_keys=True))
    except OSError as exc:
        raise CheckpointError(
            f"cannot write {path} ({exc.strerror or exc}): free disk space, or point LMC_RUNS_DIR at a writable folder"
        ) from None


def _qualname(fn) -> str:
    return f"{fn.__module__}.{fn.__qualname__}"


def _slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("_") or "run"


def _tag(procedure) -> str:
    return f"-{procedure.__name__}" if procedure is not None else ""


def run_id(cfg: RunConfig, procedure=None) -> str:
    """A run's identity without its key: ``<name>[-<procedure>]-s<seed>@<config digest>``, its folder's name with
    the config's digest in place of the key (the form of the smoke references, ``tests/nbval/runs.json``)."""
    return f"{_slug(cfg.name)}{_tag(procedure)}-s{cfg.seed}@{cfg.hash()}"


class Run:
    """A run folder: its config, summary, provenance, metrics and weights."""

    def __init__(self, path: Path):
        self.path = Path(path)

    def __repr__(self) -> str:
        return f"Run({self.path.name})"

    def _json(self, name: str) -> dict:
        path = self.path / name
        try:
            return json.loads(path.read_text())
        except (OSError, ValueError) as exc:
            raise CheckpointError(f"{path} cannot be read ({type(exc).__name__}); {self.repair_hint()}") from None

    def problem(self) -> str | None:
        """Why this run is not finished and intact (None when it is)."""
        path = self.path / SUMMARY
        if not path.is_file():
            return "it has not finished (no summary.json)"
        try:
            summary = json.loads(path.read_text())
            digests = summary[DIGESTS]
            sealed = summary[SUMMARY_DIGEST]
            if not isinstance(digests, dict):
                raise TypeError
        except (OSError, ValueError, KeyError, TypeError):
            return "its summary.json is unreadable (or made before every file was covered)"
        if sealed != _summary_digest(summary):
            return "its summary.json does not match its own digest (edited or damaged)"
        for name in COVERED:
            f = self.path / name
            if name not in digests:
                if f.is_file():
                    return f"its {name} appeared after the run finished (not in its integrity record)"
                continue
            if not f.is_file():
                return f"its {name} is missing"
            if checkpoint.file_sha256(f) != digests[name]:
                return f"its {name} does not match the digest recorded when the run finished (damaged or replaced)"
        if not {METRICS, "config.json"} <= set(digests):
            return "its summary.json covers neither its metrics nor its config"
        return None

    @property
    def finished(self) -> bool:
        return self.problem() is None

    def repair_hint(self) -> str:
        return (
            f"re-execute the notebook (the store retrains a damaged run), or run "
            f"`python -m lmcompanion retrain {self.path}`"
        )

    def check(self) -> "Run":
        problem = self.problem()
        if problem is not None:
            raise CheckpointError(f"run {self.path} is not usable: {problem}; {self.repair_hint()}")
        return self

    @cached_property
    def config(self) -> RunConfig:
        return RunConfig.from_dict(self._json("config.json"))

    @cached_property
    def summary(self) -> dict:
        return self._json(SUMMARY)

    @cached_property
    def env(self) -> dict:
        return self._json("env.json")

    @cached_property
    def procedure(self) -> dict | None:
        """{"procedure": "module.function", "settings": {...}} for runs not made by the shared trainer."""
        return self._json("procedure.json") if (self.path / "procedure.json").is_file() else None

    @property
    def name(self) -> str:
        return self.config.name

    @property
    def id(self) -> str:
        """The run's identity without its key (:func:`run_id`): its folder's name up to the key, and the digest of
        its config."""
        return f"{self.path.name.rsplit('-', 1)[0]}@{self.config.hash()}"

    @property
    def seed(self) -> int:
        return self.config.seed

    def metrics(self):
        """A DataFrame of every metrics record (train records have ``loss``; evaluations ``eval/<split>``)."""
        import pandas as pd

        path = self.path / METRICS
        try:
            lines = path.read_text().splitlines()
        except OSError as exc:
            raise CheckpointError(f"{path} cannot be read ({exc.strerror}); {self.repair_hint()}") from None
        records = []
        for i, line in enumerate(lines):
            try:
                records.append(json.loads(line))
            except ValueError:
                raise CheckpointError(
                    f"{path} line {i + 1} is not valid JSON (a truncated write?); {self.repair_hint()}"
                ) from None
        return pd.DataFrame(records)

    def evals(self):
        """Evaluation records only, columns ``step`` and one per split (``train``, ``val``, ...)."""
        m = self.metrics()
        cols = [c for c in m.columns if c.startswith("eval/")]
        out = m.dropna(subset=cols, how="all")[["step", *cols]]
        return out.rename(columns={c: c[5:] for c in cols}).reset_index(drop=True)

    def require_files(self, what: str) -> None:
        """Raise :class:`NoRunFiles` if this is a recorded run: ``what`` (its weights, its embeddings) stayed on the
        machine that made it."""
        if (self.path / RECORDED).is_file():
            raise NoRunFiles(
                f"{self.path.name} is a recorded run (made on {self.env.get('gpu') or self.env.get('device')}"
                f"): it has metrics and provenance but not its {what}; train it here to get them"
            )

    def load_model(self, device: str = "cpu"):
        """The trained model, in eval mode (after checking that its weights are the ones this run made)."""
        self.require_files("weights")
        self.check()
        model = models.build(self.config.model)
        model.load_state_dict(checkpoint.load(self.path / WEIGHTS, map_location=device))
        return model.to(device).eval()


class RunStore:
    def __init__(self, root: Path | str | None = None):
        self.root = Path(root) if root is not None else paths.runs_dir()

    def folder(self, cfg: RunConfig, procedure=None, settings=None, *, run_spec=None) -> Path:
        run_spec = run_spec or spec(cfg, _qualname(procedure) if procedure else f"{TRAINER}.train", settings)
        return self.root / f"{_slug(cfg.name)}{_tag(procedure)}-s{cfg.seed}-{run_spec.key}"

    def path(self, cfg: RunConfig, procedure=None, settings=None) -> Path:
        return self.folder(cfg, procedure, settings)

    def get(self, cfg: RunConfig, procedure=None, settings=None) -> Run | None:
        """The finished, intact run of this config (and procedure), if the store has one."""
        run = Run(self.folder(cfg, procedure, settings))
        return run if run.finished else None

    @contextlib.contextmanager
    def _lock(self, folder: Path):
        """Hold the run's lock (a cross-platform file lock on ``.lock``), saying so when another process has it."""
        lock = filelock.FileLock(folder / ".lock")
        try:
            lock.acquire(blocking=False)
        except filelock.Timeout:
            if os.environ.get("LMC_PROGRESS", "1") not in ("0", "false", "off"):  # not inside a notebook
                print(
                    f"waiting: another process is training this run ({folder.name}); it will be reused when "
                    "it finishes",
                    file=sys.stderr,
                    flush=True,
                )
            lock.acquire()
        try:
            yield
        finally:
            lock.release()

    def _mkdir(self, folder: Path) -> None:
        try:
            folder.mkdir(parents=True, exist_ok=True)
            probe = folder / f".write-test{os.getpid()}"
            probe.write_text("")
            probe.unlink()
        except OSError as exc:
            raise CheckpointError(
                f"the run store {self.root} is not writable ({exc.strerror}): set LMC_RUNS_DIR to a writable folder"
            ) from None

    def run(
        self,
        cfg: RunConfig,
        *,
        procedure=None,
        settings=None,
        force: bool = False,
        progress: bool | None = None,
        callbacks=(),
    ) -> Run:
        """The finished run of ``cfg``: reused from the store, or trained (resuming a checkpoint if any).

        ``procedure(cfg, folder, settings, progress=..., callbacks=...) -> summary`` replaces the shared trainer when
        given; it writes ``metrics.jsonl`` and ``model.pt`` in the trainer's formats.
        """
        run_spec = spec(cfg, _qualname(procedure) if procedure else f"{TRAINER}.train", settings)
        folder = self.folder(cfg, procedure, settings, run_spec=run_spec)
        run = Run(folder)
        if not force and run.finished:
            return run
        is_main = int(os.environ.get("RANK", "0")) == 0
        if is_main:
            self._mkdir(folder)
        with self._lock(folder) if is_main else contextlib.nullcontext():  # under DDP, rank 0 holds the lock
            problem = run.problem()
            if problem is None and not force:
                return run  # finished by another process while we waited
            if is_main:
                remove_stray(folder)  # what a killed writer left (we hold the run's lock: nothing else writes here)
                if (folder / SUMMARY).exists():  # finished once, but damaged (or --force): train it again
                    if not force:
                        print(f"retraining {folder.name}: {problem}", file=sys.stderr, flush=True)
                    (folder / SUMMARY).unlink()
                if force:
                    (folder / CKPT).unlink(missing_ok=True)
                world = int(os.environ.get("WORLD_SIZE", "1"))
                _write_json(folder / "config.json", cfg.to_dict())
                _write_json(folder / "env.json", {**env.environment(cfg.device, world), **run_spec.provenance()})
                if procedure is not None:
                    _write_json(
                        folder / "procedure.json", {"procedure": run_spec.procedure, "settings": run_spec.settings}
                    )
            started = time.perf_counter()
            if procedure is None:
                summary = train(cfg, folder, progress=progress, callbacks=callbacks)
            else:
                summary = procedure(cfg, folder, settings, progress=progress, callbacks=callbacks)
            if is_main:
                summary["wall_time_s"] = round(time.perf_counter() - started, 3)  # this process, set-up included
                remove_stray(folder)
                write_summary(folder, summary)
        return Run(folder)

    def runs(self) -> list[Run]:
        """Every finished, intact run in the store."""
        return [r for r in self._folders() if r.finished]

    def damaged(self) -> list[tuple[Run, str]]:
        """Runs that finished once but fail their check, with the reason."""
        out = []
        for r in self._folders():
            if (r.path / SUMMARY).exists():
                problem = r.problem()
                if problem is not None:
                    out.append((r, problem))
        return out

    def _folders(self) -> list[Run]:
        if not self.root.is_dir():
            return []
        return [Run(p) for p in sorted(self.root.iterdir()) if p.is_dir()]


def retrain(folder: Path | str, *, progress: bool | None = None) -> Run:
    """Train a run folder's config again (by its procedure), e.g. after its files were damaged."""
    import importlib

    folder = Path(folder)
    run = Run(folder)
    try:
        cfg = RunConfig.from_dict(json.loads((folder / "config.json").read_text()))
    except (OSError, ValueError) as exc:
        raise LMCError(
            f"{folder / 'config.json'} cannot be read as a run config ({type(exc).__name__}: "
            f"{str(exc)[:300]}): correct it where it was edited, or re-execute the notebook that made the "
            "run (it trains the run again, in the folder its key names)"
        ) from None
    procedure, settings = None, None
    if run.procedure is not None:
        module, _, name = run.procedure["procedure"].rpartition(".")
        procedure, settings = getattr(importlib.import_module(module), name), run.procedure["settings"]
        settings_cls = getattr(procedure, "settings_class", None)
        if settings_cls is not None:
            settings = settings_cls(**settings)
    return RunStore(folder.parent).run(cfg, procedure=procedure, settings=settings, force=True, progress=progress)


def run(cfg: RunConfig, **kwargs) -> Run:
    """Train-or-reuse ``cfg`` in the default store (``$LMC_RUNS_DIR``, else ``runs/``)."""
    return RunStore().run(cfg, **kwargs)
