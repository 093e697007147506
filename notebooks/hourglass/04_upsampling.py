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
# # Upsampling, DenseFormer and the latent loss
#
# Two ways back up from the latents: **repeat** (each group is rebuilt from the previous group's latents, tiled, plus
# the group's own kept tokens) and **attention** (as in the Hourglass Transformer: the residual plus the upsampled
# sequence attends over the upsampled sequence). The write-up: attention "scales better with compute" and costs more;
# DenseFormer in the latent stack helps attention upsampling only (and hurts repeat); the Mirasol latent loss does
# not help (448-96, 12 soft experts; the table's write-up column). The `cpu` and `smoke` profiles leave out
# DenseFormer with repeat upsampling to stay within their time budget.

# %% tags=["parameters"]
profile = "cpu"  # smoke | cpu | gpu | paper
device = "auto"  # auto | cpu | cuda
seed = 0  # first seed; the runs use seeds seed, seed+1, ...
n_seeds = None  # seeds per arm (None: the profile's default)
max_steps = None  # override the number of training steps (None: the profile's)
overrides = {}  # any other config field, by dotted key, e.g. {"train.lr": 1e-3}

# %%
from lmcompanion import experiments, nb, plots, tables
from lmcompanion.chapters import hourglass

S = nb.setup(profile=profile, device=device, seed=seed, n_seeds=n_seeds, max_steps=max_steps, overrides=overrides)
print(S.describe())

# %%
ARMS = [n for n in hourglass.MODES if experiments.runs_at(n, S.profile)]
print(hourglass.skipped_note(hourglass.MODES, S.profile))
nb.params_table(ARMS, S.profile)

# %%
runs = S.arms(ARMS)
tables.results(runs, published=nb.published(ARMS))

# %% mystnb={"figure": {"caption": "Validation loss with attention and repeat upsampling, with and without DenseFormer, and with the latent loss (mean over seeds, bands span the seeds); dashed: the unigram loss of the validation split, what character frequencies alone give.", "name": "hourglass-upsampling-curves"}}
fig = plots.loss_curves(runs, splits=("val",), reference=hourglass.unigram_reference(runs))

# %% tags=["nbval-ignore-output"]
hourglass.cost_table(runs)

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
