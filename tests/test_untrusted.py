"""Every reader of files made elsewhere, fed generated hostile input (property-based: hypothesis).

For each reader of :mod:`lmcompanion.untrusted` and each door that uses it (``import-recorded`` of a folder, a file
or a campaign archive; a campaign pack's manifest and files; a campaign's progress, check and bench reports; a run
folder named on the command line; a retrieval export; a SHA256SUMS file), the property is the same: the input is
either accepted, and then every number it brought is finite and every path it named is inside its folder, or it is
refused with the package's error naming the file; never another exception, never a file written outside the
reader's folder, and nothing written at all when it is refused.
"""

import copy
import gzip
import hashlib
import io
import json
import math
import os
import tarfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lmcompanion import campaign, cli, experiments, paths, recorded, untrusted
from lmcompanion.errors import LMCError
from lmcompanion.train import RunStore

SETTINGS = settings(
    max_examples=50,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large],
)

# Values a hostile file puts where a name, a number or a path is expected.
HOSTILE = [
    "../../../../tmp/escaped",
    "/etc/passwd",
    "..",
    ".",
    "",
    "a/../../b",
    "x\x00y",
    "C:\\Windows\\x",
    "~/x",
    "a\\..\\..\\b",
    "NaN",
    "1e400",
    "$(touch /tmp/pwned)",
    "smoke/../../x",
    "cache/../../x",
    "data/../../../x",
    "wheels/",
    "\u202e.json",
    "x" * 300,
]
LEAVES = (
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=12)
    | st.sampled_from(HOSTILE)
)
JSON = st.recursive(
    LEAVES,
    lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(max_size=8) | st.sampled_from(HOSTILE), c, max_size=4),
    max_leaves=16,
)
# What replaces a node: half the time a value that is wrong in the ways that matter most (not finite, out of range,
# a path), else any JSON value.
REPLACEMENT = st.one_of(st.sampled_from([math.nan, math.inf, -math.inf, -1, -1e9, 10**30, True, "../x", None]), JSON)


def _paths(value, prefix=()):
    """Every path (a tuple of keys and indices) to a node of a JSON value."""
    yield prefix
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _paths(v, prefix + (k,))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _paths(v, prefix + (i,))


def _replace(value, path, new):
    if not path:
        return new
    out = copy.deepcopy(value)
    node = out
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = new
    return out


def _mutated(data, valid, focus=()):
    """A valid JSON value with one node replaced (by a hostile value, or removed), or a hostile value whole. Half the
    time the node is under one of the ``focus`` prefixes (the fields whose values the reader uses)."""
    how = data.draw(st.sampled_from(["replace", "replace", "replace", "delete", "whole"]))
    if how == "whole":
        return data.draw(JSON)
    paths = list(_paths(valid))[1:]
    focused = [p for p in paths if any(p[: len(f)] == f for f in focus)]
    path = data.draw(st.sampled_from(focused if focused and data.draw(st.booleans()) else paths))
    if how == "delete":
        out = copy.deepcopy(valid)
        node = out
        for key in path[:-1]:
            node = node[key]
        del node[path[-1]]
        return out
    return _replace(valid, path, data.draw(REPLACEMENT))


def _dump(value) -> bytes:
    return json.dumps(value, allow_nan=True).encode()  # NaN and Infinity as JSON's non-standard literals


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _finite(value) -> bool:
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, dict):
        return all(_finite(v) for v in value.values())
    if isinstance(value, list):
        return all(_finite(v) for v in value)
    return True


@pytest.fixture(scope="module")
def recorded_bytes(tmp_path_factory):
    made = RunStore(tmp_path_factory.mktemp("elsewhere")).run(experiments.config("ar_ed/baseline", "smoke"))
    return recorded.write([made], tmp_path_factory.mktemp("recorded"))[0].read_bytes()


class Sandbox:
    """A fresh folder per example: what the reader reads (``given``), its store or cache (``target``), and the rest
    of the folder, which must not change."""

    def __init__(self, root: Path, n: int):
        self.root = root / f"case{n}"
        self.given, self.target = self.root / "given", self.root / "target"
        self.given.mkdir(parents=True)
        (self.root / "outside.txt").write_text("nothing may write here")

    def untouched(self) -> None:
        outside = {k: v for k, v in _files(self.root).items() if not k.startswith(("given", "target"))}
        assert outside == {"outside.txt": b"nothing may write here"}, sorted(outside)


def _counter():
    n = [0]

    def next_():
        n[0] += 1
        return n[0]

    return next_


def _import_and_check(box: Sandbox, what: Path, label: str) -> None:
    store = RunStore(box.target)
    try:
        runs = recorded.import_dir(what, store)
    except LMCError as exc:
        assert label in str(exc), str(exc)
        assert not box.target.exists() or not any(box.target.iterdir()), "a refused import wrote into the store"
    else:
        for run in runs:
            assert run.finished and run.path.parent == box.target
            assert _finite(run.summary) and _finite(
                [json.loads(line) for line in (run.path / "metrics.jsonl").read_text().splitlines()]
            )
    box.untouched()


# --- recorded runs: a folder, one file, an archive -----------------------------------------------------------


@SETTINGS
@given(data=st.data())
def test_import_recorded_refuses_or_accepts_every_mutation_of_a_recorded_file(recorded_bytes, tmp_path, data):
    n = _next_case()
    box = Sandbox(tmp_path, n)
    record = _mutated(
        data,
        json.loads(recorded_bytes),
        focus=[
            ("metrics",),
            ("summary",),
            ("seed",),
            ("profile",),
            ("experiment",),
            ("config", "train"),
            ("provenance", "key"),
        ],
    )
    (box.given / "smoke").mkdir()
    path = box.given / "smoke" / "run.json"
    path.write_bytes(_dump(record))
    door = data.draw(st.sampled_from(["folder", "file"]))
    _import_and_check(box, box.given if door == "folder" else path, "run.json")


_next_case = _counter()


@SETTINGS
@given(
    blob=st.binary(max_size=300)
    | st.sampled_from(
        [b"[" * 100_000, b'{"a":' * 5000, b"1" * 5000, b"NaN", b'{"format": Infinity}', b"\xff\xfe{}", b"-1e999"]
    )
)
def test_import_recorded_refuses_bytes_that_are_not_a_recorded_run(tmp_path, blob):
    box = Sandbox(tmp_path, _next_case())
    (box.given / "x.json").write_bytes(blob)
    _import_and_check(box, box.given, "x.json")


MEMBER_TYPES = [
    tarfile.REGTYPE,
    tarfile.REGTYPE,
    tarfile.DIRTYPE,
    tarfile.SYMTYPE,
    tarfile.LNKTYPE,
    tarfile.CHRTYPE,
    tarfile.FIFOTYPE,
]


def _add_member(tar, data, name: str, blobs) -> None:
    """One drawn member of a hostile archive: of a drawn type (a file whose bytes are drawn from ``blobs``, a folder,
    a link aimed outside, a device, a pipe)."""
    info = tarfile.TarInfo(name or "x")
    info.type = data.draw(st.sampled_from(MEMBER_TYPES))
    if info.type == tarfile.REGTYPE:
        blob = data.draw(blobs)
        info.size = len(blob)
        tar.addfile(info, io.BytesIO(blob))
    else:
        info.linkname = data.draw(st.sampled_from(["/etc/passwd", "../../outside.txt", "a.json"]))
        tar.addfile(info)


@SETTINGS
@given(data=st.data())
def test_import_recorded_of_a_hostile_campaign_archive_unpacks_nothing(recorded_bytes, tmp_path, data):
    box = Sandbox(tmp_path, _next_case())
    archive = box.given / "campaign.tgz"
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode=data.draw(st.sampled_from(["w:gz", "w"]))) as tar:
        for _ in range(data.draw(st.integers(1, 4))):
            name = data.draw(
                st.sampled_from(["out/smoke/a.json", "out/smoke/b.json", "out/campaign/smoke/p.json"])
                | st.sampled_from(HOSTILE)
                | st.text(max_size=20)
            )
            _add_member(tar, data, name, st.sampled_from([recorded_bytes, b"{}", b"NaN"]) | st.binary(max_size=50))
    raw = buf.getvalue()
    if data.draw(st.booleans()):  # damaged or truncated
        cut = data.draw(st.integers(0, len(raw)))
        raw = raw[:cut] + data.draw(st.binary(max_size=20))
    archive.write_bytes(raw)
    _import_and_check(box, archive, "campaign.tgz")
    assert _files(box.given) == {"campaign.tgz": raw}, "the archive was unpacked"


def test_an_archive_member_that_says_it_is_huge_is_refused_from_its_header(tmp_path):
    archive = tmp_path / "bomb.tgz"
    with tarfile.open(archive, "w:gz") as tar:
        info = tarfile.TarInfo("out/smoke/a.json")
        info.size = 200 << 20  # zeros: a few hundred kB compressed
        tar.addfile(info, io.BytesIO(bytes(info.size)))
    with pytest.raises(LMCError, match="a.json' is 209,715,200 bytes"):
        recorded.import_dir(archive, RunStore(tmp_path / "runs"))
    assert not (tmp_path / "runs").exists()


def test_a_valid_campaign_archive_imports_its_recorded_runs_without_unpacking(recorded_bytes, tmp_path):
    archive = tmp_path / "campaign.tgz"
    with tarfile.open(archive, "w:gz") as tar:
        for name, blob in (("out/smoke/a.json", recorded_bytes), ("out/campaign/smoke/progress.json", b"{}")):
            info = tarfile.TarInfo(name)
            info.size = len(blob)
            tar.addfile(info, io.BytesIO(blob))
    runs = recorded.import_dir(archive, RunStore(tmp_path / "runs"))
    assert (
        len(runs) == 1 and runs[0].finished and sorted(p.name for p in tmp_path.iterdir()) == ["campaign.tgz", "runs"]
    )


@SETTINGS
@given(data=st.data())
def test_restoring_a_hostile_slot_archive_writes_nothing_or_only_checked_files_inside_its_folder(
    recorded_bytes, tmp_path, data
):
    box = Sandbox(tmp_path, _next_case())
    archive = box.given / "slot.tgz"
    progress = {
        "format": campaign.PROGRESS_FORMAT,
        "commands": [{"device": "cuda", "slot": 1, "gpu": "H100"}],
        "steps": {},
    }
    minutes = {"format": campaign.MINUTES_FORMAT, "measured": {"run/x": {"cuda": {"minutes": [1.5]}}}}
    good = {
        "out/smoke/ar_ed__baseline-s0.json": recorded_bytes,
        "out/campaign/smoke/progress.json": _dump(progress),
        "out/campaign/smoke/minutes.json": _dump(minutes),
    }
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for _ in range(data.draw(st.integers(1, 4))):
            name = data.draw(
                st.sampled_from(sorted(good))
                | st.sampled_from(HOSTILE).map(lambda h: "out/" + h)
                | st.sampled_from(HOSTILE)
                | st.text(max_size=20)
            )
            _add_member(
                tar,
                data,
                name,
                st.sampled_from(sorted(good.values()))
                | st.sampled_from([_dump(_mutated(data, progress)), _dump(_mutated(data, minutes))])
                | st.binary(max_size=50),
            )
    archive.write_bytes(buf.getvalue())
    try:
        written = campaign.restore.restore(archive, box.target, log=lambda *a: None)
    except LMCError as exc:
        assert "slot.tgz" in str(exc) or "progress" in str(exc), str(exc)
        assert not box.target.exists() or not _files(box.target), "a refused archive wrote files"
    else:
        assert written, "a restore that writes nothing must say why (the files are all there already)"
        for path in written:
            rel = path.resolve().relative_to(box.target.resolve()).as_posix()
            if rel.startswith("campaign/"):
                assert rel.split("/")[2] in campaign.reports.FILES
            else:
                recorded.parse(rel, path.read_bytes())  # a recorded run, valid
    box.untouched()


# --- the campaign pack -----------------------------------------------------------------------------------------


def _pack(folder: Path) -> dict:
    """A small pack: one corpus file (gzip), one token-cache file, one wheel, and its manifest."""
    raw = b"tiny corpus\n" * 10
    files = {}

    def add(rel, blob, **extra):
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_bytes(blob)
        files[rel] = {"sha256": hashlib.sha256(blob).hexdigest(), "bytes": len(blob), **extra}

    add(
        "data/tiny/train.txt.gz",
        gzip.compress(raw, mtime=0),
        kind="data",
        unpacks_to="tiny/train.txt",
        unpacked_sha256=hashlib.sha256(raw).hexdigest(),
        unpacked_bytes=len(raw),
    )
    add("cache/tokens/tiny/meta.json", b'{"tokens": 3}', kind="cache")
    add("wheels/demo-1.0-py3-none-any.whl", b"PK\x05\x06" + bytes(18), kind="wheel")
    return {"format": campaign.PACK_FORMAT, "profile": "smoke", "files": files, "run_keys": {}}


@SETTINGS
@given(data=st.data())
def test_a_hostile_pack_manifest_writes_nothing_outside_the_cache(tmp_path, data, monkeypatch):
    box = Sandbox(tmp_path, _next_case())
    valid = _pack(box.given)
    if data.draw(st.integers(0, 3)):  # mostly: a crafted entry for a file that is really there, with a hostile name
        manifest = copy.deepcopy(valid)
        attack = data.draw(st.sampled_from(["name", "unpacks_to"]))
        rel = data.draw(st.sampled_from(sorted(valid["files"]))) if attack == "name" else "data/tiny/train.txt.gz"
        entry = dict(valid["files"][rel])
        evil = data.draw(
            st.sampled_from(HOSTILE)
            | st.sampled_from(["data/", "cache/"]).flatmap(lambda p: st.sampled_from(HOSTILE).map(lambda h: p + h))
        )
        if attack == "name":
            manifest["files"] = {**{k: v for k, v in manifest["files"].items() if k != rel}, evil: entry}
            if not evil.startswith("/") and "\x00" not in evil and len(evil) < 200:
                target = box.given / evil
                if target.resolve().is_relative_to(tmp_path.resolve()) and not target.is_dir():
                    target.parent.mkdir(parents=True, exist_ok=True)
                    target.write_bytes((box.given / rel).read_bytes())  # the crafted name's file is there too
        else:
            manifest["files"][rel] = {**entry, "unpacks_to": evil}
    else:
        manifest = _mutated(data, valid, focus=[("files",)])
    (box.given / "manifest.json").write_bytes(_dump(manifest))
    written = []
    real_write = paths.atomic_write
    monkeypatch.setattr(
        paths, "atomic_write", lambda path, *a, **k: (written.append(Path(path)), real_write(path, *a, **k))
    )
    env = {k: os.environ.get(k) for k in ("LMC_CACHE_DIR", "LMC_DATA_DIR", "HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE")}
    os.environ["LMC_CACHE_DIR"] = str(box.target)
    try:
        campaign.unpack(box.given, log=lambda *a: None)
    except LMCError as exc:
        assert "manifest.json" in str(exc) or str(box.given) in str(exc), str(exc)
        assert not written, f"a refused pack wrote {written}"
    finally:
        for k, v in env.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    for path in written:  # a corpus file inside the cache's pack-data, a token cache inside the cache
        inside = box.target / "pack-data" if path.name.startswith("train.txt") else box.target
        assert path.resolve().is_relative_to(inside.resolve()), f"written outside its folder: {path}"
    monkeypatch.undo()


def test_a_pack_entry_that_would_unpack_outside_the_cache_is_refused_by_name(tmp_path, monkeypatch):
    pack = tmp_path / "pack"
    manifest = _pack(pack)
    manifest["files"]["data/tiny/train.txt.gz"]["unpacks_to"] = "../../../escaped.txt"
    (pack / "manifest.json").write_text(json.dumps(manifest))
    monkeypatch.setenv("LMC_CACHE_DIR", str(tmp_path / "cache"))
    with pytest.raises(LMCError, match="unpacks_to '../../../escaped.txt' leaves its folder"):
        campaign.unpack(pack, log=lambda *a: None)
    assert not (tmp_path / "cache").exists() and not list(tmp_path.rglob("escaped.txt"))


def test_a_pack_file_that_would_unpack_to_more_than_it_says_stops_at_the_bound(tmp_path, monkeypatch):
    pack = tmp_path / "pack"
    manifest = _pack(pack)
    bomb = gzip.compress(bytes(50 << 20), mtime=0)  # 50 MiB of zeros, 50 kB packed
    (pack / "data/tiny/train.txt.gz").write_bytes(bomb)
    manifest["files"]["data/tiny/train.txt.gz"].update(sha256=hashlib.sha256(bomb).hexdigest(), bytes=len(bomb))
    (pack / "manifest.json").write_text(json.dumps(manifest))
    monkeypatch.setenv("LMC_CACHE_DIR", str(tmp_path / "cache"))
    with pytest.raises(LMCError, match="does not unpack to 120 bytes"):
        campaign.unpack(pack, log=lambda *a: None)


# --- a campaign's reports, read back from the machine that made them --------------------------------------------


@pytest.fixture(scope="module")
def campaign_steps():
    """The campaign's first step, its first bench, made as ``campaign.steps`` makes it (without planning every run:
    counting their FLOPs took most of this file's time)."""
    return [campaign.plan.bench_step(campaign.bench.benched("smoke", "cpu")[0], "smoke")]


@SETTINGS
@given(data=st.data())
def test_hostile_campaign_reports_are_refused_or_read(campaign_steps, tmp_path, data):
    box = Sandbox(tmp_path, _next_case())
    rdir = campaign.reports_dir(box.given, "smoke")
    rdir.mkdir(parents=True)
    (bench_step,) = campaign_steps
    valid = {
        "progress.json": {
            "format": campaign.PROGRESS_FORMAT,
            "profile": "smoke",
            "commands": [{"device": "cpu"}],
            "steps": {"check": {"status": "done", "wall_s": 3.5, "attempts": 1}},
        },
        "check.json": {"complete": True, "device": "cpu", "ok": True, "items": {}, "families": ["mixer"]},
        "bench.json": {"device": "cpu", "results": {bench_step.name: {"config_hash": "abc"}}},
        "minutes.json": {"format": campaign.MINUTES_FORMAT, "measured": {"check/base": {"cpu": {"minutes": [1]}}}},
    }
    name = data.draw(st.sampled_from(sorted(valid)))
    (rdir / name).write_bytes(_dump(_mutated(data, valid[name])))
    try:
        state = campaign.Progress(box.given, "smoke", "cpu")
        assert math.isfinite(state.spent_min) and state.spent_min >= 0
        minutes = campaign.Minutes(box.given, "smoke")
        assert minutes.get("check/base", "cpu") is None or math.isfinite(minutes.get("check/base", "cpu"))
        report = campaign.reports.read_report(box.given, "smoke", "bench.json")
        assert campaign.plan.bench_done(bench_step, report, "cpu") in (True, False)
        families, torchrun = campaign.check.checked(
            campaign.reports.read_report(box.given, "smoke", "check.json"), "cpu"
        )
        assert isinstance(families, set) and torchrun in (True, False)
    except LMCError as exc:
        assert name in str(exc), str(exc)
    box.untouched()


# --- a run folder named on the command line ------------------------------------------------------------------


@SETTINGS
@given(data=st.data())
def test_a_hostile_run_folder_is_refused_before_it_is_used(tmp_path, data):
    box = Sandbox(tmp_path, _next_case())
    cfg = experiments.config("ar_ed/baseline", "smoke").to_dict()
    valid = {
        "config.json": cfg,
        "procedure.json": {"procedure": "lmcompanion.experiments.ed_training.literal_training", "settings": {}},
    }
    name = data.draw(st.sampled_from(sorted(valid)))
    for k, v in valid.items():
        (box.given / k).write_bytes(_dump(_mutated(data, v) if k == name else v))
    try:
        run = cli._run_folder(str(box.given))
    except LMCError as exc:
        assert name in str(exc) or str(box.given) in str(exc), str(exc)
    else:
        proc = json.loads((box.given / "procedure.json").read_text())["procedure"]
        assert proc in {f"{p.fn.__module__}.{p.fn.__qualname__}" for p in experiments.PROCEDURES.values() if p.fn}
        assert run.path == box.given
    box.untouched()


# --- a retrieval export, read back ---------------------------------------------------------------------------


def _export(rng) -> dict:
    n, k, d = 6, 3, 4
    cand = np.stack([rng.permutation(n)[:k] for _ in range(n)])
    return {
        "query_train": rng.normal(size=(8, d)).astype("float32"),
        "target_train": rng.normal(size=(8, d)).astype("float32"),
        "query_test": rng.normal(size=(n, d)).astype("float32"),
        "target_test": rng.normal(size=(n, d)).astype("float32"),
        "test_query": cand[:, 0].copy(),
        "test_candidates": cand,
        "test_label": np.zeros(n, dtype=np.int64),
        "test_query_text": np.array(["q"] * n),
        "test_story_text": np.array(["s"] * n),
        "ours": np.array(
            json.dumps({"matcher_test_ce": 1.0, "matcher_test_top1": 0.5, "cosine_top1": 0.4, "bm25_top1": 0.3})
        ),
    }


@SETTINGS
@given(data=st.data())
def test_a_hostile_export_is_refused_or_read_with_finite_numbers(tmp_path, data):
    box = Sandbox(tmp_path, _next_case())
    arrays = _export(np.random.default_rng(0))
    what = data.draw(st.sampled_from(["drop", "add", "nan", "dtype", "shape", "index", "ours", "object", "bytes"]))
    key = data.draw(st.sampled_from(sorted(arrays)))
    path = box.given / "x.npz"
    if what == "drop":
        arrays.pop(key)
    elif what == "add":
        arrays[data.draw(st.sampled_from(HOSTILE[:8])) or "extra"] = np.zeros(2)
    elif what == "nan":
        arrays[key] = np.full(arrays[key].shape, np.nan)
    elif what == "dtype":
        arrays[key] = arrays[key].astype(data.draw(st.sampled_from(["float64", "int8", "U3", "bool", "complex64"])))
    elif what == "shape":
        arrays[key] = np.zeros(data.draw(st.sampled_from([(0,), (2, 2, 2), (), (7, 4)])))
    elif what == "index":
        arrays[key] = arrays[key] + data.draw(st.integers(-100, 100)) if arrays[key].dtype.kind in "iu" else arrays[key]
    elif what == "ours":
        arrays["ours"] = np.array(_dump(data.draw(JSON)).decode())
    elif what == "object":
        arrays[key] = np.array([{"pickled": 1}, None], dtype=object)
    if what == "bytes":
        path.write_bytes(data.draw(st.binary(max_size=200)))
    else:
        np.savez(path, **arrays)
    try:
        got = untrusted.read_export(path)
    except untrusted.Untrusted as exc:
        assert "x.npz" in str(exc)
    else:
        assert all(np.isfinite(got[k]).all() for k in ("query_train", "target_train", "query_test", "target_test"))
        assert _finite(got["ours"]) and 0 <= got["ours"]["cosine_top1"] <= 1
        n = len(got["target_test"])
        assert (got["test_candidates"] >= 0).all() and (got["test_candidates"] < n).all()
    box.untouched()


# --- the layer's own readers ---------------------------------------------------------------------------------


@SETTINGS
@given(blob=st.binary(max_size=400) | JSON.map(_dump))
def test_parse_json_gives_finite_shallow_values_or_refuses(blob):
    fmt = untrusted.Format("test file")
    try:
        value = untrusted.parse_json(blob, "f.json", fmt)
    except untrusted.Untrusted as exc:
        assert str(exc).startswith("f.json is not a valid test file")
    else:
        assert _finite(value)


@SETTINGS
@given(
    text=st.text(max_size=300)
    | st.lists(st.sampled_from(HOSTILE) | st.text(max_size=20), max_size=5).map(
        lambda names: "".join(f"{'a' * 64}  {n}\n" for n in names)
    )
)
def test_sha256sums_names_stay_inside_their_folder(tmp_path, text):
    path = tmp_path / "SHA256SUMS"
    path.write_bytes(text.encode("utf-8", "surrogatepass"))  # lone surrogates: bytes that are not UTF-8
    try:
        sums = untrusted.sha256sums(path)
    except untrusted.Untrusted as exc:
        assert "SHA256SUMS" in str(exc)
    else:
        for name, digest in sums.items():
            assert len(digest) == 64 and untrusted.confined(tmp_path, name) is not None


@SETTINGS
@given(name=st.sampled_from(HOSTILE) | st.text(max_size=30))
def test_confined_never_leads_outside_its_folder(tmp_path, name):
    (tmp_path / "inside").mkdir(exist_ok=True)
    link = tmp_path / "inside" / "link"
    if not link.is_symlink():
        link.symlink_to(tmp_path)  # a link inside that leads outside
    for candidate in (name, f"link/{name}"):
        try:
            got = untrusted.confined(tmp_path / "inside", candidate)
        except untrusted.Untrusted:
            continue
        assert got.resolve().is_relative_to((tmp_path / "inside").resolve())


def test_a_file_over_its_format_s_size_is_refused_before_it_is_read(tmp_path, monkeypatch):
    path = tmp_path / "big.json"
    path.write_bytes(b"[" + b"0," * 1000 + b"0]")
    opened = []
    monkeypatch.setattr("builtins.open", lambda *a, **k: opened.append(a) or (_ for _ in ()).throw(AssertionError))
    with pytest.raises(untrusted.Untrusted, match="more than a small file can be"):
        untrusted.read_bytes(path, untrusted.Format("small file", limit=100))
    assert not opened


def test_every_reader_of_files_made_elsewhere_goes_through_the_layer():
    """A new reader of JSON, archives or arrays in the package is either one of the readers of the package's own
    files listed here (with why they are its own), or it goes through lmcompanion.untrusted: add it to one of the
    two, and to this suite if it reads files made elsewhere."""
    import re

    src = Path(__file__).resolve().parents[1] / "src" / "lmcompanion"
    raw = re.compile(r"json\.loads?\(|tarfile\.open\(|zipfile\.ZipFile\(|np\.load\(|torch\.load\(|gzip\.decompress\(")
    found = {}
    for path in sorted(src.rglob("*.py")):
        n = len(raw.findall(path.read_text()))
        if n:
            found[str(path.relative_to(src))] = n
    own = {
        "untrusted.py": 4,  # the layer itself
        "train/store.py": 4,  # the run store's own files (a run folder given on the command line: cli._run_folder)
        "train/checkpoint.py": 1,  # checkpoints the trainer wrote (weights_only=True)
        "recorded.py": 3,  # the store's recorded marker, a run's own metrics when recording it, and the measures
        #                    an import wrote into the store (validated with the recorded file they came from)
        "campaign/check.py": 1,  # the DDP probe's own output (a child process of the check wrote it)
        "campaign/runner.py": 1,  # the archive it writes
        "pages.py": 1,  # glue values inside notebooks this build executed
        "data/tokenizers.py": 1,
        "data/stories.py": 6,
        "data/lm.py": 2,  # the token caches (a pack's: checked)
        # embeddings caches, checked by SHA-256 or shape
        "experiments/matching.py": 1,
        "chapters/retrieval/analysis.py": 1,
    }
    assert found == own, f"readers changed: {found}"
