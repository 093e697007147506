"""Facts of the write-up's CLM part that are computed, not trained: its 3 x 3 worked masking example, the parameter
counts it estimates for widths 350 and 1,300, the training memory of its models as it trained them (fp16 mixed
precision, its batches) with the 12 GB limits behind its batch choices, and the unigram loss that every comparison of
trained arms is gated on.

The write-up's own numbers here are quoted (:data:`WORKED_EXAMPLE`, :data:`WIDTH_ESTIMATES`, :data:`BATCH16_GB`,
:data:`MEMORY_QUOTED`, :data:`LIMIT_CELLS`); everything beside them is computed by the package's models (the mask by
:class:`MaskedTokenConv` itself, memory by the book's one memory method, :func:`lmcompanion.memory.training_memory`).
"""

from __future__ import annotations

import functools
import math
from typing import Mapping, Sequence

import numpy as np
import pandas as pd
import torch

from ... import data, memory, models
from ...formats import number
from ...models.mixer import MaskedTokenConv, MixerConfig
from ...models.transformer import llama_config
from . import rows as rows_

# --- the worked masking example ("Language Mixer Basics") -----------------------------------------------------

# The write-up's matrices, quoted: the token-mixing weights W (each column one output token's filter), the
# upper-triangular mask U, and the coefficients of x_0, x_1, x_2 in each output token of X * m(W).
WORKED_EXAMPLE = {
    "W": ((2, 1, 1), (1, 1, 4), (1, 3, 1)),
    "U": ((1, 1, 1), (0, 1, 1), (0, 0, 1)),
    "m(W)": ((2, 1, 1), (0, 1, 4), (0, 0, 1)),
    "X * m(W)": ((2, 0, 0), (1, 1, 0), (1, 4, 1)),  # row i: output token i = sum_t coefficient_t x_t
}


def worked_example() -> dict[str, np.ndarray]:
    """The example computed by the model's own masked convolution: a ``MaskedTokenConv(3, 3)`` holding the write-up's
    W (transposed: the original's rows are output tokens, the write-up's columns are, which is why its code masks
    with ``tril`` where the text masks with an upper triangle), no bias; its output for the token basis X = I is the
    coefficient of every input token in every output token. Also returns the mask and the masked weights, in the
    write-up's orientation."""
    W = torch.tensor(WORKED_EXAMPLE["W"], dtype=torch.float64)
    conv = MaskedTokenConv(3, 3, bias=False).double()
    with torch.no_grad():
        conv.weight.copy_(W.T.unsqueeze(-1))  # (out, in, 1): row i is output token i's filter, column i of W
        coefficients = conv(torch.eye(3, dtype=torch.float64).unsqueeze(0))[0]  # out[i, t] = d out_i / d x_t
    mask = conv.mask[..., 0].T.to(torch.int64)  # back to the write-up's orientation: U
    return {"W": W.numpy(), "U": mask.numpy(), "m(W)": (W * mask).numpy(), "X * m(W)": coefficients.numpy()}


def worked_example_table() -> pd.DataFrame:
    """Each matrix of the example: the write-up's printed one beside ours, row by row."""
    ours = worked_example()
    rows = []
    for name, printed in WORKED_EXAMPLE.items():
        for i, row in enumerate(printed):
            rows.append(
                {
                    "matrix": name,
                    "row": i,
                    "write-up": " ".join(f"{v:g}" for v in row),
                    "computed": " ".join(f"{v:g}" for v in ours[name][i]),
                    "agree": bool(np.array_equal(np.asarray(row, float), ours[name][i].astype(float))),
                }
            )
    return pd.DataFrame(rows).set_index(["matrix", "row"])


def worked_example_figure():
    """The four matrices of the example as computed (W, the mask U, m(W) = W ∘ U, and the coefficient of x_t in
    output token i), each cell annotated."""
    import matplotlib.pyplot as plt

    ours = worked_example()
    titles = {"W": "W", "U": "mask U", "m(W)": "m(W) = W ∘ U", "X * m(W)": "output token i: coefficient of x_t"}
    fig, axes = plt.subplots(1, 4, figsize=(10.0, 2.8))
    for ax, (name, m) in zip(axes, ours.items()):
        ax.imshow(m, cmap="Blues", vmin=0, vmax=4)
        for (i, j), v in np.ndenumerate(m):
            ax.text(j, i, f"{v:g}", ha="center", va="center", fontsize=11)
        ax.set_title(titles[name], fontsize=9)
        ax.set_xticks(range(3), [f"x{j}" if name == "X * m(W)" else str(j) for j in range(3)])
        ax.set_yticks(range(3), [f"out {i}" if name == "X * m(W)" else str(i) for i in range(3)])
    fig.tight_layout()
    return fig


# --- the parameter estimates for widths 350 and 1,300 ("Background") --------------------------------------------

# "If these hidden widths were used for standard transformer model architectures, the resulting models would are
# around 100 million (350 hidden width) and 995 million (1300 hidden width) parameters."
WIDTH_ESTIMATES = {350: 100e6, 1300: 995e6}
ABOUT = 0.10  # "around": within 10%, the tolerance of the chapter's other estimates (Johnson-Lindenstrauss)


def gpt2_params(d: int, n_layer: int, vocab: int = 50257, positions: int = 1024) -> int:
    """GPT-2's shape (HF ``GPT2LMHeadModel``): pre-LayerNorm blocks of 12 d^2 + 13 d (qkv, projection, MLP 4d, two
    LayerNorms, biases), a final LayerNorm, learned positions, the head tied to the embedding."""
    return n_layer * (12 * d * d + 13 * d) + 2 * d + vocab * d + positions * d


def llama2_params(d: int, n_layer: int = 32, vocab: int = 32000) -> int:
    """Llama 2 7B's shape (HF ``LlamaForCausalLM``): per block q, k, v, o (4 d^2), a SwiGLU MLP of inner width 8d/3
    rounded up to a multiple of 256 (11,008 at d = 4,096), two RMSNorms; a final RMSNorm, untied embeddings."""
    inner = 256 * math.ceil(8 * d / 3 / 256)
    return n_layer * (4 * d * d + 3 * d * inner + 2 * d) + d + 2 * vocab * d


# The standard shapes the row is judged on, declared before computing (GPT-2's four sizes, and Llama 2 7B's shape,
# the one model the write-up's background names), and one shape found afterwards by searching depths and
# vocabularies for the write-up's two numbers, shown but not judged.
STANDARD_SHAPES = {
    "GPT-2 small shape (12 layers)": lambda d: gpt2_params(d, 12),
    "GPT-2 medium shape (24 layers)": lambda d: gpt2_params(d, 24),
    "GPT-2 large shape (36 layers)": lambda d: gpt2_params(d, 36),
    "GPT-2 XL shape (48 layers)": lambda d: gpt2_params(d, 48),
    "Llama 2 7B shape (32 layers)": lambda d: llama2_params(d),
}
FOUND_SHAPE = (
    "found by search: 32 layers of $16 d^2$ (attention, SwiGLU of inner width 4d), untied embeddings of 50,257 tokens",
    lambda d: 32 * (16 * d * d + 2 * d) + d + 2 * 50257 * d,
)


def width_estimates_table() -> pd.DataFrame:
    """Parameters of each standard shape at widths 350 and 1,300, beside the write-up's estimates."""
    rows = []
    for label, count in [*STANDARD_SHAPES.items(), FOUND_SHAPE]:
        row = {"shape": label}
        for d, pub in WIDTH_ESTIMATES.items():
            n = count(d)
            row[f"width {d:,}"] = f"{number(n / 1e6)}M"
            row[f"width {d:,} / write-up"] = number(n / pub)
        row["judged"] = label != FOUND_SHAPE[0]
        rows.append(row)
    return pd.DataFrame(rows).set_index("shape")


def shapes_within(tolerance: float = ABOUT) -> list[str]:
    """The declared standard shapes whose counts at both widths are within ``tolerance`` of the write-up's."""
    return [
        label
        for label, count in STANDARD_SHAPES.items()
        if all(abs(count(d) / pub - 1) <= tolerance for d, pub in WIDTH_ESTIMATES.items())
    ]


# --- training memory as the write-up trained ("Training", "Mixer Inference", "Flat Mixers Train Faster") ---------

# The write-up trained with the HF Trainer's fp16=True (CUDA autocast to fp16, the model, its gradients and AdamW's
# state in fp32) on a 12 GB RTX 3060, 512 tokens, 8 layers. Its figures, quoted (GB of GPU memory to train at batch
# 16): the Llama d=128 "exceeds 10 GB" against 2.4 GB for the mixer of double the width (Training); the same models at
# 10.7 GB and 1.8 GB "for 16-bit training" (Mixer Inference); the flat d=512 mixer at 3.59 GB, the d=256 transformer
# at "more than double".
BATCH16_GB = {"llama_d128": (10.0, 10.7), "mixer_d256": (2.4, 1.8), "flat_d512": (3.59,)}
GPU_GIB = 12  # "12 GB vRAM": the RTX 3060's memory, read as 12 GiB
AMP = torch.float16  # the lower precision of the write-up's mixed-precision training
LLAMA_HEADS = 16  # the transformer tables' "h=16"; several original configurations fall back to 32 (shown, not judged)
LLAMA128, MIXER256 = "Llama d=128", "expanded mixer d=256 (the first comparison's)"
LLAMA256, FLAT512 = "Llama d=256", "flat mixer d=512"
LLAMA512, LLAMA1024, FLAT1024 = "Llama d=512", "Llama d=1024", "flat mixer d=1024"
MEMORY_MODELS = {
    LLAMA128: lambda heads=LLAMA_HEADS: llama_config(128, 8, heads),
    MIXER256: lambda: MixerConfig(n_embed=256, n_layer=8, expansion=2),
    FLAT512: lambda: MixerConfig(n_embed=512, n_layer=8),
    LLAMA256: lambda heads=LLAMA_HEADS: llama_config(256, 8, heads),
    LLAMA512: lambda heads=LLAMA_HEADS: llama_config(512, 8, heads),
    LLAMA1024: lambda heads=LLAMA_HEADS: llama_config(1024, 8, heads),
    FLAT1024: lambda: MixerConfig(n_embed=1024, n_layer=8),
}
# What the write-up says of each (model, batch) counted: its figure, or the limit it implies
MEMORY_QUOTED = {
    (LLAMA128, 16): "more than 10 (Training); 10.7 (Mixer Inference)",
    (MIXER256, 16): "2.4 (Training); 1.8 (Mixer Inference)",
    (FLAT512, 16): "3.59",
    (LLAMA256, 16): "'more than double' the flat d=512 mixer's; the largest Llama that fits at batch 16",
    (LLAMA512, 16): "does not fit (d=256 is the largest at batch 16)",
    (LLAMA512, 8): "'can just barely fit'",
    (LLAMA1024, 8): "does not fit ('requires a reduction to a batch size of 4')",
    (LLAMA1024, 4): "fits",
    (FLAT1024, 32): "fits: 'the largest power of two that fits'",
    (FLAT1024, 64): "does not fit",
}
# The limits behind the write-up's batch choices: per row, the (model, batch) cells and whether each fits in 12 GB,
# with the write-up's words
LIMIT_CELLS = {
    rows_.LIMIT_D256: (
        "'The largest 8-layer transformer that will fit in 12GB vRAM (at 512 token context with a "
        "16-size minibatch) has a $d_{model}=256$'",
        ((LLAMA256, 16, True), (LLAMA512, 16, False)),
    ),
    rows_.LIMIT_D512: (
        "'A transformer of size ($d_{model}=512, \\; n = 8$) with a batch size of 8 can just barely "
        "fit in the allotted 12 GB vRAM'",
        ((LLAMA512, 8, True), (LLAMA512, 16, False)),
    ),
    rows_.LIMIT_D1024: (
        "'$d_{model}=1024$ (which requires a reduction to a batch size of 4 for our vRAM stipulations)'",
        ((LLAMA1024, 4, True), (LLAMA1024, 8, False)),
    ),
    rows_.LIMIT_B32: (
        "'increase the minibatch size to 32 samples (the largest power of two that fits in the allotted 12GB vRAM)'",
        ((FLAT1024, 32, True), (FLAT1024, 64, False)),
    ),
}


@functools.lru_cache(maxsize=64)
def counted(label: str, batch: int, heads: int = LLAMA_HEADS) -> dict[str, int]:
    """Bytes of one training step of ``label`` at ``batch`` x 512 tokens (V = 4,096, 8 blocks, the LM head included,
    AdamW's state), counted without allocating by the shared memory method in fp16 mixed precision
    (:func:`lmcompanion.memory.training_memory` with ``autocast``); ``heads``: a Llama's attention heads."""
    make = MEMORY_MODELS[label]
    cfg = make(heads) if label.startswith("Llama") else make()
    return memory.training_memory(cfg, batch_size=batch, include_head=True, autocast=AMP)


def gib(label: str, batch: int, heads: int = LLAMA_HEADS) -> float:
    return counted(label, batch, heads)["training_step"] / 2**30


def fits(label: str, batch: int) -> bool:
    """Whether the count fits in the RTX 3060's 12 GiB (the CUDA context and the allocator's slack, a few hundred MB
    or more on a GPU, are not counted)."""
    return gib(label, batch) <= GPU_GIB


def memory_cells() -> list[tuple[str, int]]:
    """Every (model, batch) the chapter counts, in the write-up's order."""
    return list(MEMORY_QUOTED)


def measure_training_cuda(model_config, batch_size: int = 16) -> float:
    """GB of ``torch.cuda.max_memory_allocated`` over one AdamW training step at ``batch_size`` under fp16 autocast
    (the model in fp32), NaN when it does not fit."""
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()
    model = opt = None
    try:
        model = models.build(model_config, device="cuda").train()
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
        idx = torch.zeros(batch_size, model.context_size, dtype=torch.long, device="cuda")
        with torch.autocast("cuda", dtype=AMP):
            loss = model(idx, idx).loss
        loss.float().backward()
        opt.step()
        torch.cuda.synchronize()
        return torch.cuda.max_memory_allocated() / 2**30
    except torch.cuda.OutOfMemoryError:
        return float("nan")
    finally:
        del model, opt
        torch.cuda.empty_cache()


def memory_table(measured: Mapping[tuple[str, int], float] | None = None) -> pd.DataFrame:
    """Every counted (model, batch): the write-up's GB or the limit it implies, ours counted in fp16 mixed precision
    (parameters, gradients, AdamW's state, and the most activation bytes alive at once), whether that fits in 12 GiB,
    a Llama's count with 32 heads (the default several original configurations fall back to; shown, not judged), and
    measured on this machine's GPU where there is one."""
    rows = []
    for label, batch in memory_cells():
        m = counted(label, batch)
        row = {
            "model (8 blocks, 512 tokens)": label,
            "batch": batch,
            "write-up (GB)": MEMORY_QUOTED[(label, batch)],
            "counted, fp16 mixed precision (GiB)": number(m["training_step"] / 2**30),
            "of which weights, gradients, AdamW (GiB)": number(
                (m["parameters"] + m["gradients"] + m["optimizer_state"]) / 2**30
            ),
            f"fits in {GPU_GIB} GiB (counted)": "yes" if fits(label, batch) else "no",
            "Llama with 32 heads (GiB)": number(gib(label, batch, 32)) if label.startswith("Llama") else "",
        }
        if measured is not None:
            v = measured.get((label, batch), float("nan"))
            row["measured here (GB)"] = "did not fit" if math.isnan(v) else number(v)
        rows.append(row)
    return pd.DataFrame(rows).set_index(["model (8 blocks, 512 tokens)", "batch"])


def memory_measured() -> dict[tuple[str, int], float] | None:
    """The same steps measured on this machine's GPU under fp16 autocast (None without one)."""
    if not torch.cuda.is_available():
        return None
    out = {}
    for label, batch in memory_cells():
        make = MEMORY_MODELS[label]
        out[(label, batch)] = measure_training_cuda(make(), batch)
    return out


# --- the unigram level -----------------------------------------------------------------------------------------


def unigram_of(runs: Sequence, split: str = "val") -> float:
    """The unigram loss of these runs' data and context (the first run's)."""
    return data.unigram_loss(runs[0].config, split)


__all__ = [
    "ABOUT",
    "AMP",
    "BATCH16_GB",
    "FOUND_SHAPE",
    "GPU_GIB",
    "LIMIT_CELLS",
    "MEMORY_MODELS",
    "MEMORY_QUOTED",
    "STANDARD_SHAPES",
    "WIDTH_ESTIMATES",
    "WORKED_EXAMPLE",
    "counted",
    "fits",
    "gib",
    "gpt2_params",
    "llama2_params",
    "measure_training_cuda",
    "memory_cells",
    "memory_measured",
    "memory_table",
    "shapes_within",
    "unigram_of",
    "width_estimates_table",
    "worked_example",
    "worked_example_figure",
    "worked_example_table",
]
