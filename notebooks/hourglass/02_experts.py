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
# # Soft experts: how many, how wide, how often, shared, how merged
#
# The write-up's experts sweep runs the 448-96 model with attention upsampling and 0 to 12 soft experts in every
# fourth latent block: "more experts help up to about 6" (its numbers are in the tables' write-up columns). It also
# finds that bigger expert MLPs help, that soft experts in more layers help with attention upsampling, and that
# shared experts "match" non-shared ones at lower cost. Here: 0, 6 and 12 experts; 6 experts with the expert MLP at full width
# (d = n instead of n/6); 6 experts in every latent block; and 6 experts with no shared expert against the run
# config's one shared expert (an expert applied to every channel: one channel fewer to attend and merge).
#
# The channels are merged by "a convex combination ... with the coefficients coming from a softmax applied to them";
# "merging via max and mean of the features was also considered, but ... this performed less well than the chosen
# version". Two arms merge the anchor's channels by their elementwise maximum and by their mean instead
# (`expert_merge`; the original's code has only the softmax). The `cpu` and `smoke` profiles leave out the
# full-width, every-block and merge arms to stay within their time budget.

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
ARMS = [n for n in hourglass.EXPERTS + hourglass.EXPERT_KNOBS + hourglass.MERGES if experiments.runs_at(n, S.profile)]
print(hourglass.skipped_note(hourglass.EXPERTS + hourglass.EXPERT_KNOBS + hourglass.MERGES, S.profile))
nb.params_table(ARMS, S.profile)

# %% [markdown]
# The write-up's "base model of 19.55M without soft experts" is the run config (256-32, repeat upsampling) without
# them. Its count, computed from the model as the original counts (position tables out, the parameters it builds and
# never reads in; the verdict notebook has the row):

# %%
nb.params_table([hourglass.BASE], S.profile)

# %%
runs = S.arms(ARMS)
tables.results(runs, published=nb.published(ARMS))

# %% mystnb={"figure": {"caption": "Final validation loss against the number of soft experts (448-96, attention upsampling; mean over seeds, bars span the seeds).", "name": "hourglass-experts-sweep"}}
by_name = dict(zip(ARMS, runs.values()))
fig = plots.sweep(hourglass.EXPERT_COUNTS, {"val loss": [tables.final(by_name[n], "val") for n in hourglass.EXPERTS]},
                  xlabel="soft experts (every 4th latent block)", ylabel="cross-entropy (nats/token)")

# %% mystnb={"figure": {"caption": "Validation loss during training for every arm of this notebook (mean over seeds, bands span the seeds); dashed: the unigram loss of the validation split, what character frequencies alone give.", "name": "hourglass-experts-curves"}}
fig = plots.loss_curves(runs, splits=("val",), reference=hourglass.unigram_reference(runs))

# %% [markdown]
# ## Time per run
#
# Shared experts are claimed to cost less: training minutes per run, measured in this build.

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
