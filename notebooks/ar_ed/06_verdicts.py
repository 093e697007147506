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
# Every claim of the write-up beside our measurement, judged by the book's rule (see the prologue's
# [verdict rule](verdict-rule)): each row gives the seeds per arm, the effect (mean difference, our claimed-better
# arm minus the other) with its standard error, and the chance that a difference at least this large would appear if
# the two arms were in truth equal. A claim **holds** or **does not hold** only when that chance is at most 5%;
# otherwise it is **inconclusive at this scale**, with the direction the data lean. The runs are the ones the
# previous notebooks made, reused from the run store.

# %% tags=["parameters"]
profile = "cpu"  # smoke | cpu | gpu | paper
device = "auto"  # auto | cpu | cuda
seed = 0  # first seed; the runs use seeds seed, seed+1, ...
n_seeds = None  # seeds per arm (None: the profile's default)
max_steps = None  # override the number of training steps (None: the profile's)
overrides = {}  # any other config field, by dotted key, e.g. {"train.lr": 1e-3}

# %%
from lmcompanion import claims, nb

S = nb.setup(profile=profile, device=device, seed=seed, n_seeds=n_seeds, max_steps=max_steps, overrides=overrides)
print(S.describe())

# %% [markdown]
# ## Time per step, side by side
#
# The combined model and the baseline, each from its run's initial weights on the first micro-batches of its run, timed in one
# process: 8 rounds of 5 training steps per model, the model that goes first alternating from round to round, so that
# both see the same load of the machine (`lmcompanion.bench.side_by_side`). The row below compares the two models'
# time per step over the rounds with the margin of the write-up's "similar" stated in it. This is time on this
# machine: on a CPU the small models' many small operations run one after the other, and time on a GPU follows other
# costs (the cost table of the appendix estimates the GPU time from counted FLOPs). The chapter's runs are the ones
# the previous notebooks made, reused from the run store.

# %% tags=["nbval-ignore-output"]
runs, rows = nb.verdict_page(S, "ar_ed")

# %% [markdown]
# ## Every claim
#
# The row timed above is left out of this table (its outcome moves with the load of the machine that executes the
# page); the scorecard lists it with the others.

# %%
nb.show_verdicts(S, "ar_ed", rows, apart=claims.timed_claims("ar_ed"))

# %% [markdown]
# ## Appendix
#
# Recorded runs at other profiles, how far this profile is from the write-up and in which settings, what re-running
# the chapter at the paper's scale takes, and where this page's numbers came from.

# %% tags=["nbval-ignore-output"]
nb.appendix(S, "ar_ed", list(runs), runs)
