"""What the mixer chapter computes besides training curves: parameter counts at the write-up's sizes, the masked
weights' liveness, training memory against context length, fixed-window generation and the Johnson-Lindenstrauss
estimates of the write-up's background section.

Everything here is computed (on the meta device where the models are large), never typed: the write-up's own
numbers come from the experiments registry (``published=``) or from :data:`MEMORY_PUBLISHED` /
:data:`JL_PUBLISHED` / :data:`PROMPTS`, which quote the write-up.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping, Sequence

import pandas as pd
import torch

from ... import experiments, memory, models
from ...data import stories
from ...experiments import mixer as exp
from ...formats import count, number
from ...memory import training_memory  # the shared method (lmcompanion.memory), re-exported under its old name here
from ...models.mixer import MixerConfig, fixed_window_generate, token_weight_census
from ...models.transformer import llama_config

# --- parameter counts ----------------------------------------------------------------------------------------

# An independent count of the original code's parameters (the reference notes' "verified" table), per layer:
# embedding V*d, per block 2 LayerNorms (2*2d), the feed-forward (d*4d + 4d + 4d*d + d) and the token mixing,
# and the untied head V*d.


def independent_count(name: str, changes: Mapping[str, object] | None = None) -> int:
    """The parameters of experiment ``name`` at the write-up's size (with ``changes`` to its model: ``n_embed``,
    ``n_head`` or a mixer field), counted from the architecture's description, not from the model code."""
    arm, changes = exp.ARMS[name], dict(changes or {})
    V, L, n = 4096, 512, 8 * arm.depth
    d, h = int(changes.pop("n_embed", arm.n_embed)), int(changes.pop("n_head", arm.n_head))
    if arm.family == "mixer":
        m = {**arm.mixer, **changes}
        if h > 1:
            m["n_head"] = h
        w = d + (m.get("positional", "none") != "none")
        k = int(m.get("kernel_size", 1))
        if m.get("expansion"):
            e = int(m["expansion"])
            mix = (e * L * L * k + e * L) + (L * e * L * k + L)
        elif m.get("n_parallel", 1) > 1:
            mix = m["n_parallel"] * (L * L * k + L)
        elif m.get("n_head", 1) > 1:
            hh = int(m["n_head"])
            mix = hh * (w * (w // hh) + w // hh) + hh * (L * L * k + L) + (w * w + w)
        else:
            mix = L * L * k + L
        block = 2 * (2 * w) + (w * 4 * w + 4 * w) + (4 * w * w + w) + mix
        extra = (d * d + d) if m.get("embed_linear") else 0
        return V * d + n * block + extra + V * d
    if arm.family == "gpt":  # learned positions, post-LN, biases everywhere, tied head
        block = (d * 3 * d + 3 * d) + (d * d + d) + 2 * (2 * d) + (d * 4 * d + 4 * d) + (4 * d * d + d)
        return V * d + L * d + n * block
    # Llama: no biases, RMSNorm weights, SwiGLU of inner width 4d, untied head, final norm
    block = 4 * d * d + 3 * d * 4 * d + 2 * d
    mix = (L * L + L) if arm.hybrid != "none" else 0
    return V * d + n * (block + mix) + d + V * d


def _model_at_paper(name: str, changes: Mapping[str, object]):
    cfg = experiments.config(name, "paper", device="cpu").model
    return cfg.replace(**changes) if changes else cfg


# The multi-headed mixer has no committed version that runs the write-up's design with more than one head (the
# reference notes): its reference count is the notes' count of that design, not a count of original code.
NO_RUNNABLE_ORIGINAL = ("mixer/heads2",)


def count_table(names: Sequence[str] = ()) -> pd.DataFrame:
    """Parameter counts at the write-up's sizes: our model's, an independent count from the architecture's
    description, and the reference notes' count (of the original code, or of the design where no original runs);
    then every arm of ``names``."""
    rows = []
    for label, name, changes, original in exp.ORIGINAL_COUNTS:
        ours = models.num_params(_model_at_paper(name, changes))
        rows.append(
            {
                "model (write-up size)": label,
                "ours": f"{ours:,}",
                "independent count": f"{independent_count(name, changes):,}",
                "reference count": f"{original:,}",
                "counted from": "the notes' reading of the design (no runnable original)"
                if name in NO_RUNNABLE_ORIGINAL
                else "the original code",
                "agree": ours == independent_count(name, changes) == original,
            }
        )
    for name in names:
        ours = models.num_params(_model_at_paper(name, {}))
        rows.append(
            {
                "model (write-up size)": name,
                "ours": f"{ours:,}",
                "independent count": f"{independent_count(name):,}",
                "reference count": "",
                "counted from": "",
                "agree": ours == independent_count(name),
            }
        )
    return pd.DataFrame(rows).set_index("model (write-up size)")


# --- which token-mixing weights can learn -----------------------------------------------------------------------


def liveness_table(d: int = 512, L: int = 512, expansions: Sequence[int | None] = (None, 1, 2, 4)) -> pd.DataFrame:
    """The masked token-mixing weights of one block, flat and expanded: how many exist, how many the causal mask
    zeroes, how many are kept by the mask but feed a hidden channel no output reads, and how many can ever get a
    gradient (live). Counted from the model's own masks (meta device, no weights allocated)."""
    rows = []
    for e in expansions:
        cfg = MixerConfig(n_embed=d, n_layer=1, context_size=L, expansion=e)
        model = models.build(cfg, device="meta")
        c = token_weight_census(model)
        rows.append(
            {
                "token mixing": "flat" if e is None else f"expanded, e={e}",
                "weights": f"{c['total']:,}",
                "zeroed by the mask": f"{c['masked']:,}",
                "kept but never read": f"{c['unread']:,}",
                "live (can get a gradient)": f"{c['live']:,}",
                "live share": number(c["live"] / c["total"]),
            }
        )
    return pd.DataFrame(rows).set_index("token mixing")


def unread_weights(e: int | None, d: int = 64, L: int = 64) -> int:
    """Token-mixing weights kept by the mask but never read (one block)."""
    return token_weight_census(
        models.build(MixerConfig(n_embed=d, n_layer=1, context_size=L, expansion=e), device="meta")
    )["unread"]


# --- training memory against context (the write-up's two tables) --------------------------------------------------

MEMORY_LAYERS = (4, 8, 16)
MEMORY_CONTEXTS = (512, 1024, 2048, 4096, 8192)
MEMORY_WIDTH = 1024
MEMORY_HEADS = 16  # not stated for this table; the write-up's transformer tables use h=16
GPU_GB = 12  # the RTX 3060 the write-up measured on
# The write-up's tables (MB of device memory, one unbatched forward and backward pass without the LM head; None:
# out of memory on its 12 GB GPU), quoted from its "Memory" section.
MEMORY_PUBLISHED = {
    "mixer": {
        4: (2071, 2341, 2637, 3573, 6491),
        8: (2431, 2869, 3425, 5111, 10527),
        16: (2695, 3159, 3811, 5879, None),
    },
    "transformer": {
        4: (2323, 3275, 6809, None, None),
        8: (3176, 4800, 10126, None, None),
        16: (4876, 7750, None, None, None),
    },
}


def memory_config(family: str, n_layer: int, context: int):
    if family == "mixer":
        return MixerConfig(n_embed=MEMORY_WIDTH, n_layer=n_layer, context_size=context)
    return llama_config(MEMORY_WIDTH, n_layer, MEMORY_HEADS, context_size=context)


def memory_counts(key: str = "one_pass") -> dict[str, pd.DataFrame]:
    """MB of one unbatched training pass (fp32, without the LM head), counted on the meta device: family ->
    (layers x context) table of ``training_memory(...)[key]``."""
    out = {}
    for family in ("mixer", "transformer"):
        out[family] = pd.DataFrame(
            [
                [training_memory(memory_config(family, n, T))[key] / 2**20 for T in MEMORY_CONTEXTS]
                for n in MEMORY_LAYERS
            ],
            index=pd.Index(MEMORY_LAYERS, name="layers"),
            columns=pd.Index(MEMORY_CONTEXTS, name="context"),
        )
    return out


def memory_table(counted: Mapping[str, pd.DataFrame], measured: Mapping[str, pd.DataFrame] | None = None):
    """Our counted MB beside the write-up's measured MB ("OOM" beyond its 12 GB), one row per (family, layers)."""
    rows = []
    for family, table in counted.items():
        for n in MEMORY_LAYERS:
            row = {"model": family, "layers": n}
            for j, T in enumerate(MEMORY_CONTEXTS):
                pub = MEMORY_PUBLISHED[family][n][j]
                row[f"{T}: write-up"] = "OOM" if pub is None else f"{pub:,}"
                row[f"{T}: counted"] = number(table.loc[n, T])
                if measured is not None and family in measured:
                    v = measured[family].loc[n, T]
                    row[f"{T}: measured"] = "OOM" if pd.isna(v) else number(v)
            rows.append(row)
    return pd.DataFrame(rows).set_index(["model", "layers"])


def growth_table(counted: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """MB added by each longer context over the 512-token cell: ours (counted) and the write-up's (where both
    cells fit in its 12 GB). A constant offset, such as the CUDA context in a whole-process measurement, cancels."""
    rows = []
    for family, table in counted.items():
        for n in MEMORY_LAYERS:
            pub = MEMORY_PUBLISHED[family][n]
            row = {"model": family, "layers": n}
            for j, T in enumerate(MEMORY_CONTEXTS[1:], start=1):
                row[f"{T}: write-up"] = "OOM" if pub[j] is None else f"+{pub[j] - pub[0]:,}"
                row[f"{T}: counted"] = number(table.loc[n, T] - table.loc[n, 512], sign="+")
            rows.append(row)
    return pd.DataFrame(rows).set_index(["model", "layers"])


def measure_memory_cuda(family: str, n_layer: int, context: int) -> float:
    """MB of ``torch.cuda.max_memory_allocated`` over one unbatched fp32 forward and backward without the LM head
    (NaN when it does not fit): :func:`lmcompanion.memory.measure_cuda` on the table's cell."""
    return memory.measure_cuda(memory_config(family, n_layer, context)) / 2**20


def memory_measured(limit_gb: float | None = None) -> dict[str, pd.DataFrame] | None:
    """The same cells measured on this machine's GPU (None without one); cells whose count exceeds ``limit_gb``
    (default: the GPU's memory) are not attempted (NaN)."""
    if not torch.cuda.is_available():
        return None
    limit = (limit_gb or torch.cuda.get_device_properties(0).total_memory / 2**30) * 1024
    counted = memory_counts()
    out = {}
    for family in ("mixer", "transformer"):
        out[family] = pd.DataFrame(
            [
                [
                    measure_memory_cuda(family, n, T) if counted[family].loc[n, T] < 0.9 * limit else float("nan")
                    for T in MEMORY_CONTEXTS
                ]
                for n in MEMORY_LAYERS
            ],
            index=pd.Index(MEMORY_LAYERS, name="layers"),
            columns=pd.Index(MEMORY_CONTEXTS, name="context"),
        )
    return out


def memory_figure(counted: Mapping[str, pd.DataFrame]):
    import matplotlib as mpl
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    for family, style in (("mixer", "-"), ("transformer", "--")):
        for n in MEMORY_LAYERS:
            ax.plot(MEMORY_CONTEXTS, counted[family].loc[n] / 1024, style, marker="o", label=f"{family}, {n} layers")
    ax.axhline(GPU_GB, color="grey", lw=0.8)
    ax.set(xscale="log", yscale="log", xlabel="context (tokens)", ylabel="GiB (counted, fp32, one pass)")
    ax.set_xticks(MEMORY_CONTEXTS, [str(t) for t in MEMORY_CONTEXTS])
    ax.xaxis.set_minor_formatter(mpl.ticker.NullFormatter())  # only the contexts of the table are labelled
    ax.legend(fontsize=7)
    return fig


# --- the hybrids' initial scales ------------------------------------------------------------------------------


def hybrid_init_table(names: Sequence[str], profile: str) -> pd.DataFrame:
    """At initialisation: the token embedding's standard deviation (Hugging Face's Llama init, std 0.02) beside the
    hybrid's masked-convolution bias (PyTorch's default, uniform within 1/sqrt(L)), which is added to every feature
    of its token's residual stream in every block, at this profile and at the write-up's size."""
    rows = []
    for name in names:
        for where in dict.fromkeys((profile, "paper")):
            cfg = experiments.config(name, where, device="cpu").model
            torch.manual_seed(0)
            model = models.build(cfg)
            bias = torch.cat([b.mixer.bias.detach().abs() for b in model.blocks])
            rows.append(
                {
                    "experiment": name,
                    "profile": where,
                    "context L": cfg.context_size,
                    "embedding std": number(model.wte.weight.detach().std().item()),
                    "mean |conv bias|": number(bias.mean().item()),
                    "bias / embedding": f"{number((bias.mean() / model.wte.weight.detach().std()).item())}x",
                }
            )
    return pd.DataFrame(rows).set_index(["experiment", "profile"])


# --- generation -------------------------------------------------------------------------------------------------

# The write-up's two prompts (its validation-story inputs; "<unk> tokens are newlines"), quoted.
PROMPTS = {
    "the orange ball": (
        "Once upon a time, there was a little boy named Tim. Tim had a big, orange ball. He loved his ball "
        "very much. One day, Tim met a girl named Sue. Sue had a pretty doll. Tim liked Sue's doll, and Sue"
        " liked Tim's orange ball.<unk>Tim and Sue thought about a trade. They would trade the ball for the"
        ' doll. Tim was not sure. He loved his orange ball. Sue said, "I promise to take care of your ball.'
        " You can play with it when you"
    ),
    "the ball game": (
        "One day, a little boy named Tim went to play with his friend, Sam. They wanted to play a game with"
        " a ball. The game was to see who could get the best score.<unk>Tim threw the ball and Sam tried to"
        " catch it. Sam missed the ball and it went far away. Sam was angry. He said, \"I don't like this "
        'game. I want to lie down and rest."<unk>Tim said, "Okay, let\'s lie down and rest. Then we can try'
        ' again to get a good score." They lay down under a big tree and looked at the sky. They saw birds '
        "flying and clouds moving.<unk>After a while, they got up and"
    ),
}
# "The actual next 50 tokens to this input (generated by ChatGPT)", quoted (the first prompt's continuation).
ACTUAL_NEXT = (
    'want." Tim said, "I promise to take care of your doll too."<unk>They did the trade. Tim played '
    "with the doll, and Sue played with the orange ball. But then, Sue's big dog came. The dog saw the "
    "orange ball and thought it was a toy. The dog bit the ball and it popped"
)


@dataclass(frozen=True)
class Sample:
    """One of the write-up's sample completions: the model as it describes it, the arm of that shape here, the
    prompt, and its completion, quoted."""

    model: str
    arm: str
    prompt: str
    completion: str
    section: str


# Every completion the write-up prints, in its order ("Mixer Inference", "Flat Mixers Train Faster", "Scaling
# Properties"), with the arm whose model has its shape.
SAMPLES = (
    Sample(
        "its mixer, d_model=256, n=8 (1.8 GB vRAM for 16-bit training)",
        "mixer/expanded_d256",
        "the orange ball",
        'come back."<unk>Tim thought about it and agreed. Sue gave the ball back to Tim. They played '
        "together, and Tim was very happy. Sue was happy too. They learned that sharing can make everyone "
        "happy. And that is how the orange ball can bring happiness to everyone.",
        "Mixer Inference",
    ),
    Sample(
        "its Llama, d_model=128, n=8 (10.7 GB vRAM for 16-bit training)",
        "mixer/llama_d128",
        "the orange ball",
        '\'ll find your ball."<unk>Tim was happy. He said, "Thank you, Sue. You are a good friend. You are '
        'a good friend." Sue gave Tim a new ball. Tim gave Sue a new ball. Sush was blue and shiny. Sush, '
        "Spot, and Spot. They played with their ball",
        "Mixer Inference",
    ),
    Sample(
        "its masked mixer (d_model=256)",
        "mixer/expanded_d256",
        "the ball game",
        "played a game of tag. Tim was fast, but Sam was faster. They ran and ran until they reached the "
        'finish line. Tim was tired but happy. Sam said, "Good job, Sam!" Sam smiled and said, "Good job, '
        'Tim!" They both smiled and hugged each other.',
        "Mixer Inference",
    ),
    Sample(
        "its transformer (d_model=128)",
        "mixer/llama_d128",
        "the ball game",
        "went home. They sat down on the grass and closed their eyes. They closed their eyes and fell "
        "asleep. Tim dreamed of the snow he found his way home. He felt safe and happy in his new score. He"
        " knew that he could always count on his score again. And he lived happily ever after.",
        "Mixer Inference",
    ),
    Sample(
        "the trained d_model=1024, n=8 flat mixer",
        "mixer/flat_d1024",
        "the ball game",
        "played a game of catch. Tim threw the ball to Sam, and Sam caught it. They laughed and played "
        "until the sun went down.<unk>At the end of the day, Tim and Sam were tired but happy. They went "
        "home and took a nap. They dreamed of playing catch again tomorrow. And they did.",
        "Flat Mixers Train Faster",
    ),
    Sample(
        "a 64-dimension model with 64 layers (2.867 evaluation loss)",
        "mixer/deep_d64",
        "the ball game",
        'played. They saw a man who had fallen down the street. Tim said, "Time to go home, please." Tim '
        'said, "It\'s okay to be scared, but we have to be careful." Tim nodded and they went home. They '
        "played in the big field and had fun. They had a great time playing in the snow.",
        "Scaling Properties",
    ),
    Sample(
        "a 1024-dimension model with 8 layers (1.837 evaluation loss)",
        "mixer/flat_d1024_b32",
        "the ball game",
        "played a game. They took turns throwing the ball to each other. Tim was good at catching the ball."
        " Sam was good at catching the ball. They laughed and played until it was time to go home.<unk>The "
        "moral of the story is that playing games is fun, but sometimes it's good to try new things and "
        "have fun with friends.",
        "Scaling Properties",
    ),
)
GENERATED = 50  # the write-up's "50 tokens" (49 iterations of its loop, n = 50)


def complete(run, prompt: str, n: int = GENERATED) -> str:
    """A greedy completion of one of the write-up's prompts by a run's model, through the fixed-window scheme (the
    prompt left-padded into the model's window, n - 1 tokens written one at a time, the last position's output never
    used); ``n`` is capped at half the context."""
    model = run.load_model()
    tok = stories.tokenizer(run.config.data)
    L = model.context_size
    k = max(2, min(n, L // 2))
    window, _ = stories.prompt_window(tok, PROMPTS[prompt], L, k)
    return tok.decode(fixed_window_generate(model, window, k)[0].tolist())


def samples_table(runs: Mapping[str, Sequence], n: int = GENERATED) -> pd.DataFrame:
    """Every completion the write-up prints beside ours from the arm of its model's shape (its first seed at this
    profile; "not run at this profile" where the profile does not run the arm), one row per sample, in the
    write-up's order; then the first prompt's actual continuation, quoted."""
    rows = []
    for s in SAMPLES:
        rs = runs.get(s.arm) or []
        rows.append(
            {
                "section": s.section,
                "prompt": s.prompt,
                "the write-up's model": s.model,
                "the write-up's completion": s.completion,
                "ours: experiment": s.arm,
                "ours: completion": complete(rs[0], s.prompt, n) if rs else "(not run at this profile)",
            }
        )
    rows.append(
        {
            "section": "Mixer Inference",
            "prompt": "the orange ball",
            "the write-up's model": "the actual next 50 tokens (generated by ChatGPT)",
            "the write-up's completion": ACTUAL_NEXT,
            "ours: experiment": "",
            "ours: completion": "",
        }
    )
    return pd.DataFrame(rows)


def prompt_table(run, n: int = GENERATED, prompts: Mapping[str, str] = PROMPTS) -> pd.DataFrame:
    """How each prompt enters the window at this profile: tokens of the prompt, tokens kept."""
    tok = stories.tokenizer(run.config.data)
    L = run.config.model.context_size
    k = max(2, min(n, L // 2))
    rows = []
    for name, text in prompts.items():
        window, kept = stories.prompt_window(tok, text, L, k)
        rows.append(
            {
                "prompt": name,
                "prompt tokens": len(tok.encode(text.replace("<unk>", "\n"))),
                "kept in the window": kept,
                "window": L,
                "generated": k - 1,
            }
        )
    return pd.DataFrame(rows).set_index("prompt")


# --- Johnson-Lindenstrauss -------------------------------------------------------------------------------------

# The write-up's estimates n > 8 ln(m) / eps^2 with eps = 1: (what m is, m as log10, the write-up's number).
JL_PUBLISHED = (
    ("possible English sentences (upper bound)", 570.0, 1312),
    ("tokens of Llama-3's training set (15 trillion)", math.log10(15e12), 240),
    ("a dataset a million times larger", math.log10(15e18), 352),
    ("next tokens of the truncated TinyStories train split (2M x 256)", math.log10(512e6), 160),
)


def jl_dimension(log10_m: float, eps: float = 1.0) -> float:
    """The Johnson-Lindenstrauss bound n > 8 ln(m) / eps^2, from log10(m) (m may be far beyond a float)."""
    return 8 * log10_m * math.log(10) / eps**2


def jl_table(eps: Sequence[float] = (1.0, 0.5, 0.1)) -> pd.DataFrame:
    rows = []
    for what, log10_m, pub in JL_PUBLISHED:
        row = {
            "points m": what,
            "log10 m": number(log10_m),
            "write-up": pub,
            "8 ln m (eps = 1)": count(jl_dimension(log10_m)),
            "ln m": number(log10_m * math.log(10)),
        }
        for e in eps[1:]:
            row[f"eps = {e:g}"] = count(jl_dimension(log10_m, e))
        rows.append(row)
    return pd.DataFrame(rows).set_index("points m")


__all__ = [
    "ACTUAL_NEXT",
    "GENERATED",
    "JL_PUBLISHED",
    "MEMORY_CONTEXTS",
    "MEMORY_LAYERS",
    "MEMORY_PUBLISHED",
    "PROMPTS",
    "SAMPLES",
    "Sample",
    "complete",
    "count_table",
    "hybrid_init_table",
    "growth_table",
    "independent_count",
    "jl_dimension",
    "jl_table",
    "liveness_table",
    "measure_memory_cuda",
    "memory_config",
    "memory_counts",
    "memory_figure",
    "memory_measured",
    "memory_table",
    "prompt_table",
    "samples_table",
    "unread_weights",
]
