"""The corpus registry: where each corpus comes from, how it is cleaned and how it is split.

Every real corpus is read through Hugging Face ``datasets``: from the hub when online, or, offline, from the
plain-text copies in ``$LMC_DATA_DIR`` (the layout of the repository's ``../shared/data``) with the built-in
``text`` builder. Local copies win when both exist, so builds on machines without network are deterministic.

Data identity: :func:`fingerprint` names the exact text a corpus gives right now: a SHA-256 of the local files'
bytes, the hub dataset's revision, or a digest of the generated text. Token caches and run keys include it, so a
changed or truncated copy of a corpus can never be mistaken for the real one.

Split rules turn one text into named splits. ``chars_90_10`` is nanoGPT's and the yif-AI write-ups' rule
(first 90% of the characters for training, the rest for validation); ``chars_80_10_10`` gives a contiguous
train/val/test split; ``given`` keeps the corpus's own splits (TinyStories has train and validation files).
"""

from __future__ import annotations

import contextlib
import functools
import glob
import hashlib
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Mapping

from .. import paths
from ..config import suggest
from ..errors import DataError
from . import synthetic


@dataclass(frozen=True)
class HubSource:
    path: str  # dataset id on the Hugging Face hub
    name: str | None = None  # dataset config
    splits: Mapping[str, str] = field(default_factory=lambda: {"all": "train"})  # our split -> hub split
    column: str = "text"
    joiner: str = "\n\n"  # between rows
    max_chars: int | None = None  # stream at most this much text per split (the hub copy may be huge)


@dataclass(frozen=True)
class Corpus:
    name: str
    description: str
    files: Mapping[str, str]  # our split ("all", "train", "val", "test") -> path under $LMC_DATA_DIR
    hub: HubSource | None
    split: str  # default split rule
    tokenizer: str  # default tokenizer
    license: str
    clean: Callable[[str], str] | None = None
    generated: bool = False  # a generated corpus, not real text
    # Its character vocabulary, fixed as nanoGPT's meta.pkl fixes it (the sorted set of the text's characters), so
    # that configs, counts and plans need no text; a text with a character outside it stops with a message.
    chars: str | None = None

    @property
    def given_splits(self) -> tuple[str, ...]:
        return tuple(s for s in self.files if s != "all")


def _strip_wikiextractor(text: str) -> str:
    """WikiExtractor output -> article texts (title, blank line, body) separated by blank lines.

    Title-only elements (WikiExtractor dropped their tables and lists) are left out.
    """
    articles = []
    for doc in re.findall(r"<doc[^>]*>\n(.*?)</doc>", text, flags=re.S):
        title, _, body = doc.partition("\n")
        body = body.strip()
        if body:
            articles.append(f"{title.strip()}\n\n{body}")
    return "\n\n".join(articles)


CORPORA: dict[str, Corpus] = {
    c.name: c
    for c in [
        Corpus(
            name="shakespeare_char",
            description="Tiny Shakespeare (1.1 MB), the char-rnn / nanoGPT shakespeare_char text",
            files={"all": "tinyshakespeare/input.txt"},
            hub=HubSource("karpathy/tiny_shakespeare", splits={"all": "train"}),
            split="chars_90_10",
            tokenizer="char",
            license="public domain",
            chars="\n !$&',-.3:;?ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz",  # 65, as the notes §7 count
        ),
        Corpus(
            name="tinystories",
            description="TinyStories (V1): offline, the first 2 MiB of the train split and ~900 validation stories",
            files={
                "train": "tinystories/TinyStories-train.head-2MiB.txt",
                "val": "tinystories/TinyStories-validation.first-stories.txt",
            },
            hub=HubSource(
                "roneneldan/TinyStories",
                splits={"train": "train", "val": "validation"},
                joiner="\n<|endoftext|>\n",
                max_chars=200_000_000,
            ),
            split="given",
            tokenizer="bpe",
            license="CDLA-Sharing-1.0",
        ),
        Corpus(
            name="wikipedia",
            description="English Wikipedia article text; offline, 20 WikiExtractor shards (11,570 articles, 17.6 M chars)",
            files={"all": "wikipedia/enwiki-pages.wikiextractor-AA-wiki_00-19.txt"},
            # The write-ups' own 178 MB wikipedia.txt is undocumented; online we stream the same amount of text.
            hub=HubSource("wikimedia/wikipedia", name="20231101.en", splits={"all": "train"}, max_chars=178_723_194),
            split="chars_90_10",
            tokenizer="gpt2",
            license="CC BY-SA 3.0",
            clean=_strip_wikiextractor,
        ),
        Corpus(
            name="wikitext2",
            description="WikiText-2 raw (v1); offline only its test split is present",
            files={"test": "wikitext/wikitext-2-raw-v1/test.txt"},
            hub=HubSource(
                "Salesforce/wikitext",
                name="wikitext-2-raw-v1",
                splits={"train": "train", "val": "validation", "test": "test"},
                joiner="\n",
            ),
            split="given",
            tokenizer="gpt2",
            license="CC BY-SA 3.0",
        ),
        Corpus(
            name="synthetic",
            description="GENERATED text from a small seeded grammar (not real language): smoke tests and CI only",
            files={},
            hub=None,
            split="chars_90_10",
            tokenizer="char",
            license="generated",
            generated=True,
        ),
    ]
}


# Split rules: name -> fractions of the text by characters (None = the corpus's own splits).
SPLIT_RULES: dict[str, tuple[tuple[str, float], ...] | None] = {
    "chars_90_10": (("train", 0.9), ("val", 0.1)),
    "chars_80_10_10": (("train", 0.8), ("val", 0.1), ("test", 0.1)),
    "given": None,
}


def get(name: str) -> Corpus:
    if name not in CORPORA:
        raise DataError(f"unknown corpus {name!r}{suggest(name, CORPORA)}; registered corpora: {', '.join(CORPORA)}")
    return CORPORA[name]


def check_split_rule(rule: str) -> str:
    if rule not in SPLIT_RULES:
        raise DataError(
            f"unknown split rule {rule!r}{suggest(rule, SPLIT_RULES)}; valid rules: {', '.join(SPLIT_RULES)}"
        )
    return rule


def split_names(corpus: str, rule: str) -> tuple[str, ...]:
    fractions = SPLIT_RULES[check_split_rule(rule)]
    if fractions is None:
        c = get(corpus)
        return c.given_splits or tuple((c.hub.splits if c.hub else {}).keys())
    return tuple(name for name, _ in fractions)


def _hf_cache() -> str:
    return str(paths.cache_dir() / "hf-datasets")


def _offline() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "0") not in ("0", "", "false") or os.environ.get(
        "HF_DATASETS_OFFLINE", "0"
    ) not in ("0", "", "false")


def _missing(corpus: Corpus, what: str, cause: str = "") -> DataError:
    local = ", ".join(corpus.files.values()) or "(none)"
    hub = (
        f"{corpus.hub.path}" + (f" ({corpus.hub.name})" if corpus.hub and corpus.hub.name else "")
        if corpus.hub
        else "none"
    )
    return DataError(
        f"corpus {corpus.name!r}: {what}.{(' ' + cause) if cause else ''}\n"
        f"Fixes: (1) point LMC_DATA_DIR at a folder holding {local} "
        f"(e.g. `export LMC_DATA_DIR=../shared/data`; `make` sets it when ../shared/data exists); "
        f"(2) or go online so that `datasets` can download it from the Hugging Face hub [{hub}] "
        f"(and unset HF_HUB_OFFLINE / HF_DATASETS_OFFLINE); "
        f"(3) or, for a smoke test only, use the generated corpus: data.corpus=synthetic."
    )


@contextlib.contextmanager
def _quiet_datasets():
    """No progress bars from `datasets` (they would land on stderr in the book's notebooks)."""
    import datasets
    from datasets.utils import logging as ds_logging

    was_enabled = datasets.is_progress_bar_enabled()
    level = ds_logging.get_verbosity()
    datasets.disable_progress_bars()
    ds_logging.set_verbosity_error()
    try:
        yield
    finally:
        ds_logging.set_verbosity(level)
        if was_enabled:
            datasets.enable_progress_bars()


def _read_local(corpus: Corpus, split: str, path: Path) -> str:
    import datasets

    expected = file_digest(path)
    try:
        path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DataError(
            f"corpus {corpus.name!r}: {path} is not UTF-8 text ({exc.reason} at byte {exc.start}); "
            f"replace it with the UTF-8 original (see the data folder's SHA256SUMS)"
        ) from None
    # one row holding the whole file ("all" is reserved by datasets as a split name)
    for mode in (None, "force_redownload"):  # a stale `datasets` cache of an edited file is rebuilt once
        try:
            with _quiet_datasets():
                # a path is data, never a pattern: `datasets` globs data_files, so a folder named "a [1]" was
                # refused; glob.escape makes every character of the path literal
                ds = datasets.load_dataset(
                    "text",
                    data_files={"train": glob.escape(str(path))},
                    sample_by="document",
                    cache_dir=_hf_cache(),
                    split="train",
                    download_mode=mode,
                )
        except PermissionError as exc:
            raise DataError(
                f"corpus {corpus.name!r}: cannot write the `datasets` cache ({exc}); point LMC_CACHE_DIR "
                "at a writable folder"
            ) from None
        text = ds[0]["text"] if len(ds) else ""
        if hashlib.sha256(text.encode()).hexdigest() == expected:
            return text
    raise DataError(
        f"corpus {corpus.name!r}: the text read from {path} does not match the file's bytes; delete "
        f"{_hf_cache()} and run again"
    )


def _read_hub(corpus: Corpus, split: str) -> str:
    import datasets

    hub = corpus.hub
    if split not in hub.splits:
        raise _missing(corpus, f"the hub copy has no split {split!r} (it has {list(hub.splits)})")
    if _offline():
        raise _missing(corpus, "no local copy was found and the hub is disabled (HF_HUB_OFFLINE/HF_DATASETS_OFFLINE)")
    try:
        with _quiet_datasets():
            rows = datasets.load_dataset(hub.path, hub.name, split=hub.splits[split], streaming=True)
        parts, n = [], 0
        for row in rows:
            parts.append(row[hub.column])
            n += len(parts[-1]) + len(hub.joiner)
            if hub.max_chars is not None and n >= hub.max_chars:
                break
    except Exception as exc:  # network, auth or format errors from the hub
        raise _missing(corpus, "it could not be downloaded from the hub", f"({type(exc).__name__}: {exc})") from exc
    text = hub.joiner.join(parts)
    return text[: hub.max_chars] if hub.max_chars else text


@functools.lru_cache(maxsize=64)
def _digest(path: str, size: int, mtime_ns: int) -> str:
    return paths.file_sha256(Path(path))


def write_cache(path: Path, write) -> None:
    """Write a cache file atomically (:func:`lmcompanion.paths.atomic_write`), or stop with a message naming the
    fix."""
    try:
        paths.atomic_write(path, write)
    except OSError as exc:
        raise DataError(
            f"cannot write the cache {path} ({exc.strerror or exc}): free disk space or point "
            "LMC_CACHE_DIR at a writable folder with room"
        ) from None


def file_digest(path: Path) -> str:
    """SHA-256 of a file's bytes (cached per process while its size and mtime stay the same)."""
    st = os.stat(path)
    return _digest(str(Path(path).resolve()), st.st_size, st.st_mtime_ns)


def _hub_revision(hub: HubSource) -> str:
    try:
        from huggingface_hub import HfApi

        return HfApi().dataset_info(hub.path).sha or "unknown"
    except Exception as exc:  # offline, or the hub refused
        raise DataError(
            f"the revision of {hub.path} on the Hugging Face hub cannot be read ({type(exc).__name__}); "
            "go online, or point LMC_DATA_DIR at local copies"
        ) from None


def fingerprint(name: str) -> str:
    """The identity of the text corpus ``name`` gives right now (see the module docstring)."""
    corpus = get(name)
    if corpus.generated:
        return "generated:" + hashlib.sha256(synthetic.generate().encode()).hexdigest()[:16]
    src = source_of(name)
    if src.startswith("local:"):
        root = paths.data_dir()
        h = hashlib.sha256()
        for split, rel in sorted(corpus.files.items()):
            h.update(f"{split}={file_digest(root / rel)};".encode())
        return "sha256:" + h.hexdigest()[:16]
    if corpus.hub is None or _offline():
        raise _missing(corpus, "no local copy was found and the hub is not reachable")
    return f"hub:{corpus.hub.path}:{corpus.hub.name}@{_hub_revision(corpus.hub)}:{corpus.hub.max_chars}"


def source_of(name: str) -> str:
    """Where the text of a corpus would come from right now: 'generated', 'local:<dir>' or 'hub:<id>'."""
    corpus = get(name)
    if corpus.generated:
        return "generated"
    root = paths.data_dir()
    if root is not None and corpus.files and all((root / p).is_file() for p in corpus.files.values()):
        return f"local:{root}"
    return f"hub:{corpus.hub.path}" if corpus.hub else "unavailable"


def load_raw(name: str, split: str) -> str:
    """The cleaned text of one of the corpus's own parts ("all" or a given split)."""
    corpus = get(name)
    if corpus.generated:
        return synthetic.generate()
    root = paths.data_dir()
    if split in corpus.files and root is not None:
        path = root / corpus.files[split]
        if path.is_file():
            text = _read_local(corpus, split, path)
            return corpus.clean(text) if corpus.clean else text
    if root is not None and split in corpus.files:
        cause = f"{root / corpus.files[split]} does not exist"
    elif root is None:
        cause = "LMC_DATA_DIR is not set"
    else:
        cause = f"the local copy has no {split!r} part"
    if corpus.hub is None:
        raise _missing(corpus, f"its {split!r} text is not available", cause)
    if _offline():
        raise _missing(corpus, f"its {split!r} text is not available offline", cause)
    text = _read_hub(corpus, split)
    return corpus.clean(text) if corpus.clean else text


def load_splits(name: str, rule: str, max_chars: int | None = None) -> dict[str, str]:
    """Split name -> text under a split rule. ``max_chars`` keeps the head of the text (of each given split)."""
    fractions = SPLIT_RULES[check_split_rule(rule)]
    corpus = get(name)
    if fractions is None:
        names = split_names(name, rule)
        if not names:
            raise DataError(f"corpus {name!r} has no splits of its own; use a rule such as chars_90_10")
        return _checked(name, {s: load_raw(name, s)[:max_chars] for s in names})
    if corpus.files and "all" not in corpus.files:
        raise DataError(
            f"corpus {name!r} comes in its own splits ({', '.join(corpus.given_splits)}); use split='given' "
            f"instead of {rule!r}"
        )
    text = load_raw(name, "all")[:max_chars]
    out, start = {}, 0
    for i, (split, frac) in enumerate(fractions):
        end = len(text) if i == len(fractions) - 1 else start + int(frac * len(text))
        out[split] = text[start:end]
        start = end
    return _checked(name, out)


def _checked(name: str, texts: dict[str, str]) -> dict[str, str]:
    """Stop early on text no model should train on: an empty split, binary data, a single repeated character."""
    where = f" ({source_of(name)})"
    for split, text in texts.items():
        if not text.strip():
            raise DataError(
                f"split {split!r} of corpus {name!r} is empty{where}: restore the corpus files, or raise data.max_chars"
            )
        if "\x00" in text:
            raise DataError(
                f"corpus {name!r} contains NUL bytes{where}: it is binary data, not text; restore the original files"
            )
    distinct = set().union(*(set(t) for t in texts.values()))
    if len(distinct) < 2:
        raise DataError(
            f"corpus {name!r} has a single distinct character ({next(iter(distinct))!r}){where}: there is "
            "nothing to learn; restore the corpus files"
        )
    return texts
