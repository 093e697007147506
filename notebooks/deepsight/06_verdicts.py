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
# Every claim of the write-up beside our measurement, with the verdict rule of the book: A beats B (lower loss)
# **holds** when every seed of A is below every seed of B, **does not hold** when every seed of A is above every
# seed of B, and is **inconclusive at this scale** otherwise. The runs are those of the previous notebooks,
# reused from the run store.

# %% tags=["parameters"]
profile = "cpu"  # smoke | cpu | gpu | paper
device = "auto"  # auto | cpu | cuda
seed = 0  # first seed; the runs use seeds seed, seed+1, ...
n_seeds = None  # seeds per arm (None: the profile's default)
max_steps = None  # override the number of training steps (None: the profile's)
overrides = {}  # any other config field, by dotted key, e.g. {"train.lr": 1e-3}

# %%
from lmcompanion import nb, tables

S = nb.setup(profile=profile, device=device, seed=seed, n_seeds=n_seeds, max_steps=max_steps, overrides=overrides)
print(S.describe())

# %%
from lmcompanion import experiments, verdicts
from lmcompanion.experiments.deepsight import DELTAS

NAMES = experiments.names("deepsight")
runs = {name: S.runs(name) for name in NAMES}
final = {split: {name: tables.final(r, split) for name, r in runs.items()} for split in ("train", "val")}
pub = {name: experiments.get(name).published for name in NAMES}


def claim(text, metric, better, worse):
    return verdicts.between(text, metric, better, worse, runs)


def spearman(values):
    return verdicts.spearman(DELTAS, values)


rows = [
    claim("MSE planning loss beats cosine (validation)", "val", "deepsight/mse_d11", "deepsight/cosine_d11"),
    claim("MSE planning loss beats cosine (train)", "train", "deepsight/mse_d11", "deepsight/cosine_d11"),
    claim("MSE planning loss beats no planning loss (validation)", "val", "deepsight/mse_d11", "deepsight/no_loss"),
    claim("MSE planning loss beats no planning loss (train)", "train", "deepsight/mse_d11", "deepsight/no_loss"),
    claim("cosine planning loss beats no planning loss (train)", "train", "deepsight/cosine_d11", "deepsight/no_loss"),
    claim("... and is slightly worse in validation loss", "val", "deepsight/no_loss", "deepsight/cosine_d11"),
    claim("a larger future context (delta 26 vs 3) gives a better train loss", "train", "deepsight/mse_d26",
          "deepsight/mse_d3"),
    claim("DeepSight beats the baseline in validation loss", "val", "deepsight/mse_d11", "deepsight/baseline"),
    claim("DeepSight beats the baseline in train loss", "train", "deepsight/mse_d11", "deepsight/baseline"),
]

# "Val loss is not very correlated" with delta: holds when the extreme deltas are not separated on validation
# loss and the rank correlation is weak (|rho| < 0.7); does not hold when they are separated and |rho| >= 0.7.
sweep = [f"deepsight/mse_d{d}" for d in DELTAS]
rho_val = spearman([sum(final["val"][n]) / len(final["val"][n]) for n in sweep])
extremes = verdicts.compare(final["val"]["deepsight/mse_d26"], final["val"]["deepsight/mse_d3"])
separated = extremes in (verdicts.HOLDS, verdicts.FAILS)
rows.append(verdicts.Verdict(
    "validation loss is not very correlated with delta",
    f"Spearman rho {spearman([pub[n]['val'] for n in sweep]):+.2f}",
    f"Spearman rho {rho_val:+.2f}; delta 26 vs 3: {'separated' if separated else 'not separated'}",
    verdicts.HOLDS if not separated and abs(rho_val) < 0.7 else verdicts.FAILS if separated and abs(rho_val) >= 0.7
    else verdicts.INCONCLUSIVE))

rows.append(verdicts.fewer_parameters("DeepSight has fewer parameters than the baseline (paper size)",
                                      "deepsight/mse_d11", "deepsight/baseline"))

# The planning loss "collapses": the write-up's final values are about 5e-9; we call it collapsed below 1e-6.
for name in sweep + ["deepsight/cosine_d11"]:
    rows.append(verdicts.below(f"the planning loss of '{experiments.get(name).title}' ends near zero (below 1e-6)",
                               f"{pub[name]['aux']:.3e}", tables.last_train_metric(runs[name], "aux/planning"), 1e-6))

verdicts.table(rows)

# %% [markdown]
# ## Settings of this profile
#
# Every setting in which the profile these verdicts come from differs from the write-up's (`paper`) settings.

# %%
nb.config_diff(NAMES, S.profile)

# %% [markdown]
# ## Re-running this chapter at the paper's scale
#
# The commands re-execute every notebook of the chapter with the write-up's settings on a GPU. The table gives the
# training time per run measured in this build and, for the `paper` profile, the tokens and training FLOPs of one
# run. No GPU run has been recorded for this book yet, so the measured GPU time stays empty until one is in the
# store.

# %%
print(nb.rerun_commands([f"notebooks/deepsight/{n}.py" for n in
                         ("01_planning_target", "02_loss_types", "03_future_context", "04_baseline", "05_collapse", "06_verdicts")]))

# %%
# NBVAL_IGNORE_OUTPUT
nb.cost_table(S, NAMES, runs)
