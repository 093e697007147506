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
# # Both combined
#
# The MSE embedding loss (now with coefficient 8) together with positional subtraction. The write-up reports that
# "combining both MSE embedding loss and positional embedding subtraction further improved validation loss":
# 3.378, against 3.381 with subtraction alone and 3.385 with the MSE loss alone. Its conclusions add that, against
# the bare encoder–decoder (no embedding loss, no subtraction: 3.413), "when coupled with embedding loss and
# positional embedding subtraction, performance improved even more", so the bare model is shown here too.

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
ARMS = ["ar_ed/pos_sub", "ar_ed/mse", "ar_ed/mse_pos_sub", "ar_ed/no_loss"]
runs = S.arms(ARMS)
display(nb.this_page(S, runs))
tables.results(runs, published=nb.published(ARMS), aux=("aux/embedding", "embedding loss"))

# %% mystnb={"figure": {"caption": "Train and validation loss of subtraction alone, the MSE embedding loss alone, both combined, and neither (the bare encoder-decoder) ({glue:md}`seeds-ar-ed-combined-curves`). Dashed: the unigram loss, what token frequencies alone give.", "name": "ar-ed-combined-curves"}}
nb.caption("ar-ed-combined-curves", runs)
fig = plots.loss_curves(runs, reference=nb.unigram(runs))

# %% mystnb={"figure": {"caption": "The embedding loss (unscaled) of the MSE runs with coefficient 1 (no subtraction) and coefficient 8 (with subtraction). Log scale.", "name": "ar-ed-combined-embedding-loss"}}
fig = plots.train_metric({k: v for k, v in runs.items() if v[0].config.model.embedding_loss_type != "NONE"},
                         "aux/embedding",
                         ylabel="embedding loss (unscaled)")

# %% [markdown]
# ## The verdict rows of this page
#
# The rows of the chapter's verdict table that this page's comparisons decide, with their verdicts and, folded, the runs that
# decide them (each arm's own runs, as on the verdict page).

# %%
nb.page_verdicts(S, "ar_ed", "03_combined")

# %% [markdown]
# ## Provenance
#
# Where this page's numbers came from: the profile and seeds, the package's commit, the machine, and the data and
# tokenizers of the runs it used (each run's own record is its folder in the run store).

# %% tags=["nbval-ignore-output"]
nb.provenance(S)
