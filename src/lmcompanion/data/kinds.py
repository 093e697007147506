"""What the book asks of each data kind besides its batches, declared once per kind: the loss of token frequencies
alone (the learning gate's reference line), the identity of its tokenizer (a page's provenance), the token-cache
files a GPU machine needs (the campaign's pack) and the batch source of the campaign's CUDA-path check.

The registry :mod:`lmcompanion.data` maps each kind to its config and its source builder
(:data:`lmcompanion.data.KINDS`); :data:`KINDS` here maps the same kinds to their declarations, and whoever asks one
of these questions asks the kind (:func:`of`), never switches on it. The declarations live here, in a module no data
kind imports, and not in the data kinds' own modules: a run's key hashes the code of its data kind's module and of
everything it imports (:mod:`lmcompanion.fingerprint`), so editing a declaration retrains no run.
"""

from __future__ import annotations

import functools
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import torch

from ..errors import ConfigError
from . import joined, lm, retrieval, seq2seq, stories, tokenizers


def _no_cache_files(data_cfg) -> list[Path]:
    return []  # generated in memory (seq2seq), or made from another run (retrieval embeddings)


def _not_tokenized(data_cfg) -> str:
    return ""  # data that are not tokenized text (the retrieval chapter's embeddings)


def _its_corpora(data_cfg) -> None:
    return None  # the files of the corpora it reads (lmcompanion.campaign.plan.corpora_of)


def _trainers_source(run_cfg) -> None:
    return None  # the trainer builds the check's source as it builds a run's


@dataclass(frozen=True)
class Kind:
    """One data kind's answers. ``unigram_loss(run_cfg, split)``: None where token frequencies mean nothing (the
    retrieval matcher's items); ``tokenizer_fingerprint(data_cfg)``: "" for data that are not tokenized text;
    ``cache_files(data_cfg)``: the token-cache files its runs read, built first; ``data_files(data_cfg)``: where
    the files under the data folder a pack carries are not its corpora's own files, (the files carried, the files
    named by their digests only); ``check_source(run_cfg)``: the CUDA-path check's batch source (None: the trainer's
    own)."""

    unigram_loss: Callable | None = None
    tokenizer_fingerprint: Callable[[object], str] = _not_tokenized
    cache_files: Callable[[object], list[Path]] = _no_cache_files
    data_files: Callable[[object], tuple[list[str], list[str]] | None] = _its_corpora
    check_source: Callable = _trainers_source


def _digest(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()[:16]


def _vocabulary(tok) -> str:
    """A tokenizer's identity: the sha256 of its vocabulary as serialized (char list, HF tokenizers JSON, or GPT-2's
    ranks file)."""
    if isinstance(tok, tokenizers.GPT2Tokenizer):
        return f"sha256:{tokenizers.GPT2_RANKS_SHA256[:16]} (the ranks file)"
    return _digest(json.dumps(tok.chars) if isinstance(tok, tokenizers.CharTokenizer) else tok.tok.to_str())


def _token_cache(folder: Path, tokenizer_name: str) -> list[Path]:
    """The files of a text's token cache for one tokenizer, and the vocabulary trained on the text (BPE, char)."""
    vocab = folder / "vocab" / f"{tokenizer_name}.json"
    return sorted(p for p in (folder / tokenizer_name).rglob("*") if p.is_file()) + ([vocab] if vocab.is_file() else [])


# --- a token stream (a corpus's file, or several joined: data.joined) ---------------------------------------------


def _stream_unigram_loss(run_cfg, split: str) -> float:
    return joined.unigram_loss(run_cfg.data, split)


def _stream_tokenizer(data_cfg) -> str:
    return _vocabulary(joined.tokenizer(data_cfg))


def _stream_cache_files(data_cfg) -> list[Path]:
    joined.load_tokens(data_cfg)
    return _token_cache(lm._text_dir(data_cfg), data_cfg.tokenizer_name)


def _joined_files(data_cfg) -> tuple[list[str], list[str]]:
    return [], list(data_cfg.files)  # read joined: its token ids are carried, its files named by their digests


STREAM = Kind(_stream_unigram_loss, _stream_tokenizer, _stream_cache_files)
JOINED = Kind(_stream_unigram_loss, _stream_tokenizer, _stream_cache_files, _joined_files)


# --- a story corpus, one example per story ---------------------------------------------------------------------------


def _stories_unigram_loss(run_cfg, split: str) -> float:
    return stories.unigram_loss(run_cfg.data, run_cfg.model.context_size, split)


def _stories_tokenizer(data_cfg) -> str:
    return _vocabulary(stories.tokenizer(data_cfg))


def _stories_cache_files(data_cfg) -> list[Path]:
    stories.load_tokens(data_cfg)
    return _token_cache(stories._text_dir(data_cfg), data_cfg.tokenizer_name)


STORIES = Kind(_stories_unigram_loss, _stories_tokenizer, _stories_cache_files)


# --- a sequence-to-sequence task, generated in memory ------------------------------------------------------------


def _task_unigram_loss(run_cfg, split: str) -> float:
    return seq2seq.unigram_loss(run_cfg.data, split)


def _task_tokenizer(data_cfg) -> str:
    return _digest(json.dumps(seq2seq.VOCAB))


SEQ2SEQ = Kind(_task_unigram_loss, _task_tokenizer)


# --- a retrieval matcher's items, embedded by another run ----------------------------------------------------------


def _random_embeddings(run_cfg) -> retrieval.RetrievalSource:
    """A matcher's source is made by its procedure from another run's embeddings, which no run of a slot has made
    when the check runs first: random embeddings of the matcher's width stand in (the check tests the model's graph,
    dtypes and optimizer, not what it learns)."""
    g = torch.Generator().manual_seed(run_cfg.seed)
    n, d = 4 * max(run_cfg.model.context_size, run_cfg.train.batch_size), run_cfg.model.n_embed
    emb = {
        f"{kind}_{split}": torch.randn(n, d, generator=g) for kind in ("query", "target") for split in ("train", "test")
    }
    return retrieval.RetrievalSource(emb, run_cfg.model.context_size, run_cfg.data, run_cfg.train, run_cfg.seed)


def _lead_files(data_cfg) -> tuple[list[str], list[str]] | None:
    """The Wikipedia-lead queries read the articles' text itself: only the files they read."""
    return (retrieval.wiki_files(data_cfg.n_pairs), []) if data_cfg.queries == "lead" else None


RETRIEVAL = Kind(data_files=_lead_files, check_source=_random_embeddings)


KINDS: dict[str, Kind] = {
    lm.LMDataConfig.kind: STREAM,
    joined.JoinedDataConfig.kind: JOINED,
    stories.StoriesDataConfig.kind: STORIES,
    seq2seq.Seq2SeqDataConfig.kind: SEQ2SEQ,
    retrieval.RetrievalDataConfig.kind: RETRIEVAL,
}
NONE = Kind()  # data of no registered kind (none declared: e.g. a bench's own)


def of(data_cfg) -> Kind:
    """The declaration of a data config's kind."""
    return KINDS.get(getattr(data_cfg, "kind", None), NONE)


def unigram_loss(run_cfg, split: str = "val") -> float:
    """The loss of token frequencies alone on ``split`` of a run's data, as the run is scored: a token stream's
    (:func:`lmcompanion.data.lm.unigram_loss`), a story corpus's examples at the run's context
    (:func:`lmcompanion.data.stories.unigram_loss`), or a task's answer tokens
    (:func:`lmcompanion.data.seq2seq.unigram_loss`). A model whose loss is not below it has learned nothing a
    comparison could rest on."""
    loss = of(run_cfg.data).unigram_loss
    if loss is None:
        raise ConfigError(
            f"no unigram loss for {type(run_cfg.data).__name__} data (a token stream, a story corpus or "
            "a sequence-to-sequence task has one)"
        )
    return loss(run_cfg, split)


@functools.lru_cache(maxsize=64)
def tokenizer_fingerprint(data_cfg) -> str:
    """The identity of a run's tokenizer: the sha256 of its vocabulary as serialized (char list, HF tokenizers
    JSON, or GPT-2's ranks file), so two builds can see that they tokenized alike; empty for data that are not
    tokenized text (the retrieval chapter's embeddings)."""
    return of(data_cfg).tokenizer_fingerprint(data_cfg)


def cache_files(data_cfg) -> list[Path]:
    """The token-cache files a run's data reads, built here first (the data modules' own cache locations)."""
    return of(data_cfg).cache_files(data_cfg)


def data_files(data_cfg) -> tuple[list[str], list[str]] | None:
    """(carried, named by their digests only): the files under the data folder a pack holds for a run's data, where
    they are not its corpora's own (None)."""
    return of(data_cfg).data_files(data_cfg)


def check_source(run_cfg):
    """The batch source of the CUDA-path check's few steps of a run: the trainer's own (None), except where the
    run's data kind says otherwise (a retrieval matcher: random embeddings of its width)."""
    return of(run_cfg.data).check_source(run_cfg)


__all__ = ["KINDS", "Kind", "cache_files", "check_source", "data_files", "of", "tokenizer_fingerprint", "unigram_loss"]
