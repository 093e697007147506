"""A corpus read from several of its files, one after another: the ``gpu`` and ``paper`` profiles' Wikipedia.

:mod:`lmcompanion.data.corpora` gives a corpus one file per split. A :class:`JoinedDataConfig` names a corpus (its
cleaning, tokenizer, license and hub copy) and the files of it to read, in order: each file is read and cleaned by
the corpus's rule, the cleaned texts are joined by a blank line (as the cleaning joins articles), and the split rule
cuts the whole, after a head of ``max_chars`` where one is set. The offline Wikipedia's two files are one contiguous
range of 64 WikiExtractor shards of one dump, so the joined text is that of the 64 shards.

Its data kind is its own (``lm_joined``), so a run that reads it executes this module beside
:mod:`lmcompanion.data.lm`, and adding it changed the key of no run that reads a corpus's own file
(:mod:`lmcompanion.fingerprint`). Its token caches are :mod:`lmcompanion.data.lm`'s, in the folder its fingerprint
names: every reader goes through :func:`load_tokens` (the data registry's ``load_tokens``, ``tokenizer``,
``vocab_size`` and ``unigram_loss`` do), which writes them from the joined text where they are missing.

**Identity.** The fingerprint digests every file's SHA-256 with its name: from the file's bytes where the file is
here; where it is not, from the data folder's ``SHA256SUMS``. That is how a GPU machine names the data of a campaign
pack, which carries the token ids made from the text but not the text (it would not fit the machine's 64 MiB): its
restored data folder has a ``SHA256SUMS`` of the files it left out. A machine that knows some of the files and not
others stops, naming them; one that knows none reads the corpus's hub copy instead, as a corpus's own file does.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import numpy as np

from .. import paths
from ..config import WriteUpPasses, require
from ..errors import DataError
from . import corpora, lm
from .lm import LMDataConfig

SUMS = "SHA256SUMS"  # the data folder's list of its files' digests (sha256sum's format)


@dataclass(frozen=True)
class JoinedDataConfig(LMDataConfig):
    """A token stream over several files of one corpus, read in order (see the module doc)."""

    kind: ClassVar[str] = "lm_joined"
    files: tuple[str, ...] = ()  # the corpus's files under $LMC_DATA_DIR, read in this order (two or more)

    def validate(self) -> None:
        super().validate()
        require(
            len(self.files) >= 2 and len(set(self.files)) == len(self.files),
            f"data.files must name two or more distinct files (got {self.files}); one file is the corpus's own "
            "(data kind 'lm')",
        )
        require(
            all(f and not f.startswith("/") and ".." not in f.split("/") for f in self.files),
            f"data.files are paths inside the data folder (LMC_DATA_DIR), got {self.files}",
        )
        require(not corpora.get(self.corpus).generated, f"data.corpus={self.corpus!r} is generated: it has no files")
        require(
            corpora.SPLIT_RULES[self.split] is not None,
            f"data.split={self.split!r} keeps a corpus's own splits; joined files are cut by a rule of fractions "
            "(e.g. chars_90_10)",
        )

    def fingerprint(self) -> str:
        """A digest of every file's name and SHA-256 (see the module doc); where none of the files is known here, the
        corpus's hub copy's, as a corpus's own file falls back to it."""
        known = file_digests(self)
        if not known and corpora.get(self.corpus).hub is not None:
            return corpora.fingerprint(self.corpus)
        missing = [rel for rel in self.files if rel not in known]
        if missing:
            root = paths.data_dir()
            raise DataError(
                f"corpus {self.corpus!r}: {', '.join(missing)} is not in the data folder ({root}) and its "
                f"{SUMS} has no digest of it: point LMC_DATA_DIR at a folder holding "
                f"{', '.join(self.files)} (e.g. `export LMC_DATA_DIR=../shared/data`)"
            )
        h = hashlib.sha256()
        for rel in self.files:
            h.update(f"{rel}={known[rel]};".encode())
        return "sha256:" + h.hexdigest()[:16]

    def sequences_per_epoch(self, model) -> float | None:
        """Training windows in one pass over the train split; None where neither the text nor its tokens are here."""
        if corpora._offline() if _on_hub(self) else len(_here(self)) < len(self.files) and not _cached(self):
            return None
        return load_tokens(self).splits["train"].size / model.context_size

    def write_up_passes(self, run_cfg) -> WriteUpPasses:
        load_tokens(self)  # the caches the estimate reads, made from the joined text
        return super().write_up_passes(run_cfg)


def file_digests(cfg: JoinedDataConfig) -> dict[str, str]:
    """The SHA-256 of each of the config's files known here, by file: of its bytes where it is here, else its line in
    the data folder's ``SHA256SUMS``."""
    root, here = paths.data_dir(), _here(cfg)
    sums = _sums(root / SUMS) if root is not None else {}
    return {
        rel: corpora.file_digest(here[rel]) if rel in here else sums[rel]
        for rel in cfg.files
        if rel in here or rel in sums
    }


def _on_hub(cfg: JoinedDataConfig) -> bool:
    """Whether none of the config's files is known here (neither the file nor its digest), and the corpus has a hub
    copy to read in their place (the paper profile on a machine without the offline copies)."""
    return corpora.get(cfg.corpus).hub is not None and not file_digests(cfg)


def _sums(path: Path) -> dict[str, str]:
    """A ``sha256sum`` listing's digests by file (empty where there is none)."""
    if not path.is_file():
        return {}
    found = (re.fullmatch(r"([0-9a-f]{64}) [ *](.+)", line) for line in path.read_text().splitlines())
    return {m.group(2): m.group(1) for m in found if m}


def _here(cfg: JoinedDataConfig) -> dict[str, Path]:
    """The path of each of the config's files that is here, by its name."""
    root = paths.data_dir()
    return {rel: root / rel for rel in cfg.files if root is not None and (root / rel).is_file()}


def _cached(cfg: JoinedDataConfig) -> bool:
    folder = lm._cache_dir(cfg)
    return (folder / "meta.json").is_file() and lm._intact(folder, folder / "meta.json")


def load_texts(cfg: JoinedDataConfig) -> dict[str, str]:
    """The joined text cut by the split rule: each file read and cleaned by the corpus's rule, joined by a blank
    line, its head of ``max_chars`` kept (where none of the files is known here, the corpus's hub copy)."""
    if _on_hub(cfg):
        return corpora.load_splits(cfg.corpus, cfg.split, cfg.max_chars)
    corpus, here = corpora.get(cfg.corpus), _here(cfg)
    missing = [rel for rel in cfg.files if rel not in here]
    if missing:
        raise DataError(
            f"corpus {cfg.corpus!r}: the text of {', '.join(missing)} is not here (LMC_DATA_DIR="
            f"{paths.data_dir()}), and its token caches were not made: point LMC_DATA_DIR at the folder "
            "holding it"
        )
    parts = []
    for rel in cfg.files:
        text = corpora._read_local(corpus, "all", here[rel])
        parts.append(corpus.clean(text) if corpus.clean else text)
    text = "\n\n".join(parts)[: cfg.max_chars]
    out, start = {}, 0
    fractions = corpora.SPLIT_RULES[cfg.split]
    for i, (split, frac) in enumerate(fractions):
        end = len(text) if i == len(fractions) - 1 else start + int(frac * len(text))
        out[split], start = text[start:end], end
    return corpora._checked(cfg.corpus, out)


def load_tokens(cfg: LMDataConfig) -> lm.TokenData:
    """The token ids of a token-stream config: a joined one's written first where they are missing (from the
    joined text, in :mod:`lmcompanion.data.lm`'s cache layout), any other's as :func:`lmcompanion.data.lm.load_tokens`
    gives them."""
    if isinstance(cfg, JoinedDataConfig) and not _cached(cfg):
        _write_cache(cfg, lm._cache_dir(cfg))
    return lm.load_tokens(cfg)


def _write_cache(cfg: JoinedDataConfig, folder: Path) -> None:
    texts = load_texts(cfg)
    tok = lm.tokenizer(cfg, texts)  # a vocabulary trained on the text (BPE) is trained on this one's train split
    dtype = np.uint16 if tok.vocab_size <= 2**16 else np.uint32
    folder.mkdir(parents=True, exist_ok=True)
    counts = {}
    for split, text in texts.items():
        ids = np.asarray(tok.encode(text), dtype=dtype)
        corpora.write_cache(folder / f"{split}.bin", ids.tobytes())
        counts[split] = int(ids.size)
    meta = {
        "vocab_size": tok.vocab_size,
        "dtype": np.dtype(dtype).name,
        "tokens": counts,
        "chars": {s: len(t) for s, t in texts.items()},
        "tokenizer": tok.name,
        "source": f"local:{paths.data_dir()} ({len(cfg.files)} files)",
        "fingerprint": cfg.fingerprint(),
    }
    corpora.write_cache(folder / "meta.json", json.dumps(meta, indent=1))  # last: the cache is complete


def tokenizer(cfg: LMDataConfig):
    """A token-stream config's tokenizer; a joined one's vocabulary (BPE, characters) is the one made from its own
    text."""
    if isinstance(cfg, JoinedDataConfig) and cfg.tokenizer != "gpt2":
        load_tokens(cfg)
    return lm.tokenizer(cfg)


def vocab_size(cfg: LMDataConfig) -> int:
    """:func:`lmcompanion.data.lm.vocab_size`, a joined config's character vocabulary counted on its own text."""
    return tokenizer(cfg).vocab_size if cfg.tokenizer == "char" else lm.vocab_size(cfg)


def unigram_loss(cfg: LMDataConfig, split: str = "val") -> float:
    """:func:`lmcompanion.data.lm.unigram_loss` on the config's tokens (a joined config's made first)."""
    load_tokens(cfg)
    return lm.unigram_loss(cfg, split)


def build_source(run_cfg, rank: int = 0, world: int = 1) -> lm.LMSource:
    load_tokens(run_cfg.data)
    return lm.build_source(run_cfg, rank, world)


__all__ = [
    "JoinedDataConfig",
    "SUMS",
    "build_source",
    "file_digests",
    "load_texts",
    "load_tokens",
    "tokenizer",
    "unigram_loss",
    "vocab_size",
]
