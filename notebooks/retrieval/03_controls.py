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
# # Controls: untrained and autoencoder embeddings, and a transformer as the matcher
#
# The write-up's controls, all with 32 positions (31 candidates) and d_model 1024 embeddings:
#
# - an **untrained** flat mixer's embeddings (its initial weights, read at the same position): "poor";
# - the **encoder of a mixer autoencoder** (its last token's last hidden state, which a decoder repeated at every
#   position must reconstruct the text from): also poor, although an autoencoder's embedding must hold the whole
#   input;
# - a **bidirectional transformer as the matching model**, on the mixer's embeddings: it "learns practically
#   nothing". The original's transformer matcher runs its attention across the *batch* axis (PyTorch's
#   `batch_first=False` with batch-first inputs); we train both our bidirectional Llama-style matcher and that
#   original behaviour.
#
# Each is compared with the flat mixer's CLM embeddings and the mixer matcher.


# %% tags=["parameters"]
profile = "cpu"  # smoke | cpu | gpu | paper
device = "auto"  # auto | cpu | cuda
seed = 0  # first seed; the runs use seeds seed, seed+1, ...
n_seeds = None  # seeds per arm (None: the profile's default)
max_steps = None  # override the number of training steps (None: the profile's)
overrides = {}  # any other config field, by dotted key, e.g. {"train.lr": 1e-3}

# %%
from lmcompanion import experiments, nb
from lmcompanion.chapters import retrieval as R

S = nb.setup(profile=profile, device=device, seed=seed, n_seeds=n_seeds, max_steps=max_steps, overrides=overrides)
print(S.describe())

# %%
CONTROLS = [n for n in R.CONTROLS if experiments.runs_at(n, S.profile)]  # cpu leaves out the batch-axis arm
runs = S.arms(CONTROLS, by="name")
R.results(runs, CONTROLS)

# %% mystnb={"figure": {"caption": "Train and test cross-entropy of the controls beside the trained mixer's embeddings with the mixer matcher (mean over seeds, bands span the seeds).", "name": "retrieval-controls-curves"}}
fig = R.curves(runs, CONTROLS)

# %% [markdown]
# The autoencoder itself (trained with the flat d_model=1024 mixer's stories, steps and learning rate): its
# reconstruction loss, per seed.

# %%
ae = S.runs("retrieval/autoencoder_d1024")
R.autoencoder_table(ae)

# %% [markdown]
# ## Provenance
#
# Where this page's numbers came from: the profile and seeds, the package's commit, the machine, and the data and
# tokenizers of the runs it used (each run's own record is its folder in the run store; the embeddings each
# retrieval run read are named, with their SHA-256, in its summary).

# %% tags=["nbval-ignore-output"]
nb.provenance(S)
