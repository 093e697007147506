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
# # Against the decoder-only baselines
#
# The combined model against three decoder-only transformers: the baseline (more parameters), a *smaller
# baseline* with fewer parameters than the combined model (so that a better validation loss cannot be put down to
# size), and the baseline with 0.2 dropout. The write-up: "the new model outperformed the baseline in validation
# loss but underperformed in train loss", and it also beat the smaller and the dropout baselines on validation
# loss.

# %% tags=["parameters"]
profile = "cpu"  # smoke | cpu | gpu | paper
device = "auto"  # auto | cpu | cuda
seed = 0  # first seed; the runs use seeds seed, seed+1, ...
n_seeds = None  # seeds per arm (None: the profile's default)
max_steps = None  # override the number of training steps (None: the profile's)
overrides = {}  # any other config field, by dotted key, e.g. {"train.lr": 1e-3}

# %%
from lmcompanion import experiments, nb, plots, tables

S = nb.setup(profile=profile, device=device, seed=seed, n_seeds=n_seeds, max_steps=max_steps, overrides=overrides)
print(S.describe())

# %% [markdown]
# ## Parameter counts
#
# Counted as the write-up counts them: the position table is left out and the tied token/output matrix is
# counted once. The first columns are computed from the models at the write-up's size; the last is the size at
# this profile.

# %%
ARMS = ["ar_ed/mse_pos_sub", "ar_ed/baseline", "ar_ed/smaller_baseline", "ar_ed/dropout_baseline"]
nb.params_table(ARMS, S.profile)

# %% [markdown]
# ## The headline comparison
#
# The chapter's headline, the combined model against the baseline, at this profile's own protocol: the runs that
# decide the headline rows of the verdict page.

# %%
HEADLINE = list(experiments.headlines("ar_ed")[0].arms)
head = S.arms(HEADLINE)
tables.results(head, published=nb.published(HEADLINE))

# %% mystnb={"figure": {"caption": "Train and validation loss of the combined encoder-decoder and the decoder-only baseline, the headline's runs ({glue:md}`seeds-ar-ed-headline-curves`). Dashed: the unigram loss, what token frequencies alone give.", "name": "ar-ed-headline-curves"}}
nb.caption("ar-ed-headline-curves", head)
fig = plots.loss_curves(head, reference=nb.unigram(head))

# %% [markdown]
# ## All four
#
# The combined model against all three baselines. Where the smaller and the dropout baselines only illustrate (at
# `cpu`), every run of this section is read at their protocol, as the note under the next cell says.

# %%
runs = S.arms(ARMS)
display(nb.this_page(S, runs))
tables.results(runs, published=nb.published(ARMS))

# %% mystnb={"figure": {"caption": "Train and validation loss of the combined encoder-decoder and the three decoder-only baselines ({glue:md}`seeds-ar-ed-baselines-curves`). Dashed: the unigram loss, what token frequencies alone give.", "name": "ar-ed-baselines-curves"}}
nb.caption("ar-ed-baselines-curves", runs)
fig = plots.loss_curves(runs, reference=nb.unigram(runs))

# %% [markdown]
# ## Time and memory
#
# The write-up: "both completed in a similar amount of time with similar memory demands, but the baseline had more
# parameters". It gives no numbers, so the verdicts state the margin they allow: a factor of 1.25 either way.
#
# **Memory** is counted by the method every chapter uses (`lmcompanion.memory`): one training step of one
# micro-batch (the loss with the embedding loss, gradients, AdamW's two moments), in fp32 without fused attention,
# at the write-up's size and micro-batch (50 sequences of 200 tokens), whatever the profile of this page. The
# write-up's runs trained under bf16 autocast with `torch.compile`, which hold less; a run trained on a GPU records
# its own peak, shown in the last column once recorded runs are imported.
#
# **Time** is measured on the verdict page, side by side in one process: the two models' training steps in
# interleaved rounds, so that both see the same load of the machine.

# %%
from lmcompanion.chapters import cost

by_name = dict(zip(ARMS, runs.values()))
cost.memory_table(ARMS[:2], S.profile, by_name)

# %% tags=["nbval-ignore-output", "hide-input"]
# (a sentence computed from the runs; the order of close arms can differ between machines)
nb.shows(tables.ranking_sentence(runs, published=nb.published(ARMS)))

# %% [markdown]
# ## The verdict rows of this page
#
# The rows of the chapter's verdict table that this page's comparisons decide, with their verdicts and, folded, the runs that
# decide them (each arm's own runs, as on the verdict page).

# %%
nb.page_verdicts(S, "ar_ed", "04_baselines")

# %% [markdown]
# ## Provenance
#
# Where this page's numbers came from: the profile and seeds, the package's commit, the machine, and the data and
# tokenizers of the runs it used (each run's own record is its folder in the run store).

# %% tags=["nbval-ignore-output"]
nb.provenance(S)
