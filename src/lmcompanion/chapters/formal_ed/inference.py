"""The formal chapter's third notebook: ED-Inference on the task, the temperature's properties, the sweep over τ,
cross-attention maps, and the verdicts built from them."""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Mapping, Sequence

import torch

from ...data.seq2seq import BOS, EOS, PAD, VOCAB, Seq2SeqDataConfig, answer, collate, dataset, decode
from ...experiments.formal_ed import INF
from ...formats import number
from ...models.formal_ed import FormalED, ed_inference, entropy, sample_tau, tempered
from ...stats import goodness_of_fit_p, span
from ...verdicts import Verdict, chance_text, claim, exact
from .algorithm import _bound


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


@torch.no_grad()
def temperature_checks(model: FormalED, data: Seq2SeqDataConfig, *, rows: int = 256, draws: int = 20_000,
                       seed: int = 0):
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
        out.append({"τ": tau_label(tau) if tau not in (1e-8, 1e8) else f"{tau:.0e}", "q should be": name,
                    "max |q − that|": number(err), "non-finite entries of q": int((~torch.isfinite(q)).sum()),
                    f"{draws:,} draws at the least certain position": (
                        f"{hits:,}/{draws:,} are the argmax" if math.isnan(pval) else f"χ² {chance_text(pval)}"),
                    "_tau": tau, "_err": err, "_p": pval, "_argmax_share": hits / draws})
    return pd.DataFrame(out)


def _fit(p: float, against: str) -> str:
    """A goodness-of-fit p worded so that its direction is plain: here a *large* p supports the claim."""
    side = (f"above 0.001: the draws fit {against}" if p > 1e-3 else f"at or below 0.001: the draws do not fit {against}")
    return f"draws vs {against}: χ² goodness-of-fit {chance_text(p)} ({side})"


def _sampled(v: Verdict, p: float) -> Verdict:
    """A sampler check: the Monte Carlo goodness-of-fit test rejects a correct sampler with probability at most 0.001
    (our threshold). Unlike a comparison's p, a goodness-of-fit p is small when the claim is wrong: the row says so."""
    return replace(v, seeds="1 model", check=True,
                   chance=f"χ² {chance_text(p)}: a small p speaks against the sampler; it fails at p ≤ 0.001, which a "
                          "correct sampler reaches at most once in 1,000 (Monte Carlo)")


def verdict_temperatures(table) -> list[Verdict]:
    def row(tau):
        return table[table["_tau"] == tau].iloc[0]

    r0, r1, rinf = row(0.0), row(1.0), row(INF)
    finite = int(table["non-finite entries of q"].sum()) == 0
    return [
        exact("τ = 0 samples the most likely token", "τ = 0: the most likely continuation",
              f"max |q − one-hot(argmax p)| = {_bound(r0['_err'])}; draws that are the argmax: "
              f"{number(r0['_argmax_share'])}", r0["_err"] == 0 and r0["_argmax_share"] == 1 and finite),
        _sampled(exact("τ = 1 samples faithfully", "τ = 1: faithful sampling (q = p)",
                       f"max |q − p| = {_bound(r1['_err'])}; {_fit(r1['_p'], 'p')}",
                       r1["_err"] < 1e-12 and r1["_p"] > 1e-3), r1["_p"]),
        _sampled(exact("τ = ∞ samples uniformly", "τ = ∞: uniform over V",
                       f"max |q − 1/|V|| = {_bound(rinf['_err'])}; {_fit(rinf['_p'], 'uniform')}",
                       rinf["_err"] == 0 and rinf["_p"] > 1e-3 and finite), rinf["_p"]),
    ]


def verdict_termination(sweep) -> Verdict:
    """Every generation of the sweep ended at its first EOS or at the cap; how often the cap was needed."""
    capped = sweep.groupby("tau")["stopped by the cap"].mean()
    ended = sweep["ended at eos or the cap"].min()
    worst_tau = capped.idxmax()
    return exact("ED-Inference terminates", "while y ≠ eos (no bound in the write-up)",
                 f"ended at the first eos or at our cap ℓ_max: {number(ended)}; stopped by the cap: "
                 f"{number(capped.min())} to {number(capped.max())} (τ = {tau_label(worst_tau)})", ended == 1.0)


def verdict_tau_order(sweep) -> Verdict:
    err = {tau: (1 - sweep[sweep["tau"] == tau].sort_values("seed")["exact match"]).tolist() for tau in (0.0, INF)}
    return claim("Greedy (τ = 0) answers are more often right than uniform (τ = ∞) ones",
                 "τ = 0 most likely, τ = ∞ uniform", err[0.0], err[INF], ("error at τ = 0", "error at τ = ∞"))
