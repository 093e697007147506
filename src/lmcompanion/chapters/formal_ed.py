"""The formal encoder–decoder chapter's measurements: what its notebooks compute and show.

The runs themselves are configured in ``lmcompanion.experiments.formal_ed`` (profiles, the registered AdamW run,
ED-Training's settings); the model and the write-up's three algorithms are in ``lmcompanion.models.formal_ed``.
This module holds the chapter's analyses: the parameter inventory θ, the agreement with the literal transcription
(which lives in ``tests/formal_ed_literal.py``), the mask checks, ED-Training kept in the run store, exact match,
the temperature sweep, the cross-attention maps, and the verdict rows built from them.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import math
import re
import time
from pathlib import Path
from typing import Callable, Mapping, Sequence

import torch

from .. import models, paths
from ..config import RunConfig, require
from ..data import build_source
from ..data.seq2seq import BOS, EOS, PAD, VOCAB, Seq2SeqDataConfig, answer, collate, dataset, decode
from ..errors import ConfigError
from ..experiments.formal_ed import INF, NAME, NOTEBOOKS, PROTOCOLS, LiteralConfig, Protocol, literal_config, protocol
from ..models.formal_ed import FormalED, FormalEDConfig, ed_inference, ed_training, entropy, sample_tau, tempered
from ..train import Run, RunStore, checkpoint
from ..train.distributed import Dist
from ..train.seeding import seed_everything
from ..train.trainer import evaluate
from ..verdicts import FAILS, HOLDS, INCONCLUSIVE, Verdict, compare, span


def hyperparameters(model: FormalEDConfig, profile: str):
    """The write-up's hyperparameters: the run's values at ``profile`` and those of the paper profile."""
    import pandas as pd

    rows = [("ℓ_max", "l_max", "maximum sequence length"), ("L_enc", "L_enc", "encoder layers"),
            ("L_dec", "L_dec", "decoder layers"), ("H", "H", "attention heads"), ("d_e", "d_e", "embedding size"),
            ("d_mlp", "d_mlp", "MLP hidden size"), ("|V|", "vocab_size", "vocabulary size"),
            ("d_attn = d_mid", "d_attn", "per-head size, d_e / H (not fixed by the write-up)")]
    paper = protocol("paper").model
    return pd.DataFrame([{"symbol": s, "config field": f"model.{f}" if f != "d_attn" else "(derived)",
                          "meaning": m, f"this run ({profile})": getattr(model, f), "paper profile": getattr(paper, f)}
                         for s, f, m in rows]).set_index("symbol")


def literal_transcription():
    """The slow, literal transcription of ED-Transformer, which lives in the repository's tests
    (``tests/formal_ed_literal.py``), imported from the source checkout."""
    import importlib.util

    root = paths.repo_root()
    path = root / "tests" / "formal_ed_literal.py" if root is not None else None
    if path is None or not path.is_file():
        raise ConfigError("the literal transcription lives in tests/formal_ed_literal.py of a source checkout; "
                          "install the package from a clone (pip install -e .) to run this check")
    spec = importlib.util.spec_from_file_location("formal_ed_literal", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# --------------------------------------------------------------------------------------------------
# θ: the write-up's parameter list against the model's parameters


def _mha_count(c: FormalEDConfig) -> int:
    d = c.d_attn
    return c.H * (3 * d * c.d_e + 3 * d) + c.d_e * c.H * d + c.d_e


def parameter_inventory(model: FormalED):
    """One row per item of the write-up's θ: its shape and size by the write-up's formulas, and the model's
    parameters that hold it (found by name) with their size. Every parameter must belong to exactly one item."""
    import pandas as pd

    c = model.config
    mlp = 2 * c.d_mlp * c.d_e + c.d_mlp + c.d_e
    items = [
        ("W_e", "", f"d_e×|V| = {c.d_e}×{c.vocab_size}", c.d_e * c.vocab_size, r"W_e\.weight"),
        ("W_p", "", f"d_e×ℓ_max = {c.d_e}×{c.l_max}", c.d_e * c.l_max, r"W_p\.weight"),
        ("𝒲^l_enc: W_q^h,b_q^h,W_k^h,b_k^h,W_v^h,b_v^h (h∈[H]), W_o,b_o", "l ∈ [L_enc]",
         f"H·(3·d_attn·d_e + 3·d_attn) + d_e·H·d_attn + d_e = {_mha_count(c)}", c.L_enc * _mha_count(c),
         r"encoder\.\d+\.mha\."),
        ("γ^l_r, β^l_r", "l ∈ [L_enc], r ∈ {1,2}", f"d_e = {c.d_e} each", c.L_enc * 4 * c.d_e,
         r"encoder\.\d+\.ln[12]\."),
        ("W^l_1, b^l_1, W^l_2, b^l_2", "l ∈ [L_enc]", f"d_mlp×d_e, d_mlp, d_e×d_mlp, d_e = {mlp}",
         c.L_enc * mlp, r"encoder\.\d+\.W[12]\."),
        ("𝒲^l_dec (self-attention)", "l ∈ [L_dec]", f"as 𝒲_enc: {_mha_count(c)}", c.L_dec * _mha_count(c),
         r"decoder\.\d+\.mha_self\."),
        ("𝒲^l_cross (cross-attention)", "l ∈ [L_dec]", f"as 𝒲_enc: {_mha_count(c)}", c.L_dec * _mha_count(c),
         r"decoder\.\d+\.mha_cross\."),
        ("γ^l_r, β^l_r", "l ∈ [L_dec], r ∈ {3,4,5}", f"d_e = {c.d_e} each", c.L_dec * 6 * c.d_e,
         r"decoder\.\d+\.ln[345]\."),
        ("W^l_3, b^l_3, W^l_4, b^l_4", "l ∈ [L_dec]", f"d_mlp×d_e, d_mlp, d_e×d_mlp, d_e = {mlp}",
         c.L_dec * mlp, r"decoder\.\d+\.W[34]\."),
        ("W_u (not tied to W_e)", "", f"|V|×d_e = {c.vocab_size}×{c.d_e}", c.vocab_size * c.d_e, r"W_u\.weight"),
    ]
    named = dict(model.named_parameters())
    owner: dict[str, int] = {}
    rows = []
    for k, (symbol, index, shape, expected, pattern) in enumerate(items):
        mine = [n for n in named if re.match(pattern, n)]
        for n in mine:
            if n in owner:
                raise AssertionError(f"parameter {n} matches two items of θ")
            owner[n] = k
        example = mine[0] if mine else "(none)"
        rows.append({"θ (write-up)": symbol, "for": index, "size by the write-up": shape,
                     "scalars (write-up)": f"{expected:,}", "our parameters": f"{len(mine)} tensors, e.g. {example} "
                     f"{tuple(named[example].shape) if mine else ''}",
                     "scalars (ours)": f"{sum(named[n].numel() for n in mine):,}",
                     "match": "yes" if expected == sum(named[n].numel() for n in mine) else "NO"})
    stray = sorted(set(named) - set(owner))
    if stray:
        raise AssertionError(f"parameters outside the write-up's θ: {stray}")
    total_w = sum(it[3] for it in items)
    rows.append({"θ (write-up)": "total", "for": "", "size by the write-up": "", "scalars (write-up)": f"{total_w:,}",
                 "our parameters": f"{len(named)} tensors", "scalars (ours)": f"{model.num_params():,}",
                 "match": "yes" if total_w == model.num_params() else "NO"})
    return pd.DataFrame(rows).set_index("θ (write-up)")


# --------------------------------------------------------------------------------------------------
# The literal transcription against the batched model


def randomize(model: FormalED, generator: torch.Generator) -> FormalED:
    """Random weights far from the initialisation (so biases, γ and β all matter): N(0, 1/fan_in) matrices,
    N(0, 1) embeddings, N(0, 0.25) biases and β, γ = 1 + N(0, 0.25)."""
    with torch.no_grad():
        for name, p in model.named_parameters():
            r = torch.randn(p.shape, generator=generator, dtype=torch.float64).to(p.dtype)
            if name.startswith(("W_e", "W_p")):
                p.copy_(r)
            elif p.dim() == 2:
                p.copy_(r / math.sqrt(p.shape[1]))
            elif re.search(r"\.ln\d\.weight$", name):
                p.copy_(1 + 0.5 * r)
            else:
                p.copy_(0.5 * r)
    return model


def agreement(literal: Callable, config: FormalEDConfig, *, seed: int = 0, cases: int = 3):
    """max |P_literal − P_batched| on random weights: ``literal(z, x, theta, eps)`` is the slow transcription
    (it lives in the tests). Cases: the config's model on the longest, the shortest and random lengths (float64
    and float32), a padded batch against each example alone, and two other shapes of the same algorithm."""
    import pandas as pd

    g = torch.Generator().manual_seed(seed)
    V, lm = config.vocab_size, config.l_max

    def toks(n):
        return torch.randint(0, V, (n,), generator=g)

    def one(cfg, dtype, pairs, label):
        model = randomize(FormalED(cfg), g).to(dtype).eval()
        theta = model.theta()
        worst = 0.0
        with torch.no_grad():
            for z, x in pairs:
                P_lit = literal(z.tolist(), x.tolist(), theta, cfg.ln_eps)
                P_ours = torch.softmax(model(z[None], x[None]).logits[0].double(), -1).T
                worst = max(worst, (P_lit.double() - P_ours).abs().max().item())
        tol = 1e-10 if dtype == torch.float64 else 1e-5
        return {"case": label, "dtype": str(dtype).replace("torch.", ""), "pairs (z, x)": len(pairs),
                "max |P_literal − P_ours|": f"{worst:.1e}", "tolerance": f"{tol:.0e}",
                "agree": "yes" if worst <= tol else "NO", "_worst": worst, "_tol": tol}

    rnd = [(toks(int(torch.randint(1, lm + 1, (1,), generator=g))), toks(int(torch.randint(1, lm + 1, (1,), generator=g))))
           for _ in range(cases)]
    rows = [
        one(config, torch.float64, [(toks(lm), toks(lm))], f"this profile's model, ℓ_z = ℓ_x = ℓ_max = {lm}"),
        one(config, torch.float64, [(toks(1), toks(1))], "this profile's model, ℓ_z = ℓ_x = 1"),
        one(config, torch.float64, rnd, "this profile's model, random lengths"),
        one(config, torch.float32, rnd, "this profile's model, random lengths"),
        one(dataclasses.replace(config, H=1, L_enc=1, L_dec=3), torch.float64, rnd, "H = 1, L_enc = 1, L_dec = 3"),
        one(dataclasses.replace(config, L_enc=3, L_dec=1, d_mlp=7), torch.float64, rnd, "L_enc = 3, L_dec = 1, d_mlp = 7"),
    ]
    # a right-padded batch (z_valid hides z's padding) against each example run alone
    model = randomize(FormalED(config), g).double().eval()
    lengths = [(int(torch.randint(1, lm + 1, (1,), generator=g)), int(torch.randint(1, lm + 1, (1,), generator=g)))
               for _ in range(4)]
    z = torch.stack([torch.cat([toks(a), torch.zeros(lm - a, dtype=torch.long)]) for a, _ in lengths])
    x = torch.stack([torch.cat([toks(b), torch.zeros(lm - b, dtype=torch.long)]) for _, b in lengths])
    valid = torch.arange(lm)[None, :] < torch.tensor([a for a, _ in lengths])[:, None]
    with torch.no_grad():
        P = torch.softmax(model(z, x, z_valid=valid).logits, -1)
        theta = model.theta()
        worst = max((literal(z[i, :a].tolist(), x[i, :b].tolist(), theta, config.ln_eps) - P[i, :b].T).abs().max().item()
                    for i, (a, b) in enumerate(lengths))
    rows.append({"case": "padded batch of 4 vs each example alone", "dtype": "float64", "pairs (z, x)": 4,
                 "max |P_literal − P_ours|": f"{worst:.1e}", "tolerance": "1e-10",
                 "agree": "yes" if worst <= 1e-10 else "NO", "_worst": worst, "_tol": 1e-10})
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------------------------------
# Which inputs each output depends on


@torch.no_grad()
def dependence(model: FormalED, z: torch.Tensor, x: torch.Tensor) -> dict[str, torch.Tensor]:
    """Change one input token at a time and record which outputs change at all (bit for bit):

    - ``"P on x"`` (ℓ_x, ℓ_x): [j, i] = column j+1 of P changed when x_{i+1} changed;
    - ``"P on z"`` (ℓ_x, ℓ_z) and ``"Z on z"`` (ℓ_z, ℓ_z): the same for the source, through the decoder and the
      encoder.
    """
    model = model.eval()
    V = model.config.vocab_size

    def P(zz, xx):
        return model(zz[None], xx[None]).logits[0]

    def Z(zz):
        return model.encode(zz[None])[0]

    base_P, base_Z = P(z, x), Z(z)
    on_x = torch.zeros(len(x), len(x), dtype=torch.bool)
    on_z = torch.zeros(len(x), len(z), dtype=torch.bool)
    z_on_z = torch.zeros(len(z), len(z), dtype=torch.bool)
    for i in range(len(x)):
        xx = x.clone()
        xx[i] = (xx[i] + 1) % V
        on_x[:, i] = (P(z, xx) != base_P).any(-1)
    for k in range(len(z)):
        zz = z.clone()
        zz[k] = (zz[k] + 1) % V
        on_z[:, k] = (P(zz, x) != base_P).any(-1)
        z_on_z[:, k] = (Z(zz) != base_Z).any(-1)
    return {"P on x": on_x, "P on z": on_z, "Z on z": z_on_z}


def mask_checks(dep: Mapping[str, torch.Tensor]) -> dict[str, object]:
    """What the dependence matrices say about the masks."""
    on_x = dep["P on x"]
    n = on_x.size(0)
    future = torch.ones(n, n, dtype=torch.bool).triu(1)
    return {
        "earlier columns changed by a later x token": int(on_x[future].sum()),
        "pairs (column j, later token)": int(future.sum()),
        "columns not changed by an earlier or current x token": int((~on_x[~future]).sum()),
        "columns of P not changed by some z token": int((~dep["P on z"]).sum()),
        "columns of Z not changed by some z token": int((~dep["Z on z"]).sum()),
    }


# --------------------------------------------------------------------------------------------------
# ED-Training, literally, kept in the run store


def _evaluate(model, source, device) -> dict[str, float]:
    return evaluate(model, source, 0, device, contextlib.nullcontext, Dist())


def literal_training(cfg: RunConfig, run_dir: Path, lit: LiteralConfig) -> dict:
    """A run-store procedure: the write-up's ED-Training of ``cfg``'s model on the first ``lit.n`` training
    examples, in order, for ``lit.T`` epochs. It starts from the weights the trainer would start ``cfg`` from (same
    seed), evaluates on the trainer's evaluation batches, and writes ``metrics.jsonl`` (the mean J/(ℓ_X − 1) since
    the last evaluation as ``loss``, then the evaluations) and ``model.pt`` in the trainer's formats."""
    device = torch.device(cfg.device)
    seed_everything(cfg.seed, deterministic=cfg.train.deterministic)
    torch.manual_seed(cfg.seed)  # as the trainer does right before building the model
    model = models.build(cfg.model).to(device)
    source = build_source(cfg)
    train = source.splits["train"]
    examples = [tuple(t.to(device) for t in train.example(i)) for i in range(lit.n)]
    total = lit.T * lit.n
    eval_at = {round(k * total / lit.evals) for k in range(1, lit.evals + 1)}
    evals = [{"step": 0, **_evaluate(model, source, device)}]
    window: list[float] = []
    spent = {"eval": 0.0}
    with open(run_dir / "metrics.jsonl", "w") as metrics:

        def write(record: dict) -> None:
            metrics.write(json.dumps(record) + "\n")
            metrics.flush()

        write({"step": 0, **{f"eval/{k}": v for k, v in evals[0].items() if k != "step"}})

        def after_update(step: int, J: float) -> None:
            _, x = examples[(step - 1) % lit.n]
            window.append(J / (x.numel() - 1))  # nats per predicted token, as the trainer logs
            if step in eval_at:
                t0 = time.perf_counter()
                write({"step": step, "loss": sum(window) / len(window), "lr": lit.eta})
                ev = _evaluate(model, source, device)
                write({"step": step, **{f"eval/{k}": v for k, v in ev.items()}})
                evals.append({"step": step, **ev})
                model.train()
                window.clear()
                spent["eval"] += time.perf_counter() - t0

        start = time.perf_counter()
        ed_training(model, examples, T=lit.T, eta=lit.eta, callback=after_update)
        train_time = time.perf_counter() - start - spent["eval"]
    model.eval()
    checkpoint.save(model.state_dict(), run_dir / "model.pt")
    best = min(evals, key=lambda r: r["val"])
    return {
        "steps": total,
        "initial": {k: v for k, v in evals[0].items() if k != "step"},
        "final": {k: v for k, v in evals[-1].items() if k != "step"},
        "best": best,
        "params": model.num_params(),
        "train_time_s": round(train_time, 3),
    }


def literal_run(cfg: RunConfig, lit: LiteralConfig, *, force: bool = False) -> Run:
    """The ED-Training run of ``cfg`` with the settings ``lit``: reused from the run store, or run now."""
    require(lit.n <= cfg.data.n_train, f"ED-Training's n={lit.n} exceeds data.n_train={cfg.data.n_train}: lower "
            "the notebook parameter literal_examples or raise data.n_train")
    return RunStore().run(cfg, procedure=literal_training, settings=lit, force=force)


def _curve(run: Run, examples_per_step: int):
    """Train-loss records and evaluations of one run, against the number of examples seen."""
    import pandas as pd

    m = run.metrics()
    train = m.dropna(subset=["loss"])[["step", "loss"]] if "loss" in m else pd.DataFrame({"step": [], "loss": []})
    frame = pd.merge(train, run.evals(), on="step", how="outer").sort_values("step").reset_index(drop=True)
    return frame.assign(examples=frame["step"] * examples_per_step)


def curves(literal_runs: Sequence[Run], adamw_runs: Sequence[Run]) -> dict[str, list]:
    """Per method, one frame per seed: examples seen, training loss and the train/val evaluations."""
    return {
        "ED-Training (literal, SGD per example)": [_curve(r, 1) for r in literal_runs],
        "AdamW, batched (shared trainer)": [_curve(r, r.config.train.global_batch) for r in adamw_runs],
    }


# --------------------------------------------------------------------------------------------------
# The task


def task_table(data: Seq2SeqDataConfig):
    """The splits: how many examples, their lengths, and that no held-out source is in train."""
    import pandas as pd

    splits = dataset(data)
    train_set = set(splits["train"].sources)
    return pd.DataFrame([{"split": name, "examples": f"{len(s):,}",
                          "source lengths": f"{min(map(len, s.sources))}..{max(map(len, s.sources))}",
                          "mean length": f"{sum(map(len, s.sources)) / len(s):.2f}",
                          "sources also in train": "(itself)" if name == "train" else
                          f"{sum(src in train_set for src in s.sources)}"} for name, s in splits.items()]
                        ).set_index("split")


def encoding_table(data: Seq2SeqDataConfig, n: int = 3):
    """The first ``n`` training examples as the model receives them: z, z_valid, x (input) and targets."""
    import pandas as pd

    s = dataset(data)["train"]
    width = data.width
    rows = []
    for i in range(n):
        for key, t in (("z", s.z[i]), ("z_valid", s.z_valid[i].long()), ("x (input)", s.x[i]),
                       ("targets", s.targets[i])):
            cells = [str(v) for v in t.tolist()] + [""] * (width - t.numel())
            rows.append({"example": f"{s.sources[i]} → {s.answers[i]}", "tensor": key,
                         **{f"col {j}": c for j, c in enumerate(cells)}})
    return pd.DataFrame(rows).set_index(["example", "tensor"])


def longest_example(data: Seq2SeqDataConfig, split: str = "val") -> tuple[torch.Tensor, torch.Tensor, str]:
    """The first of the split's longest sources: (z, x) unpadded, x = [BOS] + answer + [EOS], and the source."""
    s = dataset(data)[split]
    i = max(range(len(s)), key=lambda k: (len(s.sources[k]), -k))
    z, x = s.example(i)
    return z, x, s.sources[i]


def dependence_panels(dep: Mapping[str, torch.Tensor], z: torch.Tensor, x: torch.Tensor) -> list[dict]:
    zt, xt = [VOCAB[t] for t in z.tolist()], [VOCAB[t] for t in x.tolist()]
    cols = [f"$P_{{:,{j}}}$" for j in range(1, len(x) + 1)]
    return [
        {"matrix": dep["Z on z"].float(), "title": "encoder: Z on z", "xlabel": "changed token of z",
         "ylabel": "column of Z", "xticks": zt, "yticks": [f"$Z_{{:,{j}}}$" for j in range(1, len(z) + 1)]},
        {"matrix": dep["P on z"].float(), "title": "decoder: P on z", "xlabel": "changed token of z",
         "ylabel": "column of P", "xticks": zt, "yticks": cols},
        {"matrix": dep["P on x"].float(), "title": "decoder: P on x", "xlabel": "changed token of x",
         "ylabel": "column of P", "xticks": xt, "yticks": cols},
    ]


def attention_panels(maps: torch.Tensor, source: Sequence[str], predicted: Sequence[str]) -> list[dict]:
    """One panel per decoder layer and head when there are at most 8 of them, else one per layer (head mean)."""
    L, H = maps.shape[:2]
    panels = []
    for l in range(L):
        heads = [(f"layer {l + 1}, head {h + 1}", maps[l, h]) for h in range(H)] if L * H <= 8 else \
            [(f"layer {l + 1}, mean of {H} heads", maps[l].mean(0))]
        for title, m in heads:
            panels.append({"matrix": m.numpy(), "title": title, "xlabel": "source token z", "xticks": source,
                           "ylabel": "token being written", "yticks": predicted})
    return panels


# --------------------------------------------------------------------------------------------------
# ED-Inference on the task


def _device_of(model) -> torch.device:
    return next(model.parameters()).device


def generate(model: FormalED, batch: Mapping[str, torch.Tensor], tau: float, *, seed: int = 0):
    """ED-Inference on every source of a batch (a dict with z and z_valid), from a seeded generator."""
    dev = _device_of(model)
    g = torch.Generator().manual_seed(seed)
    return ed_inference(model, batch["z"].to(dev), tau, z_valid=batch["z_valid"].to(dev), bos=BOS, eos=EOS, pad=PAD,
                        generator=g)


def exact_match(model: FormalED, data: Seq2SeqDataConfig, split: str = "val", *, tau: float = 0.0,
                limit: int | None = None, seed: int = 0, chunk: int = 2048) -> float:
    """Fraction of the split's sources whose generated x is exactly [BOS] + the answer + [EOS]."""
    s = dataset(data)[split]
    n = len(s) if limit is None else min(limit, len(s))
    hits = 0
    for start in range(0, n, chunk):
        idx = torch.arange(start, min(n, start + chunk))
        gen = generate(model, s.batch(idx), tau, seed=seed + start)
        hits += sum(answer(row) == s.answers[i] for row, i in zip(gen.x.tolist(), idx.tolist()))
    return hits / n


def accuracy_table(groups: Mapping[str, Sequence], data: Seq2SeqDataConfig, *, limit: int | None = 2000):
    """Per method (label -> runs, trainer or literal): final train/val loss and exact match at τ = 0 on (the first
    ``limit`` examples of) train and val, as 'mean [min, max]' over seeds."""
    import pandas as pd

    rows = []
    for label, runs in groups.items():
        accs = {"train": [], "val": []}
        for run in runs:
            model = run.load_model()
            for split in accs:
                accs[split].append(exact_match(model, data, split, limit=limit))
        rows.append({"method": label, "seeds": len(runs),
                     "train loss (final)": span([r.summary["final"]["train"] for r in runs], ".4f"),
                     "val loss (final)": span([r.summary["final"]["val"] for r in runs], ".4f"),
                     "exact match, train (τ = 0)": span(accs["train"], ".3f"),
                     "exact match, val (τ = 0)": span(accs["val"], ".3f"),
                     "examples checked (train, val)": ", ".join(
                         f"{min(limit or len(s), len(s)):,}" for s in dataset(data).values())})
    return pd.DataFrame(rows).set_index("method")


def _ended(row: Sequence[int], cap: int) -> bool:
    """Whether a generated row stopped where ED-Inference must: right after its first EOS (only padding
    follows), or at the cap with no EOS."""
    if row[0] != BOS:
        return False
    if EOS in row:
        return all(t == PAD for t in row[row.index(EOS) + 1:])
    return len(row) == cap


def temperature_sweep(models_by_seed: Mapping[int, FormalED], data: Seq2SeqDataConfig,
                      temperatures: Sequence[float], *, prompts: int, samples: int):
    """For each seed's model and each τ: exact match, mean entropy of q, distinct outputs per source, share of
    generations stopped by the length cap, on the first ``prompts`` held-out sources, ``samples`` draws each."""
    import pandas as pd

    val = dataset(data)["val"]
    n = min(prompts, len(val))
    idx = torch.arange(n).repeat_interleave(samples)
    batch = val.batch(idx)
    rows = []
    for seed, model in models_by_seed.items():
        for tau in temperatures:
            gen = generate(model, batch, tau, seed=seed)
            xs = [tuple(r) for r in gen.x.tolist()]
            correct = [answer(r) == val.answers[i] for r, i in zip(xs, idx.tolist())]
            distinct = [len(set(xs[k * samples:(k + 1) * samples])) / samples for k in range(n)]
            ended = [_ended(r, model.config.l_max) for r in xs]
            rows.append({"seed": seed, "tau": tau, "exact match": sum(correct) / len(correct),
                         "entropy of q (nats/token)": gen.entropy.mean().item(),
                         "distinct outputs per source": sum(distinct) / n,
                         "stopped by the cap": gen.capped.double().mean().item(),
                         "ended at eos or the cap": sum(ended) / len(ended)})
    return pd.DataFrame(rows)


def sweep_series(sweep) -> tuple[list[str], dict[str, list[list[float]]]]:
    """The sweep as ``plots.sweep`` takes it: τ labels, and per quantity the per-seed values at each τ."""
    taus = sorted(sweep["tau"].unique())
    names = {"exact match": "exact match", "entropy of q (nats/token)": "entropy of q (nats/token)",
             "distinct outputs per source": "distinct outputs / draws"}
    series = {title: [sweep[sweep["tau"] == t].sort_values("seed")[col].tolist() for t in taus]
              for col, title in names.items()}
    return [tau_label(t) for t in taus], series


def sweep_table(sweep):
    """The sweep as 'mean [min, max]' over seeds, one row per τ."""
    import pandas as pd

    rows = []
    for tau, g in sweep.groupby("tau", sort=True):
        row = {"τ": tau_label(tau)}
        for col in ("exact match", "entropy of q (nats/token)", "distinct outputs per source", "stopped by the cap"):
            row[col] = span(g[col].tolist(), ".3f")
        rows.append(row)
    return pd.DataFrame(rows).set_index("τ")


def tau_label(tau: float) -> str:
    return "∞" if math.isinf(tau) else f"{tau:g}"


def _show(row: Sequence[int], correct: str) -> str:
    """A generated x as text: the answer with ✓/✗, or every token up to EOS (or the cap) when it is not digits."""
    got = answer(row)
    if got is not None:
        return f"{got or '(empty)'} {'✓' if got == correct else '✗'}"
    body = row[1 : row.index(EOS) + 1] if EOS in row else row[1:]  # after EOS there is only filler
    return f"{decode(body)}{'' if EOS in row else ' …(cap)'} ✗"


def examples_table(model: FormalED, data: Seq2SeqDataConfig, temperatures: Sequence[float], *, n: int = 6,
                   seed: int = 0):
    """Held-out sources of spread-out lengths, the correct answer and one sample at each τ (✓ when exact)."""
    import pandas as pd

    val = dataset(data)["val"]
    order = sorted(range(len(val)), key=lambda i: (len(val.sources[i]), i))
    pick = [order[round(k * (len(order) - 1) / max(1, n - 1))] for k in range(n)]
    batch = val.batch(torch.tensor(pick))
    table = {"z (source)": [val.sources[i] for i in pick], "correct answer": [val.answers[i] for i in pick]}
    for tau in temperatures:
        gen = generate(model, batch, tau, seed=seed)
        table[f"τ = {tau_label(tau)}"] = [_show(r, val.answers[i]) for r, i in zip(gen.x.tolist(), pick)]
    return pd.DataFrame(table)


@torch.no_grad()
def cross_attention(model: FormalED, data: Seq2SeqDataConfig, source: str):
    """Cross-attention weights (L_dec, H, ℓ_x, ℓ_z) while the model writes its own τ = 0 answer to ``source``,
    with the source tokens and the tokens being predicted (for the axes)."""
    batch = collate([source], data)
    gen = generate(model, batch, 0.0)
    x = gen.x[0]
    x = x[x != PAD]
    dev = _device_of(model)
    z = batch["z"][:, batch["z_valid"][0]].to(dev)
    _, maps = model.decode(model.encode(z), x[None, :-1].to(dev), return_attention=True)
    predicted = [VOCAB[t] for t in x[1:].tolist()]
    return torch.stack([m[0] for m in maps]).cpu(), list(source), predicted


# --------------------------------------------------------------------------------------------------
# The temperature's properties, measured on a trained model's distributions


def chi_square_p(counts: torch.Tensor, probs: torch.Tensor) -> float:
    """Pearson's χ² goodness-of-fit p-value; bins expected to hold fewer than 5 draws are pooled into one."""
    n = counts.sum().double()
    expected = probs.double() * n
    small = expected < 5
    obs = torch.cat([counts[~small].double(), counts[small].double().sum().reshape(1)])
    exp = torch.cat([expected[~small], expected[small].sum().reshape(1)])
    keep = exp > 0
    obs, exp = obs[keep], exp[keep]
    if obs.numel() < 2:
        return float("nan")
    stat = ((obs - exp) ** 2 / exp).sum()
    dof = obs.numel() - 1
    return torch.special.gammaincc(torch.tensor(dof / 2, dtype=torch.float64), stat / 2).item()


@torch.no_grad()
def temperature_checks(model: FormalED, data: Seq2SeqDataConfig, *, rows: int = 256, draws: int = 20_000,
                       seed: int = 0):
    """q = tempered(p, τ) against what it should be, on the distributions p the model gives at every answer
    position of ``rows`` held-out examples; and ``draws`` samples at the least certain of those positions, tested
    against q with Pearson's χ² (at τ = 0: how many draws are the argmax). Columns starting with ``_`` hold the
    raw numbers (:func:`visible` drops them for display)."""
    import pandas as pd

    val = dataset(data)["val"]
    batch = val.batch(torch.arange(min(rows, len(val))))
    dev = _device_of(model)
    model.eval()
    logits = model(**{k: v.to(dev) for k, v in batch.items()}).logits.cpu()
    logits = logits[batch["targets"] != -100]  # (R, |V|): every real position
    p = torch.softmax(logits.double(), -1)
    r = int(entropy(p).argmax())  # the least certain position
    V = p.size(-1)
    onehot = torch.zeros_like(p).scatter_(1, p.argmax(-1, keepdim=True), 1.0)
    g = torch.Generator().manual_seed(seed)
    out = []
    for tau, name, target in [
        (0.0, "one-hot at argmax p", onehot),
        (1e-8, "≈ one-hot at argmax p", onehot),
        (0.5, "p² / Σ p²", p**2 / (p**2).sum(-1, keepdim=True)),
        (1.0, "p (faithful)", p),
        (2.0, "√p / Σ √p", p.sqrt() / p.sqrt().sum(-1, keepdim=True)),
        (1e8, "≈ uniform 1/|V|", torch.full_like(p, 1 / V)),
        (INF, "uniform 1/|V|", torch.full_like(p, 1 / V)),
    ]:
        q = tempered(logits, tau)
        ys = sample_tau(logits[r].expand(draws, V), tau, g)
        hits = int((ys == p[r].argmax()).sum())
        pval = chi_square_p(torch.bincount(ys, minlength=V), q[r])  # NaN when q is one-hot: nothing to test
        err = (q - target).abs().max().item()
        out.append({"τ": tau_label(tau) if tau not in (1e-8, 1e8) else f"{tau:.0e}", "q should be": name,
                    "max |q − that|": f"{err:.1e}", "non-finite entries of q": int((~torch.isfinite(q)).sum()),
                    f"{draws:,} draws at the least certain position": (
                        f"{hits:,}/{draws:,} are the argmax" if math.isnan(pval) else f"χ² p-value {pval:.3f}"),
                    "_tau": tau, "_err": err, "_p": pval, "_argmax_share": hits / draws})
    return pd.DataFrame(out)


def visible(table):
    """A table without its raw ``_`` columns."""
    return table[[c for c in table.columns if not str(c).startswith("_")]]


# --------------------------------------------------------------------------------------------------
# Verdicts: the algorithms' properties, measured


def _plain(ok: bool) -> str:
    return HOLDS if ok else FAILS


def _bound(x: float) -> str:
    """A float error as its order of magnitude ("0", or "< 1e-15"): the last digits of round-off differ between
    machines, its size does not."""
    return "0" if x == 0 else f"< 1e{math.floor(math.log10(x)) + 1}"


def verdict_agreement(table) -> Verdict:
    """The literal transcription and the batched model agree within tolerance in every case."""
    worst64 = table.loc[table["dtype"] == "float64", "_worst"].max()
    worst32 = table.loc[table["dtype"] == "float32", "_worst"].max()
    ok = bool((table["_worst"] <= table["_tol"]).all())
    return Verdict("The batched model computes the write-up's ED-Transformer P",
                   "P ← ED-Transformer(z, x | θ), line by line",
                   f"max |ΔP| vs the literal loops: {_bound(worst64)} (float64), {_bound(worst32)} (float32); "
                   f"{len(table)} cases incl. a padded batch", _plain(ok))


def verdict_masks(checks: Mapping[str, int]) -> list[Verdict]:
    leak = checks["earlier columns changed by a later x token"]
    blind = checks["columns of P not changed by some z token"] + checks["columns of Z not changed by some z token"]
    return [
        Verdict("Decoder self-attention is unidirectional (M_uni)", "P_{:,j} depends on x_{1:j} only",
                f"a later x token changed an earlier column of P in {leak} of "
                f"{checks['pairs (column j, later token)']} cases", _plain(leak == 0)),
        Verdict("The encoder and the cross-attention see all of z (Mask ≡ 1)", "MultiHeadAttention(Z, Z | 𝒲, 1)",
                f"columns of Z or P unchanged by some z token: {blind}", _plain(blind == 0)),
    ]


def verdict_temperatures(table) -> list[Verdict]:
    def row(tau):
        return table[table["_tau"] == tau].iloc[0]

    r0, r1, rinf = row(0.0), row(1.0), row(INF)
    finite = int(table["non-finite entries of q"].sum()) == 0
    return [
        Verdict("τ = 0 samples the most likely token", "τ = 0: the most likely continuation",
                f"max |q − one-hot(argmax p)| = {_bound(r0['_err'])}; draws that are the argmax: "
                f"{r0['_argmax_share']:.3f}", _plain(r0["_err"] == 0 and r0["_argmax_share"] == 1 and finite)),
        Verdict("τ = 1 samples faithfully", "τ = 1: faithful sampling (q = p)",
                f"max |q − p| = {_bound(r1['_err'])}; draws vs p: χ² p-value {r1['_p']:.3f}",
                _plain(r1["_err"] < 1e-12 and r1["_p"] > 1e-3)),
        Verdict("τ = ∞ samples uniformly", "τ = ∞: uniform over V",
                f"max |q − 1/|V|| = {_bound(rinf['_err'])}; draws vs uniform: χ² p-value {rinf['_p']:.3f}",
                _plain(rinf["_err"] == 0 and rinf["_p"] > 1e-3 and finite)),
    ]


def verdict_termination(sweep) -> Verdict:
    """Every generation of the sweep ended at its first EOS or at the cap; how often the cap was needed."""
    capped = sweep.groupby("tau")["stopped by the cap"].mean()
    ended = sweep["ended at eos or the cap"].min()
    worst_tau = capped.idxmax()
    return Verdict("ED-Inference terminates", "while y ≠ eos (no bound in the write-up)",
                   f"ended at the first eos or at our cap ℓ_max: {ended:.3f}; stopped by the cap: "
                   f"{capped.min():.3f} to {capped.max():.3f} (τ = {tau_label(worst_tau)})", _plain(ended == 1.0))


def verdict_literal_training(literal_runs: Sequence[Run]) -> Verdict:
    before = [r.summary["initial"]["val"] for r in literal_runs]
    after = [r.summary["final"]["val"] for r in literal_runs]
    return Verdict("ED-Training (θ ← θ − η∇J per example) reduces the loss", "T epochs of plain SGD on J(θ)",
                   f"held-out loss before: {span(before, '.3f')}; after: {span(after, '.3f')}", compare(after, before))


def verdict_accuracy(accuracies: Sequence[float], target: float | None, profile: str) -> Verdict:
    """Every seed at or above our bar: holds; every seed below: does not hold; otherwise inconclusive."""
    claim = "Trained with AdamW, the model solves the task"
    ours = f"held-out exact match at τ = 0: {span(accuracies, '.4f')}"
    if target is None:
        return Verdict(claim, "(no experiment in the write-up)", ours, f"not judged at the {profile} profile")
    verdict = HOLDS if min(accuracies) >= target else FAILS if max(accuracies) < target else INCONCLUSIVE
    return Verdict(claim, "(no experiment in the write-up)", f"{ours}; our bar at this profile: ≥ {target}", verdict)


def verdict_tau_order(sweep) -> Verdict:
    err = {tau: (1 - sweep[sweep["tau"] == tau].sort_values("seed")["exact match"]).tolist() for tau in (0.0, INF)}
    return Verdict("Greedy (τ = 0) answers are more often right than uniform (τ = ∞) ones",
                   "τ = 0 most likely, τ = ∞ uniform",
                   f"exact-match error at τ = 0: {span(err[0.0], '.3f')}; at τ = ∞: {span(err[INF], '.3f')}",
                   compare(err[0.0], err[INF]))


__all__ = ["LiteralConfig", "NAME", "NOTEBOOKS", "PROTOCOLS", "Protocol", "accuracy_table", "agreement", "attention_panels", "dependence_panels", "encoding_table",
           "cross_attention", "curves", "dependence", "examples_table", "exact_match", "generate", "hyperparameters",
           "literal_config", "literal_run", "literal_training", "literal_transcription", "longest_example", "task_table", "mask_checks", "parameter_inventory", "protocol", "randomize",
           "sweep_series", "sweep_table", "tau_label", "temperature_checks", "temperature_sweep", "verdict_accuracy",
           "verdict_agreement", "verdict_literal_training", "verdict_masks", "verdict_tau_order",
           "verdict_temperatures", "verdict_termination", "visible"]
