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
# Every claim of the write-up beside our measurement, judged by the book's rule (the prologue's
# [verdict rule](verdict-rule)). Each verdict is a badge in words with the scale it was reached at, then the effect
# and p; every row's numbers, how far its arms learned and the runs that decided it are folded under the table.
#
# :::{dropdown} How a row is decided
# :class-container: lmc-fold
#
# Each row gives the seeds per arm, the effect (mean difference, our claimed-better
# arm minus the other) with its standard error, and the chance that a difference at least this large would appear if
# the two arms were in truth equal. A claim **holds** or **does not hold** only when that chance is at most 5%;
# otherwise it is **inconclusive at this scale**, with the direction the data lean. The runs are the ones the
# previous notebooks made, reused from the run store.
# :::

# %% tags=["parameters"]
profile = "cpu"  # smoke | cpu | gpu | paper
device = "auto"  # auto | cpu | cuda
seed = 0  # first seed; the runs use seeds seed, seed+1, ...
n_seeds = None  # seeds per arm (None: the profile's default)
max_steps = None  # override the number of training steps (None: the profile's)
overrides = {}  # any other config field, by dotted key, e.g. {"train.lr": 1e-3}

# %%
from lmcompanion import claims, nb
from lmcompanion.chapters import hourglass

S = nb.setup(profile=profile, device=device, seed=seed, n_seeds=n_seeds, max_steps=max_steps, overrides=overrides)
print(S.describe())
print(hourglass.skipped_note(hourglass.ALL, S.profile))

# %% [markdown]
# ## Time per step, side by side
#
# Four claims are about time: the write-up's two best models are "a lot faster than the vanilla transformer
# architecture" (here: under 0.8 of its time per step, beyond the book's margin of a similar time), repeat
# upsampling is faster than attention upsampling, and the Perceiver compressor is faster than the transformer
# compressor.
#
# :::{dropdown} How the time per step is measured
# :class-container: lmc-fold
#
# Each pair (the best attention and the best repeat model against the vanilla transformer, the 448-96
# anchor against its repeat-mode and its Perceiver variants) is timed in one process: each model from its run's
# initial weights on the first batch of its run, 8 rounds of 5 training steps per model, the model that goes first
# alternating from round to round, so that both see the same load of the machine (`lmcompanion.bench.side_by_side`).
# A row holds when the per-round ratio of the claimed-faster model's time to the other's is below its bound (1, or
# 0.8 for "a lot faster") by a one-sided t-test over the rounds. The models train on the same number of tokens per
# step, so the ratio is also one of time per token. This is time on this machine: on a CPU with one thread, time
# follows the FLOPs and the number of small operations, and a GPU's time does not; the rows on counted FLOPs say
# what does not depend on the machine. The chapter's runs are the ones the previous notebooks made, reused from the
# run store.
# :::

# %% tags=["nbval-ignore-output"]
runs, rows = nb.verdict_page(S, "hourglass", hourglass.ALL)

# %% [markdown]
# ## Every claim
#
# The rows timed above are left out of this table (their outcome moves with the load of the machine that executes
# the page); the scorecard lists them with the others.

# %%
nb.show_verdicts(S, "hourglass", rows, apart=claims.timed_claims("hourglass"))

# %% [markdown]
# The published column: the write-up prints no loss, so its numbers were read off the plots of its repository.
# Where each comes from:

# %%
nb.fold("Where each published number comes from", hourglass.sources_table(hourglass.ALL), hourglass.sources_note())

# %% [markdown]
# ## Appendix
#
# Recorded runs at other profiles, how far this profile is from the write-up and in which settings, what re-running
# the chapter at the paper's scale takes, and where this page's numbers came from.

# %% tags=["nbval-ignore-output"]
nb.appendix(S, "hourglass", list(runs), runs, cost_names=hourglass.COST_ARMS)
