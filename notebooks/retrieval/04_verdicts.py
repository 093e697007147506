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
# Every retrieval claim of the write-up beside our measurement, judged by the book's rule (see the prologue's
# [verdict rule](verdict-rule)): each row gives the seeds per arm, the effect (mean difference of the final test
# cross-entropy, our claimed-better arm minus the other) with its standard error, and the chance that a difference
# at least this large would appear if the two arms were in truth equal. A claim **holds** or **does not hold** only
# when that chance is at most 5%; otherwise it is **inconclusive at this scale**, with the direction the data lean.
# Every row compares how well matchers learn, so it is decided only where at least one of its two arms ends below
# the chance loss ln(candidates) by a one-sided t-test at 5%; where neither does, the row says so and is
# inconclusive. Offline (`cpu`, `smoke`, and `gpu` on a local copy) the queries are extractive sentences, a
# substitute for the write-up's summaries. The runs are the ones the previous notebooks made, reused from the run
# store.


# %% tags=["parameters"]
profile = "cpu"  # smoke | cpu | gpu | paper
device = "auto"  # auto | cpu | cuda
seed = 0  # first seed; the runs use seeds seed, seed+1, ...
n_seeds = None  # seeds per arm (None: the profile's default)
max_steps = None  # override the number of training steps (None: the profile's)
overrides = {}  # any other config field, by dotted key, e.g. {"train.lr": 1e-3}

# %%
from lmcompanion import experiments, nb
from lmcompanion.chapters import retrieval as R

S = nb.setup(profile=profile, device=device, seed=seed, n_seeds=n_seeds, max_steps=max_steps, overrides=overrides)
print(S.describe())

NAMES = experiments.names("retrieval")
runs = R.arms(S, R.at_profile(NAMES, S.profile))  # reused from the run store (the cpu profile trains fewer arms)

# %%
nb.show_verdicts(S, "retrieval", R.verdict_rows(runs))

# %% [markdown]
# ## At other scales: recorded runs
#
# Runs made elsewhere at other profiles (the `gpu` or `paper` profile, on a GPU) and committed as recorded runs
# (metrics and provenance, no weights) are judged by the same rule. The first table says where they come from;
# the verdict table of each profile follows.

# %%
recorded = nb.recorded_arms(S, NAMES)
nb.recorded_table(recorded)

# %%
for profile, found in recorded.items():
    display(nb.show_verdicts(S, "retrieval", R.verdict_rows(found.runs), profile=profile))

# %% [markdown]
# ## How far this profile is from the write-up
#
# Model size, tokens seen per run and passes over the training pairs,
# here and in the write-up (the `paper` profile). A verdict reached far below the write-up's scale may change at
# its scale; the landing page says which.

# %%
nb.scale_table(S, NAMES)

# %% [markdown]
# ## Settings of this profile
#
# Every setting in which this profile differs from the write-up's (`paper`) settings.

# %%
nb.config_diff(NAMES, S.profile)

# %% [markdown]
# ## Re-running this chapter at the paper's scale
#
# The commands re-execute every notebook of the chapter with the write-up's settings on a GPU (the `paper` profile
# reads TinyStoriesInstruct's summaries from the Hugging Face hub, so it needs the network). The first table gives
# the training time per run measured in this build and the counted FLOPs of one run at the `gpu` and `paper`
# profiles; the second an estimate of the paper profile's matcher runs on one H100, from counted FLOPs and stated
# assumptions (`lmcompanion.chapters.retrieval.rerun_estimate`), without the mixer chapter's language models.

# %%
print(nb.rerun_commands(nb.chapter_notebooks("retrieval")))

# %% tags=["nbval-ignore-output"]
nb.cost_table(S, NAMES, runs)

# %%
estimate, hours = R.rerun_estimate("paper", seeds=nb.DEFAULT_SEEDS["paper"])
print(f"paper profile, matcher runs only: about {hours:.0f} hours on one H100 (estimate)")
estimate

# %% [markdown]
# ## Provenance
#
# Where this page's numbers came from: the profile and seeds, the package's commit, the machine, and the data and
# tokenizers of the runs it used (each run's own record is its folder in the run store; the embeddings each
# retrieval run read are named, with their SHA-256, in its summary).

# %% tags=["nbval-ignore-output"]
nb.provenance(S)
