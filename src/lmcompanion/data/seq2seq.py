"""Sequence-to-sequence tasks with checkable answers, for the formal encoder–decoder chapter.

The data are **generated**, not collected: a task maps a string of decimal digits ``s`` to the string the
model must write (``reverse``: ``s`` backwards; ``sort``: its digits in ascending order), so every answer can
be checked exactly. One example is a pair (z, x) in the write-up's notation:

- ``z`` = the digits of ``s`` (no special tokens), ``min_len <= |z| <= max_len``;
- ``x`` = ``[BOS] + task(s) + [EOS]``, so ``|x| = |z| + 2``.

Vocabulary (|V| = 13): ``PAD = 0``, ``BOS = 1``, ``EOS = 2``, digit ``d`` = ``3 + d``. PAD only fills batches
to a fixed width; it never occurs inside an example.

A batch holds what the model's ``forward`` takes:

- ``z`` (B, max_len): the source, right-padded with PAD; ``z_valid`` (B, max_len): True on real tokens
  (the encoder and the cross-attention ignore padded columns, which makes a padded batch compute exactly what
  the write-up computes on each example alone);
- ``x`` (B, max_len + 1): ``x_{1:ℓ_X-1}`` = BOS and the answer (the last token, EOS, is never an input of
  the loss: column ``ℓ_X`` of P is unused by J);
- ``targets`` (B, max_len + 1): ``x_{2:ℓ_X}`` = the answer and EOS, padded with ``IGNORE`` (-100).

The strings are distinct: ``n_train + n_val`` different strings are drawn (length uniform in
[min_len, max_len], then digits uniform; repeats are redrawn), the first ``n_train`` form the train split and
the rest the held-out ``val`` split, so no held-out input was seen in training. The set is a pure function of
``data_seed``; a run's own seed only orders its batches (drawn with replacement, a pure function of
(seed, step), as in ``data.lm``), so every run and the literal ED-Training loop see the same examples.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Callable, ClassVar, Iterator, Literal

import numpy as np
import torch

from ..config import ConfigBase, WriteUpPasses, require
from ..errors import ConfigError
from .sampling import mix_seed

PAD, BOS, EOS = 0, 1, 2
DIGIT0 = 3  # token of digit 0; digit d is DIGIT0 + d
VOCAB: tuple[str, ...] = ("<pad>", "<bos>", "<eos>", *"0123456789")
IGNORE = -100  # target id that the loss skips (F.cross_entropy's default ignore_index)

TASKS: dict[str, Callable[[str], str]] = {
    "reverse": lambda s: s[::-1],
    "sort": lambda s: "".join(sorted(s)),
}


def n_strings(min_len: int, max_len: int) -> int:
    """How many distinct digit strings have a length in [min_len, max_len]."""
    return sum(10**n for n in range(min_len, max_len + 1))


@dataclass(frozen=True)
class Seq2SeqDataConfig(ConfigBase):
    """A generated digit-string task: the source z, the answer x = [BOS] + task(z) + [EOS]."""

    kind: ClassVar[str] = "seq2seq"
    task: Literal["reverse", "sort"] = "reverse"
    min_len: int = 1  # shortest source string
    max_len: int = 8  # longest source string (the model needs l_max >= max_len + 2)
    n_train: int = 20_000  # distinct training strings
    n_val: int = 1_000  # distinct held-out strings, none of them in train
    data_seed: int = 0  # the examples; the run's seed orders batches and initialises weights

    def validate(self) -> None:
        require(
            self.min_len >= 1, f"data.min_len must be >= 1 (an empty z has nothing to attend to), got {self.min_len}"
        )
        require(self.max_len >= self.min_len, f"data.max_len ({self.max_len}) must be >= data.min_len ({self.min_len})")
        require(self.n_train >= 1 and self.n_val >= 1, "data.n_train and data.n_val must be >= 1")
        require(self.data_seed >= 0, f"data.data_seed must be >= 0, got {self.data_seed}")
        available = n_strings(self.min_len, self.max_len)
        # at most half of all strings, so that drawing distinct ones stays quick
        require(
            2 * (self.n_train + self.n_val) <= available,
            f"data.n_train + data.n_val = {self.n_train + self.n_val} is too many: lengths "
            f"{self.min_len}..{self.max_len} give {available:,} distinct strings and at most half may be used; "
            f"raise data.max_len or lower data.n_train / data.n_val",
        )

    @property
    def vocab_size(self) -> int:
        return len(VOCAB)

    @property
    def width(self) -> int:
        """Columns of the padded decoder input and targets (|x| - 1 of the longest example)."""
        return self.max_len + 1

    def fingerprint(self) -> str:
        """Generated data: a pure function of this config (which the run key holds) and of this module's code."""
        return "generated"

    def check_model(self, model) -> None:
        for name in ("vocab_size", "l_max"):
            require(
                hasattr(model, name),
                f"model family {model.family!r} has no {name}; seq2seq data needs an encoder-decoder (formal_ed)",
            )
        require(
            model.vocab_size == len(VOCAB),
            f"model.vocab_size={model.vocab_size} but the seq2seq vocabulary has {len(VOCAB)} tokens "
            f"({', '.join(VOCAB[:3])}, digits); set model.vocab_size={len(VOCAB)}",
        )
        require(
            model.l_max >= self.max_len + 2,
            f"model.l_max={model.l_max} is shorter than the longest x = [BOS] + {self.max_len} digits + [EOS]; "
            f"set model.l_max >= {self.max_len + 2} or lower data.max_len",
        )

    def tokens_per_sequence(self, model) -> int:
        """Target positions per example, padding included (what the trainer counts as tokens)."""
        return self.width

    def sequences_per_epoch(self, model) -> int:
        return self.n_train

    def write_up_passes(self, run_cfg) -> WriteUpPasses:
        return WriteUpPasses(None, words="no experiment in the write-up")

    @property
    def tokenizer_name(self) -> str:
        return "digits"


# --------------------------------------------------------------------------------------------------
# Encoding


def encode_digits(s: str) -> list[int]:
    if not s or not s.isdigit() or not s.isascii():
        raise ConfigError(f"a source must be a non-empty string of the digits 0-9, got {s!r}")
    return [DIGIT0 + int(c) for c in s]


def decode(tokens) -> str:
    """Token ids to text: digits as themselves, specials as <bos>/<eos>/<pad>."""
    return "".join(VOCAB[int(t)] for t in tokens)


def answer(tokens) -> str | None:
    """The digits between BOS and the first EOS of a generated x, or None if x is not of that form."""
    tokens = [int(t) for t in tokens]
    if not tokens or tokens[0] != BOS or EOS not in tokens:
        return None
    body = tokens[1 : tokens.index(EOS)]
    if any(not DIGIT0 <= t < DIGIT0 + 10 for t in body):
        return None
    return "".join(str(t - DIGIT0) for t in body)


# --------------------------------------------------------------------------------------------------
# The examples


@dataclass(frozen=True)
class Split:
    sources: tuple[str, ...]  # the digit strings s
    answers: tuple[str, ...]  # task(s)
    z: torch.Tensor  # (N, max_len) long, PAD-padded
    z_valid: torch.Tensor  # (N, max_len) bool
    x: torch.Tensor  # (N, max_len + 1) long: [BOS] + answer, PAD-padded
    targets: torch.Tensor  # (N, max_len + 1) long: answer + [EOS], IGNORE-padded

    def __len__(self) -> int:
        return len(self.sources)

    def batch(self, idx: torch.Tensor) -> dict[str, torch.Tensor]:
        return {"z": self.z[idx], "z_valid": self.z_valid[idx], "x": self.x[idx], "targets": self.targets[idx]}

    def example(self, i: int) -> tuple[torch.Tensor, torch.Tensor]:
        """The i-th pair (z, x) unpadded, x = [BOS] + answer + [EOS] (what ED-Training iterates over)."""
        z = self.z[i][self.z_valid[i]]
        m = int((self.targets[i] != IGNORE).sum())  # |x| - 1
        x = torch.cat([self.x[i, :m], torch.tensor([EOS])])
        return z, x


def _draw_strings(cfg: Seq2SeqDataConfig) -> list[str]:
    rng = np.random.default_rng(cfg.data_seed)
    need = cfg.n_train + cfg.n_val
    seen: dict[str, None] = {}  # insertion-ordered set
    for _ in range(1000):
        lengths = rng.integers(cfg.min_len, cfg.max_len + 1, size=2 * need)
        digits = rng.integers(0, 10, size=(2 * need, cfg.max_len))
        for n, row in zip(lengths.tolist(), digits.tolist()):
            seen.setdefault("".join(map(str, row[:n])))
            if len(seen) == need:
                return list(seen)
    raise ConfigError(f"could not draw {need} distinct strings; lower data.n_train / data.n_val")  # pragma: no cover


def _tensors(sources: list[str], cfg: Seq2SeqDataConfig) -> Split:
    N, W = len(sources), cfg.max_len
    f = TASKS[cfg.task]
    answers = [f(s) for s in sources]
    z = torch.full((N, W), PAD, dtype=torch.long)
    x = torch.full((N, W + 1), PAD, dtype=torch.long)
    targets = torch.full((N, W + 1), IGNORE, dtype=torch.long)
    for i, (s, a) in enumerate(zip(sources, answers)):
        zs, ys = encode_digits(s), encode_digits(a)
        z[i, : len(zs)] = torch.tensor(zs)
        x[i, : len(ys) + 1] = torch.tensor([BOS, *ys])
        targets[i, : len(ys) + 1] = torch.tensor([*ys, EOS])
    return Split(tuple(sources), tuple(answers), z, z != PAD, x, targets)


@functools.lru_cache(maxsize=8)
def dataset(cfg: Seq2SeqDataConfig) -> dict[str, Split]:
    """The train and val splits of a task (generated once per config, then cached in memory)."""
    strings = _draw_strings(cfg)
    return {"train": _tensors(strings[: cfg.n_train], cfg), "val": _tensors(strings[cfg.n_train :], cfg)}


def unigram_loss(cfg: Seq2SeqDataConfig, split: str = "val") -> float:
    """Cross-entropy (nats per answer token) on ``split`` of the unigram model fitted to the training split's targets
    (the answer digits and EOS; add-one smoothed over the vocabulary): what a decoder reaches by learning the
    frequencies of its outputs alone, without reading z or its own prefix. The learning gate's reference line for
    this task (:mod:`lmcompanion.learning`)."""
    splits = dataset(cfg)
    train = splits["train"].targets[splits["train"].targets != IGNORE]
    counts = torch.bincount(train, minlength=len(VOCAB)).double() + 1.0
    logp = torch.log(counts / counts.sum())
    held = splits[split].targets[splits[split].targets != IGNORE]
    return float(-logp[held].mean())


def collate(sources, cfg: Seq2SeqDataConfig) -> dict[str, torch.Tensor]:
    """A batch for arbitrary source strings (answers computed by the task), e.g. for a table of examples."""
    return _tensors(list(sources), cfg).batch(torch.arange(len(sources)))


# --------------------------------------------------------------------------------------------------
# The source the trainer reads


class Seq2SeqSource:
    """Batches of examples; each process gets its share of every global step (as ``data.lm.LMSource``)."""

    eval_splits = ("train", "val")

    def __init__(self, cfg: Seq2SeqDataConfig, train_cfg, seed: int, rank: int = 0, world: int = 1) -> None:
        if train_cfg.grad_accum % world:
            raise ConfigError(
                f"train.grad_accum={train_cfg.grad_accum} must be a multiple of the number of processes ({world}): "
                "the global batch is batch_size * grad_accum"
            )
        self.cfg, self.train_cfg, self.seed, self.rank, self.world = cfg, train_cfg, seed, rank, world
        self.splits = dataset(cfg)
        self.vocab_size = len(VOCAB)

    def train_batches(self, step: int) -> list[dict[str, torch.Tensor]]:
        """This process's micro-batches for optimizer step ``step``: examples drawn with replacement."""
        B, accum = self.train_cfg.batch_size, self.train_cfg.grad_accum
        split = self.splits["train"]
        g = torch.Generator().manual_seed(mix_seed(self.seed, step, 1))
        idx = torch.randint(0, len(split), (accum * B,), generator=g)
        return [split.batch(idx[m * B : (m + 1) * B]) for m in range(self.rank, accum, self.world)]

    def eval_batches(self, split: str, step: int) -> Iterator[dict[str, torch.Tensor]]:
        """This process's share of the K evaluation batches of ``split``."""
        data = self.splits[split]
        K = self.train_cfg.eval_batches
        B = self.train_cfg.eval_batch_size or self.train_cfg.batch_size
        if self.train_cfg.eval_sampling == "strided":
            idx = torch.linspace(0, len(data) - 1, K * B).long()  # the same examples at every evaluation
        else:
            g = torch.Generator().manual_seed(mix_seed(self.seed, step, 2, self.eval_splits.index(split)))
            idx = torch.randint(0, len(data), (K * B,), generator=g)
        for k in range(self.rank, K, self.world):
            yield data.batch(idx[k * B : (k + 1) * B])


def build_source(run_cfg, rank: int = 0, world: int = 1) -> Seq2SeqSource:
    return Seq2SeqSource(run_cfg.data, run_cfg.train, run_cfg.seed, rank, world)


__all__ = [
    "BOS",
    "EOS",
    "IGNORE",
    "PAD",
    "Seq2SeqDataConfig",
    "Seq2SeqSource",
    "Split",
    "TASKS",
    "VOCAB",
    "answer",
    "unigram_loss",
    "collate",
    "dataset",
    "decode",
    "encode_digits",
]
