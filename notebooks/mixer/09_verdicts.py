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
# # Verdicts
#
# Every claim of the write-up's causal-language-model part beside our measurement, judged by the book's rule (the
# prologue's [verdict rule](verdict-rule)). Each verdict is a badge in words with the scale it was reached at, then
# the effect and p; every row's numbers, how far its arms learned and the runs that decided it are folded under
# the table.
#
# :::{dropdown} How a row is decided
# :class-container: lmc-fold
#
# Each row gives the seeds per arm, the effect (mean difference, our
# claimed-better arm minus the other) with its standard error, and the chance that a difference at least this large
# would appear if the two arms were in truth equal. A claim **holds** or **does not hold** only when that chance is
# at most 5%; otherwise it is **inconclusive** at the profile's scale (each verdict names it), with the direction the
# data lean. Claims of equality ("nearly identical", "nearly the same") are judged against a stated margin, the two
# losses within 2% of each other, by two one-sided tests (the row's effect gives the margin); claims that something
# brings no gain ("does not yield any benefit", "no apparent fixed-compute loss reduction") or that one arm is no
# worse ("approximately as or slightly more efficient") are judged against the same margin, one-sided: such a claim
# holds when the difference is significantly within it and does not hold when a significant difference exceeds it,
# at 5%. A comparison is decided only where every arm it compares has learned: every seed at least half a
# nat below the unigram loss (the loss of token frequencies alone) at the step the row compares; a row with an arm run
# with one seed illustrates and is not decided. Claims whose arms this profile does not run (the `cpu` budget would
# give them fewer than forty steps) are listed as such, with the write-up's numbers. Computed facts (counts, the
# mask, memory, the estimates) are exact. Which claim of the write-up each row tests, and why the others are not
# tested, is the [claims ledger](claims-ledger). The runs are the ones the previous notebooks made, reused from the
# run store.
# :::

# %% tags=["parameters"]
profile = "cpu"  # smoke | cpu | gpu | paper
device = "auto"  # auto | cpu | cuda
seed = 0  # first seed; the runs use seeds seed, seed+1, ...
n_seeds = None  # seeds per arm (None: the profile's default)
max_steps = None  # override the number of training steps (None: the profile's)
overrides = {}  # any other config field, by dotted key, e.g. {"train.lr": 1e-3}

# %%
from lmcompanion import claims, experiments, nb
from lmcompanion.chapters import mixer

S = nb.setup(profile=profile, device=device, seed=seed, n_seeds=n_seeds, max_steps=max_steps, overrides=overrides)
print(S.describe())
NAMES = experiments.names("mixer")

# %% tags=["nbval-ignore-output"]
# (the rows on time per step are measured on this machine and vary from machine to machine: the heads' steps are
# timed side by side here, with 16 heads, each pair in one process; their rows are shown with the timings)
runs, rows = nb.verdict_page(S, "mixer")
nb.show_verdicts(S, "mixer", rows, apart=claims.timed_claims("mixer"))

# %% [markdown]
# ## What each arm keeps of the write-up's proportions
#
# Each arm at this profile against its size in the write-up: width, blocks, context and batch as fractions of the
# write-up's, its context over its width, a transformer's heads and their size, and the steps the equal-compute
# budget buys it, relative to the flat $d_{model}=512$ mixer's, here and at the write-up's size (the proportion a
# fixed-compute comparison rests on). Arms the `cpu` budget would give fewer than forty steps are not run there.

# %%
nb.fold(f"Each arm's proportions at `{S.profile}` and in the write-up", mixer.compute.proportions_table(NAMES, S.profile))

# %% [markdown]
# ## The compute of the gpu and paper profiles
#
# This chapter's own tables: the compute budget of each profile, and the time of the `gpu` and `paper` profiles on
# one H100 estimated from counted FLOPs (an estimate, not a measurement: a conservative share of the bf16 peak plus
# a fixed cost per step and per run), for the runs planned there, in all and by notebook.

# %%
nb.fold("The compute budget and estimated time of the `gpu` profile (in all and by notebook)",
        mixer.compute.budget_table("gpu"), mixer.compute.time_estimate("gpu").loc[["chapter (sum)"]],
        mixer.notebook_estimates("gpu"))

# %%
nb.fold("The compute budget and estimated time of the `paper` profile", mixer.compute.budget_table("paper"),
        mixer.compute.time_estimate("paper").loc[["chapter (sum)"]])

# %% [markdown]
# ## Appendix
#
# Recorded runs at other profiles, how far this profile is from the write-up and in which settings, what re-running
# the chapter at the paper's scale takes, and where this page's numbers came from.

# %% tags=["nbval-ignore-output"]
nb.appendix(S, "mixer", list(runs), runs)
