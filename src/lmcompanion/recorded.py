"""Recorded runs: finished runs made elsewhere (a GPU, another machine), committed without weights.

A recorded run is one JSON file under ``book/recorded/<profile>/`` with everything the book shows about a run and
everything needed to judge it: the experiment, profile and seed, the full config, every metrics record, the summary,
and its provenance (device, GPU, library versions, commit, code and data fingerprints, the run key, the command that
made it, its wall time). Never its weights.

- ``python -m lmcompanion record RUN_FOLDER... [-o book/recorded]`` writes such files from finished runs (on the
  machine that made them);
- ``python -m lmcompanion import-recorded [book/recorded]`` imports them into the run store (``make book`` does
  this first), as run folders marked ``recorded.json`` that are finished and intact but have no ``model.pt``. The
  files are untrusted input (made by someone else): each is validated completely before anything is written, no
  value in it names a path, and each run is imported atomically;
- :func:`arms` finds, for a chapter's experiments, the recorded runs at each profile other than the build's, so the
  notebooks show them beside the build's own runs and judge the claims at that scale too.

A recorded run is used only while its config is the config planned for its experiment at its profile today (seed
and device aside); one recorded under an older config is listed as stale and left out of every table and verdict.

**Measures of a run's files.** A verdict row whose measure reads a trained run's own files (its weights, a retrieval
run's embeddings) cannot be decided from metrics. Such a measure is declared once, where it is computed
(:func:`measure`, a decorator); a GPU slot computes every declared measure of a run right after the run finishes
(:mod:`lmcompanion.campaign.measures`) and records it in the run's file (``measures``), and on the imported run the
declared function returns the recorded value instead of reading files that are not there.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import inspect
import json
import math
import os
import re
import shutil
import tempfile
import typing
from pathlib import Path
from typing import Callable

from . import estimate, experiments, models, paths, untrusted
from . import data as data_kinds
from .config import PROFILES, suggest
from .errors import LMCError
from .run import RunConfig
from .train import Run, RunStore
from .train.store import DIGESTS, RECORDED as MARKER, SUMMARY_DIGEST, _slug, write_summary

FORMAT = "lmcompanion-recorded-run/1"
# A folder beside the profiles' folders that holds a GPU campaign's own reports (its check, bench and progress: see
# lmcompanion.campaign), not recorded runs: import_dir leaves it alone.
REPORTS = "campaign"


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
        raise LMCError(
            f"{run.path} is not the config of experiment {cfg.name!r} at any profile (overrides?): only "
            "runs of an experiment as registered can be recorded"
        )
    summary = {k: v for k, v in run.summary.items() if k not in (DIGESTS, SUMMARY_DIGEST)}
    found = mfu(cfg, summary, run.env)
    if found is not None:  # a GPU run carries its own model FLOPs utilisation beside its tokens/s and peak memory
        summary["mfu"] = found
    return {
        "format": FORMAT,
        "experiment": cfg.name,
        "profile": profile,
        "seed": cfg.seed,
        "config": cfg.to_dict(),
        "metrics": _raw_metrics(run),
        "summary": summary,
        "provenance": run.env,
    }


def mfu(cfg: RunConfig, summary: dict, provenance: dict) -> float | None:
    """A run's model FLOPs utilisation: its counted training FLOPs per token (:meth:`flops_per_token` of its model)
    times its tokens/s, over the dense bf16 peak of the GPU that made it (:data:`lmcompanion.estimate.PEAK_BF16`);
    None for a run made on a CPU or a GPU whose peak the book does not know."""
    gpu, speed = (provenance or {}).get("gpu"), summary.get("tokens_per_s")
    peak = estimate.peak_flops(gpu) if isinstance(gpu, str) else None
    if not peak or not isinstance(speed, (int, float)) or speed <= 0:
        return None
    return float(f"{models.flops_per_token(cfg.model) * speed / peak:.4g}")


def file_name(record: dict) -> str:
    return f"{record['experiment'].replace('/', '__')}-s{record['seed']}.json"


def write(runs: list[Run], out: Path) -> list[Path]:
    written = []
    for run in runs:
        record = export(run)
        path = Path(out) / record["profile"] / file_name(record)
        written.append(write_record(path, record))
    return written


def write_record(path: Path, record: dict) -> Path:
    """Write one recorded-run file whole (``record`` as :func:`export` gives it, measures and all)."""
    try:
        paths.atomic_write(path, json.dumps(record, indent=1, sort_keys=True) + "\n")
    except OSError as exc:
        raise LMCError(f"cannot write {path} ({exc.strerror}): free disk space or choose another folder (-o)") from None
    return path


def _raw_metrics(run: Run) -> list[dict]:
    return [json.loads(line) for line in (run.path / "metrics.jsonl").read_text().splitlines() if line]


MAX_BYTES = untrusted.RECORDED_RUN.limit  # a recorded run is metrics and provenance: far smaller than this
_COVERED_SUMMARY = {"final": dict, "steps": int, "train_time_s": (int, float)}  # what every reader of a summary reads
IMPORTING = ".import-"  # a run being imported: .import-<pid>-*, renamed into place (resources.sweep removes stale ones)
ARCHIVES = (".tgz", ".tar.gz", ".tar")  # a campaign's --archive: recorded runs inside, imported without unpacking


def _number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _format() -> untrusted.Format:
    return dataclasses.replace(untrusted.RECORDED_RUN, limit=MAX_BYTES)


def _bad(path, what: str) -> LMCError:
    return _format().error(path, what)


def _unknown_keys(cls, d, prefix: str = "") -> list[str]:
    """The dotted keys of ``d`` that are not fields of the config dataclass ``cls``, each with the closest valid
    key."""
    if not isinstance(d, dict) or not dataclasses.is_dataclass(cls):
        return []
    hints = typing.get_type_hints(cls)
    names = {f.name for f in dataclasses.fields(cls)}
    out = []
    for key, value in d.items():
        if key not in names:
            valid = [f"{prefix}{n}" for n in sorted(names)]
            out.append(f"{prefix}{key!s:.80}{suggest(f'{prefix}{key}', valid)}")
            continue
        inner = [a for a in (typing.get_args(hints[key]) or (hints[key],)) if dataclasses.is_dataclass(a)]
        if inner:
            out += _unknown_keys(inner[0], value, f"{prefix}{key}.")
    return out


_BUILD_ERRORS = (LMCError, KeyError, TypeError, ValueError, AttributeError, OverflowError)


def _why(d, exc: Exception) -> str:
    """Why the config ``d`` does not build: every key that is not a setting (with the closest one), else the error."""
    unknown = []
    if isinstance(d, dict):
        parts = {"model": ("family", models.config_class), "data": ("kind", data_kinds.config_class)}
        unknown = _unknown_keys(RunConfig, {k: v for k, v in d.items() if k not in parts})
        for part, (tag, config_class) in parts.items():
            sub = d.get(part)
            try:
                cls = config_class(sub.get(tag)) if isinstance(sub, dict) else None
            except _BUILD_ERRORS:
                cls = None
            if cls is not None:
                unknown += _unknown_keys(cls, {k: v for k, v in sub.items() if k != tag}, f"{part}.")
    if unknown:
        return f"{'it is' if len(unknown) == 1 else 'they are'} not settings: {', '.join(unknown)}"
    return f"{type(exc).__name__}: {str(exc)[:300]}"


def config_from(d, path: Path, fix: str) -> RunConfig:
    """The run config ``d`` read from ``path`` (a run's config.json); a config that does not build is an error naming
    the file, every key that is not a setting (with the closest one) or else what is wrong, and ``fix``."""
    try:
        return RunConfig.from_dict(d)
    except _BUILD_ERRORS as exc:
        raise LMCError(f"{path}: its config does not build ({_why(d, exc)}); {fix}") from None


def validate(record, path: Path) -> RunConfig:
    """Check a recorded-run file completely (it was made by someone else: untrusted input) and return its config.

    Its format and version, every field's type, the experiment (registered), profile and seed, a config that builds
    and is that experiment's, metrics records of finite numbers by step, a summary with the fields the book reads,
    and a provenance of plain values; then every field against :data:`lmcompanion.untrusted.RECORDED_RUN` (types and
    ranges). Nothing of it ever names a path: the run's folder is named by the file's digest."""
    if not isinstance(record, dict):
        raise _bad(path, f"it holds a JSON {type(record).__name__}, not an object")
    if record.get("format") != FORMAT:
        raise _bad(path, f"its format is {str(record.get('format'))[:80]!r}; this version of the book reads {FORMAT!r}")
    missing = [
        k for k in ("experiment", "profile", "seed", "config", "metrics", "summary", "provenance") if k not in record
    ]
    if missing:
        raise _bad(path, f"it has no {', '.join(missing)}")
    name, profile, seed = record["experiment"], record["profile"], record["seed"]
    if not isinstance(name, str) or name not in experiments.all_experiments():
        raise _bad(path, f"experiment {str(name)[:80]!r} is not one of this book's (python -m lmcompanion list)")
    if not isinstance(profile, str) or profile not in PROFILES:
        raise _bad(path, f"profile {str(profile)[:80]!r} is not one of {', '.join(PROFILES)}")
    if not isinstance(seed, int) or isinstance(seed, bool) or not 0 <= seed <= 2**31:
        raise _bad(path, f"seed {str(seed)[:40]!r} is not a non-negative integer")
    if not isinstance(record["config"], dict):
        raise _bad(path, "its config is not an object")
    try:
        cfg = RunConfig.from_dict(record["config"])
    except _BUILD_ERRORS as exc:
        raise _bad(path, f"its config does not build ({_why(record['config'], exc)})") from None
    if cfg.name != name or cfg.seed != seed:
        raise _bad(path, f"its config is of {cfg.name!r} seed {cfg.seed}, not of {name!r} seed {seed}")
    metrics = record["metrics"]
    if not isinstance(metrics, list) or not metrics:
        raise _bad(path, "its metrics are not a non-empty list of records")
    for i, r in enumerate(metrics):
        if not isinstance(r, dict) or not isinstance(r.get("step"), int) or isinstance(r.get("step"), bool):
            raise _bad(path, f"metrics record {i} is not an object with an integer step")
        wrong = [k for k, v in r.items() if not isinstance(k, str) or not _number(v) or not math.isfinite(v)]
        if wrong:
            raise _bad(path, f"metrics record {i} has values that are not numbers: {[str(w)[:40] for w in wrong[:3]]}")
    summary = record["summary"]
    if not isinstance(summary, dict):
        raise _bad(path, "its summary is not an object")
    for key, kind in _COVERED_SUMMARY.items():
        if not isinstance(summary.get(key), kind) or isinstance(summary.get(key), bool):
            raise _bad(path, f"its summary's {key!r} is missing or not a {getattr(kind, '__name__', 'number')}")
    if not all(isinstance(k, str) and _number(v) and math.isfinite(v) for k, v in summary["final"].items()):
        raise _bad(path, "its summary's final evaluation has values that are not finite numbers")
    prov = record["provenance"]
    if not isinstance(prov, dict) or not all(isinstance(k, str) for k in prov):
        raise _bad(path, "its provenance is not an object")
    if not all(v is None or isinstance(v, (str, int, float, bool, list, dict)) for v in prov.values()):
        raise _bad(path, "its provenance holds values that are not JSON")
    if prov.get("key") is not None and not (isinstance(prov["key"], str) and re.match(untrusted.HEX12, prov["key"])):
        raise _bad(path, f"its provenance key {str(prov.get('key'))[:40]!r} is not a run key (12 hexadecimal digits)")
    found = record.get("measures", {})
    if not isinstance(found, dict) or not all(
        isinstance(v, (int, float, list, dict))
        and not isinstance(v, bool)
        and all(_number(x) and math.isfinite(x) for x in _numbers(v))
        for v in found.values()
    ):
        raise _bad(
            path, "its measures are not an object of finite numbers (a number, a list or an object of them each)"
        )
    untrusted.check(record, path, _format())  # every field's type and range
    return cfg


def _numbers(value) -> list:
    return list(value.values()) if isinstance(value, dict) else value if isinstance(value, list) else [value]


def _parse(label, data: bytes) -> tuple[dict, RunConfig, bytes]:
    fmt = _format()
    if len(data) > fmt.limit:
        raise _bad(label, f"it is {len(data):,} bytes, more than a recorded run can be ({fmt.limit:,})")
    record = untrusted.parse_json(data, label, fmt)
    return record, validate(record, label), data


def parse(label, data: bytes) -> tuple[dict, RunConfig, bytes]:
    """A recorded-run file's bytes (from an archive, say), bounded, parsed and validated completely: (the record, its
    config, the bytes)."""
    return _parse(label, data)


def read(path: Path) -> tuple[dict, RunConfig, bytes]:
    """One recorded-run file: its record, its config and its bytes, read through :mod:`lmcompanion.untrusted` and
    validated (:func:`validate`)."""
    return _parse(path, untrusted.read_bytes(path, _format()))


def _files(folder: Path) -> list[Path]:
    """The recorded-run files under ``folder`` (not its campaign reports), each confined to it (a link that leads
    outside is refused by name)."""
    found = []
    for p in sorted(folder.rglob("*.json")):
        rel = p.relative_to(folder)
        if rel.parts[0] == REPORTS or not (p.is_file() or p.is_symlink()):
            continue
        untrusted.confined(folder, rel.as_posix(), p, _format(), what="the file")
        found.append(p)
    return found


def _archive_records(archive: Path) -> list[tuple[str, bytes]]:
    """The recorded-run files of a campaign archive (``<top>/<profile>/<name>.json``; its reports left out), read in
    memory through :func:`lmcompanion.untrusted.read_tar`: nothing is unpacked."""
    members = untrusted.read_tar(archive, dataclasses.replace(untrusted.CAMPAIGN_ARCHIVE, member_limit=MAX_BYTES))
    out = []
    for name, data in sorted(members.items()):
        parts = name.split("/")
        if not name.endswith(".json") or REPORTS in parts[:2]:
            continue
        out.append((f"{archive}:{name}", data))
    return out


def sources(what: Path | str | None) -> list[tuple[str, bytes]]:
    """What ``import-recorded`` was given, as (label, bytes) of each recorded-run file: a folder (every ``*.json``
    under it but its campaign reports), one recorded-run file, or a campaign archive (``.tgz``). A path that does not
    exist is an error; without a path, ``book/recorded`` (which may hold none)."""
    given = what is not None
    path = Path(what) if given else default_dir()
    fmt = _format()
    if not path.exists():
        if not given:
            return []
        raise LMCError(
            f"{path} does not exist: name a folder of recorded runs (like book/recorded, or a campaign's "
            "output folder), one recorded-run file (.json), or a campaign archive (.tgz)"
        )
    if path.is_dir():
        files = _files(path)
        if given and not files:
            raise LMCError(
                f"{path} holds no recorded-run files (*.json outside its campaign/ reports): name the "
                "folder that holds them (like book/recorded), one such file, or a campaign archive"
            )
        return [(str(p), untrusted.read_bytes(p, fmt)) for p in files]
    if path.name.endswith(ARCHIVES):
        found = _archive_records(path)
        if not found:
            raise LMCError(
                f"{path} holds no recorded-run files (<top>/<profile>/<name>.json): is it a campaign archive?"
            )
        return found
    if path.suffix == ".json":
        return [(str(path), untrusted.read_bytes(path, fmt))]
    raise LMCError(
        f"{path} is neither a folder of recorded runs, a recorded-run file (.json), nor a campaign archive "
        f"({', '.join(ARCHIVES)})"
    )


def import_dir(folder: Path | None = None, store: RunStore | None = None) -> list[Run]:
    """Import every recorded run of ``folder`` (a folder, one recorded-run file or a campaign archive: see
    :func:`sources`) into the store (idempotent). Every file is read through :mod:`lmcompanion.untrusted` and
    validated first (:func:`validate`): one invalid file imports nothing. Each run is then written into a temporary
    folder of the store and renamed into place, so an import that fails halfway leaves no half-imported run."""
    store = store or RunStore()
    records = [(label, *_parse(label, data)) for label, data in sources(folder)]
    imported = []
    for path, record, cfg, data in records:
        sha = hashlib.sha256(data).hexdigest()
        run_dir = store.root / f"{_slug(cfg.name)}-s{cfg.seed}-recorded-{sha[:12]}"
        if run_dir.resolve().parent != store.root.resolve():  # never outside the store, whatever the file says
            raise _bad(path, "its name would place the run outside the run store")
        run = Run(run_dir)
        if run.finished:
            imported.append(run)
            continue
        imported.append(_import_one(store, run_dir, path, record, sha))
    return imported


def _import_one(store: RunStore, run_dir: Path, path: Path, record: dict, sha: str) -> Run:
    store.root.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f"{IMPORTING}{os.getpid()}-", dir=store.root))
    try:
        (tmp / "config.json").write_text(json.dumps(record["config"], indent=1, sort_keys=True))
        (tmp / "env.json").write_text(json.dumps(record["provenance"], indent=1, sort_keys=True))
        (tmp / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in record["metrics"]))
        (tmp / MARKER).write_text(
            json.dumps({"file": str(path), "sha256": sha, "profile": record["profile"]}, indent=1)
        )
        # what came with the run and no longer names anything here (weights and embeddings do not travel)
        summary = {k: v for k, v in record["summary"].items() if k not in (DIGESTS, "embeddings", SUMMARY_DIGEST)}
        write_summary(tmp, summary)
        if record.get("measures"):
            (tmp / MEASURES_FILE).write_text(json.dumps(record["measures"], indent=1, sort_keys=True))
        if run_dir.exists():  # an older import of the same file, damaged: replaced whole
            shutil.rmtree(run_dir)
        os.rename(tmp, run_dir)
    except OSError as exc:
        raise LMCError(
            f"cannot import {path} into {store.root} ({exc.strerror}): free disk space or point "
            "LMC_RUNS_DIR at a writable folder; nothing was left half-imported"
        ) from None
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return Run(run_dir)


def is_recorded(run: Run) -> bool:
    return (run.path / MARKER).is_file()


# --- measures of a run's files, recorded with it (see the module doc) -------------------------------------------

MEASURES_FILE = "measures.json"  # an imported run's recorded measures, by key (:meth:`Measure.key`)


@dataclasses.dataclass(frozen=True)
class Measure:
    """A measure of a trained run's files: ``compute(run, *args)`` (a number, or a list or dict of numbers; a
    ``device`` keyword where it has one), recorded for the runs ``applies`` accepts at each of ``args``."""

    name: str
    compute: Callable
    applies: Callable[[RunConfig], bool]
    args: tuple[tuple, ...] = ((),)

    def key(self, args: tuple) -> str:
        """How the record names its value at ``args``: ``<name>/<arg>/...``."""
        return "/".join([self.name, *map(str, args)])

    def bound(self, run, args: tuple, kwargs: dict) -> tuple:
        """The arguments of a call, the function's defaults filled in and its ``device`` left out (``f(run)`` and
        ``f(run, "val")`` name one value)."""
        call = inspect.signature(self.compute).bind(run, *args, **kwargs)
        call.apply_defaults()
        return tuple(v for k, v in list(call.arguments.items())[1:] if k != "device")


MEASURES: dict[str, Measure] = {}


def measure(name: str, applies: Callable[[RunConfig], bool], args=((),)):
    """Decorator: declare a measure of a run's files (:class:`Measure`), recorded with the runs ``applies`` accepts
    at each of ``args``. The decorated function computes it on a run with its files; on a recorded run it returns
    the value recorded with it, and where none was, raises :class:`lmcompanion.train.store.NoRunFiles` (a verdict row
    then says it needs the run's files)."""

    def declare(fn: Callable) -> Callable:
        if name in MEASURES:
            raise ValueError(f"the measure {name!r} is declared twice")
        m = MEASURES[name] = Measure(name, fn, applies, tuple(tuple(a) for a in args))

        @functools.wraps(fn)
        def read(run, *a, **kw):
            if not isinstance(run, Run) or not is_recorded(run):  # a run made here (or a stand-in for one)
                return fn(run, *a, **kw)
            key = m.key(m.bound(run, a, kw))
            found = recorded_measures(run).get(key)
            if found is None:
                run.require_files(f"files, and no {key} was recorded with it")
            return found

        read.measure = m
        return read

    return declare


def recorded_measures(run: Run) -> dict:
    """The measures recorded with an imported run, by key (none for a run made here)."""
    path = run.path / MEASURES_FILE
    return json.loads(path.read_text()) if path.is_file() else {}


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
        planned = {
            r.name: _comparable(r.config)
            for r in experiments.plan(list(names), profile, seeds=1, device="cpu", needs=False)
        }
        found = out[profile] = Found(profile, {}, [])
        for run in sorted(by_profile[profile], key=lambda r: (r.config.name, r.seed)):
            if planned.get(run.config.name) == _comparable(run.config):
                found.runs.setdefault(run.config.name, []).append(run)
            else:
                found.stale.append(run)
    return out


__all__ = [
    "ARCHIVES",
    "FORMAT",
    "Found",
    "MEASURES",
    "MEASURES_FILE",
    "Measure",
    "REPORTS",
    "arms",
    "default_dir",
    "export",
    "import_dir",
    "is_recorded",
    "measure",
    "profile_of",
    "read",
    "recorded_measures",
    "recorded_profile",
    "write",
    "write_record",
]
