"""The formal chapter's first notebook: θ against the write-up's parameter list, the batched model against the
literal transcription (``lmcompanion.models.formal_ed_literal``), and which inputs each output depends on."""

from __future__ import annotations

import dataclasses
import math
import re
from typing import Callable, Mapping, Sequence

import torch

from ...data.seq2seq import VOCAB, Seq2SeqDataConfig, dataset
from ...experiments.formal_ed import protocol
from ...formats import number
from ...models.formal_ed import FormalED, FormalEDConfig
from ...verdicts import Verdict, exact

LITERAL = "lmcompanion.models.formal_ed_literal"  # the slow transcription agreement() compares with


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
        ("$\\mathcal{W}^l_\\mathrm{enc}$: $W_q^h$, $b_q^h$, $W_k^h$, $b_k^h$, $W_v^h$, $b_v^h$ (h∈[H]), $W_o$, $b_o$",
         "l ∈ [L_enc]",
         f"H·(3·d_attn·d_e + 3·d_attn) + d_e·H·d_attn + d_e = {_mha_count(c)}", c.L_enc * _mha_count(c),
         r"encoder\.\d+\.mha\."),
        ("$\\gamma^l_r$, $\\beta^l_r$", "l ∈ [L_enc], r ∈ {1,2}", f"d_e = {c.d_e} each", c.L_enc * 4 * c.d_e,
         r"encoder\.\d+\.ln[12]\."),
        ("$W^l_1$, $b^l_1$, $W^l_2$, $b^l_2$", "l ∈ [L_enc]", f"d_mlp×d_e, d_mlp, d_e×d_mlp, d_e = {mlp}",
         c.L_enc * mlp, r"encoder\.\d+\.W[12]\."),
        ("$\\mathcal{W}^l_\\mathrm{dec}$ (self-attention)", "l ∈ [L_dec]", f"as $\\mathcal{{W}}_\\mathrm{{enc}}$: {_mha_count(c)}",
         c.L_dec * _mha_count(c),
         r"decoder\.\d+\.mha_self\."),
        ("$\\mathcal{W}^l_\\mathrm{cross}$ (cross-attention)", "l ∈ [L_dec]", f"as $\\mathcal{{W}}_\\mathrm{{enc}}$: {_mha_count(c)}",
         c.L_dec * _mha_count(c),
         r"decoder\.\d+\.mha_cross\."),
        ("$\\gamma^l_r$, $\\beta^l_r$", "l ∈ [L_dec], r ∈ {3,4,5}", f"d_e = {c.d_e} each", c.L_dec * 6 * c.d_e,
         r"decoder\.\d+\.ln[345]\."),
        ("$W^l_3$, $b^l_3$, $W^l_4$, $b^l_4$", "l ∈ [L_dec]", f"d_mlp×d_e, d_mlp, d_e×d_mlp, d_e = {mlp}",
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
                     "scalars (write-up)": f"{expected:,}", "our parameters": f"{len(mine)} tensor{'s' if len(mine) != 1 else ''}, e.g. {example} "
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
                "max |P_literal − P_ours|": number(worst), "tolerance": f"{tol:.0e}",
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
                 "max |P_literal − P_ours|": number(worst), "tolerance": "1e-10",
                 "agree": "yes" if worst <= 1e-10 else "NO", "_worst": worst, "_tol": 1e-10})
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
        {"matrix": dep["Z on z"].float(), "title": "encoder: Z on z", "xlabel": "changed token of z",
         "ylabel": "column of Z", "xticks": zt, "yticks": [f"$Z_{{:,{j}}}$" for j in range(1, len(z) + 1)]},
        {"matrix": dep["P on z"].float(), "title": "decoder: P on z", "xlabel": "changed token of z",
         "ylabel": "column of P", "xticks": zt, "yticks": cols},
        {"matrix": dep["P on x"].float(), "title": "decoder: P on x", "xlabel": "changed token of x",
         "ylabel": "column of P", "xticks": xt, "yticks": cols},
    ]


def visible(table):
    """A table without its raw ``_`` columns."""
    return table[[c for c in table.columns if not str(c).startswith("_")]]


def _bound(x: float) -> str:
    """A float error as its order of magnitude ("0", or "< 1e-15"): the last digits of round-off differ between
    machines, its size does not."""
    return "0" if x == 0 else f"< 1e{math.floor(math.log10(x)) + 1}"


def verdict_agreement(table) -> Verdict:
    """The literal transcription and the batched model agree within tolerance in every case."""
    worst64 = table.loc[table["dtype"] == "float64", "_worst"].max()
    worst32 = table.loc[table["dtype"] == "float32", "_worst"].max()
    ok = bool((table["_worst"] <= table["_tol"]).all())
    return exact("The batched model computes the write-up's ED-Transformer P",
                 "P ← ED-Transformer(z, x | θ), line by line",
                 f"max |ΔP| vs the literal loops: {_bound(worst64)} (float64), {_bound(worst32)} (float32); "
                 f"{len(table)} cases incl. a padded batch", ok)


def verdict_masks(checks: Mapping[str, int]) -> list[Verdict]:
    leak = checks["earlier columns changed by a later x token"]
    blind = checks["columns of P not changed by some z token"] + checks["columns of Z not changed by some z token"]
    return [
        exact("Decoder self-attention is unidirectional (M_uni)", "$P_{:,j}$ depends on $x_{1:j}$ only",
              f"a later x token changed an earlier column of P in {leak} of "
              f"{checks['pairs (column j, later token)']} cases", leak == 0),
        exact("The encoder and the cross-attention see all of z (Mask ≡ 1)", "MultiHeadAttention(Z, Z | 𝒲, 1)",
              f"columns of Z or P unchanged by some z token: {blind}", blind == 0),
    ]
