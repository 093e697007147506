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
# # MSE, cosine or no planning loss
#
# The write-up's first table: δ = 11 with an MSE planning loss, with a cosine-dissimilarity one, and without a
# planning loss. It reports "MSE ... performed better than cosine dissimilarity in both validation and train
# loss. MSE outperformed an equivalent model without embedding loss. Cosine dissimilarity outperformed an
# equivalent model without embedding loss in train loss and slightly underperformed in val loss."

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
ARMS = ["deepsight/cosine_d11", "deepsight/mse_d11", "deepsight/no_loss"]
runs = S.arms(ARMS)
display(nb.this_page(S, runs))
tables.results(runs, published=nb.published(ARMS), aux=("aux/planning", "planning loss"))

# %% mystnb={"figure": {"caption": "Train and validation loss with an MSE, a cosine, or no planning loss at delta = 11 ({glue:md}`seeds-deepsight-loss-types-curves`). Dashed: the unigram loss, what token frequencies alone give.", "name": "deepsight-loss-types-curves"}}
nb.caption("deepsight-loss-types-curves", runs)
fig = plots.loss_curves(runs, reference=nb.unigram(runs))

# %% mystnb={"figure": {"caption": "The planning loss (unscaled) during training. Log scale.", "name": "deepsight-planning-loss-curves"}}
fig = plots.train_metric(S.arms(["deepsight/cosine_d11", "deepsight/mse_d11"]), "aux/planning",
                         ylabel="planning loss (unscaled)")

# %% [markdown]
# ## The verdict rows of this page
#
# The rows of the chapter's verdict table that this page's comparisons decide, with their verdicts and, folded, the runs that
# decide them (each arm's own runs, as on the verdict page).

# %%
nb.page_verdicts(S, "deepsight", "02_loss_types")

# %% [markdown]
# ## Provenance
#
# Where this page's numbers came from: the profile and seeds, the package's commit, the machine, and the data and
# tokenizers of the runs it used (each run's own record is its folder in the run store).

# %% tags=["nbval-ignore-output"]
nb.provenance(S)
