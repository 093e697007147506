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
# # Flat against expanded mixers
#
# The expanded mixer mixes tokens with two masked convolutions ($L \to eL \to L$, GELU between); the flat mixer
# with one masked $L \times L$ convolution. The write-up finds the flat one better at fixed compute (for example
# 1.84 / 1.89 against 2.05 / 2.08 at $d_{model}=512$) and faster per step, and argues from a figure that once the
# causal mask is on, every expansion above 1 wastes weights: the second convolution reads hidden channel $j$ only
# from output tokens $i \ge j$, so hidden channels $j \ge L$ are never read, and the first convolution's rows for
# them can never learn.
#
# The argument is checked here as a fact of the model, not by training: for every token-mixing weight we ask
# whether it can ever receive a gradient (kept by the mask, and feeding something an output reads), and count.
# First, the write-up's own worked example of the mask, computed by the model's masked convolution.

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
# ## The worked example
#
# The write-up masks a 3 × 3 token-mixing matrix $W$ (each column one output token's filter) with an upper
# triangular $U$ and writes out $X * m(W)$ for three tokens. Here $W$ is loaded into a `MaskedTokenConv(3, 3)` (as
# its transpose: the code's rows are output tokens, which is why it masks with `tril`), and the tokens
# $x_0, x_1, x_2$ are fed as the basis $X = I$, so the output is the coefficient of each input token in each output
# token. The write-up's printed matrices are beside ours.

# %%
mixer.facts.worked_example_table()

# %% mystnb={"figure": {"caption": "The write-up's worked example, computed: W, the mask U, m(W) = W ∘ U, and the coefficient of each input token in each output token (each token reads itself and earlier tokens only).", "name": "mixer-worked-example"}}
fig = mixer.facts.worked_example_figure()

# %% [markdown]
# ## Which weights can learn
#
# One block at the write-up's $d_{model}=512$, $L=512$ (counted on the meta device from the model's own masks).
# *Zeroed by the mask*: the upper triangle of each convolution. *Kept but never read*: weights the mask keeps
# whose output no later layer reads. The flat mixer and $e=1$ keep just over half their weights (the diagonal
# included); every $e>1$ keeps the same live weights as $e=1$ and adds dead ones.

# %%
mixer.analysis.liveness_table()

# %% [markdown]
# ## Training at fixed compute

# %%
mixer.compute.arm_table(mixer.FLAT_EXPANDED, S.profile)

# %%
runs = S.arms(mixer.FLAT_EXPANDED, by="name")
display(nb.this_page(S, mixer.by_title(runs)))
mixer.results(runs)

# %% mystnb={"figure": {"caption": "Flat and expanded mixers at d=256 and d=512 (scaled by the profile): loss against counted compute.", "name": "mixer-flat-expanded-compute"}}
fig = mixer.compute.loss_vs_compute(mixer.by_title(runs))

# %% [markdown]
# ## Loss per sample and throughput
#
# At equal steps (equal samples seen, the batches being equal: the write-up compares them "after one epoch") and at
# equal compute; then the time a step takes here, measured, against its counted FLOPs (the write-up: the expanded
# mixer's "sample throughput is 20-50% smaller").

# %%
mixer.compute.equal_steps_table(runs, [tuple(mixer.FLAT_EXPANDED[:2]), tuple(mixer.FLAT_EXPANDED[2:])])

# %% tags=["nbval-ignore-output"]
mixer.compute.speed_ratio_table(runs, [tuple(mixer.FLAT_EXPANDED[:2]), tuple(mixer.FLAT_EXPANDED[2:])])

# %% [markdown]
# ## Verdicts of this page
#
# The claims this page decides (the verdict notebook gathers every claim of the chapter).

# %%
rows = nb.page_rows(S, "mixer", "02_flat_vs_expanded", runs)
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
