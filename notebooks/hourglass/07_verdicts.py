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
from lmcompanion import nb, plots, tables
from lmcompanion.chapters import hourglass

S = nb.setup(profile=profile, device=device, seed=seed, n_seeds=n_seeds, max_steps=max_steps, overrides=overrides)
print(S.describe())

# %%
from lmcompanion import experiments

NAMES = hourglass.arms(hourglass.ALL, S.profile)
print(hourglass.skipped_note(hourglass.ALL, S.profile))
runs = S.arms(NAMES, by="name")  # reused from the run store

# %%
nb.show_verdicts(S, "hourglass", hourglass.verdict_rows(runs))

# %% [markdown]
# ## At other scales: recorded runs
#
# Runs made elsewhere at other profiles (the `gpu` or `paper` profile, on a GPU) and committed as recorded runs
# (metrics and provenance, no weights) are judged by the same rule. The first table says where they come from;
# the verdict table of each profile follows, with "no runs" where an arm was not recorded.

# %%
recorded = nb.recorded_arms(S, NAMES)
nb.recorded_table(recorded)

# %%
for profile, found in recorded.items():
    display(nb.show_verdicts(S, "hourglass", hourglass.verdict_rows(found.runs), profile=profile))

# %% [markdown]
# ## How far this profile is from the write-up
#
# Model size, tokens seen per run and passes over the training data, here and in the write-up (the `paper`
# profile). A verdict reached far below the write-up's scale may change at its scale; the landing page says which.

# %%
nb.scale_table(S, NAMES)

# %% [markdown]
# ## Settings of this profile
#
# Every setting in which the profile these verdicts come from differs from the write-up's (`paper`) settings.

# %%
nb.config_diff(NAMES, S.profile)

# %% [markdown]
# ## Re-running this chapter at the paper's scale
#
# The commands re-execute every notebook of the chapter with the write-up's settings on a GPU. The table gives, for
# the headline arms and the two 448-96 anchors, the training time per run measured in this build and, for the `gpu`
# and `paper` profiles, the tokens and training FLOPs of one run and the time on one H100 estimated from those FLOPs
# (`lmcompanion.estimate`: stated assumptions, not a measurement); the line under the commands totals every arm of
# the chapter, the three the small profiles leave out included, at three seeds each. The measured GPU time of an arm
# appears once a recorded run of it is imported; until then the table says "not recorded yet".

# %%
print(nb.rerun_commands(nb.chapter_notebooks("hourglass")))
print("\n" + nb.rerun_total(hourglass.ALL))

# %% tags=["nbval-ignore-output"]
nb.cost_table(S, hourglass.COST_ARMS, runs)

# %% [markdown]
# ## Provenance
#
# Where this page's numbers came from: the profile and seeds, the package's commit, the machine, and the data and
# tokenizers of the runs it used (each run's own record is its folder in the run store).

# %% tags=["nbval-ignore-output"]
nb.provenance(S)
