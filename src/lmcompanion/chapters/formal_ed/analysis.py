"""The formal encoder–decoder chapter's analyses, in the order of its notebooks.

- ``01_algorithm``: θ against the write-up's parameter list, the batched model against the literal transcription
  (``lmcompanion.models.formal_ed_literal``), and which inputs each output depends on (the masks);
- ``02_training``: the task, ED-Training kept in the run store, and the two ways of training side by side (curves,
  exact match);
- ``03_inference``: ED-Inference on the task, the temperature's properties, the sweep over τ and cross-attention
  maps.

The verdicts built from them are the chapter module's (its ``__init__``).
"""

from __future__ import annotations

import dataclasses
import math
import re
from typing import Callable, Mapping, Sequence

import torch

from ...data import unigram_loss
from ...data.seq2seq import BOS, EOS, PAD, VOCAB, Seq2SeqDataConfig, answer, collate, dataset, decode
from ...experiments.formal_ed import INF, protocol
from ...formats import number
from ...models.formal_ed import FormalED, FormalEDConfig, ed_inference, entropy, sample_tau, tempered
from ...stats import goodness_of_fit_p, span
from ...train import Run
from ...verdicts import chance_text


# --- θ, the literal transcription, the masks (01_algorithm) --------------------------------------------------------


LITERAL_MODULE = "lmcompanion.models.formal_ed_literal"  # the slow transcription agreement() compares with


def hyperparameters(model: FormalEDConfig, profile: str):
    """The write-up's hyperparameters: the run's values at ``profile`` and those of the paper profile."""
    import pandas as pd

    rows = [
        ("ℓ_max", "l_max", "maximum sequence length"),
        ("L_enc", "L_enc", "encoder layers"),
        ("L_dec", "L_dec", "decoder layers"),
        ("H", "H", "attention heads"),
        ("d_e", "d_e", "embedding size"),
        ("d_mlp", "d_mlp", "MLP hidden size"),
        ("|V|", "vocab_size", "vocabulary size"),
        ("d_attn = d_mid", "d_attn", "per-head size, d_e / H (not fixed by the write-up)"),
    ]
    paper = protocol("paper").model
    return pd.DataFrame(
        [
            {
                "symbol": s,
                "config field": f"model.{f}" if f != "d_attn" else "(derived)",
                "meaning": m,
                f"this run ({profile})": getattr(model, f),
                "paper profile": getattr(paper, f),
            }
            for s, f, m in rows
        ]
    ).set_index("symbol")


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
        (
            "$\\mathcal{W}^l_\\mathrm{enc}$: $W_q^h$, $b_q^h$, $W_k^h$, $b_k^h$, $W_v^h$, $b_v^h$ (h∈[H]), $W_o$, $b_o$",
            "l ∈ [L_enc]",
            f"H·(3·d_attn·d_e + 3·d_attn) + d_e·H·d_attn + d_e = {_mha_count(c)}",
            c.L_enc * _mha_count(c),
            r"encoder\.\d+\.mha\.",
        ),
        (
            "$\\gamma^l_r$, $\\beta^l_r$",
            "l ∈ [L_enc], r ∈ {1,2}",
            f"d_e = {c.d_e} each",
            c.L_enc * 4 * c.d_e,
            r"encoder\.\d+\.ln[12]\.",
        ),
        (
            "$W^l_1$, $b^l_1$, $W^l_2$, $b^l_2$",
            "l ∈ [L_enc]",
            f"d_mlp×d_e, d_mlp, d_e×d_mlp, d_e = {mlp}",
            c.L_enc * mlp,
            r"encoder\.\d+\.W[12]\.",
        ),
        (
            "$\\mathcal{W}^l_\\mathrm{dec}$ (self-attention)",
            "l ∈ [L_dec]",
            f"as $\\mathcal{{W}}_\\mathrm{{enc}}$: {_mha_count(c)}",
            c.L_dec * _mha_count(c),
            r"decoder\.\d+\.mha_self\.",
        ),
        (
            "$\\mathcal{W}^l_\\mathrm{cross}$ (cross-attention)",
            "l ∈ [L_dec]",
            f"as $\\mathcal{{W}}_\\mathrm{{enc}}$: {_mha_count(c)}",
            c.L_dec * _mha_count(c),
            r"decoder\.\d+\.mha_cross\.",
        ),
        (
            "$\\gamma^l_r$, $\\beta^l_r$",
            "l ∈ [L_dec], r ∈ {3,4,5}",
            f"d_e = {c.d_e} each",
            c.L_dec * 6 * c.d_e,
            r"decoder\.\d+\.ln[345]\.",
        ),
        (
            "$W^l_3$, $b^l_3$, $W^l_4$, $b^l_4$",
            "l ∈ [L_dec]",
            f"d_mlp×d_e, d_mlp, d_e×d_mlp, d_e = {mlp}",
            c.L_dec * mlp,
            r"decoder\.\d+\.W[34]\.",
        ),
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
        rows.append(
            {
                "θ (write-up)": symbol,
                "for": index,
                "size by the write-up": shape,
                "scalars (write-up)": f"{expected:,}",
                "our parameters": f"{len(mine)} tensor{'s' if len(mine) != 1 else ''}, e.g. {example} "
                f"{tuple(named[example].shape) if mine else ''}",
                "scalars (ours)": f"{sum(named[n].numel() for n in mine):,}",
                "match": "yes" if expected == sum(named[n].numel() for n in mine) else "NO",
            }
        )
    stray = sorted(set(named) - set(owner))
    if stray:
        raise AssertionError(f"parameters outside the write-up's θ: {stray}")
    total_w = sum(it[3] for it in items)
    rows.append(
        {
            "θ (write-up)": "total",
            "for": "",
            "size by the write-up": "",
            "scalars (write-up)": f"{total_w:,}",
            "our parameters": f"{len(named)} tensors",
            "scalars (ours)": f"{model.num_params():,}",
            "match": "yes" if total_w == model.num_params() else "NO",
        }
    )
    return pd.DataFrame(rows).set_index("θ (write-up)")


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
        return {
            "case": label,
            "dtype": str(dtype).replace("torch.", ""),
            "pairs (z, x)": len(pairs),
            "max |P_literal − P_ours|": number(worst),
            "tolerance": f"{tol:.0e}",
            "agree": "yes" if worst <= tol else "NO",
            "_worst": worst,
            "_tol": tol,
        }

    rnd = [
        (toks(int(torch.randint(1, lm + 1, (1,), generator=g))), toks(int(torch.randint(1, lm + 1, (1,), generator=g))))
        for _ in range(cases)
    ]
    rows = [
        one(config, torch.float64, [(toks(lm), toks(lm))], f"this profile's model, ℓ_z = ℓ_x = ℓ_max = {lm}"),
        one(config, torch.float64, [(toks(1), toks(1))], "this profile's model, ℓ_z = ℓ_x = 1"),
        one(config, torch.float64, rnd, "this profile's model, random lengths"),
        one(config, torch.float32, rnd, "this profile's model, random lengths"),
        one(dataclasses.replace(config, H=1, L_enc=1, L_dec=3), torch.float64, rnd, "H = 1, L_enc = 1, L_dec = 3"),
        one(
            dataclasses.replace(config, L_enc=3, L_dec=1, d_mlp=7),
            torch.float64,
            rnd,
            "L_enc = 3, L_dec = 1, d_mlp = 7",
        ),
    ]
    # a right-padded batch (z_valid hides z's padding) against each example run alone
    model = randomize(FormalED(config), g).double().eval()
    lengths = [
        (int(torch.randint(1, lm + 1, (1,), generator=g)), int(torch.randint(1, lm + 1, (1,), generator=g)))
        for _ in range(4)
    ]
    z = torch.stack([torch.cat([toks(a), torch.zeros(lm - a, dtype=torch.long)]) for a, _ in lengths])
    x = torch.stack([torch.cat([toks(b), torch.zeros(lm - b, dtype=torch.long)]) for _, b in lengths])
    valid = torch.arange(lm)[None, :] < torch.tensor([a for a, _ in lengths])[:, None]
    with torch.no_grad():
        P = torch.softmax(model(z, x, z_valid=valid).logits, -1)
        theta = model.theta()
        worst = max(
            (literal(z[i, :a].tolist(), x[i, :b].tolist(), theta, config.ln_eps) - P[i, :b].T).abs().max().item()
            for i, (a, b) in enumerate(lengths)
        )
    rows.append(
        {
            "case": "padded batch of 4 vs each example alone",
            "dtype": "float64",
            "pairs (z, x)": 4,
            "max |P_literal − P_ours|": number(worst),
            "tolerance": "1e-10",
            "agree": "yes" if worst <= 1e-10 else "NO",
            "_worst": worst,
            "_tol": 1e-10,
        }
    )
    return pd.DataFrame(rows)


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
        {
            "matrix": dep["Z on z"].float(),
            "title": "encoder: Z on z",
            "xlabel": "changed token of z",
            "ylabel": "column of Z",
            "xticks": zt,
            "yticks": [f"$Z_{{:,{j}}}$" for j in range(1, len(z) + 1)],
        },
        {
            "matrix": dep["P on z"].float(),
            "title": "decoder: P on z",
            "xlabel": "changed token of z",
            "ylabel": "column of P",
            "xticks": zt,
            "yticks": cols,
        },
        {
            "matrix": dep["P on x"].float(),
            "title": "decoder: P on x",
            "xlabel": "changed token of x",
            "ylabel": "column of P",
            "xticks": xt,
            "yticks": cols,
        },
    ]


def visible(table):
    """A table without its raw ``_`` columns."""
    return table[[c for c in table.columns if not str(c).startswith("_")]]


# --- the task and the two ways of training (02_training) -----------------------------------------------------------


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


def unigram_reference(cfg) -> tuple[str, dict[str, float]]:
    """("unigram loss", {panel column: loss}) for the training curves: the answer tokens' unigram loss on the train
    split (the training-loss panel) and on the held-out one (:func:`lmcompanion.data.unigram_loss`)."""
    return "unigram loss", {"loss": unigram_loss(cfg, "train"), "val": unigram_loss(cfg, "val")}


def task_table(data: Seq2SeqDataConfig):
    """The splits: how many examples, their lengths, and that no held-out source is in train."""
    import pandas as pd

    splits = dataset(data)
    train_set = set(splits["train"].sources)
    return pd.DataFrame(
        [
            {
                "split": name,
                "examples": f"{len(s):,}",
                "source lengths": f"{min(map(len, s.sources))}..{max(map(len, s.sources))}",
                "mean length": number(sum(map(len, s.sources)) / len(s)),
                "sources also in train": "(itself)"
                if name == "train"
                else f"{sum(src in train_set for src in s.sources)}",
            }
            for name, s in splits.items()
        ]
    ).set_index("split")


def encoding_table(data: Seq2SeqDataConfig, n: int = 3):
    """The first ``n`` training examples as the model receives them: z, z_valid, x (input) and targets."""
    import pandas as pd

    s = dataset(data)["train"]
    width = data.width
    rows = []
    for i in range(n):
        for key, t in (
            ("z", s.z[i]),
            ("z_valid", s.z_valid[i].long()),
            ("x (input)", s.x[i]),
            ("targets", s.targets[i]),
        ):
            cells = [str(v) for v in t.tolist()] + [""] * (width - t.numel())
            rows.append(
                {
                    "example": f"{s.sources[i]} → {s.answers[i]}",
                    "tensor": key,
                    **{f"col {j}": c for j, c in enumerate(cells)},
                }
            )
    return pd.DataFrame(rows).set_index(["example", "tensor"])


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
        rows.append(
            {
                "method": label,
                "seeds": len(runs),
                "train loss (final)": span([r.summary["final"]["train"] for r in runs], ".4f"),
                "val loss (final)": span([r.summary["final"]["val"] for r in runs], ".4f"),
                "exact match, train (τ = 0)": span(accs["train"], ".3f"),
                "exact match, val (τ = 0)": span(accs["val"], ".3f"),
                "examples checked (train, val)": ", ".join(
                    f"{min(limit or len(s), len(s)):,}" for s in dataset(data).values()
                ),
            }
        )
    return pd.DataFrame(rows).set_index("method")


# --- ED-Inference and the temperature (03_inference) ---------------------------------------------------------------


def _device_of(model) -> torch.device:
    return next(model.parameters()).device


def generate(model: FormalED, batch: Mapping[str, torch.Tensor], tau: float, *, seed: int = 0):
    """ED-Inference on every source of a batch (a dict with z and z_valid), from a seeded generator."""
    dev = _device_of(model)
    g = torch.Generator().manual_seed(seed)
    return ed_inference(
        model, batch["z"].to(dev), tau, z_valid=batch["z_valid"].to(dev), bos=BOS, eos=EOS, pad=PAD, generator=g
    )


def exact_match(
    model: FormalED,
    data: Seq2SeqDataConfig,
    split: str = "val",
    *,
    tau: float = 0.0,
    limit: int | None = None,
    seed: int = 0,
    chunk: int = 2048,
) -> float:
    """Fraction of the split's sources whose generated x is exactly [BOS] + the answer + [EOS]."""
    s = dataset(data)[split]
    n = len(s) if limit is None else min(limit, len(s))
    hits = 0
    for start in range(0, n, chunk):
        idx = torch.arange(start, min(n, start + chunk))
        gen = generate(model, s.batch(idx), tau, seed=seed + start)
        hits += sum(answer(row) == s.answers[i] for row, i in zip(gen.x.tolist(), idx.tolist()))
    return hits / n


def _ended(row: Sequence[int], cap: int) -> bool:
    """Whether a generated row stopped where ED-Inference must: right after its first EOS (only padding
    follows), or at the cap with no EOS."""
    if row[0] != BOS:
        return False
    if EOS in row:
        return all(t == PAD for t in row[row.index(EOS) + 1 :])
    return len(row) == cap


def temperature_sweep(
    models_by_seed: Mapping[int, FormalED],
    data: Seq2SeqDataConfig,
    temperatures: Sequence[float],
    *,
    prompts: int,
    samples: int,
):
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
            distinct = [len(set(xs[k * samples : (k + 1) * samples])) / samples for k in range(n)]
            ended = [_ended(r, model.config.l_max) for r in xs]
            rows.append(
                {
                    "seed": seed,
                    "tau": tau,
                    "exact match": sum(correct) / len(correct),
                    "entropy of q (nats/token)": gen.entropy.mean().item(),
                    "distinct outputs per source": sum(distinct) / n,
                    "stopped by the cap": gen.capped.double().mean().item(),
                    "ended at eos or the cap": sum(ended) / len(ended),
                }
            )
    return pd.DataFrame(rows)


def sweep_series(sweep) -> tuple[list[str], dict[str, list[list[float]]]]:
    """The sweep as ``plots.sweep`` takes it: τ labels, and per quantity the per-seed values at each τ."""
    taus = sorted(sweep["tau"].unique())
    names = {
        "exact match": "exact match",
        "entropy of q (nats/token)": "entropy of q (nats/token)",
        "distinct outputs per source": "distinct outputs / draws",
    }
    series = {
        title: [sweep[sweep["tau"] == t].sort_values("seed")[col].tolist() for t in taus]
        for col, title in names.items()
    }
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


def examples_table(
    model: FormalED, data: Seq2SeqDataConfig, temperatures: Sequence[float], *, n: int = 6, seed: int = 0
):
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


def attention_panels(maps: torch.Tensor, source: Sequence[str], predicted: Sequence[str]) -> list[dict]:
    """One panel per decoder layer and head when there are at most 8 of them, else one per layer (head mean)."""
    L, H = maps.shape[:2]
    panels = []
    for layer in range(L):
        heads = (
            [(f"layer {layer + 1}, head {h + 1}", maps[layer, h]) for h in range(H)]
            if L * H <= 8
            else [(f"layer {layer + 1}, mean of {H} heads", maps[layer].mean(0))]
        )
        for title, m in heads:
            panels.append(
                {
                    "matrix": m.numpy(),
                    "title": title,
                    "xlabel": "source token z",
                    "xticks": source,
                    "ylabel": "token being written",
                    "yticks": predicted,
                }
            )
    return panels


@torch.no_grad()
def temperature_checks(
    model: FormalED, data: Seq2SeqDataConfig, *, rows: int = 256, draws: int = 20_000, seed: int = 0
):
    """q = tempered(p, τ) against what it should be, on the distributions p the model gives at every answer
    position of ``rows`` held-out examples; and ``draws`` samples at the least certain of those positions, tested
    against q with a Monte Carlo goodness-of-fit test (:func:`~lmcompanion.stats.goodness_of_fit_p`; at τ = 0:
    how many draws are the argmax). Columns starting with ``_`` hold the
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
        pval = goodness_of_fit_p(torch.bincount(ys, minlength=V).numpy(), q[r].numpy(), seed=seed)  # NaN: one-hot q
        err = (q - target).abs().max().item()
        out.append(
            {
                "τ": tau_label(tau) if tau not in (1e-8, 1e8) else f"{tau:.0e}",
                "q should be": name,
                "max |q − that|": number(err),
                "non-finite entries of q": int((~torch.isfinite(q)).sum()),
                f"{draws:,} draws at the least certain position": (
                    f"{hits:,}/{draws:,} are the argmax" if math.isnan(pval) else f"χ² {chance_text(pval)}"
                ),
                "_tau": tau,
                "_err": err,
                "_p": pval,
                "_argmax_share": hits / draws,
            }
        )
    return pd.DataFrame(out)
