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
# # Upsampling, DenseFormer and the latent loss
#
# Two ways back up from the latents: **repeat** (each group is rebuilt from the previous group's latents, tiled, plus
# the group's own kept tokens) and **attention** (as in the Hourglass Transformer: the residual plus the upsampled
# sequence attends over the upsampled sequence). The write-up does not claim that attention beats repeat. It says
# three things: "models with attention upsampling take more time than those using the repeat upsampling as
# expected"; "Although they have similar performance at the end of the repeat upsampling models trainings" (the
# repeat runs end first, at less compute, and the attention runs, still training, are then about as good); and "the
# attention version scales better with compute". Its other findings: "Using Denseformer in the latent blocks only
# helps for attention upsampling", and "The latent reconstruction loss employed in Mirasol does not help here" (its
# plot: 448-96, 12 soft experts, attention upsampling; the latent loss runs here in both modes, the repeat pair at
# the `gpu` and `paper` profiles). The list under the parameter table names the arms this profile leaves out.

# %% tags=["parameters"]
profile = "cpu"  # smoke | cpu | gpu | paper
device = "auto"  # auto | cpu | cuda
seed = 0  # first seed; the runs use seeds seed, seed+1, ...
n_seeds = None  # seeds per arm (None: the profile's default)
max_steps = None  # override the number of training steps (None: the profile's)
overrides = {}  # any other config field, by dotted key, e.g. {"train.lr": 1e-3}

# %%
from IPython.display import Markdown

from lmcompanion import experiments, nb, plots, tables
from lmcompanion.chapters import hourglass

S = nb.setup(profile=profile, device=device, seed=seed, n_seeds=n_seeds, max_steps=max_steps, overrides=overrides)
print(S.describe())

# %%
ARMS = [n for n in hourglass.MODES if experiments.runs_at(n, S.profile)]
print(hourglass.skipped_note(hourglass.MODES, S.profile))
nb.params_table(ARMS, S.profile)

# %%
runs = S.arms(ARMS)
display(nb.this_page(S, runs))
tables.results(runs, published=nb.published(ARMS))

# %% [markdown]
# Where the write-up's numbers in the table come from:

# %%
display(hourglass.sources_table(ARMS))
Markdown(hourglass.sources_note())

# %% mystnb={"figure": {"caption": "Validation loss with attention and repeat upsampling, with and without DenseFormer, and with the latent loss ({glue:md}`seeds-hourglass-upsampling-curves`); dashed: the unigram loss of the validation split, what character frequencies alone give.", "name": "hourglass-upsampling-curves"}}
nb.caption("hourglass-upsampling-curves", runs)
fig = plots.loss_curves(runs, splits=("val",), reference=hourglass.unigram_reference(runs))

# %% [markdown]
# ## The two modes at equal compute
#
# The 448-96 anchor in both modes, on one compute axis: training FLOPs, counted (update number x the FLOPs of an
# update; an attention update costs more). The repeat runs end first. The similar performance "at the end of the
# repeat upsampling models trainings" reads the attention runs at the compute where the repeat runs end (between two
# of their evaluations, linearly) against the repeat runs' final loss; the verdict allows the gap between the
# write-up's best attention and best repeat models (their final losses, read off best_models.png: the headline
# notebook's table), which it calls similar, and no more. That attention "scales better with compute" is read from the gap, attention minus repeat,
# at each of the repeat runs' evaluations: attention scales better if the gap falls as compute grows. Each seed's
# gap is fitted by a line against log FLOPs (attention seed *i* against repeat seed *i*, which see the same
# batches), only over the compute points where every seed of both modes has learned (half a nat below the unigram
# loss: the learning gate), and the verdict tests the slopes over the seeds. The write-up read its curves against
# wall-clock minutes; FLOPs are the part of that cost which does not depend on the machine.

# %%
by_name = dict(zip(ARMS, runs.values()))
hourglass.mode_table(by_name)

# %% mystnb={"figure": {"caption": "The panel 'validation loss': the 448-96 anchor in both modes against counted training FLOPs; the panel 'attention - repeat': the gap, attention minus repeat, at the repeat runs' evaluations (below zero: attention ahead). Each line is the mean over an arm's seeds, its band spanning them where it has more than one. Dashed: the unigram loss.", "name": "hourglass-modes-compute"}}
curves = hourglass.cost_curves({experiments.get(n).title: by_name[n] for n in (hourglass.ANCHOR, hourglass.REPEAT)})
curves["gap (attention - repeat)"] = hourglass.mode_gaps(by_name[hourglass.ANCHOR], by_name[hourglass.REPEAT])
fig = plots.curves(curves, "FLOPs", {"val": "validation loss", "gap": "attention - repeat"}, xlabel="training FLOPs",
                   ylabel="cross-entropy (nats/token)", logx=True, reference=nb.unigram(runs, ("val",)))

# %% tags=["nbval-ignore-output"]
hourglass.cost_table(runs)

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
nb.page_verdicts(S, "hourglass", "04_upsampling")

# %% [markdown]
# ## Provenance
#
# Where this page's numbers came from: the profile and seeds, the package's commit, the machine, and the data and
# tokenizers of the runs it used (each run's own record is its folder in the run store).

# %% tags=["nbval-ignore-output"]
nb.provenance(S)
