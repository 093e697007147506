"""Helpers for the book's notebooks.

A chapter notebook starts with a ``parameters`` cell of literals (``profile``, ``device``, ``seed``,
``n_seeds``, ``max_steps``, ``overrides``) and turns them into validated settings with one call::

    S = nb.setup(profile=profile, device=device, seed=seed, n_seeds=n_seeds, max_steps=max_steps, overrides=overrides)
    runs = S.runs("ar_ed/baseline")          # one finished run per seed, trained or reused from the store

Everything a notebook shows comes from those runs (metrics, summaries, weights) through ``plots`` and ``tables``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Mapping, Sequence

from . import experiments, models, paths, plots, train
from .config import check_profile, flat_keys
from .data import corpora, load_tokens
from .data.lm import tokenizer
from .errors import ConfigError
from .run import RunConfig

# Seeds per arm unless the notebook's n_seeds parameter says otherwise; verdicts need at least two.
DEFAULT_SEEDS = {"smoke": 2, "cpu": 2, "gpu": 2, "paper": 2}

@dataclass(frozen=True)
class Settings:
    profile: str
    device: str
    seeds: tuple[int, ...]
    overrides: Mapping[str, object] = field(default_factory=dict)

    def config(self, name: str, seed: int | None = None) -> RunConfig:
        seed = self.seeds[0] if seed is None else seed
        return experiments.config(name, self.profile, seed=seed, device=self.device, overrides=self.overrides)

    def run(self, name: str, seed: int | None = None) -> train.Run:
        """The finished run of experiment ``name`` for one seed (trained now, or reused from the store)."""
        return train.run(self.config(name, seed))

    def runs(self, name: str) -> list[train.Run]:
        """One finished run per seed."""
        return [self.run(name, s) for s in self.seeds]

    def arms(self, names: Sequence[str], by: str = "title") -> dict[str, list[train.Run]]:
        """Each experiment's runs (one per seed), in the order given, keyed by the write-up's label (``by="title"``,
        for tables and figures) or by the experiment's name (``by="name"``, for the chapters' analyses)."""
        if by not in ("title", "name"):
            raise ConfigError(f"arms(by=...) takes 'title' or 'name', got {by!r}")
        return {experiments.get(name).title if by == "title" else name: self.runs(name) for name in names}

    def describe(self) -> str:
        seeds = ", ".join(map(str, self.seeds))
        extra = f"; overrides {dict(self.overrides)}" if self.overrides else ""
        return f"profile {self.profile!r} on {self.device}, seeds {seeds}{extra}"


def setup(profile: str = "cpu", device: str = "auto", seed: int = 0, n_seeds: int | None = None,
          max_steps: int | None = None, overrides: Mapping[str, object] | None = None) -> Settings:
    """Validate a notebook's parameters; set the book's plot and table style."""
    import pandas as pd

    check_profile(profile)
    n = DEFAULT_SEEDS[profile] if n_seeds is None else n_seeds
    if not isinstance(n, int) or n < 1:
        raise ConfigError(f"n_seeds must be a positive integer, got {n_seeds!r}")
    if not isinstance(seed, int) or seed < 0:
        raise ConfigError(f"seed must be a non-negative integer, got {seed!r}")
    merged = dict(overrides or {})
    if max_steps is not None:
        merged["train.max_steps"] = max_steps
    settings = Settings(profile, experiments.resolve_device(device, profile), tuple(range(seed, seed + n)), merged)
    plots.style()
    pd.set_option("display.precision", 4)
    pd.set_option("display.max_colwidth", 120)
    return settings


def published(names: Sequence[str]) -> dict[str, dict]:
    """The write-up's label -> its published numbers (train, val, aux, params), for tables.results."""
    return {experiments.get(n).title: dict(experiments.get(n).published) for n in names}


def config_diff(names: Sequence[str], profile: str):
    """Every setting in which ``profile`` differs from the paper profile: one row per (setting, paper value,
    profile value), with the experiments it applies to."""
    import pandas as pd

    rows: dict[tuple, list[str]] = {}
    for name in names:
        paper = experiments.config(name, "paper", device="cpu")
        here = experiments.config(name, profile, device="cpu")
        for key in flat_keys(paper):
            if key in ("name", "seed", "device"):
                continue
            a, b = _get(paper, key), _get(here, key)
            if a != b:
                rows.setdefault((key, repr(a), repr(b)), []).append(name)
    records = [{"setting": key, "paper": a, profile: b,
                "experiments": "all" if len(exps) == len(names) else ", ".join(n.split("/")[-1] for n in exps)}
               for (key, a, b), exps in rows.items()]
    if not records:
        return pd.DataFrame({"setting": [], "paper": [], profile: []}).set_index("setting")
    return pd.DataFrame(records).set_index("setting").sort_index(kind="stable")


def _get(cfg, dotted: str):
    for part in dotted.split("."):
        cfg = getattr(cfg, part)
    return cfg


def params_table(names: Sequence[str], profile: str):
    """Parameter counts as the write-ups count them: ours at the paper profile beside the published number,
    and ours at ``profile``."""
    import pandas as pd

    rows = []
    for name in names:
        exp = experiments.get(name)
        paper = experiments.config(name, "paper", device="cpu").model
        here = experiments.config(name, profile, device="cpu").model
        count = models.num_params(paper)
        published = exp.published.get("params")
        shape = ", ".join(f"{k}={getattr(paper, k)}" for k in ("n_embed", "n_head", "n_layer", "context_size", "dropout_rate")
                          if hasattr(paper, k))
        rows.append({
            "experiment": name,
            "write-up label": exp.title,
            "paper config": shape,
            "params (ours, paper)": f"{count:,}",
            "params (write-up)": f"{published:,}" if published else "not published",
            "match": ("yes" if published == count else "NO") if published else "",
            f"params (ours, {profile})": f"{models.num_params(here):,}",
        })
    return pd.DataFrame(rows).set_index("experiment")


def data_table(cfg: RunConfig):
    """The data a run trains on: one row per split with its corpus, text source, tokenizer and size."""
    import pandas as pd

    d = load_tokens(cfg.data)
    corpus = corpora.get(cfg.data.corpus)
    source = "GENERATED (not real text)" if corpus.generated else d.source.split(":")[0]
    return pd.DataFrame({
        "corpus": cfg.data.corpus,
        "text from": source,
        "split rule": cfg.data.split,
        "tokenizer": f"{d.tokenizer} ({d.vocab_size:,} tokens)",
        "characters": [f"{d.chars[s]:,}" for s in d.splits],
        "tokens": [f"{d.splits[s].size:,}" for s in d.splits],
    }, index=pd.Index(list(d.splits), name="split"))


def sample(run: train.Run, *, n_prompt: int = 16, max_new_tokens: int = 60, temperature: float = 0.8,
           seed: int = 0) -> tuple[str, str]:
    """(prompt, continuation): the first ``n_prompt`` tokens of the validation split, and what the run's model
    writes after them (decoded with the run's own tokenizer)."""
    import torch

    cfg = run.config
    tok = tokenizer(cfg.data)
    val = load_tokens(cfg.data).splits["val"]
    prompt = torch.tensor(val[:n_prompt].astype("int64"))[None]
    out = run.load_model().generate(prompt, max_new_tokens, temperature=temperature,
                                    generator=torch.Generator().manual_seed(seed))
    return tok.decode(prompt[0].tolist()), tok.decode(out[0, n_prompt:].tolist())


def tokens_of(cfg: RunConfig) -> int:
    """Training tokens of a run: steps x global batch x tokens per sequence (the model's context, or what the
    data config says a sequence holds)."""
    per_sequence = getattr(cfg.data, "tokens_per_sequence", None)
    per_sequence = per_sequence(cfg.model) if per_sequence else cfg.model.context_size
    return cfg.train.max_steps * cfg.train.global_batch * per_sequence


def cost_table(settings: Settings, names: Sequence[str], runs: Mapping[str, Sequence[train.Run]] | None = None):
    """What each experiment costs: measured training time at this profile, and for the paper profile the
    tokens and FLOPs of one run and its measured GPU time once such a run is in the store."""
    import pandas as pd

    store = train.RunStore()
    rows = []
    for name in names:
        paper = experiments.config(name, "paper", device="cpu")
        flops = models.build(paper.model, device="meta").flops_per_token() * tokens_of(paper)
        measured = [store.get(dataclasses.replace(paper, device="cuda", seed=s)) for s in settings.seeds]
        measured = [r.summary["train_time_s"] for r in measured if r is not None]
        here = (runs or {}).get(name) or []
        rows.append({
            "experiment": name,
            f"train time here ({settings.profile}, s/run)": (
                f"{sum(r.summary['train_time_s'] for r in here) / len(here):.0f}" if here else ""),
            "paper: tokens/run": f"{tokens_of(paper):,}",
            "paper: PFLOP/run": f"{flops / 1e15:,.0f}",
            "paper: GPU hours/run": f"{sum(measured) / len(measured) / 3600:.2f} (measured)" if measured
            else "not measured yet",
        })
    return pd.DataFrame(rows).set_index("experiment")


def chapter_notebooks(chapter: str) -> list[str]:
    """The notebook sources of a chapter, in reading order (their file names start with their position)."""
    root = paths.repo_root()
    folder = (root / "notebooks" / chapter) if root is not None else None
    if folder is None or not folder.is_dir():
        raise ConfigError(f"no notebooks for chapter {chapter!r} (they live in notebooks/<chapter>/ of a source checkout)")
    return [str(p.relative_to(root)) for p in sorted(folder.glob("*.py"))]


def rerun_commands(notebooks: Sequence[str], profile: str = "paper", device: str = "cuda") -> str:
    """The commands that re-execute a chapter's notebooks at another profile (shown in every chapter)."""
    lines = [f"python -m lmcompanion run-notebook {nb} --profile {profile} -p device {device}" for nb in notebooks]
    return "\n".join(lines)
