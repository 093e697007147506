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
# # The masked mixer against Llama: fixed compute and equal steps
#
# The write-up's first experiment trains an expanded masked mixer ($d_{model}=256$, 8 blocks) and a Llama-style
# transformer ($d_{model}=128$, 8 blocks) for the same 12 hours on an RTX 3060: the mixer reaches 2.169 / 2.201
# (train / validation) against Llama's 2.471 / 2.497, "mostly because the mixer is around six times as fast to
# train as the transformer: there is nearly identical loss if we compare equal steps". Its later tables compare a
# flat mixer and Llama at $d_{model}=512$ (1.842 / 1.895 against 1.873 / 1.908).
#
# A wall clock is not reproducible, so each arm here gets the same number of *counted* training FLOPs (the
# profile's budget; each arm's step count is the budget divided by its FLOPs per step, stored in the run's config).
# We read every comparison three ways: at equal compute (the final losses), at equal steps (both arms' curves at
# the last step at which both were evaluated; every run keeps its peak learning rate after warm-up, so a loss at step $s$ does not
# depend on the budget), and at equal training time measured on this machine.

# %% tags=["parameters"]
profile = "cpu"  # smoke | cpu | gpu | paper
device = "auto"  # auto | cpu | cuda
seed = 0  # first seed; the runs use seeds seed, seed+1, ...
n_seeds = None  # seeds per arm (None: the profile's default)
max_steps = None  # override the number of training steps (None: the profile's)
overrides = {}  # any other config field, by dotted key, e.g. {"train.lr": 1e-3}

# %%
from lmcompanion import experiments, nb, plots, tables
from lmcompanion.chapters import mixer

S = nb.setup(profile=profile, device=device, seed=seed, n_seeds=n_seeds, max_steps=max_steps, overrides=overrides)
print(S.describe())

# %% [markdown]
# ## The arms and their budget
#
# How each arm is built at this profile beside the write-up's size, and the steps the compute budget buys it.

# %%
mixer.compute.budget_table(S.profile)

# %%
mixer.compute.arm_table(mixer.FIRST + mixer.MAIN, S.profile)

# %%
runs = S.arms(mixer.FIRST + mixer.MAIN, by="name")
display(nb.this_page(S, mixer.by_title(runs)))
mixer.results(runs)

# %% [markdown]
# A comparison rests on something learned only where an arm's loss is below the **unigram level**: the loss of
# predicting every token from token frequencies alone, on the same examples. Every comparison of this chapter is
# decided only where every arm it compares has learned: every seed at least half a nat below it at the step the row
# compares (the prologue's [verdict rule](verdict-rule)).

# %%
print(f"unigram loss on these examples: validation {tables.number(mixer.facts.unigram_of(runs[mixer.MAIN[0]], 'val'))}, "
      f"training {tables.number(mixer.facts.unigram_of(runs[mixer.MAIN[0]], 'train'))} (nats per token)")

# %% mystnb={"figure": {"caption": "Loss against step for the write-up's first comparison and the d=512 pair ({glue:md}`seeds-mixer-vs-llama-curves`). Dashed: the unigram loss, what token frequencies alone give.", "name": "mixer-vs-llama-curves"}}
nb.caption("mixer-vs-llama-curves", mixer.by_title(runs))
fig = plots.loss_curves(mixer.by_title(runs), reference=nb.unigram(runs))

# %% mystnb={"figure": {"caption": "Loss against counted training compute: the fixed-compute view. Every arm ends at the same budget.", "name": "mixer-vs-llama-compute"}}
fig = mixer.compute.loss_vs_compute(mixer.by_title(runs))

# %% [markdown]
# ## Equal steps and equal time
#
# Both arms of each pair at the last step where both evaluated, beside their final (equal-compute) losses, and
# the write-up's equal-step numbers. Then the time a step takes on this machine, measured, against the FLOPs it
# counts: the write-up's "around six times as fast" (in one paragraph) and "between 10x and 20x the time" (in the
# one before it, for the same two models) are statements about its GPU.

# %%
mixer.compute.equal_steps_table(runs, [tuple(mixer.FIRST), tuple(mixer.MAIN)])

# %% tags=["nbval-ignore-output"]
mixer.compute.speed_ratio_table(runs, [tuple(mixer.FIRST), tuple(mixer.MAIN)])

# %% tags=["nbval-ignore-output"]
mixer.compute.equal_time_table(runs)

# %% tags=["nbval-ignore-output"] mystnb={"figure": {"caption": "Loss against training time measured on this machine (each arm at its mean seconds per step).", "name": "mixer-vs-llama-time"}}
fig = mixer.compute.loss_vs_time(mixer.by_title(runs))

# %% [markdown]
# ## Verdicts of this page
#
# The claims this page decides (the verdict notebook gathers every claim of the chapter).

# %%
rows = nb.page_rows(S, "mixer", "01_mixer_vs_llama", runs)
nb.verdict_table(mixer.timed(rows, keep=False), "mixer", S.profile, S)

# %% [markdown]
# The claims about time per step, decided by the time measured on this machine (they can differ on another).

# %% tags=["nbval-ignore-output"]
nb.verdict_table(mixer.timed(rows), "mixer", S.profile, S)

# %% [markdown]
# ## Provenance
#
# Where this page's numbers came from: the profile and seeds, the package's commit, the machine, and the data and
# tokenizers of the runs it used (each run's own record is its folder in the run store).

# %% tags=["nbval-ignore-output"]
nb.provenance(S)
