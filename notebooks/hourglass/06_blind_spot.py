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
# # The repeat-mode blind spot
#
# In repeat upsampling a group is rebuilt from the *previous* group's latents, and the group's own tokens come back
# only through the skips added after each level's blocks. So the first offsets of every group (all but the K kept
# latents) see their own group only through their own embedding: they predict from the previous group's context
# plus the current character. The write-up names the limit itself: "the lack of contextual understanding due to
# simple replication without taking position into account can limit expressiveness". Its validation losses do not
# show it: the code's validation scores only the last position of a window, which is never blind, while its training
# loss is the mean over every position. Attention upsampling has no blind spot. Here: the validation loss at every
# offset within a group, for both modes, and for the vanilla transformer cut into the same groups (the models of the
# upsampling and headline notebooks, reused from the run store).

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
ARMS = list(hourglass.BLIND_SPOT)
blind, group = hourglass.blind_offsets(S.profile)
print(f"groups of {group} tokens; in repeat mode offsets 0-{blind - 1} of each group are blind")
runs = S.arms(ARMS)
display(nb.this_page(S, runs))

# %% mystnb={"figure": {"caption": "Validation loss by offset within the group, every position of every window scored ({glue:md}`seeds-hourglass-blind-spot`). In repeat mode the first offsets see only the previous group's context and their own character. Dashed: the unigram loss.", "name": "hourglass-blind-spot"}}
frames = hourglass.blind_spot_frames(runs, n_groups=S.config(ARMS[0]).model.n_groups)
nb.caption("hourglass-blind-spot", runs)
fig = plots.curves(frames, "offset", {"loss": "validation loss by offset within the group"},
                   xlabel="offset within the group", ylabel="cross-entropy (nats/token)",
                   reference=("unigram loss", nb.unigram(runs, ("val",))[1]["val"]))

# %%
hourglass.blind_spot_table(frames, blind)

# %% [markdown]
# How to read the write-up's numbers: the repeat models' last-token validation losses measure the one position per
# window that is never blind; over every position they are worse by the gap in the table. A repeat model "achieving
# the same validation loss" as the transformer in the write-up's plots is a statement about the last position only.

# %% [markdown]
# ## The verdict rows of this page
#
# The rows of the chapter's verdict table that this page's comparisons decide, with their verdicts and, folded, the runs that
# decide them (each arm's own runs, as on the verdict page).

# %%
nb.page_verdicts(S, "hourglass", "06_blind_spot")

# %% [markdown]
# ## Provenance
#
# Where this page's numbers came from: the profile and seeds, the package's commit, the machine, and the data and
# tokenizers of the runs it used (each run's own record is its folder in the run store).

# %% tags=["nbval-ignore-output"]
nb.provenance(S)
