# ---
# jupyter:
#   jupytext:
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # The 4×V100 experiments, hybrids and the original GPT
#
# The write-up's second compute unit is 2.25 hours on four V100s (DDP, sequences split over the GPUs), "somewhat
# comparable" to its 12 RTX 3060 hours. On it: the 4-head Llama ($d_{model}=512$) at 1.78 / 1.82 and, "with the
# larger learning rate of $\eta=0.005$", 1.76 / 1.79; the mixer with a 4-wide convolution kernel sliding over the
# feature axis (1.62 / 1.74); the Llama at 32 sequences per GPU, "nearly the same" (1.68 / 1.73); the kernel-4
# mixer with an extra linear layer after the embedding (1.61 / 1.71); a two-headed mixer (1.60 / 1.72); and the two
# transformer-mixer hybrids: sequential (the masked convolution applied to the attention output, both added to the
# residual: 1.53 / 1.59, against 1.55 / 1.61 "without the masked convolution (both with Flash Attention 2)") and
# parallel (the convolution beside attention: the same 1.55 / 1.61). No commit has $\eta = 0.005$; the code uses
# $5 \times 10^{-4}$; both are arms. On the RTX 3060 the write-up's hybrid beats its best transformer, the 4-head
# Llama (1.62 / 1.67 against 1.66 / 1.71), which itself beats the flat mixer (1.84 / 1.89): the write-up's own
# concession. And the original GPT learns far less than the mixer (2.04 / 1.96 with its first head setting, 1.96 /
# 1.89 with an optimized one, against "the 1.76/1.81 mixer loss").
#
# Each is a fixed-compute comparison at this profile's budget (the same budget as the RTX 3060 set: the write-up
# calls the two units comparable). Flash Attention is a kernel, not a model: it changes no counted FLOP, so at
# equal counted compute the Llama "with Flash Attention 2" is the tuned Llama itself; on a GPU our transformers use
# PyTorch's fused attention when it applies; on a CPU there is none, which matters for the time-based reading
# only.

# %% tags=["parameters"]
profile = "cpu"  # smoke | cpu | gpu | paper
device = "auto"  # auto | cpu | cuda
seed = 0  # first seed; the runs use seeds seed, seed+1, ...
n_seeds = None  # seeds per arm (None: the profile's default)
max_steps = None  # override the number of training steps (None: the profile's)
overrides = {}  # any other config field, by dotted key, e.g. {"train.lr": 1e-3}

# %%
from lmcompanion import experiments, nb, plots, tables
from lmcompanion.chapters import mixer

S = nb.setup(profile=profile, device=device, seed=seed, n_seeds=n_seeds, max_steps=max_steps, overrides=overrides)
print(S.describe())

# %%
NAMES = list(dict.fromkeys(mixer.V100 + mixer.HYBRID_3060 + mixer.GPT))
S.seed_table(NAMES)

# %%
mixer.compute.arm_table(NAMES, S.profile)

# %%
runs = S.arms(NAMES, by="name")
display(nb.this_page(S, mixer.by_title(runs)))
mixer.results({n: runs[n] for n in mixer.V100})

# %% mystnb={"figure": {"caption": "The 4×V100 set at this profile: loss against counted compute.", "name": "mixer-v100-compute"}}
fig = mixer.compute.loss_vs_compute(mixer.by_title({n: runs[n] for n in mixer.V100}))

# %% [markdown]
# The hybrids' masked convolution keeps PyTorch's default initialisation, as in the original (Hugging Face's Llama
# initialisation touches only linear and embedding layers). Its per-token bias is added to every feature of the
# residual stream in every block and starts larger than the token embeddings, so after normalisation the early
# residual stream is dominated by position-dependent constants until training shrinks the bias. The bias's bound is
# $1/\sqrt{L}$, so the smaller profiles' shorter contexts make it larger still, and their short runs may end before
# training has shrunk it; the write-up's 2.25 hours did not.

# %%
mixer.analysis.hybrid_init_table(["mixer/hybrid_sequential"], S.profile)

# %% [markdown]
# ## The hybrid on the RTX 3060

# %%
mixer.results({n: runs[n] for n in mixer.HYBRID_3060})

# %% [markdown]
# ## The original GPT against the mixer (RTX 3060)
#
# Hugging Face's `OpenAIGPTLMHeadModel` with its defaults, as the write-up's code builds it: learned positions,
# post-LayerNorm blocks, dropout 0.1, a tied head, and the tanh form of GELU (`afn="gelu"` maps to `gelu_new`).
# Its training loss is measured with dropout on, which is why the write-up's train number is above its test one; ours
# is measured in evaluation mode for every arm.
#
# The write-up trains it "using the optimized learning rate and $d_{model}$ values found for llama-style
# transformers": its text names $\eta = 0.005$ for its best Llama, the code runs $5 \times 10^{-4}$; both GPTs run
# at each rate, as the Llamas do. Its mixer, "the 1.76/1.81 mixer loss", is none of the write-up's other runs (no
# table or sentence has a mixer at 1.76 / 1.81), so it cannot be identified: the rows compare the flat
# $d_{model}=512$ mixer, of the GPT's width, and say so.

# %%
mixer.results({n: runs[n] for n in mixer.GPT})

# %% mystnb={"figure": {"caption": "The flat d=512 mixer and the original GPT: loss against step. Dashed: the unigram loss, what token frequencies alone give.", "name": "mixer-gpt-curves"}}
fig = plots.loss_curves(mixer.by_title({n: runs[n] for n in mixer.GPT}), reference=nb.unigram(runs))

# %% [markdown]
# ## What the hardware measured
#
# The write-up's verdict between mixers and tuned transformers depends on its hardware (mixers win on older GPUs;
# transformers with Flash Attention catch up). The comparisons above are at equal *counted* compute; the table
# below is the same runs at equal training time measured on this machine, which is what the write-up's own
# comparisons were.

# %% tags=["nbval-ignore-output"]
mixer.compute.equal_time_table({n: runs[n] for n in mixer.V100})

# %% [markdown]
# ## Verdicts of this page
#
# The claims this page decides (the verdict notebook gathers every claim of the chapter).

# %%
nb.verdict_table(nb.page_rows(S, "mixer", "05_v100", runs), "mixer", S.profile, S)

# %% [markdown]
# ## Provenance
#
# Where this page's numbers came from: the profile and seeds, the package's commit, the machine, and the data and
# tokenizers of the runs it used (each run's own record is its folder in the run store).

# %% tags=["nbval-ignore-output"]
nb.provenance(S)
