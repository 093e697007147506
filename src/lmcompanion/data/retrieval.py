"""Summary-story pairs and the matching dataset of the masked-mixer write-up's retrieval part.

**Pairs.** The original (the reference notes §7) asked Llama-3-8B-Instruct for "a brief one-sentence summary" of
each of the first 200k TinyStories *training* stories and split them by story, 0-180k train and 180k-200k test.
Those summaries are not published. Two sources stand in for them (``queries``):

- ``"instruct"`` (the ``paper`` profile, online): the ``Summary:`` lines TinyStories itself publishes in
  ``roneneldan/TinyStoriesInstruct``, with their ``Story:``. They were written by GPT-3.5/4 when the stories were
  generated, not by Llama-3 afterwards, and are sometimes longer than one sentence.
- ``"extractive"`` (every profile offline; no summaries exist in the offline copies): a SUBSTITUTE, built from the
  story itself by one documented, deterministic rule (:func:`extract_query`): the story's most *central* sentence
  in the SumBasic sense (Nenkova & Vanderwende, 2005): each content word w (letters, not a stop word) gets
  p(w) = its count / all content words of the story; a sentence scores the mean p(w) of its content words; the
  highest-scoring sentence of at least ``MIN_WORDS`` words wins (the earliest on ties). That sentence becomes the
  query and **every occurrence of it is removed from the story**, so that matching cannot be done by copying; a
  story with fewer than ``MIN_SENTENCES`` sentences, or in which the query would still occur verbatim, is skipped.
  A sentence of the story is an easier query than an abstractive summary in one way (it shares the story's
  names and words) and a harder one in another (it is one event, not the gist).

Stories are taken in the corpus's order (the CLM's training stories, as the original's); the first ``n_pairs``
usable ones are kept and split by story: the first ``1 - test_fraction`` (90%) train, the rest test.

**Matching items** (:class:`MatchingSet`, the original's ``RetrievalDataset``). Item i is an (n_ctx, d) matrix: row
0 the query embedding of pair i; rows 1 .. n_ctx - 1 random story embeddings of the same split, drawn uniformly
without replacement from all stories *except pair i's own*; then pair i's story overwrites a uniformly random row
r in [1, n_ctx - 1] and the label is r - 1. So exactly one row holds the true story, and the query's own story is
never a negative. Negatives and r are drawn afresh every time an item is read, i.e. every epoch, from a generator
seeded by (run seed, step): a pure function of the run's seed and step, like every batch of the package.
Evaluation reads fixed items: the first ``eval_items`` pairs of each split, their candidates and rows drawn once
from a generator seeded by (run seed, 11, split), so every evaluation of a run, and the baselines of the chapter,
score exactly the same candidate sets.

The embeddings themselves come from another run (a CLM of the mixer chapter): the retrieval procedure
(``lmcompanion.experiments.matching.match``) computes and caches them and builds :class:`RetrievalSource` from
them; this data kind alone cannot build its source, and says so.
"""

from __future__ import annotations

import math

import functools
import re
from dataclasses import dataclass
from typing import ClassVar, Iterator, Literal, Sequence

import torch

from ..config import ConfigBase, require
from ..errors import ConfigError, DataError
from . import corpora
from .sampling import mix_seed
from .stories import MARKER, sample_indices

MIN_WORDS = 4  # a query sentence has at least this many words
MIN_SENTENCES = 3  # a story needs at least this many sentences (one becomes the query, two or more stay)
STOP_WORDS = frozenset("""
a an the and or but so then than that this these those there here it its it's he she they them his her their him
i you we me my your our us is are was were be been being am do does did have has had to of in on at by for with from
up down out over into onto as if not no yes very too all some one day said says what who when where why how can could
would will just also again oh
""".split())
INSTRUCT_HUB = "roneneldan/TinyStoriesInstruct"


@dataclass(frozen=True)
class Pair:
    query: str  # the summary (or the extracted sentence)
    story: str  # the story (with the extracted sentence removed)
    index: int  # the story's position in the corpus's order


@dataclass(frozen=True)
class RetrievalDataConfig(ConfigBase):
    """Summary-story pairs embedded by another run's model (``embedder``), as matching items."""

    kind: ClassVar[str] = "retrieval"
    unit: ClassVar[str] = "items"  # what RunConfig.tokens() counts for this data: one target per query item
    embedder: str = "mixer/flat_d1024"  # the experiment whose model embeds the texts (a mixer-chapter CLM, or an autoencoder)
    embedder_profile: str = "paper"  # the profile of that experiment (its run: this run's seed and device)
    embedding: Literal["trained", "untrained"] = "trained"  # untrained: the embedder's initial weights (the write-up's control)
    queries: Literal["extractive", "instruct"] = "extractive"  # see the module doc: a substitute offline, TinyStories' own summaries online
    corpus: str = "tinystories"  # the embedder's stories (the pairs are built from its training stories)
    n_pairs: int = 200_000  # the original's first 200k stories
    test_fraction: float = 0.1  # the last 10% of the pairs are the test split (the original: 180k-200k)
    eval_items: int = 1024  # items per split and evaluation (fixed items and negatives; the whole split if smaller)

    def validate(self) -> None:
        require("/" in self.embedder, f"data.embedder must name an experiment such as 'mixer/flat_d1024', got "
                                      f"{self.embedder!r}")
        require(self.n_pairs >= 20, f"data.n_pairs must be >= 20, got {self.n_pairs}")
        require(0.0 < self.test_fraction < 1.0, f"data.test_fraction must lie in (0, 1), got {self.test_fraction}")
        require(self.eval_items >= 1, f"data.eval_items must be >= 1, got {self.eval_items}")
        if self.queries == "instruct":
            require(self.corpus == "tinystories", "data.queries='instruct' reads TinyStoriesInstruct: set "
                                                  "data.corpus='tinystories'")

    def chance_line(self, model, metric: str) -> tuple[str, float, str]:
        """The learning gate's reference line of ``metric`` for a matcher over this data (:mod:`lmcompanion.learning`):
        (name, level, "loss" or "accuracy"). A query's candidates are the model's context after the query: the true
        target and its negatives; chance is ln K for the cross-entropy and 1/K for an accuracy."""
        k = model.context_size - 1
        if metric.endswith("_acc"):
            return f"chance (1/{k})", 1 / k, "accuracy"
        return f"chance (ln {k})", math.log(k), "loss"

    @property
    def substitute(self) -> bool:
        """True when the queries are not summaries (the extractive rule)."""
        return self.queries == "extractive"

    @property
    def tokenizer_name(self) -> str:
        return f"embeddings by {self.embedder} ({self.embedding})"

    def fingerprint(self) -> str:
        """The texts the pairs come from (the query rule and the embedder are part of the config)."""
        if self.queries == "instruct":
            if corpora._offline():
                raise DataError(f"data.queries='instruct' reads {INSTRUCT_HUB} from the Hugging Face hub, which is "
                                "disabled: go online, or use data.queries='extractive' (a substitute)")
            return f"hub:{INSTRUCT_HUB}@{_instruct_revision()}"
        return corpora.fingerprint(self.corpus)

    def check_model(self, model) -> None:
        require(getattr(model, "family", None) == "matcher",
                f"retrieval data are matching items for a matcher model, not for family {model.family!r}")

    def tokens_per_sequence(self, model) -> int:
        """Targets per item: one (the true candidate's index), as the matcher's counted FLOPs are per item."""
        return 1

    def sequences_per_epoch(self, model) -> int | None:
        return self.n_pairs - max(1, round(self.test_fraction * self.n_pairs))

    def write_up_passes(self, run_cfg) -> str:
        seen = run_cfg.train.max_steps * run_cfg.train.global_batch
        return f"≈ {seen / 180_000:.2f} (of 180,000 queries; the write-up trained 100-200 epochs)"


# --------------------------------------------------------------------------------------------------
# Queries


def sentences(text: str) -> list[str]:
    """The sentences of a text: runs ending in . ! or ? (with a closing quote), stripped, empty ones dropped."""
    found = re.findall(r"[^.!?\n]+(?:[.!?]+[\"'\u201d]?|$)", text, flags=re.M)
    return [s.strip() for s in found if s.strip()]


def _content_words(sentence: str) -> list[str]:
    return [w for w in re.findall(r"[a-z]+", sentence.lower()) if w not in STOP_WORDS]


def extract_query(story: str) -> tuple[str, str] | None:
    """(query, story without it) by the extractive rule of the module doc, or None when the story has no usable
    query. Deterministic: the same story always gives the same pair."""
    sents = sentences(story)
    if len(sents) < MIN_SENTENCES:
        return None
    words = [w for s in sents for w in _content_words(s)]
    if not words:
        return None
    counts: dict[str, int] = {}
    for w in words:
        counts[w] = counts.get(w, 0) + 1
    best, best_score = None, -1.0
    for s in sents:
        content = _content_words(s)
        if len(s.split()) < MIN_WORDS or not content:
            continue
        score = sum(counts[w] for w in content) / (len(content) * len(words))
        if score > best_score:  # strictly greater: the earliest wins ties
            best, best_score = s, score
    if best is None:
        return None
    rest = story.replace(best, " ")
    rest = "\n".join(re.sub(r"[ \t]+", " ", line).strip() for line in rest.split("\n")).strip()
    if best in rest or len(sentences(rest)) < MIN_SENTENCES - 1:
        return None
    return best, rest


def extractive_pairs(stories: Sequence[str], n: int) -> list[Pair]:
    """The first ``n`` usable pairs of ``stories`` (in order) under the extractive rule."""
    out = []
    for i, story in enumerate(stories):
        qs = extract_query(story)
        if qs is not None:
            out.append(Pair(qs[0], qs[1], i))
            if len(out) == n:
                break
    return out


def parse_instruct(lines: Sequence[str]) -> list[Pair]:
    """Pairs from TinyStoriesInstruct's text (fields ``Summary:``, ``Story:``, ... ; entries end with the marker)."""
    out, fields, key = [], {}, None
    for line in list(lines) + [MARKER]:
        if line.strip() == MARKER:
            if fields.get("Summary") and fields.get("Story"):
                out.append(Pair(fields["Summary"].strip(), fields["Story"].strip(), len(out)))
            fields, key = {}, None
            continue
        m = re.match(r"^(Features|Words|Summary|Random sentence|Story):\s?(.*)$", line)
        if m:
            key = m.group(1)
            fields[key] = m.group(2)
        elif key is not None:
            fields[key] += "\n" + line
    return out


def _instruct_revision() -> str:
    """The commit of TinyStoriesInstruct on the hub now (what the fingerprint names and the loader pins)."""
    return corpora._hub_revision(corpora.HubSource(INSTRUCT_HUB))


def _instruct_pairs(n: int) -> list[Pair]:
    """The first ``n`` complete summary-story entries of TinyStoriesInstruct's train split, at the hub revision the
    data's fingerprint names (read in batches: the split has tens of millions of lines)."""
    import datasets

    if corpora._offline():
        raise DataError(f"data.queries='instruct' reads {INSTRUCT_HUB} from the Hugging Face hub, which is disabled: "
                        "go online, or use data.queries='extractive' (a substitute)")
    revision = _instruct_revision()
    try:
        with corpora._quiet_datasets():
            rows = datasets.load_dataset(INSTRUCT_HUB, split="train", revision=revision,
                                         cache_dir=corpora._hf_cache())
    except Exception as exc:  # network, auth or format errors from the hub
        raise DataError(f"{INSTRUCT_HUB} could not be read from the Hugging Face hub ({type(exc).__name__}: {exc}); "
                        "go online, or use data.queries='extractive'") from exc
    pairs: list[Pair] = []
    chunk: list[str] = []
    for batch in rows.iter(batch_size=10_000):
        for line in batch["text"]:
            chunk.append(line)
            if line.strip() == MARKER:
                pairs.extend(parse_instruct(chunk))
                chunk = []
        if len(pairs) >= n:
            break
    return [Pair(p.query, p.story, i) for i, p in enumerate(pairs[:n])]


def pairs(cfg: RetrievalDataConfig, stories: Sequence[str]) -> dict[str, list[Pair]]:
    """{"train": [...], "test": [...]}: the config's pairs split by story (``stories``: the embedder's training
    stories, used by the extractive rule)."""
    got = _instruct_pairs(cfg.n_pairs) if cfg.queries == "instruct" else extractive_pairs(stories, cfg.n_pairs)
    if len(got) < cfg.n_pairs:
        raise DataError(f"data.n_pairs={cfg.n_pairs:,} but only {len(got):,} usable pairs exist in the stories: "
                        "lower data.n_pairs")
    n_test = max(1, round(cfg.test_fraction * len(got)))
    return {"train": got[:-n_test], "test": got[-n_test:]}


# --------------------------------------------------------------------------------------------------
# Matching items


class MatchingSet:
    """The matching items of one split: ``queries`` and ``targets`` (N, d) embeddings, pair i = (queries[i],
    targets[i]); ``n_ctx`` rows per item (the query and n_ctx - 1 candidates)."""

    def __init__(self, queries: torch.Tensor, targets: torch.Tensor, n_ctx: int):
        if queries.shape != targets.shape:
            raise DataError(f"queries {tuple(queries.shape)} and targets {tuple(targets.shape)} differ in shape")
        if targets.size(0) < n_ctx:  # the n_ctx - 1 drawn before the true story overwrites one are not its own
            raise ConfigError(f"an item draws {n_ctx - 1} stories other than its own, so a split needs at least "
                              f"{n_ctx}, but it has {targets.size(0)}: raise data.n_pairs or lower model.context_size")
        self.queries, self.targets, self.n_ctx = queries, targets, n_ctx

    def __len__(self) -> int:
        return self.queries.size(0)

    def draw(self, index: torch.Tensor, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
        """(rows (B, n_ctx) of story ids, with -1 in row 0 for the query; labels (B,)) for the pairs ``index``."""
        B, N, k = index.numel(), len(self), self.n_ctx - 1
        # k stories without replacement from the N - 1 that are not pair i's own: j in [0, N-2], shifted past i
        others = torch.rand(B, N - 1, generator=generator).topk(k, dim=1).indices
        others = others + (others >= index[:, None]).long()
        r = torch.randint(1, self.n_ctx, (B,), generator=generator)  # the true story's row, uniform in [1, n_ctx-1]
        rows = torch.cat([torch.full((B, 1), -1, dtype=torch.long), others], dim=1)
        rows[torch.arange(B), r] = index  # overwrites one negative
        return rows, r - 1

    def items(self, index: torch.Tensor, generator: torch.Generator) -> dict[str, torch.Tensor]:
        rows, labels = self.draw(index, generator)
        x = self.targets[rows.clamp(min=0)]  # (B, n_ctx, d)
        x[:, 0] = self.queries[index]
        return {"x": x, "targets": labels}


class RetrievalSource:
    """Training and evaluation batches of matching items (the trainer's source interface). Each split is scored by
    the cross-entropy and the top-1 accuracy of every item (:meth:`score`), from step 0 on (``eval_at_start``)."""

    eval_splits = ("train", "test")
    eval_at_start = True

    def __init__(self, embeddings: dict[str, torch.Tensor], n_ctx: int, data_cfg: RetrievalDataConfig, train_cfg,
                 seed: int):
        self.sets = {s: MatchingSet(embeddings[f"query_{s}"], embeddings[f"target_{s}"], n_ctx)
                     for s in ("train", "test")}
        self.cfg, self.train_cfg, self.seed = data_cfg, train_cfg, seed

    def train_batches(self, step: int) -> list[dict[str, torch.Tensor]]:
        B, accum = self.train_cfg.batch_size, self.train_cfg.grad_accum
        data = self.sets["train"]
        index = sample_indices(self.seed, len(data), step * B * accum, B * accum)
        g = torch.Generator().manual_seed(mix_seed(self.seed, step, 7))  # fresh negatives at every read
        return [data.items(index[m * B:(m + 1) * B], g) for m in range(accum)]

    @functools.lru_cache(maxsize=4)
    def eval_draws(self, split: str) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """The fixed evaluation items of ``split`` (the same candidates at every evaluation, and for the baselines):
        (pair index (n,), rows (n, n_ctx) of story ids with -1 for the query, labels (n,)) for its first
        ``eval_items`` pairs."""
        data = self.sets[split]
        index = torch.arange(min(len(data), self.cfg.eval_items))
        g = torch.Generator().manual_seed(mix_seed(self.seed, 11, self.eval_splits.index(split)))
        rows, labels = data.draw(index, g)
        return index, rows, labels

    def _eval_items(self, split: str) -> list[dict[str, torch.Tensor]]:
        data, (index, rows, labels) = self.sets[split], self.eval_draws(split)
        B = self.train_cfg.eval_batch_size or self.train_cfg.batch_size
        out = []
        for i in range(0, index.numel(), B):
            x = data.targets[rows[i:i + B].clamp(min=0)]
            x[:, 0] = data.queries[index[i:i + B]]
            out.append({"x": x, "targets": labels[i:i + B]})
        return out

    def eval_batches(self, split: str, step: int) -> Iterator[dict[str, torch.Tensor]]:
        yield from self._eval_items(split)

    @staticmethod
    def score(out, batch) -> dict[str, tuple[torch.Tensor, int]]:
        """An evaluation batch's summed cross-entropy and hits over its items (the trainer averages them by item)."""
        logits, y = out.logits.float(), batch["targets"]
        loss = torch.nn.functional.cross_entropy(logits, y, reduction="sum")
        return {"": (loss.double(), y.numel()), "_acc": ((logits.argmax(-1) == y).sum().double(), y.numel())}


def build_source(run_cfg, rank: int = 0, world: int = 1):
    raise ConfigError(f"{run_cfg.name}: a retrieval run reads embeddings made by another run ({run_cfg.data.embedder}), "
                      "so its source is built by its procedure ('match'): train it through the plan, e.g. "
                      f"`python -m lmcompanion train {run_cfg.name}`")


__all__ = ["MIN_SENTENCES", "MIN_WORDS", "MatchingSet", "Pair", "RetrievalDataConfig", "RetrievalSource",
           "build_source", "extract_query", "extractive_pairs", "pairs", "parse_instruct", "sentences"]
