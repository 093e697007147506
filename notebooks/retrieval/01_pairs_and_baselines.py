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
# # Summary–story pairs, and how hard matching them is
#
# The write-up's retrieval task: given a one-sentence summary of a TinyStories story, find the story among 31 or
# 127 candidates, from embeddings made by a language model trained on TinyStories. Its summaries were written by
# Llama-3-8B-Instruct for the first 200k training stories and are not published. At the `paper` profile, and at
# `gpu` when its stories come from the hub, we read the summaries TinyStories itself publishes (the `Summary:`
# fields of TinyStoriesInstruct, written by GPT when the stories were generated); offline (`cpu`, `smoke`, and
# `gpu` on a local copy) there are no summaries, and the queries are a
# **substitute**: each story's most central sentence by a fixed extractive rule (SumBasic-style word frequencies),
# removed from its story so that it cannot be found by copying
# (`lmcompanion.data.retrieval`). Pairs are split by story, the first 90% for training and the last 10% for testing.
#
# The write-up dismisses retrieval by a distance on the embeddings themselves: "a trained mixer performs very poorly
# when a cosine distance metric is used", and "$L^1$ or $L^2$ distance on the vectorized output layer" is "also very
# inaccurate"; it gives no numbers. All three are computed here on exactly the candidate sets the matchers are
# evaluated on (the same embeddings, no training), beside **BM25** on the texts (the `bm25s` library), which needs no
# model at all and shows how far word overlap alone gets. The write-up explains the failure of distances: "the mixer's
# last layer does not form a manifold resembling a high-dimensional sphere or anything similar". Whether embeddings
# lie near a sphere shows in their norms, which are checked here from the same embeddings the runs recorded (the ones
# `export-retrieval` writes).


# %% tags=["parameters"]
profile = "cpu"  # smoke | cpu | gpu | paper
device = "auto"  # auto | cpu | cuda
seed = 0  # first seed; the runs use seeds seed, seed+1, ...
n_seeds = None  # seeds per arm (None: the profile's default)
max_steps = None  # override the number of training steps (None: the profile's)
overrides = {}  # any other config field, by dotted key, e.g. {"train.lr": 1e-3}

# %%
from lmcompanion import nb, verdicts
from lmcompanion.chapters import retrieval as R

S = nb.setup(profile=profile, device=device, seed=seed, n_seeds=n_seeds, max_steps=max_steps, overrides=overrides)
print(S.describe())

# %% [markdown]
# ## The pairs
#
# How many pairs, where the queries come from, and how long queries and stories are. Stories longer than the
# embedder's context are cut to their first tokens before they are embedded, as the write-up's 512-token examples
# are; at the smaller profiles the context is shorter, so more of each story is cut.

# %%
cfg = S.config("retrieval/flat_d1024_c32")
R.pairs_summary(cfg)

# %% [markdown]
# Three test pairs (the story is shown from its start, with the query's sentence already removed):

# %%
R.pairs_table(cfg)

# %% [markdown]
# ## Baselines on the matchers' own test items
#
# For each embedder and candidate count: the trained matcher's top-1 accuracy on the test items, cosine similarity's
# and the nearest candidate's by L1 and by L2 distance on the same items and embeddings, BM25's on the same items'
# texts, and chance (one over the number of candidates). Each is `mean [min, max]` over the seeds (each seed has its
# own embedder run and candidate draws). The verdicts on these metrics are in the chapter's last notebook.

# %%
runs = S.arms(R.MAIN, by="name")  # the arms planned at this profile (the cpu profile leaves out two)
R.baselines(runs, list(runs))

# %% [markdown]
# ## Do the embeddings lie on a sphere?
#
# On a sphere every embedding has the same length, and L2 distance ranks candidates as cosine similarity does. For
# each embedder, the L2 norms of its test embeddings (queries and stories): their mean, and their spread (standard
# deviation over mean; 0 on a sphere), beside the spread of random isotropic Gaussian vectors of the same width,
# $1/\sqrt{2d}$, which concentration of measure puts almost on a sphere. The rule was fixed before any embedding was
# looked at: embeddings whose norms spread more than that do not lie on a sphere. The mixer's last hidden state has
# no final norm; the transformer's is read after its final RMSNorm.

# %%
R.norms_table(runs, list(runs))

# %% [markdown]
# ## Verdicts of this page
#
# The book's own BM25 row (a baseline the write-up does not have, counted apart from the write-up's claims) and the
# write-up's sphere claim, on the headline matcher's embeddings (the verdict notebook gathers every claim of the
# chapter).

# %%
verdicts.table(nb.page_rows(S, "retrieval", "01_pairs_and_baselines", runs))

# %% [markdown]
# ## Provenance
#
# Where this page's numbers came from: the profile and seeds, the package's commit, the machine, and the data and
# tokenizers of the runs it used (each run's own record is its folder in the run store; the embeddings each
# retrieval run read are named, with their SHA-256, in its summary).

# %% tags=["nbval-ignore-output"]
nb.provenance(S)
