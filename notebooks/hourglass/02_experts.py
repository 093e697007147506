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
# # Soft experts: how many, how wide, how often, shared, how merged
#
# The write-up's experts sweep runs the 448-96 model with 0 to 12 soft experts in every fourth latent block: "The
# more experts there are, the better the results are up to a certain point (generally until at least 6 you can
# expect good perf/compute)". The second half is a lower bound on performance per compute: up to at least 6
# experts, each one added is worth what it costs. So the rows read each model with experts at the training FLOPs
# where the model without experts ends (a model with experts costs more per update), against that model's final
# loss: 6 experts against none at every profile, and the loss at equal compute falling from 0 through 2 and 4 to 6
# experts at the `gpu` and `paper` profiles (the 2- and 4-expert arms run there only). Where more experts stop
# helping, the write-up does not say ("up to a certain point"), so the 12-expert arm is shown, not tested.
#
# It also finds that "Increasing the size of MLPs also seems to help" (6 experts with the expert MLP at full width,
# d = n instead of n/6), that "Increasing the frequency of layers with soft experts also seems to help in the context
# of attention upsampling" (6 experts in every latent block), and that sharing MLPs between experts "guarantees
# similar performance in terms of log-likelihood to the classic variant while being faster since there is less
# attention to compute" (the run config's one shared expert of 6 against none: one channel fewer to attend and
# merge; "similar" is the chapter's margin, the gap between the write-up's best attention and repeat models, which
# it calls similar).
#
# The channels are merged by "a convex combination of the s different features with the coefficients coming from a
# softmax applied to them"; "Merging via max and mean of the features was also considered, but according to the
# first experiments, this performed less well than the chosen version". Two arms merge the anchor's channels by their
# elementwise maximum and by their mean instead (`expert_merge`; the original's code has only the softmax).
#
# "Overall, all experiments were performed for each of the two upsamplers": every finding runs in both modes, the
# repeat-upsampling arms beside the attention ones. At the `cpu` profile every arm but the headline's runs one seed
# (an illustration, whose rows say that no test is possible), and the profile leaves out the arms the list under the
# parameter table names, with the reason.

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
ARMS = [n for n in hourglass.EXPERTS_NB if experiments.runs_at(n, S.profile)]
print(hourglass.skipped_note(hourglass.EXPERTS_NB, S.profile))
nb.params_table(ARMS, S.profile)

# %% [markdown]
# The write-up's "base model of 19.55M without soft experts" is the run config (256-32, repeat upsampling) without
# them. Its count, computed from the model as the original counts (position tables out, the parameters it builds and
# never reads in; the verdict notebook has the row):

# %%
nb.params_table([hourglass.BASE], S.profile)

# %%
runs = S.arms(ARMS)
display(nb.this_page(S, runs))
tables.results(runs, published=nb.published(ARMS))

# %% [markdown]
# Where the write-up's numbers in the table come from:

# %%
display(hourglass.sources_table(ARMS))
Markdown(hourglass.sources_note())

# %% mystnb={"figure": {"caption": "Validation loss against the number of soft experts (448-96, attention upsampling): the panel 'final', at the end of each run; the panel 'at the no-expert model's final FLOPs', each model read at the training FLOPs where the model without experts ends (performance per compute). Each point is the mean over an arm's seeds, its bar spanning them where it has more than one.", "name": "hourglass-experts-sweep"}}
by_name = dict(zip(ARMS, runs.values()))
counts, series = hourglass.experts_per_compute(by_name, hourglass.SWEEP + hourglass.EXPERTS[2:], hourglass.SWEEP[0])
fig = plots.sweep(counts, series, xlabel="soft experts (every 4th latent block)", ylabel="cross-entropy (nats/token)")

# %% mystnb={"figure": {"caption": "The same with repeat upsampling (the arms this profile runs).", "name": "hourglass-experts-sweep-repeat"}}
counts, series = hourglass.experts_per_compute(by_name, hourglass.twins(hourglass.EXPERTS),
                                               hourglass.twin(hourglass.SWEEP[0]))
fig = plots.sweep(counts, series, xlabel="soft experts (every 4th latent block)", ylabel="cross-entropy (nats/token)")

# %% mystnb={"figure": {"caption": "Validation loss during training with attention upsampling: every arm of this notebook run at this profile ({glue:md}`seeds-hourglass-experts-curves`); dashed: the unigram loss of the validation split, what character frequencies alone give.", "name": "hourglass-experts-curves"}}
attn = {label: rs for name, (label, rs) in zip(ARMS, runs.items()) if "/attn_" in name}
nb.caption("hourglass-experts-curves", attn)
fig = plots.loss_curves(attn, splits=("val",), reference=hourglass.unigram_reference(runs))

# %% mystnb={"figure": {"caption": "The same with repeat upsampling.", "name": "hourglass-experts-curves-repeat"}}
repeat = {label: rs for name, (label, rs) in zip(ARMS, runs.items()) if "/repeat_" in name}
fig = plots.loss_curves(repeat, splits=("val",), reference=hourglass.unigram_reference(runs))

# %% [markdown]
# ## Time per run
#
# Shared experts are claimed to be "faster since there is less attention to compute": training minutes per run,
# measured in this build (the verdict notebook counts their FLOPs).

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
nb.page_verdicts(S, "hourglass", "02_experts")

# %% [markdown]
# ## Provenance
#
# Where this page's numbers came from: the profile and seeds, the package's commit, the machine, and the data and
# tokenizers of the runs it used (each run's own record is its folder in the run store).

# %% tags=["nbval-ignore-output"]
nb.provenance(S)
