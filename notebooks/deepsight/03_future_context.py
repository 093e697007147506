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
# # How far ahead: δ from 3 to 26
#
# The write-up's second table: the MSE planning loss with δ ∈ {3, 6, 11, 16, 26}. It reports "better train loss
# performance is correlated with bigger future context size. Val loss is not very correlated." Its train losses
# fall from 2.797 (δ = 3) to 2.779 (δ = 26), and its validation losses range from 3.340 to 3.357 (the verdict rows
# give the rank correlation of each with δ).

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
from lmcompanion.experiments.deepsight import DELTAS

ARMS = [f"deepsight/mse_d{d}" for d in DELTAS]
runs = S.arms(ARMS)
display(nb.this_page(S, runs))
tables.results(runs, published=nb.published(ARMS), aux=("aux/planning", "planning loss"))

# %% mystnb={"figure": {"caption": "Validation loss against training step for each future context size delta, as the write-up draws its comparison ({glue:md}`seeds-deepsight-delta-curves`). Dashed: the unigram loss, what token frequencies alone give.", "name": "deepsight-delta-curves"}}
nb.caption("deepsight-delta-curves", runs)
fig = plots.loss_curves(runs, splits=("val",), reference=nb.unigram(runs))

# %% [markdown]
# The final values of those curves, and of the train loss, against δ:

# %% mystnb={"figure": {"caption": "Final train and validation loss against the future context size delta ({glue:md}`seeds-deepsight-delta-sweep`).", "name": "deepsight-delta-sweep"}}
nb.caption("deepsight-delta-sweep", runs, spread="bars")
fig = plots.sweep(DELTAS, {split: [tables.final(r, split) for r in runs.values()] for split in ("train", "val")},
                  xlabel="future context size delta", ylabel="final loss (eval mode)")

# %% [markdown]
# The rank correlation (Spearman) between δ and the seed-mean final loss, with the write-up's value computed
# from its table the same way:

# %%
from lmcompanion.chapters import deepsight

deepsight.delta_correlations(S.arms(ARMS, by="name"))

# %% [markdown]
# ## The verdict rows of this page
#
# The rows of the chapter's verdict table that this page's comparisons decide, with their verdicts and, folded, the runs that
# decide them (each arm's own runs, as on the verdict page).

# %%
nb.page_verdicts(S, "deepsight", "03_future_context")

# %% [markdown]
# ## Provenance
#
# Where this page's numbers came from: the profile and seeds, the package's commit, the machine, and the data and
# tokenizers of the runs it used (each run's own record is its folder in the run store).

# %% tags=["nbval-ignore-output"]
nb.provenance(S)
