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
# # Beyond the write-up: subtraction in a decoder-only transformer
#
# The write-up's conclusions: "positional embedding subtraction should work even for decoder-only transformers,
# and experiments should validate this." This notebook runs that experiment. It compares the baseline with the
# same baseline whose final hidden state has the next position's embedding subtracted before the tied output
# layer (`sub_pos_embed="YES_NO_LN"`, one extra row in the position table, no extra counted parameter).

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
ARMS = ["ar_ed/baseline_pos_sub", "ar_ed/baseline"]
runs = S.arms(ARMS)
display(nb.this_page(S, runs))
tables.results(runs)

# %% mystnb={"figure": {"caption": "The decoder-only baseline with and without positional-embedding subtraction ({glue:md}`seeds-ar-ed-decoder-pos-sub-curves`). Dashed: the unigram loss, what token frequencies alone give.", "name": "ar-ed-decoder-pos-sub-curves"}}
nb.caption("ar-ed-decoder-pos-sub-curves", runs)
fig = plots.loss_curves(runs, reference=nb.unigram(runs))

# %% [markdown]
# ## The verdict rows of this page
#
# The rows of the chapter's verdict table that this page's comparisons decide, with their verdicts and, folded, the runs that
# decide them (each arm's own runs, as on the verdict page).

# %%
nb.page_verdicts(S, "ar_ed", "05_decoder_pos_sub")

# %% [markdown]
# ## Provenance
#
# Where this page's numbers came from: the profile and seeds, the package's commit, the machine, and the data and
# tokenizers of the runs it used (each run's own record is its folder in the run store).

# %% tags=["nbval-ignore-output"]
nb.provenance(S)
