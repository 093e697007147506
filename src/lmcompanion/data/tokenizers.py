"""Tokenizers: GPT-2 (tiktoken), character level, and byte-level BPE trained on a corpus (HF ``tokenizers``).

- ``gpt2``: tiktoken's GPT-2 encoding, ``encode_ordinary`` (no special tokens), as the yif-AI write-ups'
  ``prepare_data.py`` does. Offline it is built from ``$LMC_DATA_DIR/tiktoken/gpt2.tiktoken``.
- ``char``: one id per distinct character of the corpus (all splits), sorted, as nanoGPT's shakespeare_char.
- ``bpe``: byte-level BPE with a chosen vocabulary size, trained on the corpus's *train* split only and cached.
  Text is encoded line by line (newlines kept), which is how it was trained.
"""

from __future__ import annotations

import contextlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Protocol, Sequence

from .. import paths
from ..errors import DataError
from .corpora import write_cache

GPT2_VOCAB = 50257
GPT2_RANKS_SHA256 = "306cd27f03c1a714eca7108e03d66b7dc042abe8c258b44c199a7ed9838dd930"
MIN_BPE_VOCAB = 260  # the 256 byte symbols plus a few merges


class Tokenizer(Protocol):
    name: str
    vocab_size: int

    def encode(self, text: str) -> list[int]: ...

    def decode(self, ids: Sequence[int]) -> str: ...


@contextlib.contextmanager
def _env(name: str, value: str):
    old = os.environ.get(name)
    os.environ[name] = value
    try:
        yield
    finally:
        if old is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = old


class GPT2Tokenizer:
    name = "gpt2"
    vocab_size = GPT2_VOCAB
    eot = 50256  # <|endoftext|>

    def __init__(self) -> None:
        import tiktoken

        local = paths.data_dir() / "tiktoken" / "gpt2.tiktoken" if paths.data_dir() else None
        if local is not None and local.is_file():
            from tiktoken.load import load_tiktoken_bpe
            from tiktoken_ext.openai_public import ENDOFTEXT, r50k_pat_str

            # tiktoken copies files it loads into its cache; point that at our own cache, never the data folder.
            with _env("TIKTOKEN_CACHE_DIR", str(paths.cache_dir() / "tiktoken")):
                ranks = load_tiktoken_bpe(str(local), expected_hash=GPT2_RANKS_SHA256)
            self.enc = tiktoken.Encoding(
                name="gpt2", pat_str=r50k_pat_str, mergeable_ranks=ranks, special_tokens={ENDOFTEXT: self.eot}
            )
        else:
            try:
                self.enc = tiktoken.get_encoding("gpt2")
            except Exception as exc:
                raise DataError(
                    "the GPT-2 tokenizer needs its BPE files: point LMC_DATA_DIR at a folder with "
                    "tiktoken/gpt2.tiktoken (e.g. ../shared/data), set TIKTOKEN_CACHE_DIR to a tiktoken cache, "
                    f"or go online ({type(exc).__name__}: {exc})"
                ) from exc

    def encode(self, text: str) -> list[int]:
        return self.enc.encode_ordinary(text)

    def decode(self, ids: Sequence[int]) -> str:
        return self.enc.decode(list(ids))


@dataclass
class CharTokenizer:
    chars: str  # the vocabulary, sorted
    name: str = "char"

    def __post_init__(self) -> None:
        self.vocab_size = len(self.chars)
        self._stoi = {c: i for i, c in enumerate(self.chars)}

    @classmethod
    def from_texts(cls, texts) -> "CharTokenizer":
        return cls("".join(sorted(set().union(*[set(t) for t in texts]))))

    def encode(self, text: str) -> list[int]:
        try:
            return [self._stoi[c] for c in text]
        except KeyError as exc:
            raise DataError(f"character {exc.args[0]!r} is not in this character vocabulary") from None

    def decode(self, ids: Sequence[int]) -> str:
        return "".join(self.chars[i] for i in ids)


class BPETokenizer:
    """Byte-level BPE (GPT-2 pre-tokenization) trained with HF ``tokenizers``."""

    def __init__(self, tok, name: str) -> None:
        self.tok = tok
        self.name = name
        self.vocab_size = tok.get_vocab_size()

    @classmethod
    def train(cls, text: str, vocab_size: int, name: str) -> "BPETokenizer":
        from tokenizers import Tokenizer as HFTokenizer
        from tokenizers import decoders, models, pre_tokenizers, trainers

        if vocab_size < MIN_BPE_VOCAB:
            raise DataError(f"a byte-level BPE needs vocab_size >= {MIN_BPE_VOCAB}, got {vocab_size}")
        tok = HFTokenizer(models.BPE())
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        tok.decoder = decoders.ByteLevel()
        trainer = trainers.BpeTrainer(
            vocab_size=vocab_size,
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
            show_progress=False,
        )
        tok.train_from_iterator(_lines(text), trainer=trainer, length=None)
        if tok.get_vocab_size() != vocab_size:
            raise DataError(
                f"BPE training produced {tok.get_vocab_size()} tokens instead of {vocab_size}: the training text is "
                "too small for this vocabulary; choose a smaller data.vocab_size"
            )
        return cls(tok, name)

    @classmethod
    def load(cls, path: Path, name: str) -> "BPETokenizer":
        from tokenizers import Tokenizer as HFTokenizer

        return cls(HFTokenizer.from_file(str(path)), name)

    def save(self, path: Path) -> None:
        _write_atomic(path, self.tok.to_str())

    def encode(self, text: str) -> list[int]:
        ids: list[int] = []
        for enc in self.tok.encode_batch(list(_lines(text))):
            ids.extend(enc.ids)
        return ids

    def decode(self, ids: Sequence[int]) -> str:
        return self.tok.decode(list(ids))


def _lines(text: str):
    return text.splitlines(keepends=True)


def tokenizer_key(kind: str, vocab_size: int | None = None) -> str:
    """Names a tokenizer in cache paths: 'gpt2', 'char' or 'bpe4096'."""
    return f"bpe{vocab_size}" if kind == "bpe" else kind


def _write_atomic(path: Path, text: str) -> None:
    write_cache(path, text)


def build(kind: str, *, vocab_size: int | None, folder: Path, texts: Callable[[], dict[str, str]]) -> Tokenizer:
    """The tokenizer ``kind`` for one text; char and BPE vocabularies are built from ``texts()`` (called only when
    ``folder``, the cache for exactly that text, does not hold them yet)."""
    if kind == "gpt2":
        return GPT2Tokenizer()
    if kind == "char":
        path = folder / "char.json"
        if path.is_file():
            try:
                chars = json.loads(path.read_text())["chars"]
                if isinstance(chars, str) and chars and list(chars) == sorted(set(chars)):
                    return CharTokenizer(chars)
            except (OSError, ValueError, KeyError, TypeError):
                pass  # a damaged cache: built again from the text
        tok = CharTokenizer.from_texts(texts().values())
        _write_atomic(path, json.dumps({"chars": tok.chars}))
        return tok
    if kind == "bpe":
        path = folder / f"bpe{vocab_size}.json"
        name = tokenizer_key(kind, vocab_size)
        if path.is_file():
            try:
                tok = BPETokenizer.load(path, name)
                if tok.vocab_size == vocab_size:
                    return tok
            except Exception:  # noqa: BLE001  (tokenizers raises its own types for a damaged file)
                pass  # a damaged or foreign cache: trained again from the text
        splits = texts()
        if "train" not in splits:
            raise DataError(f"BPE is trained on the train split, and this text has only {sorted(splits)}")
        tok = BPETokenizer.train(splits["train"], vocab_size, name)
        tok.save(path)
        return tok
    raise DataError(f"unknown tokenizer {kind!r}; valid: gpt2, char, bpe")
