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
# *Seq Length A-B* (the legends of the write-up's plots) is the number of tokens after the first compression (A = groups
# x latents kept per group at the first level) and after the second (B, the latent stack's length). The write-up finds
# that "Increasing the size of MLPs also seems to help, as does increasing the size of the latent vectors in the
# encoders or in the latent space", and that "large seq lengths in the encoder blocks or the latent blocks is better"
# (its numbers, with 6 soft experts and attention upsampling, are in the table's write-up column). At the smaller
# profiles every length is scaled with the context, so each group keeps the write-up's latents per token. Here: 384-32
# against 512-32 (encoder length) and 448-32 against 448-96 (latent length), in both upsampling modes ("all experiments
# were performed for each of the two upsamplers").
#
# The write-up's prose reports three more findings on the same model, with no plot or number, and this notebook runs
# each on the 448-96 anchor:
#
# - "The Perceiver encoder is faster than the Transformer but performs less well than the Transformer encoder": the
#   compressor as one causal cross-attention from the group's last K tokens (each latent sees the group up to its
#   own position; the original's top-left mask is `perceiver_original_mask`) instead of a transformer block whose
#   last K outputs are kept. Its time per step is measured on the verdict page, side by side with the anchor.
# - "we add positional embeddings in each encoder layer after compression and in each decoder layer after
#   upsampling, which seems to have helped": the anchor without them (`use_pos_embd_in_enc_dec=False`, the
#   original's own switch).
# - The latent vectors' size: the lengths above are their number; their width is the other size, so two arms make
#   the level-1 latents and the latent space half again as wide (the latent space's soft-expert blocks grow with the
#   square of its width: the parameter table gives the counts).
#
# Each has its repeat-upsampling twin. The list under the parameter table names the arms this profile leaves out,
# with the reason; at the `cpu` profile every arm but the headline's runs one seed (an illustration).

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
from IPython.display import Markdown

from lmcompanion import experiments

ARMS = [n for n in hourglass.LENGTHS_NB if experiments.runs_at(n, S.profile)]
print(hourglass.skipped_note(hourglass.LENGTHS_NB, S.profile))
nb.params_table(list(hourglass.LENGTHS_NB), S.profile)

# %%
runs = S.arms(ARMS)
display(nb.this_page(S, runs))
tables.results(runs, published=nb.published(ARMS))

# %% [markdown]
# Where the write-up's numbers in the table come from:

# %%
display(hourglass.sources_table(ARMS))
Markdown(hourglass.sources_note())

# %% mystnb={"figure": {"caption": "Validation loss during training with attention upsampling: the lengths and the anchor's variants run at this profile ({glue:md}`seeds-hourglass-lengths-curves`); dashed: the unigram loss of the validation split, what character frequencies alone give.", "name": "hourglass-lengths-curves"}}
attn = {label: rs for name, (label, rs) in zip(ARMS, runs.items()) if "/attn_" in name}
nb.caption("hourglass-lengths-curves", attn)
fig = plots.loss_curves(attn, splits=("val",), reference=hourglass.unigram_reference(runs))

# %% mystnb={"figure": {"caption": "The same with repeat upsampling.", "name": "hourglass-lengths-curves-repeat"}}
repeat = {label: rs for name, (label, rs) in zip(ARMS, runs.items()) if "/repeat_" in name}
fig = plots.loss_curves(repeat, splits=("val",), reference=hourglass.unigram_reference(runs))

# %% [markdown]
# ## Test split

# %%
hourglass.test_table(runs)

# %% [markdown]
# ## The verdict rows of this page
#
# The rows of the chapter's verdict table that this page's comparisons decide, with their verdicts and, folded, the runs that
# decide them (each arm's own runs, as on the verdict page).

# %%
nb.page_verdicts(S, "hourglass", "03_lengths")

# %% [markdown]
# ## Provenance
#
# Where this page's numbers came from: the profile and seeds, the package's commit, the machine, and the data and
# tokenizers of the runs it used (each run's own record is its folder in the run store).

# %% tags=["nbval-ignore-output"]
nb.provenance(S)
