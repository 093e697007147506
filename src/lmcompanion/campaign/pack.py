"""The pack: everything a GPU machine without network needs that is not in git (``python -m lmcompanion campaign
--pack DIR``), carried with the working tree to every slot.

The wheels it lacks, the corpus files the planned runs read (gzip-compressed, restored byte for byte, so the data
fingerprints and every run key are a CPU build's), their token caches (gzip-compressed; so the GPU runs read exactly
the ids a CPU build reads, whatever tokenizers version the GPU image has), and a manifest with every file's SHA-256
and size and the run keys computed here. :func:`unpack` verifies all of it on arrival (through
:mod:`lmcompanion.untrusted`) and stops on any difference. One pack serves every slot.

The files of a corpus read joined (:mod:`lmcompanion.data.joined`: the gpu profile's Wikipedia, 66 MB of text in two
files, 22.6 MiB compressed) are not carried: the token ids made from them are, and a ``SHA256SUMS`` of the files left
out, restored into the data folder, from which the joined data's fingerprint, and so every key, is the CPU build's.
The machine receives 64 MiB in all (the working tree and the pack): :data:`PACK_LIMIT`. The retrieval chapter's
Wikipedia-lead runs read their articles' text itself; at gpu they read only the first file's pairs
(:func:`lmcompanion.data.retrieval.wiki_files`), which is carried. Two wheels of the folder are not carried
(:data:`NOT_PACKED`): a campaign starts no kernel and completes no code, and both are imported only when there.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import platform
import shutil
import time
from pathlib import Path
from typing import Callable, Sequence

import torch

from .. import env, paths, untrusted
from ..data import corpora, joined, kinds
from ..errors import LMCError
from ..run import RunConfig
from . import plan as plan_mod
from .bench import RANDOM_TOKENS
from .plan import Step

PACK_FORMAT = "lmcompanion-campaign-pack/1"
PACK_LIMIT = 48 << 20  # bytes: what a GPU call carries beside the working tree (64 MiB in all)
# Wheels of the folder a campaign never imports (10 MiB of its 15.7), by project, with the reason; a test imports
# IPython, ipykernel's kernel and the campaign with both blocked.
NOT_PACKED = {
    "debugpy": "ipykernel's debugger (imported only when a debugging client attaches to a kernel)",
    "jedi": "IPython's code completion (imported only when completing)",
}


def _packed_wheels(whl: list[Path]) -> list[Path]:
    return [w for w in whl if w.name.split("-")[0].lower().replace("_", "-") not in NOT_PACKED]


def default_data_dir() -> None:
    """``LMC_DATA_DIR=../shared/data`` when it is unset and that folder exists (the Makefile's rule), so that planning
    the gpu profile (whose retrieval runs count their pairs in the stories) reads the offline corpora, never the hub."""
    root = paths.repo_root()
    shared = root.parent / "shared" / "data" if root is not None else None
    if "LMC_DATA_DIR" not in os.environ and shared is not None and (shared / "SHA256SUMS").is_file():
        os.environ["LMC_DATA_DIR"] = str(shared)


def _sha256(path: Path) -> str:
    return paths.file_sha256(Path(path))


def default_wheels() -> Path:
    root = paths.repo_root() or Path.cwd()
    return root.parent / "shared" / "wheels" / "py312-x86_64"


def _sums(folder: Path) -> dict[str, str]:
    """A SHA256SUMS file's digests by relative path (``sha256sum`` format), read through :mod:`lmcompanion.untrusted`."""
    path = Path(folder) / "SHA256SUMS"
    return untrusted.sha256sums(path) if path.is_file() else {}


def _run_configs(all_steps: Sequence[Step]) -> list[RunConfig]:
    cfgs = []
    for s in all_steps:
        if s.run is not None and s.run.procedure is not RANDOM_TOKENS:
            cfgs += [n.config for n in s.run.needs] + [s.run.config]
    return cfgs


def _corpus_files(cfgs: Sequence[RunConfig]) -> tuple[list[str], list[str]]:
    """(carried, named): the files under LMC_DATA_DIR the runs read, carried (their corpora's; the GPT-2 ranks where a
    run tokenizes with it), and those of corpora read joined, named by their digests only (see the module doc)."""
    names, named, gpt2 = set(), set(), False
    for cfg in cfgs:
        own = kinds.data_files(cfg.data)  # a kind that reads other files than its corpora's (or names them only)
        if own is not None:
            names |= set(own[0])
            named |= set(own[1])
        else:
            for corpus in plan_mod.corpora_of(cfg):
                if not corpora.get(corpus).generated:
                    names |= set(corpora.get(corpus).files.values())
        gpt2 = gpt2 or getattr(cfg.data, "tokenizer", None) == "gpt2"
    return sorted(names) + (["tiktoken/gpt2.tiktoken"] if gpt2 else []), sorted(named - names)


def make_pack(
    pack: Path,
    profile: str = "gpu",
    *,
    budget_min: float = plan_mod.DEFAULT_SLOT_MIN,
    wheels: Path | None = None,
    seeds: int | None = None,
    log: Callable = print,
) -> dict:
    """Write the pack (see the module doc) for every step of the campaign at ``profile`` (every slot: one pack serves
    them all). Returns its manifest."""
    wheels = Path(wheels) if wheels is not None else default_wheels()
    whl = sorted(wheels.glob("*.whl"))
    if not whl:
        raise LMCError(f"no wheels in {wheels}: give --wheels DIR (the folder of ../shared/wheels for Python 3.12)")
    final = Path(pack)
    if final.exists() and any(final.iterdir()):
        if (_own_manifest(final) or {}).get("format") != PACK_FORMAT:
            raise LMCError(f"{final} exists and is not a campaign pack: choose an empty or new folder")
    # made whole in a temporary folder beside it (named by this process, so the next command removes it if this one
    # is killed), which then replaces the older pack: a reader never finds part of a pack at its name
    pack = final.parent / f".{final.name}.tmp{os.getpid()}"
    shutil.rmtree(pack, ignore_errors=True)
    pack.mkdir(parents=True)
    try:
        manifest = _fill(pack, profile, budget_min, whl, wheels, seeds, log)
    except BaseException:
        shutil.rmtree(pack, ignore_errors=True)
        raise
    if final.exists():
        shutil.rmtree(final)  # the older pack (checked above), or an empty folder
    os.replace(pack, final)
    log(f"pack: written to {final}")
    return manifest


def _fill(
    pack: Path, profile: str, budget_min: float, whl: list[Path], wheels: Path, seeds: int | None, log: Callable
) -> dict:
    """Write every file of the pack into the folder ``pack``; returns its manifest."""
    all_steps = plan_mod.steps(profile, device="cpu", seeds=seeds)
    cfgs = _run_configs(all_steps)
    files: dict[str, dict] = {}

    def add(rel: str, blob: bytes, **extra) -> None:
        path = pack / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(blob)
        files[rel] = {"sha256": hashlib.sha256(blob).hexdigest(), "bytes": len(blob), **extra}

    # the wheels, each checked against its folder's SHA256SUMS
    sums = _sums(wheels.parent)
    left = sorted(set(whl) - set(_packed_wheels(whl)))
    whl = _packed_wheels(whl)
    for w in whl:
        blob = w.read_bytes()
        want = sums.get(f"{wheels.name}/{w.name}") or sums.get(w.name)
        if want is not None and hashlib.sha256(blob).hexdigest() != want:
            raise LMCError(f"{w} does not match its SHA256SUMS: restore it before packing")
        add(f"wheels/{w.name}", blob, kind="wheel")
    log(
        f"pack: {len(whl)} wheels from {wheels}"
        + (f" ({len(left)} left out, never imported by a campaign: {', '.join(w.name for w in left)})" if left else "")
    )

    def add_packed(rel: str, raw: bytes, kind: str, unpacks_to: str) -> None:  # gzip-compressed, restored byte for byte
        add(
            f"{rel}.gz",
            gzip.compress(raw, 9, mtime=0),
            kind=kind,
            unpacks_to=unpacks_to,
            unpacked_sha256=hashlib.sha256(raw).hexdigest(),
            unpacked_bytes=len(raw),
        )

    # the corpus files (restored byte for byte: the data fingerprints, and so every key, are kept)
    data_root, (corpus_files, named) = paths.data_dir(), _corpus_files(cfgs)
    if (corpus_files or named) and (data_root is None or not data_root.is_dir()):
        raise LMCError("the pack is made from the offline corpora: set LMC_DATA_DIR (e.g. ../shared/data)")
    data_sums = _sums(data_root) if data_root is not None else {}
    digests = {}
    for rel in corpus_files + named:
        digests[rel] = _sha256(data_root / rel)
        if rel in data_sums and data_sums[rel] != digests[rel]:
            raise LMCError(f"{data_root / rel} does not match {data_root / 'SHA256SUMS'}: restore it before packing")
    for rel in corpus_files:
        add_packed(f"data/{rel}", (data_root / rel).read_bytes(), "data", rel)
    if named:  # the files read joined, by their digests (data.joined reads them where the files are not)
        add_packed(
            f"data/{joined.SUMS}", "".join(f"{digests[rel]}  {rel}\n" for rel in named).encode(), "data", joined.SUMS
        )
    log(
        f"pack: corpus files {', '.join(corpus_files)}"
        + (f"; named by their digests only: {', '.join(named)}" if named else "")
    )
    # the token caches of the runs
    cache_root = paths.cache_dir()
    seen: set = set()
    for cfg in cfgs:
        if cfg.data in seen:
            continue
        seen.add(cfg.data)
        for f in kinds.cache_files(cfg.data):
            rel = f.relative_to(cache_root).as_posix()
            add_packed(f"cache/{rel}", f.read_bytes(), "cache", rel)
    caches = [v for v in files.values() if v["kind"] == "cache"]
    log(
        f"pack: {len(caches)} token-cache files, {sum(v['unpacked_bytes'] for v in caches) / 2**20:.1f} MiB in "
        f"{sum(v['bytes'] for v in caches) / 2**20:.1f} MiB compressed"
    )
    keys, parts = {}, {}
    for s in all_steps:
        if s.kind == "run":
            sp = s.run.spec()
            keys[s.run.id], parts[s.run.id] = sp.key, {"code": sp.code, "data": sp.data}
    total = sum(v["bytes"] for v in files.values())
    manifest = {
        "format": PACK_FORMAT,
        "profile": profile,
        "budget_min": budget_min,
        "seeds": seeds,
        "made": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        **env.git_state(),
        "torch": torch.__version__,
        "python": platform.python_version(),
        "files": files,
        "bytes": total,
        "run_keys": keys,
        "run_parts": parts,
        "run_keys_note": "keys of the runs at device cpu, computed from the corpus files here; unpack() "
        "computes them again from the pack and stops on any difference",
    }
    mtext = json.dumps(manifest, indent=1, sort_keys=True) + "\n"
    (pack / "manifest.json").write_text(mtext)
    lines = [f"{v['sha256']}  {rel}" for rel, v in sorted(files.items())]
    lines.append(f"{hashlib.sha256(mtext.encode()).hexdigest()}  manifest.json")
    (pack / "SHA256SUMS").write_text("\n".join(lines) + "\n")
    size = sum(p.stat().st_size for p in pack.rglob("*") if p.is_file())
    log(f"pack: {len(files) + 2} files, {size / 2**20:.1f} MiB (limit {PACK_LIMIT / 2**20:.0f} MiB)")
    if size > PACK_LIMIT:
        biggest = sorted(files.items(), key=lambda kv: -kv[1]["bytes"])[:5]
        raise LMCError(
            f"the pack is {size / 2**20:.1f} MiB, over {PACK_LIMIT / 2**20:.0f} MiB; its largest files: "
            + ", ".join(f"{k} ({v['bytes'] / 2**20:.1f} MiB)" for k, v in biggest)
        )
    return manifest


def verify_pack(pack: Path) -> dict:
    """The pack's manifest, after checking every file it lists (present, its size, its SHA-256): a damaged pack stops
    here with a message naming the file."""
    pack = Path(pack)
    if not (pack / "manifest.json").is_file():
        manifest = None
    else:  # made elsewhere: bounded, strict JSON, its schema; every name it gives stays inside its folder
        manifest = untrusted.read_json(pack / "manifest.json", untrusted.PACK_MANIFEST)
    if manifest is None or manifest.get("format") != PACK_FORMAT:
        raise LMCError(
            f"{pack} is not a campaign pack (no readable manifest.json of format {PACK_FORMAT}): make it "
            "with `python -m lmcompanion campaign --pack DIR` on a machine with the offline corpora"
        )
    _pack_targets(pack, manifest, paths.cache_dir())
    bad = []
    for rel, meta in sorted(manifest["files"].items()):
        path = pack / rel
        if not path.is_file():
            bad.append(f"{rel} is missing")
        elif path.stat().st_size != meta["bytes"]:
            bad.append(f"{rel} has {path.stat().st_size:,} bytes, not {meta['bytes']:,}")
        elif _sha256(path) != meta["sha256"]:
            bad.append(f"{rel} does not match its SHA-256")
    if bad:
        raise LMCError(
            f"the pack {pack} is damaged: "
            + "; ".join(bad[:10])
            + (f" (and {len(bad) - 10} more)" if len(bad) > 10 else "")
            + ". Make it again (`python -m lmcompanion campaign --pack DIR`) "
            "and carry it again; nothing was run"
        )
    return manifest


def unpack(pack: Path, log: Callable = print) -> dict:
    """Verify the pack (:func:`verify_pack`), restore its corpus files under ``$LMC_CACHE_DIR/pack-data`` (each checked
    against the digest of the original) and its token caches into ``$LMC_CACHE_DIR``, then point ``LMC_DATA_DIR`` at
    the restored files and turn the hub off (``HF_HUB_OFFLINE``, ``HF_DATASETS_OFFLINE``). Returns the manifest."""
    manifest = verify_pack(pack)
    pack, cache = Path(pack), paths.cache_dir()
    data_root = cache / "pack-data"
    targets = _pack_targets(pack, manifest, cache)
    blobs = {}
    for rel, meta in sorted(manifest["files"].items()):  # every file read and checked before any is written
        target = targets.get(rel)
        if target is None:
            continue
        packed = _packed(meta)
        want = (meta["unpacked_bytes"], meta["unpacked_sha256"]) if packed else (meta["bytes"], meta["sha256"])
        if target.is_file() and target.stat().st_size == want[0] and _sha256(target) == want[1]:
            continue
        blob = (pack / rel).read_bytes()
        if packed:
            blob = untrusted.inflate(blob, meta["unpacked_bytes"], pack / rel, untrusted.PACK_MANIFEST)
        if meta["kind"] == "cache" and target.suffix == ".json":  # a token cache's description: strict JSON
            untrusted.parse_json(blob, pack / rel, untrusted.PACK_MANIFEST)
        if hashlib.sha256(blob).hexdigest() != want[1]:
            raise LMCError(f"{pack / rel} does not unpack to the file it was made from; make the pack again")
        blobs[target] = blob
    for target, blob in blobs.items():
        paths.atomic_write(target, blob)
    os.environ["LMC_DATA_DIR"] = str(data_root)
    os.environ["HF_HUB_OFFLINE"] = os.environ["HF_DATASETS_OFFLINE"] = "1"
    log(
        f"pack {pack}: {len(manifest['files'])} files verified; corpora restored in {data_root}, token caches in "
        f"{cache} (made at commit {str(manifest.get('commit'))[:12]}{' with changes' if manifest.get('dirty') else ''})"
    )
    return manifest


def _pack_targets(pack: Path, manifest: dict, cache: Path) -> dict[str, Path]:
    """Where each file of a pack's manifest goes (a wheel: nowhere, it is installed from the pack), each name checked:
    a file of the pack inside the pack under the folder of its kind, a corpus file inside ``<cache>/pack-data``, a
    token cache inside ``cache``; any other name stops the pack before anything is written."""
    out = {}
    fmt, where = untrusted.PACK_MANIFEST, pack / "manifest.json"
    prefix = {"wheel": "wheels/", "data": "data/", "cache": "cache/"}
    for rel, meta in manifest["files"].items():
        untrusted.confined(pack, rel, where, fmt, what="the file")
        if not rel.startswith(prefix[meta["kind"]]) or rel == prefix[meta["kind"]]:
            raise fmt.error(where, f"{rel[:120]!r} is a {meta['kind']} file outside {prefix[meta['kind']]}")
        if meta["kind"] != "wheel" and any(k in meta for k in _PACKED) and not _packed(meta):
            raise fmt.error(where, f"{rel[:120]!r} names some of {', '.join(_PACKED)} but not all of them")
        if meta["kind"] == "data":
            out[rel] = untrusted.confined(cache / "pack-data", meta["unpacks_to"], where, fmt, what="unpacks_to")
        elif meta["kind"] == "cache":
            out[rel] = untrusted.confined(
                cache,
                meta["unpacks_to"] if _packed(meta) else rel.removeprefix("cache/"),
                where,
                fmt,
                what="the cache file",
            )
    return out


_PACKED = ("unpacks_to", "unpacked_sha256", "unpacked_bytes")  # a file gzip-compressed in the pack names all three


def _packed(meta: dict) -> bool:
    return all(k in meta for k in _PACKED)


def check_keys(manifest: dict, profile: str, seeds: int | None = None) -> int:
    """Compute the run keys of the campaign's runs here (device cpu, as the pack did) and compare them with the
    pack's: a difference (other data, or code other than the pack's commit) stops with a message. Returns how many
    keys were compared."""
    want, parts = manifest.get("run_keys") or {}, manifest.get("run_parts") or {}
    diffs, n = [], 0
    for s in plan_mod.steps(profile, device="cpu", seeds=seeds):
        if s.kind == "run" and s.run.id in want:
            n += 1
            sp = s.run.spec()
            if sp.key != want[s.run.id]:
                there = parts.get(s.run.id, {})
                which = [
                    f"its {k} fingerprint ({here} here, {there[k]} in the pack)"
                    for k, here in (("code", sp.code), ("data", sp.data))
                    if k in there and there[k] != here
                ]
                diffs.append(
                    f"{s.run.id}: {sp.key} here, {want[s.run.id]} in the pack"
                    + (f", by {' and '.join(which)}" if which else "")
                )
    if diffs:
        made = manifest.get("python")
        raise LMCError(
            f"{len(diffs)} of the run keys computed from the pack differ from those computed where it was "
            "made ("
            + "; ".join(diffs[:5])
            + f"; Python {platform.python_version()} here"
            + (f", {made} there" if made else "")
            + "): the code or the data differ from the pack's; make "
            "the pack again from this working tree"
        )
    return n


def _own_manifest(pack: Path) -> dict | None:
    """The manifest of a pack made before in ``pack`` (to know that the folder may be replaced), or None."""
    try:
        return untrusted.read_json(Path(pack) / "manifest.json", untrusted.PACK_MANIFEST)
    except LMCError:
        return None


__all__ = [
    "NOT_PACKED",
    "PACK_FORMAT",
    "PACK_LIMIT",
    "check_keys",
    "default_data_dir",
    "default_wheels",
    "make_pack",
    "unpack",
    "verify_pack",
]
