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
# # Positional-embedding subtraction
#
# Before the tied output layer, the embedding of the *next* position is subtracted from the final hidden state,
# "similar to weight tying of token embedding but for positional embedding". The write-up reports that "adding
# the positional embedding subtraction strictly improved performance": 2.979 / 3.381 (train / val) against
# 3.043 / 3.413 without it. Neither model has an embedding loss.

# %% tags=["parameters"]
profile = "cpu"  # smoke | cpu | gpu | paper
device = "auto"  # auto | cpu | cuda
seed = 0  # first seed; the runs use seeds seed, seed+1, ...
n_seeds = None  # seeds per arm (None: the profile's default)
max_steps = None  # override the number of training steps (None: the profile's)
overrides = {}  # any other config field, by dotted key, e.g. {"train.lr": 1e-3}

# %%
from lmcompanion import nb, plots, tables

S = nb.setup(profile=profile, device=device, seed=seed, n_seeds=n_seeds, max_steps=max_steps, overrides=overrides)
print(S.describe())

# %%
ARMS = ["ar_ed/pos_sub", "ar_ed/no_loss"]
runs = S.arms(ARMS)
display(nb.this_page(S, runs))
tables.results(runs, published=nb.published(ARMS))

# %% mystnb={"figure": {"caption": "Train and validation loss with and without positional-embedding subtraction (no embedding loss in either; {glue:md}`seeds-ar-ed-pos-sub-curves`). Dashed: the unigram loss, what token frequencies alone give.", "name": "ar-ed-pos-sub-curves"}}
nb.caption("ar-ed-pos-sub-curves", runs)
fig = plots.loss_curves(runs, reference=nb.unigram(runs))

# %% [markdown]
# ## The verdict rows of this page
#
# The rows of the chapter's verdict table that this page's comparisons decide, with their verdicts and, folded, the runs that
# decide them (each arm's own runs, as on the verdict page).

# %%
nb.page_verdicts(S, "ar_ed", "02_pos_sub")

# %% [markdown]
# ## Provenance
#
# Where this page's numbers came from: the profile and seeds, the package's commit, the machine, and the data and
# tokenizers of the runs it used (each run's own record is its folder in the run store).

# %% tags=["nbval-ignore-output"]
nb.provenance(S)
