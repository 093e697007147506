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
# # The planning target
#
# Each planning target is a weighted sum of input embeddings. The present context contributes the cumulative mean
# of positions 1..i, and the future context contributes positions i+1..i+δ with weights 1/k. The two are averaged.
# This notebook draws those weights and checks them by hand on a small example. It trains nothing.

# %% tags=["parameters"]
profile = "cpu"  # smoke | cpu | gpu | paper
device = "auto"  # auto | cpu | cuda
seed = 0  # first seed; the runs use seeds seed, seed+1, ...
n_seeds = None  # seeds per arm (None: the profile's default)
max_steps = None  # override the number of training steps (None: the profile's)
overrides = {}  # any other config field, by dotted key, e.g. {"train.lr": 1e-3}

# %%
from lmcompanion import nb, plots, tables

S = nb.setup(profile=profile, device=device, seed=seed, n_seeds=n_seeds, max_steps=max_steps, overrides=overrides)
print(S.describe())

# %%
import pandas as pd

from lmcompanion.chapters import deepsight
from lmcompanion.models.deepsight import planning_weights

cfg = S.config("deepsight/mse_d11").model
T, delta = cfg.context_size, cfg.future_context_size
W = planning_weights(T, delta, cfg.future_context_aggregation_type, cfg.present_future_context_aggregation_type)
print(f"context T = {T}, delta = {delta}: {W.shape[0]} planning targets (positions 1..T-delta) over {W.shape[1]} inputs")
print(f"weights of target 1 sum to {tables.number(W[0].sum().item())} = 1/2 + H_delta/2 with H_delta = "
      f"{tables.number(sum(1 / k for k in range(1, delta + 1)))}")

# %% mystnb={"figure": {"caption": "Planning-target weights at this profile (delta = 11, DECAY future weights, EQUAL aggregation): row i is target i, column t the input position. The bright diagonal band is the future context; the fading triangle below it is the cumulative mean of the present context.", "name": "deepsight-weights-full"}}
fig = plots.heatmap(W, xlabel="input position t", ylabel="planning target i", colorbar="weight")

# %% [markdown]
# The same weights on a short context, for each of the original code's options. The write-up's setting is
# DECAY with EQUAL aggregation (left).

# %% mystnb={"figure": {"caption": "The first 16 positions' weights (delta = 11, T = 27) for the write-up's setting (DECAY future weights, EQUAL halves) and three of the code's other options.", "name": "deepsight-weights-options"}}
fig = plots.heatmaps(deepsight.option_panels(), panel_size=(3.0, 3.0), colorbar="weight")

# %% [markdown]
# ## Checked by hand
#
# For $T = 5$ and $\delta = 2$, target $i$ (1-based) is
# $\big(\mathrm{mean}(E_1, \dots, E_i) + E_{i+1} + E_{i+2}/2\big) / 2$. Writing those fractions out gives the rows
# below, which must equal the matrix the model uses.

# %%
model_w, by_hand, agree = deepsight.hand_check()
print("equal to the hand computation:", agree)
pd.DataFrame(model_w.numpy(), index=[f"target {i + 1}" for i in range(3)], columns=[f"E_{t + 1}" for t in range(5)]).round(4)

# %% [markdown]
# ## Provenance
#
# Where this page's numbers came from: the profile and seeds, the package's commit, the machine, and the data and
# tokenizers of the runs it used (each run's own record is its folder in the run store).

# %% tags=["nbval-ignore-output"]
nb.provenance(S)
