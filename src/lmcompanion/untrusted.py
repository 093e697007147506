"""Files made elsewhere: the one layer every one of them is read through before anything is written.

A recorded run (``book/recorded``, ``import-recorded``), a campaign pack and its manifest, a campaign's output folder
and its archive (both come back from a GPU machine), a retrieval export, a run folder named on the command line:
each was made by another machine or person, so each is untrusted input. Whatever reads one calls this module, which

- bounds its size before reading it (:func:`read_bytes`; a tar or zip archive: every member's size and their total,
  from the headers, before decompressing anything);
- parses JSON strictly (:func:`parse_json`): UTF-8, no ``NaN`` or ``Infinity`` (nor a number too large for a float),
  no nesting deeper than :data:`MAX_DEPTH`;
- checks the value against the format's JSON Schema (:class:`Format`; types, required fields, ranges; an integer is
  never a float or a bool), naming the first field that fails;
- confines every path a file names to its target folder (:func:`confined`): relative, no ``..``, no NUL, and the
  resolved path (symbolic links followed) inside the resolved folder.

Every failure is an :class:`Untrusted` error naming the file, the field and the fix. The readers validate all of
their input (every file of an import, every member of a pack) before they write anything, so a bad file leaves
nothing behind. ``tests/test_untrusted.py`` feeds every reader generated hostile inputs (hypothesis).
"""

from __future__ import annotations

import io
import json
import math
import os
import re
import stat
import tarfile
import zipfile
import zlib
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, Mapping

import jsonschema
import numpy as np

from .errors import LMCError

MAX_DEPTH = 64  # nesting of JSON arrays and objects: every format here nests a few levels
JSON_LIMIT = 64 << 20  # bytes: the largest JSON file made elsewhere that is read (a recorded run is well under 1 MiB)


class Untrusted(LMCError):
    """A file made elsewhere that does not pass: its message names the file, what is wrong, and the fix."""


@dataclass(frozen=True)
class Format:
    """One kind of file made elsewhere: what it is called in messages, the largest size it may have, its JSON Schema
    (None: any JSON value), and the fix a message names."""

    name: str
    limit: int = JSON_LIMIT
    schema: Mapping | None = None
    fix: str = "restore the file, or make it again where it was made"
    written: str = "Nothing was written"

    def error(self, path, what: str) -> Untrusted:
        return Untrusted(f"{path} is not a valid {self.name}: {what}. {self.written}; {self.fix}")


# --- sizes and bytes ----------------------------------------------------------------------------------------------


def regular_file(path, fmt: Format) -> int:
    """The size of ``path`` after checking that it is a regular file within ``fmt.limit`` bytes."""
    path = Path(path)
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise fmt.error(path, "it does not exist") from None
    except OSError as exc:
        raise fmt.error(path, f"it cannot be read ({exc.strerror})") from None
    if stat.S_ISDIR(st.st_mode):
        raise fmt.error(path, "it is a folder, not a file")
    if not stat.S_ISREG(st.st_mode):
        raise fmt.error(path, "it is not a regular file")
    if st.st_size > fmt.limit:
        raise fmt.error(path, f"it is {st.st_size:,} bytes, more than a {fmt.name} can be ({fmt.limit:,})")
    return st.st_size


def read_bytes(path, fmt: Format) -> bytes:
    """The bytes of ``path``, its size bounded by ``fmt.limit`` before it is read (and while: a file that grows is
    read no further than the limit)."""
    regular_file(path, fmt)
    try:
        with open(path, "rb") as f:
            data = f.read(fmt.limit + 1)
    except OSError as exc:
        raise fmt.error(path, f"it cannot be read ({exc.strerror})") from None
    except MemoryError:
        raise fmt.error(path, "it does not fit in memory") from None
    if len(data) > fmt.limit:
        raise fmt.error(path, f"it is more than {fmt.limit:,} bytes, more than a {fmt.name} can be")
    return data


# --- JSON ---------------------------------------------------------------------------------------------------------


class _Reject(ValueError):
    pass


def _constant(name: str):
    raise _Reject(f"{name} is not a number this reads (numbers must be finite)")


def _float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _Reject(f"{text[:40]} is too large for a finite number")
    return value


def _depth(value, limit: int = MAX_DEPTH) -> bool:
    """Whether ``value`` nests at most ``limit`` levels (iteratively: a deep value must not exhaust the stack)."""
    todo = [(value, 1)]
    while todo:
        v, d = todo.pop()
        if isinstance(v, (dict, list)):
            if d > limit:
                return False
            todo.extend((c, d + 1) for c in (v.values() if isinstance(v, dict) else v))
    return True


def parse_json(data: bytes, path, fmt: Format) -> Any:
    """``data`` as JSON: UTF-8, finite numbers only, nested at most :data:`MAX_DEPTH` levels."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise fmt.error(path, f"it is not UTF-8 JSON (UnicodeDecodeError at byte {exc.start})") from None
    try:
        value = json.loads(text, parse_constant=_constant, parse_float=_float)
    except _Reject as exc:
        raise fmt.error(path, str(exc)) from None
    except RecursionError:
        raise fmt.error(path, f"it nests more than {MAX_DEPTH} levels deep") from None
    except ValueError as exc:
        raise fmt.error(path, f"it is not UTF-8 JSON ({type(exc).__name__}: {str(exc)[:120]})") from None
    except MemoryError:
        raise fmt.error(path, "it does not fit in memory") from None
    if not _depth(value):
        raise fmt.error(path, f"it nests more than {MAX_DEPTH} levels deep")
    return value


def _is_integer(checker, value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(checker, value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


_Validator = jsonschema.validators.extend(
    jsonschema.Draft202012Validator,
    type_checker=jsonschema.Draft202012Validator.TYPE_CHECKER.redefine_many(
        {"integer": _is_integer, "number": _is_number}
    ),
)


def _short(text: str, n: int = 160) -> str:
    return text if len(text) <= n else text[:n] + "..."


def check(value, path, fmt: Format) -> Any:
    """``value`` after checking it against ``fmt.schema``; the first error names its field."""
    if fmt.schema is None:
        return value
    error = jsonschema.exceptions.best_match(_Validator(fmt.schema).iter_errors(value))
    if error is not None:
        where = error.json_path.removeprefix("$").lstrip(".") or "the whole file"
        raise fmt.error(path, f"{where}: {_short(error.message)}")
    return value


def read_json(path, fmt: Format) -> Any:
    """The JSON value of ``path``: size bounded, strictly parsed, checked against ``fmt.schema``."""
    return check(parse_json(read_bytes(path, fmt), path, fmt), path, fmt)


# --- paths --------------------------------------------------------------------------------------------------------


def relative_name(name, what: str = "a name") -> PurePosixPath:
    """``name`` as a relative POSIX path with no ``..``, no empty part, no backslash or NUL; else ValueError."""
    if not isinstance(name, str) or not name or len(name) > 4096:
        raise ValueError(f"{what} {_short(repr(name), 80)} is not a relative path")
    if "\x00" in name or "\\" in name:
        raise ValueError(f"{what} {_short(repr(name), 80)} holds a NUL or a backslash")
    if name.startswith("/"):
        raise ValueError(f"{what} {_short(repr(name), 80)} is absolute")
    parts = [p for p in name.split("/") if p not in ("", ".")]
    if not parts or ".." in parts:
        raise ValueError(f"{what} {_short(repr(name), 80)} leaves its folder (..) or names no file")
    if any(len(p.encode("utf-8", "surrogatepass")) > 200 for p in parts):  # file systems take 255 bytes, less ours
        raise ValueError(f"{what} {_short(repr(name), 80)} has a part longer than 200 bytes")
    return PurePosixPath(*parts)


def confined(root, name, path=None, fmt: Format | None = None, what: str = "a path") -> Path:
    """``root / name``, after checking that ``name`` is a relative path that stays inside ``root`` once resolved
    (symbolic links followed). ``path`` and ``fmt`` name the file that gave ``name`` in the error."""
    root = Path(root)
    try:
        rel = relative_name(name, what)
        target = root / Path(*rel.parts)
        resolved, base = target.resolve(), root.resolve()
        if resolved != base and base not in resolved.parents:
            raise ValueError(f"{what} {_short(repr(name), 80)} leads outside {root}")
    except ValueError as exc:
        if fmt is None:
            raise Untrusted(f"{exc}: refused") from None
        raise fmt.error(path if path is not None else root, str(exc)) from None
    return target


# --- archives -----------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ArchiveFormat(Format):
    member_limit: int = 64 << 20  # bytes of one member
    members: int = 10_000  # how many members at most
    total: int = 512 << 20  # bytes of all members together, unpacked


def read_tar(path, fmt: ArchiveFormat) -> dict[str, bytes]:
    """Every regular file of a tar archive (plain or compressed), by its relative name, after checking every member
    from its header before reading any: a regular file or a folder (no link, device or FIFO), a name that stays
    inside the folder it unpacks to, sizes within ``fmt``'s bounds. Nothing is written."""
    regular_file(path, fmt)  # the archive itself, bounded
    out: dict[str, bytes] = {}
    total = 0
    try:
        with tarfile.open(path, mode="r:*") as tar:
            members = []
            for i, m in enumerate(tar):
                if i >= fmt.members:
                    raise fmt.error(path, f"it has more than {fmt.members:,} members")
                try:
                    relative_name(m.name.removeprefix("./") or ".", "member")
                except ValueError as exc:
                    if m.name in (".", "./") and m.isdir():
                        continue
                    raise fmt.error(path, str(exc)) from None
                if m.isdir():
                    continue
                if not m.isreg():
                    raise fmt.error(path, f"member {_short(m.name, 80)!r} is a link or a special file")
                if m.size > fmt.member_limit:
                    raise fmt.error(
                        path, f"member {_short(m.name, 80)!r} is {m.size:,} bytes (at most {fmt.member_limit:,})"
                    )
                total += m.size
                if total > fmt.total:
                    raise fmt.error(path, f"its members unpack to more than {fmt.total:,} bytes")
                members.append(m)
            for m in members:
                f = tar.extractfile(m)
                data = f.read(m.size + 1) if f is not None else b""
                if len(data) != m.size:
                    raise fmt.error(path, f"member {_short(m.name, 80)!r} is truncated")
                name = m.name.removeprefix("./")
                if name in out:
                    raise fmt.error(path, f"member {_short(name, 80)!r} appears twice")
                out[name] = data
    except Untrusted:
        raise
    except (tarfile.TarError, EOFError, OSError, zlib.error, ValueError) as exc:
        raise fmt.error(
            path, f"it is not a readable tar archive ({type(exc).__name__}: {_short(str(exc), 120)})"
        ) from None
    except MemoryError:
        raise fmt.error(path, "it does not fit in memory") from None
    return out


def inflate(blob: bytes, size: int, path, fmt: Format) -> bytes:
    """A gzip stream that must unpack to exactly ``size`` bytes: never decompresses more than that (a small file that
    would unpack to gigabytes stops at the bound)."""
    d = zlib.decompressobj(wbits=31)
    try:
        data = d.decompress(blob, size + 1)
    except zlib.error as exc:
        raise fmt.error(path, f"it is not gzip data ({exc})") from None
    if len(data) != size or not d.eof:
        raise fmt.error(path, f"it does not unpack to {size:,} bytes")
    return data


# --- numpy exports ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ArraysFormat(Format):
    """A ``.npz`` of named arrays: ``arrays`` maps each name to the dtype kinds it may have (``"f"`` float, ``"i"``
    signed integer, ``"U"`` text) and its number of dimensions."""

    arrays: Mapping[str, tuple[str, int]] = field(default_factory=dict)
    total: int = 1 << 30  # bytes of all arrays together, unpacked


def read_npz(path, fmt: ArraysFormat) -> dict[str, np.ndarray]:
    """The arrays of an ``.npz`` file, after checking its size, each member's unpacked size (from the zip's headers,
    before decompressing), that it holds exactly the named arrays, each of its kind and number of dimensions, finite
    where it is a float, and that no pickled object is read."""
    data = read_bytes(path, fmt)
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as z:
            infos = z.infolist()
            if sum(i.file_size for i in infos) > fmt.total:
                raise fmt.error(path, f"its arrays unpack to more than {fmt.total:,} bytes")
            names = {i.filename.removesuffix(".npy") for i in infos}
        if names != set(fmt.arrays):
            missing, extra = sorted(set(fmt.arrays) - names), sorted(names - set(fmt.arrays))
            raise fmt.error(
                path,
                f"its arrays are not the expected ones (missing {missing[:5]}, unexpected "
                f"{[_short(e, 40) for e in extra[:5]]})",
            )
        out = {}
        with np.load(io.BytesIO(data), allow_pickle=False) as z:
            for name, (kinds, ndim) in fmt.arrays.items():
                a = z[name]
                if a.dtype.kind not in kinds or a.ndim != ndim:
                    raise fmt.error(
                        path, f"array {name!r} is {a.dtype} with {a.ndim} dimensions, not of kind {kinds!r} with {ndim}"
                    )
                if a.dtype.kind == "f" and not np.isfinite(a).all():
                    raise fmt.error(path, f"array {name!r} holds numbers that are not finite")
                out[name] = a
    except Untrusted:
        raise
    except (zipfile.BadZipFile, ValueError, OSError, EOFError, KeyError, zlib.error) as exc:
        raise fmt.error(path, f"it is not a readable .npz ({type(exc).__name__}: {_short(str(exc), 120)})") from None
    except MemoryError:
        raise fmt.error(path, "it does not fit in memory") from None
    return out


# --- the formats --------------------------------------------------------------------------------------------------

HEX12 = "^[0-9a-f]{12}$"
HEX64 = "^[0-9a-f]{64}$"
_NUMBERS = {"type": "object", "additionalProperties": {"type": "number"}}
_STEP = {"type": "integer", "minimum": 0, "maximum": 10**12}
_SECONDS = {"type": "number", "minimum": 0}

RECORDED_RUN = Format(
    "recorded run",
    limit=JSON_LIMIT,
    fix="restore the file from git, or write it again with `python -m lmcompanion record RUN_FOLDER` on the machine "
    "that made the run",
    written="Nothing was imported",
    schema={
        "type": "object",
        "required": ["format", "experiment", "profile", "seed", "config", "metrics", "summary", "provenance"],
        "properties": {
            "format": {"type": "string"},
            "experiment": {"type": "string", "maxLength": 200},
            "profile": {"type": "string"},
            "seed": {"type": "integer", "minimum": 0, "maximum": 2**31},
            "config": {"type": "object"},
            "metrics": {
                "type": "array",
                "minItems": 1,
                "maxItems": 10**6,
                "items": {
                    "type": "object",
                    "required": ["step"],
                    "properties": {"step": _STEP},
                    "additionalProperties": {"type": "number"},
                },
            },
            "summary": {
                "type": "object",
                "required": ["final", "steps", "train_time_s"],
                "properties": {
                    "final": _NUMBERS,
                    "steps": {"type": "integer", "minimum": 1, "maximum": 10**12},
                    "train_time_s": _SECONDS,
                    "wall_time_s": _SECONDS,
                    "tokens": {"type": "integer", "minimum": 0},
                    "tokens_per_s": {"type": ["number", "null"], "minimum": 0},
                    "params": {"type": "integer", "minimum": 0},
                    "params_total": {"type": "integer", "minimum": 0},
                    "resumed_from": {"type": ["integer", "null"], "minimum": 0},
                    "peak_mem_bytes": {"type": "integer", "minimum": 0},
                    "mfu": {"type": "number", "minimum": 0},
                    "best": {"type": "object", "additionalProperties": {"type": "number"}},
                },
            },
            "provenance": {"type": "object", "properties": {"key": {"type": ["string", "null"], "pattern": HEX12}}},
            # what a GPU slot measured on the run's files after it (lmcompanion.recorded.measure): by key, a number,
            # or a list or object of numbers
            "measures": {
                "type": "object",
                "maxProperties": 1000,
                "propertyNames": {"maxLength": 200},
                "additionalProperties": {
                    "anyOf": [
                        {"type": "number"},
                        {"type": "array", "maxItems": 100_000, "items": {"type": "number"}},
                        {"type": "object", "maxProperties": 100, "additionalProperties": {"type": "number"}},
                    ]
                },
            },
        },
    },
)

_SHA = {"type": "string", "pattern": HEX64}
_PACK_FILE = {
    "type": "object",
    "required": ["sha256", "bytes", "kind"],
    "properties": {
        "sha256": _SHA,
        "bytes": {"type": "integer", "minimum": 0, "maximum": 1 << 30},
        "kind": {"enum": ["wheel", "data", "cache"]},
        "unpacks_to": {"type": "string", "minLength": 1, "maxLength": 1000},
        "unpacked_sha256": _SHA,
        "unpacked_bytes": {"type": "integer", "minimum": 0, "maximum": 4 << 30},
    },
    "if": {"properties": {"kind": {"const": "data"}}},
    "then": {"required": ["unpacks_to", "unpacked_sha256", "unpacked_bytes"]},
}
PACK_MANIFEST = Format(
    "campaign pack manifest",
    limit=16 << 20,
    fix="make the pack again (`python -m lmcompanion campaign --pack DIR`) and carry it again; nothing was run",
    schema={
        "type": "object",
        "required": ["format", "files"],
        "properties": {
            "format": {"type": "string"},
            "profile": {"type": "string"},
            "files": {"type": "object", "maxProperties": 100_000, "additionalProperties": _PACK_FILE},
            "run_keys": {"type": "object", "additionalProperties": {"type": "string", "pattern": HEX12}},
            "run_parts": {
                "type": "object",
                "additionalProperties": {
                    "type": "object",
                    "properties": {
                        "code": {"type": "string", "pattern": HEX12},
                        "data": {"type": "string", "maxLength": 400},
                    },
                },
            },
            "python": {"type": "string", "maxLength": 40},
            "seeds": {"type": ["integer", "null"], "minimum": 1},
            "bytes": {"type": "integer", "minimum": 0},
            "budget_min": {"type": "number", "exclusiveMinimum": 0},
        },
    },
)
SHA256SUMS = Format("SHA256SUMS file", limit=16 << 20, fix="restore it (sha256sum FILES > SHA256SUMS makes it again)")

_ATTEMPT = {
    "type": "object",
    "properties": {
        "status": {"enum": ["pending", "done", "failed", "interrupted"]},
        "wall_s": _SECONDS,
        "attempts": {"type": "integer", "minimum": 0},
        "estimate_min": _SECONDS,
        "error": {"type": ["string", "null"]},
        "traceback": {"type": ["string", "null"]},
    },
}
CAMPAIGN_PROGRESS = Format(
    "campaign progress file",
    fix="restore it from the campaign's last archive (tar -xzf), or move it away to start the campaign's count of "
    "spent minutes again",
    schema={
        "type": "object",
        "properties": {
            "format": {"type": "string"},
            "profile": {"type": "string"},
            "steps": {"type": "object", "additionalProperties": _ATTEMPT},
            "commands": {"type": "array", "items": {"type": "object"}},
        },
    },
)
CAMPAIGN_CHECK = Format(
    "campaign check report",
    fix="delete it: the campaign runs the check again",
    schema={
        "type": "object",
        "properties": {
            "complete": {"type": "boolean"},
            "device": {"type": "string"},
            "ok": {"type": "boolean"},
            "items": {"type": "object"},
            "families": {"type": "array", "items": {"type": "string"}},
            "compiled": {"type": "array", "items": {"type": "string"}},
        },
    },
)
CAMPAIGN_BENCH = Format(
    "campaign bench report",
    fix="delete it: the campaign runs the benches again",
    schema={
        "type": "object",
        "properties": {
            "device": {"type": "string"},
            "results": {
                "type": "object",
                "additionalProperties": {"type": "object", "properties": {"config_hash": {"type": "string"}}},
            },
        },
    },
)
CAMPAIGN_MINUTES = Format(
    "campaign minutes file",
    fix="restore it from git (the plan then counts its estimates again where it is gone)",
    schema={
        "type": "object",
        "properties": {
            "format": {"type": "string"},
            "profile": {"type": "string"},
            "measured": {
                "type": "object",
                "additionalProperties": {
                    "type": "object",
                    "additionalProperties": {
                        "type": "object",
                        "required": ["minutes"],
                        "properties": {
                            "minutes": {
                                "type": "array",
                                "maxItems": 10_000,
                                "items": {"type": "number", "minimum": 0, "maximum": 10_000},
                            },
                            "gpu": {"type": ["string", "null"]},
                            "runs": {"type": "array", "items": {"type": "string"}},
                        },
                    },
                },
            },
        },
    },
)
CAMPAIGN_ARCHIVE = ArchiveFormat(
    "campaign archive",
    limit=256 << 20,
    member_limit=JSON_LIMIT,
    total=1 << 30,
    fix="make it again (the campaign's --archive), or unpack a copy you trust and import its folder",
    written="Nothing was imported",
)

# A counted FLOPs entry of the cache folder (models.flops_per_token): another process's, maybe another version's.
COUNTED_FLOPS = Format(
    "counted FLOPs cache entry",
    limit=4096,
    fix="delete it (it is counted again)",
    schema={
        "type": "object",
        "required": ["key", "flops"],
        "properties": {
            "key": {"type": "string", "pattern": "^[0-9a-f]{24}$"},
            "flops": {"type": "number", "minimum": 0},
        },
    },
)

# A run folder named on the command line (record, retrain, export-retrieval): maybe copied from someone else.
_RETRAINS = "it trains the run again, in the folder its key names"
RUN_CONFIG = Format(
    "run config (config.json)",
    limit=1 << 20,
    fix=f"correct it where it was edited, or re-execute the notebook that made the run ({_RETRAINS})",
    schema={
        "type": "object",
        "required": ["name", "model", "data", "train", "seed", "device"],
        "properties": {
            "name": {"type": "string", "maxLength": 200},
            "seed": {"type": "integer", "minimum": 0, "maximum": 2**31},
            "device": {"enum": ["cpu", "cuda"]},
            "model": {"type": "object"},
            "data": {"type": "object"},
            "train": {"type": "object"},
        },
    },
)
RUN_PROCEDURE = Format(
    "run procedure file (procedure.json)",
    limit=1 << 20,
    fix=f"correct it where it was edited, or re-execute the notebook that made the run ({_RETRAINS})",
    schema={
        "type": "object",
        "required": ["procedure"],
        "properties": {
            "procedure": {"type": "string", "pattern": r"^lmcompanion(\.[A-Za-z_][A-Za-z0-9_]*)+$"},
            "settings": {"type": ["object", "null"]},
        },
    },
)
RUN_JSON = Format(
    "run file",
    limit=JSON_LIMIT,
    fix="repair the run: python -m lmcompanion retrain RUN_FOLDER (it trains the run's config again in its folder)",
    schema={"type": "object"},
)

EXPORT = ArraysFormat(
    "retrieval export (.npz)",
    limit=1 << 30,
    fix="write it again with `python -m lmcompanion export-retrieval RUN`",
    arrays={
        "query_train": ("f", 2),
        "target_train": ("f", 2),
        "query_test": ("f", 2),
        "target_test": ("f", 2),
        "test_query": ("iu", 1),
        "test_candidates": ("iu", 2),
        "test_label": ("iu", 1),
        "test_query_text": ("U", 1),
        "test_story_text": ("U", 1),
        "ours": ("U", 0),
    },
)
EXPORT_NUMBERS = Format(
    "retrieval export's numbers",
    schema={
        "type": "object",
        "required": ["matcher_test_ce", "matcher_test_top1", "cosine_top1", "bm25_top1"],
        "properties": {
            k: {"type": "number", "minimum": 0, "maximum": 1} for k in ("matcher_test_top1", "cosine_top1", "bm25_top1")
        }
        | {
            "matcher_test_ce": {"type": "number", "minimum": 0},
            "chance_ce": {"type": "number", "minimum": 0},
            "run": {"type": "string"},
            "embeddings_sha256": _SHA,
        },
    },
)


def read_export(path) -> dict:
    """A retrieval export (``export-retrieval``) read back: its arrays (:data:`EXPORT`) with consistent shapes and
    indices in range, and ``ours`` (our numbers) as a checked dict."""
    arrays = read_npz(path, EXPORT)
    q, t, cand = arrays["query_test"], arrays["target_test"], arrays["test_candidates"]
    query, label = arrays["test_query"], arrays["test_label"]
    n = len(t)
    if (
        q.shape != t.shape
        or arrays["query_train"].shape[1:] != q.shape[1:]
        or arrays["target_train"].shape != arrays["query_train"].shape
    ):
        raise EXPORT.error(path, "its embedding matrices do not have matching shapes")
    if len(arrays["test_query_text"]) != n or len(arrays["test_story_text"]) != n:
        raise EXPORT.error(path, "its texts are not one per test pair")
    if len(query) != len(cand) or len(label) != len(cand):
        raise EXPORT.error(path, "its test items are not one query, one row of candidates and one label each")
    if len(cand) and (
        query.min() < 0
        or query.max() >= n
        or cand.min() < 0
        or cand.max() >= n
        or label.min() < 0
        or label.max() >= cand.shape[1]
    ):
        raise EXPORT.error(path, "its test items name pairs or candidates that are not there")
    ours = check(parse_json(str(arrays["ours"]).encode(), path, EXPORT_NUMBERS), path, EXPORT_NUMBERS)
    return {**arrays, "ours": ours}


# An executed notebook the pages are generated from (it may come from another machine's build).
EXECUTED_NOTEBOOK = Format(
    "executed notebook",
    limit=256 << 20,
    fix="execute it again (python -m lmcompanion run-notebook SOURCE), or remove it from the folder",
    written="No page was written",
    schema={
        "type": "object",
        "required": ["cells", "metadata", "nbformat"],
        "properties": {
            "nbformat": {"type": "integer", "minimum": 4, "maximum": 4},
            "metadata": {"type": "object"},
            "cells": {"type": "array", "maxItems": 100_000, "items": {"type": "object", "required": ["cell_type"]}},
        },
    },
)

# Every reader of files made elsewhere, by the format it reads (tests/test_untrusted.py feeds each one hostile input).
FORMATS = {
    f.name: f
    for f in (
        RECORDED_RUN,
        COUNTED_FLOPS,
        PACK_MANIFEST,
        SHA256SUMS,
        CAMPAIGN_PROGRESS,
        CAMPAIGN_CHECK,
        CAMPAIGN_MINUTES,
        CAMPAIGN_BENCH,
        CAMPAIGN_ARCHIVE,
        RUN_CONFIG,
        RUN_PROCEDURE,
        RUN_JSON,
        EXPORT,
        EXPORT_NUMBERS,
        EXECUTED_NOTEBOOK,
    )
}


def sha256sums(path, fmt: Format = SHA256SUMS) -> dict[str, str]:
    """A ``sha256sum`` file's digests by relative name, each line checked (64 hex digits, two spaces or a space and
    ``*``, a relative name that stays in its folder)."""
    try:
        text = read_bytes(path, fmt).decode("utf-8") if Path(path).exists() else ""
    except UnicodeDecodeError as exc:
        raise fmt.error(path, f"it is not UTF-8 text (byte {exc.start})") from None
    out = {}
    for i, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        m = re.fullmatch(r"([0-9a-f]{64}) [ *](.+)", line.strip())
        if m is None:
            raise fmt.error(path, f"line {i} is not '<sha256>  <name>'")
        name = m.group(2).strip().removeprefix("./")
        try:
            relative_name(name, "the name")
        except ValueError as exc:
            raise fmt.error(path, f"line {i}: {exc}") from None
        out[name] = m.group(1)
    return out


__all__ = [
    "ArchiveFormat",
    "ArraysFormat",
    "COUNTED_FLOPS",
    "CAMPAIGN_ARCHIVE",
    "CAMPAIGN_BENCH",
    "CAMPAIGN_CHECK",
    "CAMPAIGN_PROGRESS",
    "EXECUTED_NOTEBOOK",
    "EXPORT",
    "FORMATS",
    "Format",
    "JSON_LIMIT",
    "MAX_DEPTH",
    "PACK_MANIFEST",
    "RECORDED_RUN",
    "RUN_CONFIG",
    "RUN_JSON",
    "RUN_PROCEDURE",
    "SHA256SUMS",
    "Untrusted",
    "check",
    "confined",
    "inflate",
    "parse_json",
    "read_bytes",
    "read_export",
    "read_json",
    "read_npz",
    "read_tar",
    "regular_file",
    "relative_name",
    "sha256sums",
]
