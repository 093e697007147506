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
# # Johnson-Lindenstrauss estimates
#
# The write-up's background section bounds the dimension needed to represent $m$ points with the
# Johnson-Lindenstrauss lemma, $n > 8 \ln(m) / \epsilon^2$, read with $\epsilon = 1$: $10^{570}$ possible English
# sentences (“$8 \ln 10^{570} \approx 1312$”), the 15 trillion tokens of Llama-3's training set (about 240), a
# dataset a million times larger (about 352), and the 512M next tokens of its TinyStories training split (about
# 160). Computed here, with smaller $\epsilon$ beside them (the lemma holds for $0 < \epsilon < 1$, so
# $\epsilon = 1$ is its edge).
#
# This page trains nothing.

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
mixer.analysis.jl_table()

# %% [markdown]
# The same section estimates the size of "standard transformer model architectures" of those widths: "around 100
# million (350 hidden width) and 995 million (1300 hidden width) parameters". It does not say which architecture.
# We count the standard shapes of its time, declared before counting: GPT-2's four depths (its 50,257-token
# vocabulary, 1,024 positions, a tied head) and Llama 2 7B's (the one model its background names: 32 layers, a
# SwiGLU MLP of inner width $8d/3$ rounded up to a multiple of 256, 32,000 tokens, untied embeddings). The last
# line is a shape found afterwards by searching depths and vocabularies for both numbers: shown, not judged.

# %%
mixer.facts.width_estimates_table()

# %% [markdown]
# The first estimate is $\ln 10^{570} \approx 1312$, not $8 \ln 10^{570}$, which is about 10,500: the write-up's
# "$\approx 1312$" drops the factor 8 (its other three estimates keep it). The verdicts say which numbers agree.

# %%
nb.verdict_table(nb.page_rows(S, "mixer", "08_dimensions", {}), "mixer", S.profile, S)

# %% [markdown]
# ## Provenance
#
# Where this page's numbers came from: the profile and seeds, the package's commit, the machine, and the data and
# tokenizers of the runs it used (each run's own record is its folder in the run store).

# %% tags=["nbval-ignore-output"]
nb.provenance(S)
