"""Stories as the masked-mixer write-up trains on them: one story per example, a fixed length, padded on the left.

The write-up's protocol (B. L. Badger, "Masked Mixer Language Models"; the reference notes §1b and §4):

- **Data.** TinyStories: the first 2,000,000 stories of the train split, the whole validation split.
- **Tokenizer.** A 4,096-token BPE trained on the training stories with HF ``tokenizers``, in the style of the
  Llama tokenizer it was retrained from: ``<unk>``, ``<s>``, ``</s>`` at ids 0, 1, 2; spaces become ``▁`` and a
  ``▁`` is prepended to the text (no pre-tokenizer, so merges may cross words, as in the original); byte fallback
  and ``fuse_unk``. The original read its training text line by line with ``.strip()``, so its vocabulary has no
  newline and no byte tokens: every newline of a story becomes ``<unk>``, and a run of them one ``<unk>`` (the
  write-up's samples: "``<unk>`` tokens are newlines"). We train on the training stories' stripped lines too, so
  the same holds here. (The original's loader also fed only part of its 2M lines to the trainer, a bug we do not
  copy; the reference notes §4.)
- **Examples.** Each story is encoded without special tokens, truncated to its first ``context_size`` tokens
  (``truncation=True``, right side) and padded on the LEFT to exactly ``context_size`` (the Llama tokenizer's
  default side) with pad = eos = ``</s>`` (id 2). Targets are the next tokens; a target that is a pad is ignored
  (-100), as the original's collator does, and so is the last position's (its output is never trained: the
  original drops the last logit). Padding is not masked from the model: it reads the pads, as the original.
- **Packing** (``packing=True``, not the original's): each story is preceded by ``<s>`` and the stream of all
  stories is cut into consecutive windows of ``context_size`` tokens, so no position is padding; the last
  position's target is still ignored.

Splits (``val_split``): ``"validation"`` is the hub's validation split (the paper profile, ``source="hub"``).
``"train_tail"`` holds out the last ``val_fraction`` (10%) of the complete stories of the offline train head (the
smaller profiles): the offline validation sample has no story boundaries, so its examples could not have the
train examples' format. ``train_stories`` keeps the first N training stories (after the hold-out).
The generated corpus (``corpus="synthetic"``, the smoke profile) gives its paragraphs as stories.

Batches are a pure function of (seed, step): training goes through the examples epoch after epoch, each epoch in
the order of a permutation seeded by (seed, epoch), as the original's HF Trainer shuffles each epoch. Evaluation
takes ``eval_batches`` batches of fixed examples spread over the split ("strided"), or random ones.

Token caches (one flat array of ids and the offsets of each story, per split) are keyed by the text's identity (the
corpus fingerprint, the split rule, the story count) and the tokenizer, and written atomically.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, Iterator, Literal, Sequence

import numpy as np
import torch

from .. import paths
from ..config import ConfigBase, WriteUpPasses, require
from ..errors import ConfigError, DataError
from . import corpora, synthetic
from .sampling import mix_seed

SPECIALS = ("<unk>", "<s>", "</s>")  # Llama's specials, at ids 0, 1, 2
UNK, BOS, EOS = 0, 1, 2
PAD = EOS  # "tokenizer.pad_token = tokenizer.eos_token"
IGNORE = -100  # targets the loss skips
MARKER = "<|endoftext|>"  # between the stories of the TinyStories .txt files
STORY_CORPORA = ("tinystories", "synthetic")
PAPER_TRAIN_STORIES = 2_000_000
MIN_VOCAB = 64
CACHE_VERSION = 1


@dataclass(frozen=True)
class StoriesDataConfig(ConfigBase):
    """Stories, one per fixed-length example (or packed), with a Llama-style BPE trained on the training stories."""

    kind: ClassVar[str] = "stories"
    corpus: str = "tinystories"  # "tinystories", or "synthetic" (GENERATED text: its paragraphs are the stories)
    source: Literal["local", "hub"] = "local"  # the offline copies under $LMC_DATA_DIR, or the HF hub (paper)
    val_split: Literal["train_tail", "validation"] = (
        "train_tail"  # hold out the train stories' tail, or the hub's validation split
    )
    val_fraction: float = 0.1  # train_tail: the fraction of the complete stories held out (the last ones)
    train_stories: int | None = None  # keep the first N training stories (paper: 2,000,000); None: all of them
    vocab_size: int = 4096  # tokens of the BPE, the three specials included
    packing: bool = False  # False: one story per example, truncated and left-padded (the original); True: packed

    def validate(self) -> None:
        require(
            self.corpus in STORY_CORPORA,
            f"data.corpus={self.corpus!r} has no story boundaries this data kind knows; use one of {STORY_CORPORA}",
        )
        require(self.vocab_size >= MIN_VOCAB, f"data.vocab_size must be >= {MIN_VOCAB}, got {self.vocab_size}")
        require(self.train_stories is None or self.train_stories >= 1, "data.train_stories must be >= 1 or None")
        if self.source == "hub":
            require(
                self.corpus == "tinystories",
                "data.source='hub' reads roneneldan/TinyStories: set data.corpus='tinystories'",
            )
        if self.val_split == "validation":
            require(
                self.source == "hub",
                "data.val_split='validation' needs the hub's validation split (data.source='hub'): the offline "
                "validation sample has no story boundaries; use data.val_split='train_tail' offline",
            )
        else:
            require(0.0 < self.val_fraction < 1.0, f"data.val_fraction must lie in (0, 1), got {self.val_fraction}")

    @property
    def generated(self) -> bool:
        return corpora.get(self.corpus).generated

    @property
    def tokenizer_name(self) -> str:
        return f"llama_bpe{self.vocab_size}"

    def fingerprint(self) -> str:
        """The identity of the text read: the corpus's content fingerprint, or the hub dataset's revision."""
        if self.source == "hub":
            hub = corpora.get(self.corpus).hub
            if corpora._offline():
                raise DataError(
                    f"data.source='hub' reads {hub.path} from the Hugging Face hub, which is disabled "
                    "(HF_HUB_OFFLINE/HF_DATASETS_OFFLINE): go online, or use a profile that reads the "
                    "offline copies (cpu, gpu)"
                )
            return f"hub:{hub.path}@{corpora._hub_revision(hub)}"
        if not self.generated and not corpora.source_of(self.corpus).startswith("local:"):
            raise corpora._missing(corpora.get(self.corpus), "data.source='local' needs its offline copy")
        return corpora.fingerprint(self.corpus)

    def check_model(self, model) -> None:
        for name in ("vocab_size", "context_size"):
            require(hasattr(model, name), f"model family {model.family!r} has no {name}; it cannot read stories")
        require(
            model.vocab_size == self.vocab_size,
            f"model.vocab_size={model.vocab_size} but the {self.tokenizer_name} tokenizer has {self.vocab_size} "
            f"tokens; set model.vocab_size={self.vocab_size}",
        )

    def tokens_per_sequence(self, model) -> int:
        """Positions per example, padding included (what a training step computes on)."""
        return model.context_size

    def sequences_per_epoch(self, model) -> int | None:
        """Training examples in one pass (stories, or packed windows); None when the text cannot be read here."""
        if self.source == "hub" and corpora._offline():
            return None
        if not self.packing:
            return len(load_stories(self)["train"])
        return len(examples(self, model.context_size, "train"))

    def write_up_passes(self, run_cfg) -> WriteUpPasses:
        """Passes over the write-up's training set (its first 2,000,000 stories, one example each)."""
        seen = run_cfg.train.max_steps * run_cfg.train.global_batch
        return WriteUpPasses(
            round(seen / PAPER_TRAIN_STORIES, 2), approximate=True, words=f"(of {PAPER_TRAIN_STORIES:,} stories)"
        )


# --------------------------------------------------------------------------------------------------
# Stories


def split_stories(text: str, marker: str = MARKER) -> list[str]:
    """The complete stories of a text separated by ``marker``: stripped, empty ones dropped, and the last piece
    dropped unless the text ends with the marker (a cut copy ends in the middle of a story)."""
    pieces = text.split(marker)
    if not text.rstrip().endswith(marker):
        pieces = pieces[:-1]
    return [p.strip() for p in pieces if p.strip()]


def _generated_stories() -> list[str]:
    """The generated corpus's paragraphs (the last one is cut at the corpus's length, so it is dropped)."""
    return [p.strip() for p in synthetic.generate().split("\n")[:-1] if p.strip()]


def _hub_stories(cfg: StoriesDataConfig, split: str) -> list[str]:
    import datasets

    hub = corpora.get(cfg.corpus).hub
    if corpora._offline():
        raise DataError(
            f"data.source='hub' reads {hub.path} from the Hugging Face hub, which is disabled here: go "
            "online, or use a profile that reads the offline copies (cpu, gpu)"
        )
    if split == "train":
        n = cfg.train_stories
        spec = f"{hub.splits['train']}[:{n}]" if n else hub.splits["train"]
    else:
        spec = hub.splits["val"]
    try:
        with corpora._quiet_datasets():
            rows = datasets.load_dataset(hub.path, split=spec, cache_dir=corpora._hf_cache())
    except Exception as exc:  # network, auth or format errors from the hub
        raise DataError(
            f"{hub.path} ({spec}) could not be read from the Hugging Face hub ({type(exc).__name__}: "
            f"{exc}); go online, or use a profile that reads the offline copies (cpu, gpu)"
        ) from exc
    return [s.strip() for s in rows[hub.column] if s and s.strip()]


def load_stories(cfg: StoriesDataConfig) -> dict[str, list[str]]:
    """{"train": [...], "val": [...]}: the stories of each split, in the corpus's order."""
    return _load_stories(cfg, cfg.fingerprint() if cfg.source == "local" else "hub")


@functools.lru_cache(maxsize=8)
def _load_stories(cfg: StoriesDataConfig, fingerprint: str) -> dict[str, list[str]]:
    if cfg.source == "hub":
        train, val = _hub_stories(cfg, "train"), _hub_stories(cfg, "val")
    else:
        stories = _generated_stories() if cfg.generated else split_stories(corpora.load_raw(cfg.corpus, "train"))
        n_val = max(1, round(cfg.val_fraction * len(stories)))
        if len(stories) - n_val < 1:
            raise DataError(
                f"corpus {cfg.corpus!r} has {len(stories)} complete stories, too few to hold out "
                f"{cfg.val_fraction:.0%} for validation; restore the corpus files"
            )
        train, val = stories[:-n_val], stories[-n_val:]
    if cfg.train_stories is not None:
        if len(train) < cfg.train_stories:
            where = (
                "the hub's train split"
                if cfg.source == "hub"
                else f"the offline copy ({corpora.source_of(cfg.corpus)}) after the hold-out"
            )
            raise DataError(
                f"data.train_stories={cfg.train_stories:,} but {where} has {len(train):,} complete "
                "stories: lower data.train_stories, or read the hub (data.source='hub')"
            )
        train = train[: cfg.train_stories]
    return {"train": train, "val": val}


# --------------------------------------------------------------------------------------------------
# The tokenizer


class StoryTokenizer:
    """A Llama-style BPE (HF ``tokenizers``): ▁ for spaces, specials at 0/1/2, newlines (unseen) to ``<unk>``."""

    def __init__(self, tok, name: str) -> None:
        self.tok, self.name = tok, name
        self.vocab_size = tok.get_vocab_size()

    @classmethod
    def train(cls, stories: Sequence[str], vocab_size: int, name: str) -> "StoryTokenizer":
        from tokenizers import Tokenizer, decoders, models, normalizers, trainers

        tok = Tokenizer(models.BPE(unk_token=SPECIALS[UNK], fuse_unk=True, byte_fallback=True))
        # LlamaTokenizerFast (legacy): prepend "▁" to the text, spaces become "▁"; no pre-tokenizer
        tok.normalizer = normalizers.Sequence([normalizers.Prepend("▁"), normalizers.Replace(" ", "▁")])
        tok.decoder = decoders.Sequence(
            [decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse(), decoders.Strip(" ", 1, 0)]
        )
        trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=list(SPECIALS), show_progress=False)
        # the original reads its training text line by line, stripped: no newline enters the vocabulary
        lines = (line.strip() for story in stories for line in story.split("\n"))
        tok.train_from_iterator((line for line in lines if line), trainer=trainer)
        if tok.get_vocab_size() != vocab_size:
            raise DataError(
                f"BPE training produced {tok.get_vocab_size()} tokens instead of {vocab_size}: the "
                "training stories are too few for this vocabulary; choose a smaller data.vocab_size"
            )
        assert [tok.token_to_id(s) for s in SPECIALS] == [UNK, BOS, EOS]
        return cls(tok, name)

    @classmethod
    def load(cls, path: Path, name: str) -> "StoryTokenizer":
        from tokenizers import Tokenizer

        return cls(Tokenizer.from_file(str(path)), name)

    def encode(self, text: str) -> list[int]:
        """Ids of ``text`` without added specials (``add_special_tokens=False``)."""
        return self.tok.encode(text, add_special_tokens=False).ids

    def encode_batch(self, texts: Sequence[str]) -> list[list[int]]:
        return [e.ids for e in self.tok.encode_batch(list(texts), add_special_tokens=False)]

    def decode(self, ids: Sequence[int]) -> str:
        """Text of ``ids``, pads dropped and ``<unk>`` written out, as the write-up prints its samples."""
        ids = [int(i) for i in ids if int(i) != PAD]
        parts, run = [], []
        for i in ids + [None]:
            if i is None or i == UNK:
                if run:
                    parts.append(self.tok.decode(run, skip_special_tokens=False))
                    run = []
                if i == UNK:
                    parts.append(SPECIALS[UNK])
            else:
                run.append(i)
        return "".join(parts)


def _text_dir(cfg: StoriesDataConfig) -> Path:
    """Names exactly one set of stories: source, split rule, story count, cache version and the text's identity."""
    fp = cfg.fingerprint().split(":", 1)[-1].replace("/", "_").replace(":", "_").replace("@", "_")[:48]
    rule = f"tail{cfg.val_fraction:g}" if cfg.val_split == "train_tail" else "validation"
    head = f"-first{cfg.train_stories}" if cfg.train_stories else ""
    return paths.cache_dir() / "stories" / cfg.corpus / f"{cfg.source}-{rule}{head}-v{CACHE_VERSION}-{fp}"


def tokenizer(cfg: StoriesDataConfig) -> StoryTokenizer:
    """The config's tokenizer, trained on its training stories once and cached beside their tokens."""
    path = _text_dir(cfg) / "vocab" / f"{cfg.tokenizer_name}.json"
    if path.is_file():
        try:
            tok = StoryTokenizer.load(path, cfg.tokenizer_name)
            if tok.vocab_size == cfg.vocab_size:
                return tok
        except Exception:  # noqa: BLE001  (tokenizers raises its own types for a damaged file)
            pass  # a damaged or foreign cache: trained again from the stories
    tok = StoryTokenizer.train(load_stories(cfg)["train"], cfg.vocab_size, cfg.tokenizer_name)
    corpora.write_cache(path, tok.tok.to_str())
    return tok


# --------------------------------------------------------------------------------------------------
# Token caches


@dataclass
class StoryTokens:
    ids: dict[str, np.ndarray]  # split -> every story's ids, concatenated (uint16)
    offsets: dict[str, np.ndarray]  # split -> (n_stories + 1,) start of each story in ids
    vocab_size: int
    tokenizer: str
    source: str

    def lengths(self, split: str) -> np.ndarray:
        return np.diff(self.offsets[split])

    def story(self, split: str, i: int) -> np.ndarray:
        o = self.offsets[split]
        return self.ids[split][o[i] : o[i + 1]]


def load_tokens(cfg: StoriesDataConfig) -> StoryTokens:
    """Every story's ids per split, tokenizing and caching what is missing."""
    return _load_tokens(cfg, cfg.fingerprint())


@functools.lru_cache(maxsize=8)
def _load_tokens(cfg: StoriesDataConfig, fingerprint: str) -> StoryTokens:
    folder = _text_dir(cfg) / cfg.tokenizer_name
    meta_path = folder / "meta.json"
    if not _intact(folder, meta_path):
        tok = tokenizer(cfg)
        stories = load_stories(cfg)
        counts = {}
        for split, texts in stories.items():
            encoded = tok.encode_batch(texts)
            lengths = np.fromiter((len(e) for e in encoded), dtype=np.int64, count=len(encoded))
            offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
            ids = np.fromiter((i for e in encoded for i in e), dtype=np.uint16, count=int(offsets[-1]))
            corpora.write_cache(folder / f"{split}.ids.npy", functools.partial(np.save, arr=ids))
            corpora.write_cache(folder / f"{split}.offsets.npy", functools.partial(np.save, arr=offsets))
            counts[split] = {"stories": len(texts), "tokens": int(offsets[-1])}
        meta = {
            "vocab_size": tok.vocab_size,
            "tokenizer": tok.name,
            "splits": counts,
            "source": "generated" if cfg.generated else ("hub" if cfg.source == "hub" else "local"),
            "fingerprint": fingerprint,
        }
        corpora.write_cache(meta_path, json.dumps(meta, indent=1))
    meta = json.loads(meta_path.read_text())
    ids = {s: np.load(folder / f"{s}.ids.npy", mmap_mode="r") for s in meta["splits"]}
    offsets = {s: np.load(folder / f"{s}.offsets.npy") for s in meta["splits"]}
    return StoryTokens(ids, offsets, meta["vocab_size"], meta["tokenizer"], meta["source"])


def _intact(folder: Path, meta_path: Path) -> bool:
    try:
        meta = json.loads(meta_path.read_text())
        for split, n in meta["splits"].items():
            if np.load(folder / f"{split}.offsets.npy")[-1] != n["tokens"]:
                return False
            if np.load(folder / f"{split}.ids.npy", mmap_mode="r").size != n["tokens"]:
                return False
        return True
    except (OSError, ValueError, KeyError, TypeError, IndexError):
        return False


# --------------------------------------------------------------------------------------------------
# Examples


def left_pad(ids: Sequence[int] | np.ndarray, length: int) -> np.ndarray:
    """The original's example: the first ``length`` ids (``truncation=True``), padded on the left with PAD."""
    ids = np.asarray(ids, dtype=np.int64)[:length]
    return np.concatenate([np.full(length - ids.size, PAD, dtype=np.int64), ids])


def targets_of(idx: torch.Tensor) -> torch.Tensor:
    """(B, L) inputs -> (B, L) targets: the next token, IGNORE where it is a pad (the collator's rule: labels equal
    to the pad id are -100) and at the last position (its output is never trained)."""
    targets = torch.full_like(idx, IGNORE)
    nxt = idx[:, 1:]
    targets[:, :-1] = nxt.masked_fill(nxt == PAD, IGNORE)
    return targets


class Examples:
    """The fixed-length examples of one split: row i of (N, L) idx, built on demand from the token cache."""

    def __init__(self, tokens: StoryTokens, split: str, length: int, packing: bool):
        self.tokens, self.split, self.L, self.packing = tokens, split, length, packing
        if packing:  # <s> story <s> story ...: windows of L consecutive tokens
            lengths = tokens.lengths(split) + 1
            self.stream = np.empty(int(lengths.sum()), dtype=np.int64)
            starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
            self.stream[starts] = BOS
            keep = np.ones(self.stream.size, dtype=bool)
            keep[starts] = False
            self.stream[keep] = tokens.ids[split]
            self.n = self.stream.size // length
        else:
            self.n = len(tokens.offsets[split]) - 1
        if self.n < 1:
            raise DataError(
                f"split {split!r} has no complete example of {length} tokens: lower model.context_size "
                "or use more stories"
            )

    def __len__(self) -> int:
        return self.n

    def rows(self, index: torch.Tensor) -> torch.Tensor:
        """(len(index), L) long: the examples at ``index``."""
        if self.packing:
            return torch.from_numpy(np.stack([self.stream[i * self.L : (i + 1) * self.L] for i in index.tolist()]))
        return torch.from_numpy(np.stack([left_pad(self.tokens.story(self.split, i), self.L) for i in index.tolist()]))

    def batch(self, index: torch.Tensor) -> dict[str, torch.Tensor]:
        idx = self.rows(index)
        return {"idx": idx, "targets": targets_of(idx)}


def examples(cfg: StoriesDataConfig, length: int, split: str) -> Examples:
    return Examples(load_tokens(cfg), split, length, cfg.packing)


@functools.lru_cache(maxsize=64)
def epoch_order(seed: int, epoch: int, n: int) -> torch.Tensor:
    """The order of the n training examples in epoch ``epoch``: a permutation seeded by (seed, epoch)."""
    return torch.randperm(n, generator=torch.Generator().manual_seed(mix_seed(seed, epoch, 3)))


def sample_indices(seed: int, n: int, start: int, count: int) -> torch.Tensor:
    """Examples ``start .. start + count - 1`` of the run's sequence: epoch after epoch, each in its own order."""
    pos = torch.arange(start, start + count)
    epochs, within = pos // n, pos % n
    out = torch.empty(count, dtype=torch.long)
    for e in epochs.unique().tolist():
        sel = epochs == e
        out[sel] = epoch_order(seed, e, n)[within[sel]]
    return out


class StoriesSource:
    """Batches of left-padded (or packed) stories; each process gets its share of every global step."""

    eval_splits = ("train", "val")

    def __init__(self, cfg: StoriesDataConfig, length: int, train_cfg, seed: int, rank: int = 0, world: int = 1):
        if train_cfg.grad_accum % world:
            raise ConfigError(
                f"train.grad_accum={train_cfg.grad_accum} must be a multiple of the number of processes "
                f"({world}): the global batch is batch_size * grad_accum"
            )
        self.cfg, self.train_cfg, self.seed, self.rank, self.world = cfg, train_cfg, seed, rank, world
        tokens = load_tokens(cfg)
        self.vocab_size = tokens.vocab_size
        self.splits = {s: Examples(tokens, s, length, cfg.packing) for s in ("train", "val")}

    def train_batches(self, step: int) -> list[dict[str, torch.Tensor]]:
        """This process's micro-batches of optimizer step ``step``: examples step*G .. step*G + G - 1 of the run's
        sequence of epochs (G = batch_size * grad_accum), a pure function of (seed, step)."""
        B, accum = self.train_cfg.batch_size, self.train_cfg.grad_accum
        split = self.splits["train"]
        index = sample_indices(self.seed, len(split), step * B * accum, B * accum)
        return [split.batch(index[m * B : (m + 1) * B]) for m in range(self.rank, accum, self.world)]

    def eval_batches(self, split: str, step: int) -> Iterator[dict[str, torch.Tensor]]:
        """This process's share of the K evaluation batches of ``split``."""
        data = self.splits[split]
        K, B = self.train_cfg.eval_batches, self.train_cfg.eval_batch_size or self.train_cfg.batch_size
        if self.train_cfg.eval_sampling == "strided":
            index = torch.linspace(0, len(data) - 1, K * B).round().long()  # the same examples at every evaluation
        else:
            g = torch.Generator().manual_seed(mix_seed(self.seed, step, 2, self.eval_splits.index(split)))
            index = torch.randint(0, len(data), (K * B,), generator=g)
        for k in range(self.rank, K, self.world):
            yield data.batch(index[k * B : (k + 1) * B])


def build_source(run_cfg, rank: int = 0, world: int = 1) -> StoriesSource:
    cfg = run_cfg.data
    tokens = load_tokens(cfg)
    if tokens.vocab_size != run_cfg.model.vocab_size:
        raise ConfigError(
            f"model.vocab_size={run_cfg.model.vocab_size} but the {tokens.tokenizer} tokenizer has "
            f"{tokens.vocab_size} tokens; set model.vocab_size={tokens.vocab_size}"
        )
    return StoriesSource(cfg, run_cfg.model.context_size, run_cfg.train, run_cfg.seed, rank, world)


# --------------------------------------------------------------------------------------------------
# Prompts


def prompt_window(tok: StoryTokenizer, text: str, length: int, n: int) -> tuple[torch.Tensor, int]:
    """A (1, length) window for :func:`lmcompanion.models.mixer.fixed_window_generate` with ``n - 1`` new tokens:
    the prompt's ids (its last ``length - n + 1`` when longer) left-padded, then ``n - 1`` placeholder pads.
    Returns the window and the number of prompt tokens it holds. ``<unk>`` in ``text`` is the write-up's newline."""
    ids = tok.encode(text.replace(SPECIALS[UNK], "\n"))
    room = length - n + 1
    kept = ids[-room:]
    window = np.concatenate([left_pad(kept, room), np.full(n - 1, PAD, dtype=np.int64)])
    return torch.from_numpy(window)[None], len(kept)


@functools.lru_cache(maxsize=16)
def unigram_loss(data_cfg: StoriesDataConfig, context: int, split: str = "val") -> float:
    """Cross-entropy (nats per target) on ``split``'s examples of the unigram model fitted to the training split's
    targets (add-one smoothed): the examples and targets the runs are evaluated on (each story cut to ``context``
    tokens, left-padded, pad targets ignored). A model whose loss is not below it has learned token frequencies at
    most, and a comparison of two such models rests on nothing."""
    tokens = load_tokens(data_cfg)

    def targets(s: str) -> np.ndarray:
        ex = Examples(tokens, s, context, data_cfg.packing)
        t = targets_of(ex.rows(torch.arange(len(ex))))
        return t[t >= 0].numpy()

    counts = np.bincount(targets("train"), minlength=tokens.vocab_size) + 1.0
    logp = np.log(counts / counts.sum())
    return float(-logp[targets(split)].mean())


__all__ = [
    "BOS",
    "EOS",
    "Examples",
    "IGNORE",
    "PAD",
    "PAPER_TRAIN_STORIES",
    "SPECIALS",
    "StoriesDataConfig",
    "StoriesSource",
    "StoryTokenizer",
    "StoryTokens",
    "UNK",
    "build_source",
    "epoch_order",
    "examples",
    "left_pad",
    "load_stories",
    "load_tokens",
    "prompt_window",
    "sample_indices",
    "split_stories",
    "targets_of",
    "tokenizer",
    "unigram_loss",
]
