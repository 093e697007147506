"""The GPU campaign: what one GPU slot of about 25 minutes runs, in priority order, packed and rehearsed without a GPU
(``python -m lmcompanion campaign``; issue 27).

**Steps are data.** Each :class:`Step` has a name, a kind (``check``, ``bench`` or ``run``), an estimated time on one
H100 and a priority (its position in :func:`steps`):

1. ``check``: the CUDA path, recorded as a file (:func:`check`): bf16 autocast in the trainer's forward, fused AdamW,
   ``torch.compile`` losses against eager ones within a stated tolerance, which SDPA kernels run, and a one-process
   nccl run through torchrun. On a CPU (the rehearsal) the same checks with their CPU counterparts.
2. ``bench``: :func:`lmcompanion.bench.bench` on a GPT-2-small shape (:func:`gpt2_small`) and on one gpu model per
   model family of the chapters (:data:`BENCH`): tokens/s, MFU against the device's dense bf16 peak, peak memory.
3. ``run``: the runs that decide each chapter's headline claims, three seeds per arm (the seeds each arm is
   registered with, as :func:`lmcompanion.experiments.plan` gives them: four for the arms of a claim of equality; the
   same runs the notebooks read), in :data:`GROUPS` order: first
   one decisive comparison per chapter, cheapest first, then the rest of the chapters' headline arms.

The plan within ``--budget-min`` is the prefix of that order whose estimates fit; what does not fit is left for a
second slot, in order, with the claims it decides (:func:`print_plan`).

**Progress.** The check and bench results are JSON files under ``DIR/campaign/<profile>/``; every finished run is
written at once as a recorded run (:func:`lmcompanion.recorded.write`, ``DIR/<profile>/``). The same command run again
skips every step whose output is there (a run: recorded with the config the plan gives it today), so a cut-off campaign
loses at most the step in flight, and a run stopped by ``--max-minutes`` resumes from its checkpoint where the run
store survived. ``--archive FILE`` rewrites a ``.tar.gz`` of DIR after every step (the GPU machines return files,
not folders).

**The pack** (:func:`make_pack`): everything a GPU machine without network needs that is not in git: the wheels it
lacks, the corpus files the planned runs read (gzip-compressed, restored byte for byte, so the data fingerprints and
every run key are a CPU build's), their token caches (so the GPU runs read exactly the ids a CPU build reads, whatever
tokenizers version the GPU image has), and a manifest with every file's SHA-256 and size and the run keys computed
here. :func:`unpack` verifies all of it on arrival and stops on any difference.
"""

from __future__ import annotations

import dataclasses
import gzip
import hashlib
import importlib.metadata
import io
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
import traceback
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode

from . import data as data_mod
from . import claims, env, estimate, experiments, models, nb, paths, recorded, signals, untrusted
from .bench import bench
from .chapters import ar_ed as ar_ed_chapter  # noqa: F401  (each chapter registers its rows: lmcompanion.claims)
from .chapters import deepsight as deepsight_chapter  # noqa: F401
from .chapters import formal_ed as formal_ed_chapter  # noqa: F401
from .chapters import hourglass as hourglass_chapter  # noqa: F401
from .chapters import mixer as mixer_chapter
from .chapters import retrieval as retrieval_chapter  # noqa: F401
from .config import TrainConfig, check_profile
from .data import LMDataConfig, corpora, lm, stories
from .data.retrieval import RetrievalSource
from .errors import LMCError
from .experiments import PlannedRun, Procedure
from .models.baseline import BaselineConfig
from .run import RunConfig
from .train import RunStore, trainer

REPORTS = recorded.REPORTS  # DIR/campaign/<profile>/: the check, the bench and the progress of a campaign
PROGRESS_FORMAT = "lmcompanion-campaign/1"
PACK_FORMAT = "lmcompanion-campaign-pack/1"
PACK_LIMIT = 48 << 20  # bytes: what a GPU call carries beside the working tree (64 MiB in all)
DEFAULT_BUDGET_MIN = 25.0
MORE_TO_DO = 75  # exit status of a command stopped by --max-minutes with planned steps left: run it again

# --- estimates of the steps that are not runs (stated, not measured: no GPU has run them yet) -------------------
# The check: CUDA initialisation, the SDPA probes, the torchrun subprocess (Python and torch imports, nccl, a smoke
# run) about 60 s; each compile-vs-eager comparison (a smoke-sized model, 6 steps each way, Dynamo and Inductor on the
# GPU machine's 16 cores) about 30 s.
CHECK_BASE_S, CHECK_COMPILE_S = 60.0, 30.0
# A bench: building the model and its data (token caches from the pack) about 15 s; compiling a model of 12 to 52
# blocks about 45 s (Inductor's caches make the runs of the same shape that follow cheaper); the timed steps as the
# book's estimate gives them (lmcompanion.estimate).
BENCH_SETUP_S, BENCH_COMPILE_S = 15.0, 45.0
BENCH_STEPS, BENCH_WARMUP = 10, 3
# At the small profiles (the rehearsal) a bench only has to run its code path: 2 timed steps after 1 untimed.
REHEARSAL_BENCH_STEPS, REHEARSAL_BENCH_WARMUP = 2, 1
# compile against eager: steps each way, and the tolerance on each step's training loss (relative). Under bf16
# autocast a matrix product rounds to 8 bits of mantissa (2^-9 = 2e-3 relative per rounding) and Inductor fuses and
# reorders the arithmetic, so compiled and eager losses differ by about that much and drift a little over steps;
# 2e-2 allows for it, while the graph errors the check looks for (a wrong mask, a dropped term, a stale buffer) move
# the loss by far more. In fp32 (the CPU's default) only the order of the sums differs: 1e-4.
COMPILE_STEPS = 6
COMPILE_RTOL = {"bfloat16": 2e-2, "float16": 2e-2, "float32": 1e-4}


# --- what the slot runs -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Group:
    """The arms of one comparison (or set of comparisons) of a chapter, trained together, each arm with its seeds as
    registered (three at gpu; four for the arms of a claim of equality)."""

    chapter: str
    label: str
    names: tuple[str, ...]
    tier: int  # 1: the chapter's one decisive headline comparison; 2: the rest of its headline arms


_RETRIEVAL_REST = ("retrieval/flat_d1024_c128", "retrieval/llama_d1024_c128", "retrieval/flat_d512_c32",
                   "retrieval/llama_d512_c32", "retrieval/flat_d512_c128", "retrieval/llama_d512_c128")

# In priority order. Tier 1 first: one comparison that decides each chapter's headline claim, cheapest first (the
# estimated H100 minutes of three seeds, runs they read included, are in the comments: `campaign --plan` prints
# them), so that as many chapters as possible get a decided headline in one slot; then tier 2, cheapest first. The
# formal chapter's claims are decided at the cpu profile already (its verdicts do not hinge on scale), so its runs
# wait for tier 2.
def _headline(chapter: str) -> Group:
    """The chapter's headline comparison (declared once, in the experiment registry) as a tier-1 group."""
    h = experiments.headlines(chapter)[0]
    return Group(chapter, h.label, h.arms, 1)


GROUPS: tuple[Group, ...] = (
    _headline("mixer"),  # 1.5 min
    _headline("hourglass"),  # 3.2 min (four seeds per arm: a claim of equality)
    _headline("retrieval"),  # 4.8 min
    _headline("ar_ed"),  # 7.4 min
    _headline("deepsight"),  # 13.6 min
    Group("mixer", "flat against expanded mixers at d=256 and d=512", ("mixer/flat_d256", "mixer/expanded_d512"),
          2),  # 1.9 min
    Group("mixer", "the write-up's first comparison: the expanded mixer d=256 against Llama d=128",
          tuple(mixer_chapter.FIRST), 2),  # 3.7 min (four seeds per arm: a claim of equality)
    Group("deepsight", "no planning loss (against the MSE planning loss)", ("deepsight/no_loss",), 2),  # 7.0 min
    Group("ar_ed", "positional subtraction alone and no embedding loss", ("ar_ed/pos_sub", "ar_ed/no_loss"), 2),  # 7.5
    Group("formal_ed", "the ED-Transformer trained with AdamW and by the literal ED-Training",
          experiments.headline_arms("formal_ed"), 2),  # 7.8 min
    Group("retrieval", "matching at d=1024 with 127 candidates and at d=512", _RETRIEVAL_REST, 2),  # 12.5
)

# One gpu model per model family the chapters train with the shared trainer (the retrieval matcher reads another
# run's embeddings, so its bench would first train that run: its speed is in its recorded runs' summaries).
BENCH = ("ar_ed/baseline", "ar_ed/mse_pos_sub", "deepsight/mse_d11", "mixer/flat_d512", "mixer/llama_d512",
         "hourglass/attn_384_32_e6", "formal_ed/adamw")


def _arm_claims(chapter: str) -> list[tuple[str, tuple[str, ...]]]:
    """(claim, arms) of every verdict row of a chapter that its trained arms decide (:func:`lmcompanion.claims.arm_claims`,
    the one shape every chapter declares its rows in)."""
    return claims.arm_claims(chapter)


def group_claims() -> dict[Group, tuple[str, ...]]:
    """The claims each group completes: those whose arms are all trained once it and the groups before it are."""
    done: set[str] = set()
    listed: set[str] = set()
    out = {}
    for g in GROUPS:
        done |= set(g.names)
        found = [text for text, arms in _arm_claims(g.chapter) if set(arms) <= done and text not in listed]
        listed |= set(found)
        out[g] = tuple(found)
    return out


@dataclass
class Step:
    name: str  # "check", "bench/<what>", or the run's id (<name>[-<procedure>]-s<seed>@<config digest>)
    kind: str  # check | bench | run
    minutes: float  # estimated minutes on one H100
    priority: int  # 1-based position in the order
    run: PlannedRun | None = None  # the run trained (kind run) or benched (kind bench)
    group: Group | None = None  # kind run: the comparison it belongs to
    claims: tuple[str, ...] = ()  # claims whose runs are complete once this step is (the last run of a group)
    families: tuple[str, ...] = ()  # kind check: the model families whose compiled losses are compared with eager


class RandomTokens:
    """Uniform random token windows: the GPT-2-small bench's batches (a step's speed does not depend on the ids), a
    function of the step."""

    eval_splits = ("val",)

    def __init__(self, cfg: RunConfig):
        self.cfg, self.V, self.T = cfg, cfg.model.vocab_size, cfg.model.context_size

    def train_batches(self, step: int) -> list[dict[str, torch.Tensor]]:
        tc = self.cfg.train
        g = torch.Generator().manual_seed(1_000_003 * self.cfg.seed + step)
        x = torch.randint(0, self.V, (tc.grad_accum, tc.batch_size, self.T + 1), generator=g)
        return [{"idx": m[:, :-1], "targets": m[:, 1:].clone()} for m in x]

    def eval_batches(self, split: str, step: int):
        yield from self.train_batches(10**6 + step)[:1]


RANDOM_TOKENS = Procedure("random_tokens", source=RandomTokens,
                          description="the shared trainer on uniform random tokens (a benchmark's batches)")


def gpt2_small(profile: str, device: str = "auto") -> PlannedRun:
    """GPT-2 small as nanoGPT trains it: the book's decoder-only baseline (nanoGPT's GPT, no biases, no dropout) with
    12 blocks x 768, 12 heads, context 1,024 and the GPT-2 vocabulary padded to 50,304; micro-batches of 12 sequences
    (nanoGPT's), AdamW with its train.py settings (lr 6e-4, betas 0.9/0.95, weight decay 0.1, fused on CUDA),
    gradient clipping at 1.0, bf16 autocast and ``torch.compile``. At the small profiles a stand-in of the same code
    path (2 blocks x 64, context 64, vocabulary 512, not compiled), for the rehearsal."""
    device = experiments.resolve_device(device, profile)
    small = check_profile(profile) in ("smoke", "cpu")
    model = (BaselineConfig(vocab_size=512, context_size=64, n_embed=64, n_head=2, n_layer=2) if small else
             BaselineConfig(vocab_size=50_304, context_size=1024, n_embed=768, n_head=12, n_layer=12))
    train = TrainConfig(batch_size=4 if small else 12, grad_accum=1, max_steps=BENCH_STEPS + BENCH_WARMUP + 1,
                        lr=6e-4, min_lr=6e-5, warmup_steps=0, weight_decay=0.1, grad_clip=1.0,
                        compile=not small)
    cfg = RunConfig(name="bench/gpt2_small", model=model, data=LMDataConfig(corpus="synthetic", tokenizer="char"),
                    train=train, device=device)
    return PlannedRun(cfg, RANDOM_TOKENS, profile)


def _bench_counts(profile: str) -> tuple[int, int]:
    """(timed steps, untimed warm-up steps) of a bench at ``profile``."""
    small = check_profile(profile) in ("smoke", "cpu")
    return (REHEARSAL_BENCH_STEPS, REHEARSAL_BENCH_WARMUP) if small else (BENCH_STEPS, BENCH_WARMUP)


def _bench_minutes(cfg: RunConfig, profile: str) -> float:
    n = sum(_bench_counts(profile)) + 1
    timed = cfg.replace(train=cfg.train.replace(max_steps=n, eval_interval=n, eval_batches=1, warmup_steps=0,
                                                decay_steps=None))
    seconds = estimate.seconds(timed) - estimate.RUN_OVERHEAD_S + BENCH_SETUP_S
    return (seconds + (BENCH_COMPILE_S if cfg.train.compile else 0.0)) / 60


def steps(profile: str = "gpu", *, device: str = "auto", seeds: int | None = None) -> list[Step]:
    """Every step of the campaign at ``profile``, in priority order (see the module doc)."""
    check_profile(profile)
    runs: list[Step] = []
    seen: set[str] = set()
    claims = group_claims()
    for g in GROUPS:
        group_runs = [r for r in experiments.plan(list(g.names), profile, seeds=seeds, device=device)
                      if r.id not in seen]
        seen |= {r.id for r in group_runs}
        for r in group_runs:
            runs.append(Step(r.id, "run", r.minutes(), 0, r, g))
        if group_runs:
            runs[-1].claims = claims[g]
    compiled = tuple(dict.fromkeys(s.run.config.model.family for s in runs
                                   if s.run.config.train.compile))
    families = compiled or tuple(s.run.config.model.family for s in runs[:1])
    check = Step("check", "check", (CHECK_BASE_S + CHECK_COMPILE_S * len(families)) / 60, 0, families=families)
    benches = [gpt2_small(profile, device)] + [experiments.planned(n, profile, 0, device=device) for n in BENCH]
    bench_steps = [Step(f"bench/{r.name.removeprefix('bench/')}", "bench", _bench_minutes(r.config, profile), 0, r)
                   for r in benches]
    out = [check, *bench_steps, *runs]
    for i, s in enumerate(out):
        s.priority = i + 1
    return out


def within(all_steps: Sequence[Step], budget_min: float) -> tuple[list[Step], list[Step]]:
    """(the plan, what is left): the longest prefix whose estimated minutes fit ``budget_min``, and the rest."""
    total, n = 0.0, 0
    for s in all_steps:
        if total + s.minutes > budget_min + 1e-9:
            break
        total += s.minutes
        n += 1
    return list(all_steps[:n]), list(all_steps[n:])


def passes(cfg: RunConfig) -> float | None:
    """Passes over the training data a run makes (:func:`lmcompanion.nb.passes`), where its text is here (a local
    copy or the generated corpus); None where it would have to be downloaded."""
    if any(not corpora.source_of(c).startswith(("local:", "generated")) for c in _corpora(cfg)):
        return None
    return nb.passes(cfg)


def _corpora(cfg: RunConfig) -> list[str]:
    """The corpora a run's data reads (a retrieval run: its own, whose fingerprint is in its key, and its embedder's
    stories); none for data made in memory."""
    d = cfg.data
    found = [d.corpus] if hasattr(d, "corpus") else []
    if hasattr(d, "embedder"):
        found.append(experiments.get(d.embedder).build(d.embedder_profile).data.corpus)
    return list(dict.fromkeys(found))


def print_plan(all_steps: Sequence[Step], budget_min: float, profile: str, out=print, with_passes: bool = True) -> None:
    """Every step with its estimated H100 minutes (and a run's passes over its data), a ``total`` line, and what is
    left for a second slot, in order, with the claims it decides."""
    plan, left = within(all_steps, budget_min)

    def line(s: Step, cum: float) -> str:
        p = passes(s.run.config) if with_passes and s.kind == "run" else None
        extra = f"  {p:8.1f}" if p is not None else ""
        return f"{s.priority:>3}  {s.kind:<5}  {s.name:<58}  {s.minutes:6.2f} min  {cum:6.1f}{extra}"

    def show(steps) -> float:
        """Print the steps with their running total and the claims each decides; return the total."""
        cum = 0.0
        for s in steps:
            cum += s.minutes
            out(line(s, cum))
            for c in s.claims:
                out(f"{'':>16}decides: [{s.group.chapter}] {c}")
        return cum

    out(f"campaign at the {profile} profile, budget {budget_min:g} min (minutes estimated on one H100: "
        "lmcompanion.estimate for runs, stated allowances for the check and the benches)")
    out(f"{'#':>3}  {'kind':<5}  {'step':<58}  {'estimate':>10}  {'cum.':>6}  {'passes':>8}")
    cum = show(plan)
    kinds = {k: sum(1 for s in plan if s.kind == k) for k in ("check", "bench", "run")}
    out(f"total {cum:.1f} min (estimated on one H100; {kinds['check']} check, {kinds['bench']} benches, "
        f"{kinds['run']} runs), budget {budget_min:g} min")
    if not left:
        out("left for a second slot: nothing")
    else:
        out(f"left for a second slot, in this order ({sum(s.minutes for s in left):.1f} min, {len(left)} steps):")
        show(left)
    if with_passes:
        rows = passes_table(all_steps)
        if rows:
            out("passes over the training data, per experiment (here: the offline copies; the write-up's, estimated "
                "from its text's size):")
            width = max(len(r["experiment"]) for r in rows)
            for r in rows:
                out(f"  {r['experiment']:<{width}}  {r['tokens/run']:>13,} tokens/run  {r['passes']:>6.1f} passes"
                    f"  (write-up: {r['write-up']})")


def passes_table(all_steps: Sequence[Step]) -> list[dict]:
    """Per experiment of the campaign's runs (first seed): training tokens per run, passes over its training data here
    (:func:`passes`; left out where the data is not here) and the write-up's own passes (its data's
    ``write_up_passes``, from the paper profile's config)."""
    rows, seen = [], set()
    for s in all_steps:
        if s.kind != "run" or s.run.name in seen:
            continue
        seen.add(s.run.name)
        p = passes(s.run.config)
        if p is None:
            continue
        try:
            paper = experiments.config(s.run.name, "paper", device="cpu")
            write_up = nb.write_up_passes(paper)
        except LMCError:
            write_up = "not known here"
        rows.append({"experiment": s.run.name, "tokens/run": s.run.config.tokens(), "passes": p, "write-up": write_up})
    return rows


# --- outputs, progress and resumption ---------------------------------------------------------------------------


def reports_dir(out: Path, profile: str) -> Path:
    return Path(out) / REPORTS / profile


def _read_json(path: Path, fmt: untrusted.Format | None = None) -> dict | None:
    """A JSON object, or None when the file is not there; with ``fmt`` (a file that may have come back from another
    machine) it is read through :mod:`lmcompanion.untrusted`, and one that fails its format stops with a message."""
    if fmt is not None:
        return untrusted.read_json(path, fmt) if Path(path).exists() else None
    try:
        value = json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def _write_json(path: Path, obj) -> None:
    try:
        paths.atomic_write(path, json.dumps(obj, indent=1, sort_keys=True, default=str) + "\n")
    except OSError as exc:
        raise LMCError(f"cannot write {path} ({exc.strerror}): free disk space or choose another folder (-o)") from None


def _without_device(cfg: RunConfig) -> dict:
    d = cfg.to_dict()
    d.pop("device")
    return d


def recorded_path(out: Path, run: PlannedRun) -> Path:
    cfg = run.config
    return Path(out) / run.profile / recorded.file_name({"experiment": cfg.name, "seed": cfg.seed})


def is_recorded(out: Path, run: PlannedRun) -> bool:
    """Whether ``run`` is recorded in ``out`` with the config the plan gives it today (the device aside)."""
    path = recorded_path(out, run)
    if not path.is_file():
        return False
    try:
        record, cfg, _ = recorded.read(path)  # through lmcompanion.untrusted, bounded and validated
    except LMCError:
        return False
    return record.get("profile") == run.profile and _without_device(cfg) == _without_device(run.config)


class Progress:
    """``DIR/campaign/<profile>/progress.json``: per step its status, the wall time of every attempt and its error;
    the minutes spent so far, over every command of the campaign."""

    def __init__(self, out: Path, profile: str, device: str):
        self.path = reports_dir(out, profile) / "progress.json"
        old = _read_json(self.path, untrusted.CAMPAIGN_PROGRESS) or {}
        self.data = {"format": PROGRESS_FORMAT, "profile": profile, "steps": old.get("steps", {}),
                     "commands": old.get("commands", [])}
        self.device = device

    def step(self, name: str) -> dict:
        return self.data["steps"].setdefault(name, {"status": "pending", "wall_s": 0.0, "attempts": 0})

    @property
    def spent_min(self) -> float:
        return sum(s.get("wall_s", 0.0) for s in self.data["steps"].values()) / 60

    def ratio(self, steps_by_name: dict[str, Step]) -> float:
        """Measured over estimated time of the runs finished so far (at least 1: the plan never grows from it)."""
        done = [(v["wall_s"], steps_by_name[n].minutes * 60) for n, v in self.data["steps"].items()
                if v.get("status") == "done" and n in steps_by_name and steps_by_name[n].kind == "run"]
        measured, est = sum(m for m, _ in done), sum(e for _, e in done)
        return max(1.0, measured / est) if est > 0 else 1.0

    def save(self) -> None:
        _write_json(self.path, self.data)


def _archive(out: Path, archive: Path | None) -> None:
    """A .tar.gz of the output folder (its own name at the top), replaced whole."""
    if archive is None:
        return
    archive = Path(archive)
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        tar.add(str(out), arcname=Path(out).resolve().name)
    try:
        paths.atomic_write(archive, buf.getvalue())
    except OSError as exc:
        raise LMCError(f"cannot write the archive {archive} ({exc.strerror})") from None


# --- the check --------------------------------------------------------------------------------------------------


def _error(exc: BaseException) -> dict:
    return {"ok": False, "error": f"{type(exc).__name__}: {exc}".strip()[:2000],
            "traceback": "".join(traceback.format_exception(exc))[-4000:]}


def _dtype_name(dtype) -> str | None:
    return None if dtype is None else str(dtype).replace("torch.", "")


def environment(device: str) -> dict:
    """Versions and the device, for the check's record."""
    info = {k: v for k, v in env.environment(device).items() if k not in ("time",)}
    try:
        info["triton"] = importlib.metadata.version("triton")
    except importlib.metadata.PackageNotFoundError:
        info["triton"] = None
    if device == "cuda":
        p = torch.cuda.get_device_properties(0)
        peak = estimate.peak_flops(torch.cuda.get_device_name(0))
        info.update(capability=[p.major, p.minor], multiprocessors=p.multi_processor_count,
                    gpu_memory_gib=round(p.total_memory / 2**30, 1), cudnn=torch.backends.cudnn.version(),
                    nccl=_nccl_version(), bf16_supported=torch.cuda.is_bf16_supported(),
                    dense_bf16_peak_tflops=peak / 1e12 if peak else None)
    return info


def _nccl_version() -> str:
    v = torch.cuda.nccl.version()
    return ".".join(map(str, v)) if isinstance(v, tuple) else str(v)


def _check_source(cfg: RunConfig):
    """The batch source of a check's few steps: the trainer's own (None), except for a retrieval matcher, whose
    source is made by its procedure from another run's embeddings, which no run of the slot has made when the check
    runs first: random embeddings of the matcher's width stand in (the check tests the model's graph, dtypes and
    optimizer, not what it learns)."""
    if getattr(cfg.data, "kind", None) != "retrieval":
        return None
    g = torch.Generator().manual_seed(cfg.seed)
    n, d = 4 * max(cfg.model.context_size, cfg.train.batch_size), cfg.model.n_embed
    emb = {f"{kind}_{split}": torch.randn(n, d, generator=g) for kind in ("query", "target")
           for split in ("train", "test")}
    return RetrievalSource(emb, cfg.model.context_size, cfg.data, cfg.train, cfg.seed)


def _without_dropout(cfg: RunConfig) -> RunConfig:
    """``cfg`` with every dropout rate of its model at 0: eager and compiled code draw different dropout masks, so
    their losses agree only without dropout."""
    model = cfg.model
    zero = {f.name: 0.0 for f in dataclasses.fields(model)
            if "dropout" in f.name and isinstance(getattr(model, f.name), float) and getattr(model, f.name) > 0}
    return cfg.replace(model=dataclasses.replace(model, **zero)) if zero else cfg


def _first_batch(s: trainer.Session) -> dict:
    return {k: v.to(s.device) for k, v in s.source.train_batches(0)[0].items()}


def _probe_autocast(cfg: RunConfig) -> dict:
    """One forward under the trainer's own set-up and autocast: the dtype of every Linear output, of the logits and of
    the loss, and the optimizer the trainer made."""
    with trainer.memory_guard(cfg, "the autocast probe"):
        s = trainer.setup(cfg, source=_check_source(cfg))
    seen: set[str] = set()
    hooks = [m.register_forward_hook(lambda _m, _i, o: seen.add(_dtype_name(o.dtype)))
             for m in s.model.modules() if isinstance(m, torch.nn.Linear)]
    try:
        with torch.no_grad(), s.autocast():  # the plain module: a compiled one would compile again, for nothing
            out = s.model(**_first_batch(s))
    finally:
        for h in hooks:
            h.remove()
    expected = _dtype_name(trainer.autocast_dtype(cfg.train, cfg.device))
    return {"experiment": cfg.name, "train.dtype": cfg.train.dtype, "autocast": expected,
            "linear_outputs": sorted(seen), "logits": _dtype_name(out.logits.dtype),
            "loss": _dtype_name(out.loss.dtype) if out.loss is not None else None,
            "fused_adamw": bool(s.optimizer.defaults.get("fused")),
            "tf32_matmul": torch.backends.cuda.matmul.allow_tf32 if cfg.device == "cuda" else None,
            "ok": seen == {expected or "float32"}}


def check_autocast(run_cfgs: Sequence[RunConfig], device: str) -> dict:
    """bf16 autocast and fused AdamW as the trainer sets them up, one planned experiment per model family (the runs of
    the shared trainer on their own data); on a CPU, where the trainer runs fp32, a forced bf16 probe as well."""
    by_family: dict[str, RunConfig] = {}
    for cfg in run_cfgs:
        by_family.setdefault(cfg.model.family, cfg)
    probes = {}
    for family, cfg in by_family.items():
        try:
            probes[family] = _probe_autocast(cfg)
        except Exception as exc:  # noqa: BLE001  (recorded with its message)
            probes[family] = {"experiment": cfg.name, **_error(exc)}
    fused = {f: p["fused_adamw"] for f, p in probes.items() if "fused_adamw" in p}
    out = {"families": probes,
           "autocast_by_experiment": {c.name: _dtype_name(trainer.autocast_dtype(c.train, device)) for c in run_cfgs},
           "fused_adamw_in_use": fused, "fused_adamw_expected": device == "cuda",  # the trainer fuses on CUDA only
           "fused_adamw_as_expected": bool(fused) and all(v == (device == "cuda") for v in fused.values())}
    if device == "cpu":  # the trainer's CPU default is fp32: rehearse the bf16 path too
        first = next(iter(by_family.values()))
        try:
            out["forced_bf16_on_cpu"] = _probe_autocast(first.replace(train=first.train.replace(dtype="bf16")))
        except Exception as exc:  # noqa: BLE001
            out["forced_bf16_on_cpu"] = _error(exc)
    out["ok"] = all(p.get("ok") for p in probes.values()) and out["fused_adamw_as_expected"] and \
        out.get("forced_bf16_on_cpu", {"ok": True}).get("ok", False)
    return out


def _losses(cfg: RunConfig, n: int) -> tuple[list[float], list[float]]:
    """The objective of ``n`` training steps of ``cfg`` from its initial weights, and each step's seconds."""
    s = trainer.setup(cfg, source=_check_source(cfg))
    losses, seconds = [], []
    for step in range(n):
        t0 = time.perf_counter()
        logged, _, _ = trainer.forward_backward(s, s.source.train_batches(step))
        trainer.update(s, cfg.train.lr)
        if cfg.device == "cuda":
            torch.cuda.synchronize()
        seconds.append(time.perf_counter() - t0)
        losses.append(logged[0])
    return losses, seconds


def compile_against_eager(cfg: RunConfig, n: int = COMPILE_STEPS) -> dict:
    """The same initial weights and batches, ``n`` steps eager and ``n`` steps under ``torch.compile``, dropout off
    (:func:`_without_dropout`): each step's loss compared within :data:`COMPILE_RTOL` of the autocast dtype."""
    cfg = _without_dropout(cfg.replace(train=cfg.train.replace(deterministic=False, compile=False)))
    eager, t_eager = _losses(cfg, n)
    compiled, t_compiled = _losses(cfg.replace(train=cfg.train.replace(compile=True)), n)
    dtype = _dtype_name(trainer.autocast_dtype(cfg.train, cfg.device)) or "float32"
    rtol = COMPILE_RTOL[dtype]
    rel = [abs(c - e) / max(abs(e), 1e-12) for c, e in zip(compiled, eager)]
    return {"experiment": cfg.name, "dtype": dtype, "steps": n, "eager": eager, "compiled": compiled,
            "max_relative_difference": max(rel), "rtol": rtol, "ok": max(rel) <= rtol,
            "first_compiled_step_s": round(t_compiled[0], 2), "compiled_s_per_step": round(
                sum(t_compiled[1:]) / max(1, n - 1), 4), "eager_s_per_step": round(sum(t_eager[1:]) / max(1, n - 1), 4)}


def check_compile(families: Sequence[str], run_cfgs: Sequence[RunConfig], profile: str, device: str) -> dict:
    """Compiled against eager losses for each family (a smoke-sized model of the family's first planned experiment,
    with that experiment's autocast dtype at ``profile``: the graph and its dtypes, seconds to compile)."""
    out = {}
    for family in families:
        cfg = next(c for c in run_cfgs if c.model.family == family)
        small = experiments.config(cfg.name, "smoke", device=device)
        small = small.replace(train=small.train.replace(dtype=cfg.train.dtype))
        try:
            out[family] = compile_against_eager(small)
        except Exception as exc:  # noqa: BLE001
            out[family] = {"experiment": cfg.name, **_error(exc)}
    return {"families": out, "ok": bool(out) and all(v.get("ok") for v in out.values())}


class _SDPACalls(TorchFunctionMode):
    """Records the arguments of every ``F.scaled_dot_product_attention`` call."""

    def __init__(self):
        super().__init__()
        self.calls: list[dict] = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func is torch.nn.functional.scaled_dot_product_attention:
            q, k = args[0], args[1]
            mask = kwargs.get("attn_mask", args[3] if len(args) > 3 else None)
            self.calls.append({"q": list(q.shape[1:]), "k": list(k.shape[1:]),
                               "mask": None if mask is None else {"shape": list(mask.shape),
                                                                  "dtype": _dtype_name(mask.dtype)},
                               "is_causal": bool(kwargs.get("is_causal", False))})
        return func(*args, **kwargs)


def sdpa_signatures(run_cfgs: Sequence[RunConfig]) -> list[dict]:
    """The distinct attention calls of the planned models (head size, lengths, mask), found by running each model once
    on the meta device; each with the experiments that make it and the micro-batch they run it at."""
    found: dict[str, dict] = {}
    for cfg in {c.model: c for c in run_cfgs}.values():
        model = models.build(cfg.model, device="meta")
        rec = _SDPACalls()
        batch = model.example_batch(1, device="meta")
        with rec, torch.no_grad():
            model.eval()
            model(**batch)
        for call in rec.calls:
            sig = {"q": call["q"], "k": call["k"], "head_size": call["q"][-1], "mask": call["mask"],
                   "is_causal": call["is_causal"]}
            key = json.dumps(sig, sort_keys=True)
            entry = found.setdefault(key, {**sig, "experiments": [], "batch": cfg.train.batch_size})
            if cfg.name not in entry["experiments"]:
                entry["experiments"].append(cfg.name)
    return list(found.values())


class _ATenOps(TorchDispatchMode):
    """The names of the aten operators dispatched (the SDPA backend the dispatcher chose is one of them)."""

    def __init__(self):
        super().__init__()
        self.names: set[str] = set()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.names.add(func.overloadpacket.__name__)
        return func(*args, **(kwargs or {}))


_SDPA_OPS = {"_scaled_dot_product_flash_attention_for_cpu": "flash (CPU)",
             "_scaled_dot_product_flash_attention": "flash", "_scaled_dot_product_efficient_attention": "efficient",
             "_scaled_dot_product_cudnn_attention": "cudnn", "_scaled_dot_product_attention_math": "math",
             "_scaled_dot_product_fused_attention_overrideable": "overrideable"}


def _sdpa_inputs(sig: dict, device: str, dtype: torch.dtype, batch: int):
    g = torch.Generator(device=device).manual_seed(0)
    q = torch.randn((batch, *sig["q"]), generator=g, device=device, dtype=dtype, requires_grad=True)
    k = torch.randn((batch, *sig["k"]), generator=g, device=device, dtype=dtype, requires_grad=True)
    v = torch.randn((batch, *sig["k"]), generator=g, device=device, dtype=dtype, requires_grad=True)
    mask = None
    if sig["mask"] is not None:  # a mask of the call's kind (its pattern does not decide the kernel)
        lq, lk = sig["q"][-2], sig["k"][-2]
        allowed = torch.ones(lq, lk, dtype=torch.bool, device=device).tril(lk - lq)
        mask = allowed if sig["mask"]["dtype"] == "bool" else \
            torch.zeros(lq, lk, device=device, dtype=dtype).masked_fill(~allowed, float("-inf"))
    return q, k, v, mask


def _sdpa_once(sig, device, dtype, batch):
    q, k, v, mask = _sdpa_inputs(sig, device, dtype, batch)
    y = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=sig["is_causal"])
    y.float().sum().backward()
    if device == "cuda":
        torch.cuda.synchronize()


def check_sdpa(run_cfgs: Sequence[RunConfig], device: str) -> dict:
    """For every distinct attention call of the planned models: which SDPA backends run it (forward and backward, each
    forced alone with ``sdpa_kernel``, with the reason of those that refuse), and which kernel the default dispatch
    runs (torch.profiler: the aten op, and on CUDA the kernels' names)."""
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from torch.profiler import ProfilerActivity, profile

    backends = [b for b in ("FLASH_ATTENTION", "EFFICIENT_ATTENTION", "CUDNN_ATTENTION", "MATH")
                if hasattr(SDPBackend, b)]
    dtypes = {_dtype_name(trainer.autocast_dtype(c.train, device)) or "float32" for c in run_cfgs}
    sigs = sdpa_signatures(run_cfgs)
    results = []
    for sig in sigs:
        for dtype_name in sorted(dtypes):
            dtype = getattr(torch, dtype_name)
            batch = min(sig["batch"], 64)
            row = {**sig, "dtype": dtype_name, "batch": batch, "backends": {}}
            for name in backends:
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always")
                    try:
                        with sdpa_kernel([getattr(SDPBackend, name)]):
                            _sdpa_once(sig, device, dtype, batch)
                        row["backends"][name] = "ok"
                    except Exception as exc:  # noqa: BLE001  (a backend that refuses the call: recorded with why)
                        reasons = "; ".join(str(w.message).split("\n")[0] for w in caught)[:600]
                        row["backends"][name] = f"refused: {str(exc).splitlines()[0][:200]}" + (
                            f" ({reasons})" if reasons else "")
            try:
                ops = _ATenOps()
                with ops:
                    _sdpa_once(sig, device, dtype, batch)
                row["default"] = sorted({v for k, v in _SDPA_OPS.items() if k in ops.names}) or ["(none found)"]
                if device == "cuda":  # the kernels the default dispatch launches, by name
                    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
                        _sdpa_once(sig, device, dtype, batch)
                    kernels = sorted({e.name for e in prof.events()
                                      if getattr(e, "device_type", None) == torch.autograd.DeviceType.CUDA
                                      and any(w in e.name.lower() for w in ("flash", "fmha", "attention", "cudnn",
                                                                            "attn", "softmax", "gemm"))})
                    row["default_kernels"] = [k[:160] for k in kernels[:12]]
                row["ok"] = True
            except Exception as exc:  # noqa: BLE001
                row.update(_error(exc))
            results.append(row)
    return {"calls": results, "ok": bool(results) and all(r.get("ok") for r in results)}


def check_ddp(device: str, name: str, timeout: float = 300.0) -> dict:
    """``torchrun --standalone --nproc_per_node 1``: nccl (gloo on a CPU) initialised, an all-reduce, a DDP-wrapped
    step of ``name``'s smoke model, then its smoke run through the trainer as ``train`` runs it under torchrun. One
    process is plain training for the trainer (``train.distributed`` initialises no process group for a world of 1),
    so the backend is exercised by the probe itself."""
    with tempfile.TemporaryDirectory(prefix=f"lmc-ddp-{os.getpid()}-") as tmp:
        result_path = Path(tmp) / "probe.json"
        cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "1",
               "-m", "lmcompanion.campaign", "ddp-probe", "--device", device, "--name", name, "--out", str(result_path)]
        envs = {**os.environ, "LMC_RUNS_DIR": str(Path(tmp) / "runs"), "LMC_PROGRESS": "0"}
        t0 = time.monotonic()
        proc = signals.run_group(cmd, timeout=timeout, env=envs)  # torchrun and its workers stop with us
        out = {"command": " ".join(cmd[:-2]),
               "returncode": proc.returncode, "seconds": round(time.monotonic() - t0, 1)}
        probe = _read_json(result_path)
        if probe is not None:
            out.update(probe)
        if proc.returncode != 0 or probe is None:
            out["output_tail"] = (proc.stdout + proc.stderr)[-3000:]
        out["ok"] = proc.returncode == 0 and bool(probe) and bool(probe.get("ok"))
    return out


def ddp_probe(device: str, name: str, out: Path) -> None:
    """Run under torchrun by :func:`check_ddp` (``python -m lmcompanion.campaign ddp-probe``)."""
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP

    backend = "nccl" if device == "cuda" else "gloo"
    local = int(os.environ.get("LOCAL_RANK", "0"))
    result = {"backend": backend, "world_size": int(os.environ.get("WORLD_SIZE", "0")), "ok": False}
    try:
        if device == "cuda":
            torch.cuda.set_device(local)
        dev = torch.device(f"cuda:{local}" if device == "cuda" else "cpu")
        dist.init_process_group(backend=backend)
        result["initialised_backend"] = str(dist.get_backend())
        t = torch.ones(1, device=dev)
        dist.all_reduce(t)
        result["all_reduce"] = t.item()
        if backend == "nccl":
            result["nccl"] = _nccl_version()
        cfg = experiments.config(name, "smoke", device=device)
        model = models.build(cfg.model).to(dev)
        ddp = DDP(model, device_ids=[local] if device == "cuda" else None)
        batch = {k: v.to(dev) for k, v in data_mod.build_source(cfg).train_batches(0)[0].items()}
        loss = ddp(**batch).loss
        loss.backward()
        result["ddp_step_loss"] = loss.item()
        dist.barrier()
        dist.destroy_process_group()
        run = experiments.planned(name, "smoke", 0, device=device).train(RunStore(), progress=False)
        result["train"] = {"experiment": name, "profile": "smoke", "final": run.summary["final"],
                           "train_time_s": run.summary["train_time_s"]}
        result["ok"] = result["all_reduce"] == result["world_size"]
    except Exception as exc:  # noqa: BLE001
        result.update(_error(exc))
    paths.atomic_write(out, json.dumps(result, indent=1, default=str))


def check(step: Step, all_steps: Sequence[Step], profile: str, device: str, log: Callable = print) -> dict:
    """Every item of the CUDA-path check (see the module doc); an item that fails is recorded with its message and
    the others still run."""
    run_cfgs = [s.run.config for s in all_steps if s.kind == "run" and s.run.procedure.fn is None
                and s.run.procedure.source is None]
    first = next(s.run for s in all_steps if s.kind == "run")
    try:
        about = environment(device)
    except Exception as exc:  # noqa: BLE001
        about = _error(exc)
    report = {"format": "lmcompanion-campaign-check/1", "profile": profile, "device": device, "environment": about,
              "tolerances": {"compile_rtol": COMPILE_RTOL, "compile_steps": COMPILE_STEPS}, "items": {}}
    items = {
        "autocast_and_fused_adamw": lambda: check_autocast(run_cfgs, device),
        "compile_against_eager": lambda: check_compile(step.families, run_cfgs, profile, device),
        "sdpa": lambda: check_sdpa(run_cfgs, device),
        "torchrun_" + ("nccl" if device == "cuda" else "gloo"): lambda: check_ddp(device, first.name),
    }
    for key, fn in items.items():
        t0 = time.monotonic()
        try:
            with signals.unswallowed():  # a signal a library turned into its own error still stops the campaign
                result = fn()
        except Exception as exc:  # noqa: BLE001  (a check never fails the campaign silently: it is recorded)
            result = _error(exc)
        result["seconds"] = round(time.monotonic() - t0, 1)
        report["items"][key] = result
        log(f"    check {key}: {'ok' if result.get('ok') else 'FAILED'} ({result['seconds']:.0f} s)"
            + (f": {result['error']}" if "error" in result else ""))
    report["ok"] = all(v.get("ok") for v in report["items"].values())
    report["complete"] = True
    return report


# --- the benches ------------------------------------------------------------------------------------------------


def bench_step(step: Step) -> dict:
    n, warmup = _bench_counts(step.run.profile)
    result = bench(step.run, steps=n, warmup=warmup)
    m = step.run.config.model
    result["shape"] = {k: v for k, v in dataclasses.asdict(m).items()
                       if k in ("n_layer", "n_embed", "n_head", "context_size", "vocab_size")}
    result["config_hash"] = step.run.config.hash()
    result["batch"] = {"micro_batch": step.run.config.train.batch_size, "grad_accum": step.run.config.train.grad_accum}
    result["ok"] = True
    return result


# --- the campaign -----------------------------------------------------------------------------------------------


def _done(step: Step, out: Path, profile: str, device: str) -> bool:
    """Whether a step's output is in ``out`` (a run: recorded with its config; the check and a bench: their report,
    made on this kind of device)."""
    if step.kind == "run":
        return is_recorded(out, step.run)
    rdir = reports_dir(out, profile)
    if step.kind == "check":
        report = _read_json(rdir / "check.json", untrusted.CAMPAIGN_CHECK)
        return bool(report and report.get("complete") and report.get("device") == device)
    report = _read_json(rdir / "bench.json", untrusted.CAMPAIGN_BENCH) or {}
    entry = (report.get("results") or {}).get(step.name) or {}
    return report.get("device") == device and entry.get("config_hash") == step.run.config.hash()


class _Deadline:
    """At ``seconds`` from now, SIGTERM to this process: a training run finishes its step and checkpoints (the
    trainer's handler), anything else stops at once (this handler). Remembers that it fired."""

    def __init__(self, seconds: float | None):
        self.fired = False
        self.timer = None
        self.old = None
        if seconds is None:
            return
        if threading.current_thread() is threading.main_thread():
            self.old = signal.signal(signal.SIGTERM, self._handler)
        self.timer = threading.Timer(max(0.0, seconds), self._fire)
        self.timer.daemon = True
        self.timer.start()

    def _fire(self):
        self.fired = True
        os.kill(os.getpid(), signal.SIGTERM)

    _handler = staticmethod(signals.handler)  # the package's one signal policy (lmcompanion.signals)

    def close(self):
        if self.timer is not None:
            self.timer.cancel()
        if self.old is not None:
            signal.signal(signal.SIGTERM, self.old)


def run(profile: str = "gpu", *, device: str = "auto", out: Path | None = None, budget_min: float = DEFAULT_BUDGET_MIN,
        max_minutes: float | None = None, seeds: int | None = None, archive: Path | None = None,
        retry_failed: bool = False, progress: bool | None = None, pack: dict | None = None,
        log: Callable = print) -> int:
    """Run the campaign's plan (see the module doc). Returns 0 when nothing planned is left to do (some steps may
    have failed: each is recorded and listed), :data:`MORE_TO_DO` when ``max_minutes`` stopped it with planned steps
    left (run the same command again). ``pack``: the manifest of the pack the data came from (its commit is recorded
    in the progress: a GPU machine's copy of the tree may have no git history)."""
    started = time.monotonic()
    for name, value in (("budget_min", budget_min), ("max_minutes", max_minutes)):
        if value is not None and not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
            raise LMCError(f"{name} must be a finite number of minutes > 0, got {value!r}")
    device = experiments.resolve_device(device, profile)
    out = Path(out) if out is not None else recorded.default_dir()
    all_steps = steps(profile, device=device, seeds=seeds)
    plan, left = within(all_steps, budget_min)
    by_name = {s.name: s for s in all_steps}
    state = Progress(out, profile, device)
    for name, fmt in (("check.json", untrusted.CAMPAIGN_CHECK), ("bench.json", untrusted.CAMPAIGN_BENCH)):
        _read_json(reports_dir(out, profile) / name, fmt)  # every report read back passes before anything is written
    state.data["commands"].append({"started": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "device": device,
                                   "budget_min": budget_min, "max_minutes": max_minutes, **env.git_state(),
                                   "pack": {k: (pack or {}).get(k) for k in ("commit", "dirty", "made", "bytes")}
                                   if pack else None})
    rdir = reports_dir(out, profile)
    log(f"campaign at the {profile} profile on {device}: {len(plan)} steps planned within {budget_min:g} min "
        f"({sum(s.minutes for s in plan):.1f} min estimated), {len(left)} left for a second slot; output in {out}")
    stopped, status, deadline = None, 0, None
    try:
        deadline = _Deadline(max_minutes * 60 - (time.monotonic() - started) if max_minutes is not None else None)
        for step in plan:
            entry = state.step(step.name)
            if _done(step, out, profile, device):
                if entry["status"] != "done":
                    entry["status"] = "done"
                log(f"[{step.priority}/{len(plan)}] {step.name}: done earlier, skipped")
                continue
            if entry["status"] == "failed" and not retry_failed:
                log(f"[{step.priority}/{len(plan)}] {step.name}: failed earlier ({entry.get('error', '')[:200]}); "
                    "skipped (--retry-failed to try it again)")
                continue
            need = step.minutes * state.ratio(by_name)
            if state.spent_min + need > budget_min + 1e-9:
                stopped = (f"the budget of {budget_min:g} min: {state.spent_min:.1f} min spent, the next step needs "
                           f"about {need:.1f}")
                break
            elapsed = (time.monotonic() - started) / 60
            if max_minutes is not None and elapsed + need > max_minutes and elapsed > 0.5:
                stopped, status = (f"--max-minutes {max_minutes:g}: {elapsed:.1f} min used by this command, the next "
                                   f"step needs about {need:.1f}"), MORE_TO_DO
                break
            log(f"[{step.priority}/{len(plan)}] {step.kind} {step.name} (estimated {step.minutes:.2f} min)")
            entry["attempts"] += 1
            t0 = time.monotonic()
            try:
                with signals.unswallowed():
                    _execute(step, all_steps, out, rdir, profile, device, progress, log)
                entry.update(status="done", error=None)
            except KeyboardInterrupt:  # Ctrl-C, SIGTERM, or the deadline: a run has kept its checkpoint
                entry["status"] = "interrupted"
                entry["wall_s"] = round(entry["wall_s"] + time.monotonic() - t0, 1)
                log(f"    interrupted during {step.name}")
                raise
            except Exception as exc:  # noqa: BLE001  (recorded; the campaign goes on with the next step)
                entry.update(status="failed", error=f"{type(exc).__name__}: {exc}"[:2000],
                             traceback="".join(traceback.format_exception(exc))[-4000:])
                log(f"    FAILED: {entry['error']}")
            entry["wall_s"] = round(entry["wall_s"] + time.monotonic() - t0, 1)
            entry["estimate_min"] = round(step.minutes, 3)
            state.save()
            _archive(out, archive)
            log(f"    {entry['status']} in {time.monotonic() - t0:.0f} s; {state.spent_min:.1f} of {budget_min:g} min "
                "spent")
    except KeyboardInterrupt:
        if deadline is None or not deadline.fired:
            raise
        log(f"stopped by --max-minutes {max_minutes:g} (a run keeps its checkpoint); run the same command again to "
            "continue")
        return MORE_TO_DO
    finally:
        if deadline is not None:
            deadline.close()
        state.data["commands"][-1]["ended"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
        with signals.deferred():  # a second signal does not split the last report and its archive
            state.save()
            _archive(out, archive)
    summary(all_steps, plan, state, out, profile, device, stopped, log)
    return status


def _execute(step: Step, all_steps, out: Path, rdir: Path, profile: str, device: str, progress, log) -> None:
    if step.kind == "check":
        report = check(step, all_steps, profile, device, log)
        _write_json(rdir / "check.json", report)
        if not report["ok"]:
            log(f"    the check FAILED in part: see {rdir / 'check.json'} (the campaign goes on)")
    elif step.kind == "bench":
        path = rdir / "bench.json"
        report = _read_json(path, untrusted.CAMPAIGN_BENCH) or {}
        if report.get("device") != device:
            report = {}
        report.update(format="lmcompanion-campaign-bench/1", profile=profile, device=device)
        result = bench_step(step)
        report.setdefault("results", {})[step.name] = result
        _write_json(path, report)
        log("    " + ", ".join(f"{k} {result[k]}" for k in ("tokens/s", "s/step", "MFU", "peak memory (GiB)")
                               if k in result))
    else:
        done = step.run.train(RunStore(), progress=progress)
        for path in recorded.write([done], out):
            log(f"    recorded {path}")


def summary(all_steps, plan, state: Progress, out: Path, profile: str, device: str, stopped: str | None,
            log: Callable = print) -> None:
    """What the campaign did, what failed, what it leaves (in order) and the claims of the groups it completed."""
    status = {s.name: ("done" if _done(s, out, profile, device) else state.step(s.name)["status"]) for s in all_steps}
    done = [s for s in plan if status[s.name] == "done"]
    failed = [s for s in plan if status[s.name] == "failed"]
    rest = [s for s in all_steps if status[s.name] not in ("done", "failed")]
    if stopped:
        log(f"stopped by {stopped}")
    log(f"campaign: {len(done)} of {len(plan)} planned steps done, {len(failed)} failed; "
        f"{state.spent_min:.1f} min spent over {len(state.data['commands'])} command(s)")
    for s in failed:
        log(f"  FAILED {s.name}: {state.step(s.name).get('error', '')[:300]}")
    complete = [s for s in all_steps if s.kind == "run" and s.claims and all(
        status[r.name] == "done" for r in all_steps if r.kind == "run" and r.group is s.group)]
    decided = [(s.group.chapter, c) for s in complete for c in s.claims]
    for chapter, c in decided:
        log(f"  runs complete for [{chapter}] {c}")
    if rest:
        log(f"left (for the next command or a second slot), in order: {len(rest)} steps, "
            f"{sum(s.minutes for s in rest):.1f} min estimated")
        groups = list(dict.fromkeys(s.group for s in rest if s.group is not None))
        for g in groups:
            log(f"  [{g.chapter}] {g.label}")
    else:
        log("campaign complete")


# --- the pack ---------------------------------------------------------------------------------------------------


def default_data_dir() -> None:
    """``LMC_DATA_DIR=../shared/data`` when it is unset and that folder exists (the Makefile's rule), so that planning
    the gpu profile (whose retrieval runs count their pairs in the stories) reads the offline corpora, never the hub."""
    root = paths.repo_root()
    shared = root.parent / "shared" / "data" if root is not None else None
    if "LMC_DATA_DIR" not in os.environ and shared is not None and (shared / "SHA256SUMS").is_file():
        os.environ["LMC_DATA_DIR"] = str(shared)


def _sha256(path: Path) -> str:
    return paths.file_sha256(Path(path))


def default_wheels() -> Path:
    root = paths.repo_root() or Path.cwd()
    return root.parent / "shared" / "wheels" / "py312-x86_64"


def _sums(folder: Path) -> dict[str, str]:
    """A SHA256SUMS file's digests by relative path (``sha256sum`` format), read through :mod:`lmcompanion.untrusted`."""
    path = Path(folder) / "SHA256SUMS"
    return untrusted.sha256sums(path) if path.is_file() else {}


def _run_configs(all_steps: Sequence[Step]) -> list[RunConfig]:
    cfgs = []
    for s in all_steps:
        if s.run is not None and s.run.procedure is not RANDOM_TOKENS:
            cfgs += [n.config for n in s.run.needs] + [s.run.config]
    return cfgs


def _cache_files(cfg: RunConfig) -> list[Path]:
    """The token-cache files a run's data reads, built here first (the data modules' own cache locations)."""
    dcfg = cfg.data
    if isinstance(dcfg, LMDataConfig):
        lm.load_tokens(dcfg)
        folder = lm._text_dir(dcfg)
    elif isinstance(dcfg, stories.StoriesDataConfig):
        stories.load_tokens(dcfg)
        folder = stories._text_dir(dcfg)
    else:
        return []  # generated in memory (seq2seq), or made from another run (retrieval embeddings)
    vocab = folder / "vocab" / f"{dcfg.tokenizer_name}.json"  # a vocabulary trained on the text (BPE, char)
    return sorted(p for p in (folder / dcfg.tokenizer_name).rglob("*") if p.is_file()) + \
        ([vocab] if vocab.is_file() else [])


def _corpus_files(cfgs: Sequence[RunConfig]) -> list[str]:
    """The files under LMC_DATA_DIR the runs read (their corpora's; the GPT-2 ranks where a run tokenizes with it)."""
    names, gpt2 = set(), False
    for cfg in cfgs:
        for corpus in _corpora(cfg):
            if not corpora.get(corpus).generated:
                names |= set(corpora.get(corpus).files.values())
        gpt2 = gpt2 or getattr(cfg.data, "tokenizer", None) == "gpt2"
    return sorted(names) + (["tiktoken/gpt2.tiktoken"] if gpt2 else [])


def make_pack(pack: Path, profile: str = "gpu", *, budget_min: float = DEFAULT_BUDGET_MIN,
              wheels: Path | None = None, seeds: int | None = None, log: Callable = print) -> dict:
    """Write the pack (see the module doc) for every step of the campaign at ``profile`` (the plan and what it
    leaves for a second slot: one pack serves both slots). Returns its manifest."""
    wheels = Path(wheels) if wheels is not None else default_wheels()
    whl = sorted(wheels.glob("*.whl"))
    if not whl:
        raise LMCError(f"no wheels in {wheels}: give --wheels DIR (the folder of ../shared/wheels for Python 3.12)")
    pack = Path(pack)
    if pack.exists() and any(pack.iterdir()):
        if (_read_json(pack / "manifest.json") or {}).get("format") != PACK_FORMAT:
            raise LMCError(f"{pack} exists and is not a campaign pack: choose an empty or new folder")
        shutil.rmtree(pack)  # an older pack: made again whole
    pack.mkdir(parents=True, exist_ok=True)
    all_steps = steps(profile, device="cpu", seeds=seeds)
    cfgs = _run_configs(all_steps)
    files: dict[str, dict] = {}

    def add(rel: str, blob: bytes, **extra) -> None:
        path = pack / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(blob)
        files[rel] = {"sha256": hashlib.sha256(blob).hexdigest(), "bytes": len(blob), **extra}

    # the wheels, each checked against its folder's SHA256SUMS
    sums = _sums(wheels.parent)
    for w in whl:
        blob = w.read_bytes()
        want = sums.get(f"{wheels.name}/{w.name}") or sums.get(w.name)
        if want is not None and hashlib.sha256(blob).hexdigest() != want:
            raise LMCError(f"{w} does not match its SHA256SUMS: restore it before packing")
        add(f"wheels/{w.name}", blob, kind="wheel")
    log(f"pack: {len(whl)} wheels from {wheels}")
    # the corpus files, gzip-compressed (restored byte for byte: the data fingerprints, and so every key, are kept)
    data_root, corpus_files = paths.data_dir(), _corpus_files(cfgs)
    if corpus_files and (data_root is None or not data_root.is_dir()):
        raise LMCError("the pack is made from the offline corpora: set LMC_DATA_DIR (e.g. ../shared/data)")
    data_sums = _sums(data_root) if data_root is not None else {}
    for rel in corpus_files:
        raw = (data_root / rel).read_bytes()
        digest = hashlib.sha256(raw).hexdigest()
        if rel in data_sums and data_sums[rel] != digest:
            raise LMCError(f"{data_root / rel} does not match {data_root / 'SHA256SUMS'}: restore it before packing")
        add(f"data/{rel}.gz", gzip.compress(raw, 9, mtime=0), kind="data", unpacks_to=rel, unpacked_sha256=digest,
            unpacked_bytes=len(raw))
    log(f"pack: corpus files {', '.join(f[5:-3] for f in files if f.startswith('data/'))}")
    # the token caches of the runs
    cache_root = paths.cache_dir()
    seen: set = set()
    for cfg in cfgs:
        if cfg.data in seen:
            continue
        seen.add(cfg.data)
        for f in _cache_files(cfg):
            add(f"cache/{f.relative_to(cache_root).as_posix()}", f.read_bytes(), kind="cache")
    log(f"pack: {sum(1 for v in files.values() if v['kind'] == 'cache')} token-cache files")
    keys = {}
    for s in all_steps:
        if s.kind == "run":
            keys[s.run.id] = s.run.key()
    total = sum(v["bytes"] for v in files.values())
    manifest = {"format": PACK_FORMAT, "profile": profile, "budget_min": budget_min, "seeds": seeds,
                "made": time.strftime("%Y-%m-%dT%H:%M:%S%z"), **env.git_state(), "torch": torch.__version__,
                "files": files, "bytes": total, "run_keys": keys,
                "run_keys_note": "keys of the runs at device cpu, computed from the corpus files here; unpack() "
                                 "computes them again from the pack and stops on any difference"}
    mtext = json.dumps(manifest, indent=1, sort_keys=True) + "\n"
    (pack / "manifest.json").write_text(mtext)
    lines = [f"{v['sha256']}  {rel}" for rel, v in sorted(files.items())]
    lines.append(f"{hashlib.sha256(mtext.encode()).hexdigest()}  manifest.json")
    (pack / "SHA256SUMS").write_text("\n".join(lines) + "\n")
    size = sum(p.stat().st_size for p in pack.rglob("*") if p.is_file())
    log(f"pack: {len(files) + 2} files, {size / 2**20:.1f} MiB in {pack} (limit {PACK_LIMIT / 2**20:.0f} MiB)")
    if size > PACK_LIMIT:
        biggest = sorted(files.items(), key=lambda kv: -kv[1]["bytes"])[:5]
        raise LMCError(f"the pack is {size / 2**20:.1f} MiB, over {PACK_LIMIT / 2**20:.0f} MiB; its largest files: "
                       + ", ".join(f"{k} ({v['bytes'] / 2**20:.1f} MiB)" for k, v in biggest))
    return manifest


def verify_pack(pack: Path) -> dict:
    """The pack's manifest, after checking every file it lists (present, its size, its SHA-256): a damaged pack stops
    here with a message naming the file."""
    pack = Path(pack)
    if not (pack / "manifest.json").is_file():
        manifest = None
    else:  # made elsewhere: bounded, strict JSON, its schema; every name it gives stays inside its folder
        manifest = untrusted.read_json(pack / "manifest.json", untrusted.PACK_MANIFEST)
    if manifest is None or manifest.get("format") != PACK_FORMAT:
        raise LMCError(f"{pack} is not a campaign pack (no readable manifest.json of format {PACK_FORMAT}): make it "
                       "with `python -m lmcompanion campaign --pack DIR` on a machine with the offline corpora")
    _pack_targets(pack, manifest, paths.cache_dir())
    bad = []
    for rel, meta in sorted(manifest["files"].items()):
        path = pack / rel
        if not path.is_file():
            bad.append(f"{rel} is missing")
        elif path.stat().st_size != meta["bytes"]:
            bad.append(f"{rel} has {path.stat().st_size:,} bytes, not {meta['bytes']:,}")
        elif _sha256(path) != meta["sha256"]:
            bad.append(f"{rel} does not match its SHA-256")
    if bad:
        raise LMCError(f"the pack {pack} is damaged: " + "; ".join(bad[:10]) + (f" (and {len(bad) - 10} more)"
                       if len(bad) > 10 else "") + ". Make it again (`python -m lmcompanion campaign --pack DIR`) "
                       "and carry it again; nothing was run")
    return manifest


def unpack(pack: Path, log: Callable = print) -> dict:
    """Verify the pack (:func:`verify_pack`), restore its corpus files under ``$LMC_CACHE_DIR/pack-data`` (each checked
    against the digest of the original) and its token caches into ``$LMC_CACHE_DIR``, then point ``LMC_DATA_DIR`` at
    the restored files and turn the hub off (``HF_HUB_OFFLINE``, ``HF_DATASETS_OFFLINE``). Returns the manifest."""
    manifest = verify_pack(pack)
    pack, cache = Path(pack), paths.cache_dir()
    data_root = cache / "pack-data"
    targets = _pack_targets(pack, manifest, cache)
    blobs = {}
    for rel, meta in sorted(manifest["files"].items()):  # every file read and checked before any is written
        target = targets.get(rel)
        if target is None:
            continue
        want = (meta["unpacked_bytes"], meta["unpacked_sha256"]) if meta["kind"] == "data" else (meta["bytes"],
                                                                                                  meta["sha256"])
        if target.is_file() and target.stat().st_size == want[0] and _sha256(target) == want[1]:
            continue
        blob = (pack / rel).read_bytes()
        if meta["kind"] == "data":
            blob = untrusted.inflate(blob, meta["unpacked_bytes"], pack / rel, untrusted.PACK_MANIFEST)
        elif rel.endswith(".json"):  # a token cache's description: strict JSON, as the data modules expect
            untrusted.parse_json(blob, pack / rel, untrusted.PACK_MANIFEST)
        if hashlib.sha256(blob).hexdigest() != want[1]:
            raise LMCError(f"{pack / rel} does not unpack to the file it was made from; make the pack again")
        blobs[target] = blob
    for target, blob in blobs.items():
        paths.atomic_write(target, blob)
    os.environ["LMC_DATA_DIR"] = str(data_root)
    os.environ["HF_HUB_OFFLINE"] = os.environ["HF_DATASETS_OFFLINE"] = "1"
    log(f"pack {pack}: {len(manifest['files'])} files verified; corpora restored in {data_root}, token caches in "
        f"{cache} (made at commit {str(manifest.get('commit'))[:12]}{' with changes' if manifest.get('dirty') else ''})")
    return manifest


def _pack_targets(pack: Path, manifest: dict, cache: Path) -> dict[str, Path]:
    """Where each file of a pack's manifest goes (a wheel: nowhere, it is installed from the pack), each name checked:
    a file of the pack inside the pack under the folder of its kind, a corpus file inside ``<cache>/pack-data``, a
    token cache inside ``cache``; any other name stops the pack before anything is written."""
    out = {}
    fmt, where = untrusted.PACK_MANIFEST, pack / "manifest.json"
    prefix = {"wheel": "wheels/", "data": "data/", "cache": "cache/"}
    for rel, meta in manifest["files"].items():
        untrusted.confined(pack, rel, where, fmt, what="the file")
        if not rel.startswith(prefix[meta["kind"]]) or rel == prefix[meta["kind"]]:
            raise fmt.error(where, f"{rel[:120]!r} is a {meta['kind']} file outside {prefix[meta['kind']]}")
        if meta["kind"] == "data":
            out[rel] = untrusted.confined(cache / "pack-data", meta["unpacks_to"], where, fmt, what="unpacks_to")
        elif meta["kind"] == "cache":
            out[rel] = untrusted.confined(cache, rel.removeprefix("cache/"), where, fmt, what="the cache file")
    return out


def check_keys(manifest: dict, profile: str, seeds: int | None = None) -> int:
    """Compute the run keys of the campaign's runs here (device cpu, as the pack did) and compare them with the
    pack's: a difference (other data, or code other than the pack's commit) stops with a message. Returns how many
    keys were compared."""
    want = manifest.get("run_keys") or {}
    diffs, n = [], 0
    for s in steps(profile, device="cpu", seeds=seeds):
        if s.kind == "run" and s.run.id in want:
            n += 1
            key = s.run.key()
            if key != want[s.run.id]:
                diffs.append(f"{s.run.id}: {key} here, {want[s.run.id]} in the pack")
    if diffs:
        raise LMCError("the run keys computed from the pack differ from those computed where it was made ("
                       + "; ".join(diffs[:5]) + "): the code or the data differ from the pack's; make the pack again "
                       "from this working tree")
    return n


# --- one training step of every model family under bf16 autocast and torch.compile on the CPU ------------------

# One experiment per model family, and per variant of a family whose code paths differ (Llama, GPT, the hybrids;
# attention and repeat upsampling; the matcher as a mixer and as a transformer). tests/gpu_rehearsal.py
# (`make gpu-rehearsal`) runs one step of each under bf16 autocast, eagerly and compiled, on the CPU.
FAMILY_CASES = ("ar_ed/baseline", "ar_ed/mse_pos_sub", "deepsight/mse_d11", "formal_ed/adamw", "mixer/flat_d512",
                "mixer/llama_d512", "mixer/gpt", "mixer/hybrid_sequential", "mixer/hybrid_parallel",
                "hourglass/attn_384_32_e6", "hourglass/repeat_512_32_e6", "hourglass/vanilla",
                "retrieval/autoencoder_d512", "retrieval/flat_d1024_c32", "retrieval/transformer_matcher_llama_d1024_c32")


def one_step(name: str, *, compile: bool, dtype: str = "bf16", profile: str = "smoke") -> dict:
    """One training step of experiment ``name`` (its smoke model and batches) on the CPU under ``dtype`` autocast,
    eager or compiled: the loss, the dtypes the Linear layers produced, and the seconds it took."""
    run = experiments.planned(name, profile, 0, device="cpu")
    cfg = run.config.replace(train=run.config.train.replace(dtype=dtype, compile=compile, deterministic=False))
    for need in run.needs:
        need.train(progress=False)
    source = run.procedure.source(cfg) if run.procedure.source is not None else None
    s = trainer.setup(cfg, source=source)
    seen: set[str] = set()
    hooks = [m.register_forward_hook(lambda _m, _i, o: seen.add(_dtype_name(o.dtype)))
             for m in s.model.modules() if isinstance(m, torch.nn.Linear)]
    t0 = time.perf_counter()
    try:
        logged, _, _ = trainer.forward_backward(s, s.source.train_batches(0))
        trainer.update(s, cfg.train.lr)
    finally:
        for h in hooks:
            h.remove()
    return {"experiment": name, "family": cfg.model.family, "compile": compile, "dtype": dtype, "loss": logged[0],
            "linear_outputs": sorted(seen), "seconds": round(time.perf_counter() - t0, 2),
            "finite": all(math.isfinite(v) for v in logged)}


# --- torchrun's entry point for the probe ----------------------------------------------------------------------


def _main(argv: Sequence[str]) -> int:
    import argparse

    p = argparse.ArgumentParser(prog="python -m lmcompanion.campaign")
    p.add_argument("what", choices=["ddp-probe"])
    p.add_argument("--device", required=True)
    p.add_argument("--name", required=True)
    p.add_argument("--out", required=True)
    args = p.parse_args(argv)
    ddp_probe(args.device, args.name, Path(args.out))
    return 0


__all__ = ["BENCH", "CHECK_BASE_S", "COMPILE_RTOL", "DEFAULT_BUDGET_MIN", "FAMILY_CASES", "GROUPS", "Group",
           "MORE_TO_DO", "PACK_LIMIT", "Progress", "RandomTokens", "Step", "check", "check_keys", "default_data_dir",
           "default_wheels", "gpt2_small", "group_claims", "is_recorded", "make_pack", "one_step", "passes",
           "passes_table", "print_plan", "run", "steps", "summary", "unpack", "verify_pack", "within"]

if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
