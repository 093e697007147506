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
# # The headline: against the vanilla transformer
#
# The write-up's `best_models.png`: validation loss against wall-clock minutes for its best hierarchical models and a
# nanoGPT-style transformer of 20.48M parameters (26 layers, width 256), the transformer at one epoch and the others
# at two (same schedule, half the updates). It claims the same or better loss at far lower cost, and "at least 50%
# flops reduction at inference" for attention upsampling, more for repeat. Here the best attention model (384-32,
# 6 soft experts) and the best repeat model (512-32, 6 soft experts) against the vanilla transformer, as loss against
# measured minutes and against counted training FLOPs; then the inference FLOPs, counted at the write-up's sizes.

# %% tags=["parameters"]
profile = "cpu"  # smoke | cpu | gpu | paper
device = "auto"  # auto | cpu | cuda
seed = 0  # first seed; the runs use seeds seed, seed+1, ...
n_seeds = None  # seeds per arm (None: the profile's default)
max_steps = None  # override the number of training steps (None: the profile's)
overrides = {}  # any other config field, by dotted key, e.g. {"train.lr": 1e-3}

# %%
from lmcompanion import nb, plots, tables
from lmcompanion.chapters import hourglass

S = nb.setup(profile=profile, device=device, seed=seed, n_seeds=n_seeds, max_steps=max_steps, overrides=overrides)
print(S.describe())

# %%
ARMS = list(hourglass.HEADLINE)
nb.params_table(ARMS, S.profile)

# %%
runs = S.arms(ARMS)
tables.results(runs, published=nb.published(ARMS))

# %% [markdown]
# The write-up's plotted losses are scored as its code scores them, on the last token of each window only (the
# protocol notebook). The same windows scored that way:

# %%
hourglass.protocol_table(runs, ("val",))

# %% mystnb={"figure": {"caption": "Validation loss against training FLOPs (counted: updates x tokens per update x training FLOPs per token). Mean over seeds, bands span the seeds. Dashed: the unigram loss, what character frequencies alone give.", "name": "hourglass-headline-flops"}}
curves = hourglass.cost_curves(runs)
fig = plots.curves(curves, "FLOPs", {"val": "validation loss against training FLOPs"}, xlabel="training FLOPs",
                   ylabel="cross-entropy (nats/token)", logx=True, reference=nb.unigram(runs, ("val",)))

# %% tags=["nbval-ignore-output"] mystnb={"figure": {"caption": "Validation loss against training minutes measured in this build (update number x the arm's mean seconds per update). The axis depends on the machine. Dashed: the unigram loss.", "name": "hourglass-headline-minutes"}}
fig = plots.curves(curves, "minutes", {"val": "validation loss against wall-clock"}, xlabel="training minutes",
                   ylabel="cross-entropy (nats/token)", reference=nb.unigram(runs, ("val",)))

# %% tags=["nbval-ignore-output"]
hourglass.cost_table(runs)

# %% [markdown]
# ## Inference FLOPs, counted
#
# Forward FLOPs per token, counted by running each model once under PyTorch's FLOP counter at the write-up's sizes
# (768 tokens; the `paper` profile), whatever the profile of this page.

# %%
hourglass.inference_table(ARMS[1:])

# %% [markdown]
# ## Test split

# %%
hourglass.test_table(runs)

# %% tags=["nbval-ignore-output", "hide-input"]
# (a sentence computed from the runs; the order of close arms can differ between machines)
nb.shows(tables.ranking_sentence(runs, published=nb.published(ARMS)))

# %% [markdown]
# ## Provenance
#
# Where this page's numbers came from: the profile and seeds, the package's commit, the machine, and the data and
# tokenizers of the runs it used (each run's own record is its folder in the run store).

# %% tags=["nbval-ignore-output"]
nb.provenance(S)
