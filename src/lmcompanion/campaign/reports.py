"""What a campaign keeps in its output folder (``book/recorded`` by default, committed after every slot): the recorded
runs (``DIR/<profile>/``) and its own reports (``DIR/campaign/<profile>/``: ``progress.json``, ``check.json``,
``bench.json``, ``minutes.json``, the measured minutes of every step, which the next slot's plan reads, and
``lanes.json``, the lane speed measured on each device: :mod:`lmcompanion.campaign.lanes`).

Every report read back may have come from another machine, so each is read through :mod:`lmcompanion.untrusted`.
"""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path

from .. import argtypes, paths, recorded, untrusted
from ..errors import LMCError
from ..experiments import PlannedRun
from ..run import RunConfig

REPORTS = recorded.REPORTS  # DIR/campaign/<profile>/: the campaign's own reports
PROGRESS_FORMAT = "lmcompanion-campaign/1"
MINUTES_FORMAT = "lmcompanion-campaign-minutes/1"
MAX_LANES = argtypes.MAX_LANES  # the most lanes (worker processes on one device) a slot runs or a lanes file names
# The lane speed measured on each device (lmcompanion.campaign.lanes): lanes -> aggregate speed-up over one lane.
LANES = untrusted.Format(
    "campaign lanes file",
    fix="restore it from git, or delete it: the next slot measures the lanes again",
    schema={
        "type": "object",
        "properties": {
            "format": {"type": "string"},
            "profile": {"type": "string"},
            "devices": {
                "type": "object",
                "additionalProperties": {
                    "type": "object",
                    "required": ["speedup"],
                    "properties": {
                        "speedup": {
                            "type": "object",
                            "minProperties": 1,
                            "propertyNames": {"pattern": "^[1-9][0-9]?$"},
                            "additionalProperties": {"type": "number", "exclusiveMinimum": 0, "maximum": MAX_LANES},
                        },
                        "gpu": {"type": ["string", "null"]},
                        "run": {"type": "string"},
                        "levels": {"type": "object"},
                        "wall_s": {"type": "number", "minimum": 0},
                    },
                },
            },
        },
    },
)
# The reports by file name, with the format each is read through.
FILES = {
    "progress.json": untrusted.CAMPAIGN_PROGRESS,
    "check.json": untrusted.CAMPAIGN_CHECK,
    "bench.json": untrusted.CAMPAIGN_BENCH,
    "minutes.json": untrusted.CAMPAIGN_MINUTES,
    "lanes.json": LANES,
}


def reports_dir(out: Path, profile: str) -> Path:
    return Path(out) / REPORTS / profile


def read_json(path: Path, fmt: untrusted.Format) -> dict | None:
    """A report's JSON object, or None when the file is not there. A report may have come back from another machine,
    so it is read through :mod:`lmcompanion.untrusted`, and one that fails its format stops with a message."""
    return untrusted.read_json(path, fmt) if Path(path).exists() else None


def read_report(out: Path, profile: str, name: str) -> dict | None:
    """The report ``name`` (one of :data:`FILES`) of ``out`` at ``profile``, read through its format."""
    return read_json(reports_dir(out, profile) / name, FILES[name])


def write_json(path: Path, obj) -> None:
    try:
        paths.atomic_write(path, dumps(obj))
    except OSError as exc:
        raise LMCError(f"cannot write {path} ({exc.strerror}): free disk space or choose another folder (-o)") from None


def dumps(obj) -> str:
    return json.dumps(obj, indent=1, sort_keys=True, default=str) + "\n"


def _without_device(cfg: RunConfig) -> dict:
    d = cfg.to_dict()
    d.pop("device")
    return d


def recorded_path(out: Path, run: PlannedRun) -> Path:
    cfg = run.config
    return Path(out) / run.profile / recorded.file_name({"experiment": cfg.name, "seed": cfg.seed})


def is_recorded(out: Path, run: PlannedRun) -> bool:
    """Whether ``run`` is recorded in ``out`` with the config the plan gives it today (the device aside)."""
    path = recorded_path(out, run)
    if not path.is_file():
        return False
    try:
        record, cfg, _ = recorded.read(path)  # through lmcompanion.untrusted, bounded and validated
    except LMCError:
        return False
    return record.get("profile") == run.profile and _without_device(cfg) == _without_device(run.config)


# --- measured minutes --------------------------------------------------------------------------------------------


def run_key(run: PlannedRun) -> str:
    """What a run's measured minutes are filed under: its experiment, procedure and config without the seed and the
    device, so that one seed's minutes estimate the other seeds' (same shape, same steps)."""
    d = _without_device(run.config)
    d.pop("seed")
    digest = hashlib.sha256(json.dumps(d, sort_keys=True, default=str).encode()).hexdigest()[:12]
    return f"run/{run.name}-{run.procedure.name}@{digest}"


class Minutes:
    """``DIR/campaign/<profile>/minutes.json``: the measured wall minutes of the steps of earlier slots, by what they
    estimate (:func:`run_key`; a bench by its config hash; the check's parts) and by device; the plan reads them in
    place of the counted estimates."""

    def __init__(self, out: Path, profile: str):
        self.path = reports_dir(out, profile) / "minutes.json"
        old = read_json(self.path, untrusted.CAMPAIGN_MINUTES) or {}
        self.data = {"format": MINUTES_FORMAT, "profile": profile, "measured": old.get("measured", {})}

    def get(self, key: str, device: str) -> float | None:
        """The mean of the minutes measured for ``key`` on ``device``, or None where none was."""
        found = ((self.data["measured"].get(key) or {}).get(device) or {}).get("minutes") or []
        found = [m for m in found if isinstance(m, (int, float)) and math.isfinite(m) and m >= 0]
        return sum(found) / len(found) if found else None

    def add(self, key: str, device: str, minutes: float, gpu: str | None = None, what: str | None = None) -> None:
        entry = self.data["measured"].setdefault(key, {}).setdefault(device, {"minutes": []})
        entry["minutes"].append(round(minutes, 4))
        entry["gpu"] = gpu
        if what:
            entry.setdefault("runs", []).append(what)

    def save(self) -> None:
        write_json(self.path, self.data)


__all__ = [
    "FILES",
    "LANES",
    "MAX_LANES",
    "MINUTES_FORMAT",
    "Minutes",
    "PROGRESS_FORMAT",
    "REPORTS",
    "dumps",
    "is_recorded",
    "read_json",
    "read_report",
    "recorded_path",
    "reports_dir",
    "run_key",
    "write_json",
]
