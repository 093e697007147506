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
# # The baseline, trained
#
# Every comparison in the yif-AI write-ups (Yifei Yan's AR encoder–decoder and DeepSight, whose code is his GitHub
# repository yif-AI, https://github.com/yiphei/yif-AI; the next two chapters) is made against a
# decoder-only transformer in the style of nanoGPT. This notebook builds the write-ups' three baselines,
# checks their parameter counts against the published ones, trains the baseline at the chosen profile and
# reports what the run measured: loss curves, final losses, a sample, throughput and the environment.
#
# The parameters below are papermill's: re-run this notebook with, for example,
# `python -m lmcompanion run-notebook notebooks/prologue/baseline.py --profile gpu -p device cuda`.

# %% tags=["parameters"]
profile = "cpu"  # smoke | cpu | gpu | paper
device = "auto"  # auto | cpu | cuda
seed = 0  # first seed; the runs use seeds seed, seed+1, ...
n_seeds = None  # seeds per run (None: the profile's default)
max_steps = None  # override the number of training steps (None: the profile's)
overrides = {}  # any other config field, by dotted key, e.g. {"train.lr": 1e-3}

# %%
from lmcompanion import nb, plots, tables

S = nb.setup(profile=profile, device=device, seed=seed, n_seeds=n_seeds, max_steps=max_steps, overrides=overrides)
print(S.describe())

# %% [markdown]
# ## Three baselines and their sizes
#
# The AR encoder–decoder write-up compares its model with three decoder-only baselines: the *baseline*
# (width 160, 10 heads, 26 layers), a *smaller baseline* with fewer parameters than its own model (width 156,
# 12 heads), and a *0.2 dropout baseline*. It counts parameters without the learned position table and counts
# the tied token/output matrix once. The table computes each count from the model itself.

# %%
BASELINES = ["ar_ed/baseline", "ar_ed/smaller_baseline", "ar_ed/dropout_baseline"]
nb.params_table(BASELINES, S.profile)

# %% [markdown]
# ## The data
#
# The write-ups train on "a wikipedia dataset", which the original code splits 90/10 by characters (the write-ups
# state no split). Offline, the book uses the staged English Wikipedia shards (the original code's 178 MB file is not
# published); the `cpu` profile tokenizes it with a
# 4,096-token BPE trained on the training split, the `gpu` and `paper` profiles with GPT-2's tokenizer. The
# `smoke` profile trains on a generated corpus, labelled as such.

# %%
cfg = S.config("ar_ed/baseline")
nb.data_table(cfg)

# %% [markdown]
# ## Training
#
# One run per seed, through the shared trainer and run store: a run already in the store (same config, same
# code) is reused instead of retrained. Losses are estimated in eval mode over fixed windows of each split.

# %%
runs = S.runs("ar_ed/baseline")
display(nb.this_page(S, {"baseline": runs}))
tables.results({"baseline": runs})

# %% mystnb={"figure": {"caption": "Train and validation loss of the baseline against optimizer steps, estimated in eval mode ({glue:md}`seeds-prologue-loss-curves`). Dashed: the unigram loss, what token frequencies alone give.", "name": "prologue-loss-curves"}}
nb.caption("prologue-loss-curves", {"baseline": runs})
fig = plots.loss_curves({"baseline": runs}, reference=nb.unigram({"baseline": runs}))

# %% [markdown]
# ## A sample
#
# The first seed's model continues the opening of the validation split (temperature 0.8), decoded with the run's
# own tokenizer. At the `cpu` profile the model has seen little text (the throughput table below counts its
# tokens), so expect word-like fragments rather than prose.

# %% tags=["nbval-ignore-output"]
prompt, continuation = nb.sample(runs[0], seed=seed)
print(f"PROMPT: {prompt}\nMODEL:  {continuation}")

# %% [markdown]
# ## Throughput and environment
#
# Tokens per second count training steps only (no evaluation), measured in this build on the machine below.

# %% tags=["nbval-ignore-output"]
import pandas as pd

pd.DataFrame(
    {
        "seed": [r.seed for r in runs],
        "train time (s)": [tables.number(r.summary["train_time_s"]) for r in runs],
        "tokens": [tables.count(r.summary["tokens"]) for r in runs],
        "tokens/s": [tables.number(r.summary["tokens_per_s"]) for r in runs],
    }
).set_index("seed")

# %% tags=["nbval-ignore-output"]
tables.environment(runs[0])

# %% [markdown]
# ## Re-running at the paper's scale
#
# The same notebook at the `paper` profile trains the write-up's configuration (9,000 steps of 800 sequences of
# 200 GPT-2 tokens). The table gives this build's measured training time per run and, for the `gpu` and `paper`
# profiles, the tokens and training FLOPs of one run (6 per parameter per token, plus attention) and the time on
# one H100 estimated from them (`lmcompanion.estimate`: stated assumptions, not a measurement). Its measured GPU
# time appears once a recorded run of that profile is imported; until then the table says "not recorded yet".

# %%
print(nb.rerun_commands(["notebooks/prologue/baseline.py"]))

# %% tags=["nbval-ignore-output"]
nb.cost_table(S, ["ar_ed/baseline"], {"ar_ed/baseline": runs})

# %% [markdown]
# ## Provenance
#
# Where this page's numbers came from: the profile and seeds, the package's commit, the machine, and the data and
# tokenizers of the runs it used (each run's own record is its folder in the run store).

# %% tags=["nbval-ignore-output"]
nb.provenance(S)
