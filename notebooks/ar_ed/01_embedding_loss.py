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
# # Embedding loss: cosine against MSE against none
#
# The write-up's first comparison: the same encoder–decoder with a cosine-dissimilarity embedding loss, with an
# MSE embedding loss, and without one (all without positional subtraction). It reports that "the MSE embedding
# loss performed better than cosine dissimilarity in validation loss but worse in train loss", and that "both
# types of embedding loss performed better than an equivalent model without embedding loss".

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
ARMS = ["ar_ed/cosine", "ar_ed/mse", "ar_ed/no_loss"]
runs = S.arms(ARMS)
display(nb.this_page(S, runs))
tables.results(runs, published=nb.published(ARMS), aux=("aux/embedding", "embedding loss"))

# %% [markdown]
# Train and validation losses are estimated in eval mode (plain cross-entropy, no embedding loss), as in the
# write-up. *final* is the last estimate, which is what the write-up's tables report; *best* is the lowest.
# Each cell is the mean over seeds with the [lowest, highest] seed.

# %% mystnb={"figure": {"caption": "Train and validation loss with a cosine, an MSE, or no embedding loss ({glue:md}`seeds-ar-ed-embedding-loss-curves`). Dashed: the unigram loss, what token frequencies alone give.", "name": "ar-ed-embedding-loss-curves"}}
nb.caption("ar-ed-embedding-loss-curves", runs)
fig = plots.loss_curves(runs, reference=nb.unigram(runs))

# %% mystnb={"figure": {"caption": "The embedding loss during training (unscaled, logged every step it is recorded), for the two runs that have one. Log scale.", "name": "ar-ed-embedding-loss-values"}}
fig = plots.train_metric({k: v for k, v in runs.items() if k != "no embedding loss and no pos sub"}, "aux/embedding",
                         ylabel="embedding loss (unscaled)")

# %% [markdown]
# The write-up's embedding losses end near 4–9 × 10⁻⁹. Both sides of the loss pass through a LayerNorm with a
# learnable scale and bias that are not weight-decayed. The encoder output is detached, so the loss can only move
# the embeddings and those two LayerNorms, and it has a cheap way out: shrinking the scales drives both sides
# toward their biases. The curve above shows how far that collapse goes at this profile.

# %% [markdown]
# ## The verdict rows of this page
#
# The rows of the chapter's verdict table that this page's comparisons decide, with their verdicts and, folded, the runs that
# decide them (each arm's own runs, as on the verdict page).

# %%
nb.page_verdicts(S, "ar_ed", "01_embedding_loss")

# %% [markdown]
# ## Provenance
#
# Where this page's numbers came from: the profile and seeds, the package's commit, the machine, and the data and
# tokenizers of the runs it used (each run's own record is its folder in the run store).

# %% tags=["nbval-ignore-output"]
nb.provenance(S)
