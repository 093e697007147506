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
# # Generation: a trained mixer and a trained transformer, side by side
#
# A masked mixer reads exactly its context length of tokens, and its last position's output is never trained. The
# write-up's inference therefore works inside one fixed window: the prompt is left-padded into the window, and for
# $i = 50, 49, \dots, 2$ a full forward pass writes the greedy argmax of the logits at position $-i$ into position
# $-i+1$, so the last output is never used ("50 tokens" are 49 iterations). The same scheme runs the transformer
# here (a causal model never reads the placeholders ahead of the position it writes), so the two columns differ
# only in the model.
#
# The prompts are the write-up's two validation stories (`<unk>` is its newline). Every completion the write-up
# prints is quoted beside one by the book's model of the same shape, at this profile's scale and its first seed: the
# first comparison's models (expanded mixer $d_{model}=256$, Llama $d_{model}=128$) for both prompts, the flat
# $d_{model}=1024$ mixer, the 64-layer mixer (64 wide in the write-up; at `cpu` 16 blocks of width 16) and the
# batch-32 $d_{model}=1024$ mixer for the second. A row says where this profile does not run the arm. A model trained
# for minutes on a CPU writes little more than plausible words. At the smaller profiles the window is shorter than
# the prompt, so only its last tokens are kept (the table says how many), and at most half the window is generated.

# %% tags=["parameters"]
profile = "cpu"  # smoke | cpu | gpu | paper
device = "auto"  # auto | cpu | cuda
seed = 0  # first seed; the runs use seeds seed, seed+1, ...
n_seeds = None  # seeds per arm (None: the profile's default)
max_steps = None  # override the number of training steps (None: the profile's)
overrides = {}  # any other config field, by dotted key, e.g. {"train.lr": 1e-3}

# %%
from lmcompanion import experiments, nb, plots, tables, verdicts
from lmcompanion.chapters import mixer

S = nb.setup(profile=profile, device=device, seed=seed, n_seeds=n_seeds, max_steps=max_steps, overrides=overrides)
print(S.describe())

# %%
runs = S.arms(mixer.GENERATION, by="name")
display(nb.this_page(S, mixer.by_title(runs)))
mixer.analysis.prompt_table(runs[mixer.FIRST[0]][0])

# %% [markdown]
# The write-up's completions, in its order, each beside ours by the arm of its model's shape (its first seed here);
# the last row is the first prompt's actual continuation, as the write-up quotes it.

# %%
mixer.analysis.samples_table(runs)

# %% [markdown]
# ## Provenance
#
# Where this page's numbers came from: the profile and seeds, the package's commit, the machine, and the data and
# tokenizers of the runs it used (each run's own record is its folder in the run store).

# %% tags=["nbval-ignore-output"]
nb.provenance(S)
