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
# # The encoder and the latents: lengths, widths, the compressor, positions
#
# "Seq Length A-B" is the number of tokens after the first compression (A = groups x latents kept per group at the
# first level) and after the second (B, the latent stack's length). The write-up finds that longer encoder and latent
# lengths help (with attention upsampling and 6 soft experts; its numbers are in the table's write-up column).
# At the smaller profiles every length is scaled with the context, so each group keeps the write-up's latents per
# token. Here: 384-32 against 512-32 (encoder length) and 448-32 against 448-96 (latent length).
#
# The write-up's prose reports three more findings on the same model, with no plot or number, and this notebook runs
# each on the 448-96 anchor:
#
# - "The Perceiver encoder is faster than the Transformer but performs less well": the compressor as one causal
#   cross-attention from the group's last K tokens (each latent sees the group up to its own position; the
#   original's top-left mask is `perceiver_original_mask`) instead of a transformer block whose last K outputs are
#   kept. Its time per step is measured on the verdict page, side by side with the anchor.
# - "We add positional embeddings in each encoder layer after compression and in each decoder layer after
#   upsampling, which seems to have helped": the anchor without them (`use_pos_embd_in_enc_dec=False`, the
#   original's own switch).
# - "Increasing the size of the latent vectors in the encoders or in the latent space also seems to help": the
#   lengths above are their number; their width is the other size, so two arms make the level-1 latents and the
#   latent space half again as wide (the latent space's soft-expert blocks grow with the square of its width: the
#   parameter table gives the counts).
#
# The `cpu` and `smoke` profiles run the Perceiver arm and leave out the other three (the wider latent space is the
# costliest arm of the notebook) to stay within their time budget.

# %% tags=["parameters"]
profile = "cpu"  # smoke | cpu | gpu | paper
device = "auto"  # auto | cpu | cuda
seed = 0  # first seed; the runs use seeds seed, seed+1, ...
n_seeds = None  # seeds per arm (None: the profile's default)
max_steps = None  # override the number of training steps (None: the profile's)
overrides = {}  # any other config field, by dotted key, e.g. {"train.lr": 1e-3}

# %%
from lmcompanion import nb, plots, tables
from lmcompanion.chapters import hourglass

S = nb.setup(profile=profile, device=device, seed=seed, n_seeds=n_seeds, max_steps=max_steps, overrides=overrides)
print(S.describe())

# %%
from lmcompanion import experiments

ARMS = [n for n in hourglass.LENGTHS + hourglass.ENCODER_KNOBS if experiments.runs_at(n, S.profile)]
print(hourglass.skipped_note(hourglass.LENGTHS + hourglass.ENCODER_KNOBS, S.profile))
nb.params_table(list(hourglass.LENGTHS + hourglass.ENCODER_KNOBS), S.profile)

# %%
runs = S.arms(ARMS)
tables.results(runs, published=nb.published(ARMS))

# %% mystnb={"figure": {"caption": "Validation loss for the four lengths and the anchor's variants run at this profile (mean over seeds, bands span the seeds); dashed: the unigram loss of the validation split, what character frequencies alone give.", "name": "hourglass-lengths-curves"}}
fig = plots.loss_curves(runs, splits=("val",), reference=hourglass.unigram_reference(runs))

# %% [markdown]
# ## Test split

# %%
hourglass.test_table(runs)

# %% [markdown]
# ## Provenance
#
# Where this page's numbers came from: the profile and seeds, the package's commit, the machine, and the data and
# tokenizers of the runs it used (each run's own record is its folder in the run store).

# %% tags=["nbval-ignore-output"]
nb.provenance(S)
