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
# # Encoder and latent sequence lengths
#
# "Seq Length A-B" is the number of tokens after the first compression (A = groups x latents kept per group at the
# first level) and after the second (B, the latent stack's length). The write-up finds that longer encoder and latent
# lengths help (with attention upsampling and 6 soft experts; its numbers are in the table's write-up column).
# At the smaller profiles every length is scaled with the context, so each group keeps the write-up's latents per
# token. Here: 384-32 against 512-32 (encoder length) and 448-32 against 448-96 (latent length).

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
ARMS = list(hourglass.LENGTHS)
nb.params_table(ARMS, S.profile)

# %%
runs = S.arms(ARMS)
tables.results(runs, published=nb.published(ARMS))

# %% mystnb={"figure": {"caption": "Validation loss for the four lengths (mean over seeds, bands span the seeds); dashed: the unigram loss of the validation split, what character frequencies alone give.", "name": "hourglass-lengths-curves"}}
fig = plots.loss_curves(runs, splits=("val",), reference=hourglass.unigram_reference(runs))

# %% [markdown]
# ## Test split

# %%
hourglass.test_table(runs)

# %% [markdown]
# ## Provenance
#
# Where this page's numbers came from: the profile and seeds, the package's commit, the machine, and the data and
# tokenizers of the runs it used (each run's own record is its folder in the run store).

# %% tags=["nbval-ignore-output"]
nb.provenance(S)
