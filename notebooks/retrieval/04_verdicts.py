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
# Every retrieval claim of the write-up beside our measurement, in its order, judged by the book's rule (see the
# prologue's [verdict rule](verdict-rule)): each row gives the seeds per arm, the effect (mean difference, our
# claimed-better arm minus the other) with its standard error, and the chance that a difference at least this large
# would appear if the two arms were in truth equal. A claim **holds** or **does not hold** only when that chance is
# at most 5%; otherwise it is **inconclusive at this scale**, with the direction the data lean. The write-up compares
# final losses and "peak" ones (a run's best test loss); each row says which it compares, and compares like with
# like. Every row about how well matchers learn is decided only where every arm it compares has learned (the
# learning gate: every seed at least half a nat below chance, ln(candidates), or twice chance in top-1); otherwise it
# is *not decided at this scale* and names the arm. A claim that something does not learn holds where the loss lies
# significantly above its level and fails where it lies significantly below, and names a control arm that must have
# learned. Rows whose arms this profile does not run say so, with the write-up's numbers and where the arms run (the
# registry's line below). Offline (`cpu`, `smoke`, and `gpu` on a local copy) the queries are extractive sentences,
# a substitute for the write-up's summaries. Which claim of the write-up each row tests, and why the others are not
# tested, is the [claims ledger](claims-ledger). The runs are the ones the previous notebooks made, reused from the
# run store.


# %% tags=["parameters"]
profile = "cpu"  # smoke | cpu | gpu | paper
device = "auto"  # auto | cpu | cuda
seed = 0  # first seed; the runs use seeds seed, seed+1, ...
n_seeds = None  # seeds per arm (None: the profile's default)
max_steps = None  # override the number of training steps (None: the profile's)
overrides = {}  # any other config field, by dotted key, e.g. {"train.lr": 1e-3}

# %%
from IPython.display import Markdown

from lmcompanion import experiments, nb, tables
from lmcompanion.chapters import retrieval as R

S = nb.setup(profile=profile, device=device, seed=seed, n_seeds=n_seeds, max_steps=max_steps, overrides=overrides)
print(S.describe())


# %%
Markdown(experiments.where_they_run("retrieval"))

# %%
runs, rows = nb.verdict_page(S, "retrieval")  # reused from the run store (the cpu profile plans fewer arms)
nb.show_verdicts(S, "retrieval", rows)

# %% [markdown]
# ## The matcher runs at the paper profile
#
# An estimate of the `paper` profile's matcher runs on one H100, from counted FLOPs and stated assumptions
# (`lmcompanion.chapters.retrieval.rerun_estimate`), without the mixer chapter's language models (the `paper`
# profile reads TinyStoriesInstruct's summaries from the Hugging Face hub, so it needs the network).

# %%
estimate, hours = R.rerun_estimate("paper")
print(f"paper profile, matcher runs only: about {tables.number(hours)} hours on one H100 (estimate)")
estimate

# %% [markdown]
# ## Appendix
#
# Recorded runs at other profiles, how far this profile is from the write-up and in which settings, what re-running
# the chapter at the paper's scale takes, and where this page's numbers came from.

# %% tags=["nbval-ignore-output"]
nb.appendix(S, "retrieval", list(runs), runs)
