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

- ``"lead"`` (the book's own setting, not the write-up's; every profile, offline): Wikipedia articles, the two
  WikiExtractor files of ``$LMC_DATA_DIR/wikipedia`` (:data:`WIKI_FILES`; about 36,000 articles with body text, 26,000
  usable), read directly from the data folder. The query is an article's first sentence (its lead: what the
  article is about, in one sentence, the nearest thing to a summary a Wikipedia article has) and the target is the
  rest of its body, with the title, section headings (lines of fewer than :data:`HEADING_WORDS` words) and every
  copy of the query removed (:func:`lead_pair`). An article whose body has nothing left but its lead, or fewer than
  two sentences after it, is skipped. Sentences are split at ``.``, ``!`` or ``?`` before a capital or a digit,
  except after an initial or a common abbreviation (:func:`wiki_sentences`).

Stories (or articles) are taken in the corpus's order (the CLM's training stories, as the original's; the articles
in page-id order); the first ``n_pairs`` usable ones are kept and split by story: the first ``1 - test_fraction``
(90%) train, the rest test.

**Matching items** (:class:`MatchingSet`, the original's ``RetrievalDataset``). Item i is an (n_ctx, d) matrix: row
0 the query embedding of pair i; rows 1 .. n_ctx - 1 random story embeddings of the same split, drawn uniformly
without replacement from all stories *except pair i's own*; then pair i's story overwrites a uniformly random row
r in [1, n_ctx - 1] and the label is r - 1. So exactly one row holds the true story, and the query's own story is
never a negative. Negatives and r are drawn afresh every time an item is read, i.e. every epoch, from a generator
seeded by (run seed, step): a pure function of the run's seed and step, like every batch of the package.
Evaluation reads fixed items: the first ``eval_items`` pairs of each split, their candidates and rows drawn once
from a generator seeded by (run seed, 11, split), so every evaluation of a run, and the baselines of the chapter,
score exactly the same candidate sets.

**Whitened inputs** (``whiten=True``, the book's, not the write-up's; the chapter says at which profiles, and why).
Before any item is built, the queries and the stories of both splits are each centred on their own training-split
mean (:func:`whitening`), which removes the vector every query (or every story) shares: after LayerNorm about 90%
of a small mixer's query embedding is that shared vector, and a transformer embedder that has not learned varies
in two or three directions only. Both are then whitened with one map, the ZCA matrix of the pooled covariance of
the centred training queries and stories (its eigenvalues floored at :data:`WHITEN_FLOOR` of their mean), so every
direction in which the embeddings vary starts on the same scale. It is a fixed invertible linear map of the
embeddings, fitted to the training split only, the same for every arm: it changes how easily a matcher starts to
learn, not what the embeddings hold. The chapter's metric baselines (cosine, L1, L2) and the exports read the
embeddings as the embedder made them.

The embeddings themselves come from another run (a CLM of the mixer chapter): the retrieval procedure
(``lmcompanion.experiments.matching.match``) computes and caches them and builds :class:`RetrievalSource` from
them; this data kind alone cannot build its source, and says so.
"""

from __future__ import annotations

import functools
import html
import math
import re
from dataclasses import dataclass
from typing import ClassVar, Iterator, Literal, Sequence

import torch

from .. import paths
from ..config import ConfigBase, WriteUpPasses, require
from ..errors import ConfigError, DataError
from . import corpora
from .sampling import mix_seed
from .stories import MARKER, sample_indices

MIN_WORDS = 4  # a query sentence has at least this many words
MIN_SENTENCES = 3  # a story needs at least this many sentences (one becomes the query, two or more stay)
STOP_WORDS = frozenset(
    """
a an the and or but so then than that this these those there here it its it's he she they them his her their him
i you we me my your our us is are was were be been being am do does did have has had to of in on at by for with from
up down out over into onto as if not no yes very too all some one day said says what who when where why how can could
would will just also again oh
""".split()
)
INSTRUCT_HUB = "roneneldan/TinyStoriesInstruct"
# The lead-sentence setting's articles: both WikiExtractor files of the data folder, in page-id order.
WIKI_FILES = (
    "wikipedia/enwiki-pages.wikiextractor-AA-wiki_00-19.txt",
    "wikipedia/enwiki-pages.wikiextractor-AA-wiki_20-63.txt",
)
# The usable pairs (:func:`lead_pair`) in each of WIKI_FILES (a test counts them in the data folder): the first
# ``n_pairs`` pairs need only the files up to the one that holds the n-th, and the data's fingerprint and a campaign's
# pack name and carry only those (the GPU pack cannot carry both files' text beside the token caches).
WIKI_USABLE = (8_099, 18_415)
NOISE = 0.5  # the positive control: a story's embedding is its query's plus this much Gaussian noise per feature
WHITEN_FLOOR = 1e-3  # whitening: eigenvalues of the covariance below this fraction of their mean are raised to it
HEADING_WORDS = 6  # a body line of fewer words is a section heading ("Early life and education."), dropped
# Words after which a period does not end a sentence (with single capitals: initials such as "J. R.")
ABBREVIATIONS = frozenset(
    """
mr mrs ms dr st jr sr no co inc ltd vs etc mt ft lt col gen gov sen rep rev prof corp bros dept est approx fr
""".split()
)


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
    embedder: str = (
        "mixer/flat_d1024"  # the experiment whose model embeds the texts (a mixer-chapter CLM, or an autoencoder)
    )
    embedder_profile: str = "paper"  # the profile of that experiment (its run: this run's seed and device)
    embedding: Literal["trained", "untrained", "noisy_copy"] = (
        "trained"  # untrained: the embedder's initial weights (the write-up's control); noisy_copy: no text, synthetic embeddings that carry the match (the book's positive control, :func:`noisy_copies`; the embedder gives only the width)
    )
    queries: Literal["extractive", "instruct", "lead"] = (
        "extractive"  # see the module doc: a substitute offline, TinyStories' own summaries online, or Wikipedia's leads (the book's own setting)
    )
    corpus: str = (
        "tinystories"  # where the pairs' texts come from: the embedder's stories, or "wikipedia" (queries="lead")
    )
    n_pairs: int = 200_000  # the original's first 200k stories
    test_fraction: float = 0.1  # the last 10% of the pairs are the test split (the original: 180k-200k)
    eval_items: int = 1024  # items per split and evaluation (fixed items and negatives; the whole split if smaller)
    whiten: bool = False  # centre queries and stories on their training means and whiten both (the module doc)

    def validate(self) -> None:
        require(
            "/" in self.embedder,
            f"data.embedder must name an experiment such as 'mixer/flat_d1024', got {self.embedder!r}",
        )
        require(self.n_pairs >= 20, f"data.n_pairs must be >= 20, got {self.n_pairs}")
        require(0.0 < self.test_fraction < 1.0, f"data.test_fraction must lie in (0, 1), got {self.test_fraction}")
        require(self.eval_items >= 1, f"data.eval_items must be >= 1, got {self.eval_items}")
        if self.queries == "instruct":
            require(
                self.corpus == "tinystories",
                "data.queries='instruct' reads TinyStoriesInstruct: set data.corpus='tinystories'",
            )
        require(
            (self.queries == "lead") == (self.corpus == "wikipedia"),
            "data.queries='lead' reads Wikipedia articles and only it does: set data.corpus='wikipedia' with "
            "data.queries='lead', or data.corpus='tinystories' with the other query rules",
        )

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
    def own_setting(self) -> bool:
        """True for the book's own setting (Wikipedia leads), which the write-up does not have."""
        return self.queries == "lead"

    @property
    def tokenizer_name(self) -> str:
        return f"embeddings by {self.embedder} ({self.embedding})"

    def fingerprint(self) -> str:
        """The texts the pairs come from (the query rule and the embedder are part of the config)."""
        if self.embedding == "noisy_copy":
            return f"generated:noisy-copies-{NOISE}"
        if self.queries == "instruct":
            if corpora._offline():
                raise DataError(
                    f"data.queries='instruct' reads {INSTRUCT_HUB} from the Hugging Face hub, which is "
                    "disabled: go online, or use data.queries='extractive' (a substitute)"
                )
            return f"hub:{INSTRUCT_HUB}@{_instruct_revision()}"
        if self.queries == "lead":
            return _lead_fingerprint(self.n_pairs)
        return corpora.fingerprint(self.corpus)

    def check_model(self, model) -> None:
        require(
            getattr(model, "family", None) == "matcher",
            f"retrieval data are matching items for a matcher model, not for family {model.family!r}",
        )

    def tokens_per_sequence(self, model) -> int:
        """Targets per item: one (the true candidate's index), as the matcher's counted FLOPs are per item."""
        return 1

    def sequences_per_epoch(self, model) -> int | None:
        return self.n_pairs - max(1, round(self.test_fraction * self.n_pairs))

    def write_up_passes(self, run_cfg) -> WriteUpPasses:
        seen = run_cfg.train.max_steps * run_cfg.train.global_batch
        if self.queries == "lead":
            return WriteUpPasses(None, words="the book's own setting (Wikipedia leads): the write-up has none")
        return WriteUpPasses(
            round(seen / 180_000, 2),
            approximate=True,
            words="(of 180,000 queries; the write-up trained 100-200 epochs)",
        )


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


# Wikipedia leads (the book's own setting)

_SENTENCE_END = re.compile(r"([.!?])[\"'\u201d)]?\s+(?=[\"'\u201c(]?[A-Z0-9])")
_LAST_WORD = re.compile(r"([A-Za-z]+)\.?$")
_DOC = re.compile(r"<doc[^>]*>\n(.*?)</doc>", flags=re.S)


def wiki_sentences(text: str) -> list[str]:
    """The sentences of a Wikipedia paragraph: a split after ``.``, ``!`` or ``?`` (and a closing quote or
    parenthesis) followed by a space and a capital, a digit or an opening quote, except after an initial ("J.") or
    one of :data:`ABBREVIATIONS` ("St.", "Jr.")."""
    out, start = [], 0
    for m in _SENTENCE_END.finditer(text):
        word = _LAST_WORD.search(text[max(start, m.start(1) - 12) : m.start(1)])
        prev = word.group(1) if word else ""
        if m.group(1) == "." and ((len(prev) == 1 and prev.isupper()) or prev.lower() in ABBREVIATIONS):
            continue
        out.append(text[start : m.end()].strip())
        start = m.end()
    if text[start:].strip():
        out.append(text[start:].strip())
    return out


def lead_pair(body: str) -> tuple[str, str] | None:
    """(query, target) from a Wikipedia article's body (without its title line) by the rule of the module doc, or
    None when the article has no usable pair. Deterministic."""
    paras = [line.strip() for line in html.unescape(body).split("\n") if len(line.split()) >= HEADING_WORDS]
    if not paras:
        return None
    sents = wiki_sentences(paras[0])
    query = sents[0] if sents else ""
    if len(query.split()) < MIN_WORDS:
        return None
    rest = "\n".join(p for p in [" ".join(sents[1:])] + paras[1:] if p).replace(query, " ")
    rest = "\n".join(re.sub(r"[ \t]+", " ", line).strip() for line in rest.split("\n")).strip()
    if query in rest or not _SENTENCE_END.search(rest):  # no second sentence: too little to match
        return None
    return query, rest


def wiki_files(n_pairs: int) -> tuple[str, ...]:
    """The files of :data:`WIKI_FILES` (relative to the data folder) that the first ``n_pairs`` lead pairs come from:
    every file up to the one holding the ``n_pairs``-th usable pair (:data:`WIKI_USABLE`)."""
    held = 0
    for i, usable in enumerate(WIKI_USABLE):
        held += usable
        if n_pairs <= held:
            return WIKI_FILES[: i + 1]
    return WIKI_FILES


def _wiki_paths(n_pairs: int):
    root, files = paths.data_dir(), wiki_files(n_pairs)
    found = [root / f for f in files] if root is not None else []
    if not found or not all(p.is_file() for p in found):
        where = f"{root}/wikipedia/" if root is not None else "LMC_DATA_DIR (not set)"
        raise DataError(
            f"data.queries='lead' reads the Wikipedia articles {', '.join(f.split('/')[-1] for f in files)} "
            f"from {where}, and they are not there: point LMC_DATA_DIR at the data folder (../shared/data)"
        )
    return found


def _lead_fingerprint(n_pairs: int) -> str:
    """The bytes the first ``n_pairs`` lead pairs come from: the digests of the files they are read from."""
    return "sha256:" + ";".join(corpora.file_digest(p)[:16] for p in _wiki_paths(n_pairs))


@functools.lru_cache(maxsize=2)
def _lead_pairs(n: int, fingerprint: str) -> tuple[Pair, ...]:
    out: list[Pair] = []
    article = 0
    for path in _wiki_paths(n):
        for doc in _DOC.findall(path.read_text(encoding="utf-8")):
            _, _, body = doc.partition("\n")
            got = lead_pair(body) if body.strip() else None
            if got is not None:
                out.append(Pair(got[0], got[1], article))
                if len(out) == n:
                    return tuple(out)
            article += 1
    return tuple(out)


def lead_pairs(n: int) -> list[Pair]:
    """The first ``n`` usable (lead, rest of the body) pairs of the Wikipedia articles (:data:`WIKI_FILES`), in
    page-id order; ``Pair.index`` is the article's position among all articles of both files."""
    return list(_lead_pairs(n, _lead_fingerprint(n)))


def _instruct_revision() -> str:
    """The commit of TinyStoriesInstruct on the hub now (what the fingerprint names and the loader pins)."""
    return corpora._hub_revision(corpora.HubSource(INSTRUCT_HUB))


def _instruct_pairs(n: int) -> list[Pair]:
    """The first ``n`` complete summary-story entries of TinyStoriesInstruct's train split, at the hub revision the
    data's fingerprint names (read in batches: the split has tens of millions of lines)."""
    import datasets

    if corpora._offline():
        raise DataError(
            f"data.queries='instruct' reads {INSTRUCT_HUB} from the Hugging Face hub, which is disabled: "
            "go online, or use data.queries='extractive' (a substitute)"
        )
    revision = _instruct_revision()
    try:
        with corpora._quiet_datasets():
            rows = datasets.load_dataset(INSTRUCT_HUB, split="train", revision=revision, cache_dir=corpora._hf_cache())
    except Exception as exc:  # network, auth or format errors from the hub
        raise DataError(
            f"{INSTRUCT_HUB} could not be read from the Hugging Face hub ({type(exc).__name__}: {exc}); "
            "go online, or use data.queries='extractive'"
        ) from exc
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
    if cfg.queries == "instruct":
        got = _instruct_pairs(cfg.n_pairs)
    elif cfg.queries == "lead":
        got = lead_pairs(cfg.n_pairs)
    else:
        got = extractive_pairs(stories, cfg.n_pairs)
    if len(got) < cfg.n_pairs:
        where = "Wikipedia articles" if cfg.queries == "lead" else "stories"
        raise DataError(
            f"data.n_pairs={cfg.n_pairs:,} but only {len(got):,} usable pairs exist in the {where}: lower data.n_pairs"
        )
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
            raise ConfigError(
                f"an item draws {n_ctx - 1} stories other than its own, so a split needs at least "
                f"{n_ctx}, but it has {targets.size(0)}: raise data.n_pairs or lower model.context_size"
            )
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


def noisy_copies(n_pairs: int, test_fraction: float, width: int, seed: int) -> dict[str, torch.Tensor]:
    """The positive control's embeddings (no text): ``n_pairs`` queries drawn from N(0, I) of ``width`` features and
    their stories, each its query plus N(0, NOISE**2 I) noise, split as :func:`pairs` splits pairs (the last
    ``test_fraction`` for testing); seeded by the run's seed. A matcher that learns finds each story from its query
    on test pairs it never saw: the match is there, and it generalises."""
    g = torch.Generator().manual_seed(mix_seed(seed, 13))
    q = torch.randn(n_pairs, width, generator=g)
    t = q + NOISE * torch.randn(n_pairs, width, generator=g)
    n_test = max(1, round(test_fraction * n_pairs))
    return {
        "query_train": q[:-n_test],
        "target_train": t[:-n_test],
        "query_test": q[-n_test:],
        "target_test": t[-n_test:],
    }


def whitening(embeddings: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """The embeddings with queries and stories each centred on their own training-split mean and both whitened by
    the ZCA matrix of the pooled covariance of the centred training queries and stories (eigenvalues floored at
    :data:`WHITEN_FLOOR` of their mean): every key of ``embeddings`` (``query_train``, ``target_test``, ...)
    transformed, as float32."""
    mean = {kind: embeddings[f"{kind}_train"].double().mean(0) for kind in ("query", "target")}
    centred = torch.cat([embeddings[f"{kind}_train"].double() - mean[kind] for kind in ("query", "target")])
    cov = centred.T @ centred / (centred.size(0) - 1)  # (d, d)
    eig, vec = torch.linalg.eigh(cov)
    eig = eig.clamp(min=0) + WHITEN_FLOOR * eig.clamp(min=0).mean()
    zca = vec @ torch.diag(eig.rsqrt()) @ vec.T  # symmetric: the whitened axes stay the embedding's own
    return {k: ((v.double() - mean[k.split("_")[0]]) @ zca).float() for k, v in embeddings.items()}


class RetrievalSource:
    """Training and evaluation batches of matching items (the trainer's source interface). Each split is scored by
    the cross-entropy and the top-1 accuracy of every item (:meth:`score`), from step 0 on (``eval_at_start``)."""

    eval_splits = ("train", "test")
    eval_at_start = True

    def __init__(
        self, embeddings: dict[str, torch.Tensor], n_ctx: int, data_cfg: RetrievalDataConfig, train_cfg, seed: int
    ):
        if data_cfg.whiten:
            embeddings = whitening(embeddings)
        self.sets = {
            s: MatchingSet(embeddings[f"query_{s}"], embeddings[f"target_{s}"], n_ctx) for s in ("train", "test")
        }
        self.cfg, self.train_cfg, self.seed = data_cfg, train_cfg, seed

    def train_batches(self, step: int) -> list[dict[str, torch.Tensor]]:
        B, accum = self.train_cfg.batch_size, self.train_cfg.grad_accum
        data = self.sets["train"]
        index = sample_indices(self.seed, len(data), step * B * accum, B * accum)
        g = torch.Generator().manual_seed(mix_seed(self.seed, step, 7))  # fresh negatives at every read
        return [data.items(index[m * B : (m + 1) * B], g) for m in range(accum)]

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
            x = data.targets[rows[i : i + B].clamp(min=0)]
            x[:, 0] = data.queries[index[i : i + B]]
            out.append({"x": x, "targets": labels[i : i + B]})
        return out

    def eval_inputs(self, split: str) -> torch.Tensor:
        """(n, n_ctx, d): every fixed evaluation item of ``split`` as the matcher reads it (whitened if the data are)."""
        return torch.cat([b["x"] for b in self._eval_items(split)])

    def eval_batches(self, split: str, step: int) -> Iterator[dict[str, torch.Tensor]]:
        yield from self._eval_items(split)

    @staticmethod
    def score(out, batch) -> dict[str, tuple[torch.Tensor, int]]:
        """An evaluation batch's summed cross-entropy and hits over its items (the trainer averages them by item)."""
        logits, y = out.logits.float(), batch["targets"]
        loss = torch.nn.functional.cross_entropy(logits, y, reduction="sum")
        return {"": (loss.double(), y.numel()), "_acc": ((logits.argmax(-1) == y).sum().double(), y.numel())}


def build_source(run_cfg, rank: int = 0, world: int = 1):
    raise ConfigError(
        f"{run_cfg.name}: a retrieval run reads embeddings made by another run ({run_cfg.data.embedder}), "
        "so its source is built by its procedure ('match'): train it through the plan, e.g. "
        f"`python -m lmcompanion train {run_cfg.name}`"
    )


__all__ = [
    "ABBREVIATIONS",
    "HEADING_WORDS",
    "MIN_SENTENCES",
    "MIN_WORDS",
    "MatchingSet",
    "NOISE",
    "Pair",
    "RetrievalDataConfig",
    "RetrievalSource",
    "WHITEN_FLOOR",
    "WIKI_FILES",
    "build_source",
    "extract_query",
    "extractive_pairs",
    "lead_pair",
    "lead_pairs",
    "noisy_copies",
    "wiki_files",
    "pairs",
    "parse_instruct",
    "sentences",
    "whitening",
    "wiki_sentences",
]
