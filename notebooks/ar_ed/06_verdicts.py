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
# Every claim of the write-up beside our measurement. A claim that A beats B (lower loss) **holds** when every
# seed of A is below every seed of B, **does not hold** when every seed of A is above every seed of B, and is
# **inconclusive at this scale** otherwise. The runs are the ones the previous notebooks made (reused from the
# run store). The published numbers are the write-up's final estimates after 9,000 steps.

# %% tags=["parameters"]
profile = "cpu"  # smoke | cpu | gpu | paper
device = "auto"  # auto | cpu | cuda
seed = 0  # first seed; the runs use seeds seed, seed+1, ...
n_seeds = None  # seeds per arm (None: the profile's default)
max_steps = None  # override the number of training steps (None: the profile's)
overrides = {}  # any other config field, by dotted key, e.g. {"train.lr": 1e-3}

# %%
from lmcompanion import experiments, nb, tables, verdicts

S = nb.setup(profile=profile, device=device, seed=seed, n_seeds=n_seeds, max_steps=max_steps, overrides=overrides)
print(S.describe())

NAMES = experiments.names("ar_ed")
runs = {name: S.runs(name) for name in NAMES}
pub = {name: experiments.get(name).published for name in NAMES}


def claim(text, metric, better, worse):
    return verdicts.between(text, metric, better, worse, runs)


# %%
rows = [
    claim("MSE embedding loss beats cosine dissimilarity in validation loss", "val", "ar_ed/mse", "ar_ed/cosine"),
    claim("... but is worse in train loss", "train", "ar_ed/cosine", "ar_ed/mse"),
    claim("MSE embedding loss beats no embedding loss (validation)", "val", "ar_ed/mse", "ar_ed/no_loss"),
    claim("cosine embedding loss beats no embedding loss (validation)", "val", "ar_ed/cosine", "ar_ed/no_loss"),
    claim("MSE embedding loss beats no embedding loss (train)", "train", "ar_ed/mse", "ar_ed/no_loss"),
    claim("cosine embedding loss beats no embedding loss (train)", "train", "ar_ed/cosine", "ar_ed/no_loss"),
    claim("positional subtraction improves train loss", "train", "ar_ed/pos_sub", "ar_ed/no_loss"),
    claim("positional subtraction improves validation loss", "val", "ar_ed/pos_sub", "ar_ed/no_loss"),
    claim("MSE loss + subtraction beats subtraction alone (validation)", "val", "ar_ed/mse_pos_sub", "ar_ed/pos_sub"),
    claim("MSE loss + subtraction beats the MSE loss alone (validation)", "val", "ar_ed/mse_pos_sub", "ar_ed/mse"),
    claim("the combined model beats the baseline in validation loss", "val", "ar_ed/mse_pos_sub", "ar_ed/baseline"),
    claim("... but the baseline is better in train loss", "train", "ar_ed/baseline", "ar_ed/mse_pos_sub"),
    claim("the combined model beats the smaller baseline (validation)", "val", "ar_ed/mse_pos_sub", "ar_ed/smaller_baseline"),
    claim("the combined model beats the 0.2 dropout baseline (validation)", "val", "ar_ed/mse_pos_sub", "ar_ed/dropout_baseline"),
    claim("even without embedding loss or subtraction, the encoder-decoder beats the baseline (validation)", "val",
          "ar_ed/no_loss", "ar_ed/baseline"),
    claim("beyond the write-up: subtraction improves a decoder-only model (validation)", "val",
          "ar_ed/baseline_pos_sub", "ar_ed/baseline"),
    claim("beyond the write-up: subtraction improves a decoder-only model (train)", "train",
          "ar_ed/baseline_pos_sub", "ar_ed/baseline"),
]

# Parameter counts are exact: no seeds, no spread.
rows.append(verdicts.fewer_parameters("the combined model has fewer parameters than the baseline (paper size)",
                                      "ar_ed/mse_pos_sub", "ar_ed/baseline"))

# The embedding loss "collapses": the write-up's final values are 4-9e-9. We call it collapsed below 1e-6.
for name in ("ar_ed/mse", "ar_ed/cosine", "ar_ed/mse_pos_sub"):
    rows.append(verdicts.below(f"the embedding loss of '{experiments.get(name).title}' ends near zero (below 1e-6)",
                               f"{pub[name]['aux']:.3e}", tables.last_train_metric(runs[name], "aux/embedding"), 1e-6))

verdicts.table(rows)

# %% [markdown]
# ## Settings of this profile
#
# Every setting in which the profile these verdicts come from differs from the write-up's (the `paper` profile).
# With the `paper` profile this table is empty.

# %%
nb.config_diff(NAMES, S.profile)

# %% [markdown]
# ## Re-running this chapter at the paper's scale
#
# The commands below re-execute every notebook of the chapter with the write-up's settings on a GPU. The table
# gives the training time per run measured in this build and, for the `paper` profile, the tokens and training
# FLOPs of one run. No GPU run has been recorded for this book yet, so the measured GPU time stays empty until a
# paper-profile run is in the store.

# %%
print(nb.rerun_commands([f"notebooks/ar_ed/{n}.py" for n in
                         ("01_embedding_loss", "02_pos_sub", "03_combined", "04_baselines", "05_decoder_pos_sub", "06_verdicts")]))

# %%
# NBVAL_IGNORE_OUTPUT
nb.cost_table(S, NAMES, runs)
