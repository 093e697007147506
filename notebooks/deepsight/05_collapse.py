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
# # Why the planning loss is so small
#
# The write-up's final planning losses are 4.841 × 10⁻⁹ to 6.999 × 10⁻⁹ (its tables), and its chart shows the loss
# near zero within about
# 2,000 steps. Both sides of the loss pass through a LayerNorm with a learnable gain γ and bias β, and neither
# is weight-decayed. Their difference is γ₁·x̂ + β₁ − (γ₂·ŷ + β₂), where x̂ and ŷ are the normalised encoder
# output and planning context. The loss can therefore reach zero without any planning: shrink both gains to zero
# and make the two biases equal. This notebook measures how fast the loss falls, and what the trained LayerNorms
# look like at the end. Before training, every γ is 1 and every β is 0.

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
from lmcompanion.chapters.deepsight import PLANNING

runs = S.arms(PLANNING)
display(nb.this_page(S, runs))

# %% mystnb={"figure": {"caption": "The planning loss (unscaled) of every arm with one ({glue:md}`seeds-deepsight-collapse-curves`). Log scale.", "name": "deepsight-collapse-curves"}}
nb.caption("deepsight-collapse-curves", runs)
fig = plots.train_metric(runs, "aux/planning", ylabel="planning loss (unscaled)")

# %%
from lmcompanion.chapters import deepsight

deepsight.collapse_table(runs)

# %% [markdown]
# Reading the table: if the loss collapses by the mechanism above, the final gains are near zero next to their
# initial value of 1, and the bias gap is near zero. If the gains stay near 1 while the loss falls, the encoder is
# really matching its planning context. The verdict notebook turns the final values into a verdict on the write-up's
# final planning losses.

# %% tags=["nbval-ignore-output", "hide-input"]
# (a sentence computed from the runs; its last digits can differ between machines)
nb.shows(deepsight.collapse_sentence(runs))

# %% [markdown]
# ## The verdict rows of this page
#
# The rows of the chapter's verdict table that this page's comparisons decide, with their verdicts and, folded, the runs that
# decide them (each arm's own runs, as on the verdict page).

# %%
nb.page_verdicts(S, "deepsight", "05_collapse")

# %% [markdown]
# ## Provenance
#
# Where this page's numbers came from: the profile and seeds, the package's commit, the machine, and the data and
# tokenizers of the runs it used (each run's own record is its folder in the run store).

# %% tags=["nbval-ignore-output"]
nb.provenance(S)
