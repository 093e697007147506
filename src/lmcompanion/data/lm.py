"""Language-modelling data: the data config, token caches, and batching.

Token caches are flat arrays of token ids (uint16, or uint32 for vocabularies over 65,536) written once per
(corpus, its content fingerprint, split rule, text size, tokenizer, split) under ``$LMC_CACHE_DIR/tokens`` and
memory-mapped after. The fingerprint (``corpora.fingerprint``) is part of the folder's name, so a cache built from
other text (a truncated copy, another ``LMC_DATA_DIR``) is never read for this one; ``meta.json`` is written last.

Batching follows the write-ups. By default training draws random windows *with replacement* (``x = data[i:i+T]``,
``y = data[i+1:i+T+1]``, ``i`` uniform), so there are no epochs. ``train_windows="epochs"`` is the
efficient-transformer's loader instead: every stride-1 window of the train split once per epoch, in a fresh shuffled
order each epoch. Either way the windows of step ``s`` are a pure function of (seed, s): resuming a run, or splitting
a step over DDP processes, sees the same data.

Evaluation by default uses ``K`` batches of either fixed windows spread evenly over the split ("strided": the same
tokens at every evaluation) or fresh random windows ("random", as the yif-AI code does). ``eval_windows="sliding"``
is the Hourglass protocol the efficient-transformer's README states: windows every ``eval_stride`` tokens over the
whole split (or an evenly spaced subsample of them), each scored on its last ``eval_last`` positions only (the
other targets are -100, which the loss ignores), so that every scored token has a long context.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, Iterator, Literal

import numpy as np
import torch

from .. import paths
from ..config import ConfigBase, WriteUpPasses, require
from ..errors import ConfigError, DataError
from . import corpora, tokenizers
from .sampling import mix_seed

CACHE_VERSION = 2  # bump when cleaning or tokenization changes, to invalidate old token caches


@dataclass(frozen=True)
class LMDataConfig(ConfigBase):
    """A token stream for next-token prediction."""

    kind: ClassVar[str] = "lm"
    corpus: str = "synthetic"  # a name in lmcompanion.data.corpora.CORPORA
    tokenizer: Literal["gpt2", "char", "bpe"] = "char"
    vocab_size: int | None = None  # BPE only: the size of the trained vocabulary
    split: str = "chars_90_10"  # a rule in corpora.SPLIT_RULES
    max_chars: int | None = None  # keep only the first max_chars characters of the text (of each given split)
    # training windows: "random" = uniform starts with replacement; "epochs" = every stride-1 window once per epoch
    train_windows: Literal["random", "epochs"] = "random"
    # evaluation windows: "batches" = train.eval_batches batches placed by train.eval_sampling; "sliding" = every
    # eval_stride tokens over the whole split
    eval_windows: Literal["batches", "sliding"] = "batches"
    eval_stride: int = 32  # sliding: tokens between the starts of consecutive evaluation windows
    eval_max_windows: int | None = None  # sliding: evaluate this many windows, evenly spaced; None = all of them
    eval_last: int | None = None  # score only the last eval_last positions of each evaluation window; None = all
    eval_splits: tuple[str, ...] = ("train", "val")  # the splits evaluated at every evaluation (those the data has)

    def validate(self) -> None:
        try:
            corpora.get(self.corpus)
            corpora.check_split_rule(self.split)
        except DataError as exc:
            raise ConfigError(f"data: {exc}") from None
        if self.tokenizer == "bpe":
            require(
                self.vocab_size is not None and self.vocab_size >= tokenizers.MIN_BPE_VOCAB,
                f"data.tokenizer='bpe' needs data.vocab_size >= {tokenizers.MIN_BPE_VOCAB}",
            )
        else:
            require(
                self.vocab_size is None, f"data.vocab_size is only for tokenizer='bpe' (tokenizer={self.tokenizer!r})"
            )
        require(self.max_chars is None or self.max_chars > 0, "data.max_chars must be > 0 or None")
        require(self.eval_stride >= 1, f"data.eval_stride must be >= 1, got {self.eval_stride}")
        require(
            self.eval_max_windows is None or self.eval_max_windows >= 1,
            f"data.eval_max_windows must be >= 1 or None (all windows), got {self.eval_max_windows}",
        )
        require(
            self.eval_windows == "sliding" or (self.eval_max_windows is None and self.eval_stride == 32),
            "data.eval_stride and data.eval_max_windows place sliding evaluation windows: set "
            "data.eval_windows='sliding', or leave them at their defaults (32, None)",
        )
        require(
            self.eval_last is None or self.eval_last >= 1,
            f"data.eval_last must be >= 1 or None (score every position), got {self.eval_last}",
        )
        splits = corpora.split_names(self.corpus, self.split)
        require(
            len(self.eval_splits) >= 1 and len(set(self.eval_splits)) == len(self.eval_splits),
            f"data.eval_splits must name at least one split, each once; got {self.eval_splits}",
        )
        missing = [s for s in self.eval_splits if s not in splits]
        require(
            not missing,
            f"data.eval_splits={self.eval_splits} names {missing}, which split rule {self.split!r} "
            f"of {self.corpus!r} does not give (it gives {splits}): choose among those, or a split "
            f"rule with them (e.g. data.split=chars_80_10_10 for a test split)",
        )

    @property
    def generated(self) -> bool:
        return corpora.get(self.corpus).generated

    def check_model(self, model) -> None:
        for name in ("vocab_size", "context_size"):
            require(hasattr(model, name), f"model family {model.family!r} has no {name}; it cannot read token streams")
        require(
            self.eval_last is None or self.eval_last <= model.context_size,
            f"data.eval_last={self.eval_last} scores more positions than a window has (model.context_size="
            f"{model.context_size}): lower data.eval_last or set it to None",
        )
        if self.tokenizer != "char":  # char vocabularies depend on the text: checked when the data is loaded
            expected = tokenizers.GPT2_VOCAB if self.tokenizer == "gpt2" else self.vocab_size
            require(
                model.vocab_size == expected,
                f"model.vocab_size={model.vocab_size} but the {self.tokenizer_name} tokenizer has {expected} tokens",
            )

    @property
    def tokenizer_name(self) -> str:
        return tokenizers.tokenizer_key(self.tokenizer, self.vocab_size)

    def fingerprint(self) -> str:
        """The identity of the text this config reads (the corpus's content fingerprint)."""
        return corpora.fingerprint(self.corpus)

    def tokens_per_sequence(self, model) -> int:
        return model.context_size

    def sequences_per_epoch(self, model) -> float | None:
        """Training windows in one pass over the train split (train tokens / context); None if the text is not here."""
        if corpora.source_of(self.corpus).startswith("hub:") and corpora._offline():
            return None
        return load_tokens(self).splits["train"].size / model.context_size

    def write_up_passes(self, run_cfg) -> WriteUpPasses:
        """Passes over the write-up's own training text, estimated when its size is recorded in the corpus registry
        (characters) from the tokens per character of the copy read here. With ``train_windows="epochs"`` (a
        write-up that states its epochs, over the same text as here) the passes are counted from the run's config,
        and its epochs of stride-1 windows follow in parentheses: an epoch reads each token once per window that
        holds it, so about as many times as the context is long."""
        if self.train_windows == "epochs" and not self.generated:
            train = load_tokens(self).splits["train"].size
            seen = run_cfg.train.max_steps * run_cfg.train.global_batch
            epochs = seen / (train - run_cfg.model.context_size)
            passes = seen * self.tokens_per_sequence(run_cfg.model) / train
            unit = "epoch" if round(epochs, 1) == 1 else "epochs"
            return WriteUpPasses(round(passes), words=f"({epochs:.1f} {unit} of every stride-1 window)")
        corpus = corpora.get(self.corpus)
        if corpus.hub is None or corpus.hub.max_chars is None or corpus.generated:
            return WriteUpPasses(None, words="unknown")
        here = load_tokens(self)
        chars_per_token = here.chars["train"] / here.splits["train"].size
        fraction = dict(corpora.SPLIT_RULES[self.split] or (("train", 1.0),)).get("train", 1.0)
        train_tokens = corpus.hub.max_chars * fraction / chars_per_token
        seen = run_cfg.train.max_steps * run_cfg.train.global_batch * self.tokens_per_sequence(run_cfg.model)
        return WriteUpPasses(
            round(seen / train_tokens, 1), approximate=True, words=f"(of {corpus.hub.max_chars:,} characters)"
        )


def text_key(cfg: LMDataConfig) -> str:
    """Names exactly one text: split rule, head, cache version and the corpus's content fingerprint."""
    head = f"-head{cfg.max_chars}" if cfg.max_chars else ""
    fp = cfg.fingerprint().split(":", 1)[-1].replace("/", "_").replace(":", "_")[:40]
    return f"{cfg.split}{head}-v{CACHE_VERSION}-{fp}"


def load_texts(cfg: LMDataConfig) -> dict[str, str]:
    return corpora.load_splits(cfg.corpus, cfg.split, cfg.max_chars)


def _text_dir(cfg: LMDataConfig) -> Path:
    return paths.cache_dir() / "tokens" / cfg.corpus / text_key(cfg)


def tokenizer(cfg: LMDataConfig, texts: dict[str, str] | None = None) -> tokenizers.Tokenizer:
    """The config's tokenizer (char and BPE vocabularies are built from this text and cached beside its tokens)."""
    fixed = corpora.get(cfg.corpus).chars
    if cfg.tokenizer == "char" and fixed is not None:  # the corpus's own character vocabulary: no text needed
        return tokenizers.CharTokenizer(fixed)
    return tokenizers.build(
        cfg.tokenizer,
        vocab_size=cfg.vocab_size,
        folder=_text_dir(cfg) / "vocab",
        texts=(lambda: texts) if texts is not None else (lambda: load_texts(cfg)),
    )


def _cache_dir(cfg: LMDataConfig) -> Path:
    return _text_dir(cfg) / cfg.tokenizer_name


@dataclass
class TokenData:
    splits: dict[str, np.ndarray]  # split -> token ids (memory-mapped)
    vocab_size: int
    tokenizer: str
    source: str  # where the text came from: generated, local:<dir> or hub:<id>
    chars: dict[str, int]  # characters of text per split
    fingerprint: str  # the identity of the text (corpora.fingerprint)


def vocab_size(cfg: LMDataConfig) -> int:
    """The vocabulary size of the config's tokenizer (reads the text only for a char vocabulary built from it, e.g.
    the generated corpus's: tiny Shakespeare's is fixed by its corpus)."""
    if cfg.tokenizer == "gpt2":
        return tokenizers.GPT2_VOCAB
    if cfg.tokenizer == "bpe":
        return cfg.vocab_size
    return tokenizer(cfg).vocab_size


def _intact(folder: Path, meta_path: Path) -> bool:
    try:
        meta = json.loads(meta_path.read_text())
        size = np.dtype(meta["dtype"]).itemsize
        return all((folder / f"{s}.bin").stat().st_size == n * size for s, n in meta["tokens"].items())
    except (OSError, ValueError, KeyError, TypeError):
        return False


def load_tokens(cfg: LMDataConfig) -> TokenData:
    """Memory-mapped token ids of every split, tokenizing and caching what is missing."""
    folder = _cache_dir(cfg)
    meta_path = folder / "meta.json"
    if meta_path.is_file() and not _intact(folder, meta_path):
        meta_path.unlink()  # a damaged cache (a truncated or missing .bin, an unreadable meta) is rebuilt
    if not meta_path.is_file():
        texts = load_texts(cfg)
        tok = tokenizer(cfg, texts)
        dtype = np.uint16 if tok.vocab_size <= 2**16 else np.uint32
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise DataError(
                f"cannot create the token cache {folder} ({exc.strerror}): point LMC_CACHE_DIR at a writable folder"
            ) from None
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
            "source": corpora.source_of(cfg.corpus),
            "fingerprint": cfg.fingerprint(),
        }
        corpora.write_cache(meta_path, json.dumps(meta, indent=1))
    meta = json.loads(meta_path.read_text())
    splits = {
        s: np.memmap(folder / f"{s}.bin", dtype=meta["dtype"], mode="r", shape=(n,)) for s, n in meta["tokens"].items()
    }
    return TokenData(splits, meta["vocab_size"], meta["tokenizer"], meta["source"], meta["chars"], meta["fingerprint"])


class LMSource:
    """Batches of (idx, targets) windows; each process gets its share of every global step."""

    def __init__(
        self,
        data: TokenData,
        context_size: int,
        train_cfg,
        seed: int,
        rank: int = 0,
        world: int = 1,
        eval_splits: tuple[str, ...] | None = None,
        data_cfg: LMDataConfig | None = None,
    ) -> None:
        self.data, self.T, self.cfg, self.seed = data, context_size, train_cfg, seed
        self.rank, self.world = rank, world
        self.dcfg = data_cfg if data_cfg is not None else LMDataConfig()  # the default windows
        self.vocab_size = data.vocab_size
        wanted = eval_splits if eval_splits is not None else self.dcfg.eval_splits
        self.eval_splits = tuple(s for s in wanted if s in data.splits)
        self._perms: dict[int, torch.Tensor] = {}
        if "train" not in data.splits:
            raise DataError(f"the data has no train split (it has {sorted(data.splits)})")
        for split, arr in data.splits.items():
            if arr.size < self.T + 2:
                raise DataError(
                    f"split {split!r} has {arr.size} tokens, too few for windows of context_size+1={self.T + 1}: "
                    "raise data.max_chars or lower model.context_size"
                )

    def _windows(self, arr: np.ndarray, starts, last: int | None = None) -> dict[str, torch.Tensor]:
        block = np.stack([arr[s : s + self.T + 1] for s in starts.tolist()]).astype(np.int64)
        block = torch.from_numpy(block)
        idx, targets = block[:, :-1], block[:, 1:].clone()
        if last is not None:
            targets[:, : self.T - last] = -100  # scored: the last `last` positions only
        return {"idx": idx, "targets": targets}

    def n_windows(self, split: str = "train") -> int:
        """Stride-1 windows of a split: starts 0 .. size - T - 1 (each needs T + 1 tokens)."""
        return self.data.splits[split].size - self.T

    def _epoch_order(self, epoch: int) -> torch.Tensor:
        """The shuffled window starts of one epoch: a permutation of range(n_windows), a function of (seed, epoch)."""
        if epoch not in self._perms:
            g = torch.Generator().manual_seed(mix_seed(self.seed, epoch, 3))
            self._perms = {e: p for e, p in self._perms.items() if e == epoch - 1}  # keep at most two epochs
            self._perms[epoch] = torch.randperm(self.n_windows("train"), generator=g)
        return self._perms[epoch]

    def epoch_starts(self, first: int, count: int) -> torch.Tensor:
        """Window starts of global samples first .. first + count - 1 under ``train_windows="epochs"``: sample g
        is position g mod N of epoch g // N's order, N = n_windows (a step may straddle two epochs)."""
        N = self.n_windows("train")
        g = torch.arange(first, first + count)
        return torch.cat([self._epoch_order(int(e))[g[g // N == e] % N] for e in torch.unique(g // N)])

    def train_batches(self, step: int) -> list[dict[str, torch.Tensor]]:
        """This process's micro-batches for optimizer step ``step`` (0-based)."""
        arr, B, accum = self.data.splits["train"], self.cfg.batch_size, self.cfg.grad_accum
        if self.dcfg.train_windows == "epochs":
            starts = self.epoch_starts(step * accum * B, accum * B)
        else:
            g = torch.Generator().manual_seed(mix_seed(self.seed, step, 1))
            starts = torch.randint(0, arr.size - self.T, (accum * B,), generator=g)
        local = range(self.rank, accum, self.world)  # global micro-batch m*world + rank
        return [self._windows(arr, starts[m * B : (m + 1) * B]) for m in local]

    def sliding_starts(self, split: str) -> torch.Tensor:
        """``eval_windows="sliding"``: a start every eval_stride tokens over the split (the last window ends at or
        before its end), or eval_max_windows of them evenly spaced."""
        starts = torch.arange(0, self.n_windows(split), self.dcfg.eval_stride)
        n = self.dcfg.eval_max_windows
        if n is not None and n < starts.numel():
            starts = starts[torch.linspace(0, starts.numel() - 1, n).round().long()]
        return starts

    def eval_batches(self, split: str, step: int) -> Iterator[dict[str, torch.Tensor]]:
        """This process's share of the evaluation batches of ``split``."""
        arr = self.data.splits[split]
        B = self.cfg.eval_batch_size or self.cfg.batch_size
        if self.dcfg.eval_windows == "sliding":
            starts = self.sliding_starts(split)
            K = max(1, starts.numel() // B)  # as the original's loader, a last partial batch is left out
            B = min(B, starts.numel())
        elif self.cfg.eval_sampling == "strided":
            K = self.cfg.eval_batches
            starts = torch.linspace(0, arr.size - self.T - 1, K * B).long()
        else:
            K = self.cfg.eval_batches
            g = torch.Generator().manual_seed(mix_seed(self.seed, step, 2, self.eval_splits.index(split)))
            starts = torch.randint(0, arr.size - self.T, (K * B,), generator=g)
        for k in range(self.rank, K, self.world):
            yield self._windows(arr, starts[k * B : (k + 1) * B], self.dcfg.eval_last)


@functools.lru_cache(maxsize=16)
def unigram_loss(cfg: LMDataConfig, split: str = "val") -> float:
    """Cross-entropy (nats per token) on ``split`` of the unigram model fitted to the training split (add-one
    smoothed): the loss a model reaches by learning token frequencies alone, and never context. An arm whose
    validation loss is not below it has learned nothing a comparison could rest on."""
    data = load_tokens(cfg)
    counts = np.bincount(np.asarray(data.splits["train"]), minlength=data.vocab_size) + 1.0
    logp = np.log(counts / counts.sum())
    return float(-logp[np.asarray(data.splits[split])].mean())


def build_source(run_cfg, rank: int = 0, world: int = 1) -> LMSource:
    data = load_tokens(run_cfg.data)
    if data.vocab_size != run_cfg.model.vocab_size:
        raise ConfigError(
            f"model.vocab_size={run_cfg.model.vocab_size} but the {data.tokenizer} tokenizer of "
            f"{run_cfg.data.corpus!r} has {data.vocab_size} tokens; set model.vocab_size={data.vocab_size}"
        )
    return LMSource(data, run_cfg.model.context_size, run_cfg.train, run_cfg.seed, rank, world, data_cfg=run_cfg.data)
