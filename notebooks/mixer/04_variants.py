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
# # Parallel convolutions and the positional channel
#
# Two variants of the flat mixer. **Parallel convolutions**: $n$ masked $L \times L$ convolutions side by side,
# each through GELU, summed. The write-up: at equal steps 2 of them beat the flat mixer ($d_{model}=512$: 1.845
# against 1.886 training loss at 354,000 steps), but being slower per step they reach "a very similar or perhaps
# slightly worse fixed-compute loss", and 4 give "no apparent fixed-compute loss reduction".
#
# **Positional channel**: one extra feature channel holding the raw token position ($-L/2 \dots L/2-1$), written
# once at the input ("virtually no change in performance") or re-written after every block (worse: 1.94 / 2.10),
# at $d_{model}=1024$. The original code re-writes it after every block; the write-up's listing writes it once; both
# are options here (`positional="first"` / `"every"`).

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
NAMES = list(dict.fromkeys(mixer.PARALLEL + mixer.POSITIONAL))
S.seed_table(NAMES)

# %%
mixer.compute.arm_table(NAMES, S.profile)

# %%
runs = S.arms(NAMES, by="name")
display(nb.this_page(S, mixer.by_title(runs)))

# %% [markdown]
# ## Parallel convolutions

# %%
mixer.results({n: runs[n] for n in mixer.PARALLEL})

# %%
mixer.compute.equal_steps_table(runs, [(mixer.PARALLEL[1], mixer.PARALLEL[0]), (mixer.PARALLEL[2], mixer.PARALLEL[0])])

# %% mystnb={"figure": {"caption": "Flat mixer and 2 or 4 parallel convolutions: train and validation loss against step (equal steps; the next figure shows the same runs against counted compute). Dashed: the unigram loss, what token frequencies alone give.", "name": "mixer-parallel-curves"}}
fig = plots.loss_curves(mixer.by_title({n: runs[n] for n in mixer.PARALLEL}), reference=nb.unigram(runs))

# %% mystnb={"figure": {"caption": "The same runs against counted compute.", "name": "mixer-parallel-compute"}}
fig = mixer.compute.loss_vs_compute(mixer.by_title({n: runs[n] for n in mixer.PARALLEL}))

# %% [markdown]
# ## The positional channel

# %%
mixer.results({n: runs[n] for n in mixer.POSITIONAL})

# %% mystnb={"figure": {"caption": "No positional channel, one written at the input, one re-written after every block. Dashed: the unigram loss, what token frequencies alone give.", "name": "mixer-positional-curves"}}
fig = plots.loss_curves(mixer.by_title({n: runs[n] for n in mixer.POSITIONAL}), reference=nb.unigram(runs))

# %% [markdown]
# ## Verdicts of this page
#
# The claims this page decides (the verdict notebook gathers every claim of the chapter).

# %%
rows = nb.page_rows(S, "mixer", "04_variants", runs)
nb.verdict_table(mixer.timed(rows, keep=False), "mixer", S.profile, S)

# %% [markdown]
# The claim about time per step, decided by the time measured on this machine (it can differ on another).

# %% tags=["nbval-ignore-output"]
nb.verdict_table(mixer.timed(rows), "mixer", S.profile, S)

# %% [markdown]
# ## Provenance
#
# Where this page's numbers came from: the profile and seeds, the package's commit, the machine, and the data and
# tokenizers of the runs it used (each run's own record is its folder in the run store).

# %% tags=["nbval-ignore-output"]
nb.provenance(S)
