"""Recorded runs: finished runs made elsewhere (a GPU, another machine), committed without weights.

A recorded run is one JSON file under ``book/recorded/<profile>/`` with everything the book shows about a run and
everything needed to judge it: the experiment, profile and seed, the full config, every metrics record, the summary,
and its provenance (device, GPU, library versions, commit, code and data fingerprints, the run key, the command that
made it, its wall time). Never its weights.

- ``python -m lmcompanion record RUN_FOLDER... [-o book/recorded]`` writes such files from finished runs (on the
  machine that made them);
- ``python -m lmcompanion import-recorded [book/recorded]`` imports them into the run store (``make book`` does
  this first), as run folders marked ``recorded.json`` that are finished and intact but have no ``model.pt``;
- :func:`arms` finds, for a chapter's experiments, the recorded runs at each profile other than the build's, so the
  notebooks show them beside the build's own runs and judge the claims at that scale too.

A recorded run is used only while its config is the config planned for its experiment at its profile today (seed
and device aside); one recorded under an older config is listed as stale and left out of every table and verdict.
"""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

from . import experiments, paths
from .config import PROFILES, digest
from .errors import LMCError
from .run import RunConfig
from .train import Run, RunStore
from .train.store import DIGESTS, RECORDED as MARKER, SUMMARY
from .train.checkpoint import file_sha256

FORMAT = "lmcompanion-recorded-run/1"


def default_dir() -> Path:
    root = paths.repo_root()
    return (root if root is not None else Path.cwd()) / "book" / "recorded"


def _comparable(cfg: RunConfig) -> dict:
    """A config without what may differ between the recording machine and this one (the device; the seed is
    compared on its own)."""
    d = cfg.to_dict()
    d.pop("device")
    d.pop("seed")
    return d


def profile_of(cfg: RunConfig) -> str | None:
    """The profile whose experiment config this run's config is (None: a custom config, e.g. with overrides)."""
    try:
        exp = experiments.get(cfg.name)
    except LMCError:
        return None
    for profile in PROFILES:
        if _comparable(exp.build(profile)) == _comparable(cfg):
            return profile
    return None


def export(run: Run) -> dict:
    """The recorded form of a finished run of the store."""
    run.check()
    cfg = run.config
    profile = profile_of(cfg)
    if profile is None:
        raise LMCError(f"{run.path} is not the config of experiment {cfg.name!r} at any profile (overrides?): only "
                       "runs of an experiment as registered can be recorded")
    summary = {k: v for k, v in run.summary.items() if k != DIGESTS}
    return {"format": FORMAT, "experiment": cfg.name, "profile": profile, "seed": cfg.seed,
            "config": cfg.to_dict(), "metrics": _raw_metrics(run), "summary": summary,
            "provenance": run.env}


def file_name(record: dict) -> str:
    return f"{record['experiment'].replace('/', '__')}-s{record['seed']}.json"


def write(runs: list[Run], out: Path) -> list[Path]:
    written = []
    for run in runs:
        record = export(run)
        path = Path(out) / record["profile"] / file_name(record)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
        written.append(path)
    return written


def _raw_metrics(run: Run) -> list[dict]:
    return [json.loads(line) for line in (run.path / "metrics.jsonl").read_text().splitlines() if line]


def import_dir(folder: Path | None = None, store: RunStore | None = None) -> list[Run]:
    """Import every recorded run under ``folder`` into the store (idempotent)."""
    folder = Path(folder) if folder is not None else default_dir()
    store = store or RunStore()
    imported = []
    for path in sorted(folder.rglob("*.json")) if folder.is_dir() else []:
        try:
            record = json.loads(path.read_text())
        except ValueError as exc:
            raise LMCError(f"{path} is not valid JSON ({exc}); restore it from git") from None
        if record.get("format") != FORMAT:
            raise LMCError(f"{path} is not a recorded run (format {record.get('format')!r}, expected {FORMAT!r})")
        key = record["provenance"].get("key") or digest(record["config"])
        slug = record["experiment"].replace("/", "_")
        run_dir = store.root / f"{slug}-s{record['seed']}-recorded-{key}"
        run = Run(run_dir)
        if run.finished and json.loads((run_dir / MARKER).read_text()).get("sha256") == file_sha256(path):
            imported.append(run)
            continue
        run_dir.mkdir(parents=True, exist_ok=True)
        (run_dir / "config.json").write_text(json.dumps(record["config"], indent=1, sort_keys=True))
        (run_dir / "env.json").write_text(json.dumps(record["provenance"], indent=1, sort_keys=True))
        (run_dir / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in record["metrics"]))
        (run_dir / MARKER).write_text(json.dumps({"file": str(path), "sha256": file_sha256(path),
                                                  "profile": record["profile"]}, indent=1))
        summary = dict(record["summary"])
        summary[DIGESTS] = {"metrics.jsonl": file_sha256(run_dir / "metrics.jsonl")}
        tmp = run_dir / f"{SUMMARY}.tmp{os.getpid()}"
        tmp.write_text(json.dumps(summary, indent=1, sort_keys=True))
        os.replace(tmp, run_dir / SUMMARY)
        imported.append(Run(run_dir))
    return imported


def is_recorded(run: Run) -> bool:
    return (run.path / MARKER).is_file()


def recorded_profile(run: Run) -> str:
    return json.loads((run.path / MARKER).read_text())["profile"]


@dataclasses.dataclass
class Found:
    """The recorded runs of some experiments at one profile: usable ones by name, and stale ones."""

    profile: str
    runs: dict[str, list[Run]]
    stale: list[Run]


def arms(names: list[str], *, exclude_profile: str | None = None, store: RunStore | None = None) -> dict[str, Found]:
    """For each profile (other than ``exclude_profile``) with recorded runs of any of ``names``: the recorded runs of
    the experiments planned at that profile (:func:`lmcompanion.experiments.plan`) whose config is the planned one
    today (seed and device aside: a session may record more seeds than the profile's default), by experiment name
    and sorted by seed; recorded runs of ``names`` that match no planned config (an older config, an experiment no
    longer planned there) are stale."""
    store = store or RunStore()
    by_profile: dict[str, list[Run]] = {}
    for run in store.runs():
        if is_recorded(run) and run.config.name in names:
            profile = recorded_profile(run)
            if profile != exclude_profile:
                by_profile.setdefault(profile, []).append(run)
    out: dict[str, Found] = {}
    for profile in (p for p in PROFILES if p in by_profile):
        planned = {r.name: _comparable(r.config)
                   for r in experiments.plan(list(names), profile, seeds=1, device="cpu", needs=False)}
        found = out[profile] = Found(profile, {}, [])
        for run in sorted(by_profile[profile], key=lambda r: (r.config.name, r.seed)):
            if planned.get(run.config.name) == _comparable(run.config):
                found.runs.setdefault(run.config.name, []).append(run)
            else:
                found.stale.append(run)
    return out


__all__ = ["FORMAT", "Found", "arms", "default_dir", "export", "import_dir", "is_recorded", "profile_of",
           "recorded_profile", "write"]
