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
# # ED-Transformer, as written
#
# The write-up defines the encoder–decoder transformer by one algorithm, ED-Transformer$(z, x \mid \theta)$,
# with a list of hyperparameters and a list of parameters $\theta$. This notebook builds the model at the chosen
# profile, puts its parameters beside the write-up's list, and checks the batched model against a slow
# transcription that loops over columns and heads exactly as the pseudocode does (shown on the chapter's first
# page). Last, it changes one input token at a time to show which outputs each input can reach: the decoder
# must never see a later token of $x$, and every output must see all of $z$.
#
# The parameters below are papermill's. To re-run this notebook at another profile:
# `python -m lmcompanion run-notebook notebooks/formal_ed/01_algorithm.py --profile gpu -p device cuda`.

# %% tags=["parameters"]
profile = "cpu"  # smoke | cpu | gpu | paper
device = "auto"  # auto | cpu | cuda
seed = 0  # seed of the random weights and inputs used here
n_seeds = None  # unused here (no training); kept so every notebook takes the same parameters
max_steps = None  # unused here
overrides = {}  # any config field, by dotted key, e.g. {"model.H": 2}

# %%
import torch

from lmcompanion import models, nb, plots
from lmcompanion.chapters import formal_ed as fe
from lmcompanion.experiments.formal_ed import NAME
from lmcompanion.models import formal_ed_literal

S = nb.setup(profile=profile, device=device, seed=seed, n_seeds=n_seeds, max_steps=max_steps, overrides=overrides)
cfg = S.config(NAME)
print(S.describe())

# %% [markdown]
# ## Hyperparameters
#
# The write-up's six hyperparameters, with the vocabulary size $|V|$ beside them, are fields of the model config, which checks them when it is built (for
# example, `d_e` must be a multiple of `H`). The per-head size is not one of them: we use $d_e / H$ for the
# queries, keys and values of every head, as Phuong & Hutter's multi-head attention allows.

# %%
fe.hyperparameters(cfg.model, S.profile)

# %% [markdown]
# ## $\theta$, item by item
#
# Each row is one item of the write-up's parameter list, with its size computed from the write-up's shapes.
# Beside it are the model's parameter tensors that hold it, found by name, and their size. Each parameter of
# the model must belong to exactly one item, otherwise building this table fails. Multi-head attention
# ($\mathcal{W}$) is the one item the write-up does not spell out. We use Phuong & Hutter's: per head a query, a
# key and a value matrix with biases, then an output matrix $W_o$ with a bias $b_o$.

# %%
model = models.build(cfg.model)
fe.parameter_inventory(model)

# %% [markdown]
# ## The batched model against the literal algorithm
#
# `lmcompanion.models.formal_ed_literal` transcribes ED-Transformer line by line. It keeps one token per column, loops
# over columns, heads and layers, and computes each softmax by hand. It takes $\theta$ in the write-up's own
# orientation (`FormalED.theta()`). Here both run on random weights, far from the initialisation so that
# every bias, $\gamma$ and $\beta$ matters, and the table gives the largest difference between their $P$
# matrices. The cases include one padded batch, compared with each of its examples run alone without padding.

# %%
agree = fe.agreement(formal_ed_literal.ed_transformer, cfg.model, seed=seed)
print(f"all {len(agree)} cases agree within tolerance: {bool((agree['_worst'] <= agree['_tol']).all())}")

# %% tags=["nbval-ignore-output"]
fe.visible(agree)  # the last digits of float64 round-off differ between machines

# %% [markdown]
# ## What each output can see
#
# Take the longest held-out example and random weights. Change one token of $z$ or $x$ at a time and record
# which columns of the encoder output $Z$ and of $P$ change at all, bit for bit. The unidirectional mask must
# leave the columns before the changed token of $x$ untouched: in the right panel, the part above the diagonal
# must be white. Because the encoder uses $\text{Mask} \equiv 1$, every column of $Z$ and of $P$ must change
# when any token of $z$ changes: the two left panels must be entirely black.

# %%
z, x, source = fe.longest_example(cfg.data)
dep = fe.dependence(fe.randomize(models.build(cfg.model), torch.Generator().manual_seed(seed)), z, x)
print(f"source {source!r}: ℓ_z = {len(z)}, ℓ_x = {len(x)}")
for name, value in fe.mask_checks(dep).items():
    print(f"{name}: {value}")

# %% mystnb={"figure": {"caption": "Which outputs change (black) when one input token changes, on random weights, one panel per map: 'encoder: Z on z', the encoder output Z against the tokens of z (Mask ≡ 1: all of them); 'decoder: P on z', the decoder's P against z, through the cross-attention (all of them); 'decoder: P on x', P against the tokens of x: column j changes only for the tokens x_1, …, x_j (the unidirectional mask).", "name": "formal-ed-dependence"}}
fig = plots.heatmaps(fe.dependence_panels(dep, z, x), cmap="Greys", vmin=0, vmax=1)

# %% [markdown]
# ## Provenance
#
# Where this page's numbers came from: the profile and seeds, the package's commit, the machine, and the data and
# tokenizers of the runs it used (each run's own record is its folder in the run store).

# %% tags=["nbval-ignore-output"]
nb.provenance(S)
